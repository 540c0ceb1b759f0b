"""The size rules ``auto`` uses without a time limit, measured: how long SCIP takes to prove the
SCAS optimum as windows grow, against the model's size (nonzeros of the set-packing model).

    python -m benchmarks.auto_rules                  # the grid below, SCIP capped at 30 s each
    python -m benchmarks.auto_rules --cap 10 --seeds 0 1

Windows: ``jobs`` jobs of 2-12 nodes on ``idle`` idle nodes drawn at random (scattered, so
fragmented) from the paper's fat-tree of 1,000 nodes. For each, ``dp_cells`` (the DP's table),
``nonzeros`` (SCIP's model) and SCIP's wall time and status. ``auto`` runs SCIP without a limit
only below :data:`tjap.placement.tree.exact.AUTO_SCIP_NONZEROS`, the largest size at which every
window here was solved to optimality within a few seconds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.common import one_line_errors, parser
from tjap.core.report import format_table
from tjap.placement.tree import csp
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.scas import set_packing_nonzeros, solve_scip
from tjap.placement.tree.window import Window


def scattered_window(jobs: int, idle: int, seed: int) -> Window:
    """``jobs`` jobs of 2-12 nodes on ``idle`` nodes drawn at random from the paper's tree."""
    rng = np.random.default_rng(seed)
    tree = FatTree.from_layout("paper")
    idle_nodes = np.sort(rng.choice(tree.num_nodes, idle, replace=False))
    sizes = rng.integers(2, 13, jobs)
    while sizes.sum() > idle:
        sizes = sizes[:-1]
    return Window(tree, idle_nodes, sizes.tolist())


def build_parser() -> argparse.ArgumentParser:
    p = parser("auto_rules", __doc__)
    p.add_argument("--cap", type=float, default=30.0, help="SCIP's time limit per window (s)")
    p.add_argument(
        "--seed",
        "--seeds",
        dest="seeds",
        type=int,
        nargs="+",
        default=[0],
        help="window seeds (default 0)",
    )
    p.add_argument(
        "--idle",
        type=int,
        nargs="+",
        default=[100, 200, 400, 700, 1000],
        help="idle nodes per window",
    )
    p.add_argument(
        "--jobs", type=int, nargs="+", default=[5, 10, 20, 40, 80], help="jobs per window"
    )
    return p


@one_line_errors
def main(argv=None) -> int:
    """Solve the grid's windows with SCIP; print a row per window, then all sorted by size."""
    args = build_parser().parse_args(argv)
    rows = []
    for idle in args.idle:
        for jobs in args.jobs:
            for seed in args.seeds:
                w = scattered_window(jobs, idle, seed)
                started = time.perf_counter()
                r = solve_scip(w, time_limit_s=args.cap, seed=seed)
                rows.append(
                    {
                        "idle": idle,
                        "jobs": w.num_jobs,
                        "seed": seed,
                        "dp_cells": csp.dp_table_cells(w),
                        "nonzeros": set_packing_nonzeros(w),
                        "scip_s": time.perf_counter() - started,
                        "status": r.status.value,
                    }
                )
                print(
                    format_table(
                        rows[-1:],
                        [
                            ("idle", ""),
                            ("jobs", ""),
                            ("seed", ""),
                            ("dp_cells", ",d"),
                            ("nonzeros", ",d"),
                            ("scip_s", ".2f"),
                            ("status", ""),
                        ],
                    ),
                    flush=True,
                )
    print(
        format_table(
            sorted(rows, key=lambda r: r["nonzeros"]),
            [
                ("idle", ""),
                ("jobs", ""),
                ("seed", ""),
                ("dp_cells", ",d"),
                ("nonzeros", ",d"),
                ("scip_s", ".2f"),
                ("status", ""),
            ],
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
