"""``tjap bench ...``: the experiments a user can re-run, each a table, CSV and figure under
``--out`` (default ``benchmarks/out``): seed 002's exact solvers, Tables III/IV,
NSA against SA, the window policy against FCFS/EASY, and the batch simulator on a trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tjap.cli.common import add_common, cap, check_output, count, positive, print_json
from tjap.cli.tree import add_workload_options, read_workload, workload_fields
from tjap.errors import TjapError
from tjap.executor import add_executor_arguments, executor_from_args


def add_parser(sub) -> None:
    """Add ``bench`` and its experiments to the ``tjap`` parser."""
    p = sub.add_parser("bench", help="run a benchmark")
    bench = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    b = bench.add_parser("exact", help="exact SCAS solvers on the paper's stream",
                         description="dp, SCIP, CP-SAT, the paper formulation and the free-form "
                                     "optimum on the same windows; table, CSV and PNG. With "
                                     "--topology FILE: dp, SCIP, slurm-tree and the free-form "
                                     "bound on your cluster's tree, with dp's peak memory.")
    b.add_argument("--num-windows", type=positive(int), default=200, metavar="N",
                   help="windows of the stream solved (default 200)")
    b.add_argument("--layout", choices=("paper", "published"), default="paper",
                   help="paper (default): k=20, 10 pods of 100; published: the authors' 25 pods "
                        "of 40")
    b.add_argument("--topology", default=None, metavar="FILE",
                   help="a Slurm topology.conf or JSON tree: the stream on that cluster "
                        "instead of --layout")
    b.add_argument("--warmup", type=int, default=None, metavar="N",
                   help="with --topology: windows replayed before the first one kept (default: "
                        "one mean job runtime's worth, so the cluster is loaded)")
    b.add_argument("--bound", choices=("freeform", "per-job"), default="freeform",
                   help="with --topology: the lower bound beside the methods: the free-form "
                        "model's (default) or each job's best node set alone (per-job: cheap, "
                        "for trees of tens of thousands of nodes)")
    b.add_argument("--convention", choices=("paper", "published"), default="paper",
                   help="cost convention (default paper)")
    b.add_argument("--cap", type=cap, default=5,
                   help="most multi-node jobs per window (default 5; 'none')")
    b.add_argument("--freeform-time-limit", type=positive(float), default=2.0, metavar="S",
                   help="time limit of the free-form model per window, in seconds (default 2)")
    b.add_argument("--paper-windows", type=int, default=20,
                   help="windows also solved with the paper's formulation (default 20)")
    b.add_argument("--paper-time-limit", type=positive(float), default=10.0, metavar="S",
                   help="time limit of the paper's formulation per window, in seconds "
                        "(default 10)")
    add_workload_options(b)
    b.add_argument("--out", default="benchmarks/out", metavar="DIR",
                   help="folder for CSV and PNG (default benchmarks/out; created if missing)")
    add_common(b)
    add_executor_arguments(b, default_workers=1)   # rows carry solver times

    for name, helptext in (("table3", "seed 002 Table III: Seq and SA against the SCAS and free-form optima"),
                           ("table4", "seed 002 Table IV: SCIP with and without a time limit, both formulations"),
                           ("nsa", "NSA-500 against SA at equal iterations and at equal wall time")):
        b = bench.add_parser(name, help=helptext, description=helptext)
        b.add_argument("--setting", choices=("published", "paper"), default="published",
                       help="published: the authors' code (25x40 layout, published cost, T_max "
                            "25000); paper: the paper's text (k=20, Eq. 1 cost, T_max 2500)")
        b.add_argument("--epochs", type=positive(int), default=10,
                       help="epochs of the stream, each from an empty cluster at a random job "
                            "(default 10)")
        b.add_argument("--windows-per-epoch", type=positive(int), default=100, metavar="N",
                       help="windows per epoch (default 100)")
        if name == "table3":
            b.add_argument("--freeform-time-limit", type=positive(float), default=1.0,
                           metavar="S", help="time limit of the free-form model per window, "
                                             "in seconds (default 1)")
        if name == "nsa":
            b.add_argument("--weights", default=None, metavar="JSON",
                           help="NSA's policy (default: the shipped learned/weights/nsa_cnn3.json, "
                                "trained in the published setting; with --preset best the "
                                "setting's nsa_cnn3_best_<setting>.json)")
            b.add_argument("--preset", default=None, metavar="NAME",
                           help="NSA's loop, a preset of tjap.learned.tree.policy.NSA_PRESETS (default: the "
                                "setting's); the SA columns keep the setting's")
            b.add_argument("--lookahead", type=count, default=None, metavar="K",
                           help="NSA scores its policy's K proposed starts with the later jobs "
                                "placed greedily (default: the preset's: paper and published 0 "
                                "= off, best 32)")
            b.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                           help="the clock NSA's time is measured on for the equal-time SA "
                                "budgets: cpu (default), the CPU time of each solve call (on a "
                                "dedicated core its wall time, and not inflated by other "
                                "processes on the cores), or wall, the solver's wall time; "
                                "both are recorded")
        if name == "table4":
            b.add_argument("--paper-windows", type=int, default=20,
                           help="windows (the first ones) also solved with the paper's "
                                "formulation (default 20)")
            b.add_argument("--limit", type=positive(float), default=30.0, metavar="S",
                           help="the time limit of the limited SCIP runs, in seconds "
                                "(default 30)")
        add_workload_options(b)
        b.add_argument("--out", default="benchmarks/out", metavar="DIR",
                       help="folder for CSV (default benchmarks/out; created if missing)")
        add_common(b)
        add_executor_arguments(b, default_workers=1)   # rows carry solver times
    b = bench.add_parser("batch", help="batch simulator: LS6 speed, scaling, warm-start waits",
                         description="The simulator on the LS6 trace under every backfill mode, "
                                     "EASY on synthetic traces of two sizes, and the warm-started "
                                     "replay's monthly waits beside the recorded ones.")
    b.add_argument("--trace", default=None, metavar="FILE",
                   help="sacct or SWF trace (default: the bundled LS6 A100 trace, "
                        "placement/batch/data/ls6-a100.tsv)")
    b.add_argument("--nodes", type=positive(int), default=76,
                   help="cluster size in nodes (default 76, the paper's)")
    b.add_argument("--repeats", type=positive(int), default=3, metavar="N",
                   help="timed runs of each simulation; the best time is kept (default 3)")
    b.add_argument("--sizes", default="25000,250000",
                   help="jobs of the synthetic traces, comma-separated (default 25000,250000)")
    b.add_argument("--start", default="2022-11-01", metavar="ISO",
                   help="warm-start date of the monthly-wait replay (default 2022-11-01)")
    b.add_argument("--out", default="benchmarks/out", metavar="DIR",
                   help="folder for CSV and PNG (default benchmarks/out; created if missing)")
    add_common(b)
    b = bench.add_parser("online", help="seed 002 Fig. 6: window-based scheduling against FCFS/EASY",
                         description="Window policy for tau in 10..60 s against per-job FCFS and "
                                     "EASY with first-fit, contiguous and free-form placement.")
    b.add_argument("--layout", choices=("paper", "published"), default="paper",
                   help="paper (default): k=20, 10 pods of 100; published: the authors' 25 pods "
                        "of 40")
    b.add_argument("--convention", choices=("paper", "published"), default="paper",
                   help="cost convention (default paper)")
    b.add_argument("--epochs", type=positive(int), default=10,
                   help="replays per configuration, each of --jobs-per-epoch consecutive "
                        "jobs from a random start (the same for every configuration); the table "
                        "shows their means (default 10)")
    b.add_argument("--jobs-per-epoch", type=positive(int), default=300, metavar="N",
                   help="jobs replayed per epoch (default 300)")
    b.add_argument("--method", default="dp",
                   help="window solver, any tjap.solve method (default dp)")
    b.add_argument("--weights", default=None, metavar="JSON",
                   help="--method nsa: the trained policy's metadata (default: the shipped "
                        "learned/weights/nsa_cnn3_best_<convention>.json, run in the best loop)")
    add_workload_options(b)
    b.add_argument("--out", default="benchmarks/out", metavar="DIR",
                   help="folder for CSV and PNG (default benchmarks/out; created if missing)")
    add_common(b)
    add_executor_arguments(b)

    p.set_defaults(run=cmd_bench)


def cmd_bench(args) -> int:
    check_output(args.out, "--out", folder=True)   # before the work: a bad folder fails now
    if args.what == "exact":
        return _bench_exact(args)
    if args.what == "batch":
        return _bench_batch(args)
    from tjap.placement.tree.fat_tree import FatTree
    from tjap.bench import online, sa_tables
    from tjap.report import write_csv

    out_dir = Path(args.out)
    if args.what == "online":
        from tjap.cli.tree import method_options

        options = method_options(args)   # a flag the method does not take fails here
        layout = args.layout
    else:
        layout = sa_tables.SETTINGS[args.setting]["layout"]
    workload, report = read_workload(args, FatTree.from_layout(layout).num_nodes)
    # a file workload's results are named after it, beside (never over) the generator's
    tag = f"_{Path(args.workload).stem}" if report is not None else ""
    if args.what == "table3":
        csv_path = out_dir / f"table3_{args.setting}{tag}_s{args.seed}.csv"
        res = sa_tables.table3(args.setting, args.epochs, args.windows_per_epoch, args.seed,
                               args.freeform_time_limit, quiet=args.quiet,
                               executor=executor_from_args(args), workload=workload,
                               csv_path=csv_path)
        names = ["seq", "sa500", "sa1000", "sa1000_best", "lns500", "freeform"]
        summary = {"setting": args.setting, "epochs": res["epochs"],
                   "gap_to_scas_pct": sa_tables.gaps(res["rows"], names),
                   "freeform_optimal_pct": 100 * float(np.mean([r["freeform_optimal"] for r in res["rows"]])),
                   "csv": str(csv_path)}
        text = sa_tables.print_table3(res) + "\ngap to the SCAS optimum (%): " + ", ".join(
            f"{k} {v:+.3f}" for k, v in summary["gap_to_scas_pct"].items())
        text += f"\nfree-form proven optimal on {summary['freeform_optimal_pct']:.1f}% of windows"
    elif args.what == "table4":
        csv_path = out_dir / f"table4_{args.setting}{tag}_s{args.seed}.csv"
        res = sa_tables.table4(args.setting, args.epochs, args.windows_per_epoch, args.seed,
                               args.paper_windows, args.limit, quiet=args.quiet,
                               executor=executor_from_args(args), workload=workload,
                               csv_path=csv_path)
        rows = res["rows"]
        paper = [r for r in rows if "paper_limit" in r]
        ratio = [r["paper_limit_s"] / r["sp_nolimit_s"] for r in paper]
        summary = {"setting": args.setting, "windows": len(rows),
                   "set_packing_mean_s": float(np.mean([r["sp_nolimit_s"] for r in rows])),
                   "set_packing_median_s": float(np.median([r["sp_nolimit_s"] for r in rows])),
                   "set_packing_max_s": float(np.max([r["sp_nolimit_s"] for r in rows])),
                   "set_packing_optimal_pct": 100 * float(np.mean([r["sp_nolimit_status"] == "OPTIMAL" for r in rows])),
                   "paper_windows": len(paper),
                   "paper_mean_s": float(np.mean([r["paper_limit_s"] for r in paper])) if paper else None,
                   "paper_timeouts": sum(r["paper_limit_status"] != "OPTIMAL" for r in paper),
                   "paper_over_set_packing_median": float(np.median(ratio)) if ratio else None,
                   "csv": str(csv_path)}
        text = "\n".join(f"{k}: {v}" for k, v in summary.items())
    elif args.what == "nsa":
        text, summary = _bench_nsa(args, sa_tables, out_dir, tag, workload)
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = f"online_{args.layout}{tag}_s{args.seed}"
        epochs_csv = out_dir / f"{stem}_epochs.csv"
        rows = online.run(args.layout, args.epochs, args.jobs_per_epoch, args.seed, args.method,
                          args.convention, quiet=args.quiet, executor=executor_from_args(args),
                          workload=workload, options=options, epochs_csv=epochs_csv)
        png = online.plot(rows, out_dir / f"{stem}.png", args.convention)
        summary = {"rows": rows, "csv": str(write_csv(out_dir / f"{stem}.csv", rows)),
                   "png": str(png), "epochs_csv": str(epochs_csv)}
        text = online.table(rows) + f"\nfiles: {summary['csv']}, {epochs_csv}, {png}"
    summary |= workload_fields(args, report)
    if args.json:
        print_json(summary)
    else:
        where = report.summary() if report is not None else "the paper's generator"
        print(f"workload: {where}\n{text}")
    return 0


def _bench_nsa(args, sa_tables, out_dir: Path, tag: str, workload) -> tuple[str, dict]:
    """``tjap bench nsa``: rows to NAME.csv as they arrive (NAME.partial.csv until the last),
    the summary to NAME.json; returns the printed text and the summary."""
    import json

    from tjap.learned.tree.policy import default_weights
    from tjap.result import plain

    preset = args.preset or args.setting
    name = f"nsa_{args.setting}{tag}"
    if args.weights:
        name += f"_{Path(args.weights).stem}"
    if preset != args.setting:
        name += f"_{preset}-loop"
    if args.lookahead is not None:
        name += f"_la{args.lookahead}"
    if args.clock != "cpu":
        name += f"_{args.clock}-clock"
    name += f"_s{args.seed}"
    res = sa_tables.nsa_table(args.setting, args.weights, args.epochs, args.windows_per_epoch,
                              args.seed, quiet=args.quiet, executor=executor_from_args(args),
                              workload=workload, preset=preset, clock=args.clock,
                              csv_path=out_dir / f"{name}.csv", lookahead=args.lookahead)
    default = sa_tables.default_sa_preset()
    conv = sa_tables.SETTINGS[args.setting]["convention"]
    weights = args.weights or f"learned/weights/{default_weights(preset, conv).name}"
    from tjap.learned.tree.policy import preset_lookahead

    summary = {"setting": args.setting, "nsa_preset": preset,
               "nsa_lookahead": preset_lookahead(preset, args.lookahead),
               "clock": args.clock,
               "weights": weights, "seed": args.seed, "windows": len(res["rows"]),
               "default_sa_preset": default,
               "summary": res["summary"], "epochs": res["epochs"],
               "csv": str(out_dir / f"{name}.csv"), "json": str(out_dir / f"{name}.json")}
    Path(summary["json"]).write_text(json.dumps(plain(summary), indent=2, allow_nan=False) + "\n")
    text = (sa_tables.print_nsa_summary(res["summary"])
            + f"\nnsa_gain_pct: mean over windows of (column - nsa500) / column, with its 95 % "
              f"interval; the *_same_time columns ran as many iterations as fit in NSA's time "
              f"({args.clock} clock) on each window (cpu_ratio, wall_ratio: their mean time over "
              f"NSA's); sa_default is preset {default!r}\nfiles: {summary['csv']}, {summary['json']}")
    return text, summary


def _bench_exact(args) -> int:
    from tjap.placement.tree.fat_tree import FatTree
    from tjap.bench import exact

    nodes = FatTree.from_layout(args.layout).num_nodes
    if args.topology and args.workload is not None:   # the tree's size, for --workload's check
        from tjap.placement.tree.topology import Topology

        nodes = Topology.from_file(args.topology).num_nodes
    workload, report = read_workload(args, nodes)
    out = exact.main(args, workload)
    if args.json:
        print_json({k: v for k, v in out.items() if k != "table"}
                   | workload_fields(args, report))
    else:
        where = (f"{out['layout']} ({out['nodes']} nodes)" if "topology" in out
                 else f"{out['layout']} layout")
        jobs = f", workload {report.summary()}" if report is not None else ""
        print(f"exact SCAS on {out['num_windows']} windows, {where}{jobs}, "
              f"{out['convention']} cost, cap {out['cap']}, seed {out['seed']}")
        print(out["table"])
        if "topology" in out:
            print(f"lower bound: {out['bound']}; peak RSS of this process: "
                  f"{out['max_rss_mb']:.0f} MB")
        print("files: " + ", ".join(out["files"].values()))
    return 0


def _check_warm_start(trace: str, start: str) -> None:
    """``--start`` must leave the warm start something to simulate (checked before the runs)."""
    from tjap.placement.batch import load_trace
    from tjap.placement.batch.replay import check_warm_start, parse_date

    jobs, _ = load_trace(trace)
    check_warm_start(jobs, int(jobs.from_unix(parse_date(start))))


def _bench_batch(args) -> int:
    from tjap.placement.batch.traces import bundled_trace
    from tjap.bench import batch_sim
    from tjap.executor import progress
    from tjap.report import format_table, write_csv

    if args.trace is None:
        args.trace = str(bundled_trace("ls6-a100"))
    _check_warm_start(args.trace, args.start)
    try:
        sizes = tuple(int(v) for v in args.sizes.split(","))
    except ValueError:
        raise TjapError(f"--sizes must be comma-separated integers, got {args.sizes!r}") from None
    out = Path(args.out)
    parts = {"speed": lambda: batch_sim.speed(args.trace, args.nodes, args.repeats),
             "scaling": lambda: batch_sim.scaling(args.trace, args.nodes, sizes,
                                                  repeats=args.repeats, seed=args.seed),
             "months": lambda: batch_sim.warm_months(args.trace, args.nodes, args.start)}
    done = {name: run() for name, run in progress(parts.items(), total=len(parts),
                                                  desc="batch", quiet=args.quiet)}
    speed, scaling, months = done["speed"], done["scaling"], done["months"]
    png = batch_sim.plot_months(months, out / "batch_months.png",
                                f"{Path(args.trace).name}: {args.nodes} nodes, EASY, warm start")
    for name, rows in (("speed", speed), ("scaling", scaling), ("months", months)):
        write_csv(out / f"batch_{name}.csv", rows)
    if args.json:
        print_json({"speed": speed, "scaling": scaling, "months": months, "png": str(png)})
        return 0
    print(format_table(speed, [("span", ""), ("jobs", "d"), ("backfill", ""), ("seconds", ".3f"),
                               ("mean_wait_h", ".2f"), ("utilization", ".3f"),
                               ("published_over_ours", ".0f")]))
    print()
    print(format_table(scaling, [("jobs", "d"), ("seconds", ".3f"), ("mean_wait_h", ".2f"),
                                 ("time_over_smallest", ".2f")]))
    print()
    print(format_table(months, [("month", ""), ("jobs", "d"), ("recorded_mean_wait_h", ".2f"),
                                ("simulated_mean_wait_h", ".2f")]))
    print(f"files: {out}/batch_*.csv, {png}")
    return 0
