"""Loading a large SWF trace against simulating it.

RICC (447,794 jobs) is not shipped, so a trace of its size is made from the bundled Lublin model
workload: its 10,000 jobs repeated ``--copies`` times (45: 450,000 lines, about 31 MB), each copy
after the one before (job ids and submit times shifted by the copy's span; field 17, the
preceding job, is -1 throughout). Then, in one process:

- ``load_s``: :func:`tjap.placement.batch.traces.load_trace` on the file, first call (Numba's
  compiled byte scanner loaded from its cache) and second call;
- ``simulate_s``: :class:`tjap.placement.batch.Simulator` on the loaded jobs, on the header's 256
  nodes, EASY with the Slurm-like defaults (``tjap simulate``'s default), its kernel time.

The issue's target: loading costs no more than the simulation.

    python -m benchmarks.trace_loading
    python -m benchmarks.trace_loading --copies 10 --backfill conservative
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import one_line_errors, parser
from tjap.core.report import format_table
from tjap.placement.batch import SchedulerConfig, Simulator
from tjap.placement.batch.traces import bundled_trace, load_trace


def tiled_swf(path: Path, copies: int) -> int:
    """Write the Lublin workload ``copies`` times over to ``path``; returns the job lines."""
    header, rows = [], []
    for line in bundled_trace("lublin_256").read_text().splitlines():
        if line.startswith(";"):
            header.append(line)
        elif line.strip():
            rows.append([int(v) for v in line.split()])
    span = max(r[1] for r in rows) + 1
    count = len(rows)
    with open(path, "w") as out:
        out.write("\n".join(h for h in header if "MaxJobs" not in h and "MaxRecords" not in h))
        out.write(f"\n; MaxJobs: {count * copies}\n; MaxRecords: {count * copies}\n")
        for c in range(copies):
            for r in rows:
                fields = [r[0] + c * count, r[1] + c * span, *r[2:]]
                out.write(" ".join(map(str, fields)) + "\n")
    return count * copies


def measure(copies: int = 45, backfill: str = "easy") -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"lublin_x{copies}.swf"
        lines = tiled_swf(path, copies)
        size_mb = path.stat().st_size / 1e6
        loads = []
        for _ in range(2):
            tick = time.perf_counter()
            jobs, report = load_trace(path)
            loads.append(time.perf_counter() - tick)
    sim = Simulator(jobs, 256, SchedulerConfig(backfill=backfill))
    tick = time.perf_counter()
    sim.run()
    simulate_s = time.perf_counter() - tick
    return {
        "lines": lines,
        "size_mb": size_mb,
        "jobs": len(jobs),
        "backfill": backfill,
        "load_first_s": loads[0],
        "load_second_s": loads[1],
        "simulate_s": simulate_s,
        "simulate_over_load": simulate_s / loads[0],
    }


def build_parser() -> argparse.ArgumentParser:
    p = parser("trace_loading", __doc__)
    p.add_argument("--copies", type=int, default=45, help="copies of the Lublin trace (default 45)")
    p.add_argument("--backfill", default="easy", help="the simulation's backfill (default easy)")
    p.add_argument("--json", action="store_true", help="print the row as JSON")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Write the tiled trace to a temporary file, load and simulate it; print the timings."""
    args = build_parser().parse_args(argv)
    row = measure(args.copies, args.backfill)
    if args.json:
        print(json.dumps(row))
    else:
        print(
            format_table(
                [row],
                [
                    ("lines", "d"),
                    ("size_mb", ".1f"),
                    ("jobs", "d"),
                    ("backfill", ""),
                    ("load_first_s", ".2f"),
                    ("load_second_s", ".2f"),
                    ("simulate_s", ".2f"),
                    ("simulate_over_load", ".1f"),
                ],
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
