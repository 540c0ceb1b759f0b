"""placement (installed as ``tjap.placement``): every model and simulator, with no search and no
learning.

One room per family, as on every floor: ``tree`` (seed 002 and every cluster drawn as levels:
windows, cost, exact models), ``network`` (seed 003: the three-tier composable data-centre
network), ``interference`` (seed 001: clusters, jobs, the interference model and the JCT
simulator), ``batch`` (seed 004: the event-driven batch-queue simulator, trace loaders, chained
jobs); and ``slurm``, the client, the local multi-node harness and the live readers of a real
Slurm.
"""

if __name__ != "tjap.placement":
    raise ImportError(
        "the folder placement/ is installed as tjap.placement: write "
        "`import tjap.placement` (or `from tjap.placement import ...`)"
    )
