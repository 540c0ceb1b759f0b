"""``tjap simulate`` and ``tjap provision``: the batch-queue simulator on real traces, and the
provisioners of chained jobs (seed 004), simulated or against a real Slurm."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from tjap.cli.common import (
    add_common,
    add_executor_arguments,
    check_output,
    executor_from_args,
    positive,
    print_json,
    warn,
)
from tjap.core.errors import TjapError


def add_parser(sub) -> None:
    """Add ``simulate`` and ``provision`` to the ``tjap`` parser."""
    from tjap.registry import methods

    p = sub.add_parser(
        "simulate",
        help="replay a workload trace on the batch-queue simulator",
        description="Replay a trace (SWF or sacct TSV) on the Slurm-like simulator "
        "and print its summary. What the loader read and changed "
        "(skipped lines per reason, runtimes cut to their limit, "
        "limits taken from runtimes, dependencies from SWF field 17) "
        'goes to stderr, or into the JSON as "trace_report". '
        "The defaults are Slurm's, not textbook EASY: a backfill pass "
        "every 30 s, job ends rounded up to 60 s, at most 500 jobs "
        "tested a pass, and a backfilled job must end before the "
        "reservation begins; --backfill textbook is the textbook rule. "
        "See tjap.placement.batch.simulator for the scheduling rules.",
    )
    p.add_argument("--trace", required=True, metavar="FILE", help=".swf, .swf.gz or sacct TSV")
    p.add_argument("--format", choices=("swf", "sacct"), help="default: from the file name")
    p.add_argument(
        "--nodes",
        type=positive(int),
        help="cluster size (default: the trace header's MaxNodes / MaxProcs)",
    )
    p.add_argument(
        "--backfill",
        default="easy",
        help="easy (default): one reservation, run as Slurm does with the --bf-* "
        "options below | textbook: EASY of Mu'alem and Feitelson (a pass at every "
        "event, no rounding, no limit on jobs tested, a backfilled job may end "
        "when the reservation begins) | none | slurm (unlimited reservations) | "
        "conservative | a reservation depth N",
    )
    p.add_argument(
        "--bf-interval",
        type=int,
        default=None,
        metavar="S",
        help="seconds between backfill passes, 0 = at every change (default 30, "
        "Slurm's bf_interval)",
    )
    p.add_argument(
        "--bf-resolution",
        type=positive(int),
        default=None,
        metavar="S",
        help="job ends are rounded up to S seconds in backfill (default 60, Slurm's bf_resolution)",
    )
    p.add_argument(
        "--bf-max-job-test",
        type=positive(int),
        default=None,
        metavar="N",
        help="jobs a backfill pass tests at most (default 500, Slurm's bf_max_job_test)",
    )
    p.add_argument(
        "--ignore-dependencies",
        action="store_true",
        help="drop the dependencies the trace states (SWF field 17, preceding job); "
        "by default a job waits for the end of the job it names",
    )
    p.add_argument("--start", metavar="ISO", help="first submission date to replay (UTC)")
    p.add_argument("--days", type=positive(float), help="days of submissions to replay")
    p.add_argument(
        "--warm-start",
        action="store_true",
        help="start at --start from the trace's own running and queued jobs",
    )
    for factor in ("age", "job-size", "fairshare", "qos"):
        p.add_argument(
            f"--weight-{factor}",
            type=float,
            default=0.0,
            help=f"PriorityWeight{factor.title().replace('-', '')} (default 0)",
        )
    p.add_argument(
        "--max-age",
        type=positive(int),
        default=7 * 86400,
        metavar="S",
        help="PriorityMaxAge: seconds of waiting after which the age factor is full "
        "(default 604800, 7 days)",
    )
    p.add_argument(
        "--plot",
        metavar="PNG",
        help="write utilization, queue and wait plots to PNG (missing folders are created)",
    )
    p.add_argument(
        "--per-job",
        metavar="CSV",
        help="write each job's submit, start, end, wait to CSV (missing folders are created)",
    )
    add_common(p)

    p.set_defaults(run=cmd_simulate)

    p = sub.add_parser("provision", help="chained jobs: when to submit a successor (seed 004)")
    prov = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    e = prov.add_parser(
        "evaluate",
        help="interruption and overlap of a provisioner on a trace",
        description="Inject predecessor/successor pairs (48 h each) into a replay "
        "of the trace at random times of [--from, --to) whose reactive "
        "wait matches --load, and report the provisioner's mean "
        "interruption and overlap.",
    )
    e.add_argument(
        "--trace",
        required=True,
        metavar="FILE",
        help="the trace replayed as background load (SWF or sacct TSV, e.g. the "
        "bundled placement/batch/data/ls6-a100.tsv)",
    )
    e.add_argument(
        "--from",
        dest="start",
        required=True,
        metavar="ISO",
        help="first date (UTC) at which a pair may be injected",
    )
    e.add_argument(
        "--to",
        dest="end",
        required=True,
        metavar="ISO",
        help="end date (UTC, excluded) of the injection period",
    )
    e.add_argument(
        "--nodes", type=positive(int), default=1, help="nodes of each pair job (default 1)"
    )
    e.add_argument(
        "--cluster-nodes",
        type=positive(int),
        default=76,
        help="nodes of the simulated cluster (default 76, LS6's A100 nodes)",
    )
    e.add_argument(
        "--load",
        choices=("heavy", "medium", "light", "any"),
        default="any",
        help="reactive wait > 12 h, 2-12 h, < 2 h",
    )
    e.add_argument(
        "--policy",
        default="reactive",
        help=f"{' | '.join(methods('provision'))} (learned: shipped weights); several, "
        "comma-separated, are evaluated on the same pairs, one task each; "
        "NAME@W (e.g. moe@2) serves a regressor's threshold calibrated for "
        "interruption weight e_I/e_O = W",
    )
    e.add_argument(
        "--scheduler",
        default="easy",
        choices=("easy", "mirage"),
        help="easy: Slurm defaults (EASY, FCFS); mirage: the published Mirage "
        "simulator (conservative backfill, age + size priority), which the "
        "learned provisioners were trained on",
    )
    e.add_argument(
        "--weights",
        default=None,
        metavar="JSON",
        help="a learned --policy's trained weights instead of the shipped ones (the "
        "metadata .json, e.g. OUT/provision_moe.json of `tjap train provision`)",
    )
    e.add_argument(
        "--pairs",
        type=positive(int),
        default=20,
        help="pairs injected, each at its own time (default 20)",
    )
    e.add_argument(
        "--max-tries", type=positive(int), help="injection times tried (default 20x pairs)"
    )
    add_common(e)
    add_executor_arguments(e)
    c = prov.add_parser(
        "calibrate",
        help="thresholds of the regression provisioners for penalty weights",
        description="Choose, for each interruption weight e_I/e_O, the decision "
        "threshold of rf, xgb, transformer and moe on the training "
        "run's held-out episodes, and store it in their metadata "
        "(NAME@W then serves it).",
    )
    c.add_argument(
        "--trace",
        required=True,
        metavar="FILE",
        help="the trace the models were trained on (their held-out episodes are re-recorded on it)",
    )
    c.add_argument(
        "--interruption-weights",
        type=positive(float),
        nargs="+",
        default=None,
        metavar="W",
        help="interruption weights e_I / e_O to calibrate for (default 1 2 4)",
    )
    c.add_argument(
        "--weights",
        type=_interruption_weight,
        nargs="+",
        default=None,
        metavar="W",
        dest="deprecated_weights",
        help="deprecated alias of --interruption-weights (numbers only: elsewhere "
        "--weights is a weights file)",
    )
    c.add_argument(
        "--models",
        nargs="+",
        default=["rf", "xgb", "transformer", "moe"],
        choices=("rf", "xgb", "transformer", "moe"),
        help="the regression provisioners to calibrate (default all four)",
    )
    c.add_argument(
        "--weights-dir",
        default=None,
        metavar="DIR",
        help="folder of the models' weights, whose metadata gains the thresholds "
        "(default: the shipped learned/weights)",
    )
    c.add_argument(
        "--data",
        default="build/provision_held_out.npz",
        metavar="NPZ",
        help="cache of the re-recorded held-out episodes: read if it exists, else "
        "written (missing folders are created; default "
        "build/provision_held_out.npz)",
    )
    c.add_argument(
        "--workers",
        type=positive(int),
        default=1,
        help="processes re-recording the held-out episodes (default 1)",
    )
    add_common(c)
    _add_live(
        prov.add_parser(
            "live",
            help="run a provisioner against a real Slurm (sbatch the successor)",
            description="Watch a predecessor on a real Slurm and submit its successor "
            "when the provisioner says so (compressed time; optional "
            "trace background load). See tjap.placement.slurm.chained.",
        )
    )
    add_common(prov.choices["live"])

    p.set_defaults(run=cmd_provision)


def cmd_simulate(args) -> int:
    from tjap.core.errors import InvalidInputError
    from tjap.core.executor import progress_bar
    from tjap.placement.batch.replay import monthly_waits, replay_trace
    from tjap.placement.batch.simulator import Priority, SchedulerConfig

    plot = check_output(args.plot, "--plot")  # before the simulation, not after it
    per_job = check_output(args.per_job, "--per-job")
    backfill = int(args.backfill) if args.backfill.isdigit() else args.backfill
    priority = Priority(
        age=args.weight_age,
        job_size=args.weight_job_size,
        fairshare=args.weight_fairshare,
        qos=args.weight_qos,
        max_age_s=args.max_age,
    )
    tuning = {
        "bf_interval_s": args.bf_interval,
        "bf_resolution_s": args.bf_resolution,
        "bf_max_job_test": args.bf_max_job_test,
    }
    if backfill == "textbook":
        given = [
            f"--{k[:-2] if k.endswith('_s') else k}".replace("_", "-")
            for k, v in tuning.items()
            if v is not None
        ]
        if given:
            raise InvalidInputError(
                f"--backfill textbook fixes the backfill tuning; drop "
                f"{', '.join(given)} or use --backfill easy"
            )
        config = SchedulerConfig.textbook_easy(priority=priority)
    else:
        defaults = {"bf_interval_s": 30, "bf_resolution_s": 60, "bf_max_job_test": 500}
        tuned: dict[str, Any] = {k: defaults[k] if v is None else v for k, v in tuning.items()}
        config = SchedulerConfig(backfill=backfill, priority=priority, **tuned)
    with progress_bar("simulate", quiet=args.quiet) as advanced:
        result, info = replay_trace(
            args.trace,
            format=args.format,
            nodes=args.nodes,
            config=config,
            start=args.start,
            days=args.days,
            warm_start=args.warm_start,
            ignore_dependencies=args.ignore_dependencies,
            progress=advanced,
        )
    report = info["report"]
    summary = {"jobs": 0, "skipped_lines": info["skipped_lines"]} | result.summary()
    summary |= {"nodes": info["nodes"], "backfill": args.backfill, "trace": info["trace"]}
    if args.warm_start:
        summary["months"] = monthly_waits(result)
    if plot is not None:
        plot.parent.mkdir(parents=True, exist_ok=True)
        result.plot(plot)
    if per_job is not None:
        from tjap.core.report import write_csv

        write_csv(per_job, result.per_job())
    if args.json:
        for line in report.warnings:
            print(f"tjap: warning: {line}", file=sys.stderr)
        print_json(summary | {"trace_report": report.to_dict()})
        return 0
    print(report.text(), file=sys.stderr, flush=True)
    for key, value in summary.items():
        if key == "months":
            for row in value:
                print(
                    f"{row['month']}  jobs {row['jobs']:6d}  simulated wait "
                    f"{row['simulated_mean_wait_h']:7.2f} h  recorded {row['recorded_mean_wait_h']:7.2f} h"
                )
        else:
            print(f"{key:22s} {value:.3f}" if isinstance(value, float) else f"{key:22s} {value}")
    return 0


def _trace_jobs(trace):
    """The trace's jobs, read once per process (forked workers share the parent's)."""
    from tjap.placement.batch import load_trace

    if trace not in _TRACES:
        _TRACES.clear()
        _TRACES[trace] = load_trace(trace)[0]
    return _TRACES[trace]


_TRACES: dict = {}


def _provisioner(name: str, seed: int, weights=None):
    """A registered provisioner by name (learned ones take the seed of their sampling, and
    ``weights``, a trained model's metadata, instead of the shipped one)."""
    from tjap.core.errors import InvalidInputError
    from tjap.registry import get

    method = get("provision", name)
    if weights is not None and not method.learned:
        raise InvalidInputError(
            f"--weights is for a learned --policy; {name!r} has no weights "
            "(tjap methods lists the learned provisioners)"
        )
    options = {"seed": seed} if method.learned else {}
    return method.make(name, **options, **({"weights": weights} if weights is not None else {}))


def _provision_evaluate(trace, cluster_nodes, nodes, times, policy, seed, scheduler, weights=None):
    """One provisioner over the injection times (a task of the executor)."""
    from tjap.heuristics.batch.rules import evaluate, scheduler_config
    from tjap.placement.batch.chained import Pair

    provisioner = _provisioner(policy, seed, weights)
    return evaluate(
        _trace_jobs(trace),
        cluster_nodes,
        Pair(nodes=nodes),
        times,
        provisioner,
        scheduler_config(scheduler),
        seed=seed,
    )


def cmd_provision(args) -> int:
    if args.what == "calibrate":
        return _provision_calibrate(args)
    if args.what == "live":
        return _provision_live(args)
    from tjap.heuristics.batch.rules import sample_pairs, scheduler_config
    from tjap.placement.batch.chained import Pair
    from tjap.placement.batch.replay import check_period, parse_date

    jobs = _trace_jobs(args.trace)
    start, end = (
        int(jobs.from_unix(parse_date(d, flag)))
        for d, flag in ((args.start, "--from"), (args.end, "--to"))
    )
    check_period(jobs, start, end)  # a period outside the trace would measure nothing
    policies = [p.strip() for p in args.policy.split(",") if p.strip()]
    if args.weights is not None and len(policies) != 1:
        raise TjapError(
            f"--weights is one model's file: give one --policy with it, not "
            f"{len(policies)} ({args.policy})"
        )
    for policy in policies:  # bad names and bad or missing weights fail here, before any replay
        _provisioner(policy, args.seed, args.weights)
    config = scheduler_config(args.scheduler)
    pair = Pair(nodes=args.nodes)
    if args.nodes > args.cluster_nodes:
        raise TjapError(f"--nodes {args.nodes} exceeds --cluster-nodes {args.cluster_nodes}")
    times = sample_pairs(
        jobs,
        args.cluster_nodes,
        pair,
        start,
        end,
        None if args.load == "any" else args.load,
        args.pairs,
        args.seed,
        config,
        max_tries=args.max_tries,
    )
    if not times:  # nothing to evaluate: no zeros that measure nothing
        tries = args.max_tries or 20 * args.pairs
        raise TjapError(
            f"none of {tries} injection times in --from {args.start} --to {args.end} "
            f"had {args.load} load for {args.nodes}-node pairs (heavy: reactive wait "
            "> 12 h, medium 2-12 h, light < 2 h); raise --max-tries, widen the period "
            "or choose another --load"
        )
    tasks = [
        (
            args.trace,
            args.cluster_nodes,
            args.nodes,
            times,
            policy,
            args.seed,
            args.scheduler,
            args.weights,
        )
        for policy in policies
    ]
    if len(tasks) == 1:  # errors propagate as one-line errors
        results = [_provision_evaluate(*tasks[0])]
    else:
        results = executor_from_args(args).results(
            _provision_evaluate, tasks, desc="provisioners", quiet=args.quiet
        )
    results = [
        r.to_dict()
        | {
            "load": args.load,
            "nodes": args.nodes,
            "requested_pairs": args.pairs,
            "scheduler": args.scheduler,
        }
        for r in results
    ]
    if args.json:
        print_json(results[0] if len(policies) == 1 and results else results)
    else:
        for k, result in enumerate(results):
            print("" if k == 0 else "\n", end="")
            for key, value in result.items():
                if key != "outcomes_h":
                    print(
                        f"{key:28s} {value:.3f}"
                        if isinstance(value, float)
                        else f"{key:28s} {value}"
                    )
    if len(times) < args.pairs:
        print(
            f"tjap: only {len(times)} of {args.pairs} injection times had {args.load} load",
            file=sys.stderr,
        )
    return 0 if len(results) == len(policies) else 1


#: ``tjap provision calibrate``'s interruption weights when none are given.
DEFAULT_INTERRUPTION_WEIGHTS = [1.0, 2.0, 4.0]


def _interruption_weight(value: str) -> float:
    """calibrate's deprecated ``--weights``: a positive number, never a weights file."""
    try:
        return positive(float)(value)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(
            f"{exc}; calibrate's --weights (deprecated: use --interruption-weights) takes "
            f"interruption weights e_I/e_O, not a weights file (that is --weights-dir DIR)"
        ) from None


def _interruption_weights(args) -> list[float]:
    """The weights to calibrate for: --interruption-weights, or the deprecated --weights with a
    one-line warning (both at once is an error)."""
    if args.deprecated_weights is None:
        return args.interruption_weights or DEFAULT_INTERRUPTION_WEIGHTS
    if args.interruption_weights is not None:
        raise TjapError("give --interruption-weights only (--weights is its deprecated alias)")
    warn(
        "warning: `provision calibrate --weights` is deprecated, use --interruption-weights "
        "(everywhere else --weights is a weights file)"
    )
    return args.deprecated_weights


def _provision_calibrate(args) -> int:
    from tjap.learned.batch.calibrate import calibrate

    if not Path(args.data).exists():  # read if it exists, else written
        check_output(args.data, "--data")
    chosen = calibrate(
        args.trace,
        _interruption_weights(args),
        args.models,
        args.weights_dir,
        args.data,
        args.workers,
        command=args.command_line,
        log=(lambda *a: None) if args.json else (lambda m: print(m, flush=True)),
    )
    if args.json:
        print_json(chosen)
    return 0


# -- tjap provision live ---------------------------------------------------------------------
def _add_live(p) -> None:
    """The options of ``tjap provision live``."""
    from tjap.registry import methods

    p.add_argument(
        "--policy", default="moe", help=f"{' | '.join(methods('provision'))} (default moe)"
    )
    p.add_argument(
        "--weights",
        default=None,
        metavar="JSON",
        help="a learned --policy's trained weights instead of the shipped ones "
        "(the metadata .json)",
    )
    p.add_argument(
        "--compress",
        type=float,
        default=720,
        help="trace seconds per wall second (default 720: 10 trace minutes = 0.83 s, "
        "a 48 h job = 4 min; Slurm limits are whole minutes, so 2880/compress "
        "should be whole)",
    )
    p.add_argument("--nodes", type=int, default=1, help="nodes (CPUs) of each pair job (default 1)")
    p.add_argument("--runtime-h", type=float, default=48.0, help="pair runtime, trace hours")
    p.add_argument("--limit-h", type=float, default=48.0, help="pair time limit, trace hours")
    p.add_argument(
        "--local",
        action="store_true",
        help="start a throw-away localhost Slurm (76 CPUs) for this run",
    )
    p.add_argument("--cpus", type=int, default=76, help="CPUs of the --local cluster (default 76)")
    p.add_argument(
        "--slurm-conf", metavar="PATH", help="slurm.conf of the cluster (default: $SLURM_CONF)"
    )
    p.add_argument(
        "--jobcomp",
        metavar="PATH",
        help="its jobcomp/filetxt log (default: JobCompLoc from scontrol show config)",
    )
    p.add_argument(
        "--pred-job",
        type=int,
        metavar="ID",
        help="watch this existing job as the predecessor instead of submitting one",
    )
    p.add_argument(
        "--trace",
        metavar="FILE",
        help="background load from this trace (e.g. the "
        "bundled placement/batch/data/ls6-a100.tsv); none without it",
    )
    p.add_argument(
        "--at",
        default="2023-03-02T12:00",
        metavar="ISO",
        help="trace time of the predecessor's submission (default 2023-03-02T12:00, "
        "a busy day of LS6)",
    )
    p.add_argument(
        "--warmup-h",
        type=float,
        default=24.0,
        help="trace hours replayed (and recorded as history) before --at (default 24)",
    )
    p.add_argument(
        "--cancel-successor",
        action="store_true",
        help="cancel the successor once it has started (its start is the outcome)",
    )


def _provision_live(args) -> int:
    """``tjap provision live``: returns the exit code; errors raise TjapError (one line)."""
    from tjap.core.errors import InvalidInputError
    from tjap.placement.batch.chained import Pair
    from tjap.placement.slurm.background import BackgroundLoad, background_rows
    from tjap.placement.slurm.chained import START_HINT, format_decisions, run_live
    from tjap.placement.slurm.client import SlurmClient, SlurmError
    from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig

    if not 0 < args.compress <= 1e6:
        raise InvalidInputError(f"--compress must lie in (0, 1e6], got {args.compress}")
    if args.local and (args.slurm_conf or args.jobcomp):
        raise InvalidInputError("--local starts its own Slurm: drop --slurm-conf / --jobcomp")
    pair = Pair(
        nodes=args.nodes, runtime_s=int(args.runtime_h * 3600), limit_s=int(args.limit_h * 3600)
    )
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, flush=True))
    slurm = None
    load = None
    if not args.local:  # a missing Slurm is reported before anything is loaded
        client = SlurmClient({"SLURM_CONF": args.slurm_conf} if args.slurm_conf else None)
        try:
            client.ping()
        except SlurmError as exc:  # the same class: unreachable stays exit 3
            raise type(exc)(f"{exc}; {START_HINT}") from None
    provisioner = _provisioner(args.policy, args.seed, args.weights)
    try:
        if args.local:
            say(f"starting a localhost Slurm with {args.cpus} CPUs ...")
            slurm = LocalSlurm(LocalSlurmConfig(cpus=args.cpus)).start()
            client, jobcomp, workdir = slurm.client(), str(slurm.jobcomp_path), str(slurm.workdir)
        else:
            jobcomp, workdir = args.jobcomp, None
        rows = []
        if args.trace and args.pred_job is None:
            horizon_h = args.runtime_h + 3 * args.limit_h
            cpus = args.cpus if args.local else sum(n.cpus_total for n in client.nodes())
            rows = background_rows(
                args.trace, args.at, args.warmup_h, horizon_h, args.compress, cpus
            )
            say(
                f"background: {len(rows)} jobs of {args.trace} from {args.warmup_h:g} h before "
                f"{args.at}, {args.compress:g}x faster"
            )
        warmup_s = int(args.warmup_h * 3600) if (rows and args.pred_job is None) else 0
        t0 = time.time()
        if rows:
            load = BackgroundLoad(client, rows, t0, workdir)
            load.start()
        say(
            f"policy {args.policy}: {warmup_s / args.compress:.0f} s of warm-up, then the "
            f"predecessor ({pair.nodes} node(s), {args.runtime_h:g} h, limit {args.limit_h:g} h); "
            f"a decision every {600 / args.compress:.2f} s"
        )

        def show(d):
            pw = (
                "" if d.predicted_wait_h is None else f", predicted wait {d.predicted_wait_h:.2f} h"
            )
            say(
                f"  {time.time() - t0:7.1f} s  trace +{d.trace_h:6.2f} h  predecessor "
                f"{d.pred_state:8s} remaining {d.remaining_h:6.2f} h{pw}: {d.action}"
            )

        result = run_live(
            client,
            provisioner,
            pair=pair,
            compress=args.compress,
            pred_job_id=args.pred_job,
            jobcomp_path=jobcomp,
            warmup_s=warmup_s,
            cancel_successor=args.cancel_successor,
            workdir=workdir,
            on_decision=show,
            seed=args.seed,
        )
        if load is not None and load.error is not None:
            raise load.error
    finally:
        if load is not None:
            load.stop()
        if slurm is not None:
            slurm.stop()
    out = result.to_dict()
    out["background_jobs"] = len(rows)
    if args.json:
        print_json(out)
    else:
        print(format_decisions(result, decisions=False))  # the decisions were printed above
        t = result.pred_submit or 0

        def since(wall_s):  # a time Slurm did not record (the run stopped before it) shows as -
            return "-" if wall_s is None else wall_s - t

        print(
            f"Slurm's records (wall s after the predecessor's submission): predecessor started "
            f"{since(result.pred_start)}, ended {since(result.pred_end)}; successor submitted "
            f"{since(result.succ_submit)}, started {since(result.succ_start)}"
        )
    return 0
