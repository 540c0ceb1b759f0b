"""``tjap audit RECORDS --topology FILE``: what network placement cost a Slurm site, job by job.

RECORDS is ``sacct --parsable2 --allocations`` output or a ``jobcomp/filetxt`` log
(:mod:`tjap.placement.slurm.accounting` says which columns and what happens to every kind of odd
record); the audit is :func:`tjap.slurm.audit.audit`. It prints a summary, ``--json`` the whole result
(one entry per audited job), and ``--report DIR`` writes a self-contained HTML page with plots.
It only reads: nothing is sent to Slurm.

Ctrl-C or SIGTERM stops it within a second or two, in any phase: while the records are read it
ends with the one line of every interrupted command; once jobs are measured it prints the summary
of the jobs audited so far, marked INTERRUPTED (``--json``: ``"interrupted": true`` and no
per-job list), writes no ``--report`` or ``--csv`` file (writing them for a large audit takes
longer than a signal may wait), says so in one line, and exits 130 (143 for SIGTERM).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tjap.cli.common import add_common, check_output, count, int_in
from tjap.core.result import plain

#: The fields of a job entry, in order (the CSV header when no job was audited).
JOB_FIELDS = (
    "job_id",
    "partition",
    "start",
    "start_s",
    "size",
    "nodes",
    "idle",
    "cost",
    "optimum",
    "optimum_nodes",
    "bound",
    "bound_nodes",
    "floor",
    "slurm_tree",
    "slurm_tree_nodes",
    "slurm_tree_same",
    "overlap",
)


def add_parser(sub) -> None:
    """Add ``audit`` to the ``tjap`` parser."""
    p = sub.add_parser(
        "audit",
        help="what placement cost you: audit a Slurm site's accounting records",
        description="Read Slurm accounting records (sacct --parsable2 --allocations output, or "
        "the jobcomp/filetxt log) and the site's topology; rebuild the idle nodes at "
        "each job's start and compare the nodes each multi-node job got with the "
        "cheapest idle nodes then (SCAS optimum, free-form bound), with Slurm's own "
        "topology/tree choice and with the empty-cluster floor. Read-only.",
    )
    p.add_argument(
        "records",
        metavar="RECORDS",
        help="sacct --parsable2 output with its header, or a jobcomp/filetxt log "
        "(.gz read as such)",
    )
    p.add_argument(
        "--topology",
        required=True,
        metavar="FILE",
        help="the site's topology.conf or JSON tree, or 'slurm' for the running "
        "Slurm's (scontrol show topology)",
    )
    p.add_argument(
        "--format",
        dest="fmt",
        choices=("auto", "sacct", "jobcomp"),
        default="auto",
        help="what RECORDS holds (default: told from its first line)",
    )
    p.add_argument(
        "--timezone",
        metavar="TZ",
        default=None,
        help="IANA zone of the records' times, e.g. Europe/Berlin (sacct and jobcomp "
        "print local times; default: this machine's zone)",
    )
    p.add_argument(
        "--from",
        dest="start",
        metavar="DATE",
        default=None,
        help="audit jobs that started at or after DATE (YYYY-MM-DD[THH:MM[:SS]], in "
        "--timezone); earlier records still count as busy nodes",
    )
    p.add_argument(
        "--to", dest="end", metavar="DATE", default=None, help="audit jobs that started before DATE"
    )
    p.add_argument(
        "--partition",
        metavar="NAME",
        default=None,
        help="audit only this partition's jobs (all records count as busy nodes)",
    )
    p.add_argument(
        "--min-nodes",
        type=int_in(2, 10**9),
        default=2,
        metavar="N",
        help="audit jobs of at least N nodes (default 2)",
    )
    p.add_argument(
        "--convention",
        choices=("paper", "published"),
        default="paper",
        help="CH cost convention (default paper)",
    )
    p.add_argument(
        "--slurm",
        choices=("22.05", "24.11"),
        default="22.05",
        help="whose topology/tree rule slurm-tree follows (default 22.05)",
    )
    p.add_argument(
        "--slurm-rule",
        choices=("auto", "tree", "block"),
        default="auto",
        help="compare the recorded nodes with Slurm's topology/tree selection or its "
        "topology/block one (auto, the default: block when the topology has "
        "BlockName= lines)",
    )
    p.add_argument(
        "--worst",
        type=count,
        default=10,
        metavar="K",
        help="jobs with the most cost above the optimum kept in the summary, with "
        "the nodes busy at their start (default 10)",
    )
    p.add_argument(
        "--report",
        metavar="DIR",
        default=None,
        help="also write DIR/index.html: a self-contained page with plots",
    )
    p.add_argument(
        "--csv",
        metavar="FILE",
        default=None,
        help="also write one row per audited job to FILE (the --json job fields)",
    )
    add_common(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from tjap.core.executor import progress
    from tjap.slurm.audit import audit

    report = check_output(args.report, "--report", folder=True)
    table = check_output(args.csv, "--csv")
    with progress(None, desc="audit", quiet=args.quiet) as bar:
        shown: list[str] = []

        def update(done, total, phase):  # one bar: records read, then jobs measured
            if shown[-1:] != [phase]:
                shown.append(phase)
                bar.reset(total=total)
                bar.set_description(phase)
            bar.update(done - bar.n)

        result = audit(
            args.records,
            args.topology,
            fmt=args.fmt,
            timezone=args.timezone,
            start=args.start,
            end=args.end,
            partition=args.partition,
            min_nodes=args.min_nodes,
            convention=args.convention,
            slurm=args.slurm,
            slurm_rule=args.slurm_rule,
            worst=args.worst,
            progress=update,
        )
    if result.interrupted:  # stop now: the summary, marked, and no file (see the docstring)
        if args.json:
            write_json(result, sys.stdout, jobs=False)
        else:
            print(result.summary_text())
        skipped = [flag for flag, path in (("--report", report), ("--csv", table)) if path]
        what = "terminated (SIGTERM)" if result.stopped_by == "SIGTERM" else "interrupted"
        print(
            f"tjap: {what}: audited {result.num_jobs:,} jobs; the summary above is marked "
            "interrupted"
            + (f" and {' and '.join(skipped)} not written (an interrupted audit writes no file)"
               if skipped else ""),
            file=sys.stderr,
        )  # fmt: skip
        return 143 if result.stopped_by == "SIGTERM" else 130
    if report is not None:
        from tjap.slurm.audit_report import write_report

        path = write_report(result, result.topology, report)
        print(f"tjap: report written to {path}", file=sys.stderr)
    if table is not None:
        written = write_csv(result, table)
        print(f"tjap: {result.num_jobs:,} jobs written to {written}", file=sys.stderr)
    if args.json:
        write_json(result, sys.stdout)
    else:
        print(result.summary_text())
    return 0


def write_csv(result, path) -> Path:
    """One row per audited job, the fields of ``--json``'s job entries (written row by row);
    returns where it went. The rows go to ``NAME.partial.csv`` (see
    :func:`tjap.core.executor.partial_path`), renamed to ``path`` once the last is written,
    unless the audit was interrupted: then the file keeps its partial name."""
    import csv

    from tjap.core.executor import PARTIAL_OUTPUTS, partial_path

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(path)
    PARTIAL_OUTPUTS.append(partial)  # named by the interruption line until it is complete
    with open(partial, "w", newline="") as f:
        writer = None
        for i in range(result.num_jobs):
            row = result.job(i)
            if writer is None:
                writer = csv.DictWriter(f, fieldnames=list(row))
                writer.writeheader()
            writer.writerow(row)
        if writer is None:  # no job: the header alone
            csv.writer(f).writerow(JOB_FIELDS)
    if result.interrupted:
        return partial
    PARTIAL_OUTPUTS.remove(partial)
    partial.replace(path)
    return path


def write_json(result, out, *, jobs: bool = True) -> None:
    """The result's JSON, written job by job (a million jobs never sit in memory as text);
    ``jobs=False`` leaves the per-job list empty."""
    data = result.to_dict(jobs=False)
    data.pop("jobs")
    if not jobs:
        out.write(json.dumps(plain({**data, "jobs": []}), indent=1, allow_nan=False) + "\n")
        return
    head = json.dumps(plain(data), indent=1, allow_nan=False)
    out.write(head[:-2] + ',\n "jobs": [')
    for i in range(result.num_jobs):
        out.write(
            ("\n  " if i == 0 else ",\n  ") + json.dumps(result.job(i), allow_nan=False)
        )  # plain values already
    out.write("\n ]\n}\n")
