"""Compile the Numba kernels now, so that no first call pays for it later.

Every kernel is compiled with ``cache=True`` (:mod:`tjap.core.jit`): the machine code is written
beside the source (``__pycache__``) the first time a kernel runs with a given argument type, and
read back by every later process. In a fresh clone that first time costs minutes of CPU in all,
spread over whichever solve, simulation or test comes first. ``python -m tjap.warmup`` pays it
at once, on every core: small runs of each family's compiled paths (the window methods on a
fat-tree, a switch tree and a block cluster with job constraints; the batch simulator on a
bundled trace; the audit's measuring loop; the network and interference kernels). The Makefile's
set-up runs it, so ``make demo`` and ``make test`` start warm. Running it again is quick: the
kernels load from the cache.
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

#: The examples the runs read (shipped with the repository).
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _tree_methods(which: str) -> None:
    import tjap
    from tjap.placement.tree.window import load_windows

    if which == "fat-tree":
        tree = tjap.FatTree(k=20, num_nodes=1000)
        windows = [tjap.Window(tree, idle_nodes=range(100, 400), job_sizes=[12, 7, 30, 25])]
    else:
        windows = load_windows(EXAMPLES / f"{which}.json")
    for window in windows:
        for method in tjap.methods():
            try:
                tjap.solve(window, method=method, time_limit_s=2, seed=0)
            except tjap.InvalidInputError:
                pass  # a method that refuses this kind of window


def _tree_search_variants() -> None:
    """The annealing and LNS variants (each convention, preset, repair and reinsertion order,
    the look-ahead repair) on a stream window of a fat-tree, a switch tree and a block tree
    with job constraints and both forms of the fragmentation weight."""
    import tjap
    from tjap.heuristics.tree.operators import REINSERT, LookaheadRepair
    from tjap.placement.tree.stream import generate_windows
    from tjap.placement.tree.topology import Topology
    from tjap.placement.tree.tree_cost import CONVENTIONS
    from tjap.placement.tree.window import load_windows

    blocks = Topology.from_slurm(
        "\n".join([f"BlockName=b{i} Nodes=n[{2 * i + 1}-{2 * i + 2}]" for i in range(5)])
        + "\nBlockSizes=2,4"
    )
    jobs = [
        {"nodes": 2, "segment": 2, "segment_level": 1},
        {"nodes": 3, "within": 1},
        {"nodes": 1, "prefer": 1, "prefer_cost": 700},
        {"nodes": 2, "exclusive": 1},
        {"nodes": 2, "slurm_rule": True},
    ]
    windows = [generate_windows("paper", 1, seed=0)[0], load_windows(EXAMPLES / "window.json")[0]]
    for fragmentation in (None, 700, (300, 2)):
        windows += [tjap.Window(blocks, range(10), [j], fragmentation=fragmentation) for j in jobs]
    windows += [tjap.Window(tjap.FatTree(k=4, num_nodes=16), range(16), [3, 2, 4])]
    searches: list[dict[str, object]] = [{"preset": preset} for preset in ("paper", "best")]
    searches += [{"repair": repair} for repair in ("greedy", "paper", "uniform")]
    searches += [{"repair": LookaheadRepair(k=1, temperature=0.0)}]
    searches += [{"reinsert": order} for order in REINSERT]
    solved = refused = 0
    for window in windows:
        for convention in CONVENTIONS:
            for method, options in [("sa", o) for o in searches] + [("lns", {"repair": "paper"})]:
                try:
                    tjap.solve(
                        window, method, seed=0, iterations=30, convention=convention, **options
                    )
                    solved += 1
                except tjap.InvalidInputError:
                    refused += 1  # an option this kind of window does not take
    if refused > solved // 2:
        raise RuntimeError(f"{refused} of the search variants were refused")


def _tree_learning() -> None:
    """The repair environment of Neural SA's training (both warm-up repairs, every expert)
    and the online replay (each policy with each per-job placement)."""
    from tjap.learned.tree.env import WARMUP_REPAIRS, NSARepairEnv
    from tjap.learned.tree.imitation import EXPERTS, expert_action
    from tjap.placement.tree.fat_tree import FatTree
    from tjap.placement.tree.online import PLACEMENTS, POLICIES, replay
    from tjap.placement.tree.stream import generate_windows
    from tjap.placement.tree.workload import Workload

    windows = generate_windows("published", 2, seed=5, convention="published")
    for repair in WARMUP_REPAIRS:
        for q in (7, 100):
            env = NSARepairEnv(windows, q=q, max_remove=5, warmup_repair=repair, warmup_moves=5)
            for expert in EXPERTS:
                env.reset(seed=0)
                env.step(expert_action(env, expert))
    tree = FatTree(num_nodes=64, nodes_per_switch=4, switches_per_pod=4)
    workload = Workload.generate(60, 1, max_nodes=16)
    for policy in POLICIES:
        for placement in PLACEMENTS if policy != "window" else ("firstfit",):
            replay(tree, workload, policy=policy, placement=placement, jobs=range(40), seed=0)


def _batch() -> None:
    from tjap.cli import main

    trace = Path(__file__).resolve().parent / "placement" / "batch" / "data" / "ls6-a100.tsv"
    main(["simulate", "--trace", str(trace), "--nodes", "76", "--backfill", "easy", "--quiet"])


def _audit() -> None:
    from tjap.cli import main

    audit = EXAMPLES / "audit"
    for records in ("sacct.txt", "jobcomp.txt"):
        main(
            ["audit", str(audit / records), "--topology", str(audit / "topology.conf")]
            + ["--timezone", "Etc/UTC", "--json", "--quiet"]
        )


def _network() -> None:
    from tjap.cli import main

    for policy in ("tetris", "nalb", "exact"):
        main(["network", "evaluate", "--policy", policy, "--servers", "64", "--quiet", "--json"])


def _interference() -> None:
    from tjap.cli import main

    for policy in ("tetris", "whole"):
        main(["interference", "evaluate", "--policy", policy, "--quiet", "--json"])


def _small_policies() -> None:
    """The rules and learned policies of seeds 001 and 003 on small cases (the shipped weights)."""
    from tjap.placement.interference import Workload, make_cluster, simulate
    from tjap.placement.network import Requests, paper_topology, run_episode
    from tjap.registry import make

    cluster = make_cluster("fattree", 4)
    workload = Workload.generate(cluster.num_partitions, 3, "poisson", seed=0, rate=2)
    for name, options in [("lif", {}), ("single", {}), ("marl", {}), ("opt", {"iterations": 20})]:
        simulate(cluster, workload, make("interference", name, **options))
    topology = paper_topology("8:1-16", servers=64)
    run_episode(topology, Requests.generate(topology, 8, seed=0), make("network", "gnn"))


#: The runs, costliest first, so the pool's cores stay busy to the end.
RUNS = {
    "tree: fat-tree window": lambda: _tree_methods("fat-tree"),
    "tree: switch-tree window": lambda: _tree_methods("window"),
    "tree: block window": lambda: _tree_methods("blocks-window"),
    "tree: search variants": _tree_search_variants,
    "tree: training environment and online replay": _tree_learning,
    "batch simulator": _batch,
    "audit": _audit,
    "network": _network,
    "interference": _interference,
    "interference and network: small cases of every policy": _small_policies,
}


def _run(name: str) -> tuple[str, float, str | None]:
    import contextlib
    import io

    start = time.perf_counter()
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            RUNS[name]()
    except SystemExit:
        pass
    except Exception as exc:  # a warm-up never stops the set-up: it says what it skipped
        return name, time.perf_counter() - start, f"{type(exc).__name__}: {exc}"
    return name, time.perf_counter() - start, None


def main(argv: list[str] | None = None) -> int:
    """Run every warm-up on ``os.cpu_count()`` processes; print one line per run."""
    import argparse

    argparse.ArgumentParser(
        prog="python -m tjap.warmup",
        description="Compile and cache the Numba kernels now, on every core.",
    ).parse_args(argv)
    workers = max(1, min(len(RUNS), os.cpu_count() or 1))
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        for name, seconds, problem in pool.map(_run, list(RUNS)):
            print(f"tjap.warmup: {name}: {seconds:.1f} s" + (f" ({problem})" if problem else ""))
    print(f"tjap.warmup: Numba kernels compiled and cached in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
