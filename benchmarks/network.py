"""Seed 003 on the paper's nine topologies: acceptance, CPU and memory utilisation of
Tetris, NALB, NULB, random, the exact per-request model and the learned allocator (gnn, the shipped
weights) on the 64-server topologies (128-request episodes, 5 seeds), channel utilisation per tier
(a PNG like the paper's Fig. 3), the heuristics and the gnn (without retraining) on the 1024-server
versions, and the gnn's time per server choice on 1024 servers on one CPU thread.

    python -m benchmarks.network [--seeds 5] [--large-requests 2048] [--large-seeds 2] [--out DIR]

Each (topology, policy) cell is one task of the sweep executor (``--workers N``, ``--ray
ADDRESS``; the gnn timing runs alone afterwards). Every method sees the same requests (seeded by
episode). Utilisations are means over the episode,
sampled after each request's outcome (warm-up included). The paper reports no absolute baseline
figures in its text, only the RL agent's gains over the best baseline (Table 2) and its change from
64 to 1024 servers (Table 3); they are reproduced in :data:`PAPER_TABLE2` and :data:`PAPER_TABLE3`.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks.common import (
    CsvRows,
    TaskFailure,
    add_out,
    executor_from_args,
    format_table,
    make_executor,
    one_line_errors,
    parser,
    pyplot,
    save_figure,
)
from tjap.cli.common import add_executor_arguments
from tjap.placement.network import NAMES, evaluate, paper_topology
from tjap.registry import make

HEURISTICS = ("tetris", "nalb", "nulb", "random")
POLICIES = HEURISTICS + ("exact", "gnn")
LARGE_POLICIES = HEURISTICS + ("gnn",)
COLOURS = {
    "tetris": "tab:orange",
    "nalb": "tab:green",
    "nulb": "tab:red",
    "random": "tab:purple",
    "exact": "tab:blue",
    "gnn": "tab:brown",
}

#: Paper Table 2: RL agent's improvement over the best baseline per topology, % (acceptance, CPU
#: utilisation, memory utilisation), 64 servers.
PAPER_TABLE2 = {
    "8:1-16": (19, 24, 22),
    "8:1-8": (15, 16, 20),
    "8:1-4": (22, 43, 23),
    "16:1-16": (9, 21, 16),
    "16:1-8": (11, 12, 15),
    "16:1-4": (8, 16, 11),
    "32:1-16": (17, 17, 21),
    "32:1-8": (19, 12, 10),
    "32:1-4": (6, 3, 3),
}
#: Paper Table 3: RL agent's change from 64 to 1024 servers per topology, % (same three measures).
PAPER_TABLE3 = {
    "8:1-16": (6, 4, 0),
    "8:1-8": (6, -12, -2),
    "8:1-4": (4, 13, 6),
    "16:1-16": (16, 8, 14),
    "16:1-8": (10, 3, 10),
    "16:1-4": (9, 4, 11),
    "32:1-16": (7, 4, 11),
    "32:1-8": (-6, 8, 3),
    "32:1-4": (-1, -1, 6),
}

KEYS = (
    "acceptance",
    "cpu_utilization",
    "mem_utilization",
    "net_utilization_tier1",
    "net_utilization_tier2",
    "net_utilization_tier3",
    "spread_server",
    "spread_rack",
    "spread_cluster",
    "spread_global",
    "mean_servers",
    "mean_runtime_s",
)


def sweep(
    servers: int = 64,
    requests: int = 128,
    seeds: int = 5,
    policies=POLICIES,
    names=NAMES,
    seed_base: int = 0,
    exact_time_limit_s: float = 1.0,
    quiet: bool = False,
    executor=None,
    csv_path=None,
) -> list[dict]:
    """One row per (topology, policy): means over ``seeds`` episodes; the (topology, policy)
    cells are the tasks of ``executor`` (default serial), and with ``csv_path`` each row is
    appended to that CSV as it arrives."""
    tasks = [
        (servers, name, policy, requests, seeds, seed_base, exact_time_limit_s)
        for name in names
        for policy in policies
    ]
    rows = []
    csv_rows = CsvRows(csv_path) if csv_path else None
    try:
        for row in (executor or make_executor(1)).map(
            sweep_cell, tasks, desc=f"{servers} servers", quiet=quiet
        ):
            if not isinstance(row, TaskFailure):
                rows.append(row)
                if csv_rows:
                    csv_rows.write(row)
    finally:
        if csv_rows:
            csv_rows.close()
    return rows


def sweep_cell(servers, name, policy, requests, seeds, seed_base, exact_time_limit_s) -> dict:
    """One (topology, policy) cell of :func:`sweep` (a task of the executor): one row."""
    topology = paper_topology(name, servers)
    options = {"time_limit_s": exact_time_limit_s} if policy == "exact" else {}
    start = time.perf_counter()
    out = evaluate(
        topology,
        lambda: make("network", policy, **options),
        requests=requests,
        seeds=seeds,
        seed_base=seed_base,
    )
    row = {
        "servers": servers,
        "topology": name,
        "policy": policy,
        "requests": requests,
        "seeds": seeds,
    } | {k: getattr(out, k) for k in KEYS}
    row["wall_s"] = time.perf_counter() - start
    if policy == "exact":
        infos = [ep.info for ep in out.episodes]
        row["exact_not_optimal"] = sum(i.get("feasible", 0) + i.get("time_limit", 0) for i in infos)
    return row


def best_baselines(rows: list[dict], policies=HEURISTICS) -> list[dict]:
    """Per topology: the best heuristic by acceptance (as Table 2 compares against), beside the
    paper's RL gain over the best baseline."""
    out = []
    for name in dict.fromkeys(r["topology"] for r in rows):
        mine = [r for r in rows if r["topology"] == name and r["policy"] in policies]
        best = max(mine, key=lambda r: r["acceptance"])
        exact = next((r for r in rows if r["topology"] == name and r["policy"] == "exact"), None)
        learned = next((r for r in rows if r["topology"] == name and r["policy"] == "gnn"), None)
        acc, cpu, mem = PAPER_TABLE2[name]
        row = {
            "topology": name,
            "best_heuristic": best["policy"],
            "acceptance": best["acceptance"],
            "cpu_utilization": best["cpu_utilization"],
            "mem_utilization": best["mem_utilization"],
            "exact_over_best_pct": (
                100 * (exact["acceptance"] / best["acceptance"] - 1)
                if exact and best["acceptance"]
                else None
            ),
        }
        if learned:
            for key in ("acceptance", "cpu_utilization", "mem_utilization"):
                row[f"gnn_{key}_over_best_pct"] = (
                    100 * (learned[key] / best[key] - 1) if best[key] else None
                )
        out.append(row | {"paper_rl_over_best": f"{acc}, {cpu}, {mem}"})
    return out


