"""Seed 004, Figs. 8-10: every provisioner on March 2023 of the LS6 A100 trace, 1- and 8-node
pairs, heavy / medium / light load, in one run (the same injection times for every method).

    python -m benchmarks.provision --trace placement/batch/data/ls6-a100.tsv --pairs 20 --workers 2

(``--ray ADDRESS`` runs the tasks on a Ray cluster instead; every node needs the trace at the
same path.)

Injection times: uniform random times of [--from, --to) whose reactive outcome falls in the load
level (heavy > 12 h, medium 2-12 h, light <= 2 h) are kept (``sample_pairs``) until --pairs are
found or --tries-per-pair x pairs times were tried (heavy-load times are rare: 3 % of 1-node
injections). Scheduler setting --scheduler (default: the published Mirage simulator's). Writes
provision_march.csv and the sampled injection times beside it (provision_march.times.json;
``--times`` reads such a file back to skip sampling the cells it holds) to ``--out DIR``
(default benchmarks/out), and the figure to ``--figure`` (default
benchmarks/figures/provision_march.png).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from benchmarks.common import (
    CsvRows,
    TaskFailure,
    add_out,
    executor_from_args,
    format_table,
    one_line_errors,
    parser,
    pyplot,
    save_figure,
    write_csv,
)
from tjap.cli.common import add_executor_arguments

#: Every provisioner; ``NAME@4``: the regressor's threshold for interruption weight e_I / e_O = 4
#: (a performance-sensitive user in the paper's sense, section 4.5; :mod:`tjap.learned.batch.calibrate`).
METHODS = (
    "reactive",
    "avg",
    "rf",
    "xgb",
    "transformer",
    "moe",
    "transformer_dqn",
    "moe_dqn",
    "transformer_pg",
    "moe_pg",
    "transformer@4",
    "moe@4",
)
LOADS = ("heavy", "medium", "light")
#: The paper's A100 figures we can read from its text (Figs. 8-9 are bar charts): heavy-load
#: mean-interruption reduction against reactive.
PAPER = {
    (8, "heavy"): {"rf/xgb (ensembles)": 82.5, "moe_dqn": 77.5, "transformer_pg": 90.1},
    (1, "heavy"): {"average of rf, xgb, transformer, moe, moe_dqn, transformer_pg": 84.7},
}


@lru_cache(maxsize=1)
def _jobs(trace):
    """The trace, read once per process (the parent reads it first, so forked workers share it)."""
    from tjap.placement.batch import load_trace

    return load_trace(trace)[0]


def _sample(trace, nodes, load, start, end, pairs, seed, tries, scheduler):
    from tjap.heuristics.batch.rules import sample_pairs, scheduler_config
    from tjap.placement.batch.chained import Pair

    tick = time.time()
    times = sample_pairs(
        _jobs(trace),
        76,
        Pair(nodes=nodes),
        start,
        end,
        load,
        pairs,
        seed,
        scheduler_config(scheduler),
        max_tries=tries,
    )
    return (nodes, load), times, time.time() - tick


def _evaluate(trace, nodes, load, times, method, seed, scheduler):
    from tjap.heuristics.batch.rules import evaluate, scheduler_config
    from tjap.placement.batch.chained import Pair
    from tjap.registry import make as make_policy

    tick = time.time()
    options = {} if method in ("reactive", "avg") else {"seed": seed}
    result = evaluate(
        _jobs(trace),
        76,
        Pair(nodes=nodes),
        times,
        make_policy("provision", method, **options),
        scheduler_config(scheduler),
    )
    return {
        "nodes": nodes,
        "load": load,
        "method": method,
        "pairs": result.pairs,
        "mean_interruption_h": result.mean_interruption_h,
        "mean_overlap_h": result.mean_overlap_h,
        "zero_interruption_fraction": result.zero_interruption_fraction,
        "seconds": time.time() - tick,
    }


def _cells(text: str | None) -> list[tuple[int, str]]:
    """The (nodes, load) cells to evaluate, from ``--cells`` ("1:heavy,8:heavy"; None: all six)."""
    if not text:
        return [(n, load) for n in (1, 8) for load in LOADS]
    cells = []
    for item in text.split(","):
        nodes, _, load = item.partition(":")
        if nodes not in ("1", "8") or load not in LOADS:
            raise SystemExit(
                f"error: --cells item {item!r} must be NODES:LOAD with NODES 1 or 8 and "
                f"LOAD one of {', '.join(LOADS)}"
            )
        cells.append((int(nodes), load))
    return cells


def _read_times(path, key: dict) -> dict:
    """Cells -> injection times of a ``--times`` file written by an earlier run with the same
    trace, period, scheduler and seed (``key``)."""
    try:
        saved = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SystemExit(f"error: cannot read --times {path}: {exc}") from None
    if not isinstance(saved, dict) or saved.get("key") != key:
        raise SystemExit(
            f"error: --times {path} was sampled with other settings "
            f"({saved.get('key') if isinstance(saved, dict) else saved!r}, "
            f"this run: {key}); drop --times to sample again"
        )
    return {tuple(json.loads(cell)): times for cell, times in saved["cells"].items()}


def build_parser() -> argparse.ArgumentParser:
    p = parser("provision", __doc__)
    p.add_argument("--trace", required=True)
    p.add_argument("--from", dest="start", default="2023-03-01")
    p.add_argument("--to", dest="end", default="2023-04-01")
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--tries-per-pair", type=int, default=40)
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument(
        "--cells",
        default=None,
        metavar="N:LOAD,...",
        help="only these cells, e.g. 1:heavy,8:heavy (default: 1 and 8 nodes x every load)",
    )
    p.add_argument("--scheduler", default="mirage")
    p.add_argument(
        "--times",
        default=None,
        metavar="FILE",
        help="reuse the injection times of an earlier run (its provision_march.times.json)",
    )
    add_executor_arguments(p)
    p.add_argument("--seed", type=int, default=0)
    add_out(
        p, "the rows (provision_march.csv) and the injection times (provision_march.times.json)"
    )
    p.add_argument(
        "--figure",
        default="benchmarks/figures/provision_march.png",
        help="the PNG to draw (default benchmarks/figures/provision_march.png)",
    )
    return p


@one_line_errors
def main(argv=None) -> int:
    """Sample the injection times, run every provisioner; print the table, write CSV and PNG."""
    args = build_parser().parse_args(argv)
    csv_path = Path(args.out) / "provision_march.csv"
    from tjap.placement.batch.replay import check_period, parse_date

    began = time.time()
    jobs = _jobs(args.trace)
    start, end = (
        int(jobs.from_unix(parse_date(d, flag)))
        for d, flag in ((args.start, "--from"), (args.end, "--to"))
    )
    check_period(jobs, start, end)
    cells = _cells(args.cells)
    executor = executor_from_args(args)
    key = {
        "trace": Path(args.trace).name,
        "from": args.start,
        "to": args.end,
        "scheduler": args.scheduler,
        "seed": args.seed,
        "tries_per_pair": args.tries_per_pair,
    }
    saved = _read_times(args.times, key) if args.times else {}
    sampled = {
        cell: saved[cell][: args.pairs]
        for cell in cells
        if cell in saved and len(saved[cell]) >= args.pairs
    }
    for cell in sampled:
        print(f"{cell[0]}-node {cell[1]}: {len(sampled[cell])} injection times from {args.times}")
    for out in executor.map(
        _sample,
        [
            (
                args.trace,
                n,
                load,
                start,
                end,
                args.pairs,
                args.seed + 100 * n,
                args.tries_per_pair * args.pairs,
                args.scheduler,
            )
            for n, load in cells
            if (n, load) not in sampled
        ],
        quiet=True,
    ):
        if isinstance(out, TaskFailure):
            continue
        cell, times, seconds = out
        sampled[cell] = times
        print(
            f"{cell[0]}-node {cell[1]}: {len(times)} injection times ({seconds:.0f} s)", flush=True
        )
    times_path = csv_path.with_suffix(".times.json")
    times_path.parent.mkdir(parents=True, exist_ok=True)
    times_path.write_text(
        json.dumps({"key": key, "cells": {json.dumps(list(c)): t for c, t in sampled.items()}})
    )
    tasks = [
        (args.trace, n, load, sampled[(n, load)], m, args.seed, args.scheduler)
        for n, load in cells
        if (n, load) in sampled
        for m in args.methods
    ]
    rows = []
    with CsvRows(csv_path) as partial:  # rows on disk as they arrive; rewritten whole below
        for row in executor.map(_evaluate, tasks, desc="provisioners"):
            if not isinstance(row, TaskFailure):
                rows.append(row)
                partial.write(row)
    for r in rows:
        reactive = next(
            (
                x
                for x in rows
                if x["nodes"] == r["nodes"] and x["load"] == r["load"] and x["method"] == "reactive"
            ),
            None,
        )
        base = reactive["mean_interruption_h"] if reactive else None
        r["interruption_reduction_pct"] = (
            100 * (1 - r["mean_interruption_h"] / base) if base else None
        )
    write_csv(csv_path, rows)
    print(
        format_table(
            rows,
            [
                ("nodes", "d"),
                ("load", ""),
                ("method", ""),
                ("pairs", "d"),
                ("mean_interruption_h", ".2f"),
                ("mean_overlap_h", ".2f"),
                ("zero_interruption_fraction", ".2f"),
                ("interruption_reduction_pct", ".1f"),
                ("seconds", ".0f"),
            ],
        )
    )
    plot(rows, args.methods, Path(args.figure))
    print(f"files: {csv_path}, {times_path}, {args.figure}; {time.time() - began:.0f} s in all")
    return 0


def plot(rows, methods, path):
    plt = pyplot()
    fig, axes = plt.subplots(2, 3, figsize=(14, 7))
    for i, nodes in enumerate((1, 8)):
        for j, load in enumerate(LOADS):
            ax = axes[i, j]
            cell = {r["method"]: r for r in rows if r["nodes"] == nodes and r["load"] == load}
            x = np.arange(len(methods))
            ax.bar(
                x - 0.2,
                [cell[m]["mean_interruption_h"] if m in cell else 0 for m in methods],
                0.4,
                label="interruption",
            )
            ax.bar(
                x + 0.2,
                [cell[m]["mean_overlap_h"] if m in cell else 0 for m in methods],
                0.4,
                label="overlap",
            )
            ax.set_xticks(x, methods, rotation=60, ha="right", fontsize=7)
            pairs = next(iter(cell.values()))["pairs"] if cell else 0
            ax.set_title(f"{nodes}-node pairs, {load} load ({pairs} pairs)", fontsize=9)
            ax.set_ylabel("hours")
    axes[0, 0].legend()
    fig.suptitle(
        "Mean interruption and overlap, March 2023, LS6 A100 trace (cf. seed 004 Figs. 8-10)"
    )
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
