"""The compiled SA loop against its plain-Python twin: iterations per second on the same windows,
same parameters, same seed (seed 002's speed comparison).

    python -m benchmarks.sa_speed --setting published --windows 20
    python -m benchmarks.sa_speed --setting paper --windows 20

The twin is the plain-Python oracle of the test suite (``tests/oracles/sa_reference.py``), which draws the
same random numbers in the same order, so with the paper's repair both sides must end at the same
best cost. A timing of one process: run it on a quiet machine, one at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "oracles"))
import sa_reference  # noqa: E402  (the test suite's plain-Python twin)

from benchmarks.common import one_line_errors, parser  # noqa: E402
from benchmarks.sa_tables import SETTINGS, _windows  # noqa: E402
from tjap.core.report import format_table  # noqa: E402


def speed(setting="paper", num_windows=20, iterations=1000, seed=0, repeats=3) -> list[dict]:
    """Iterations per second of the Numba SA loop against its plain-Python twin, same windows, same
    parameters (the setting's preset: its T_max, T_min 2.5, n^D = 2, q = 100; largest first),
    same seed.

    Each side's time on a window is the best of ``repeats`` consecutive runs (as timeit does:
    other processes on the cores only ever add time). With the paper's repair both run the same
    iterations, so both must end at the same best cost (``same_result``: windows where they do).
    The greedy twin runs 50 iterations (about 2 ms each). ``load_1min``: the load average after
    the run."""
    import os

    from tjap.heuristics.tree import _kernels
    from tjap.heuristics.tree.anneal import SA_PRESETS, anneal
    from tjap.heuristics.tree.operators import Metropolis, RandomDestroy
    from tjap.placement.tree.dcas import Arrays

    s, p = SETTINGS[setting], SA_PRESETS[setting]
    code = 0 if s["convention"] == "paper" else 1
    windows = _windows(setting, 1, num_windows, seed)
    params = dict(
        accept=Metropolis(p["t_max"], p["t_min"]),
        destroy=RandomDestroy(p["max_remove"]),
        reinsert="largest-first",
        convention=s["convention"],
        seed=seed,
    )
    out = []
    for repair, rcode, py_iters in (
        ("paper", _kernels.REPAIR_PAPER, iterations),
        ("greedy", _kernels.REPAIR_GREEDY, 50),
    ):
        anneal(windows[0], iterations=1, repair=repair, **params)  # compile first
        ratios, numba_ips, python_ips, same = [], [], [], 0
        for w in windows:
            a = Arrays(w)
            j = w.num_jobs
            runs = [
                anneal(w, iterations=iterations, repair=repair, **params) for _ in range(repeats)
            ]
            nb = max(r.info["iterations_per_s"] for r in runs)
            py = 0.0
            for _ in range(repeats):
                tick = time.perf_counter()
                _, _, py_best = sa_reference.anneal(
                    a.switch_q,
                    a.pod_q,
                    code,
                    a.sizes,
                    np.arange(j),
                    np.zeros(j, np.int64),
                    py_iters,
                    p["t_max"],
                    p["t_min"],
                    p["max_remove"],
                    rcode,
                    p["q"],
                    _kernels.REINSERT_LARGEST_FIRST,
                    _kernels.ACCEPT_METROPOLIS,
                    seed,
                )
                py = max(py, py_iters / (time.perf_counter() - tick))
            r = runs[0]
            numba_ips.append(nb)
            python_ips.append(py)
            ratios.append(nb / py)
            same += py_iters == iterations and py_best == r.objective
        out.append(
            {
                "repair": repair,
                "windows": len(windows),
                "numba_it_per_s": float(np.median(numba_ips)),
                "python_it_per_s": float(np.median(python_ips)),
                "median_ratio": float(np.median(ratios)),
                "min_ratio": float(np.min(ratios)),
                "same_result": same if py_iters == iterations else None,
                "load_1min": os.getloadavg()[0],
            }
        )
    return out


def build_parser() -> argparse.ArgumentParser:
    p = parser("sa_speed", __doc__)
    p.add_argument("--setting", choices=("published", "paper"), default="published")
    p.add_argument("--windows", type=int, default=20, help="windows of the stream (default 20)")
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Time both loops; print the table (or, with ``--json``, the rows)."""
    args = build_parser().parse_args(argv)
    rows = speed(args.setting, args.windows, args.iterations, seed=args.seed)
    if args.json:
        print(json.dumps({"setting": args.setting, "rows": rows}, indent=2))
    else:
        print(
            format_table(
                rows,
                [
                    ("repair", ""),
                    ("windows", "d"),
                    ("numba_it_per_s", ".0f"),
                    ("python_it_per_s", ".0f"),
                    ("median_ratio", ".1f"),
                    ("min_ratio", ".1f"),
                    ("same_result", ""),
                    ("load_1min", ".2f"),
                ],
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
