"""The core every floor may import: errors, the jit policy, the result protocol, the solver
helpers, report writers, the sweep executor and the cache root. It imports nothing else of tjap."""
