"""Seed 001 baselines (issue 8): average JCT of Tetris, LB, LIF, random and the SA operator "opt"
under the arrival patterns (the paper's Fig. 7), server architectures (Fig. 8) and topologies
(Fig. 9), Table III on generated co-location samples, and the one-day speed of the simulator.

    python -m benchmarks.interference [--intervals 48] [--seed 0] [--figures 7,8,9] [--out DIR]

Every policy sees the same workload (seeded); runs drain (every job completes). The paper's
figures are plots without printed values; its text gives only the MARL scheduler's gain over the
best baseline (at least 24.3 % in Fig. 7, 22 % in Fig. 8, 21 % in Fig. 9), shown beside ours.
No learned scheduler exists here yet.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from benchmarks.common import format_table, progress, write_csv
from heuristics.interference import make_policy
from placement.interference import Workload, error_table, make_cluster, simulate
from placement.interference.cli import default_rate

POLICIES = ("tetris", "lb", "lif", "random", "opt")
HEURISTICS = ("tetris", "lb", "lif", "random")
#: (figure, topology, k, arch, arrivals) of each setting.
SETTINGS = {
    "7": [("fattree", 20, "pcie", a) for a in ("uniform", "poisson", "trace")],
    "8": [("fattree", 20, arch, "uniform") for arch in ("dgx1", "hetcpu", "mixed")],
    "9": [("vl2", 20, "pcie", "uniform"), ("bcube", 3, "pcie", "uniform")],
}
PAPER_GAIN = {"7": "MARL >= 24.3 % below every baseline", "8": "MARL >= 22 % below",
              "9": "MARL >= 21 % below"}


def speed(intervals: int = 48, seed: int = 0, policies=HEURISTICS) -> list[dict]:
    """Wall time of one simulated day (no drain) of the default cluster per policy."""
    cluster = make_cluster()
    workload = Workload.generate(cluster.num_partitions, intervals, "uniform", seed)
    rows = []
    for name in policies:
        result = simulate(cluster, workload, make_policy(name), seed=seed, drain=False)
        rows.append({"policy": name, "intervals": intervals, "jobs": len(workload),
                     "runtime_s": result.runtime_s})
    return rows


def compare(figures=("7", "8", "9"), intervals: int = 48, seed: int = 0, policies=POLICIES,
            opt_iterations: int = 2000, quiet: bool = False) -> list[dict]:
    """One row per (setting, policy): the run's summary."""
    jobs = [(fig, s, p) for fig in figures for s in SETTINGS[fig] for p in policies]
    rows = []
    for fig, (topology, k, arch, arrivals), name in progress(jobs, total=len(jobs),
                                                             desc="runs", quiet=quiet):
        cluster = make_cluster(topology, k, arch)
        workload = Workload.generate(cluster.num_partitions, intervals, arrivals, seed,
                                     rate=default_rate(cluster))
        options = {"iterations": opt_iterations} if name == "opt" else {}
        result = simulate(cluster, workload, make_policy(name, **options), seed=seed)
        rows.append({"figure": fig, "cluster": cluster.name, "arrivals": arrivals,
                     "policy": name} | result.summary())
    return rows


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.interference", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--intervals", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figures", default="7,8,9")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--opt-iterations", type=int, default=2000)
    parser.add_argument("--out", default="benchmarks/out")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out)
    start = time.perf_counter()
    table3 = error_table(480, args.seed)
    fast = speed(args.intervals, args.seed)
    figures = [f for f in args.figures.split(",") if f]
    rows = compare(figures, args.intervals, args.seed, args.policies.split(","),
                   args.opt_iterations, args.quiet)
    files = {"table3": str(write_csv(out / "interference_table3.csv", table3)),
             "speed": str(write_csv(out / "interference_speed.csv", fast)),
             "jct": str(write_csv(out / f"interference_jct_s{args.seed}.csv", rows))}
    summary = {"table3": table3, "speed": fast, "jct": rows, "files": files,
               "total_wall_s": time.perf_counter() - start,
               "machine": f"{platform.processor() or platform.machine()}, "
                          f"python {platform.python_version()}"}
    if args.json:
        print(json.dumps(summary, indent=2))
        return summary
    print("Table III on generated samples (held-out 20 %)")
    print(format_table(table3, [("model", ""), ("train_error", ".3f"), ("test_error", ".3f"),
                                ("paper_error", ".3f")]))
    print("\none simulated day (48 intervals, no drain) of the 2000-server fat-tree")
    print(format_table(fast, [("policy", ""), ("jobs", "d"), ("runtime_s", ".2f")]))
    for fig in figures:
        print(f"\nFig. {fig} settings ({PAPER_GAIN[fig]})")
        print(format_table([r for r in rows if r["figure"] == fig],
                           [("cluster", ""), ("arrivals", ""), ("policy", ""), ("avg_jct", ".2f"),
                            ("avg_wait", ".2f"), ("avg_slowdown", ".3f"),
                            ("avg_comm_share", ".3f"), ("gpu_util", ".3f"),
                            ("runtime_s", ".1f")]))
    print(f"\ntotal {summary['total_wall_s']:.0f} s; files: " + ", ".join(files.values()))
    return summary


if __name__ == "__main__":
    main()