def scaling(small: list[dict], large: list[dict], policy: str = "gnn") -> list[dict]:
    """The policy's change from 64 to 1024 servers per topology, % (the paper's Table 3)."""
    out = []
    for name in dict.fromkeys(r["topology"] for r in large if r["policy"] == policy):
        a = next((r for r in small if r["topology"] == name and r["policy"] == policy), None)
        b = next(r for r in large if r["topology"] == name and r["policy"] == policy)
        if a is None:
            continue
        row = {"topology": name}
        for key in ("acceptance", "cpu_utilization", "mem_utilization"):
            row[f"{key}_64"], row[f"{key}_1024"] = a[key], b[key]
            row[f"{key}_change_pct"] = 100 * (b[key] / a[key] - 1) if a[key] else None
        acc, cpu, mem = PAPER_TABLE3[name]
        out.append(row | {"paper_change": f"{acc}, {cpu}, {mem}"})
    return out


def time_gnn_choice(
    name: str = "8:1-16", servers: int = 1024, requests: int = 200, seed: int = 0
) -> dict:
    """Seconds per server choice of the shipped gnn on one CPU thread (torch and Numba), over the
    first ``requests`` requests of an episode: the whole ``choose`` (features + network + mask)."""
    import time as clock

    import torch

    from tjap.placement.network import Requests, run_episode

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        topology = paper_topology(name, servers)
        policy = make("network", "gnn")
        reqs = Requests.generate(topology, requests, seed)
        run_episode(topology, Requests.generate(topology, 5, seed + 1), policy)  # warm-up
        times = []
        choose = policy.choose

        def timed(engine):
            tick = clock.perf_counter()
            out = choose(engine)
            times.append(clock.perf_counter() - tick)
            return out

        policy.choose = timed
        run_episode(topology, reqs, policy)
    finally:
        torch.set_num_threads(threads)
    times = np.asarray(times)
    return {
        "topology": name,
        "servers": servers,
        "choices": int(times.size),
        "mean_ms": 1e3 * float(times.mean()),
        "median_ms": 1e3 * float(np.median(times)),
        "p99_ms": 1e3 * float(np.quantile(times, 0.99)),
        "max_ms": 1e3 * float(times.max()),
    }


