"""``tjap bench exact``: the exact solvers on the paper's stream or on your own cluster's tree
(``--topology FILE``), a table, CSV and figure under ``--out`` (default ``benchmarks/out``).

A ``tjap`` command is what a user runs on their own cluster or data. The paper reproductions and
the studies live in the repository's ``benchmarks/`` folder, each run as ``python -m
benchmarks.NAME`` from a clone; ``tjap bench table3`` and the others that moved there answer with
one line naming the command that runs them now (exit 2).
"""

from __future__ import annotations

from tjap.cli.common import (
    add_common,
    add_executor_arguments,
    cap,
    check_output,
    positive,
    print_json,
)
from tjap.cli.tree import (
    add_constraints_option,
    add_workload_options,
    read_workload,
    workload_fields,
)

#: The experiments that moved to the repository's benchmarks/: name -> (what it is, its command).
MOVED = {
    "table3": ("a paper reproduction", "python -m benchmarks.sa_tables table3"),
    "table4": ("a paper reproduction", "python -m benchmarks.sa_tables table4"),
    "nsa": ("a paper reproduction", "python -m benchmarks.sa_tables nsa"),
    "online": ("a paper reproduction", "python -m benchmarks.online"),
    "batch": ("a study of the batch simulator", "python -m benchmarks.batch_sim"),
}


def moved_message(name: str) -> str:
    """The one line ``tjap bench NAME`` answers for an experiment in :data:`MOVED`."""
    what, command = MOVED[name]
    return (
        f"tjap bench {name} is {what}: run {command} ... from a clone of the repository "
        "(same options; see benchmarks/README.md)"
    )


def moved_experiment(argv: list) -> str | None:
    """The one line for ``tjap bench NAME ...`` when NAME moved to benchmarks/ (else None);
    checked before parsing, so that any options after NAME are ignored."""
    if len(argv) >= 2 and argv[0] == "bench" and argv[1] in MOVED:
        return moved_message(argv[1])
    return None


def add_parser(sub) -> None:
    """Add ``bench exact`` to the ``tjap`` parser."""
    p = sub.add_parser("bench", help="exact solvers on the paper's stream or your cluster's tree")
    bench = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    b = bench.add_parser(
        "exact",
        help="exact SCAS solvers on the paper's stream",
        description="dp, SCIP, CP-SAT, the paper formulation and the free-form "
        "optimum on the same windows; table, CSV and PNG. With "
        "--topology FILE: dp, SCIP, slurm-tree and the free-form "
        "bound on your cluster's tree, with dp's peak memory. With "
        "--topology FILE --constraints MIX: windows of jobs with "
        "constraints (segment, within, exclusive) on your loaded "
        "cluster: dp, SCIP, CP-SAT, the free-form bound and the "
        "schedulers' own rules (slurm-block, kueue-bestfit, "
        "kueue-leastfree) where they take constraints, with the "
        "whole idle base blocks each leaves, the windows where it "
        "left a job unplaced and the jobs whose constraints it "
        "broke.",
    )
    b.add_argument(
        "--num-windows",
        type=positive(int),
        default=200,
        metavar="N",
        help="windows of the stream solved (default 200)",
    )
    b.add_argument(
        "--layout",
        choices=("paper", "published"),
        default="paper",
        help="paper (default): k=20, 10 pods of 100; published: the authors' 25 pods of 40",
    )
    b.add_argument(
        "--topology",
        default=None,
        metavar="FILE",
        help="a Slurm topology.conf or JSON tree: the stream on that cluster instead of --layout",
    )
    b.add_argument(
        "--warmup",
        type=int,
        default=None,
        metavar="N",
        help="with --topology: windows replayed before the first one kept (default: "
        "one mean job runtime's worth, so the cluster is loaded)",
    )
    b.add_argument(
        "--bound",
        choices=("freeform", "per-job"),
        default="freeform",
        help="with --topology: the lower bound beside the methods: the free-form "
        "model's (default) or each job's best node set alone (per-job: cheap, "
        "for trees of tens of thousands of nodes)",
    )
    add_constraints_option(b)
    b.add_argument(
        "--time-limit",
        type=positive(float),
        default=None,
        metavar="S",
        help="with --constraints: time limit of SCIP and CP-SAT per window, in "
        "seconds (default none); runs it cuts short count in cut_short",
    )
    b.add_argument(
        "--convention",
        choices=("paper", "published"),
        default="paper",
        help="cost convention (default paper)",
    )
    b.add_argument(
        "--cap", type=cap, default=5, help="most multi-node jobs per window (default 5; 'none')"
    )
    b.add_argument(
        "--freeform-time-limit",
        type=positive(float),
        default=2.0,
        metavar="S",
        help="time limit of the free-form model per window, in seconds (default 2)",
    )
    b.add_argument(
        "--paper-windows",
        type=int,
        default=20,
        help="windows also solved with the paper's formulation (default 20)",
    )
    b.add_argument(
        "--paper-time-limit",
        type=positive(float),
        default=10.0,
        metavar="S",
        help="time limit of the paper's formulation per window, in seconds (default 10)",
    )
    add_workload_options(b)
    b.add_argument(
        "--out",
        default="benchmarks/out",
        metavar="DIR",
        help="folder for CSV and PNG (default benchmarks/out; created if missing)",
    )
    add_common(b)
    add_executor_arguments(b, default_workers=1)  # rows carry solver times

    p.set_defaults(run=cmd_bench)


def cmd_bench(args) -> int:
    """``tjap bench exact``: run :func:`tjap.bench.main`, print its table or JSON."""
    from tjap import bench
    from tjap.placement.tree.fat_tree import FatTree

    check_output(args.out, "--out", folder=True)  # before the work: a bad folder fails now
    nodes = FatTree.from_layout(args.layout).num_nodes
    if args.topology and args.workload is not None:  # the tree's size, for --workload's check
        from tjap.placement.tree.topology import Topology

        nodes = Topology.from_file(args.topology).num_nodes
    workload, report = read_workload(args, nodes)
    out = bench.main(args, workload)
    if args.json:
        print_json({k: v for k, v in out.items() if k != "table"} | workload_fields(args, report))
    else:
        where = (
            f"{out['layout']} ({out['nodes']} nodes)"
            if "topology" in out
            else f"{out['layout']} layout"
        )
        jobs = f", workload {report.summary()}" if report is not None else ""
        what = "windows with job constraints" if "mix" in out else "windows"
        print(
            f"exact SCAS on {out['num_windows']} {what}, {where}{jobs}, "
            f"{out['convention']} cost, cap {out['cap']}, seed {out['seed']}"
        )
        print(out["table"])
        if "mix" in out:
            print(
                "jobs: "
                + ", ".join(f"{k} {v:.0%}" for k, v in out["mix"].items())
                + "; cost_vs_dp and free_blocks on the windows every method places "
                "(all_place); peak RSS of this process: "
                f"{out['max_rss_mb']:.0f} MB"
            )
            for note in out["notes"]:
                print(note)
        elif "topology" in out:
            print(
                f"lower bound: {out['bound']}; peak RSS of this process: {out['max_rss_mb']:.0f} MB"
            )
        print("files: " + ", ".join(out["files"].values()))
    return 0
