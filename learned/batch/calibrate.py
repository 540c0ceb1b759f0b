"""Decision thresholds of the regression provisioners for user-set penalty weights (seed 004, section
4.5: e_I per hour of interruption, e_O per hour of overlap).

``rf``, ``xgb``, ``transformer`` and ``moe`` regress the successor's wait W if it were submitted now.
Their plain rule submits once the predicted wait reaches the predecessor's remaining time R. A user
who weighs interruption e_I / e_O times as heavily as overlap wants to submit earlier, since
errors that cost interruption count more. The rule becomes

    submit once  scale * W_pred + shift_h  >=  R   (hours)

where (scale, shift_h) is chosen for each weight ratio on a grid. The choice minimises the mean
penalty e_I * interruption + e_O * overlap on the training run's held-out episodes. These are the
15 % of the Nov 2022 - Feb 2023 injection times that no model was fitted on, so March, the
evaluation month, is never seen. The episodes are rebuilt from the training command in the
weights' metadata: the same injection times and the same split. They are recorded again here with
every decision probed, and checked against the reactive figures the training run stored. Replaying
a rule on them is exact (:func:`tjap.learned.batch.episodes.first_submission`).

    tjap provision calibrate --trace placement/batch/data/ls6-a100.tsv --interruption-weights 1 2 4

writes the thresholds into each model's metadata (``thresholds``, beside those of other weights
already there; the weights themselves are unchanged).
``make_provisioner("moe@2")`` (or ``--policy moe@2`` on the command line) serves them.
"""

from __future__ import annotations

import argparse
import json
import shlex
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.learned.batch import episodes as E
from tjap.learned.batch.features import HOUR_S, normalise
from tjap.learned.batch.weights import (
    FAMILY,
    WEIGHTS_DIR,
    load_network,
    load_trees,
    metadata_path,
    read_metadata,
    weight_key,
)
from tjap.learned.policy_io import update_metadata

REGRESSORS = ("rf", "xgb", "transformer", "moe")
SCALES = (0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5)
SHIFTS_H = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def training_args(meta: dict) -> tuple[argparse.Namespace, int]:
    """The training run's arguments (from the command in its metadata) and how many episodes it
    recorded (they are the first of its injection times: recording streams them in order)."""
    from tjap.learned.batch.train import parser

    # after "tjap train provision" (or, in older metadata, "python -m tjap.learned.batch.train")
    command = shlex.split(meta.get("command", ""))[3:]
    try:
        args = parser().parse_args(command)
        return args, int(meta["episodes"]["train"]) + int(meta["episodes"]["validation"])
    except (SystemExit, KeyError, TypeError):
        raise InvalidInputError(
            f"the metadata's training command {meta.get('command')!r} or "
            "episode counts cannot be read"
        ) from None


def record_held_out(trace: str, meta: dict, workers: int = 1) -> dict:
    """Record the training run's held-out episodes again (every decision probed)."""
    from tjap.heuristics.batch.rules import scheduler_config
    from tjap.learned.batch.train import DAY_S, injection_times, split_episodes
    from tjap.placement.batch import load_trace
    from tjap.placement.batch.chained import ChainedEpisode, Pair
    from tjap.placement.batch.replay import check_period, parse_date

    args, n_ep = training_args(meta)
    jobs, _ = load_trace(trace)
    start_s, end_s = (
        int(jobs.from_unix(parse_date(d, flag)))
        for d, flag in ((args.start, "--from"), (args.end, "--to"))
    )
    check_period(jobs, start_s, end_s, "the training run's --from/--to")
    seen = jobs.take(np.flatnonzero(jobs.submit_s < end_s))
    injections = injection_times(
        start_s, end_s - 6 * DAY_S, args.episodes, args.seed, args.pair_nodes
    )[:n_ep]
    _, held = split_episodes(n_ep, np.random.default_rng(args.seed))
    config = scheduler_config(args.scheduler)
    ChainedEpisode(seen, args.cluster_nodes, injections[0][0], Pair(), config=config)  # compile
    data = E.record_many(seen, args.cluster_nodes, [injections[i] for i in held], config, workers)
    expected = meta.get("validation", {}).get("reactive", {}).get("all", {})
    reactive = data["fallback_outcome_s"] / HOUR_S
    if (
        len(reactive) != expected.get("episodes")
        or abs(np.maximum(reactive, 0).mean() - expected.get("mean_interruption_h", -1)) > 1e-6
    ):
        raise InvalidInputError(
            f"the re-recorded held-out episodes ({len(reactive)}, reactive mean interruption "
            f"{np.maximum(reactive, 0).mean():.4f} h) differ from the training run's ({expected}); "
            "was the trace or the simulator changed since training?"
        )
    return data


