"""``tjap slurm place`` and ``tjap slurm advise``: TJAP's window placement inside a real Slurm.

``place`` runs the placement service (:class:`tjap.slurm.service.PlacementService`): every
``--interval`` seconds (``--once``: one pass) it places the jobs held in the partition
(``sbatch --hold``) on the switch tree and releases them; ``advise`` prints the placement it would
make now and changes nothing. Both read the Slurm that ``SLURM_CONF`` points at, with the Slurm
commands found on ``PATH``.
"""

from __future__ import annotations

import json
import math

from tjap.cli.common import add_common, check_output

METHOD_DEFAULT = "guarded"


def _reading_options(p) -> None:
    p.add_argument("--partition", help="the partition served (default: Slurm's default partition)")
    p.add_argument("--users", help="only jobs of these users (comma-separated)")
    p.add_argument("--accounts", help="only jobs of these accounts (comma-separated)")
    p.add_argument(
        "--method",
        default=METHOD_DEFAULT,
        help=f"window method, see `tjap methods` (default {METHOD_DEFAULT}: the "
        "cheapest of the SCAS optimum and Slurm's own choice, improved "
        "free-form within the time limit)",
    )
    p.add_argument(
        "--time-limit",
        default="10",
        metavar="S",
        help="time limit of the method per window in seconds, or 'none' (default 10)",
    )
    p.add_argument(
        "--cap",
        default="5",
        metavar="N",
        help="at most N multi-node jobs per window, or 'none' (default 5)",
    )
    p.add_argument(
        "--backfill",
        choices=("easy", "none"),
        default="easy",
        help="easy (default): a window also takes held jobs behind the first one "
        "that does not fit, when they fit now and do not delay it (EASY, from "
        "the running jobs' time limits); none: the paper's prefix only",
    )
    p.add_argument(
        "--no-compare",
        dest="compare",
        action="store_false",
        help="do not compute slurm-tree's cost and the SCAS optimum beside another --method",
    )
    p.add_argument(
        "--locality-slack",
        default=None,
        metavar="F",
        help="hold a multi-node job whose cheapest idle nodes cost more than 1+F "
        "times its cheapest on the empty partition, for a better placement "
        "(e.g. 0.5; default: never hold for locality)",
    )
    p.add_argument(
        "--locality-wait",
        default=None,
        metavar="S",
        help="with --locality-slack: no job is held for locality once it was "
        "submitted S seconds ago (default 300)",
    )
    p.add_argument(
        "--test-only",
        action="store_true",
        help="also ask Slurm (sbatch --test-only) where it would start the window's first job",
    )


def add_parser(sub) -> None:
    """Add ``slurm`` and its subcommands to the ``tjap`` parser."""
    p = sub.add_parser("slurm", help="place held Slurm jobs on the switch tree (a service)")
    what = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    s = what.add_parser(
        "place",
        help="the placement service: place held jobs window by window",
        description="Every --interval seconds read the live switch tree (scontrol show "
        "topology), the idle nodes (sinfo) and the jobs submitted held (sbatch "
        "--hold) to the partition; order them (more windows waited first, then "
        "fewer nodes), take the greedy prefix that fits, solve it with --method, "
        "then for each job: scontrol update JobId=ID ReqNodeList=NODES and "
        "scontrol release ID, each step checked. Every window is a JSON line in "
        "--log (and on stdout with --json). SIGTERM/Ctrl-C finish the current "
        "job's update and stop.",
    )
    _reading_options(s)
    s.add_argument(
        "--interval", default="60", metavar="S", help="seconds between windows (default 60)"
    )
    s.add_argument("--once", action="store_true", help="one window, then exit")
    s.add_argument(
        "--dry-run", action="store_true", help="decide and print, change nothing in Slurm"
    )
    s.add_argument(
        "--log",
        metavar="FILE",
        help="append every decision as a JSON line to FILE (missing folders are created)",
    )
    s.add_argument(
        "--retries",
        default="none",
        metavar="N",
        help="give up after N failed passes in a row (default: never; with --once 0)",
    )
    add_common(s)
    s.set_defaults(run=run_place)
    a = what.add_parser(
        "advise",
        help="the placement the service would make now (read-only)",
        description="Read the live tree, idle nodes and held jobs and print "
        "the window placement the service would make; nothing is "
        "changed in Slurm.",
    )
    _reading_options(a)
    add_common(a)
    a.set_defaults(run=run_advise)


