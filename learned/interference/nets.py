"""The actor-critic network of seed 001's learned schedulers (one set of weights shared by every
partition's scheduler: parameter sharing).

- Inner GNN over the partition graph (:class:`tjap.learned.interference.features.PartitionGraph`):
  ``layers`` rounds of edge-conditioned mean aggregation,
  ``h_i <- relu(W_self h_i + mean_{j -> i} MLP([h_j, e_ji]))``, with the job's features
  concatenated to every node's input (so the embedding is of "this task here").
- Inter-scheduler summary: every partition's summary vector (free GPUs, CPU and PCIe load, queue,
  visited, :data:`~tjap.learned.interference.features.PARTITION_FEATURES`) is embedded by an MLP, the
  embeddings of the *other* partitions are mean-pooled (one round of mean aggregation on the
  complete graph of schedulers) and joined with the own one. The summaries are aggregates of the
  partition's state that the schedulers exchange, not the inner GNN's embeddings of the other
  partitions (that would cost one GNN pass per partition per decision).
- Heads: one logit per action node (a GPU group, or a server at server level; an MLP over the
  node's embedding, the pooled partition embedding and the summary) and one for forwarding (an
  MLP over the pooled embedding, the summary and the job); a value head over the same context.

Nothing depends on the number of nodes, groups or partitions: the same weights run on k = 4, 8
and 20 fat-trees.
"""

from __future__ import annotations

import torch
from torch import nn

from tjap.learned.interference.features import (
    EDGE_FEATURES,
    JOB_FEATURES,
    NODE_FEATURES,
    PARTITION_FEATURES,
)


def _mlp(sizes):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class EdgeConv(nn.Module):
    """One round of edge-conditioned mean aggregation."""

    def __init__(self, hidden: int, edge_dim: int):
        super().__init__()
        self.message = _mlp([hidden + edge_dim, hidden, hidden])
        self.update = nn.Linear(2 * hidden, hidden)

    def forward(self, h, edge_index, edges):
        # h (B, N, H), edge_index (2, E) shared by the batch, edges (B, E, F)
        src, dst = edge_index
        msg = self.message(torch.cat([h[:, src], edges], dim=-1))
        agg = torch.zeros_like(h).index_add_(1, dst, msg)
        deg = (
            torch.zeros(h.shape[1], dtype=h.dtype)
            .index_add_(0, dst, torch.ones_like(dst, dtype=h.dtype))
            .clamp(min=1.0)
        )
        return torch.relu(self.update(torch.cat([h, agg / deg[None, :, None]], dim=-1)))


class InterferenceGNN(nn.Module):
    """Logits (B, actions + 1: the last is "forward") and values (B,) of a batch of observations
    of one partition graph (same ``edge_index``; its first ``num_actions`` nodes are the action
    nodes: the GPU groups, or the servers at server level)."""

    def __init__(self, hidden: int = 32, layers: int = 2):
        super().__init__()
        self.config = {"hidden": hidden, "layers": layers}
        nf, ef, jf, pf = (
            len(NODE_FEATURES),
            len(EDGE_FEATURES),
            len(JOB_FEATURES),
            len(PARTITION_FEATURES),
        )
        self.embed = _mlp([nf + jf, hidden, hidden])
        self.convs = nn.ModuleList(EdgeConv(hidden, ef) for _ in range(layers))
        self.part = _mlp([pf, hidden, hidden])
        context = 3 * hidden + jf
        self.group_head = _mlp([2 * hidden + context, hidden, 1])
        self.forward_head = _mlp([context, hidden, 1])
        self.value_head = _mlp([context, hidden, 1])

    def forward(self, obs: dict, num_actions: int):
        nodes, edges, job = obs["nodes"], obs["edges"], obs["job"]
        edge_index = obs["edge_index"]
        if edge_index.dim() == 3:
            edge_index = edge_index[0]
        edge_index = edge_index.long()
        B, N, _ = nodes.shape
        h = self.embed(torch.cat([nodes, job[:, None, :].expand(B, N, -1)], dim=-1))
        for conv in self.convs:
            h = h + conv(h, edge_index, edges)
        pooled = h.mean(dim=1)
        parts = self.part(obs["partitions"])  # (B, P, H)
        own = obs["own"]  # (B, P) one-hot
        own_part = (parts * own[..., None]).sum(1)
        others = (1.0 - own)[..., None]
        other_mean = (parts * others).sum(1) / others.sum(1).clamp(min=1.0)
        context = torch.cat([pooled, own_part, other_mean, job], dim=-1)
        groups = h[:, :num_actions]
        g_in = torch.cat(
            [
                groups,
                pooled[:, None].expand_as(groups),
                context[:, None].expand(B, num_actions, -1),
            ],
            dim=-1,
        )
        logits = torch.cat([self.group_head(g_in).squeeze(-1), self.forward_head(context)], dim=1)
        return logits, self.value_head(context).squeeze(-1)


def to_torch(obs_list: list[dict]) -> dict:
    """Stack a list of observations (numpy dicts of one partition shape) into tensors."""
    import numpy as np

    out = {}
    for key in ("nodes", "edges", "job", "partitions", "own"):
        out[key] = torch.from_numpy(np.stack([o[key] for o in obs_list]).astype(np.float32))
    out["edge_index"] = torch.from_numpy(np.asarray(obs_list[0]["edge_index"], np.int64))
    return out
