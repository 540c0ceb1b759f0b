"""``tjap interference ...``: seed 001's interference-aware placement commands.

``tjap interference evaluate --topology fattree --k 20 --arch pcie --arrivals uniform
--policy tetris --seed 0 --json`` generates a workload (15 jobs per interval per scheduler over
``--intervals`` intervals), runs it on the cluster under the policy until every job finished and
prints the average JCT (in 30-minute intervals) with the run's other measures.
``tjap interference fit`` prints the Table III prediction errors on generated samples.
"""

from __future__ import annotations

from tjap.cli.common import add_common, int_in, print_json
from tjap.core.errors import MAX_SEED, InvalidInputError

#: The summary keys that describe the run rather than measure it (not printed as rows).
_SETTING_KEYS = ("policy", "cluster", "servers", "schedulers", "arrivals", "rate", "seed", "seeds")


def add_parser(sub) -> None:
    """Add ``interference`` and its subcommands (``evaluate``, ``fit``) to the ``tjap`` parser."""
    from tjap.cli.common import add_executor_arguments
    from tjap.placement.interference.cluster import ARCHS, TOPOLOGIES
    from tjap.placement.interference.jobs import ARRIVALS
    from tjap.registry import methods

    p = sub.add_parser(
        "interference", help="interference-aware placement in GPU clusters (seed 001)"
    )
    what = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    e = what.add_parser(
        "evaluate",
        help="average JCT of a placement policy on a simulated cluster",
        description="Generate jobs arriving at every scheduler, place them with a policy, "
        "simulate 30-minute intervals until all finish, print the average JCT.",
    )
    e.add_argument(
        "--topology",
        default="fattree",
        choices=TOPOLOGIES,
        help="cluster topology (default fattree)",
    )
    e.add_argument(
        "--k",
        type=int_in(1, 64),
        default=None,
        help="size: fat-tree ports, VL2 aggregation switches, BCube levels, racks (defaults "
        "20, 20, 3, 2)",
    )
    e.add_argument(
        "--n", type=int_in(2, 16), default=6,
        help="BCube switch ports, servers per rack of racks (default 6)",
    )  # fmt: skip
    e.add_argument(
        "--arch", default="pcie", choices=ARCHS, help="server architecture (default pcie)"
    )
    e.add_argument(
        "--arrivals", default="uniform", choices=ARRIVALS, help="arrival pattern (default uniform)"
    )
    e.add_argument(
        "--trace",
        default=None,
        metavar="PATH",
        help="trace for --arrivals trace (SWF or sacct; default: the bundled LS6 "
        "A100 trace, placement/batch/data/ls6-a100.tsv)",
    )
    e.add_argument(
        "--rate",
        type=float,
        default=None,
        help="mean jobs per interval per scheduler (default 15 per 100 servers of a "
        "partition: 15 on the 2000-server clusters, as the paper)",
    )
    e.add_argument(
        "--intervals",
        type=int_in(1, 10000),
        default=48,
        help="intervals with arrivals (default 48: one day)",
    )
    e.add_argument(
        "--no-drain",
        action="store_true",
        help="stop after the last arrival interval instead of running every job to "
        "completion (avg_jct then covers the completed jobs only)",
    )
    e.add_argument(
        "--policy",
        default="tetris",
        help=f"one of {', '.join(methods('interference'))} (default tetris)",
    )
    e.add_argument(
        "--iterations",
        type=int_in(0, 10**7),
        default=2000,
        help="opt: annealing moves per batch (default 2000)",
    )
    e.add_argument(
        "--opt-start",
        default="tetris",
        choices=("tetris", "lb", "lif", "random", "whole"),
        help="opt: the plans the annealing starts from (default tetris)",
    )
    e.add_argument(
        "--weights",
        default=None,
        metavar="PATH",
        help="marl, single, marl-server: trained weights (.json; default "
        "learned/weights/interference_marl.json, interference_single.json, "
        "interference_marl_server.json)",
    )
    e.add_argument(
        "--seeds",
        type=int_in(1, 10**5),
        default=1,
        help="runs seeded --seed .. --seed + seeds - 1, one task each on --workers "
        "or --ray; prints their means (default 1)",
    )
    add_common(e)
    add_executor_arguments(e)
    f = what.add_parser(
        "fit",
        help="Table III: interference-model errors on held-out samples",
        description="Fit Linear, Quad and the paper's model to generated "
        "co-location samples and print their held-out errors.",
    )
    f.add_argument("--samples", type=int_in(8, 10**6), default=480, help="samples (default 480)")
    f.add_argument("--noise", type=float, default=0.1, help="relative noise (default 0.1)")
    f.add_argument("--seed", type=int_in(0, MAX_SEED), default=0, help="random seed (default 0)")
    f.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    """Run a ``tjap interference`` subcommand; returns the exit code."""
    if args.what == "fit":
        return _fit(args)
    if args.what != "evaluate":
        raise InvalidInputError(f"unknown interference command {args.what!r}")
    return _evaluate(args)


def _fit(args) -> int:
    from tjap.placement.interference.model import error_table

    rows = error_table(args.samples, args.seed, noise=args.noise)
    if args.json:
        print_json(rows)
        return 0
    print(f"{'model':14s} {'train':>7s} {'test':>7s} {'paper':>7s}")
    for r in rows:
        print(
            f"{r['model']:14s} {r['train_error']:7.1%} {r['test_error']:7.1%} "
            f"{r['paper_error']:7.1%}"
        )
    return 0


