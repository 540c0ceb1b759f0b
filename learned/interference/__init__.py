"""Learned schedulers of seed 001 (issue 8): partition features, the GNN actor-critic, the
``marl`` placement policy and its training (imitation of Tetris, then actor-critic)."""
