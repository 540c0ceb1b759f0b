"""Networks. Table II of seed 002: the actor architectures FCN-1..3 and CNN-1..3 (Tanh activations;
the critic differs only in its last layer), as stable-baselines3 feature extractors + net_arch.

FCN: Flatten, then the hidden layers, then Linear(., q) (actor) / Linear(., 1) (critic).
CNN: Conv1d(channels, c1, 10, 1, 0), Tanh, Conv1d(c1, c2, 5, 2, 0), Flatten, Linear(., 256),
Tanh, then Linear(256, q) / Linear(256, 1). As printed in the paper, FCN-1 and FCN-2 have the
same layers; we build them as printed.
"""

from __future__ import annotations

import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, FlattenExtractor
from torch import nn

from tjap.core.errors import InvalidInputError
from tjap.learned.tree.features import (  # Table II, kept without torch (see there)
    ARCHS,
    CONV_LAYERS,
)


class Conv1dExtractor(BaseFeaturesExtractor):
    """The convolutional part of Table II's CNNs, over a (channels, q) observation."""

    def __init__(self, observation_space: spaces.Box, conv=(16, 8)):
        channels, q = observation_space.shape
        c1, c2 = conv
        (k1, s1), (k2, s2) = CONV_LAYERS
        body = nn.Sequential(
            nn.Conv1d(channels, c1, k1, s1, 0),
            nn.Tanh(),
            nn.Conv1d(c1, c2, k2, s2, 0),
            nn.Flatten(),
        )
        with torch.no_grad():
            size = body(torch.zeros(1, channels, q)).shape[1]
        super().__init__(observation_space, features_dim=size)
        self.body = body

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.body(observations)


def policy_kwargs(arch: str) -> dict:
    """Keyword arguments of a MaskableActorCriticPolicy for one Table II architecture."""
    if arch not in ARCHS:
        raise InvalidInputError(f"unknown architecture {arch!r}; choose one of {', '.join(ARCHS)}")
    a = ARCHS[arch]
    kwargs = {
        "activation_fn": nn.Tanh,
        "net_arch": {"pi": list(a["hidden"]), "vf": list(a["hidden"])},
    }
    if a["kind"] == "cnn":
        kwargs["features_extractor_class"] = Conv1dExtractor
        kwargs["features_extractor_kwargs"] = {"conv": tuple(a["conv"])}
    else:
        kwargs["features_extractor_class"] = FlattenExtractor
    return kwargs


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
