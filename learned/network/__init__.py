"""The learned allocator of seed 003: what it sees (:mod:`.features`), the GraphSAGE network and
its MaskablePPO policy (:mod:`.nets`), the ``gnn`` server policy (:mod:`.policy`), the
environment (:mod:`.env`), training by PPO (:mod:`.train`) and by imitation of the exact model
(:mod:`.imitation`), both run by ``tjap train network``."""
