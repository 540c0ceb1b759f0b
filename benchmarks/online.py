"""Seed 002's Fig. 6: window-based scheduling for tau in 10..60 s against per-job FCFS and EASY
backfilling, topology-blind (first-fit) and topology-aware (contiguous, free-form) placement.

    python -m benchmarks.online --seed 0 [--epochs 10] [--method dp] [--workload FILE]

Writes ``online_<layout>_s<seed>.csv`` (one row per configuration), ``..._epochs.csv`` (one row
per configuration and epoch, as they finish) and ``.png`` to ``--out DIR`` (default
benchmarks/out), and prints the table.

Each epoch replays ``jobs_per_epoch`` consecutive jobs of the workload from a random index on an
empty cluster; figures are means over epochs (over the epochs that ran, ``epochs``, when a task
failed); the epochs' own rows can go to a CSV as they finish (``epochs_csv``). The workload is
the paper's generator's (100,000 jobs drawn with the seed) or any
:class:`~tjap.placement.tree.workload.Workload`, such as a job list read by
:meth:`~tjap.placement.tree.workload.Workload.from_file` (used as read: nothing rescaled). Every
(configuration, epoch) pair is one task of the executor, carrying its epoch's jobs. The per-job
policies run on the batch-queue simulator (:func:`tjap.placement.tree.online.per_job_config`).
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, one_line_errors, parser
from tjap.api import solve
from tjap.cli.common import (
    add_common,
    add_executor_arguments,
    check_output,
    executor_from_args,
    positive,
    print_json,
)
from tjap.cli.tree import add_workload_options, method_options, read_workload, workload_fields
from tjap.core.errors import InvalidInputError
from tjap.core.executor import make_executor, sweep_rows
from tjap.core.report import format_table, pyplot, save_figure, write_csv
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.online import replay
from tjap.placement.tree.window import Window
from tjap.placement.tree.workload import Workload

TAUS = (10, 20, 30, 40, 50, 60)
PER_JOB = (
    ("fcfs", "firstfit"),
    ("easy", "firstfit"),
    ("fcfs", "contiguous"),
    ("easy", "contiguous"),
    ("fcfs", "freeform"),
    ("easy", "freeform"),
)


NUM_JOBS = 100_000


def replay_epoch(
    layout, policy, placement, tau, cap, method, convention, seed, jobs, options=None
) -> dict:
    """One epoch of one configuration (a task of the sweep): the schedule's metrics. ``jobs`` is
    the epoch's (arrival_s, runtime_s, requested_nodes) lists; ``options`` go to the window
    solver (e.g. ``weights`` for nsa)."""
    workload = Workload(*(np.asarray(column, dtype=np.int64) for column in jobs))
    sched = replay(
        FatTree.from_layout(layout),
        workload,
        policy=policy,
        placement=placement if placement != "-" else "firstfit",
        tau_s=tau or 60,
        cap=cap,
        method=partial(solve, method=method, **(options or {})),
        convention=convention,
        seed=seed,
    )
    return sched.metrics()


def config_label(policy, tau) -> str:
    """A configuration's name in the tables: the per-job policy, or ``window tau=Ns``."""
    return policy if tau is None else f"window tau={tau}s"


def epoch_row(epoch, layout, policy, placement, tau, *task) -> dict:
    """:func:`replay_epoch` as a row of the per-epoch CSV: configuration, epoch, metrics."""
    return {
        "policy": config_label(policy, tau),
        "placement": placement,
        "epoch": epoch,
        **replay_epoch(layout, policy, placement, tau, *task),
    }


def run(
    layout="paper",
    epochs=10,
    jobs_per_epoch=300,
    seed=0,
    method="dp",
    convention="paper",
    cap=5,
    quiet=False,
    executor=None,
    workload: Workload | None = None,
    options: dict | None = None,
    epochs_csv=None,
) -> list[dict]:
    """One row per configuration, means over epochs; the (configuration, epoch) tasks run on
    ``executor`` (default: serial). ``workload`` None is the paper's generator (``NUM_JOBS``
    jobs drawn with ``seed``); ``options`` go to the window solver ``method``. With
    ``epochs_csv`` each (configuration, epoch) row is written there as it finishes
    (NAME.partial.csv until the sweep completes; an interrupted sweep keeps what ran)."""
    executor = executor or make_executor(1)
    if workload is None:
        workload = Workload.generate(NUM_JOBS, seed)
    if workload.num_jobs < jobs_per_epoch:
        raise InvalidInputError(
            f"the workload has {workload.num_jobs} jobs, fewer than the "
            f"{jobs_per_epoch} jobs per epoch asked; ask for fewer"
        )
    if options:  # a bad option or weights file fails here, in one line, before the sweep
        probe = Window(FatTree.from_layout(layout), np.arange(2), [2])
        solve(probe, method, time_limit_s=1e-3, seed=seed, convention=convention, **options)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    starts = rng.integers(0, max(1, workload.num_jobs - jobs_per_epoch), epochs)
    columns = (workload.arrival_s, workload.runtime_s, workload.requested_nodes)
    epoch_jobs = [
        tuple(c[int(s) : int(s) + jobs_per_epoch].tolist() for c in columns) for s in starts
    ]
    configs = [("window", "-", tau) for tau in TAUS] + [(p, pl, None) for p, pl in PER_JOB]
    tasks = [
        (epoch, layout, policy, placement, tau, cap, method, convention, seed, jobs, options)
        for policy, placement, tau in configs
        for epoch, jobs in enumerate(epoch_jobs)
    ]
    done = sweep_rows(executor, epoch_row, tasks, desc="online", quiet=quiet, csv_path=epochs_csv)
    rows = []
    for policy, placement, tau in configs:
        label = config_label(policy, tau)
        per_epoch = [m for m in done if m["policy"] == label and m["placement"] == placement]
        row = {"policy": label, "placement": placement, "epochs": len(per_epoch)}
        if per_epoch:
            for key in (
                "mean_cost_paper",
                "mean_cost_published",
                "mean_wait_s",
                "p95_wait_s",
                "utilization",
                "makespan_s",
            ):
                row[key] = float(np.mean([m[key] for m in per_epoch]))
        rows.append(row)
    return rows


