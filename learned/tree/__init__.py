"""Neural simulated annealing (seed 002): the learned repair operator inside the tree family's
annealing loop (:mod:`.policy`), what it sees (:mod:`.features`), its networks (Table II,
:mod:`.nets`), the repair environment (:mod:`.env`), and its training by imitation
(:mod:`.imitation`) and PPO (:mod:`.train`)."""
