"""Learned schedulers of seed 001: partition features (:mod:`.features`), the GNN actor-critic
(:mod:`.nets`), the ``marl`` placement policy (:mod:`.policy`), the environment (:mod:`.env`) and
its training (imitation of a rule, then actor-critic: :mod:`.train`)."""
