"""The ``gnn`` server policy of seed 003: the trained :class:`~tjap.learned.network.nets.
GraphSAGEAllocator` behind the :class:`tjap.placement.network.ServerPolicy` protocol
(``reset(topology, seed)`` and ``choose(engine)``), as the hand-written rules of
:mod:`tjap.heuristics.network.rules`."""

from __future__ import annotations

import numpy as np
import torch

from tjap.core.errors import InvalidInputError
from tjap.learned.network.features import FeatureBuilder
from tjap.learned.network.nets import DEFAULT_WEIGHTS, GraphSAGEAllocator, load
from tjap.placement.network.topology import DataCentre


class GNNPolicy:
    """The ``gnn`` server policy: the trained network on any topology (the adjacency is rebuilt
    for it in :meth:`reset`). Chooses the masked argmax of the logits, or with ``sample=True`` a
    draw from the masked softmax seeded by ``reset``'s seed."""

    name = "gnn"

    def __init__(self, weights=None, sample: bool = False):
        self.weights = str(weights or DEFAULT_WEIGHTS)
        self.net, self.meta = load(self.weights)
        self.routing = self.meta["routing"]
        self.sample = bool(sample)
        self._topology = None

    @classmethod
    def from_network(
        cls, net: GraphSAGEAllocator, routing: str = "shortest", sample: bool = False
    ) -> "GNNPolicy":
        """The policy of a network in memory (e.g. during training), without weight files."""
        if not isinstance(net, GraphSAGEAllocator):
            raise InvalidInputError(f"net must be a GraphSAGEAllocator, got {type(net).__name__}")
        policy = cls.__new__(cls)
        policy.weights, policy.net, policy.meta = "<in memory>", net, {"routing": routing}
        policy.routing, policy.sample, policy._topology = routing, bool(sample), None
        return policy

    def reset(self, topology: DataCentre, seed: int) -> None:
        if topology is not self._topology:
            self.net.set_topology(topology)
            self.features = FeatureBuilder(topology)
            self._obs = np.empty(self.features.shape, np.float32)
            self._topology = topology
        self.rng = np.random.default_rng(seed)

    def choose(self, engine) -> int:
        obs = self.features.observe(engine, self._obs)
        mask = engine.mask()
        with torch.inference_mode():
            logits = self.net.logits(torch.from_numpy(obs)[None])[0].numpy().astype(np.float64)
        logits[~mask] = -np.inf
        if not self.sample:
            return int(np.argmax(logits))
        p = np.exp(logits - logits.max())
        return int(self.rng.choice(p.size, p=p / p.sum()))
