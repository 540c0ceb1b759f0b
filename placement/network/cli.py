"""``tjap network ...``: the seed-003 network-aware allocation commands.

``tjap network evaluate --topology 8:1-16 --servers 64 --policy tetris --requests 128 --seeds 5``
runs episodes seeded ``--seed-base`` .. ``--seed-base + seeds - 1`` (every policy sees the same
requests) and prints the means: acceptance, CPU and memory utilisation, channel utilisation per
tier and how spread the accepted requests were. The episodes run as tasks of the sweep executor
(``--workers N``, default one process per core; ``--ray ADDRESS``); the figures do not depend on it.
"""

from __future__ import annotations

import argparse
import json
import sys

from tjap.errors import InvalidInputError
from tjap.executor import add_executor_arguments

POLICY_NAMES = ("tetris", "nalb", "nulb", "random", "exact", "gnn")


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if not 1 <= number <= 10**7:
        raise argparse.ArgumentTypeError(f"expected a positive integer up to 1e7, got {value!r}")
    return number


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}") from None
    if not 0 < number <= 1e6:
        raise argparse.ArgumentTypeError(f"expected a positive number up to 1e6, got {value!r}")
    return number


def add_parser(subparsers) -> None:
    """Add ``network`` and its subcommands to the ``tjap`` parser's ``subparsers``."""
    p = subparsers.add_parser("network", help="network-aware allocation in a three-tier DCN (seed 003)")
    sub = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    e = sub.add_parser(
        "evaluate", help="run a baseline policy on one topology over several seeds",
        description="Serve request episodes (one arrival per tick, 95%% offered load) on one of "
                    "the paper's topologies with a baseline policy and print the means over seeds.")
    e.add_argument("--topology", default="8:1-16",
                   help="channels per tier-1 link and oversubscription, 'n:1-o' with o in 16, 8, 4 "
                        "(the paper: n in 8, 16, 32; default 8:1-16)")
    e.add_argument("--servers", type=int, default=64, choices=(64, 1024),
                   help="64 (2 clusters x 2 racks x 16) or 1024 (4 x 16 x 16); default 64")
    e.add_argument("--policy", default="tetris", help=f"one of {', '.join(POLICY_NAMES)} "
                   "(exact: CP-SAT per request, 64 servers only; gnn: the learned allocator, "
                   "any size); default tetris")
    e.add_argument("--requests", type=_positive_int, default=128,
                   help="requests per episode (default 128; the paper used 2048 on 1024 servers)")
    e.add_argument("--seeds", type=_positive_int, default=5, help="episodes (default 5)")
    e.add_argument("--seed-base", "--seed", dest="seed_base", type=int, default=0,
                   help="seed of the first episode (default 0)")
    e.add_argument("--max-servers", type=_positive_int, default=8,
                   help="largest request in full servers (default 8)")
    e.add_argument("--load", type=_positive_float, default=0.95, help="offered load (default 0.95)")
    e.add_argument("--time-limit", type=_positive_float, default=1.0, metavar="S",
                   help="exact: CP-SAT time limit per request in seconds (default 1)")
    e.add_argument("--weights", default=None, metavar="JSON",
                   help="gnn: trained weights (default: the shipped learned/weights/network_gnn.json)")
    e.add_argument("--per-seed", action="store_true", help="also print each episode")
    e.add_argument("--json", action="store_true", help="print machine-readable JSON")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    add_executor_arguments(e)


def run(args) -> int:
    """Run a ``tjap network`` subcommand; returns the exit code."""
    import numpy as np

    from heuristics.network import make_policy
    from placement.network import Requests, evaluate, paper_topology
    from tjap.executor import TaskFailure, executor_from_args, progress

    if args.what != "evaluate":
        raise InvalidInputError(f"unknown network command {args.what!r}")
    if args.policy not in POLICY_NAMES:
        raise InvalidInputError(f"unknown policy {args.policy!r}; choose one of "
                                f"{', '.join(POLICY_NAMES)}")
    if args.policy == "exact" and args.servers != 64:
        raise InvalidInputError("the exact policy is for the 64-server topologies; use "
                                "--servers 64 or another policy")
    topology = paper_topology(args.topology, args.servers)
    options = {"time_limit_s": args.time_limit} if args.policy == "exact" else {}
    if args.policy == "gnn":
        options = {"weights": getattr(args, "weights", None)}
    elif getattr(args, "weights", None):
        raise InvalidInputError("--weights is for --policy gnn")
    make_policy(args.policy, **options)  # fail on bad options before any episode
    Requests.generate(topology, 1, args.seed_base, max_servers=args.max_servers, load=args.load)
    executor = executor_from_args(args)
    if executor.backend == "serial":
        summary = evaluate(topology, lambda: make_policy(args.policy, **options),
                           requests=args.requests, seeds=args.seeds, seed_base=args.seed_base,
                           max_servers=args.max_servers, load=args.load,
                           progress=lambda seeds: progress(seeds, total=args.seeds,
                                                           desc=args.policy, quiet=args.quiet))
    else:   # one task per seed; the same means as evaluate's over the same episodes
        tasks = [(args.topology, args.servers, args.policy, options, args.requests, seed,
                  args.max_servers, args.load)
                 for seed in range(args.seed_base, args.seed_base + args.seeds)]
        runs = list(executor.map(episode, tasks, desc=args.policy, quiet=args.quiet))
        if any(isinstance(r, TaskFailure) for r in runs):
            print(f"tjap: {len(executor.failures)} of {args.seeds} episodes failed (listed "
                  "above); rerun with --workers 1 to debug", file=sys.stderr)
            return 1
        keys = [k for k, v in runs[0].items() if isinstance(v, (int, float)) and k != "seed"]
        summary = {k: float(np.mean([r[k] for r in runs])) for k in keys}
        summary |= {"requests": args.requests, "policy": runs[0]["policy"],
                    "topology": topology.name, "servers": topology.num_servers,
                    "seeds": args.seeds, "seed_base": args.seed_base, "episodes": runs}
    episodes = summary.pop("episodes")
    for ep in episodes:
        ep.pop("policy", None)
    if args.per_seed:
        summary["episodes"] = episodes
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=False))
        return 0
    print(f"{args.policy} on {topology.name} ({topology.num_servers} servers), "
          f"{args.requests} requests x {args.seeds} seeds from seed {args.seed_base}")
    for key, value in summary.items():
        if key not in ("policy", "topology", "servers", "seeds", "seed_base", "episodes"):
            print(f"  {key:16s} {value:.4f}" if isinstance(value, float) else f"  {key:16s} {value}")
    if args.per_seed:
        for ep in episodes:
            print(f"  seed {ep['seed']}: acceptance {ep['acceptance']:.3f} cpu {ep['cpu_util']:.3f} "
                  f"mem {ep['mem_util']:.3f}")
    return 0


def episode(topology: str, servers: int, policy: str, options: dict, requests: int, seed: int,
            max_servers: int, load: float) -> dict:
    """One seeded episode's summary (a picklable task for the executor), with the policy's name."""
    from heuristics.network import make_policy
    from placement.network import evaluate, paper_topology

    out = evaluate(paper_topology(topology, servers), lambda: make_policy(policy, **options),
                   requests=requests, seeds=1, seed_base=seed, max_servers=max_servers, load=load)
    return out["episodes"][0] | {"policy": out["policy"]}
