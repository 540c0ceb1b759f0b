"""The defaults of ``tjap.solve(w, "sa")`` and ``"lns"`` against the SCAS optimum.

    python -m benchmarks.sa_defaults --num-windows 200 --seed 0

On the windows of the exact-solver table (``tjap bench exact --num-windows 200 --seed 0 --layout
paper|published``: the paper's stream capped at 5 jobs, Eq. (1) cost), each configuration runs
with seed 0 and is compared with ``dp``, window by window: mean and worst relative gap (%), share
of windows at (or below) the optimum, mean time per window. The configurations:

- ``sa``: the default (``preset="best"``, Table III's "SA-1000 best"), the paper's Table I
  (``preset="paper"``, 500 iterations, the old default), the same at 1000 iterations, and the
  published code's loop (``preset="published"``; its cost convention is not used here);
- ``lns``: the default (Table III's "LNS-500"), and with the best SA's destroy (n^D = 5).

Prints a table and writes ``<out>/sa_defaults_s<seed>.csv`` (one row per layout and
configuration) and ``<out>/sa_defaults_windows_s<seed>.csv`` (every window's objectives).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, format_table, one_line_errors, parser, progress, write_csv
from tjap import solve
from tjap.placement.tree.stream import generate_windows

LAYOUTS = ("paper", "published")

#: name -> (method, options); every other option is the method's default.
CONFIGS = {
    "sa (default)": ("sa", {}),
    "sa preset=paper": ("sa", {"preset": "paper"}),
    "sa preset=paper, 1000 it.": ("sa", {"preset": "paper", "iterations": 1000}),
    "sa preset=published": ("sa", {"preset": "published"}),
    "lns (default)": ("lns", {}),
    "lns max_remove=5": ("lns", {"max_remove": 5}),
}

TOL = 1e-9


def run(num_windows=200, seed=0, layouts=LAYOUTS, configs=CONFIGS, quiet=False) -> dict:
    """Every configuration on the exact table's windows of each layout: ``{"summary", "windows"}``
    (summary rows per layout and configuration, one row of objectives per window)."""
    summary, per_window = [], []
    for layout in layouts:
        windows = generate_windows(layout, num_windows, seed, cap=5, convention="paper")
        for method, options in configs.values():  # compile (or load) the kernels first
            solve(windows[0], method, seed=seed, **{**options, "iterations": 1})
        objectives = {name: [] for name in configs}
        times = {name: [] for name in configs}
        optima = []
        for w in progress(windows, desc=f"sa defaults/{layout}", quiet=quiet):
            optimum = solve(w, "dp", seed=seed).objective
            optima.append(optimum)
            row = {
                "layout": layout,
                "epoch": w.meta["epoch"],
                "window": w.meta["index"],
                "jobs": w.num_jobs,
                "idle_nodes": w.num_idle,
                "dp": optimum,
            }
            for name, (method, options) in configs.items():
                r = solve(w, method, seed=seed, **options)
                objectives[name].append(r.objective)
                times[name].append(r.runtime_s)
                row[name] = r.objective
            per_window.append(row)
        opt = np.array(optima)
        for name, (method, options) in configs.items():
            gap = 100 * (np.array(objectives[name]) - opt) / opt
            summary.append(
                {
                    "layout": layout,
                    "config": name,
                    "method": method,
                    "options": ", ".join(f"{k}={v!r}" for k, v in options.items()) or "-",
                    "windows": len(opt),
                    "mean_gap_pct": float(gap.mean()),
                    "max_gap_pct": float(gap.max()),
                    "at_or_below_optimum_pct": 100 * float(np.mean(gap <= TOL)),
                    "mean_ms": 1000 * float(np.mean(times[name])),
                }
            )
    return {"summary": summary, "windows": per_window}


def build_parser() -> argparse.ArgumentParser:
    p = parser("sa_defaults", __doc__)
    p.add_argument("--num-windows", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    add_out(p, "the CSV files")
    p.add_argument("--quiet", action="store_true")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Run every configuration on both layouts; print the table and write the CSV files."""
    args = build_parser().parse_args(argv)
    res = run(args.num_windows, args.seed, quiet=args.quiet)
    print(
        format_table(
            res["summary"],
            [
                ("layout", ""),
                ("config", ""),
                ("windows", "d"),
                ("mean_gap_pct", "+.3f"),
                ("max_gap_pct", "+.3f"),
                ("at_or_below_optimum_pct", ".1f"),
                ("mean_ms", ".2f"),
            ],
        )
    )
    out = Path(args.out)
    print(
        f"\nwrote {write_csv(out / f'sa_defaults_s{args.seed}.csv', res['summary'])} and "
        f"{write_csv(out / f'sa_defaults_windows_s{args.seed}.csv', res['windows'])}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
