"""What a learned provisioner sees: the 144 x 40 history of :func:`tjap.placement.batch.chained.
snapshot_features` ending at the decision time, each feature divided by a fixed scale.

One definition for the environment, the training data, the tree baselines and the provisioners:
:func:`observation` (the history of an episode now) and :func:`normalise` (raw rows to network
input). Scales (raw unit -> 1): job counts 100 (queue) / 50 (running); node counts (job sizes) 8;
busy and free nodes 76; queue ages, limits and running elapsed times 24 h; the predecessor's and
successor's limits and the predecessor's elapsed time 48 h, its queue time 24 h.
"""

from __future__ import annotations

import numpy as np

from tjap.placement.batch.chained import FEATURES, HOUR_S, ChainedEpisode, snapshot_features


def _scale(name: str) -> float:
    if name == "queue_jobs":
        return 100.0
    if name == "running_jobs":
        return 50.0
    if name in ("busy_nodes", "free_nodes"):
        return 76.0
    if "size" in name:
        return 8.0
    if name in ("pred_limit_h", "pred_elapsed_h", "succ_limit_h"):
        return 48.0
    return 24.0  # hours: queue ages and limits, running elapsed and limits, the predecessor's queue


SCALES = np.array([_scale(f) for f in FEATURES], dtype=np.float32)


def feature_spec(history: int = 144) -> dict:
    return {
        "features": list(FEATURES),
        "scales": SCALES.tolist(),
        "history": int(history),
        "layout": "history x features, oldest first, ending at the decision time",
        "normalisation": "raw / scale",
    }


def normalise(rows: np.ndarray) -> np.ndarray:
    """Raw snapshot rows (..., 40) to network input (float32)."""
    return (np.asarray(rows, dtype=np.float32) / SCALES).astype(np.float32)


def observation(episode: ChainedEpisode) -> np.ndarray:
    """The raw history (history x 40) that ends with the snapshot at ``episode.now`` (the
    episode's own history stops one interval earlier: it records a snapshot when it steps)."""
    now = snapshot_features(episode.sim, episode.pred, episode.succ)
    return np.vstack([episode.observation()[1:], now[None]])


def remaining_s(episode: ChainedEpisode) -> float:
    """Time until the predecessor's expected end (its start plus its limit) as a provisioner
    knows it; the whole limit while it has not started."""
    pred = episode.predecessor()
    if pred["start_s"] is None:
        return float(pred["limit_s"])
    return float(max(pred["expected_end_s"] - episode.now, 0))


def head_inputs(predicted_wait_h, remaining_h, running) -> np.ndarray:
    """The scalars a decision head sees beside the foundation model's embedding: the predicted
    wait, the predecessor's remaining time, their difference (all / 24 h) and whether it runs."""
    w, r = np.asarray(predicted_wait_h, np.float32), np.asarray(remaining_h, np.float32)
    return np.stack([w / 24, r / 24, (w - r) / 24, np.asarray(running, np.float32)], -1)


__all__ = [
    "FEATURES",
    "HOUR_S",
    "SCALES",
    "feature_spec",
    "head_inputs",
    "normalise",
    "observation",
    "remaining_s",
]
