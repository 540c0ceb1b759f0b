"""Save and load a trained policy: a small state dict (.pt) beside JSON metadata (.json) naming the
architecture, the feature spec and its hash, the training run and the library versions. Loading
rebuilds the policy and refuses any mismatch with a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from learned.features import spec_hash
from learned.nets import ARCHS, policy_kwargs
from tjap.errors import InvalidInputError

FORMAT = "tjap.policy/1"


def versions() -> dict:
    import gymnasium
    import sb3_contrib
    import stable_baselines3
    import torch

    import tjap

    return {"tjap": tjap.__version__, "torch": torch.__version__,
            "stable_baselines3": stable_baselines3.__version__,
            "sb3_contrib": sb3_contrib.__version__, "gymnasium": gymnasium.__version__,
            "numpy": np.__version__}


def build_policy(arch: str, spec: dict):
    import gymnasium as gym
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    obs_space = gym.spaces.Box(0.0, 1.0, (len(spec["channels"]), spec["q"]), dtype=np.float32)
    return MaskableActorCriticPolicy(obs_space, gym.spaces.Discrete(spec["q"]),
                                     lambda _: 0.0, **policy_kwargs(arch))


def save_policy(policy, path, *, arch: str, spec: dict, training: dict) -> tuple[Path, Path]:
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    weights, meta = path.with_suffix(".pt"), path.with_suffix(".json")
    state = {k: v.detach().cpu() for k, v in policy.state_dict().items()}
    torch.save(state, weights)
    meta.write_text(json.dumps({
        "format": FORMAT, "architecture": arch, "feature_spec": spec,
        "feature_spec_hash": spec_hash(spec), "training": training, "versions": versions(),
        "weights_file": weights.name}, indent=2))
    return weights, meta


def read_weights_metadata(path, fmt: str, what: str, train_hint: str) -> tuple[Path, dict]:
    """The JSON metadata beside trained weights (``path``: the .json, the .pt or their stem), checked
    to be of format ``fmt``: returns (metadata path, metadata). Errors name ``what`` was expected
    and how to make one (``train_hint``). Shared by every learned operator's loader."""
    path = Path(path)
    meta_path = path if path.suffix == ".json" else path.with_suffix(".json")
    try:
        meta = json.loads(meta_path.read_text())
    except OSError:
        raise InvalidInputError(f"no {what} metadata at {meta_path}; {train_hint}") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{meta_path} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise InvalidInputError(f"{meta_path} is not a tjap {what} (format {found!r})")
    return meta_path, meta


def load_state(meta_path: Path, meta: dict):
    """The torch state dict named by the metadata (``weights_file``, default the .pt beside it):
    returns (state, weights path)."""
    import torch

    weights = meta_path.with_name(meta.get("weights_file", meta_path.with_suffix(".pt").name))
    try:
        return torch.load(weights, map_location="cpu", weights_only=True), weights
    except FileNotFoundError:
        raise InvalidInputError(f"weights file {weights} is missing") from None


def load_policy(path, *, expect_spec: dict | None = None):
    """Load a policy from ``path`` (.json or .pt, or the stem). Returns (policy, metadata)."""
    meta_path, meta = read_weights_metadata(path, FORMAT, "policy",
                                            "give the .json written by `tjap train nsa`")
    arch, spec = meta.get("architecture"), meta.get("feature_spec")
    if arch not in ARCHS or not isinstance(spec, dict):
        raise InvalidInputError(f"{meta_path}: unknown architecture {arch!r} or missing feature_spec")
    if spec_hash(spec) != meta.get("feature_spec_hash"):
        raise InvalidInputError(f"{meta_path}: feature_spec does not match its hash; the file was edited")
    if expect_spec is not None and spec_hash(expect_spec) != spec_hash(spec):
        raise InvalidInputError(
            f"{meta_path} was trained on features {spec}, but {expect_spec} were asked for")
    policy = build_policy(arch, spec)
    state, weights = load_state(meta_path, meta)
    try:
        policy.load_state_dict(state)
    except RuntimeError as exc:
        raise InvalidInputError(f"{weights} does not fit architecture {arch}: {exc}") from None
    policy.set_training_mode(False)
    return policy, meta