def predictions_h(model: str, data: dict, weights_dir=None) -> np.ndarray:
    """The regressor's predicted wait (hours) at every recorded decision."""
    path = metadata_path(model, weights_dir)
    if model in ("rf", "xgb"):
        ensemble, _ = load_trees(path)
        flat = normalise(data["rows"])[E.window_index(data)].reshape(len(data["wait_s"]), -1)
        return np.asarray(ensemble.predict(flat), np.float64)
    import torch

    from tjap.learned.batch.train import Windows, predict_all

    foundation, _, _ = load_network(path)
    return predict_all(foundation, Windows(data, torch.device("cpu")), batch=512)[0].astype(
        np.float64
    )


def penalty_h(outcomes_s: np.ndarray, weight: float) -> float:
    """Mean weight * interruption + overlap (hours), e_O = 1."""
    o = np.asarray(outcomes_s, np.float64) / HOUR_S
    return float((weight * np.maximum(o, 0) + np.maximum(-o, 0)).mean())


def choose(data: dict, pred_h: np.ndarray, weights) -> dict:
    """For each weight, the (scale, shift_h) of the grid with the least mean penalty on ``data``
    (ties: the rule closest to the plain one, scale 1 and shift 0), with its figures."""
    from tjap.learned.batch.train import validate

    remaining_h = data["remaining_s"] / HOUR_S
    outcomes = {
        (a, b): E.first_submission(data, a * pred_h + b >= remaining_h)[0]
        for a in SCALES
        for b in SHIFTS_H
    }
    chosen = {}
    for w in weights:
        best = min(
            outcomes,
            key=lambda r: (round(penalty_h(outcomes[r], w), 9), abs(r[0] - 1) + abs(r[1]) / 4),
        )
        a, b = best
        figures = validate(data, a * pred_h + b >= remaining_h)
        chosen[weight_key(w)] = {
            "scale": a,
            "shift_h": b,
            "penalty_h": penalty_h(outcomes[best], w),
            "plain_rule_penalty_h": penalty_h(outcomes[(1.0, 0.0)], w),
            "validation": figures,
        }
    return chosen


def calibrate(
    trace: str,
    weights=(1.0, 2.0, 4.0),
    models=REGRESSORS,
    weights_dir=None,
    data_path="build/provision_held_out.npz",
    workers: int = 1,
    command: str = "",
    log=print,
) -> dict:
    """Choose and store the thresholds of ``models`` for each interruption weight in ``weights``.

    The held-out episodes are re-recorded from the training run (cached in ``data_path``, read if
    it exists); each model's metadata gains its thresholds (the weights files are unchanged).
    Returns the chosen thresholds by model. ``tjap provision calibrate`` runs it.
    """
    if any(w <= 0 for w in weights):
        raise InvalidInputError(f"interruption weights must be positive, got {list(weights)}")
    unknown = sorted(set(models) - set(REGRESSORS))
    if unknown:
        raise InvalidInputError(f"cannot calibrate {unknown}; choose among {', '.join(REGRESSORS)}")
    weights_dir = weights_dir or str(WEIGHTS_DIR)
    began = time.time()
    metas = {m: read_metadata(metadata_path(m, weights_dir)) for m in models}
    runs = {(meta["command"], json.dumps(meta["episodes"])) for meta in metas.values()}
    if len(runs) != 1:
        raise InvalidInputError(
            "the models come from different training runs; calibrate "
            "them one run at a time with --models"
        )
    meta0 = next(iter(metas.values()))
    cache = Path(data_path)
    if cache.exists():
        data = dict(np.load(cache))
    else:
        data = record_held_out(trace, meta0, workers)
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(cache, **data)
    log(
        f"{len(data['inject_s'])} held-out episodes, {len(data['wait_s'])} decisions "
        f"({time.time() - began:.0f} s)"
    )
    out = {}
    for model, meta in metas.items():
        chosen = choose(data, predictions_h(model, data, weights_dir), weights)
        kept = {
            w: c
            for w, c in meta.get("thresholds", {}).get("by_interruption_weight", {}).items()
            if w not in chosen
        }
        meta["thresholds"] = {
            "rule": "submit once scale * predicted_wait_h + shift_h >= remaining_h",
            "chosen_on": "the training run's held-out episodes (Nov 2022 - Feb 2023), "
            "least mean e_I * interruption_h + e_O * overlap_h, e_O = 1",
            "grid": {"scale": list(SCALES), "shift_h": list(SHIFTS_H)},
            "command": command,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "by_interruption_weight": dict(
                sorted((kept | chosen).items(), key=lambda kv: float(kv[0]))
            ),
        }
        update_metadata(metadata_path(model, weights_dir), FAMILY, meta)
        out[model] = chosen
        for w, c in chosen.items():
            log(
                f"{model} e_I/e_O={w}: scale {c['scale']}, shift {c['shift_h']} h, penalty "
                f"{c['penalty_h']:.3f} h (plain rule {c['plain_rule_penalty_h']:.3f} h); "
                f"heavy {json.dumps(c['validation']['heavy'])}"
            )
    return out


__all__ = [
    "REGRESSORS",
    "calibrate",
    "choose",
    "penalty_h",
    "predictions_h",
    "record_held_out",
    "training_args",
]
