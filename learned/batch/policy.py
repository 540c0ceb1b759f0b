"""Learned provisioners behind the submit-or-wait protocol of :mod:`tjap.heuristics.batch.rules`, from
their weights (:mod:`tjap.learned.batch.weights`: ``learned/weights/provision_<model>.{pt,npz}``
beside ``provision_<model>.json``).

- ``rf``, ``xgb``, ``transformer``, ``moe``: a regressor of the successor's wait if submitted now;
  submit once the predicted wait is at least the predecessor's remaining time (the predicted start
  falls at or after the predecessor's expected end). With an interruption weight w = e_I / e_O
  (``load_provisioner(name, interruption_weight=w)``, or the name ``"moe@w"``), submit once
  scale * predicted wait + shift >= remaining time, (scale, shift) calibrated for w on the
  training period's held-out episodes (:mod:`tjap.learned.batch.calibrate`).
- ``transformer_dqn``, ``moe_dqn``: the DQN head on the frozen foundation model; submit when
  Q(submit) > Q(wait).
- ``transformer_pg``, ``moe_pg``: the policy-gradient head; submit with the head's probability
  (sampled with a seeded generator) or when it is at least 1/2 (``mode`` in the metadata,
  chosen on the training period's held-out episodes).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tjap.core.errors import InvalidInputError, UnknownMethodError
from tjap.learned.batch.features import HOUR_S, head_inputs, normalise, observation, remaining_s
from tjap.learned.batch.weights import (
    load_network,
    load_trees,
    metadata_path,
    read_metadata,
    thresholds,
)

MODELS = {
    "rf": "rf",
    "xgb": "xgb",
    "transformer": "transformer",
    "moe": "moe",
    "transformer_dqn": "transformer",
    "moe_dqn": "moe",
    "transformer_pg": "transformer",
    "moe_pg": "moe",
}


class TreeProvisioner:
    """Submit once the tree ensemble's predicted wait (times ``scale``, plus ``shift_h``) reaches
    the remaining time."""

    def __init__(
        self,
        name: str,
        ensemble,
        meta: dict | None = None,
        scale: float = 1.0,
        shift_h: float = 0.0,
    ):
        self.name, self.ensemble, self.meta = name, ensemble, meta or {}
        self.scale, self.shift_h = scale, shift_h

    def predicted_wait_h(self, episode) -> float:
        return float(self.ensemble.predict(normalise(observation(episode)).reshape(1, -1))[0])

    def decide(self, episode) -> bool:
        wait_h = self.scale * self.predicted_wait_h(episode) + self.shift_h
        return wait_h * HOUR_S >= remaining_s(episode)


class NetworkProvisioner:
    """A foundation model with an optional decision head: ``rule`` is "wait" (predicted wait >=
    remaining time), "dqn" (Q(submit) > Q(wait)) or "pg" (the head's submit probability)."""

    def __init__(
        self,
        name: str,
        foundation,
        head=None,
        rule: str = "wait",
        mode: str = "greedy",
        seed: int = 0,
        meta: dict | None = None,
        scale: float = 1.0,
        shift_h: float = 0.0,
    ):
        if rule not in ("wait", "dqn", "pg") or mode not in ("greedy", "sample"):
            raise InvalidInputError(f"unknown rule {rule!r} / mode {mode!r}")
        self.name, self.foundation, self.head, self.rule, self.mode = (
            name,
            foundation,
            head,
            rule,
            mode,
        )
        self.meta = meta or {}
        self.scale, self.shift_h = scale, shift_h
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
                extra = torch.from_numpy(
                    head_inputs(out["predicted_wait_h"], out["remaining_h"], running)
                )[None]
                out["head"] = self.head(embedding, extra)[0].numpy()
        return out

    def decide(self, episode) -> bool:
        out = self.outputs(episode)
        if self.rule == "wait":
            return self.scale * out["predicted_wait_h"] + self.shift_h >= out["remaining_h"]
        if self.rule == "dqn":
            return bool(out["head"][1] > out["head"][0])
        p = 1.0 / (1.0 + np.exp(-float(out["head"][0])))
        return bool(self._rng.random() < p) if self.mode == "sample" else p >= 0.5


def parse_name(name: str) -> tuple[str, float | None]:
    """``"moe@2"`` -> ("moe", 2.0): a provisioner name with an optional interruption weight."""
    base, at, weight = str(name).partition("@")
    if not at:
        return base, None
    try:
        value = float(weight)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise InvalidInputError(
            f"{name!r}: the interruption weight after '@' must be a positive number, e.g. moe@2"
        )
    return base, value


def load_provisioner(
    name: str,
    weights_dir=None,
    seed: int = 0,
    interruption_weight: float | None = None,
    weights=None,
):
    """The learned provisioner ``name`` (one of :data:`MODELS`, optionally ``name@w``) from its
    shipped weights. ``interruption_weight`` w = e_I / e_O serves the regressors' thresholds
    calibrated for w; the DQN and PG heads only serve the weights they were trained with.

    ``weights`` (the metadata .json, the weights file or their stem) loads that file instead of
    ``provision_<model>.json`` in ``weights_dir`` (default: the shipped ``learned/weights``); it
    must hold a model of the kind ``name`` serves (transformer_dqn: a transformer). The file's
    checksum and shapes are checked first; any problem is one line of InvalidInputError."""
    base, weight = parse_name(name)
    if weight is not None and interruption_weight is not None and weight != interruption_weight:
        raise InvalidInputError(
            f"{name!r} and interruption_weight={interruption_weight:g} disagree"
        )
    weight = weight if weight is not None else interruption_weight
    if base not in MODELS:
        raise UnknownMethodError(
            f"unknown learned provisioner {base!r}; choose one of {', '.join(MODELS)}"
        )
    model = MODELS[base]
    if weights is not None and weights_dir is not None:
        raise InvalidInputError("give weights= (one file) or weights_dir= (a folder), not both")
    path = Path(weights) if weights is not None else metadata_path(model, weights_dir)
    kind = read_metadata(path).get("kind")
    if kind != model:
        raise InvalidInputError(
            f"{path} holds a {kind!r} provisioner, not the {model!r} model that {base!r} "
            f"serves; give a provision_{model}.json, or --policy "
            f"{next((n for n, m in MODELS.items() if m == kind), kind)}"
        )
    rule = base.rsplit("_", 1)[1] if "_" in base else "wait"
    label = base if weight is None else f"{base}@{weight:g}"
    if model in ("rf", "xgb"):
        ensemble, meta = load_trees(path)
        scale, shift = _thresholds(meta, weight, label)
        return TreeProvisioner(label, ensemble, meta, scale, shift)
    import torch

    torch.set_num_threads(1)
    foundation, heads, meta = load_network(path)
    head = heads.get(rule) if rule != "wait" else None
    if rule != "wait" and head is None:
        raise InvalidInputError(f"{path} has no {rule} head")
    if rule != "wait":
        trained = meta.get("reward", {})
        trained_w = trained.get("e_interruption", 1.0) / trained.get("e_overlap", 1.0)
        if weight is not None and weight != trained_w:
            raise InvalidInputError(
                f"the {rule} head of {path.name} was trained for e_I/e_O = {trained_w:g}, not "
                f"{weight:g}; retrain it with `tjap train provision "
                f"--e-interruption {weight:g}`"
            )
        scale, shift = 1.0, 0.0
    else:
        scale, shift = _thresholds(meta, weight, label)
    return NetworkProvisioner(
        label, foundation, head, rule, meta.get("pg_mode", "greedy"), seed, meta, scale, shift
    )


def _thresholds(meta: dict, weight: float | None, label: str) -> tuple[float, float]:
    return (1.0, 0.0) if weight is None else thresholds(meta, weight, label)