def pivot(rows: list[dict], key: str, policies) -> list[dict]:
    """Topologies as rows, policies as columns, values of ``key``."""
    table = []
    for name in dict.fromkeys(r["topology"] for r in rows):
        row = {"topology": name}
        for r in rows:
            if r["topology"] == name and r["policy"] in policies:
                row[r["policy"]] = r[key]
        table.append(row)
    return table


def plot_tiers(rows: list[dict], path: Path, title: str = "") -> Path:
    """Channel utilisation of tiers 1, 2 and 3 per topology and policy (the paper's Fig. 3)."""
    plt = pyplot()
    names = list(dict.fromkeys(r["topology"] for r in rows))
    labels = [n.replace(":", "\n") for n in names]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    for tier, ax in enumerate(axes, start=1):
        for policy in dict.fromkeys(r["policy"] for r in rows):
            values = [
                next(
                    r[f"net_utilization_tier{tier}"]
                    for r in rows
                    if r["topology"] == n and r["policy"] == policy
                )
                for n in names
            ]
            ax.plot(range(len(names)), values, marker="o", label=policy, color=COLOURS.get(policy))
        ax.set_xticks(range(len(names)), labels, fontsize=8)
        ax.set_title(f"tier-{tier} channel utilisation")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    axes[0].set_xlabel("channels per tier-1 link : oversubscription")
    if title:
        fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def build_parser() -> argparse.ArgumentParser:
    p = parser("network", __doc__)
    p.add_argument("--seeds", type=int, default=5, help="episodes per cell (default 5)")
    p.add_argument("--requests", type=int, default=128)
    p.add_argument(
        "--seed",
        "--seed-base",
        dest="seed_base",
        type=int,
        default=0,
        help="the first episode's seed (default 0; the others follow it)",
    )
    p.add_argument("--exact-time-limit", type=float, default=1.0, metavar="S")
    p.add_argument(
        "--large-requests",
        type=int,
        default=2048,
        help="requests per 1024-server episode (the paper: 2048; 0 skips them)",
    )
    p.add_argument("--large-seeds", type=int, default=2)
    add_out(p, "CSV and PNG")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true")
    add_executor_arguments(p)
    return p