def _number(text: str, flag: str, kind=float, allow_none: bool = False):
    from tjap.core.errors import InvalidInputError

    if allow_none and str(text).lower() in ("none", "no", "off"):
        return None
    try:
        value = kind(text)
    except ValueError:
        raise InvalidInputError(
            f"{flag} must be a {'whole ' if kind is int else ''}number"
            f"{' or none' if allow_none else ''}, got {text!r}"
        ) from None
    if kind is float and not math.isfinite(value):
        raise InvalidInputError(f"{flag} must be a finite number, got {text!r}")
    return value


def _names(text: str | None) -> tuple:
    return tuple(n.strip() for n in text.split(",")) if text else ()


def _config(args, **extra):
    from tjap.core.errors import InvalidInputError
    from tjap.slurm.service import ServiceConfig

    slack = None
    if args.locality_slack is not None:
        slack = _number(args.locality_slack, "--locality-slack", allow_none=True)
    if args.locality_wait is not None:
        if slack is None:
            raise InvalidInputError(
                "--locality-wait needs --locality-slack (how much costlier "
                "than its best a job's nodes may be before it waits)"
            )
        extra["locality_wait_s"] = _number(args.locality_wait, "--locality-wait")
    return ServiceConfig(
        partition=args.partition,
        users=_names(args.users),
        accounts=_names(args.accounts),
        method=args.method,
        time_limit_s=_number(args.time_limit, "--time-limit", allow_none=True),
        cap=_number(args.cap, "--cap", int, allow_none=True),
        backfill=args.backfill,
        seed=args.seed,
        compare=args.compare,
        test_only=args.test_only,
        locality_slack=slack,
        **extra,
    ).validate()


def describe(rec: dict) -> list[str]:
    """Human lines for a window (or advice) record."""

    def cost(v):
        return "-" if v is None else f"{v:g}"

    jobs = rec.get("jobs", [])
    if rec.get("topology") == "block":
        beside = (
            f"slurm-block {cost(rec.get('slurm_block_cost'))}, optimum under Slurm's "
            f"block rule {cost(rec.get('scas_optimum'))}, without it "
            f"{cost(rec.get('unconstrained_optimum'))}"
        )
    else:
        beside = (
            f"slurm-tree {cost(rec.get('slurm_tree_cost'))}, SCAS optimum "
            f"{cost(rec.get('scas_optimum'))}"
        )
    head = (
        f"window {rec.get('window', '-')} ({rec['partition']}, {rec['idle_count']} idle): "
        f"{rec.get('placed', 0)}/{len(jobs)} placed, {len(rec.get('waiting', []))} "
        f"waiting; cost {cost(rec.get('cost'))} ({beside})"
    )
    lines = [head]
    for e in jobs:
        why = f" ({e['reason']})" if e.get("reason") else ""
        seg = f", segments of {e['segment']}" if e.get("segment") else ""
        how = " via ExcNodeList" if e.get("mechanism") == "excnodelist" and e.get("nodes") else ""
        lines.append(
            f"  job {e['job_id']} ({e['nodes_requested']} nodes{seg}, waited "
            f"{e['waited']}): {e['nodes'] or '-'} {e['outcome']}{how}{why}"
        )
    for e in rec.get("unsteered", []):
        lines.append(f"  job {e['job_id']}: {e['reason']}")
    for e in rec.get("held_for_locality", []):
        lines.append(
            f"  job {e['job_id']} ({e['nodes_requested']} nodes): held for locality "
            f"(best idle nodes cost {e['cost_now']:g}, {e['best']:g} on the empty "
            f"partition; submitted {e['waited_s']:.0f} s ago, held at most "
            f"{e['wait_left_s']:.0f} s more)"
        )
    for e in rec.get("ignored", []):
        lines.append(f"  job {e['job_id']}: ignored ({e['reason']})")
    return lines


def run_place(args) -> int:
    from tjap.slurm.service import PlacementService

    cfg = _config(
        args,
        interval_s=_number(args.interval, "--interval"),
        dry_run=args.dry_run,
        retries=_number(args.retries, "--retries", int, allow_none=True),
    )

    def emit(rec):
        if args.json:
            print(json.dumps(rec, allow_nan=False, default=str), flush=True)
        elif not args.quiet and rec.get("event") == "window":
            print("\n".join(describe(rec)), flush=True)

    log = check_output(args.log, "--log")
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)  # as every output path: folders created
    service = PlacementService(cfg, log_path=log, emit=emit)
    # a Slurm failure is one line, exit 3 when Slurm cannot be reached and 2 otherwise (run_command)
    return service.run(once=args.once)


def run_advise(args) -> int:
    from tjap.slurm.service import PlacementService

    service = PlacementService(_config(args))
    rec = service.advise()  # a Slurm failure: one line, exit 3 or 2 (run_command)
    if args.json:
        print(json.dumps(rec, indent=2, allow_nan=False, default=str))
    else:
        print("\n".join(describe(rec)))
    return 0
