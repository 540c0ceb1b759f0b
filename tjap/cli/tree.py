"""``tjap solve``, ``generate``, ``online`` and ``demo``: seed 002's windows on a switch tree."""

from __future__ import annotations

import sys
from pathlib import Path

from tjap.cli.common import (
    add_common,
    cap,
    check_output,
    count,
    fragmentation,
    positive,
    print_json,
    warn,
)
from tjap.core.errors import InvalidInputError, TjapError
from tjap.core.executor import progress, progress_bar


def add_parser(sub) -> None:
    """Add ``solve``, ``generate``, ``online`` and ``demo`` to the ``tjap`` parser."""
    from tjap.registry import entries

    method_help = "; ".join(f"{m.name}: {m.description}" for m in entries("tree"))
    p = sub.add_parser(
        "solve",
        help="solve window(s) from a JSON or JSONL file",
        description="Solve each window of FILE (.json: one window or a list; "
        ".jsonl: one a line) and print the assignment and cost.",
    )
    p.add_argument("file", help="window file (.json or .jsonl)")
    p.add_argument("--method", default="auto", help=f"solver method (default auto). {method_help}")
    p.add_argument(
        "--time-limit",
        type=positive(float),
        default=None,
        metavar="S",
        help="time limit per window in seconds",
    )
    p.add_argument(
        "--fragmentation",
        type=fragmentation,
        default=None,
        metavar="W[:LEVEL]",
        help="add W to the objective per whole idle domain of LEVEL (default 1: leaf "
        "switches, base blocks) that a job breaks into; a small W such as 0.001 "
        "breaks ties between equally cheap placements (only methods with the "
        "'constraints' flag take it)",
    )
    p.add_argument(
        "--convention",
        choices=("paper", "published"),
        default="paper",
        help="cost convention (default paper)",
    )
    add_method_options(p)
    add_common(p)
    p.set_defaults(run=cmd_solve)

    p = sub.add_parser("generate", help="generate instances")
    gen = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    g = gen.add_parser(
        "windows",
        help="windows of the paper's stream, as JSONL",
        description="Replay the paper's workload and write its scheduling windows "
        "(on the paper's layouts, or on your cluster's tree with "
        "--topology).",
    )
    g.add_argument(
        "--num-windows",
        type=positive(int),
        default=200,
        metavar="N",
        help="windows to write (default 200)",
    )
    g.add_argument(
        "--layout",
        choices=("paper", "published"),
        default="paper",
        help="paper: k=20, 10 pods of 100; published: the authors' 25 pods of 40",
    )
    g.add_argument(
        "--topology",
        default=None,
        metavar="FILE",
        help="your cluster instead of --layout: a Slurm topology.conf or JSON tree; "
        "the generator is scaled to its node count so that it carries the "
        "paper's load per node (1000+ nodes: runtimes x nodes/1000; fewer: jobs "
        "of at most a quarter of the cluster, arriving less often; a --workload "
        "is used as read) and each line names FILE relative to --out",
    )
    g.add_argument(
        "--warmup",
        type=int,
        default=None,
        metavar="N",
        help="with --topology: windows replayed before the first one written "
        "(default: one mean job runtime's worth, a loaded cluster)",
    )
    g.add_argument(
        "--cap",
        type=cap,
        default=5,
        help="most multi-node jobs per window (default 5, as the published code; 'none')",
    )
    g.add_argument(
        "--tau", type=positive(int), default=60, help="window period in seconds (default 60)"
    )
    g.add_argument(
        "--epoch-windows",
        type=positive(int),
        default=100,
        metavar="N",
        help="windows per epoch: every N windows the replay starts again from an "
        "empty cluster at a random job of the workload (default 100)",
    )
    add_constraints_option(g)
    add_workload_options(g)
    g.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="output .jsonl file (missing folders are created)",
    )
    add_common(g)
    g.set_defaults(run=cmd_generate)

    p = sub.add_parser(
        "online",
        help="replay a workload with a scheduling policy",
        description="Replay jobs of the paper's workload (or of a job list, "
        "--workload FILE) on an empty cluster, one of the paper's layouts or "
        "your own (--topology FILE), and report CH cost, wait, utilization "
        "and makespan. Every policy and placement runs on any switch tree. The "
        "job lists carry no job constraints (segment, within, exclusive): "
        "every job is a plain node count.",
    )
    add_workload_options(p, paper=True)
    p.add_argument(
        "--num-jobs",
        type=positive(int),
        default=None,
        help="jobs to replay (default 300; with a --workload FILE, 300 or the rest "
        "of the file from --first-job, whichever is fewer)",
    )
    p.add_argument(
        "--first-job",
        type=count,
        default=0,
        help="index of the first job replayed, from 0 (default 0)",
    )
    p.add_argument(
        "--layout",
        choices=("paper", "published"),
        default=None,
        help="paper (default): k=20, 10 pods of 100; published: the authors' 25 pods of 40",
    )
    p.add_argument(
        "--topology",
        default=None,
        metavar="FILE",
        help="your cluster instead of --layout: a Slurm topology.conf (topology/tree "
        "or topology/block), topology.yaml or JSON tree (Topology.to_dict). The "
        "paper's generator is scaled to its node count as in tjap generate "
        "windows --topology (1000+ nodes: runtimes x nodes/1000; fewer: jobs of "
        "at most a quarter of the cluster, arriving less often); a --workload is "
        "used as read. A Kubernetes node list (kubectl get nodes -o json or "
        "yaml) is read as the tree of its node labels at --levels, Volcano "
        "HyperNode manifests as their tree",
    )
    p.add_argument(
        "--levels",
        default=None,
        metavar="KEY,KEY,...",
        help="with a node list as --topology: the node label keys of its levels, top "
        "first (e.g. topology.kubernetes.io/zone,example.com/rack), or a Kueue "
        "Topology manifest naming them",
    )
    p.add_argument(
        "--policy",
        choices=("window", "fcfs", "easy"),
        default="window",
        help="window (default): every --tau seconds a greedy prefix of the queue is "
        "solved as one window with --method; fcfs: jobs start in arrival order; "
        "easy: EASY backfilling",
    )
    p.add_argument(
        "--placement",
        choices=("firstfit", "contiguous", "freeform"),
        default="firstfit",
        help="per-job placement of fcfs and easy: firstfit (default, lowest idle "
        "nodes), contiguous (cheapest block of consecutive idle nodes) or "
        "freeform (cheapest node set); the window policy places with --method "
        "instead and refuses another placement",
    )
    p.add_argument(
        "--tau", type=positive(int), default=60, help="window period in seconds (default 60)"
    )
    p.add_argument(
        "--cap", type=cap, default=5, help="most multi-node jobs per window (default 5; 'none')"
    )
    p.add_argument(
        "--method", default="dp", help="window solver, any tjap.solve method (default dp)"
    )
    p.add_argument(
        "--convention",
        choices=("paper", "published"),
        default="paper",
        help="cost convention (default paper)",
    )
    add_method_options(p)
    add_common(p)
    p.set_defaults(run=cmd_online)

    p = sub.add_parser(
        "demo",
        help="a paper-sized window solved by every exact method",
        description="Generate the first window of the paper's stream (1000 idle "
        "nodes) and solve it with every exact method.",
    )
    p.add_argument(
        "--layout",
        choices=("paper", "published"),
        default="paper",
        help="paper (default): k=20, 10 pods of 100; published: the authors' 25 pods of 40",
    )
    p.add_argument(
        "--convention",
        choices=("paper", "published"),
        default="paper",
        help="cost convention (default paper)",
    )
    p.add_argument(
        "--time-limit",
        type=positive(float),
        default=30.0,
        metavar="S",
        help="time limit of each method but dp, in seconds (default 30)",
    )
    add_common(p)
    p.set_defaults(run=cmd_demo)


