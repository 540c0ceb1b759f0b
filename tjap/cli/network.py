"""``tjap network ...``: seed 003's network-aware allocation commands.

``tjap network evaluate --topology 8:1-16 --servers 64 --policy tetris --requests 128 --seeds 5``
runs episodes seeded ``--seed`` .. ``--seed + seeds - 1`` (every policy sees the same requests) and
prints the means (:class:`tjap.placement.network.NetworkEvaluation`): acceptance, CPU and memory
utilization, channel utilization per tier and how spread the accepted requests were. The
episodes run as tasks of the sweep executor (``--workers N``, default one process per core;
``--ray ADDRESS``); the figures do not depend on it.
"""

from __future__ import annotations

import argparse
import sys

from tjap.cli.common import add_common, add_executor_arguments, positive, print_json
from tjap.core.errors import InvalidInputError


def add_parser(sub) -> None:
    """Add ``network`` and its subcommands to the ``tjap`` parser's ``sub``."""
    from tjap.registry import methods

    p = sub.add_parser("network", help="network-aware allocation in a three-tier DCN (seed 003)")
    what = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    e = what.add_parser(
        "evaluate",
        help="run a policy on one topology over several seeds",
        description="Serve request episodes (one arrival per tick, offered load --load, "
        "default 0.95) on one of the paper's topologies with a policy and print the "
        "means over seeds.",
    )
    e.add_argument(
        "--topology",
        default="8:1-16",
        help="channels per tier-1 link and oversubscription, 'n:1-o' with o in 16, 8, 4 "
        "(the paper: n in 8, 16, 32; default 8:1-16)",
    )
    e.add_argument(
        "--servers",
        type=int,
        default=64,
        choices=(64, 1024),
        help="64 (2 clusters x 2 racks x 16) or 1024 (4 x 16 x 16); default 64",
    )
    e.add_argument(
        "--policy",
        default="tetris",
        help=f"one of {', '.join(methods('network'))} (exact: CP-SAT per request, "
        "64 servers only; gnn: the learned allocator, any size); default tetris",
    )
    e.add_argument(
        "--requests",
        type=positive(int, 1e7),
        default=128,
        help="requests per episode (default 128; the paper used 2048 on 1024 servers)",
    )
    e.add_argument("--seeds", type=positive(int, 1e7), default=5, help="episodes (default 5)")
    e.add_argument(
        "--max-servers",
        type=positive(int, 1e7),
        default=8,
        help="largest request in full servers (default 8)",
    )
    e.add_argument(
        "--load", type=positive(float, 1e6), default=0.95, help="offered load (default 0.95)"
    )
    e.add_argument(
        "--time-limit",
        type=positive(float, 1e6),
        default=None,
        metavar="S",
        help="exact: CP-SAT time limit per request in seconds (default 1)",
    )
    e.add_argument(
        "--weights",
        default=None,
        metavar="JSON",
        help="gnn: trained weights (default: the shipped learned/weights/network_gnn.json)",
    )
    e.add_argument("--per-seed", action="store_true", help="also print each episode")
    add_common(e)
    e.add_argument(
        "--seed-base",
        dest="seed",
        type=int,
        default=argparse.SUPPRESS,
        help="the same as --seed: the first episode's seed",
    )
    add_executor_arguments(e)
    p.set_defaults(run=run)


def run(args) -> int:
    """Run a ``tjap network`` subcommand; returns the exit code."""
    from tjap.cli.common import executor_from_args
    from tjap.core.executor import TaskFailure, progress
    from tjap.placement.network import NetworkEvaluation, Requests, evaluate, paper_topology
    from tjap.registry import make

    if args.what != "evaluate":
        raise InvalidInputError(f"unknown network command {args.what!r}")
    if args.policy == "exact" and args.servers != 64:
        raise InvalidInputError(
            "the exact policy is for the 64-server topologies; use --servers 64 or another policy"
        )
    topology = paper_topology(args.topology, args.servers)
    options = {
        name: value
        for name, value in (("time_limit_s", args.time_limit), ("weights", args.weights))
        if value is not None
    }
    make("network", args.policy, **options)  # fail on a bad name or option before any episode
    Requests.generate(topology, 1, args.seed, max_servers=args.max_servers, load=args.load)
    seeds = range(args.seed, args.seed + args.seeds)
    executor = executor_from_args(args)
    if executor.backend == "serial":
        evaluation = evaluate(
            topology,
            lambda: make("network", args.policy, **options),
            requests=args.requests,
            seeds=args.seeds,
            seed_base=args.seed,
            max_servers=args.max_servers,
            load=args.load,
            progress=lambda s: progress(s, total=args.seeds, desc=args.policy, quiet=args.quiet),
        )
    else:  # one task per seed; the same means as evaluate's over the same episodes
        tasks = [
            (
                args.topology,
                args.servers,
                args.policy,
                options,
                args.requests,
                seed,
                args.max_servers,
                args.load,
            )
            for seed in seeds
        ]
        runs = list(executor.map(episode, tasks, desc=args.policy, quiet=args.quiet))
        if any(isinstance(r, TaskFailure) for r in runs):
            print(
                f"tjap: {len(executor.failures)} of {args.seeds} episodes failed (listed "
                "above); rerun with --workers 1 to debug",
                file=sys.stderr,
            )
            return 1
        evaluation = NetworkEvaluation.of(runs)
    summary = evaluation.summary()
    if args.per_seed:
        summary["episodes"] = [ep.summary() for ep in evaluation.episodes]
    if args.json:
        print_json(summary)
        return 0
    print(
        f"{evaluation.policy} on {topology.name} ({topology.num_servers} servers), "
        f"{args.requests} requests x {args.seeds} seeds from seed {args.seed}"
    )
    for key, value in summary.items():
        if key not in ("policy", "topology", "servers", "seeds", "seed_base", "episodes"):
            print(
                f"  {key:22s} {value:.4f}" if isinstance(value, float) else f"  {key:22s} {value}"
            )
    for ep in summary.get("episodes", []):
        print(
            f"  seed {ep['seed']}: acceptance {ep['acceptance']:.3f} cpu "
            f"{ep['cpu_utilization']:.3f} mem {ep['mem_utilization']:.3f}"
        )
    return 0


def episode(
    topology: str,
    servers: int,
    policy: str,
    options: dict,
    requests: int,
    seed: int,
    max_servers: int,
    load: float,
):
    """One seeded episode of ``tjap network evaluate`` (a picklable task for the executor)."""
    from tjap.placement.network import paper_topology
    from tjap.placement.network.episode import run_seeded
    from tjap.registry import make

    return run_seeded(
        paper_topology(topology, servers),
        lambda: make("network", policy, **options),
        seed,
        requests=requests,
        max_servers=max_servers,
        load=load,
    )
