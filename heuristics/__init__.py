"""heuristics: search loops and hand-written operators over the models of tjap and placement.

Numba kernels live in ``tjap.heuristics._kernels`` under the project's one jit policy (``tjap._jit``);
the simulated-annealing / large-neighbourhood loop takes pluggable destroy, repair, accept and stop
operators, and one module per family holds the hand-written operators (TJAP repair, packing
heuristics, queue policies, provisioning rules).
"""

if __name__ != "tjap.heuristics":
    raise ImportError("the folder heuristics/ is installed as tjap.heuristics: write "
                      "`import tjap.heuristics` (or `from tjap.heuristics import ...`)")
