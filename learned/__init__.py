"""learned: trained operators that implement the protocols of their hand-written twins.

``tjap.learned.envs`` holds gymnasium environments over the models, ``tjap.learned.nets`` the networks
(Table II CNN/FCN, GraphSAGE, GNNs, transformer, mixture of experts) and ``tjap.learned.weights`` small
shipped weights with JSON metadata. A learned operator plugs into the same search loop as a
hand-written one; it is never a second copy of the loop. Importing it needs torch.
"""

if __name__ != "tjap.learned":
    raise ImportError("the folder learned/ is installed as tjap.learned: write "
                      "`import tjap.learned` (or `from tjap.learned import ...`)")
