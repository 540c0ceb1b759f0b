"""Speed-up of the sweep executor: one sweep run serially, on a local process pool and
through a local Ray, in one run; the CSV rows must be byte-identical apart from timing columns.

    python -m benchmarks.executor_speedup [--workers 2] [--seeds 10] [--no-ray] [--out DIR]

The sweep is the seed-003 network evaluation of ``benchmarks.network``: the nine 64-server
topologies x the four heuristics (36 tasks), ``--seeds`` episodes of ``--requests`` requests
each (about a second per task). The Numba kernels are loaded and Ray is started (one trivial
task) before the clock runs, so the times are the sweep's own; the pool's time includes forking
its workers, Ray's includes its workers loading the Numba cache. Ratios are serial time /
back-end time; ``in_flight`` is the tasks' summed wall time over the sweep's (how many ran at
once, on average: near the worker count when the back end keeps them busy, whatever else loads
the machine). Timings taken while other work shares the cores are meaningless: check ``uptime``
first. Exit code 1 when the rows differ.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import time
from pathlib import Path

from benchmarks.common import add_out, format_table, make_executor, one_line_errors, parser
from benchmarks.network import HEURISTICS, sweep
from tjap.placement.network import NAMES

TIMING_COLUMNS = ("wall_s", "runtime_s", "mean_runtime_s")


def rows_without_timing(path: Path) -> str:
    """The CSV's text with the timing columns left out (the header included)."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    keep = [k for k in rows[0] if k not in TIMING_COLUMNS] if rows else []
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=keep, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def _nothing() -> int:
    return os.getpid()


def build_parser() -> argparse.ArgumentParser:
    p = parser("executor_speedup", __doc__)
    p.add_argument(
        "--workers",
        type=int,
        default=2,
        help="processes of the pool and of the local Ray (default 2)",
    )
    p.add_argument("--seeds", type=int, default=10, help="episodes per task (default 10)")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the first episode's seed (default 0; the others follow it)",
    )
    p.add_argument("--requests", type=int, default=512, help="requests per episode (default 512)")
    p.add_argument("--no-ray", action="store_true", help="skip the Ray run")
    add_out(p, "the CSV of each back end")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Run the sweep on each back end; exit 1 when their rows differ."""
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    backends = [("serial", make_executor(1)), (f"pool{args.workers}", make_executor(args.workers))]
    if not args.no_ray:
        ray = make_executor(args.workers, ray="local")
        ray.results(_nothing, [()] * args.workers, quiet=True)  # start Ray off the clock
        backends.append((f"ray{args.workers}", ray))
    sweep(64, args.requests, 1, HEURISTICS, names=NAMES[:1], quiet=True)  # load the kernels
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows = []
    for name, executor in backends:
        path = out / f"executor_speedup_{name}.csv"
        tick = time.perf_counter()
        done = sweep(
            64,
            args.requests,
            args.seeds,
            HEURISTICS,
            seed_base=args.seed,
            quiet=True,
            executor=executor,
            csv_path=path,
        )
        wall_s = time.perf_counter() - tick
        rows.append(
            {
                "backend": name,
                "workers": executor.workers,
                "tasks": len(done),
                "wall_s": wall_s,
                "in_flight": sum(r["wall_s"] for r in done) / wall_s,
                "csv": str(path),
            }
        )
    reference = rows_without_timing(Path(rows[0]["csv"]))
    for row in rows:
        row["serial_over_this"] = rows[0]["wall_s"] / row["wall_s"]
        row["rows_identical"] = rows_without_timing(Path(row["csv"])) == reference
    print(
        f"{len(NAMES)} topologies x {len(HEURISTICS)} heuristics = {rows[0]['tasks']} tasks, "
        f"{args.seeds} seeds x {args.requests} requests each; {os.cpu_count()} CPUs, "
        f"1-min load average before: {load}"
    )
    print(
        format_table(
            rows,
            [
                ("backend", ""),
                ("workers", "d"),
                ("tasks", "d"),
                ("wall_s", ".2f"),
                ("in_flight", ".2f"),
                ("serial_over_this", ".2f"),
                ("rows_identical", ""),
                ("csv", ""),
            ],
        )
    )
    if not args.no_ray:
        import ray as ray_module

        ray_module.shutdown()
    return 0 if all(r["rows_identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
