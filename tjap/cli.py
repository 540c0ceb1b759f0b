"""The ``tjap`` command line: one program, one subcommand per job.

Exit codes: 0 success, 1 the job ran but failed (no solution found), 2 bad input or usage.
Every error the user can cause prints one line ``tjap: error: ...`` and never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from tjap.errors import TjapError
from tjap.executor import add_executor_arguments, executor_from_args


def _cap(value: str):
    if value.lower() in ("none", "no", "off"):
        return None
    try:
        cap = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"cap must be a positive integer or 'none', got {value!r}")
    if cap < 1:
        raise argparse.ArgumentTypeError(f"cap must be a positive integer or 'none', got {value!r}")
    return cap


def _positive(kind):
    def parse(value):
        try:
            number = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}")
        if not 0 < number <= 1e9:
            raise argparse.ArgumentTypeError(f"expected a positive number up to 1e9, got {value!r}")
        return number
    return parse


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    from tjap.registry import entries

    parser = argparse.ArgumentParser(
        prog="tjap", description="Topology-aware job allocation and cluster placement solvers.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    method_help = "; ".join(f"{m.name}: {m.description}" for m in entries("tree"))
    p = sub.add_parser("solve", help="solve window(s) from a JSON or JSONL file",
                       description="Solve each window of FILE (.json: one window or a list; "
                                   ".jsonl: one a line) and print the assignment and cost.")
    p.add_argument("file", help="window file (.json or .jsonl)")
    p.add_argument("--method", default="auto", help=f"solver method (default auto). {method_help}")
    p.add_argument("--time-limit", type=_positive(float), default=None, metavar="S",
                   help="time limit per window in seconds")
    p.add_argument("--convention", choices=("paper", "published"), default="paper",
                   help="cost convention (default paper)")
    _common(p)

    p = sub.add_parser("generate", help="generate instances")
    gen = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    g = gen.add_parser("windows", help="windows of the paper's stream, as JSONL",
                       description="Replay the paper's workload and write its scheduling windows.")
    g.add_argument("--num-windows", type=_positive(int), default=200)
    g.add_argument("--layout", choices=("paper", "published"), default="paper",
                   help="paper: k=20, 10 pods of 100; published: the authors' 25 pods of 40")
    g.add_argument("--cap", type=_cap, default=5,
                   help="most multi-node jobs per window (default 5, as the published code; 'none')")
    g.add_argument("--tau", type=_positive(int), default=60, help="window period in seconds")
    g.add_argument("--epoch-windows", type=_positive(int), default=100)
    g.add_argument("--out", required=True, help="output .jsonl file")
    _common(g)

    p = sub.add_parser("bench", help="run a benchmark")
    bench = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    b = bench.add_parser("exact", help="exact SCAS solvers on the paper's stream",
                         description="dp, SCIP, CP-SAT, the paper formulation and the free-form "
                                     "optimum on the same windows; table, CSV and PNG.")
    b.add_argument("--num-windows", type=_positive(int), default=200)
    b.add_argument("--layout", choices=("paper", "published"), default="paper")
    b.add_argument("--convention", choices=("paper", "published"), default="paper")
    b.add_argument("--cap", type=_cap, default=5)
    b.add_argument("--freeform-time-limit", type=_positive(float), default=2.0, metavar="S")
    b.add_argument("--paper-windows", type=int, default=20,
                   help="windows also solved with the paper's formulation (default 20)")
    b.add_argument("--paper-time-limit", type=_positive(float), default=10.0, metavar="S")
    b.add_argument("--out", default="benchmarks/out", help="folder for CSV and PNG")
    _common(b)
    add_executor_arguments(b, default_workers=1)   # rows carry solver times

    for name, helptext in (("table3", "seed 002 Table III: Seq and SA against the SCAS and free-form optima"),
                           ("table4", "seed 002 Table IV: SCIP with and without a time limit, both formulations"),
                           ("speed", "iterations per second of the Numba SA loop against its plain-Python twin"),
                           ("nsa", "NSA-500 against SA at equal iterations and at equal wall time")):
        b = bench.add_parser(name, help=helptext, description=helptext)
        b.add_argument("--setting", choices=("published", "paper"), default="published",
                       help="published: the authors' code (25x40 layout, published cost, T_max "
                            "25000); paper: the paper's text (k=20, Eq. 1 cost, T_max 2500)")
        b.add_argument("--epochs", type=_positive(int), default=10)
        b.add_argument("--windows-per-epoch", type=_positive(int), default=100)
        if name == "table3":
            b.add_argument("--freeform-time-limit", type=_positive(float), default=1.0, metavar="S")
        if name == "nsa":
            b.add_argument("--weights", default=None, help="policy .json (default: shipped CNN-3)")
        if name == "table4":
            b.add_argument("--paper-windows", type=int, default=20)
            b.add_argument("--limit", type=_positive(float), default=30.0, metavar="S")
        b.add_argument("--out", default="benchmarks/out", help="folder for CSV")
        _common(b)
        if name != "speed":   # a timing of one process: parallel runs would disturb it
            add_executor_arguments(b, default_workers=1)   # rows carry solver times
    b = bench.add_parser("batch", help="batch simulator: LS6 speed, scaling, warm-start waits",
                         description="The simulator on the LS6 trace under every backfill mode, "
                                     "EASY on synthetic traces of two sizes, and the warm-started "
                                     "replay's monthly waits beside the recorded ones.")
    b.add_argument("--trace", default="../shared/traces/ls6-a100.tsv")
    b.add_argument("--nodes", type=_positive(int), default=76, help="cluster size (paper: 76)")
    b.add_argument("--repeats", type=_positive(int), default=3)
    b.add_argument("--sizes", default="25000,250000", help="synthetic trace sizes")
    b.add_argument("--start", default="2022-11-01", help="warm-start date")
    b.add_argument("--out", default="benchmarks/out")
    _common(b)
    b = bench.add_parser("online", help="seed 002 Fig. 6: window-based scheduling against FCFS/EASY",
                         description="Window policy for tau in 10..60 s against per-job FCFS and "
                                     "EASY with first-fit, contiguous and free-form placement.")
    b.add_argument("--layout", choices=("paper", "published"), default="paper")
    b.add_argument("--convention", choices=("paper", "published"), default="paper")
    b.add_argument("--epochs", type=_positive(int), default=10)
    b.add_argument("--jobs-per-epoch", type=_positive(int), default=300)
    b.add_argument("--method", default="dp", help="window solver (any tjap.solve method)")
    b.add_argument("--out", default="benchmarks/out")
    _common(b)
    add_executor_arguments(b)

    p = sub.add_parser("online", help="replay a workload with a scheduling policy",
                       description="Replay jobs of the paper's workload on an empty cluster and "
                                   "report CH cost, wait, utilisation and makespan.")
    p.add_argument("--workload", default="paper", choices=("paper",),
                   help="the paper's random workload (trace loaders arrive with placement.batch)")
    p.add_argument("--num-jobs", type=_positive(int), default=300)
    p.add_argument("--first-job", type=int, default=0)
    p.add_argument("--layout", choices=("paper", "published"), default="paper")
    p.add_argument("--policy", choices=("window", "fcfs", "easy"), default="window")
    p.add_argument("--placement", choices=("firstfit", "contiguous", "freeform"), default="firstfit",
                   help="per-job placement (fcfs/easy)")
    p.add_argument("--tau", type=_positive(int), default=60, help="window period (s)")
    p.add_argument("--cap", type=_cap, default=5)
    p.add_argument("--method", default="dp", help="window solver (any tjap.solve method)")
    p.add_argument("--convention", choices=("paper", "published"), default="paper")
    _common(p)

    p = sub.add_parser("simulate", help="replay a workload trace on the batch-queue simulator",
                       description="Replay a trace (SWF or sacct TSV) on the Slurm-like simulator "
                                   "and print its summary. See placement.batch.simulator for the "
                                   "scheduling rules.")
    p.add_argument("--trace", required=True, metavar="FILE", help=".swf, .swf.gz or sacct TSV")
    p.add_argument("--format", choices=("swf", "sacct"), help="default: from the file name")
    p.add_argument("--nodes", type=_positive(int),
                   help="cluster size (default: the trace header's MaxNodes / MaxProcs)")
    p.add_argument("--backfill", default="easy",
                   help="none | easy | slurm | conservative | a reservation depth (default easy)")
    p.add_argument("--bf-interval", type=int, default=30, metavar="S",
                   help="seconds between backfill passes, 0 = at every change (default 30)")
    p.add_argument("--bf-resolution", type=_positive(int), default=60, metavar="S")
    p.add_argument("--bf-max-job-test", type=_positive(int), default=500)
    p.add_argument("--start", metavar="ISO", help="first submission date to replay (UTC)")
    p.add_argument("--days", type=_positive(float), help="days of submissions to replay")
    p.add_argument("--warm-start", action="store_true",
                   help="start at --start from the trace's own running and queued jobs")
    for factor in ("age", "job-size", "fairshare", "qos"):
        p.add_argument(f"--weight-{factor}", type=float, default=0.0,
                       help=f"PriorityWeight{factor.title().replace('-', '')} (default 0)")
    p.add_argument("--max-age", type=_positive(int), default=7 * 86400, metavar="S")
    p.add_argument("--plot", metavar="PNG", help="write utilisation, queue and wait plots")
    p.add_argument("--per-job", metavar="CSV", help="write each job's submit, start, end, wait")
    _common(p)

    p = sub.add_parser("provision", help="chained jobs: when to submit a successor (seed 004)")
    prov = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    e = prov.add_parser("evaluate", help="interruption and overlap of a provisioner on a trace",
                        description="Inject predecessor/successor pairs (48 h each) into a replay "
                                    "of the trace at random times of [--from, --to) whose reactive "
                                    "wait matches --load, and report the provisioner's mean "
                                    "interruption and overlap.")
    e.add_argument("--trace", required=True, metavar="FILE")
    e.add_argument("--from", dest="start", required=True, metavar="ISO")
    e.add_argument("--to", dest="end", required=True, metavar="ISO")
    e.add_argument("--nodes", type=_positive(int), default=1, help="nodes of each pair job")
    e.add_argument("--cluster-nodes", type=_positive(int), default=76)
    e.add_argument("--load", choices=("heavy", "medium", "light", "any"), default="any",
                   help="reactive wait > 12 h, 2-12 h, < 2 h")
    e.add_argument("--policy", default="reactive",
                   help="reactive | avg | rf | xgb | transformer | moe | transformer_dqn | "
                        "moe_dqn | transformer_pg | moe_pg (learned: shipped weights); several, "
                        "comma-separated, are evaluated on the same pairs, one task each; "
                        "NAME@W (e.g. moe@2) serves a regressor's threshold calibrated for "
                        "interruption weight e_I/e_O = W")
    e.add_argument("--scheduler", default="easy", choices=("easy", "mirage"),
                   help="easy: Slurm defaults (EASY, FCFS); mirage: the published Mirage "
                        "simulator (conservative backfill, age + size priority), which the "
                        "learned provisioners were trained on")
    e.add_argument("--pairs", type=_positive(int), default=20)
    e.add_argument("--max-tries", type=_positive(int), help="injection times tried (default 20x pairs)")
    _common(e)
    add_executor_arguments(e)
    from benchmarks.provision_live_demo import add_arguments as _live
    _live(prov.add_parser("live", help="run a provisioner against a real Slurm (sbatch the successor)",
                          description="Watch a predecessor on a real Slurm and submit its successor "
                                      "when the provisioner says so (compressed time; optional "
                                      "trace background load). See benchmarks/provision_live_demo.py."))
    _common(prov.choices["live"])

    from placement.network.cli import add_parser as _net
    _net(sub)
    from placement.interference.cli import add_parser as _interference
    _interference(sub)
    p = sub.add_parser("train", help="train a learned operator")
    train = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    t = train.add_parser("nsa", help="the NSA repair operator (MaskablePPO)",
                         description="Train the NSA repair policy with MaskablePPO on windows of "
                                     "the paper's stream; writes OUT.pt, OUT.json and OUT_curve.csv.")
    t.add_argument("--arch", default="cnn3", choices=("fcn1", "fcn2", "fcn3", "cnn1", "cnn2", "cnn3"))

    def count(value):  # a non-negative integer (0 = skip that stage)
        return 0 if value.strip() == "0" else _positive(int)(value)

    t.add_argument("--timesteps", type=count, default=300_000,
                   help="PPO steps (0: only the imitation warm start)")
    t.add_argument("--setting", choices=("published", "paper"), default="published")
    t.add_argument("--windows", type=_positive(int), default=500, help="training windows")
    t.add_argument("--reward", choices=("repaired", "window"), default="repaired")
    t.add_argument("--device", default="cpu")
    t.add_argument("--idle-flag", action="store_true", help="the published code's fifth feature")
    t.add_argument("--boundaries", action="store_true",
                   help="two extra channels marking where a new switch / pod starts (ours)")
    t.add_argument("--learning-rate", type=_positive(float), default=3e-4)
    t.add_argument("--n-steps", type=_positive(int), default=2048, help="PPO rollout length")
    t.add_argument("--batch-size", type=_positive(int), default=256)
    t.add_argument("--ent-coef", type=float, default=0.01)
    t.add_argument("--clip-range", type=_positive(float), default=0.2)
    t.add_argument("--n-epochs", type=_positive(int), default=10, help="PPO epochs per rollout")
    t.add_argument("--imitation-steps", type=count, default=0,
                   help="expert (greedy-within-q) steps behaviour-cloned before PPO (0: none)")
    t.add_argument("--imitation-epochs", type=_positive(int), default=10)
    t.add_argument("--imitation-temperature", type=float, default=0.0, metavar="T",
                   help="0: clone the cheapest start; T > 0: clone softmax(-cost / T) and roll "
                        "the expert out by sampling it (cost units)")
    t.add_argument("--imitation-lr", type=_positive(float), default=1e-3)
    t.add_argument("--imitation-batch-size", type=_positive(int), default=256)
    t.add_argument("--out", default="learned/weights/nsa_cnn3")
    _common(t)
    from learned.network.train import add_parser as _train_network
    _train_network(train)

    p = sub.add_parser("demo", help="a paper-sized window solved by every exact method",
                       description="Generate the first window of the paper's stream (1000 idle "
                                   "nodes) and solve it with every exact method.")
    p.add_argument("--layout", choices=("paper", "published"), default="paper")
    p.add_argument("--convention", choices=("paper", "published"), default="paper")
    p.add_argument("--time-limit", type=_positive(float), default=30.0, metavar="S")
    _common(p)

    p = sub.add_parser("methods", help="list the solver methods")
    _common(p)
    return parser


def _print_json(data) -> None:
    print(json.dumps(data, indent=2, default=str))


def cmd_solve(args) -> int:
    from tjap.api import solve
    from placement.tree.window import load_windows

    windows = load_windows(args.file)
    if not windows:
        raise TjapError(f"{args.file} holds no window")
    results = [solve(w, args.method, time_limit_s=args.time_limit, seed=args.seed,
                     convention=args.convention) for w in windows]
    if args.json:
        _print_json([r.to_dict() for r in results] if len(results) > 1 else results[0].to_dict())
    else:
        for k, r in enumerate(results):
            head = f"window {k}: " if len(results) > 1 else ""
            print(f"{head}method={r.method} status={r.status.value} cost={r.objective:.2f} "
                  f"bound={'-' if r.bound is None else f'{r.bound:.2f}'} time={r.runtime_s:.4f}s")
            for j, (n, nodes) in enumerate(zip(r.window.job_sizes, r.assignment)):
                print(f"  job {j} ({n} nodes): {_ranges(nodes)}")
    return 0 if all(r.has_solution for r in results) else 1


def _ranges(nodes) -> str:
    """Compact node list: 3-7,12,15-16."""
    nodes = sorted(nodes)
    parts, start = [], None
    for i, v in enumerate(nodes):
        if start is None:
            start = v
        if i + 1 == len(nodes) or nodes[i + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ",".join(parts)


def cmd_generate(args) -> int:
    from placement.tree.stream import generate_windows

    windows = generate_windows(args.layout, args.num_windows, args.seed, cap=args.cap,
                               tau_s=args.tau, epoch_windows=args.epoch_windows)
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(w.to_json() + "\n" for w in windows))
    except OSError as exc:
        raise TjapError(f"cannot write {out}: {exc.strerror}") from None
    summary = {"out": str(out), "windows": len(windows), "layout": args.layout, "seed": args.seed,
               "cap": args.cap, "tau_s": args.tau}
    if args.json:
        _print_json(summary)
    else:
        print(f"wrote {len(windows)} windows ({args.layout} layout, seed {args.seed}) to {out}")
    return 0


def cmd_bench(args) -> int:
    if args.what == "exact":
        return _bench_exact(args)
    if args.what == "batch":
        return _bench_batch(args)
    from benchmarks import online, sa_tables
    from benchmarks.common import format_table, write_csv

    out_dir = Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise TjapError(f"--out {out_dir} is a file; give a folder")
    if args.what == "table3":
        res = sa_tables.table3(args.setting, args.epochs, args.windows_per_epoch, args.seed,
                               args.freeform_time_limit, quiet=args.quiet,
                               executor=executor_from_args(args))
        names = ["seq", "sa500", "sa1000", "sa1000_best", "lns500", "freeform"]
        summary = {"setting": args.setting, "epochs": res["epochs"],
                   "gap_to_scas_pct": sa_tables.gaps(res["rows"], names),
                   "freeform_optimal_pct": 100 * float(np.mean([r["freeform_optimal"] for r in res["rows"]])),
                   "csv": str(write_csv(out_dir / f"table3_{args.setting}_s{args.seed}.csv", res["rows"]))}
        text = sa_tables.print_table3(res) + "\ngap to the SCAS optimum (%): " + ", ".join(
            f"{k} {v:+.3f}" for k, v in summary["gap_to_scas_pct"].items())
        text += f"\nfree-form proven optimal on {summary['freeform_optimal_pct']:.1f}% of windows"
    elif args.what == "table4":
        res = sa_tables.table4(args.setting, args.epochs, args.windows_per_epoch, args.seed,
                               args.paper_windows, args.limit, quiet=args.quiet,
                               executor=executor_from_args(args))
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
                   "csv": str(write_csv(out_dir / f"table4_{args.setting}_s{args.seed}.csv", rows))}
        text = "\n".join(f"{k}: {v}" for k, v in summary.items())
    elif args.what == "nsa":
        res = sa_tables.nsa_table(args.setting, args.weights, args.epochs, args.windows_per_epoch,
                                  args.seed, quiet=args.quiet, executor=executor_from_args(args))
        summary = {"setting": args.setting, "epochs": res["epochs"],
                   "nsa_improvement_pct": res["nsa_improvement_pct"],
                   "gap_to_scas_pct": res["gap_to_scas_pct"],
                   "csv": str(write_csv(out_dir / f"nsa_{args.setting}_s{args.seed}.csv", res["rows"]))}
        text = format_table(res["epochs"], [("epoch", ""), ("nsa500", ".1f"), ("nsa500_ms", ".1f"),
                                            ("sa500", ".1f"), ("sa1000", ".1f"),
                                            ("sa_paper_same_time", ".1f"),
                                            ("sa_best_same_time", ".1f"), ("scas_opt", ".1f")])
        text += "\nNSA-500 improvement over (%): " + ", ".join(
            f"{k} {v:+.3f}" for k, v in summary["nsa_improvement_pct"].items())
    elif args.what == "speed":
        rows = sa_tables.speed(args.setting, args.windows_per_epoch, seed=args.seed)
        summary = {"setting": args.setting, "rows": rows}
        text = format_table(rows, [("repair", ""), ("windows", "d"), ("numba_it_per_s", ".0f"),
                                   ("python_it_per_s", ".0f"), ("median_ratio", ".1f"),
                                   ("min_ratio", ".1f"), ("same_result", ""),
                                   ("load_1min", ".2f")])
    else:
        rows = online.run(args.layout, args.epochs, args.jobs_per_epoch, args.seed, args.method,
                          args.convention, quiet=args.quiet, executor=executor_from_args(args))
        out_dir.mkdir(parents=True, exist_ok=True)
        png = online.plot(rows, out_dir / f"online_{args.layout}_s{args.seed}.png", args.convention)
        summary = {"rows": rows, "csv": str(write_csv(out_dir / f"online_{args.layout}_s{args.seed}.csv", rows)),
                   "png": str(png)}
        text = online.table(rows) + f"\nfiles: {summary['csv']}, {png}"
    if args.json:
        _print_json(summary)
    else:
        print(text)
    return 0


def cmd_train(args) -> int:
    if args.what == "network":
        from learned.network.train import run_cli

        return run_cli(args)
    from learned.train import train_nsa

    out = train_nsa(args.arch, args.timesteps, args.seed, args.out, args.setting, args.windows,
                    args.reward, quiet=args.quiet, device=args.device, boundaries=args.boundaries,
                    idle_flag=args.idle_flag,
                    ppo={"learning_rate": args.learning_rate, "n_steps": args.n_steps,
                         "batch_size": args.batch_size, "ent_coef": args.ent_coef,
                         "clip_range": args.clip_range, "n_epochs": args.n_epochs},
                    imitation_steps=args.imitation_steps, imitation_epochs=args.imitation_epochs,
                    imitation_temperature=args.imitation_temperature,
                    imitation_lr=args.imitation_lr,
                    imitation_batch_size=args.imitation_batch_size)
    if args.json:
        _print_json(out)
    else:
        if out["imitation"]:
            im = out["imitation"]
            print(f"imitation: {im['collected_steps']} expert steps, {im['epochs']} epochs, "
                  f"accuracy {im['final']['accuracy']:.3f} ({im['wall_s']:.0f} s)")
        print(f"trained {args.arch} for {args.timesteps} steps in {out['wall_s']:.0f} s; "
              f"final mean reward {out['final_mean_reward']}")
        print(f"weights: {out['weights']}  metadata: {out['metadata']}  curve: {out['curve']}")
    return 0


def cmd_online(args) -> int:
    from placement.tree.online import replay
    from placement.tree.stream import Workload
    from placement.tree.topology import FatTree

    workload = Workload.generate(max(100_000, args.first_job + args.num_jobs), args.seed)
    schedule = replay(FatTree.from_layout(args.layout), workload, policy=args.policy,
                      placement=args.placement, tau_s=args.tau, cap=args.cap, method=args.method,
                      convention=args.convention, seed=args.seed,
                      jobs=range(args.first_job, args.first_job + args.num_jobs))
    metrics = schedule.metrics()
    if args.json:
        _print_json(metrics)
    else:
        for k, v in metrics.items():
            print(f"{k:20s} {v:.2f}" if isinstance(v, float) else f"{k:20s} {v}")
    return 0


def cmd_simulate(args) -> int:
    from placement.batch.replay import monthly_waits, replay_trace
    from placement.batch.simulator import Priority, SchedulerConfig

    backfill = int(args.backfill) if args.backfill.isdigit() else args.backfill
    priority = Priority(age=args.weight_age, job_size=args.weight_job_size,
                        fairshare=args.weight_fairshare, qos=args.weight_qos,
                        max_age_s=args.max_age)
    config = SchedulerConfig(backfill=backfill, bf_interval_s=args.bf_interval,
                             bf_resolution_s=args.bf_resolution,
                             bf_max_job_test=args.bf_max_job_test, priority=priority)
    result, info = replay_trace(args.trace, format=args.format, nodes=args.nodes, config=config,
                                start=args.start, days=args.days, warm_start=args.warm_start)
    summary = {"jobs": 0, "skipped_lines": info["skipped_lines"]} | result.summary()
    summary |= {"nodes": info["nodes"], "backfill": args.backfill, "trace": info["trace"]}
    if args.warm_start:
        summary["months"] = monthly_waits(result)
    if args.plot:
        result.plot(args.plot)
    if args.per_job:
        from benchmarks.common import write_csv

        j = result.jobs
        write_csv(Path(args.per_job), [{"job_id": int(j.job_id[r]), "submit_s": int(j.submit_s[r]),
                                  "nodes": int(j.nodes[r]), "start_s": int(result.start_s[r]),
                                  "end_s": int(result.end_s[r]), "wait_s": int(result.wait_s[r])}
                                 for r in range(len(j))])
    if args.json:
        _print_json(summary)
        return 0
    for key, value in summary.items():
        if key == "months":
            for row in value:
                print(f"{row['month']}  jobs {row['jobs']:6d}  simulated wait "
                      f"{row['simulated_mean_wait_h']:7.2f} h  recorded {row['recorded_mean_wait_h']:7.2f} h")
        else:
            print(f"{key:22s} {value:.3f}" if isinstance(value, float) else f"{key:22s} {value}")
    if info["skipped_examples"]:
        print("skipped, e.g.: " + "; ".join(info["skipped_examples"][:3]))
    return 0


def _bench_batch(args) -> int:
    from benchmarks import batch_sim
    from benchmarks.common import format_table, write_csv

    try:
        sizes = tuple(int(v) for v in args.sizes.split(","))
    except ValueError:
        raise TjapError(f"--sizes must be comma-separated integers, got {args.sizes!r}") from None
    out = Path(args.out)
    speed = batch_sim.speed(args.trace, args.nodes, args.repeats)
    scaling = batch_sim.scaling(args.trace, args.nodes, sizes, repeats=args.repeats, seed=args.seed)
    months = batch_sim.warm_months(args.trace, args.nodes, args.start)
    png = batch_sim.plot_months(months, out / "batch_months.png",
                                f"{Path(args.trace).name}: {args.nodes} nodes, EASY, warm start")
    for name, rows in (("speed", speed), ("scaling", scaling), ("months", months)):
        write_csv(out / f"batch_{name}.csv", rows)
    if args.json:
        _print_json({"speed": speed, "scaling": scaling, "months": months, "png": str(png)})
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


def _trace_jobs(trace):
    """The trace's jobs, read once per process (forked workers share the parent's)."""
    from placement.batch import load_trace

    if trace not in _TRACES:
        _TRACES.clear()
        _TRACES[trace] = load_trace(trace)[0]
    return _TRACES[trace]


_TRACES: dict = {}


def _provision_evaluate(trace, cluster_nodes, nodes, times, policy, seed, scheduler) -> dict:
    """One provisioner over the injection times (a task of the executor)."""
    from heuristics.provisioning import evaluate, scheduler_config
    from learned.provision import make_provisioner
    from placement.batch.chained import Pair

    provisioner = make_provisioner(policy, **({} if policy in ("reactive", "avg")
                                              else {"seed": seed}))
    return evaluate(_trace_jobs(trace), cluster_nodes, Pair(nodes=nodes), times, provisioner,
                    scheduler_config(scheduler))


def cmd_provision(args) -> int:
    if args.what == "live":
        from benchmarks.provision_live_demo import run

        return run(args)
    from heuristics.provisioning import sample_pairs, scheduler_config
    from learned.provision import make_provisioner
    from placement.batch.chained import Pair
    from placement.batch.replay import parse_date

    jobs = _trace_jobs(args.trace)
    start, end = (int(jobs.from_unix(parse_date(d))) for d in (args.start, args.end))
    policies = [p.strip() for p in args.policy.split(",") if p.strip()]
    for policy in policies:   # bad names and missing weights fail here, before any replay
        make_provisioner(policy, **({} if policy in ("reactive", "avg") else {"seed": args.seed}))
    config = scheduler_config(args.scheduler)
    pair = Pair(nodes=args.nodes)
    if args.nodes > args.cluster_nodes:
        raise TjapError(f"--nodes {args.nodes} exceeds --cluster-nodes {args.cluster_nodes}")
    times = sample_pairs(jobs, args.cluster_nodes, pair, start, end,
                         None if args.load == "any" else args.load, args.pairs, args.seed,
                         config, max_tries=args.max_tries)
    tasks = [(args.trace, args.cluster_nodes, args.nodes, times, policy, args.seed, args.scheduler)
             for policy in policies]
    if len(tasks) == 1:   # errors propagate as one-line errors
        results = [_provision_evaluate(*tasks[0])]
    else:
        results = executor_from_args(args).results(_provision_evaluate, tasks,
                                                   desc="provisioners", quiet=args.quiet)
    for result in results:
        result |= {"load": args.load, "nodes": args.nodes, "requested_pairs": args.pairs,
                   "scheduler": args.scheduler}
    if args.json:
        _print_json(results[0] if len(policies) == 1 and results else results)
    else:
        for k, result in enumerate(results):
            print("" if k == 0 else "\n", end="")
            for key, value in result.items():
                if key != "outcomes_h":
                    print(f"{key:28s} {value:.3f}" if isinstance(value, float) else f"{key:28s} {value}")
    if len(times) < args.pairs:
        print(f"tjap: only {len(times)} of {args.pairs} injection times had {args.load} load",
              file=sys.stderr)
    return 0 if len(results) == len(policies) else 1


def _bench_exact(args) -> int:
    from benchmarks import exact

    out = exact.main(args)
    if args.json:
        _print_json({k: v for k, v in out.items() if k != "table"})
    else:
        print(f"exact SCAS on {out['num_windows']} windows, {out['layout']} layout, "
              f"{out['convention']} cost, cap {out['cap']}, seed {out['seed']}")
        print(out["table"])
        print("files: " + ", ".join(out["files"].values()))
    return 0


def cmd_demo(args) -> int:
    from tjap.api import solve
    from placement.tree.stream import generate_windows

    window = generate_windows(args.layout, 1, args.seed)[0]
    rows = []
    optimum = None
    for method in ("dp", "scip", "cpsat", "freeform", "seq"):
        options = {"time_limit_s": args.time_limit} if method != "dp" else {}
        if method == "freeform":
            options["warm_start"] = optimum
        r = solve(window, method, seed=args.seed, convention=args.convention, **options)
        optimum = optimum or r
        rows.append({"method": method, "status": r.status.value, "cost": r.objective,
                     "bound": r.bound, "time_s": r.runtime_s, "feasible": r.is_feasible()})
    if args.json:
        _print_json({"window": window.to_dict(), "results": rows})
        return 0
    from benchmarks.common import format_table

    print(f"{window.num_idle} idle nodes on the {args.layout} layout, jobs of "
          f"{list(window.job_sizes)} nodes, {args.convention} cost convention\n")
    print(format_table(rows, [("method", ""), ("status", ""), ("cost", ".2f"), ("bound", ".2f"),
                              ("time_s", ".4f"), ("feasible", "")]))
    print("\n(the first dp call includes compiling its Numba kernels, unless cached)")
    return 0


def cmd_methods(args) -> int:
    from tjap.registry import entries

    if args.json:
        _print_json({m.name: m.description for m in entries("tree")})
    else:
        for m in entries("tree"):
            print(f"{m.name:16s} {m.description}")
    return 0


def cmd_network(args) -> int:
    from placement.network.cli import run

    return run(args)


def cmd_interference(args) -> int:
    from placement.interference.cli import run

    return run(args)


COMMANDS = {"solve": cmd_solve, "generate": cmd_generate, "bench": cmd_bench, "demo": cmd_demo,
            "methods": cmd_methods, "online": cmd_online, "train": cmd_train,
            "simulate": cmd_simulate, "provision": cmd_provision, "network": cmd_network,
            "interference": cmd_interference}


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except TjapError as exc:
        print(f"tjap: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tjap: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