def add_constraints_option(p) -> None:
    """``--constraints MIX``: windows with job constraints drawn on a loaded, fragmented
    ``--topology`` (:func:`tjap.placement.tree.block_windows.constrained_windows`)."""
    p.add_argument(
        "--constraints",
        type=constraint_mix,
        default=None,
        metavar="MIX",
        help="with --topology: windows of jobs with constraints instead of the "
        "paper's stream, each drawn on a loaded, fragmented cluster (whole, part "
        "and no base blocks busy): 'mix' is a third segmented (segments of the "
        "base block size or half of it), a quarter 'within' level 1 or 2, a "
        "tenth exclusive, the rest plain; or give the shares, e.g. "
        "segment=0.5,within=0.2,exclusive=0.1 (the rest plain)",
    )


def constraint_mix(value: str):
    """An argparse type: a :class:`~tjap.placement.tree.block_windows.ConstraintMix`."""
    import argparse

    from tjap.placement.tree.block_windows import ConstraintMix

    try:
        return ConstraintMix.parse(value)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: ``tjap solve`` / ``tjap online`` flags passed to the method as keyword options, when given
METHOD_FLAGS = {
    "iterations": "--iterations",
    "repair": "--repair",
    "preset": "--preset",
    "weights": "--weights",
    "lookahead": "--lookahead",
}


