"""Learned provisioners behind the submit-or-wait protocol of :mod:`heuristics.provisioning`, and
their weights: ``learned/weights/provision_<model>.{pt,npz}`` beside ``provision_<model>.json``
(format, feature spec and hash, architecture, training run, validation figures).

- ``rf``, ``xgb``, ``transformer``, ``moe``: a regressor of the successor's wait if submitted now;
  submit once the predicted wait is at least the predecessor's remaining time (the predicted start
  falls at or after the predecessor's expected end).
- ``transformer_dqn``, ``moe_dqn``: the DQN head on the frozen foundation model; submit when
  Q(submit) > Q(wait).
- ``transformer_pg``, ``moe_pg``: the policy-gradient head; submit with the head's probability
  (sampled with a seeded generator) or when it is at least 1/2 (``mode`` in the metadata,
  chosen on the training period's held-out episodes).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from learned.policy_io import read_weights_metadata
from learned.provision.features import (HOUR_S, feature_spec, head_inputs, normalise,
                                        observation, remaining_s, spec_hash)
from tjap.errors import InvalidInputError, UnknownMethodError

FORMAT = "tjap.provision/1"
WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"
MODELS = {"rf": "rf", "xgb": "xgb", "transformer": "transformer", "moe": "moe",
          "transformer_dqn": "transformer", "moe_dqn": "moe", "transformer_pg": "transformer",
          "moe_pg": "moe"}


def metadata_path(model: str, weights_dir=None) -> Path:
    return Path(weights_dir or WEIGHTS_DIR) / f"provision_{model}.json"


def write_metadata(path, meta: dict) -> Path:
    path = Path(path).with_suffix(".json")
    spec = feature_spec()
    path.write_text(json.dumps({"format": FORMAT, "feature_spec": spec,
                                "feature_spec_hash": spec_hash(spec)} | meta, indent=2))
    return path


def read_metadata(path) -> dict:
    path, meta = read_weights_metadata(Path(path).with_suffix(".json"), FORMAT, "provisioner",
                                       "train one with `python -m learned.provision.train`")
    if meta.get("feature_spec_hash") != spec_hash(feature_spec()):
        raise InvalidInputError(f"{path} was trained on other features than "
                                "learned.provision.features defines; retrain it")
    return meta


def save_torch(path, state: dict, meta: dict) -> tuple[Path, Path]:
    import torch

    path = Path(path)
    torch.save({group: {k: v.detach().cpu() for k, v in sd.items()} for group, sd in state.items()},
               path.with_suffix(".pt"))
    return path.with_suffix(".pt"), write_metadata(path, meta | {"weights_file":
                                                                   path.with_suffix(".pt").name})


def load_torch(path):
    """(foundation, {head name: head}, metadata) of a saved transformer / moe model."""
    import torch

    from learned.provision.nets import DecisionHead, build_foundation

    meta = read_metadata(path)
    weights = Path(path).with_name(meta["weights_file"])
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True)
        foundation = build_foundation(meta["kind"], meta["foundation"], meta.get("experts", 0))
        foundation.load_state_dict(state["foundation"])
        heads = {}
        for name, config in meta.get("heads", {}).items():
            heads[name] = DecisionHead(**config)
            heads[name].load_state_dict(state[name])
    except FileNotFoundError:
        raise InvalidInputError(f"weights file {weights} is missing") from None
    except (RuntimeError, KeyError) as exc:
        raise InvalidInputError(f"{weights} does not fit its metadata: {exc}") from None
    foundation.eval()
    for head in heads.values():
        head.eval()
    return foundation, heads, meta


class TreeProvisioner:
    """Submit once the tree ensemble's predicted wait reaches the remaining time."""

    def __init__(self, name: str, ensemble, meta: dict | None = None):
        self.name, self.ensemble, self.meta = name, ensemble, meta or {}

    def predicted_wait_h(self, episode) -> float:
        return float(self.ensemble.predict(normalise(observation(episode)).reshape(1, -1))[0])

    def decide(self, episode) -> bool:
        return self.predicted_wait_h(episode) * HOUR_S >= remaining_s(episode)


class NetworkProvisioner:
    """A foundation model with an optional decision head: ``rule`` is "wait" (predicted wait >=
    remaining time), "dqn" (Q(submit) > Q(wait)) or "pg" (the head's submit probability)."""

    def __init__(self, name: str, foundation, head=None, rule: str = "wait", mode: str = "greedy",
                 seed: int = 0, meta: dict | None = None):
        if rule not in ("wait", "dqn", "pg") or mode not in ("greedy", "sample"):
            raise InvalidInputError(f"unknown rule {rule!r} / mode {mode!r}")
        self.name, self.foundation, self.head, self.rule, self.mode = name, foundation, head, rule, mode
        self.meta = meta or {}
        self._rng = np.random.default_rng(seed)

    def outputs(self, episode) -> dict:
        import torch

        x = torch.from_numpy(normalise(observation(episode)))[None]
        remaining = remaining_s(episode)
        with torch.no_grad():
            wait_h, embedding = self.foundation(x)
            out = {"predicted_wait_h": float(wait_h[0]), "remaining_h": remaining / HOUR_S}
            if self.head is not None:
                running = episode.predecessor()["start_s"] is not None
                extra = torch.from_numpy(head_inputs(out["predicted_wait_h"],
                                                     out["remaining_h"], running))[None]
                out["head"] = self.head(embedding, extra)[0].numpy()
        return out

    def decide(self, episode) -> bool:
        out = self.outputs(episode)
        if self.rule == "wait":
            return out["predicted_wait_h"] >= out["remaining_h"]
        if self.rule == "dqn":
            return bool(out["head"][1] > out["head"][0])
        p = 1.0 / (1.0 + np.exp(-float(out["head"][0])))
        return bool(self._rng.random() < p) if self.mode == "sample" else p >= 0.5


def load_provisioner(name: str, weights_dir=None, seed: int = 0):
    """The learned provisioner ``name`` (one of :data:`MODELS`) from its shipped weights."""
    if name not in MODELS:
        raise UnknownMethodError(f"unknown learned provisioner {name!r}; choose one of "
                                 f"{', '.join(MODELS)}")
    model = MODELS[name]
    path = metadata_path(model, weights_dir)
    if model in ("rf", "xgb"):
        from learned.provision.trees import TreeEnsemble

        meta = read_metadata(path)
        return TreeProvisioner(name, TreeEnsemble.load(path.with_name(meta["weights_file"])), meta)
    import torch

    torch.set_num_threads(1)
    foundation, heads, meta = load_torch(path)
    rule = name.rsplit("_", 1)[1] if "_" in name else "wait"
    head = heads.get(rule) if rule != "wait" else None
    if rule != "wait" and head is None:
        raise InvalidInputError(f"{path} has no {rule} head")
    return NetworkProvisioner(name, foundation, head, rule, meta.get("pg_mode", "greedy"), seed, meta)
