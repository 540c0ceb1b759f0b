"""A live accounted run: real Slurm records for ``tjap audit``.

    python -m benchmarks.audit_live --out DIR [--jobs 120] [--seed 0] [--slurm system]

Starts a throw-away Slurm 22.05 (:class:`~tjap.placement.slurm.harness.LocalSlurm`) on a 40-node
switch tree (:func:`benchmarks.slurm_topology.cluster_topology`, seed 1: 7 leaves of 3-8 nodes
under 3 spines), ``topology/tree``, ``sched/backfill``, with accounting (a private MariaDB and
slurmdbd, ``LocalSlurmConfig(accounting=True)``) and ``jobcomp/filetxt``, every daemon and
command in ``TZ=UTC``. It submits ``--jobs`` whole-node jobs (``sbatch -N n --exclusive --wrap
'sleep S'``) over time: seed 002's size mix scaled to 1-12 nodes as
:func:`benchmarks.slurm_topology.paper_rows` does, runtimes of 1-6 s, submit times stretched so
the cluster runs at about 90 % load (busy and fragmented: jobs wait, and start on whatever
nodes are idle). When every job has ended and slurmdbd has recorded it, it writes into DIR:

- ``sacct.txt``: the site's sacct command of ``tjap audit`` (``sacct --allusers --allocations
  --duplicates --parsable2 --starttime DATE --endtime now --format
  JobID,Partition,Submit,Start,End,NNodes,NodeList,State``);
- ``jobcomp.txt``: the jobcomp log of the same jobs;
- ``topology.conf``: the cluster's switch tree;
- ``audit.json``: ``tjap audit`` of both records (:func:`audit_both`): the summary, the skipped
  counts, whether sacct and jobcomp give the same numbers, and every job accounted for.

120 jobs take about 2 minutes here (cluster start with accounting about 6 s). Needs root, Slurm,
MariaDB and slurmdbd (``bash .ci/install-slurm``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, one_line_errors, parser
from benchmarks.slurm_topology import cluster_topology, paper_rows, slurm_config
from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.harness import LocalSlurm

#: The zone every daemon and sacct print times in (the records carry no zone).
TIMEZONE = "UTC"
#: Runtimes of the submitted jobs, seconds.
MIN_RUNTIME_S, MAX_RUNTIME_S = 1, 6
#: The cluster's load the submit times aim at (work / (nodes x submit span)).
LOAD = 0.9
#: The largest job, in nodes.
MAX_NODES = 12


def live_rows(jobs: int, seed: int, topology) -> list[dict]:
    """The submitted jobs: ``id``, ``submit_s`` (seconds after the first), ``nodes``,
    ``runtime_s``. Sizes are :func:`~benchmarks.slurm_topology.paper_rows`' (seed 002's mix,
    1..12 nodes); runtimes are its runtimes divided by 5, within 1..6 s; submit times are its
    arrival pattern stretched to :data:`LOAD`."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InvalidInputError(f"jobs must be a positive integer, got {jobs!r}")
    rows = paper_rows(jobs, seed, topology, max_nodes=MAX_NODES)
    sizes = np.array([r["cpus"] for r in rows])
    runtime = np.clip(
        np.ceil(np.array([r["runtime_s"] for r in rows]) / 5), MIN_RUNTIME_S, MAX_RUNTIME_S
    ).astype(int)
    submit = np.array([r["submit_s"] for r in rows], dtype=float)
    span = submit[-1] if submit[-1] > 0 else 1.0
    target = float((sizes * runtime).sum()) / (LOAD * topology.num_nodes)
    submit = np.rint(submit * target / span).astype(int)
    return [
        {"id": i, "submit_s": int(submit[i]), "nodes": int(sizes[i]), "runtime_s": int(runtime[i])}
        for i in range(jobs)
    ]


def _submit(slurm: LocalSlurm, row: dict) -> str:
    argv = [
        "sbatch",
        "--parsable",
        "-N",
        str(row["nodes"]),
        "--exclusive",
        "-t",
        str(max(1, math.ceil((row["runtime_s"] + 30) / 60))),
        "-J",
        f"audit{row['id']}",
        "-o",
        "/dev/null",
        "--chdir",
        str(slurm.workdir),
        "--wrap",
        f"sleep {row['runtime_s']}",
    ]
    out = slurm.client(timeout_s=30).run(argv).stdout.strip()
    return out.split(";")[0]


