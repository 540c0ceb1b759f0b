"""learned: trained operators that implement the protocols of their hand-written twins.

``learned.envs`` holds gymnasium environments over the models, ``learned.nets`` the networks
(Table II CNN/FCN, GraphSAGE, GNNs, transformer, mixture of experts) and ``learned.weights`` small
shipped weights with JSON metadata. A learned operator plugs into the same search loop as a
hand-written one; it is never a second copy of the loop. Importing it needs torch.
"""
