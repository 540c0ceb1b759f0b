"""The default NSA-500 against the default SA given the same time, on both layouts.

    python -m benchmarks.nsa_default --epochs 2 --windows-per-epoch 50 --seed 2026

Windows: each setting of :data:`benchmarks.sa_tables.SETTINGS` (its layout with its own cost
convention, capped at 5 jobs, ``epochs`` epochs of ``windows_per_epoch`` windows from an empty
cluster), from a window stream seed the shipped weights never saw: they were trained on stream
seed 1001, and the look-ahead was chosen on the first 100 windows of seed 0. On each window:

- each NSA configuration of :data:`CONFIGS`, 500 iterations, solver seed 0: ``tjap.solve(w,
  "nsa", iterations=500)`` with nothing else (the default: preset "best", the shipped weights
  trained for the window's convention, look-ahead 32), and the paper's settings
  (``preset="paper"``, the default before; the shipped published-setting CNN-3, no look-ahead);
- the default SA (``tjap.solve(w, "sa")``, no options) given as many iterations as fit in that
  NSA run's time on the window (:func:`benchmarks.sa_tables.sa_for_time`: a pilot and a
  calibration run measure SA's time per iteration and fixed time there, then the run; the CPU
  clock of the solving thread by default, which on a shared machine is what a dedicated core's
  wall clock would read);
- the SCAS optimum (dp), for the gaps.

Per layout and configuration: ``nsa_over_sa_pct``, the mean over windows of NSA's cost over
SA's in %; ``nsa_gain_pct``, the mean of (SA - NSA) / SA in % with its normal 95 % interval
(:func:`benchmarks.sa_tables.gain_interval`, as in ``python -m benchmarks.sa_tables nsa``); the
shares of windows where NSA is better / worse; NSA's mean CPU ms; SA's mean iterations; SA's time
over NSA's on both clocks (ratios of the means, about 1 when the budget was met); both gaps to
the optimum.
Prints the table and writes ``<out>/nsa_default_s<seed>.csv`` (every window) and
``<out>/nsa_default_summary_s<seed>.csv``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, format_table, one_line_errors, parser, progress, write_csv
from benchmarks.sa_tables import SETTINGS, _windows, gain_interval, sa_for_time, timed_solve
from tjap import solve

#: name -> NSA options besides ``iterations=500``.
CONFIGS = {
    "nsa (default)": {},
    "nsa preset=paper": {"preset": "paper"},
}
ITERATIONS = 500


def run(
    epochs=2,
    windows_per_epoch=50,
    seed=2026,
    settings=tuple(SETTINGS),
    configs=CONFIGS,
    clock="cpu",
    solver_seed=0,
    quiet=False,
) -> dict:
    """Every configuration against the default SA at its time on each setting's windows:
    ``{"summary": rows per setting and configuration, "windows": one row per window}``."""
    summary, per_window = [], []
    for setting in settings:
        common = {"convention": SETTINGS[setting]["convention"], "seed": solver_seed}
        windows = _windows(setting, epochs, windows_per_epoch, seed)
        for options in configs.values():  # compile first
            solve(windows[0], "nsa", iterations=1, **options, **common)
        solve(windows[0], "sa", iterations=1, **common)
        rows = []
        for w in progress(windows, desc=f"nsa default/{setting}", quiet=quiet):
            row = {
                "setting": setting,
                "epoch": w.meta["epoch"],
                "window": w.meta["index"],
                "jobs": w.num_jobs,
                "idle": w.num_idle,
                "opt": solve(w, "dp", convention=common["convention"]).objective,
            }
            for k, (_name, options) in enumerate(configs.items()):
                r, t = timed_solve(w, "nsa", iterations=ITERATIONS, **options, **common)
                sa, sa_t, *_ = sa_for_time(w, t[clock], {}, common, clock)
                row |= {
                    f"nsa{k}": r.objective,
                    f"nsa{k}_cpu_s": t["cpu"],
                    f"nsa{k}_wall_s": t["wall"],
                    f"nsa{k}_preset": r.info["preset"],
                    f"nsa{k}_weights": Path(r.info["weights"]).name,
                    f"nsa{k}_lookahead": r.info["lookahead"],
                    f"sa{k}": sa.objective,
                    f"sa{k}_iterations": sa.iterations,
                    f"sa{k}_cpu_s": sa_t["cpu"],
                    f"sa{k}_wall_s": sa_t["wall"],
                }
            rows.append(row)
        per_window += rows
        summary += summarize(setting, rows, configs)
    return {"summary": summary, "windows": per_window, "clock": clock, "seed": seed}


def summarize(setting: str, rows: list[dict], configs=CONFIGS) -> list[dict]:
    """One summary row per configuration (see the module)."""

    def col(key):
        return np.array([r[key] for r in rows], float)

    opt, out = col("opt"), []
    for k, name in enumerate(configs):
        nsa, sa = col(f"nsa{k}"), col(f"sa{k}")
        gain, low, high = gain_interval(sa, nsa)
        out.append(
            {
                "setting": setting,
                "config": name,
                "preset": rows[0][f"nsa{k}_preset"],
                "weights": rows[0][f"nsa{k}_weights"],
                "lookahead": rows[0][f"nsa{k}_lookahead"],
                "windows": len(rows),
                "nsa_over_sa_pct": 100 * float(np.mean(nsa / sa)),
                "nsa_gain_pct": gain,
                "ci95_low": low,
                "ci95_high": high,
                "nsa_better_pct": 100 * float(np.mean(nsa < sa)),
                "nsa_worse_pct": 100 * float(np.mean(nsa > sa)),
                "nsa_cpu_ms": 1e3 * float(col(f"nsa{k}_cpu_s").mean()),
                "sa_iterations": float(col(f"sa{k}_iterations").mean()),
                "cpu_ratio": float(col(f"sa{k}_cpu_s").mean() / col(f"nsa{k}_cpu_s").mean()),
                "wall_ratio": float(col(f"sa{k}_wall_s").mean() / col(f"nsa{k}_wall_s").mean()),
                "nsa_gap_pct": 100 * float(np.mean(nsa / opt - 1)),
                "sa_gap_pct": 100 * float(np.mean(sa / opt - 1)),
            }
        )
    return out


COLUMNS = [
    ("setting", ""),
    ("config", ""),
    ("windows", "d"),
    ("nsa_over_sa_pct", ".3f"),
    ("nsa_gain_pct", "+.3f"),
    ("ci95_low", "+.3f"),
    ("ci95_high", "+.3f"),
    ("nsa_better_pct", ".1f"),
    ("nsa_worse_pct", ".1f"),
    ("nsa_cpu_ms", ".1f"),
    ("sa_iterations", ".0f"),
    ("cpu_ratio", ".3f"),
    ("wall_ratio", ".3f"),
    ("nsa_gap_pct", "+.3f"),
    ("sa_gap_pct", "+.3f"),
]


def build_parser() -> argparse.ArgumentParser:
    p = parser("nsa_default", __doc__)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--windows-per-epoch", type=int, default=50)
    p.add_argument("--seed", type=int, default=2026, help="window stream seed")
    p.add_argument(
        "--setting",
        choices=tuple(SETTINGS),
        action="append",
        help="one setting (repeatable; default both)",
    )
    p.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="the clock SA's budget is measured on (default cpu)",
    )
    add_out(p, "the CSV files")
    p.add_argument("--quiet", action="store_true")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Run both settings; print the summary table and write the CSV files."""
    args = build_parser().parse_args(argv)
    res = run(
        args.epochs,
        args.windows_per_epoch,
        args.seed,
        tuple(args.setting or SETTINGS),
        clock=args.clock,
        quiet=args.quiet,
    )
    print(format_table(res["summary"], COLUMNS))
    print(
        f"nsa_over_sa_pct: mean of NSA-{ITERATIONS} / SA in %; SA is the default sa given "
        f"NSA's time ({args.clock} clock) on each window; nsa_gain_pct: mean of (SA - NSA) / "
        "SA in %, 95 % interval; cpu_ratio, wall_ratio: SA's time over NSA's"
    )
    out = Path(args.out)
    print(
        f"wrote {write_csv(out / f'nsa_default_summary_s{args.seed}.csv', res['summary'])} and "
        f"{write_csv(out / f'nsa_default_s{args.seed}.csv', res['windows'])}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