def add_method_options(p) -> None:
    """The method options of ``tjap solve`` and ``tjap online`` (each passed only when given,
    and refused in one line by a method that does not take it)."""
    p.add_argument(
        "--iterations",
        type=positive(int),
        default=None,
        metavar="N",
        help="sa, lns, nsa: moves of the search (default: the method's or preset's)",
    )
    p.add_argument(
        "--repair",
        default=None,
        metavar="NAME",
        help="sa, lns: the repair operator (greedy, lookahead, paper, uniform)",
    )
    p.add_argument(
        "--preset", default=None, metavar="NAME", help="sa, nsa: best (default) | paper | published"
    )
    p.add_argument(
        "--weights",
        default=None,
        metavar="JSON",
        help="nsa: the trained policy's metadata (default: with preset best the "
        "shipped learned/weights/nsa_cnn3_best_<convention>.json, with paper "
        "or published learned/weights/nsa_cnn3.json)",
    )
    p.add_argument(
        "--lookahead",
        type=count,
        default=None,
        metavar="K",
        help="nsa: score the policy's K proposed starts with the later jobs placed "
        "greedily (default: the preset's: best 32, paper and published 0 = off)",
    )


def method_options(args) -> dict:
    """The method options given on the command line, checked against what ``args.method``
    takes: a flag it does not take is one line naming the method and the flags it does."""
    from tjap.core.errors import InvalidInputError
    from tjap.registry import get

    options = {k: getattr(args, k) for k in METHOD_FLAGS if getattr(args, k, None) is not None}
    entry = get("tree", args.method)  # an unknown name fails here, in one line
    valid = entry.options()
    if valid is None or not options:
        return options
    refused = [METHOD_FLAGS[k] for k in options if k not in valid]
    if refused:
        takes = [flag for k, flag in METHOD_FLAGS.items() if k in valid]
        raise InvalidInputError(
            f"--method {args.method} does not take {', '.join(refused)}; it takes "
            f"{', '.join(takes) if takes else 'none of ' + ', '.join(METHOD_FLAGS.values())}"
            " (tjap methods lists what each method is)"
        )
    return options


#: ``--workload-format`` choices: "auto" tells the formats apart by the file's first lines
WORKLOAD_FORMATS = ("auto", "authors", "swf", "sacct")


