"""Every window method under a time limit: wall time, status and cost against the constructive
rules its model admits, on two hard windows:

- ``spread``: 90 small jobs (2-12 nodes) on 1,000 idle nodes of the paper's fat-tree;
- ``fragmented``: 950 idle nodes scattered at random over the 1,000, and jobs of 2-12 nodes
  asking for 890 of them (133 jobs), where the free-form model alone takes seconds to build.

    python -m benchmarks.time_limits                   # both windows, limits 1 s and 5 s
    python -m benchmarks.time_limits --limit 0.5 --windows spread
    python -m benchmarks.time_limits --cli             # `tjap solve --json` per method

In-process, each method is first warmed up as ``tjap solve`` does before its windows (a solve
with a 1 ms limit: imports, compiled kernels, weights), then timed; ``wall_s`` is the solve
call's wall time and ``within`` says whether it kept ``limit + 0.5 s``. ``vs_rules_pct`` is the
cost above the cheapest rule the method's model admits (:func:`tjap.api.no_worse_than_rules`:
Seq always, slurm-tree and freeform-greedy where their placement is allowed); it must never be
positive. With ``--cli`` each method is one ``tjap solve FILE --json --time-limit S`` process,
its JSON parsed strictly (no NaN or Infinity); ``wall_s`` is then the whole process, start-up
included, and ``within`` judges ``runtime_s``, the solve's own clock. Timings of one process on a
shared machine: run it on a quiet one.
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

from benchmarks.common import one_line_errors, parser
from tjap.api import no_worse_than_rules, solve
from tjap.core.report import format_table
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.window import Window
from tjap.registry import entries, get


def acceptance_window(jobs: int = 90, idle: int = 1000, seed: int = 0) -> Window:
    """``jobs`` jobs of 2-12 nodes on ``idle`` idle nodes of the paper's fat-tree (1000 nodes)."""
    rng = np.random.default_rng(seed)
    return Window(FatTree.from_layout("paper"), range(idle), rng.integers(2, 13, jobs).tolist())


def fragmented_window(
    idle: int = 950, requested: int = 890, seed: int = 0, largest: int = 12
) -> Window:
    """``idle`` nodes drawn at random from the paper's fat-tree, and jobs of 2 to ``largest``
    nodes (the last one smaller) asking for ``requested`` of them."""
    rng = np.random.default_rng(seed)
    tree = FatTree.from_layout("paper")
    idle_nodes = np.sort(rng.choice(tree.num_nodes, idle, replace=False))
    sizes, left = [], requested
    while left > 0:
        sizes.append(int(min(left, rng.integers(2, largest + 1))))
        left -= sizes[-1]
    return Window(tree, idle_nodes, sizes)


WINDOWS = {"spread": acceptance_window, "fragmented": fragmented_window}


def methods() -> list[str]:
    """The installed methods that take a fat-tree (not Slurm's block rule, for block clusters)."""
    return [m.name for m in entries("tree") if m.is_available() and not m.blocks]


def rule_costs(window: Window) -> dict:
    """Each model's cheapest admitted rule: {"scas"|"dcas"|"free"|"": cost}."""
    seq = solve(window, "seq")
    return {
        model: no_worse_than_rules(seq, model).objective for model in ("scas", "dcas", "free", "")
    }


def _row(name, method, limit, wall, status, objective, rules, runtime, info) -> dict:
    floor = rules[get("tree", method).model]
    return {
        "window": name,
        "method": method,
        "limit_s": limit,
        "wall_s": wall,
        "runtime_s": runtime,
        "within": wall <= limit + 0.5,
        "status": status,
        "vs_rules_pct": None if objective is None else 100.0 * (objective / floor - 1.0),
        "fallback": info.get("fallback") or (info.get("auto") or {}).get("chose") or "",
    }


def run_in_process(name: str, window: Window, limit: float, names) -> list[dict]:
    rules = rule_costs(window)
    rows = []
    for method in names:
        solve(window, method, time_limit_s=1e-3)  # start-up, as tjap solve does
        started = time.perf_counter()
        r = solve(window, method, time_limit_s=limit)
        wall = time.perf_counter() - started
        assert r.is_feasible(), method
        rows.append(
            _row(name, method, limit, wall, r.status.value, r.objective, rules, r.runtime_s, r.info)
        )
        print(format_table(rows[-1:], COLUMNS).splitlines()[-1], file=sys.stderr, flush=True)
    return rows


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def run_cli(name: str, window: Window, limit: float, names) -> list[dict]:
    rules = rule_costs(window)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "window.json"
        path.write_text(window.to_json())
        for method in names:
            command = [
                sys.executable,
                "-c",
                "import sys; from tjap.cli import main; sys.exit(main())",
                "solve",
                str(path),
                "--method",
                method,
                "--json",
                "--time-limit",
                str(limit),
            ]
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True)
            wall = time.perf_counter() - started
            out = _strict(done.stdout)
            rows.append(
                _row(
                    name,
                    method,
                    limit,
                    wall,
                    out["status"],
                    out["objective"],
                    rules,
                    out["runtime_s"],
                    out["info"],
                )
            )
            rows[-1]["within"] = out["runtime_s"] <= limit + 0.5
    return rows


COLUMNS = [
    ("window", ""),
    ("method", ""),
    ("limit_s", ".2f"),
    ("wall_s", ".3f"),
    ("runtime_s", ".3f"),
    ("within", ""),
    ("status", ""),
    ("vs_rules_pct", ".2f"),
    ("fallback", ""),
]


def build_parser() -> argparse.ArgumentParser:
    p = parser("time_limits", __doc__)
    p.add_argument(
        "--limit",
        type=float,
        nargs="+",
        default=[1.0, 5.0],
        help="time limits in seconds (default 1 and 5)",
    )
    p.add_argument(
        "--windows",
        nargs="+",
        choices=sorted(WINDOWS),
        default=["spread", "fragmented"],
        help="which windows (default both)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed the windows are drawn with (default 0)"
    )
    p.add_argument(
        "--methods",
        nargs="*",
        default=None,
        help="window methods to time (default every installed one)",
    )
    p.add_argument("--cli", action="store_true", help="one tjap solve process per method")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Time every method on the windows; print the table."""
    args = build_parser().parse_args(argv)
    names = args.methods or methods()
    rows = []
    for name in args.windows:
        window = WINDOWS[name](seed=args.seed)
        print(
            f"{name}: {window.num_jobs} jobs ({sum(window.job_sizes)} nodes) on "
            f"{window.num_idle} idle nodes",
            file=sys.stderr,
        )
        for limit in args.limit:
            rows += (run_cli if args.cli else run_in_process)(name, window, limit, names)
    print(
        f"limits {', '.join(f'{x:g}' for x in args.limit)} s "
        f"({'one tjap solve process each' if args.cli else 'in process, warmed up'})"
    )
    print(format_table(rows, COLUMNS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
