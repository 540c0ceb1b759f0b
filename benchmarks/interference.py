"""Seed 001 baselines: average JCT of Tetris, LB, LIF, random, the SA operator "opt" and
our extra rule "whole" (each job on one server) under the arrival patterns (the paper's Fig. 7),
server architectures (Fig. 8) and topologies (Fig. 9), Table III on generated co-location
samples, and the one-day speed of the simulator.

    python -m benchmarks.interference [--intervals 48] [--seed 0] [--figures 7,8,9] [--out DIR]

Every policy sees the same workload (seeded); runs drain (every job completes). The paper's
figures are plots without printed values; its text gives only the MARL scheduler's gain over the
best baseline (at least 24.3 % in Fig. 7, 22 % in Fig. 8, 21 % in Fig. 9), shown beside ours.
The learned schedulers run with ``--policies marl`` (slow: minutes per simulated day).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks.common import (
    add_out,
    executor_from_args,
    format_table,
    make_executor,
    one_line_errors,
    parser,
    write_csv,
)
from tjap.cli.common import add_executor_arguments
from tjap.placement.interference import Workload, default_rate, error_table, make_cluster, simulate
from tjap.registry import make

POLICIES = ("tetris", "lb", "lif", "random", "opt", "whole")
HEURISTICS = ("tetris", "lb", "lif", "random")
#: (figure, topology, k, arch, arrivals) of each setting.
SETTINGS = {
    "7": [("fattree", 20, "pcie", a) for a in ("uniform", "poisson", "trace")],
    "8": [("fattree", 20, arch, "uniform") for arch in ("dgx1", "hetcpu", "mixed")],
    "9": [("vl2", 20, "pcie", "uniform"), ("bcube", 3, "pcie", "uniform")],
}
PAPER_GAIN = {
    "7": "MARL >= 24.3 % below every baseline",
    "8": "MARL >= 22 % below",
    "9": "MARL >= 21 % below",
}


def speed(intervals: int = 48, seed: int = 0, policies=HEURISTICS) -> list[dict]:
    """Wall time of one simulated day (no drain) of the default cluster per policy."""
    cluster = make_cluster()
    workload = Workload.generate(cluster.num_partitions, intervals, "uniform", seed)
    rows = []
    for name in policies:
        result = simulate(cluster, workload, make("interference", name), seed=seed, drain=False)
        rows.append(
            {
                "policy": name,
                "intervals": intervals,
                "jobs": len(workload),
                "runtime_s": result.runtime_s,
            }
        )
    return rows


def compare(
    figures=("7", "8", "9"),
    intervals: int = 48,
    seed: int = 0,
    policies=POLICIES,
    opt_iterations: int = 2000,
    quiet: bool = False,
    executor=None,
) -> list[dict]:
    """One row per (setting, policy): the run's summary; each run is a task of ``executor``
    (default serial)."""
    tasks = [
        (fig, *s, p, intervals, seed, opt_iterations)
        for fig in figures
        for s in SETTINGS[fig]
        for p in policies
    ]
    return (executor or make_executor(1)).results(compare_run, tasks, desc="runs", quiet=quiet)


def compare_run(fig, topology, k, arch, arrivals, name, intervals, seed, opt_iterations) -> dict:
    """One (setting, policy) run of :func:`compare` (a task of the executor): one row."""
    cluster = make_cluster(topology, k, arch)
    workload = Workload.generate(
        cluster.num_partitions, intervals, arrivals, seed, rate=default_rate(cluster)
    )
    options = {"iterations": opt_iterations} if name == "opt" else {}
    result = simulate(cluster, workload, make("interference", name, **options), seed=seed)
    return {
        "figure": fig,
        "cluster": cluster.name,
        "arrivals": arrivals,
        "policy": name,
    } | result.summary()


def alone_best_jct(cluster, workload) -> np.ndarray:
    """Per job, its JCT alone on the empty cluster at the best of its one-server socket splits and
    the one-task-per-server plan (simulated; no queueing, no co-runners): a lower-bound estimate
    of what any placement can reach (other multi-server plans are not tried)."""
    from tjap.placement.interference import Simulator

    cache, out = {}, np.empty(len(workload))
    for j in range(len(workload)):
        key = (
            int(workload.model[j]),
            int(workload.workers[j]),
            int(workload.ps[j]),
            int(workload.epochs[j]),
        )
        if key not in cache:
            one = Workload(
                np.zeros(1, np.int64), np.zeros(1, np.int64), *[np.array([v]) for v in key]
            )
            sim = Simulator(cluster, one)
            W, P = key[1], key[2]
            g0, g1 = (
                int(cluster.server_first_group[0]),
                int(cluster.server_first_group[0] + cluster.server_groups[0] - 1),
            )
            plans = [
                [g0] * a + [g1] * (W - a) + [g0] * b + [g1] * (P - b)
                for a in range(W + 1)
                for b in range(P + 1)
            ]
            plans.append([int(cluster.server_first_group[s]) for s in range(W + P)])
            best = np.inf
            for plan in plans:
                sim.reset()
                if not sim.fits(0, plan):
                    continue
                sim.commit(0, plan)
                running = []
                while sim.state[0] == 1:
                    running = sim.advance(running)
                    sim.interval += 1
                best = min(best, sim.finish[0])
            cache[key] = best
        out[j] = cache[key]
    return out


def diagnose(
    k: int = 20,
    intervals: int = 48,
    arrivals: str = "uniform",
    seed: int = 0,
    policies=("tetris",),
    bound: bool = True,
) -> dict:
    """Where a policy's JCT comes from on the k-ary fat-tree: per job the ideal time (epochs /
    workers intervals), the interference and communication parts of its run time (from its mean
    slowdown S and communication share c: ideal x (1 + S) / (1 - c)), and how often its tasks
    span several servers, racks, pods; with the lower bounds (ideal, :func:`alone_best_jct`)."""
    cluster = make_cluster("fattree", k, "pcie")
    workload = Workload.generate(
        cluster.num_partitions, intervals, arrivals, seed, rate=default_rate(cluster)
    )
    ideal = workload.epochs / workload.workers
    report = {
        "cluster": cluster.name,
        "arrivals": arrivals,
        "jobs": len(workload),
        "ideal_jct": float(ideal.mean()),
    }
    if bound:
        report["alone_best_jct"] = float(alone_best_jct(cluster, workload).mean())
    from tjap.placement.interference import Simulator

    for name in policies:
        sim = Simulator(cluster, workload)
        result = sim.run(make("interference", name), seed=seed)
        spans = {
            "server": cluster.group_server,
            "rack": cluster.server_tor[cluster.group_server],
            "pod": cluster.group_partition,
        }
        span = {
            key: np.array(
                [
                    len(set(level[sim.task_group[sim.task_ptr[j] : sim.task_ptr[j + 1]]]))
                    for j in range(len(workload))
                ]
            )
            for key, level in spans.items()
        }
        s, c = result.slowdown, result.comm_share
        run = result.finish - result.start
        one = span["server"] == 1
        report[name] = {
            "avg_jct": result.summary()["avg_jct"],
            "avg_wait": result.summary()["avg_wait"],
            "ideal": float(ideal.mean()),
            "interference": float(np.mean(ideal * s)),
            "communication": float(np.mean(ideal * (1 + s) * c / (1 - c))),
            "multi_server": float(np.mean(~one)),
            "multi_rack": float(np.mean(span["rack"] > 1)),
            "multi_pod": float(np.mean(span["pod"] > 1)),
            "run_over_ideal_one_server": float(np.mean(run[one] / ideal[one]))
            if one.any()
            else float("nan"),
            "run_over_ideal_split": float(np.mean(run[~one] / ideal[~one]))
            if (~one).any()
            else float("nan"),
        }
    return report


def build_parser() -> argparse.ArgumentParser:
    p = parser("interference", __doc__)
    p.add_argument("--intervals", type=int, default=48)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--figures", default="7,8,9")
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--opt-iterations", type=int, default=2000)
    add_out(p, "the CSV files")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true")
    add_executor_arguments(p)
    return p


@one_line_errors
def main(argv=None) -> int:
    """Run the comparisons; print the tables (or, with ``--json``, everything)."""
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    start = time.perf_counter()
    table3 = error_table(480, args.seed)
    fast = speed(args.intervals, args.seed)
    figures = [f for f in args.figures.split(",") if f]
    rows = compare(
        figures,
        args.intervals,
        args.seed,
        args.policies.split(","),
        args.opt_iterations,
        args.quiet,
        executor=executor_from_args(args),
    )
    files = {
        "table3": str(write_csv(out / "interference_table3.csv", table3)),
        "speed": str(write_csv(out / "interference_speed.csv", fast)),
        "jct": str(write_csv(out / f"interference_jct_s{args.seed}.csv", rows)),
    }
    summary = {
        "table3": table3,
        "speed": fast,
        "jct": rows,
        "files": files,
        "total_wall_s": time.perf_counter() - start,
        "machine": f"{platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}",
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print("Table III on generated samples (held-out 20 %)")
    print(
        format_table(
            table3,
            [("model", ""), ("train_error", ".3f"), ("test_error", ".3f"), ("paper_error", ".3f")],
        )
    )
    print("\none simulated day (48 intervals, no drain) of the 2000-server fat-tree")
    print(format_table(fast, [("policy", ""), ("jobs", "d"), ("runtime_s", ".2f")]))
    for fig in figures:
        print(f"\nFig. {fig} settings ({PAPER_GAIN[fig]})")
        print(
            format_table(
                [r for r in rows if r["figure"] == fig],
                [
                    ("cluster", ""),
                    ("arrivals", ""),
                    ("policy", ""),
                    ("avg_jct", ".2f"),
                    ("avg_wait", ".2f"),
                    ("avg_slowdown", ".3f"),
                    ("avg_comm_share", ".3f"),
                    ("utilization", ".3f"),
                    ("runtime_s", ".1f"),
                ],
            )
        )
    print(f"\ntotal {summary['total_wall_s']:.0f} s; files: " + ", ".join(files.values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