def add_workload_options(p, paper: bool = False) -> None:
    """``--workload FILE`` and ``--workload-format`` (seed 002's stream on a real job list)."""
    p.add_argument(
        "--workload",
        default="paper" if paper else None,
        metavar="FILE",
        help=(
            "paper (default): the paper's random workload; or FILE: "
            if paper
            else "a job list instead of the paper's random workload: "
        )
        + "the seed-002 authors' format (one job a line: job id, submit s, runtime s, "
        "nodes), SWF or sacct. Used as read: nothing is rescaled; jobs larger than "
        "the cluster are dropped. What was read, skipped and changed goes to "
        'stderr (into --json as "trace_report")',
    )
    p.add_argument(
        "--workload-format",
        choices=WORKLOAD_FORMATS,
        default="auto",
        help="format of --workload FILE (default auto: told from its first lines, then its name)",
    )


def read_workload(args, cluster_nodes: int, show: bool = True):
    """The ``--workload FILE`` of ``args`` read for a cluster of ``cluster_nodes`` nodes, as
    (Workload, WorkloadReport), or (None, None) for the paper's generator. With ``show`` the
    report goes to stderr now (:func:`show_workload_report`); a command that checks more of its
    arguments against the workload first shows it itself, so that an error stays one line."""
    from tjap.placement.tree.workload import Workload

    path = getattr(args, "workload", None)
    if path in (None, "paper"):
        if args.workload_format != "auto":
            raise InvalidInputError("--workload-format needs --workload FILE")
        return None, None
    try:
        workload, report = Workload.from_file(
            path, args.workload_format, cluster_nodes=cluster_nodes
        )
    except InvalidInputError as exc:  # the trace loaders name their own flag
        raise InvalidInputError(str(exc).replace("--format ", "--workload-format ")) from None
    if show:
        show_workload_report(args, report)
    return workload, report


def show_workload_report(args, report) -> None:
    """What reading ``--workload FILE`` read, skipped and changed, on stderr (with ``--json``
    only its warnings: the command puts the report in its JSON, :func:`workload_fields`)."""
    if report is None:
        return
    if args.json:
        for line in (*report.trace.warnings, *report.warnings):
            warn(f"warning: {line}")
    else:
        print(report.text(), file=sys.stderr, flush=True)


def workload_fields(args, report) -> dict:
    """What a command's JSON says of a ``--workload FILE``: the file and the report (nothing for
    the paper's generator)."""
    if report is None:
        return {}
    return {"workload": str(args.workload), "trace_report": report.to_dict()}


def replay_solver(method: str, **options):
    """A window solver for the online replay: any registered method, by name."""
    from functools import partial

    from tjap.api import solve
    from tjap.registry import get

    get("tree", method)  # an unknown name fails here, in one line
    return partial(solve, method=method, **options)


def cmd_solve(args) -> int:
    from tjap.api import solve
    from tjap.placement.tree.hostlist import compress_hostlist
    from tjap.placement.tree.window import load_windows

    options = method_options(args)
    windows = load_windows(args.file)
    if not windows:
        raise TjapError(f"{args.file} holds no window")
    if args.fragmentation is not None:
        weight, level = args.fragmentation
        given = [w.with_fragmentation(weight, level) for w in windows]
        for i, (w, new) in enumerate(zip(windows, given)):
            own = w.fragmentation
            if own[0] and own != new.fragmentation:  # never replaced without a word
                raise TjapError(
                    f"{args.file}: window {i} has its own fragmentation term (weight {own[0]:g} "
                    f"at level {own[1]}); drop --fragmentation or the window's 'fragmentation'"
                )
        windows = given
    if args.time_limit is not None or "weights" in options:
        # start-up, outside every window's limit: import the method's solver, load its compiled
        # kernels and weights (a bad weights file fails here, before any output), by a solve
        # that stops at once (its result is dropped)
        solve(
            windows[0],
            args.method,
            time_limit_s=1e-3,
            seed=args.seed,
            convention=args.convention,
            **options,
        )
    results = [
        solve(
            w,
            args.method,
            time_limit_s=args.time_limit,
            seed=args.seed,
            convention=args.convention,
            **options,
        )
        for w in progress(windows, desc=args.method, quiet=args.quiet)
    ]
    if args.json:
        print_json([r.to_dict() for r in results] if len(results) > 1 else results[0].to_dict())
    else:
        for k, r in enumerate(results):
            head = f"window {k}: " if len(results) > 1 else ""
            print(
                f"{head}method={r.method} status={r.status.value} "
                f"cost={f'{r.objective:.2f}' if r.has_solution else '-'} "
                f"bound={'-' if r.bound is None else f'{r.bound:.2f}'} time={r.runtime_s:.4f}s"
            )
            named = not r.window.is_fat_tree  # names out (a fat-tree's nodes are its indices)
            for j, (job, nodes) in enumerate(zip(r.window.jobs, r.assignment)):
                where = (
                    compress_hostlist(list(r.window.node_names(nodes))) if named else _ranges(nodes)
                )
                print(f"  job {j} ({_job_label(job, r.window.levels)}): {where}")
            if r.has_solution and r.window.constrained:
                print(f"  whole idle leaf blocks after the window: {r.free_blocks()}")
            for line in r.violations():
                print(f"  breaks: {line}")
            if not r.has_solution and r.info.get("infeasible"):
                print(f"  no solution: {r.info['infeasible']}")
    return 0 if all(r.has_solution for r in results) else 1


