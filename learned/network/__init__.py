"""The learned allocator of seed 003 (issue 7): features (:mod:`.features`), the GraphSAGE
network, its MaskablePPO policy and the ``gnn`` server policy (:mod:`.gnn`), training by PPO
(:mod:`.train`) and by imitation of the exact model (:mod:`.imitation`), both run by
``tjap train network``. The environment is :class:`tjap.learned.envs.network_alloc.NetworkAllocEnv`."""
