"""The learned allocator of seed 003 (issue 7): features (:mod:`.features`), the GraphSAGE
network, its MaskablePPO policy and the ``gnn`` server policy (:mod:`.gnn`), training
(:mod:`.train`, ``python -m learned.network.train``). The environment is
:class:`learned.envs.network_alloc.NetworkAllocEnv`."""
