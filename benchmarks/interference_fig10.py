"""Seed 001 Fig. 10: the multi-agent scheduler against a single agent, as learning curves.

Reads the metadata of two training runs of ``tjap train interference`` (one with
``--single-agent``), each of which stores its PPO curve (return and jobs per episode) and its
greedy evaluation, and plots the episode cost per job (minus return over jobs: with ``--reward
jct`` that is the mean time in the system per job, in intervals, within the episode) against
PPO decisions, smoothed over a window of episodes::

    tjap train interference --k 8 --intervals 8 --reward jct --bc-episodes 0 \\
        --ppo-steps 150000 --rollout 2048 --seed 0 --eval-seeds 100,101 --out OUT/marl
    tjap train interference ... --single-agent --out OUT/single
    python -m benchmarks.interference_fig10 OUT/marl.json OUT/single.json

Fine-tuning mode: runs started from the cloned weights (``--init``) with ``--eval-every`` store
the greedy policy's average JCT on the held-out ``--eval-seeds`` before PPO and every N
decisions; when the runs have such points a second panel plots them against PPO decisions (the
comparable measure across rewards: the left panel's cost is the reward's own)::

    tjap train interference --k 8 --intervals 8 --reward jct --bc-episodes 0 \
        --init learned/weights/interference_marl.json --ppo-steps 40960 --rollout 2048 \
        --seed 0 --eval-seeds 100,101 --eval-every 8192 --out OUT/ft_marl
    tjap train interference ... --single-agent \
        --init learned/weights/interference_single.json --out OUT/ft_single
    python -m benchmarks.interference_fig10 OUT/ft_marl.json OUT/ft_single.json \
        --figure benchmarks/figures/interference_fig10_finetune.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from benchmarks.common import one_line_errors, parser, pyplot, save_figure
from tjap.core.errors import InvalidInputError


def load_run(path: str) -> dict:
    """The PPO curve and the greedy evaluation of one training run's metadata file."""
    try:
        training = json.loads(Path(path).read_text())["training"]
    except (OSError, ValueError, KeyError) as exc:
        raise InvalidInputError(
            f"{path}: not the metadata of a `tjap train interference` run "
            f"({exc}); give the .json that run wrote"
        ) from None
    ppo = [row for row in training.get("curve", []) if row.get("phase") == "ppo"]
    if not ppo:
        raise InvalidInputError(f"{path}: the run has no PPO curve (train with --ppo-steps > 0)")
    steps = np.array([row["step"] for row in ppo], float)
    evals = [row for row in training.get("curve", []) if row.get("phase") == "eval"]
    kind = "single agent" if training["single_agent"] else "multi-agent (per pod)"
    start = "from clone" if training.get("init") else "from scratch"
    reward = (
        training.get("command", "").split("--reward ")[-1].split()[0]
        if "--reward " in training.get("command", "")
        else "proxy"
    )
    return {
        "label": f"{kind}, {start}, {reward}, {steps[-1] / 1000:.0f}k decisions",
        "steps": steps,
        "cost_per_job": np.array([-row["return"] / max(row["jobs"], 1) for row in ppo]),
        "eval_steps": np.array([row["step"] for row in evals], float),
        "eval_jct": np.array([np.mean(row["avg_jct"]) for row in evals], float),
        "eval_avg_jct": training.get("figures", {}).get("eval_avg_jct"),
        "seconds": training.get("train_seconds"),
        "command": training.get("command"),
    }


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over ``window`` episodes (shorter at the start)."""
    sums = np.cumsum(np.insert(values, 0, 0.0))
    idx = np.arange(1, values.size + 1)
    lo = np.maximum(idx - window, 0)
    return (sums[idx] - sums[lo]) / (idx - lo)


def build_parser() -> argparse.ArgumentParser:
    p = parser("interference_fig10", __doc__)
    p.add_argument("runs", nargs="+", help="metadata .json of training runs")
    p.add_argument("--window", type=int, default=20, help="episodes per smoothing window")
    p.add_argument(
        "--figure",
        default="benchmarks/figures/interference_fig10.png",
        help="the PNG to draw (default benchmarks/figures/interference_fig10.png)",
    )
    return p


@one_line_errors
def main(argv=None) -> int:
    """Plot the runs' curves; print what each run reached."""
    args = build_parser().parse_args(argv)
    runs = [load_run(path) for path in args.runs]
    plt = pyplot()
    curves = any(run["eval_steps"].size for run in runs)
    fig, axes = plt.subplots(1, 2 if curves else 1, figsize=(13 if curves else 7, 4))
    ax = axes[0] if curves else axes
    for run in runs:
        ax.plot(run["steps"], smooth(run["cost_per_job"], args.window), label=run["label"])
        if run["eval_steps"].size:
            axes[1].plot(run["eval_steps"], run["eval_jct"], marker="o", label=run["label"])
            print(
                f"{run['label']}: greedy avg JCT on the held-out seeds (mean) at "
                + ", ".join(
                    f"{int(s)}: {j:.4f}" for s, j in zip(run["eval_steps"], run["eval_jct"])
                )
            )
        first = run["cost_per_job"][: args.window].mean()
        last = run["cost_per_job"][-args.window :].mean()
        print(
            f"{run['label']}: {run['steps'].size} episodes, {int(run['steps'][-1])} decisions, "
            f"cost per job {first:.2f} (first {args.window}) -> {last:.2f} (last {args.window}), "
            f"greedy avg JCT {run['eval_avg_jct']}, {run['seconds']} s"
        )
    ax.set_xlabel("PPO decisions")
    ax.set_ylabel(f"episode cost per job (intervals, mean of {args.window} episodes)")
    ax.set_title(
        "Multi-agent vs single-agent scheduler, k = 8 fat-tree (cf. seed 001 Fig. 10)", fontsize=9
    )
    ax.legend(fontsize=7 if curves else None)
    if curves:
        axes[1].set_xlabel("PPO decisions")
        axes[1].set_ylabel("greedy avg JCT, held-out seeds (intervals)")
        axes[1].set_title("Greedy policy during fine-tuning", fontsize=9)
        axes[1].legend(fontsize=7)
    print(f"figure: {save_figure(fig, args.figure)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
