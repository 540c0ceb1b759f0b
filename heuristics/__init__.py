"""heuristics (installed as ``tjap.heuristics``): search loops and hand-written operators over
the models of :mod:`tjap.placement`.

One room per family, as on every floor: ``tree`` (seed 002: DCAS annealing and its operators),
``network`` (seed 003: server-choosing rules), ``interference`` (seed 001: placement rules and
the ``opt`` annealer), ``batch`` (seed 004: hand-written provisioners); and ``slurm``, Slurm's
own algorithms as baselines. Numba kernels sit beside the loop that calls them, under the
project's one jit policy (:mod:`tjap.core.jit`).
"""

if __name__ != "tjap.heuristics":
    raise ImportError(
        "the folder heuristics/ is installed as tjap.heuristics: write "
        "`import tjap.heuristics` (or `from tjap.heuristics import ...`)"
    )
