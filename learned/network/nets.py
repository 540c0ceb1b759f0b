"""The learned allocator of seed 003: GraphSAGE-style mean aggregation over the topology.

:class:`GraphSAGEAllocator` is the one forward pass, used by training (inside
:class:`GNNMaskablePolicy`, an sb3-contrib ``MaskableActorCriticPolicy``, so MaskablePPO trains it)
and by inference (:class:`tjap.learned.network.policy.GNNPolicy`, the ``gnn`` server policy of
the episode loop):

- input: the observation of :mod:`tjap.learned.network.features`, ``(nodes + 1) x 16``: one row per node
  (servers and switches) and one request/global row;
- encoder: ``layers`` (3) GraphSAGE layers of ``hidden`` (16) units,
  ``h' = ReLU(W_self h + W_neigh mean_{u in N(v)} h_u)``; the mean is a product with the row-normalised
  adjacency, a sparse matrix built from the DataCentre and held by the module (a buffer, not a
  weight), so the same weights run on any topology after :meth:`set_topology`;
- DNN_1: the request/global row -> 8 units; DNN_2: one logit per server from [its embedding,
  DNN_1's output, the mean embedding of the servers already chosen (zeros before the first)];
- value head: [mean and max of the server embeddings, the chosen mean, DNN_1's output] -> 1.

The static topology lives in the module; observations carry only the dynamic state.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import torch
from torch import nn

from tjap.core.errors import InvalidInputError
from tjap.learned.network.features import CHOSEN, WIDTH, feature_spec
from tjap.learned.policy_io import check_architecture, load_weights, save_weights, spec_hash
from tjap.placement.network.topology import DataCentre

WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "network_gnn.json"
ARCH = {"hidden": 16, "layers": 3, "request_dim": 8, "head_hidden": 32, "value_hidden": 64}


def adjacency(topology: DataCentre) -> torch.Tensor:
    """Row-normalised adjacency D^-1 A of the topology graph (servers and switches), sparse."""
    n = topology.graph.number_of_nodes()
    ends = np.asarray(topology.link_ends)
    rows = np.concatenate([ends[:, 0], ends[:, 1]])
    cols = np.concatenate([ends[:, 1], ends[:, 0]])
    degree = np.bincount(rows, minlength=n).astype(np.float32)
    values = 1.0 / degree[rows]
    index = torch.as_tensor(np.stack([rows, cols]), dtype=torch.int64)
    return torch.sparse_coo_tensor(
        index, torch.as_tensor(values), (n, n), check_invariants=False
    ).coalesce()


class GraphSAGEAllocator(nn.Module):
    """Per-server logits and a state value from an observation batch ``(B, nodes + 1, 16)``."""

    def __init__(
        self,
        hidden: int = 16,
        layers: int = 3,
        request_dim: int = 8,
        head_hidden: int = 32,
        value_hidden: int = 64,
        topology: DataCentre | None = None,
    ):
        super().__init__()
        self.hidden = hidden
        dims = [WIDTH] + [hidden] * layers
        self.self_layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.neigh_layers = nn.ModuleList(
            nn.Linear(a, b, bias=False) for a, b in zip(dims, dims[1:])
        )
        self.request = nn.Sequential(
            nn.Linear(WIDTH, 16), nn.ReLU(), nn.Linear(16, request_dim), nn.ReLU()
        )
        self.head = nn.Sequential(
            nn.Linear(2 * hidden + request_dim, head_hidden),
            nn.ReLU(),
            nn.Linear(head_hidden, head_hidden),
            nn.ReLU(),
            nn.Linear(head_hidden, 1),
        )
        self.value = nn.Sequential(
            nn.Linear(3 * hidden + request_dim, value_hidden), nn.ReLU(), nn.Linear(value_hidden, 1)
        )
        self.register_buffer("adj", torch.zeros(0), persistent=False)
        self.num_servers = 0
        if topology is not None:
            self.set_topology(topology)

    def set_topology(self, topology: DataCentre) -> None:
        """Hold ``topology``'s adjacency; the weights are unchanged (any size works)."""
        self.adj = adjacency(topology)
        self.num_servers = topology.num_servers
        self.num_nodes = topology.graph.number_of_nodes()

    def _check(self, obs: torch.Tensor) -> None:
        if self.num_servers == 0:
            raise InvalidInputError("the network has no topology; call set_topology() first")
        if obs.dim() != 3 or obs.shape[1] != self.num_nodes + 1 or obs.shape[2] != WIDTH:
            raise InvalidInputError(
                f"observation batch must be (B, {self.num_nodes + 1}, {WIDTH})"
                f" for this topology, got {tuple(obs.shape)}"
            )

    def encode(self, obs: torch.Tensor):
        """(server embeddings (B, N, hidden), request embedding (B, r), chosen mean (B, hidden))."""
        self._check(obs)
        b, v = obs.shape[0], self.num_nodes
        h = obs[:, :v, :]
        for lin_self, lin_neigh in zip(self.self_layers, self.neigh_layers):
            flat = h.transpose(0, 1).reshape(v, -1)  # (V, B * d)
            neigh = torch.sparse.mm(self.adj, flat).reshape(v, b, -1).transpose(0, 1)
            h = torch.relu(lin_self(h) + lin_neigh(neigh))
        servers = h[:, : self.num_servers, :]
        chosen = obs[:, : self.num_servers, CHOSEN].unsqueeze(-1)
        chosen_mean = (servers * chosen).sum(1) / chosen.sum(1).clamp(min=1.0)
        return servers, self.request(obs[:, v, :]), chosen_mean

    def logits(self, obs: torch.Tensor, encoded=None) -> torch.Tensor:
        """One logit per server, (B, N)."""
        servers, req, chosen_mean = encoded if encoded is not None else self.encode(obs)
        n = servers.shape[1]
        joint = torch.cat(
            [
                servers,
                req.unsqueeze(1).expand(-1, n, -1),
                chosen_mean.unsqueeze(1).expand(-1, n, -1),
            ],
            dim=-1,
        )
        return self.head(joint).squeeze(-1)

    def values(self, obs: torch.Tensor, encoded=None) -> torch.Tensor:
        """State value, (B, 1)."""
        servers, req, chosen_mean = encoded if encoded is not None else self.encode(obs)
        pooled = torch.cat([servers.mean(1), servers.amax(1), chosen_mean, req], dim=-1)
        return self.value(pooled)

    def forward(self, obs: torch.Tensor):
        encoded = self.encode(obs)
        return self.logits(obs, encoded), self.values(obs, encoded)


