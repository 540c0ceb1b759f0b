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
a rule on them is exact (:func:`learned.provision.episodes.first_submission`).

    python -m learned.provision.calibrate --trace ../shared/traces/ls6-a100.tsv --weights 1 2 4

writes the thresholds into each model's metadata (``thresholds``, beside those of other weights
already there; the weights themselves are unchanged).
``make_provisioner("moe@2")`` (or ``--interruption-weight 2`` on the command line) serves them.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from learned.provision import episodes as E
from learned.provision.features import HOUR_S, normalise
from learned.provision.policies import MODELS, WEIGHTS_DIR, metadata_path, read_metadata
from tjap.errors import InvalidInputError

REGRESSORS = ("rf", "xgb", "transformer", "moe")
SCALES = (0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5)
SHIFTS_H = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def weight_key(weight: float) -> str:
    return f"{float(weight):g}"


def training_args(meta: dict) -> tuple[argparse.Namespace, int]:
    """The training run's arguments (from the command in its metadata) and how many episodes it
    recorded (they are the first of its injection times: recording streams them in order)."""
    from learned.provision.train import parser

    command = shlex.split(meta.get("command", ""))[3:]   # after "python -m learned.provision.train"
    try:
        args = parser().parse_args(command)
        return args, int(meta["episodes"]["train"]) + int(meta["episodes"]["validation"])
    except (SystemExit, KeyError, TypeError):
        raise InvalidInputError(f"the metadata's training command {meta.get('command')!r} or "
                                "episode counts cannot be read") from None


def record_held_out(trace: str, meta: dict, workers: int = 1) -> dict:
    """Record the training run's held-out episodes again (every decision probed)."""
    from heuristics.provisioning import scheduler_config
    from learned.provision.train import DAY_S, injection_times, split_episodes
    from placement.batch import load_trace
    from placement.batch.chained import ChainedEpisode, Pair
    from placement.batch.replay import parse_date

    args, n_ep = training_args(meta)
    jobs, _ = load_trace(trace)
    start_s, end_s = (int(jobs.from_unix(parse_date(d))) for d in (args.start, args.end))
    seen = jobs.take(np.flatnonzero(jobs.submit_s < end_s))
    injections = injection_times(start_s, end_s - 6 * DAY_S, args.episodes, args.seed,
                                 args.pair_nodes)[:n_ep]
    _, held = split_episodes(n_ep, np.random.default_rng(args.seed))
    config = scheduler_config(args.scheduler)
    ChainedEpisode(seen, args.cluster_nodes, injections[0][0], Pair(), config=config)  # compile
    data = E.record_many(seen, args.cluster_nodes, [injections[i] for i in held], config, workers)
    expected = meta.get("validation", {}).get("reactive", {}).get("all", {})
    reactive = data["fallback_outcome_s"] / HOUR_S
    if (len(reactive) != expected.get("episodes")
            or abs(np.maximum(reactive, 0).mean() - expected.get("mean_interruption_h", -1)) > 1e-6):
        raise InvalidInputError(
            f"the re-recorded held-out episodes ({len(reactive)}, reactive mean interruption "
            f"{np.maximum(reactive, 0).mean():.4f} h) differ from the training run's ({expected}); "
            "was the trace or the simulator changed since training?")
    return data


def predictions_h(model: str, data: dict, weights_dir=None) -> np.ndarray:
    """The regressor's predicted wait (hours) at every recorded decision."""
    path = metadata_path(model, weights_dir)
    if model in ("rf", "xgb"):
        from learned.provision.trees import TreeEnsemble

        meta = read_metadata(path)
        ensemble = TreeEnsemble.load(path.with_name(meta["weights_file"]))
        flat = normalise(data["rows"])[E.window_index(data)].reshape(len(data["wait_s"]), -1)
        return np.asarray(ensemble.predict(flat), np.float64)
    import torch

    from learned.provision.policies import load_torch
    from learned.provision.train import Windows, predict_all

    foundation, _, _ = load_torch(path)
    return predict_all(foundation, Windows(data, torch.device("cpu")), batch=512)[0].astype(np.float64)


def penalty_h(outcomes_s: np.ndarray, weight: float) -> float:
    """Mean weight * interruption + overlap (hours), e_O = 1."""
    o = np.asarray(outcomes_s, np.float64) / HOUR_S
    return float((weight * np.maximum(o, 0) + np.maximum(-o, 0)).mean())


