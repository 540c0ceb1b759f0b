"""Slurm on the model floor: talking to a real Slurm and running one on this machine.

- :mod:`.client`: the adapter to a running Slurm (``squeue``/``sinfo``/``scontrol``/``sacct``/
  ``sbatch``): the live queue and nodes, submit, hold, release, cancel, accounting records.
- :mod:`.readers`: the live switch tree and node states of a running Slurm, as the tree model's
  :class:`~tjap.placement.tree.topology.Topology` and idle node sets.
- :mod:`.queue`: the window rules of the placement service, as pure functions of what Slurm
  reported (which held jobs may be placed, in which order, with EASY-style backfill).
- :mod:`.harness`: a throw-away multi-node Slurm on this machine (several slurmd on one host),
  for the tests and the validations; :mod:`.accounting_db`: its optional accounting (a private
  MariaDB and slurmdbd).
- :mod:`.background`: a trace slice submitted as background load.
- :mod:`.chained`: a provisioner run against a real Slurm (the live twin of
  :mod:`tjap.placement.batch.chained`).

Slurm's own node selection, re-implemented as baselines, is on the search floor
(:mod:`tjap.heuristics.slurm`); the placement service's daemon loop is in :mod:`tjap.slurm`.
"""
