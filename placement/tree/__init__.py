"""Seed 002: topology-aware job allocation on switch trees.

The fat-tree topology (:class:`~tjap.placement.tree.fat_tree.FatTree`), the scheduling window
(:class:`~tjap.placement.tree.window.Window`), the communication-hop cost, the exact SCAS models (dynamic
programming over the CSP graph, set packing on SCIP and CP-SAT), the free-form optimum, the DCAS
encoding used by the annealing loops, the paper's window stream and the online replay. No search
loops and no learning live here: those are in :mod:`tjap.heuristics.tree` and
:mod:`tjap.learned.tree`.
"""