def policy_options(args) -> dict:
    """The options of ``--policy`` from the flags (``--iterations``, ``--opt-start``,
    ``--weights``), each refused with a one-line error where the policy does not take it."""
    from tjap.registry import get, methods

    if args.policy not in methods("interference"):
        raise InvalidInputError(
            f"unknown policy {args.policy!r}; choose one of {', '.join(methods('interference'))}"
        )
    learned = get("interference", args.policy).learned
    if args.weights is not None and not learned:
        raise InvalidInputError("--weights needs --policy marl or single or marl-server")
    if args.opt_start != "tetris" and args.policy != "opt":
        raise InvalidInputError("--opt-start needs --policy opt")
    if args.policy == "opt":
        return {"iterations": args.iterations, "start": args.opt_start}
    return {"weights": args.weights} if learned else {}


def _evaluate(args) -> int:
    from tjap.core.executor import progress
    from tjap.placement.interference import Workload, default_rate, make_cluster, simulate
    from tjap.registry import get, make

    options = policy_options(args)
    if args.trace is not None and args.arrivals != "trace":
        raise InvalidInputError("--trace needs --arrivals trace")
    if args.rate is not None and not 0 < args.rate <= 1000:
        raise InvalidInputError(f"--rate must be in (0, 1000] jobs per interval, got {args.rate}")
    cluster = make_cluster(args.topology, args.k, args.arch, args.n)
    rate = args.rate if args.rate is not None else default_rate(cluster)
    workload = Workload.generate(
        cluster.num_partitions,
        args.intervals,
        args.arrivals,
        args.seed,
        rate=rate,
        trace=args.trace,
    )
    _check_jobs(args, len(workload.arrival), args.seed, cluster, rate)
    policy = make("interference", args.policy, **options)  # bad options fail before any run
    if args.seeds > 1:
        return _evaluate_seeds(args, cluster, rate, options)
    if get("interference", args.policy).needs_torch:  # a small network per decision
        import torch

        torch.set_num_threads(1)
    result = simulate(
        cluster,
        workload,
        policy,
        seed=args.seed,
        drain=not args.no_drain,
        progress=lambda steps: progress(steps, desc=args.policy, quiet=args.quiet),
    )
    summary = result.summary() | _setting(args, cluster, rate)
    _print(args, summary, f"seed {args.seed}")
    return 0


def _check_jobs(args, jobs: int, seed: int, cluster, rate: float) -> None:
    """No job arrived: an evaluation of nothing is an error, not a row of zeros."""
    if jobs == 0:
        raise InvalidInputError(
            f"no job arrives in {args.intervals} interval(s) at {rate:g} jobs per interval per "
            f"scheduler ({cluster.num_partitions} schedulers, {args.arrivals} arrivals, seed "
            f"{seed}): nothing to evaluate; raise --rate or --intervals"
        )


def _setting(args, cluster, rate) -> dict:
    return {
        "policy": args.policy,
        "cluster": cluster.name,
        "servers": cluster.num_servers,
        "schedulers": cluster.num_partitions,
        "arrivals": args.arrivals,
        "rate": rate,
        "seed": args.seed,
    }


def _print(args, summary: dict, runs: str) -> None:
    if args.json:
        print_json(summary)
        return
    print(
        f"{args.policy} on {summary['cluster']} ({summary['servers']} servers, "
        f"{summary['schedulers']} schedulers), {args.arrivals} arrivals, {runs}"
    )
    for key, value in summary.items():
        if key not in _SETTING_KEYS:
            print(
                f"  {key:16s} {value:.4f}" if isinstance(value, float) else f"  {key:16s} {value}"
            )


def run_seed(
    topology, k, arch, n, intervals, arrivals, trace, rate, drain, policy, options, seed
) -> dict:
    """One seeded run's summary (a picklable task for the executor)."""
    from tjap.placement.interference import Workload, make_cluster, simulate
    from tjap.registry import make

    cluster = make_cluster(topology, k, arch, n)
    workload = Workload.generate(
        cluster.num_partitions, intervals, arrivals, seed, rate=rate, trace=trace
    )
    return simulate(
        cluster, workload, make("interference", policy, **options), seed=seed, drain=drain
    ).summary()


def _evaluate_seeds(args, cluster, rate, options) -> int:
    """``--seeds N``: one run per seed on the executor, means over the seeds."""
    from tjap.cli.common import executor_from_args
    from tjap.core.executor import TaskFailure

    tasks = [
        (
            args.topology,
            args.k,
            args.arch,
            args.n,
            args.intervals,
            args.arrivals,
            args.trace,
            rate,
            not args.no_drain,
            args.policy,
            options,
            seed,
        )
        for seed in range(args.seed, args.seed + args.seeds)
    ]
    results = list(
        executor_from_args(args).map(run_seed, tasks, desc=args.policy, quiet=args.quiet)
    )
    runs = [r for r in results if not isinstance(r, TaskFailure)]
    if not runs:
        raise InvalidInputError("every run failed (listed above); rerun with --workers 1 to debug")
    for seed, run in zip(range(args.seed, args.seed + args.seeds), results):
        if not isinstance(run, TaskFailure):
            _check_jobs(args, run["jobs"], seed, cluster, rate)
    keys = [key for key, value in runs[0].items() if isinstance(value, (int, float))]
    summary = {key: sum(r[key] for r in runs) / len(runs) for key in keys}
    summary |= _setting(args, cluster, rate) | {"seeds": len(runs)}
    _print(args, summary, f"means over {len(runs)} seeds from {args.seed}")
    return 0 if len(runs) == args.seeds else 1
