"""Slurm's own node selection, re-implemented from its documentation and source as baseline
methods: :mod:`.tree` (``topology/tree``, the ``slurm-tree`` method) and :mod:`.block`
(``topology/block``, the ``slurm-block`` method)."""