@functools.lru_cache(maxsize=1)
def _masked_policy_class():
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    class GNNMaskablePolicy(MaskableActorCriticPolicy):
        """MaskablePPO's policy with :class:`GraphSAGEAllocator` as its whole actor and critic
        (``policy_kwargs={"topology": DataCentre, "arch": {...}}``)."""

        def __init__(
            self, observation_space, action_space, lr_schedule, topology=None, arch=None, **kwargs
        ):
            if topology is None:
                raise InvalidInputError("GNNMaskablePolicy needs policy_kwargs['topology']")
            self._topology, self._arch = topology, dict(ARCH | (arch or {}))
            super().__init__(observation_space, action_space, lr_schedule, net_arch=[], **kwargs)

        def _build(self, lr_schedule) -> None:
            self.net = GraphSAGEAllocator(**self._arch, topology=self._topology)
            self.optimizer = self.optimizer_class(
                self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
            )

        def _distribution(self, logits, action_masks):
            distribution = self.action_dist.proba_distribution(action_logits=logits)
            if action_masks is not None:
                distribution.apply_masking(action_masks)
            return distribution

        def forward(self, obs, deterministic=False, action_masks=None):
            logits, values = self.net(obs.float())
            distribution = self._distribution(logits, action_masks)
            actions = distribution.get_actions(deterministic=deterministic)
            return actions, values, distribution.log_prob(actions)

        def evaluate_actions(self, obs, actions, action_masks=None):
            logits, values = self.net(obs.float())
            distribution = self._distribution(logits, action_masks)
            return values, distribution.log_prob(actions), distribution.entropy()

        def get_distribution(self, obs, action_masks=None):
            return self._distribution(self.net.logits(obs.float()), action_masks)

        def predict_values(self, obs):
            return self.net.values(obs.float())

    return GNNMaskablePolicy


def __getattr__(name):  # GNNMaskablePolicy without importing sb3 at module import
    if name == "GNNMaskablePolicy":
        return _masked_policy_class()
    raise AttributeError(name)


# -- save / load ---------------------------------------------------------------------------------
def save(net: GraphSAGEAllocator, path, *, arch: dict, routing: str, training: dict) -> tuple:
    """Write ``PATH.pt`` (the state dict; no adjacency) and ``PATH.json`` (metadata) in the
    format of :mod:`tjap.learned.policy_io`; returns both paths."""
    spec = feature_spec()
    return save_weights(
        path,
        "network-gnn",
        net,
        {
            "what": "seed-003 learned server allocator (GraphSAGE + MaskablePPO)",
            "architecture": dict(ARCH | arch),
            "routing": routing,
            "feature_spec": spec,
            "feature_spec_hash": spec_hash(spec),
            "training": training,
        },
    )


def load(path=DEFAULT_WEIGHTS, topology: DataCentre | None = None):
    """(network, metadata) from ``path`` (.json, .pt or the stem), on ``topology`` if given."""

    def build(meta_path, meta):
        if spec_hash(meta.get("feature_spec", {})) != spec_hash(feature_spec()):
            raise InvalidInputError(
                f"{meta_path} was trained on another feature layout "
                f"({meta.get('feature_spec_hash')}); retrain it"
            )
        check_architecture(meta_path, meta.get("architecture"), "network-gnn", "architecture")
        try:
            return GraphSAGEAllocator(**meta["architecture"])
        except (KeyError, TypeError):
            raise InvalidInputError(
                f"{meta_path}: architecture {meta.get('architecture')!r} is "
                f"not one of GraphSAGEAllocator's (keys {', '.join(ARCH)})"
            ) from None

    net, meta = load_weights(path, "network-gnn", build)
    if topology is not None:
        net.set_topology(topology)
    return net, meta
