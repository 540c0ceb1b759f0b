"""The provisioners' weights: ``learned/weights/provision_<model>.{pt,npz}`` beside
``provision_<model>.json``, in the format of :mod:`tjap.learned.policy_io` (family "provision").

The metadata holds the feature spec and its hash (checked against
:func:`tjap.learned.batch.features.feature_spec` at load), the training run, the validation figures
and, for the regressors, the decision thresholds calibrated per interruption weight
(:mod:`tjap.learned.batch.calibrate` writes them, :func:`thresholds` reads them). The transformer and
moe models are saved in parts (``foundation``, ``dqn``, ``pg``); the tree ensembles as arrays.

The provisioners (:mod:`tjap.learned.batch.policy`), their training
(:mod:`tjap.learned.batch.train`) and calibration all go through this module, which imports none of
them.
"""

from __future__ import annotations

import math
from pathlib import Path

from tjap.core.errors import InvalidInputError
from tjap.learned.batch.features import feature_spec
from tjap.learned.policy_io import check_architecture, load_weights, save_weights, spec_hash
from tjap.learned.policy_io import read_metadata as read_weights_metadata

FAMILY = "provision"
WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"


def metadata_path(model: str, weights_dir=None) -> Path:
    """Where the metadata of ``model`` (rf, xgb, transformer, moe) lies."""
    return Path(weights_dir or WEIGHTS_DIR) / f"provision_{model}.json"


def save(path, state, meta: dict) -> tuple[Path, Path]:
    """Write a provisioner's weights and metadata (``meta`` plus the feature spec and its hash):
    ``state`` is a dict of named modules (``foundation`` and the heads, to .pt) or a tree
    ensemble's arrays (:meth:`tjap.learned.batch.trees.TreeEnsemble.arrays`, to .npz)."""
    spec = feature_spec()
    return save_weights(
        path, FAMILY, state, {"feature_spec": spec, "feature_spec_hash": spec_hash(spec)} | meta
    )


def _check_spec(meta_path: Path, meta: dict) -> None:
    if meta.get("feature_spec_hash") != spec_hash(feature_spec()):
        raise InvalidInputError(
            f"{meta_path} was trained on other features than "
            "tjap.learned.batch.features defines; retrain it with "
            "`tjap train provision --trace TRACE`"
        )


def read_metadata(path) -> dict:
    """A provisioner's metadata (``path``: the .json, the weights file or their stem), checked."""
    meta_path, meta = read_weights_metadata(path, FAMILY)
    _check_spec(meta_path, meta)
    return meta


def load_network(path):
    """(foundation, {head name: head}, metadata) of a saved transformer / moe model."""
    from tjap.learned.batch.nets import DecisionHead, build_foundation

    def build(meta_path, meta):
        _check_spec(meta_path, meta)
        if meta.get("kind") not in ("transformer", "moe"):
            raise InvalidInputError(
                f"{meta_path} holds a {meta.get('kind')!r} model, not a transformer or moe"
            )
        check_architecture(
            meta_path, {k: meta.get(k) for k in ("foundation", "experts", "heads")}, FAMILY, ""
        )
        try:
            return {
                "foundation": build_foundation(
                    meta["kind"], meta["foundation"], meta.get("experts", 0)
                )
            } | {name: DecisionHead(**config) for name, config in meta.get("heads", {}).items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"{meta_path}: the foundation or head configuration does not "
                f"build ({type(exc).__name__}: {exc})"
            ) from None

    parts, meta = load_weights(path, FAMILY, build)
    foundation = parts.pop("foundation")
    return foundation, parts, meta


def load_trees(path):
    """(tree ensemble, metadata) of a saved rf / xgb model."""
    from tjap.learned.batch.trees import ARRAYS, TreeEnsemble

    def build(meta_path, meta):
        _check_spec(meta_path, meta)
        return dict.fromkeys(ARRAYS)

    arrays, meta = load_weights(path, FAMILY, build)
    return TreeEnsemble.from_arrays(arrays), meta


def weight_key(weight: float) -> str:
    """The key of an interruption weight in the metadata's threshold table."""
    return f"{float(weight):g}"


def thresholds(meta: dict, weight: float, name: str) -> tuple[float, float]:
    """(scale, shift_h) calibrated for ``weight`` in a model's metadata."""
    thresholds_ = meta.get("thresholds")
    table = thresholds_.get("by_interruption_weight") if isinstance(thresholds_, dict) else None
    table = table if isinstance(table, dict) else {}
    if weight_key(weight) not in table:
        have = ", ".join(map(str, table))[:120] or "none"
        raise InvalidInputError(
            f"{name} has no threshold calibrated for e_I/e_O = {weight:g} (calibrated: {have}); "
            f"run `tjap provision calibrate --trace TRACE --interruption-weights {weight:g}`"
        )
    entry = table[weight_key(weight)]
    try:
        scale, shift = float(entry["scale"]), float(entry["shift_h"])
    except (TypeError, KeyError, ValueError, OverflowError):
        scale = shift = math.nan
    if not (math.isfinite(scale) and math.isfinite(shift)):
        raise InvalidInputError(
            f"{name}: the threshold for e_I/e_O = {weight:g} is not a pair of numbers scale and "
            f"shift_h, got {entry!r:.80}; run `tjap provision calibrate --trace TRACE "
            f"--interruption-weights {weight:g}` again"
        )
    return scale, shift


__all__ = [
    "FAMILY",
    "WEIGHTS_DIR",
    "load_network",
    "load_trees",
    "metadata_path",
    "read_metadata",
    "save",
    "thresholds",
    "weight_key",
]
