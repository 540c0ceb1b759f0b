"""Search on windows of jobs over switch trees (seed 002): the DCAS annealing / large-neighbourhood
loop (:mod:`.anneal`), its destroy, repair, order and acceptance operators (:mod:`.operators`),
their Numba kernels (:mod:`._kernels`; :mod:`._mlp_kernels` evaluates a learned repair
operator's small network inside the compiled loop), ``guarded``, never worse than Slurm's
choice nor the SCAS optimum (:mod:`.guarded`), and Kueue's topology-aware placement
(:mod:`.kueue`: ``kueue-bestfit``, ``kueue-leastfree``)."""
