"""Tree-ensemble regressors (random forest, XGBoost) as plain arrays, so that the shipped baselines
predict with numpy alone: scikit-learn and xgboost are only needed to train them (the
``ml-baselines`` extra).

All trees' nodes are concatenated: ``feature`` (-1 at a leaf), ``threshold`` (float64),
``left``/``right`` (node indices), ``value`` (leaf values, saved as float32), ``roots`` (each tree's first node).
A random forest goes left when x <= threshold and averages its trees; XGBoost goes left when
x < threshold (x as float32) and sums its trees plus ``base``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from tjap.core.errors import InvalidInputError

KINDS = ("rf", "xgb")
ARRAYS = ("kind", "feature", "threshold", "left", "right", "value", "roots", "base")


@dataclass(frozen=True)
class TreeEnsemble:
    kind: str
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    base: float = 0.0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise InvalidInputError(f"tree ensemble kind must be one of {KINDS}, got {self.kind!r}")

    @property
    def num_nodes(self) -> int:
        return len(self.feature)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predictions for the rows of ``x`` (n x features)."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float32))
        n = len(x)
        node = np.repeat(self.roots[None, :], n, 0)
        rows = np.arange(n)[:, None]
        while True:
            f = self.feature[node]
            inner = f >= 0
            if not inner.any():
                break
            v = x[rows, np.maximum(f, 0)].astype(np.float64)
            t = self.threshold[node]
            go_left = v <= t if self.kind == "rf" else v < t
            node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)
        leaves = self.value[node]
        return leaves.mean(1) if self.kind == "rf" else leaves.sum(1) + self.base

    def arrays(self) -> dict:
        """The ensemble as the named arrays of :data:`ARRAYS` (leaf values as float32), as
        :mod:`tjap.learned.batch.weights` saves it."""
        return {
            "kind": np.asarray(self.kind),
            "feature": self.feature.astype(np.int32),
            "threshold": np.asarray(self.threshold),
            "left": self.left.astype(np.int32),
            "right": self.right.astype(np.int32),
            "value": self.value.astype(np.float32),
            "roots": self.roots.astype(np.int32),
            "base": np.asarray(self.base, np.float64),
        }

    @classmethod
    def from_arrays(cls, arrays: dict) -> "TreeEnsemble":
        """The ensemble of :meth:`arrays`' output (as read back from a file)."""
        a = arrays
        return cls(
            str(a["kind"]),
            a["feature"],
            a["threshold"],
            a["left"],
            a["right"],
            a["value"].astype(np.float64),
            a["roots"],
            float(a["base"]),
        )


def _concat(kind, trees, base=0.0) -> TreeEnsemble:
    parts = {k: [] for k in ("feature", "threshold", "left", "right", "value")}
    roots, offset = [], 0
    for t in trees:
        roots.append(offset)
        leaf = t["left"] < 0
        parts["feature"].append(np.where(leaf, -1, t["feature"]))
        parts["threshold"].append(t["threshold"])
        parts["left"].append(np.where(leaf, -1, t["left"] + offset))
        parts["right"].append(np.where(leaf, -1, t["right"] + offset))
        parts["value"].append(np.where(leaf, t["value"], 0.0))
        offset += len(t["left"])
    arrays = {k: np.concatenate(v) for k, v in parts.items()}
    return TreeEnsemble(
        kind,
        arrays["feature"].astype(np.int32),
        arrays["threshold"].astype(np.float64),
        arrays["left"].astype(np.int32),
        arrays["right"].astype(np.int32),
        arrays["value"].astype(np.float64),
        np.array(roots, np.int32),
        float(base),
    )


def from_sklearn_forest(forest) -> TreeEnsemble:
    """A fitted sklearn RandomForestRegressor (single output)."""
    trees = []
    for est in forest.estimators_:
        t = est.tree_
        trees.append(
            {
                "feature": t.feature,
                "threshold": t.threshold,
                "left": t.children_left,
                "right": t.children_right,
                "value": t.value[:, 0, 0],
            }
        )
    return _concat("rf", trees)


def from_xgboost(booster) -> TreeEnsemble:
    """A fitted xgboost Booster (reg:squarederror, numeric features, no missing values)."""
    model = json.loads(booster.save_raw("json"))
    learner = model["learner"]
    base = learner["learner_model_param"]["base_score"]
    base = float(str(base).strip("[]").split(",")[0])
    trees = []
    for t in learner["gradient_booster"]["model"]["trees"]:
        cond = np.array(t["split_conditions"], dtype=np.float32).astype(np.float64)
        trees.append(
            {
                "feature": np.array(t["split_indices"]),
                "threshold": cond,
                "left": np.array(t["left_children"]),
                "right": np.array(t["right_children"]),
                "value": cond,
            }
        )
    return _concat("xgb", trees, base)