@one_line_errors
def main(argv=None) -> int:
    """Run the sweeps and the timing; print the tables (or, with ``--json``, everything)."""
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    executor = executor_from_args(args)
    start = time.perf_counter()
    small = sweep(
        64,
        args.requests,
        args.seeds,
        POLICIES,
        seed_base=args.seed_base,
        exact_time_limit_s=args.exact_time_limit,
        quiet=args.quiet,
        executor=executor,
        csv_path=out / "network_64.csv",
    )
    small_s = time.perf_counter() - start
    files = {
        "csv_64": str(out / "network_64.csv"),
        "png_64": str(
            plot_tiers(
                small,
                out / "network_tiers_64.png",
                f"64 servers, {args.requests} requests, {args.seeds} seeds",
            )
        ),
    }
    large = []
    if args.large_requests > 0:
        large = sweep(
            1024,
            args.large_requests,
            args.large_seeds,
            LARGE_POLICIES,
            seed_base=args.seed_base,
            quiet=args.quiet,
            executor=executor,
            csv_path=out / "network_1024.csv",
        )
        files["csv_1024"] = str(out / "network_1024.csv")
        files["png_1024"] = str(
            plot_tiers(
                large,
                out / "network_tiers_1024.png",
                f"1024 servers, {args.large_requests} requests, {args.large_seeds} seeds",
            )
        )
    timing = time_gnn_choice()
    summary = {
        "small": small,
        "large": large,
        "best": best_baselines(small),
        "scaling": scaling(small, large),
        "gnn_choice_time": timing,
        "files": files,
        "small_wall_s": small_s,
        "total_wall_s": time.perf_counter() - start,
        "machine": f"{platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}",
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    for key in ("acceptance", "cpu_utilization", "mem_utilization"):
        print(f"\n{key}, 64 servers ({args.requests} requests x {args.seeds} seeds)")
        print(
            format_table(
                pivot(small, key, POLICIES), [("topology", "")] + [(p, ".3f") for p in POLICIES]
            )
        )
    for tier in (1, 2, 3):
        print(f"\ntier-{tier} channel utilisation, 64 servers")
        print(
            format_table(
                pivot(small, f"net_utilization_tier{tier}", POLICIES),
                [("topology", "")] + [(p, ".3f") for p in POLICIES],
            )
        )
    print(
        "\nbest heuristic per topology, beside the paper's RL gain over the best baseline "
        "(Table 2: acceptance, CPU, memory %)"
    )
    print(
        format_table(
            summary["best"],
            [
                ("topology", ""),
                ("best_heuristic", ""),
                ("acceptance", ".3f"),
                ("cpu_utilization", ".3f"),
                ("mem_utilization", ".3f"),
                ("exact_over_best_pct", "+.1f"),
                ("gnn_acceptance_over_best_pct", "+.1f"),
                ("gnn_cpu_utilization_over_best_pct", "+.1f"),
                ("gnn_mem_utilization_over_best_pct", "+.1f"),
                ("paper_rl_over_best", ""),
            ],
        )
    )
    if large:
        for key in ("acceptance", "cpu_utilization", "mem_utilization"):
            print(
                f"\n{key}, 1024 servers ({args.large_requests} requests x {args.large_seeds} seeds)"
            )
            print(
                format_table(
                    pivot(large, key, LARGE_POLICIES),
                    [("topology", "")] + [(p, ".3f") for p in LARGE_POLICIES],
                )
            )
        print("\ngnn from 64 to 1024 servers (no retraining), change %, beside the paper's Table 3")
        print(
            format_table(
                summary["scaling"],
                [
                    ("topology", ""),
                    ("acceptance_64", ".3f"),
                    ("acceptance_1024", ".3f"),
                    ("acceptance_change_pct", "+.1f"),
                    ("cpu_utilization_change_pct", "+.1f"),
                    ("mem_utilization_change_pct", "+.1f"),
                    ("paper_change", ""),
                ],
            )
        )
    print(
        f"\ngnn time per server choice, {timing['servers']} servers ({timing['topology']}), "
        f"one thread, {timing['choices']} choices: mean {timing['mean_ms']:.3f} ms, median "
        f"{timing['median_ms']:.3f} ms, p99 {timing['p99_ms']:.3f} ms, max "
        f"{timing['max_ms']:.3f} ms"
    )
    print(
        f"\n64-server sweep {small_s:.0f} s, total {summary['total_wall_s']:.0f} s; files: "
        + ", ".join(files.values())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