COLUMNS = [
    ("policy", ""),
    ("placement", ""),
    ("mean_cost_paper", ".1f"),
    ("mean_cost_published", ".1f"),
    ("mean_wait_s", ".1f"),
    ("p95_wait_s", ".1f"),
    ("utilization", ".3f"),
    ("makespan_s", ".0f"),
]


def plot(rows, path, convention="paper"):
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    window = [r for r in rows if r["policy"].startswith("window")]
    taus = [int(r["policy"].split("=")[1].rstrip("s")) for r in window]
    key = f"mean_cost_{convention}"
    ax1.plot(taus, [r[key] for r in window], "o-", label="window (dp)")
    ax2.plot(taus, [r["mean_wait_s"] for r in window], "o-", label="window (dp)")
    per_job = [r for r in rows if not r["policy"].startswith("window")]
    for k, r in enumerate(per_job):
        label = f"{r['policy'].upper()} {r['placement']}"
        style = {"ls": "--" if r["policy"] == "fcfs" else ":", "lw": 1.5, "color": f"C{k // 2 + 1}"}
        ax1.axhline(r[key], label=label, **style)
        ax2.axhline(r["mean_wait_s"], label=label, **style)
    ax1.set_xlabel("tau (s)")
    ax1.set_ylabel(f"mean CH cost per multi-node job ({convention})")
    ax2.set_xlabel("tau (s)")
    ax2.set_ylabel("mean wait (s)")
    ax2.legend(fontsize=7)
    fig.suptitle("Window-based scheduling against per-job FCFS / EASY (seed 002, Fig. 6)")
    return save_figure(fig, path)


def table(rows) -> str:
    return format_table(rows, COLUMNS)


# -- the command line: python -m benchmarks.online ----------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = parser("online", __doc__)
    p.add_argument(
        "--layout",
        choices=("paper", "published"),
        default="paper",
        help="paper (default): k=20, 10 pods of 100; published: the authors' 25 pods of 40",
    )
    p.add_argument(
        "--convention",
        choices=("paper", "published"),
        default="paper",
        help="cost convention (default paper)",
    )
    p.add_argument(
        "--epochs",
        type=positive(int),
        default=10,
        help="replays per configuration, each of --jobs-per-epoch consecutive "
        "jobs from a random start (the same for every configuration); the table "
        "shows their means (default 10)",
    )
    p.add_argument(
        "--jobs-per-epoch",
        type=positive(int),
        default=300,
        metavar="N",
        help="jobs replayed per epoch (default 300)",
    )
    p.add_argument(
        "--method", default="dp", help="window solver, any tjap.solve method (default dp)"
    )
    p.add_argument(
        "--weights",
        default=None,
        metavar="JSON",
        help="--method nsa: the trained policy's metadata (default: the shipped "
        "learned/weights/nsa_cnn3_best_<convention>.json, run in the best loop)",
    )
    add_workload_options(p)
    add_out(p, "CSV and PNG")
    add_common(p)
    add_executor_arguments(p)
    return p


@one_line_errors
def main(argv=None) -> int:
    """Run the replays; print the table (or, with ``--json``, the rows and files)."""
    args = build_parser().parse_args(argv)
    check_output(args.out, "--out", folder=True)  # before the work: a bad folder fails now
    options = method_options(args)  # a flag the method does not take fails here
    workload, report = read_workload(args, FatTree.from_layout(args.layout).num_nodes)
    # a file workload's results are named after it, beside (never over) the generator's
    tag = f"_{Path(args.workload).stem}" if report is not None else ""
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"online_{args.layout}{tag}_s{args.seed}"
    epochs_csv = out_dir / f"{stem}_epochs.csv"
    rows = run(
        args.layout,
        args.epochs,
        args.jobs_per_epoch,
        args.seed,
        args.method,
        args.convention,
        quiet=args.quiet,
        executor=executor_from_args(args),
        workload=workload,
        options=options,
        epochs_csv=epochs_csv,
    )
    png = plot(rows, out_dir / f"{stem}.png", args.convention)
    summary = {
        "rows": rows,
        "csv": str(write_csv(out_dir / f"{stem}.csv", rows)),
        "png": str(png),
        "epochs_csv": str(epochs_csv),
    } | workload_fields(args, report)
    if args.json:
        print_json(summary)
    else:
        where = report.summary() if report is not None else "the paper's generator"
        print(f"workload: {where}\n{table(rows)}\nfiles: {summary['csv']}, {epochs_csv}, {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