def run_accounted(workdir, *, jobs: int = 120, seed: int = 0, slurm: str = "system") -> dict:
    """Run ``jobs`` jobs on a 40-node accounted Slurm and write its records into ``workdir``.

    Parameters
    ----------
    workdir
        The folder that receives ``sacct.txt``, ``jobcomp.txt`` and ``topology.conf``
        (created if missing).
    jobs
        How many jobs to submit (:func:`live_rows`).
    seed
        The seed of the job stream.
    slurm
        Which Slurm runs the cluster (see :class:`~tjap.placement.slurm.harness.LocalSlurmConfig`).

    Returns
    -------
    dict
        ``sacct``, ``jobcomp``, ``topology`` (the three paths), ``job_ids`` (in submission
        order), ``timezone`` (the zone the records' times are in), ``rows`` (the submitted jobs,
        with their ``job_id``) and ``timings`` (``start_s``: the cluster's start,
        ``jobs_s``: first submit to every job recorded, ``total_s``).
    """
    out = Path(workdir)
    out.mkdir(parents=True, exist_ok=True)
    topology = cluster_topology(40, seed=1)
    rows = live_rows(jobs, seed, topology)
    config = dataclasses.replace(slurm_config(topology, slurm), accounting=True, timezone=TIMEZONE)
    began = time.monotonic()
    cluster = LocalSlurm(config)
    try:
        cluster.start(timeout_s=120)
        started = time.monotonic()
        for row in rows:
            delay = started + row["submit_s"] - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            row["job_id"] = _submit(cluster, row)
        ids = [row["job_id"] for row in rows]
        cluster.wait_recorded(ids, timeout_s=300)
        cluster.accounting_records(out / "sacct.txt")
        shutil.copyfile(cluster.jobcomp_path, out / "jobcomp.txt")
        (out / "topology.conf").write_text(topology.to_slurm())
        recorded = time.monotonic()
    finally:
        cluster.stop()
    return {
        "sacct": str(out / "sacct.txt"),
        "jobcomp": str(out / "jobcomp.txt"),
        "topology": str(out / "topology.conf"),
        "job_ids": ids,
        "timezone": TIMEZONE,
        "rows": rows,
        "timings": {
            "start_s": round(started - began, 2),
            "jobs_s": round(recorded - started, 2),
            "total_s": round(time.monotonic() - began, 2),
        },
    }


def build_parser() -> argparse.ArgumentParser:
    p = parser("audit_live", __doc__)
    add_out(p, "sacct.txt, jobcomp.txt and topology.conf")
    p.add_argument("--jobs", type=int, default=120, help="jobs to submit (default 120)")
    p.add_argument("--seed", type=int, default=0, help="seed of the job stream (default 0)")
    p.add_argument(
        "--slurm",
        default="system",
        help="which Slurm: system (default), 24.11 or an install prefix",
    )
    p.add_argument("--json", action="store_true", help="print the run's result as JSON")
    return p


@one_line_errors
def audit_both(run: dict) -> dict:
    """``tjap audit`` of the run's sacct records and of its jobcomp log: both summaries, whether
    they agree job by job, and every submitted job's fate (audited, or skipped with a reason)."""
    import tjap

    out = {}
    for key in ("sacct", "jobcomp"):
        result = tjap.audit(run[key], run["topology"], timezone=run["timezone"])
        out[key] = result.to_dict()
    a, b = out["sacct"], out["jobcomp"]
    key = lambda job: job["job_id"]
    audited = {job["job_id"] for job in a["jobs"]}
    return {
        "summary": a["summary"],
        "skipped": a["skipped"],
        "same_numbers": (
            sorted(a["jobs"], key=key) == sorted(b["jobs"], key=key)
            and a["summary"] == b["summary"]
            and a["skipped"] == b["skipped"]
        ),
        "submitted": len(run["job_ids"]),
        "audited": len(audited),
        "skipped_jobs": sum(a["skipped"].values()),
    }


def main(argv=None) -> int:
    """Run :func:`run_accounted` into ``--out``, then audit its sacct records and its jobcomp
    log (:func:`audit_both`); writes ``audit.json`` there and prints the headline."""
    p = build_parser()
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be >= 1")
    run = run_accounted(args.out, jobs=args.jobs, seed=args.seed, slurm=args.slurm)
    audit = audit_both(run)
    Path(args.out, "audit.json").write_text(json.dumps(audit, indent=1) + "\n")
    if args.json:
        print(
            json.dumps({**{k: v for k, v in run.items() if k != "rows"}, "audit": audit}, indent=1)
        )
        return 0
    for key in ("sacct", "jobcomp", "topology"):
        print(f"{key}: {run[key]}")
    t = run["timings"]
    print(
        f"{len(run['job_ids'])} jobs, times in {run['timezone']}; cluster started in "
        f"{t['start_s']:.1f} s, jobs ran and were recorded in {t['jobs_s']:.1f} s"
    )
    s = audit["summary"]
    print(
        f"audit: {audit['audited']} jobs audited, {audit['skipped_jobs']} skipped "
        f"{audit['skipped']}; sacct and jobcomp give the same numbers: {audit['same_numbers']}"
    )
    print(
        f"cost / floor {s['excess_ratio']:.3f}, optimum / floor {s['optimum'] / s['floor']:.3f}, "
        f"bound / floor {s['bound'] / s['floor']:.3f}, slurm-tree / floor "
        f"{s['slurm_tree'] / s['floor']:.3f}; excess removed by the optimum "
        f"{s['removable_share']:.3f}; slurm-tree equals the record for {s['fidelity']:.3f} "
        f"({len(s['differing_jobs'])} differ)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
