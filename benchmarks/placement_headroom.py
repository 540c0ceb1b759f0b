"""How much CH cost can placement alone save on Slurm's own start schedule?

The item-4 target asks the placement service for a mean CH cost at most 0.85 of Slurm alone's,
with mean wait within +10 %. This benchmark measures the room placement has with the waits held
fixed: the batch simulator's start schedule for Slurm alone (the one
:func:`benchmarks.slurm_topology.predict_slurm` uses: ``sched/backfill`` on node counts, 1 s
passes, 1 s release delay) is replayed with several placements. Jobs ask for node counts only,
so any placement fits that schedule:

- ``slurm-tree``: each job, when it starts, on Slurm's own best fit on the switch tree
  (:mod:`tjap.heuristics.slurm.tree`), the reference (ratio 1);
- ``cheapest-now``: each job, when it starts, on the cheapest free nodes for itself (the exact
  single-job tree DP, :func:`tjap.placement.tree.freeform.best_single_job_nodes`): what the per-job
  optimum buys; the service's windows hold one or two jobs (:mod:`benchmarks.slurm_topology`),
  so this is close to what it does, minus the wait its tick adds;
- ``floor``: every job on the cheapest nodes of the empty cluster (no schedule does better).

Every placement is checked (no node held by two running jobs, every job its size) and costed by
the library's :func:`tjap.placement.tree.cost.job_cost`.

    python -m benchmarks.placement_headroom --seeds 2 3 4 5

The cluster and stream are :mod:`benchmarks.slurm_topology`'s (40 nodes, 7 leaves of 3-8 nodes,
seed 002's workload scaled to 1-12 nodes at load 0.85).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, one_line_errors, parser
from benchmarks.slurm_topology import (
    cluster_topology,
    cost_floor,
    paper_rows,
    place_in_order,
    simulate_starts,
)
from tjap.core.report import format_table
from tjap.heuristics.slurm.tree import slurm_tree_nodes
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.freeform import best_single_job_nodes
from tjap.placement.tree.topology import Topology


def cheapest_now(topology: Topology, free: np.ndarray, size: int) -> np.ndarray:
    """The cheapest free nodes for one job alone."""
    return np.asarray(best_single_job_nodes(topology, np.flatnonzero(free), int(size)))


def headroom(seed: int, *, jobs: int = 150, nodes: int = 40) -> dict:
    """One stream: mean CH cost of each placement on the simulator's schedule for Slurm alone."""
    topology = cluster_topology(nodes)
    rows = paper_rows(jobs, seed, topology)
    per_job = [
        {
            "submit": r["submit_s"],
            "cpus": r["cpus"],
            "limit_min": r["limit_min"],
            "runtime_s": r["runtime_s"],
        }
        for r in rows
    ]
    start, end, seq = simulate_starts(per_job, topology.num_nodes)
    sizes = [r["cpus"] for r in rows]
    placed = {
        "slurm-tree": place_in_order(topology, sizes, start, end, seq, slurm_tree_nodes),
        "cheapest-now": place_in_order(topology, sizes, start, end, seq, cheapest_now),
    }
    mean = {}
    for name, nodes_of in placed.items():
        check_placement(sizes, start, end, nodes_of)
        mean[name] = float(np.mean([job_cost(topology, ids) for ids in nodes_of]))
    floor = float(np.mean([cost_floor(topology, n) for n in sizes]))
    ref = mean["slurm-tree"]
    return {
        "seed": seed,
        "jobs": jobs,
        "mean_wait_s": float(np.mean(start - np.array([r["submit_s"] for r in rows]))),
        "mean_cost": mean,
        "ratio": {k: v / ref for k, v in mean.items()},
        "floor": floor,
        "floor_ratio": floor / ref,
    }


def check_placement(sizes, start, end, nodes) -> None:
    """Every job on distinct nodes of its size, no node held by two jobs at once."""
    for j, ids in enumerate(nodes):
        if len(set(ids.tolist())) != sizes[j]:
            raise AssertionError(f"job {j}: {len(ids)} nodes for a size {sizes[j]}")
        for k in range(j):
            overlap = start[j] < end[k] + 1 and start[k] < end[j] + 1
            if overlap and set(ids.tolist()) & set(nodes[k].tolist()):
                raise AssertionError(f"jobs {k} and {j} share a node while both run")


def build_parser() -> argparse.ArgumentParser:
    p = parser("placement_headroom", __doc__)
    p.add_argument(
        "--seed",
        "--seeds",
        dest="seeds",
        type=int,
        nargs="+",
        default=[2, 3, 4, 5],
        help="workload seeds, one run each (default 2 3 4 5)",
    )
    p.add_argument("--jobs", type=int, default=150, help="jobs of each stream (default 150)")
    add_out(p, "the results (placement_headroom.json)")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Place each seed's schedule every way; print the ratios and write every result as JSON."""
    args = build_parser().parse_args(argv)
    results = [headroom(s, jobs=args.jobs) for s in args.seeds]
    rows = [
        {
            "seed": r["seed"],
            "mean_wait_s": r["mean_wait_s"],
            "slurm_tree_cost": r["mean_cost"]["slurm-tree"],
            "cheapest_now": r["ratio"]["cheapest-now"],
            "floor": r["floor_ratio"],
        }
        for r in results
    ]
    print(
        "mean CH cost on the simulator's schedule for Slurm alone, as a ratio to slurm-tree's "
        "(target: 0.85)"
    )
    print(
        format_table(
            rows,
            [
                ("seed", "d"),
                ("mean_wait_s", ".1f"),
                ("slurm_tree_cost", ".0f"),
                ("cheapest_now", ".3f"),
                ("floor", ".3f"),
            ],
        )
    )
    path = Path(args.out) / "placement_headroom.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1))
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