def _job_label(job, levels=()) -> str:
    """``36 nodes, segment 12`` and the job's other constraints, for the text output (levels by
    the window's names where it has them)."""
    value = job.to_value()
    if isinstance(value, int):
        return f"{value} node" + ("s" if value != 1 else "")

    def shown(key, v):
        if v is True:
            return "yes"
        if key in ("segment_level", "within", "prefer", "exclusive") and v <= len(levels):
            return levels[v - 1]
        return v

    rest = ", ".join(f"{k} {shown(k, v)}" for k, v in value.items() if k != "nodes")
    return f"{value['nodes']} nodes, {rest}"


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
    import json
    import os

    from tjap.placement.tree.fat_tree import FatTree
    from tjap.placement.tree.stream import generate_windows

    out = check_output(args.out, "--out")  # before the work: a bad path fails now
    assert out is not None  # --out is required
    if args.constraints is not None:
        return _generate_constrained(args, out)
    if args.topology:
        from tjap.placement.tree.topology import Topology

        tree = Topology.from_file(args.topology)
        workload, report = read_workload(args, tree.num_nodes)
        with progress_bar("windows", quiet=args.quiet) as made:
            windows = generate_windows(
                topology=tree,
                num_windows=args.num_windows,
                seed=args.seed,
                cap=args.cap,
                tau_s=args.tau,
                epoch_windows=args.epoch_windows,
                warmup_windows=args.warmup,
                workload=workload,
                progress=made,
            )
        # every line names the tree file (relative to the output's folder) instead of holding it
        key = "json" if Path(args.topology).suffix.lower() == ".json" else "slurm"
        where = {key: os.path.relpath(Path(args.topology).resolve(), out.resolve().parent)}
        lines = [json.dumps({**w.to_dict(), "topology": where}) for w in windows]
        what = f"{args.topology}, {tree.num_nodes} nodes"
    else:
        if args.warmup:
            raise TjapError(
                "--warmup needs --topology (the paper's layouts keep the paper's "
                "stream from an empty cluster)"
            )
        workload, report = read_workload(args, FatTree.from_layout(args.layout).num_nodes)
        with progress_bar("windows", quiet=args.quiet) as made:
            windows = generate_windows(
                args.layout,
                args.num_windows,
                args.seed,
                cap=args.cap,
                tau_s=args.tau,
                epoch_windows=args.epoch_windows,
                workload=workload,
                progress=made,
            )
        lines = [w.to_json() for w in windows]
        what = f"{args.layout} layout"
    if report is not None:
        what += f", workload {report.summary()}"
    _write_lines(out, lines)
    summary = {
        "out": str(out),
        "windows": len(windows),
        "seed": args.seed,
        "cap": args.cap,
        "tau_s": args.tau,
        **({"topology": args.topology} if args.topology else {"layout": args.layout}),
        **workload_fields(args, report),
    }
    if args.json:
        print_json(summary)
    else:
        print(f"wrote {len(windows)} windows ({what}, seed {args.seed}) to {out}")
    return 0


