"""Networks of the learned provisioners (seed 004, section 4.6-4.7), small enough to ship.

- :class:`HistoryTransformer`, the foundation model: each snapshot of the 144 x 40 history is
  embedded linearly, a learned position is added, a pre-norm transformer encoder runs over the
  sequence; the embedding is the encoder's output at the last (current) snapshot beside its mean
  over the history; a small MLP maps it to the predicted wait (hours) of the successor if it were
  submitted now.
- :class:`MixtureOfExperts`: several HistoryTransformers (experts, each pretrained on one time
  partition of the training data) combined by a softmax gate over the current snapshot and the
  history's mean; prediction and embedding are the gate-weighted averages of the experts' (the
  paper's dense, weighted-average MoE).
- :class:`DecisionHead`: an MLP over the foundation model's embedding and the head inputs of
  :func:`tjap.learned.batch.features.head_inputs`; two outputs (Q of wait, Q of submit) for the DQN
  head, one (the logit of submitting) for the policy-gradient head.
"""

from __future__ import annotations

import torch
from torch import nn


class HistoryTransformer(nn.Module):
    def __init__(
        self,
        features: int = 40,
        history: int = 144,
        d_model: int = 32,
        heads: int = 4,
        layers: int = 2,
        feedforward: int = 64,
    ):
        super().__init__()
        self.config = {
            "features": features,
            "history": history,
            "d_model": d_model,
            "heads": heads,
            "layers": layers,
            "feedforward": feedforward,
        }
        self.embed = nn.Linear(features, d_model)
        self.position = nn.Parameter(torch.randn(1, history, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, feedforward, dropout=0.0, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.predict = nn.Sequential(
            nn.Linear(2 * d_model, d_model), nn.ReLU(), nn.Linear(d_model, 1)
        )

    @property
    def embedding_dim(self) -> int:
        return 2 * self.config["d_model"]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x: (batch, history, features) normalised -> (predicted wait in hours, embedding)."""
        h = self.norm(self.encoder(self.embed(x) + self.position))
        embedding = torch.cat([h[:, -1], h.mean(1)], 1)
        return self.predict(embedding).squeeze(-1), embedding


class MixtureOfExperts(nn.Module):
    def __init__(self, experts: list[HistoryTransformer], gate_hidden: int = 32):
        super().__init__()
        features = experts[0].config["features"]
        self.experts = nn.ModuleList(experts)
        self.gate = nn.Sequential(
            nn.Linear(2 * features, gate_hidden), nn.ReLU(), nn.Linear(gate_hidden, len(experts))
        )

    @property
    def embedding_dim(self) -> int:
        return self.experts[0].embedding_dim

    def weights(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.gate(torch.cat([x[:, -1], x.mean(1)], 1)), -1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        g = self.weights(x)
        outs = [expert(x) for expert in self.experts]
        prediction = (g * torch.stack([p for p, _ in outs], 1)).sum(1)
        embedding = (g[:, :, None] * torch.stack([e for _, e in outs], 1)).sum(1)
        return prediction, embedding


class DecisionHead(nn.Module):
    def __init__(self, embedding_dim: int, extra: int = 4, hidden: int = 32, outputs: int = 2):
        super().__init__()
        self.config = {
            "embedding_dim": embedding_dim,
            "extra": extra,
            "hidden": hidden,
            "outputs": outputs,
        }
        self.net = nn.Sequential(
            nn.Linear(embedding_dim + extra, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, outputs),
        )

    def forward(self, embedding: torch.Tensor, extra: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([embedding, extra], -1))


def build_foundation(kind: str, config: dict, experts: int = 0) -> nn.Module:
    """A foundation model from its saved configuration (``kind``: transformer or moe)."""
    if kind == "transformer":
        return HistoryTransformer(**config)
    return MixtureOfExperts([HistoryTransformer(**config) for _ in range(experts)])
