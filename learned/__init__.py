"""learned (installed as ``tjap.learned``): trained operators that implement the protocols of
their hand-written twins.

One room per family, as on every floor: ``tree`` (seed 002: NSA's repair operator),
``network`` (seed 003: the GraphSAGE allocator), ``interference`` (seed 001: the MARL GNN
schedulers), ``batch`` (seed 004: the learned provisioners). Inside each room the same file
names hold the same roles: ``features`` (what the policy sees), ``nets`` (the networks),
``policy`` (the operator behind its protocol), ``env`` (the gymnasium environment), ``train``
(training). :mod:`.policy_io` is the one weights format; ``weights/`` holds the shipped weights
with their JSON metadata. A learned operator plugs into the same search loop as a hand-written
one; it is never a second copy of the loop. Importing it needs torch.
"""

if __name__ != "tjap.learned":
    raise ImportError(
        "the folder learned/ is installed as tjap.learned: write "
        "`import tjap.learned` (or `from tjap.learned import ...`)"
    )