def _write_lines(out: Path, lines: list[str]) -> None:
    """Write one JSON line per window to ``out`` (its folder made), or one line of error."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(line + "\n" for line in lines))
    except OSError as exc:
        raise TjapError(f"cannot write {out}: {exc.strerror}") from None


def _generate_constrained(args, out) -> int:
    """``tjap generate windows --topology FILE --constraints MIX``: windows with a ``jobs``
    list on the loaded cluster."""
    import json
    import os

    from tjap.placement.tree.block_windows import constrained_windows
    from tjap.placement.tree.topology import Topology

    if not args.topology or args.workload is not None or args.warmup is not None:
        raise TjapError(
            "--constraints draws its own windows on a --topology FILE; give "
            "--topology, and drop --workload and --warmup"
        )
    tree = Topology.from_file(args.topology)
    with progress_bar("windows", quiet=args.quiet) as made:
        windows = constrained_windows(
            tree, args.num_windows, args.seed, cap=args.cap, mix=args.constraints, progress=made
        )
    key = "json" if Path(args.topology).suffix.lower() == ".json" else "slurm"
    where = {key: os.path.relpath(Path(args.topology).resolve(), out.resolve().parent)}
    lines = []
    for w in windows:  # one key, "jobs", on every line (plain counts too)
        data = {
            "topology": where,
            "idle_nodes": list(w.node_names(w.idle_nodes)),
            "jobs": [job.to_value() for job in w.jobs],
            "meta": dict(w.meta),
        }
        lines.append(json.dumps(data))
    _write_lines(out, lines)
    summary = {
        "out": str(out),
        "windows": len(windows),
        "seed": args.seed,
        "cap": args.cap,
        "topology": args.topology,
        "mix": args.constraints.shares(),
    }
    if args.json:
        print_json(summary)
    else:
        shares = ", ".join(f"{k} {v:.0%}" for k, v in summary["mix"].items())
        print(
            f"wrote {len(windows)} windows with job constraints ({args.topology}, "
            f"{tree.num_nodes} nodes; {shares}; seed {args.seed}) to {out}"
        )
    return 0


def online_topology(args):
    """The cluster of ``tjap online``: the named ``--layout`` (default paper) or ``--topology
    FILE``, never both. FILE is read as ``tjap generate windows --topology`` reads it
    (:meth:`~tjap.placement.tree.topology.Topology.from_file`: a Slurm topology.conf of either
    plugin, topology.yaml, a JSON tree), or, when its content is a Kubernetes node list, as the
    tree its node labels draw at the ``--levels`` keys
    (:meth:`~tjap.placement.tree.topology.Topology.from_node_labels`), or Volcano HyperNode
    manifests (:meth:`~tjap.placement.tree.topology.Topology.from_hypernodes`)."""
    from tjap.placement.tree.fat_tree import FatTree
    from tjap.placement.tree.sources import file_kind, read_utf8
    from tjap.placement.tree.topology import Topology

    if args.topology is None:
        if args.levels is not None:
            raise InvalidInputError("--levels needs --topology FILE, a node list")
        return FatTree.from_layout(args.layout or "paper")
    if args.layout is not None:
        raise InvalidInputError(
            "give --layout (one of the paper's fat-trees) or --topology FILE (your cluster), "
            "not both"
        )
    path = Path(args.topology)
    try:
        if not path.exists():
            raise InvalidInputError(f"no such topology file: {path}")
        kind = file_kind(read_utf8(path, "topology file"), f"topology file {str(path)!r}")
        if kind == "kube-nodes":
            if args.levels is None:
                raise InvalidInputError(
                    "it is a node list: give the label keys of its levels, top first, with "
                    "--levels KEY,KEY,... (or --levels FILE, a Kueue Topology)"
                )
            levels = (
                Path(args.levels)
                if Path(args.levels).is_file()
                else [key.strip() for key in args.levels.split(",") if key.strip()]
            )
            return Topology.from_node_labels(path, levels)
        if args.levels is not None:
            raise InvalidInputError(f"--levels is for a node list, and this file is {kind}")
        if kind == "hypernodes":
            return Topology.from_hypernodes(path)
        return Topology.from_file(path)
    except InvalidInputError as exc:  # one line that names the file
        text = str(exc)
        raise InvalidInputError(
            text if str(path) in text else f"--topology {path}: {text}"
        ) from None


def cmd_online(args) -> int:
    from tjap.placement.tree.online import replay
    from tjap.placement.tree.stream import tree_load
    from tjap.placement.tree.workload import Workload

    solver = replay_solver(args.method, **method_options(args))  # bad options fail first
    topology = online_topology(args)
    workload, report = read_workload(args, topology.num_nodes, show=False)
    first = args.first_job
    if workload is None:
        num_jobs = args.num_jobs or 300
        load = tree_load(topology.num_nodes) if args.topology is not None else {}
        workload = Workload.generate(max(100_000, first + num_jobs), args.seed, **load)
    else:
        left = workload.num_jobs - first
        if left < 1:
            raise InvalidInputError(
                f"--first-job {first} is past the workload's "
                f"{workload.num_jobs} jobs (numbered from 0)"
            )
        num_jobs = args.num_jobs or min(300, left)
        if num_jobs > left:
            raise InvalidInputError(
                f"the workload has {workload.num_jobs} jobs: --first-job {first} leaves "
                f"{left}, fewer than --num-jobs {num_jobs}; ask for at most {left}"
            )
    show_workload_report(args, report)
    with progress_bar(args.policy, quiet=args.quiet) as started:
        schedule = replay(
            topology,
            workload,
            policy=args.policy,
            placement=args.placement,
            tau_s=args.tau,
            cap=args.cap,
            method=solver,
            convention=args.convention,
            seed=args.seed,
            jobs=range(first, first + num_jobs),
            progress=started,
        )
    metrics = schedule.metrics()
    if args.json:
        where = {} if args.topology is None else {"topology": str(args.topology)}
        print_json(metrics | where | workload_fields(args, report))
    else:
        for k, v in metrics.items():
            print(f"{k:20s} {v:.2f}" if isinstance(v, float) else f"{k:20s} {v}")
    return 0


def cmd_demo(args) -> int:
    from tjap.api import solve
    from tjap.placement.tree.stream import generate_windows

    window = generate_windows(args.layout, 1, args.seed)[0]
    rows = []
    optimum = None
    for method in progress(
        ("dp", "scip", "cpsat", "freeform", "seq"), desc="demo", quiet=args.quiet
    ):
        options = {"time_limit_s": args.time_limit} if method != "dp" else {}
        if method == "freeform":
            options["warm_start"] = optimum
        r = solve(window, method, seed=args.seed, convention=args.convention, **options)
        optimum = optimum or r
        rows.append(
            {
                "method": method,
                "status": r.status.value,
                "cost": r.objective,
                "bound": r.bound,
                "time_s": r.runtime_s,
                "feasible": r.is_feasible(),
            }
        )
    if args.json:
        print_json({"window": window.to_dict(), "results": rows})
        return 0
    from tjap.core.report import format_table

    print(
        f"{window.num_idle} idle nodes on the {args.layout} layout, jobs of "
        f"{list(window.job_sizes)} nodes, {args.convention} cost convention\n"
    )
    print(
        format_table(
            rows,
            [
                ("method", ""),
                ("status", ""),
                ("cost", ".2f"),
                ("bound", ".2f"),
                ("time_s", ".4f"),
                ("feasible", ""),
            ],
        )
    )
    print("\n(the first dp call includes compiling its Numba kernels, unless cached)")
    return 0