def choose(data: dict, pred_h: np.ndarray, weights) -> dict:
    """For each weight, the (scale, shift_h) of the grid with the least mean penalty on ``data``
    (ties: the rule closest to the plain one, scale 1 and shift 0), with its figures."""
    from learned.provision.train import validate

    remaining_h = data["remaining_s"] / HOUR_S
    outcomes = {(a, b): E.first_submission(data, a * pred_h + b >= remaining_h)[0]
                for a in SCALES for b in SHIFTS_H}
    chosen = {}
    for w in weights:
        best = min(outcomes, key=lambda r: (round(penalty_h(outcomes[r], w), 9),
                                            abs(r[0] - 1) + abs(r[1]) / 4))
        a, b = best
        figures = validate(data, a * pred_h + b >= remaining_h)
        chosen[weight_key(w)] = {"scale": a, "shift_h": b, "penalty_h": penalty_h(outcomes[best], w),
                                 "plain_rule_penalty_h": penalty_h(outcomes[(1.0, 0.0)], w),
                                 "validation": figures}
    return chosen


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m learned.provision.calibrate",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", required=True)
    p.add_argument("--weights", type=float, nargs="+", default=[1.0, 2.0, 4.0],
                   help="interruption weights e_I / e_O to calibrate for (default 1 2 4)")
    p.add_argument("--models", nargs="+", default=list(REGRESSORS), choices=REGRESSORS)
    p.add_argument("--weights-dir", default=str(WEIGHTS_DIR))
    p.add_argument("--data", default="build/provision_held_out.npz",
                   help="cache of the re-recorded held-out episodes (read if it exists)")
    p.add_argument("--workers", type=int, default=1)
    args = p.parse_args(argv)
    if any(w <= 0 for w in args.weights):
        p.error("--weights must be positive")
    try:
        began = time.time()
        metas = {m: read_metadata(metadata_path(m, args.weights_dir)) for m in args.models}
        runs = {(meta["command"], json.dumps(meta["episodes"])) for meta in metas.values()}
        if len(runs) != 1:
            raise InvalidInputError("the models come from different training runs; calibrate "
                                    "them one run at a time with --models")
        meta0 = next(iter(metas.values()))
        cache = Path(args.data)
        if cache.exists():
            data = dict(np.load(cache))
        else:
            data = record_held_out(args.trace, meta0, args.workers)
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(cache, **data)
        print(f"{len(data['inject_s'])} held-out episodes, {len(data['wait_s'])} decisions "
              f"({time.time() - began:.0f} s)", flush=True)
        for model, meta in metas.items():
            chosen = choose(data, predictions_h(model, data, args.weights_dir), args.weights)
            kept = {w: c for w, c in meta.get("thresholds", {}).get("by_interruption_weight",
                                                                        {}).items() if w not in chosen}
            meta["thresholds"] = {
                "rule": "submit once scale * predicted_wait_h + shift_h >= remaining_h",
                "chosen_on": "the training run's held-out episodes (Nov 2022 - Feb 2023), "
                             "least mean e_I * interruption_h + e_O * overlap_h, e_O = 1",
                "grid": {"scale": list(SCALES), "shift_h": list(SHIFTS_H)},
                "command": "python -m learned.provision.calibrate " + " ".join(
                    argv if argv is not None else sys.argv[1:]),
                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "by_interruption_weight": dict(sorted((kept | chosen).items(),
                                                      key=lambda kv: float(kv[0])))}
            metadata_path(model, args.weights_dir).write_text(json.dumps(meta, indent=2))
            for w, c in chosen.items():
                print(f"{model} e_I/e_O={w}: scale {c['scale']}, shift {c['shift_h']} h, penalty "
                      f"{c['penalty_h']:.3f} h (plain rule {c['plain_rule_penalty_h']:.3f} h); "
                      f"heavy {json.dumps(c['validation']['heavy'])}", flush=True)
    except InvalidInputError as exc:
        print(f"learned.provision.calibrate: {exc}", file=sys.stderr)
        return 2
    return 0


def thresholds(meta: dict, weight: float, name: str) -> tuple[float, float]:
    """(scale, shift_h) calibrated for ``weight`` in a model's metadata."""
    table = meta.get("thresholds", {}).get("by_interruption_weight", {})
    if weight_key(weight) not in table:
        have = ", ".join(table) or "none"
        raise InvalidInputError(
            f"{name} has no threshold calibrated for e_I/e_O = {weight:g} (calibrated: {have}); "
            f"run `python -m learned.provision.calibrate --trace TRACE --weights {weight:g}`")
    entry = table[weight_key(weight)]
    return float(entry["scale"]), float(entry["shift_h"])


__all__ = ["MODELS", "REGRESSORS", "choose", "penalty_h", "predictions_h",
           "record_held_out", "thresholds", "training_args", "weight_key"]

if __name__ == "__main__":
    sys.exit(main())
