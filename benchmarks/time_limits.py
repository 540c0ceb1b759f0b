"""Every window method under a time limit: wall time, status and cost against Seq (issue 20's
acceptance: a window of 90 small jobs on 1,000 idle nodes, ``--time-limit 1``, every method
within 10 % + 0.5 s with a feasible solution never worse than Seq's).

    python -m benchmarks.time_limits                   # in this process, 1 s
    python -m benchmarks.time_limits --limit 0.5 --jobs 120
    python -m benchmarks.time_limits --cli             # `tjap solve --json` per method

In-process, each method is first warmed up as ``tjap solve`` does before its windows (a solve
with a 1 ms limit: imports, compiled kernels, weights), then timed; ``wall_s`` is the solve
call's wall time. With ``--cli`` each method is one ``tjap solve FILE --json --time-limit S``
process, its JSON parsed strictly (no NaN or Infinity); ``wall_s`` is then the whole process,
start-up included, and ``runtime_s`` the solve's own clock. Timings of one process on a shared
machine: run it on a quiet one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from placement.tree.fat_tree import FatTree
from placement.tree.window import Window
from tjap.api import solve
from tjap.registry import entries
from tjap.report import format_table


def acceptance_window(jobs: int = 90, idle: int = 1000, seed: int = 0) -> Window:
    """``jobs`` jobs of 2-12 nodes on ``idle`` idle nodes of the paper's fat-tree (1000 nodes)."""
    rng = np.random.default_rng(seed)
    return Window(FatTree.from_layout("paper"), range(idle), rng.integers(2, 13, jobs).tolist())


def methods() -> list[str]:
    return [m.name for m in entries("tree") if m.is_available()]


def _row(method, limit, wall, status, objective, seq, runtime, info) -> dict:
    return {"method": method, "limit_s": limit, "wall_s": wall, "runtime_s": runtime,
            "within": wall <= 1.1 * limit + 0.5, "status": status,
            "vs_seq_pct": None if objective is None else 100.0 * (objective / seq - 1.0),
            "fallback": info.get("fallback") or (info.get("auto") or {}).get("chose") or ""}


def run_in_process(window: Window, limit: float, names) -> list[dict]:
    seq = solve(window, "seq").objective
    rows = []
    for method in names:
        solve(window, method, time_limit_s=1e-3)          # start-up, as tjap solve does
        started = time.perf_counter()
        r = solve(window, method, time_limit_s=limit)
        wall = time.perf_counter() - started
        assert r.is_feasible(), method
        rows.append(_row(method, limit, wall, r.status.value, r.objective, seq, r.runtime_s,
                         r.info))
    return rows


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def run_cli(window: Window, limit: float, names) -> list[dict]:
    seq = solve(window, "seq").objective
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "window.json"
        path.write_text(window.to_json())
        for method in names:
            command = [sys.executable, "-c", "import sys; from tjap.cli import main; "
                       "sys.exit(main())", "solve", str(path), "--method", method, "--json",
                       "--time-limit", str(limit)]
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True)
            wall = time.perf_counter() - started
            out = _strict(done.stdout)
            rows.append(_row(method, limit, wall, out["status"], out["objective"], seq,
                             out["runtime_s"], out["info"]))
            rows[-1]["within"] = out["runtime_s"] <= 1.1 * limit + 0.5
    return rows


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=1.0, help="time limit in seconds")
    parser.add_argument("--jobs", type=int, default=90)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--methods", nargs="*", default=None)
    parser.add_argument("--cli", action="store_true", help="one tjap solve process per method")
    args = parser.parse_args(argv)
    window = acceptance_window(args.jobs, args.idle)
    names = args.methods or methods()
    rows = (run_cli if args.cli else run_in_process)(window, args.limit, names)
    print(f"{window.num_jobs} jobs ({sum(window.job_sizes)} nodes) on {window.num_idle} idle "
          f"nodes, limit {args.limit} s ({'one tjap solve process each' if args.cli else 'in process, warmed up'})")
    print(format_table(rows, [("method", ""), ("limit_s", ".2f"), ("wall_s", ".3f"),
                              ("runtime_s", ".3f"), ("within", ""), ("status", ""),
                              ("vs_seq_pct", ".2f"), ("fallback", "")]))
    return rows


if __name__ == "__main__":
    main()
