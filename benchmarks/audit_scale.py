"""Scale benchmark of `tjap audit`: one million accounting records of a 10,000-node switch tree,
audited in one streaming pass. The target is at most 60 s on 2 cores with a peak resident memory
under 2 GB.

    python -m benchmarks.audit_scale generate --out DIR --records 1000000 --seed 0
    python -m benchmarks.audit_scale run --dir DIR --out OUT [--cpus 2] [--json]

``generate`` writes three files to DIR:

- ``topology.conf``: a three-level Slurm ``topology/tree`` of ``--nodes`` nodes ``n1``,
  ``n2``, ... (default 10,000: 400 leaf switches of 25 nodes, 20 middle switches of 20 leaves
  each, one top switch);
- ``sacct.txt``: what ``sacct --parsable2`` prints with the columns
  ``JobID|Partition|Submit|Start|End|NNodes|NodeList|State|Account`` (``Account`` is one column
  more than the audit needs, to show that extra columns are read past), one line per job, times
  in UTC (``YYYY-MM-DDTHH:MM:SS``, as sacct prints local times; audit them with
  ``--timezone UTC``), node lists compressed;
- ``generation.json``: the record counts by kind, the workload, the simulation's figures and
  the generation time.

The jobs are the batch simulator's (:class:`tjap.placement.batch.Simulator`, Slurm's default
EASY backfill, first-fit nodes) on a synthetic workload: the rows of the Lublin-Feitelson model
trace shipped with tjap (``lublin_256``: sizes 1 to 256 nodes, a quarter of the jobs on one node,
most of the rest small powers of two) drawn with replacement onto Poisson arrivals offering
``--load`` (default 0.95) of the cluster's node-seconds
(:func:`tjap.placement.batch.synthetic_jobs`). The model's sizes are kept (not scaled), so the
cluster runs many jobs at once and stays fragmented; the time limits are the runtimes rounded up
(1 to 3 times, to a quarter hour), 5 % of the jobs running into their limit (TIMEOUT). The
records end one second after the last submission: jobs still running then are RUNNING without
an end, jobs not started yet are PENDING.

About 1 % of the records (``--skip-share``) are ones the audit must skip: job steps
(``ID.batch`` and ``ID.extern`` lines), jobs cancelled while pending (``Start`` is ``None``) and
pending jobs submitted in the last hour (two of them pending array ranges ``ID_[5-10]``). Two
runs of started jobs are array elements (``ID_0``, ``ID_1``, ``ID_2``), which the audit reads as
jobs. ``generation.json`` counts each kind.

``run`` starts ``tjap audit DIR/sacct.txt --topology DIR/topology.conf --timezone UTC --quiet``
(the terminal summary, in OUT/audit.txt) as a child process; with ``--json`` it measures
``tjap audit ... --json`` instead (OUT/audit.json: one entry per audited job, about 450 MB for a
million records, whose writing takes longer than the audit itself). The child is pinned to
``--cpus`` CPUs (default 2, with ``NUMBA_NUM_THREADS`` the same) and runs after a warm-up audit
of the first 2,000 records that fills the compiled kernels' cache. ``run`` measures the child's
wall time and peak resident memory (the ``ru_maxrss`` of that one child, from ``os.wait4``) and
writes OUT/audit_scale.json: records, allocations, audited jobs, skipped counts, wall seconds,
peak MB, the machine and the exact commands.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.common import OUT, add_out, one_line_errors, parser
from tjap.core.errors import InvalidInputError

#: sacct's columns as written (the audit reads the first eight; ``Account`` is an extra one).
HEADER = "JobID|Partition|Submit|Start|End|NNodes|NodeList|State|Account"
#: The first job id written.
FIRST_ID = 100_001
#: Records start here (Unix seconds: 2026-01-01T00:00:00 UTC).
EPOCH_S = 1_767_225_600
#: Lines written per chunk (their text is built a chunk at a time).
CHUNK = 20_000
#: Records audited by the warm-up run before the measured one.
WARMUP_RECORDS = 2_000
#: Shares of the skip records: steps (in .batch/.extern pairs), cancelled while pending; the
#: rest pending (submitted in the last hour).
STEP_SHARE, CANCELLED_SHARE = 0.4, 0.35
#: Started states of the jobs that ended before their limit, and their shares.
END_STATES = ("COMPLETED", "FAILED", "CANCELLED", "OUT_OF_MEMORY")
END_STATE_SHARES = (0.88, 0.08, 0.03, 0.01)


# -- the topology ------------------------------------------------------------------------------
def topology_conf(nodes: int, leaf: int = 25, fanout: int = 20) -> str:
    """``topology.conf`` of a three-level tree: leaf switches ``s0, s1, ...`` of ``leaf`` nodes
    each (the last may hold fewer), middle switches ``m0, m1, ...`` of ``fanout`` leaves each, and
    one switch ``top`` above them; nodes ``n1`` to ``n<nodes>`` in order."""
    if nodes < 2 or leaf < 1 or fanout < 1:
        raise InvalidInputError(
            f"nodes must be >= 2 and leaf, fanout >= 1, got {nodes}, {leaf}, {fanout}"
        )
    leaves = math.ceil(nodes / leaf)
    middles = math.ceil(leaves / fanout)
    lines = [f"SwitchName=top Switches=m[0-{middles - 1}]"]
    for m in range(middles):
        last = min(leaves, (m + 1) * fanout) - 1
        lines.append(f"SwitchName=m{m} Switches=s[{m * fanout}-{last}]")
    for s in range(leaves):
        lines.append(f"SwitchName=s{s} Nodes=n[{s * leaf + 1}-{min(nodes, (s + 1) * leaf)}]")
    return "\n".join(lines) + "\n"


# -- the workload --------------------------------------------------------------------------------
def workload(count: int, nodes: int, load: float, seed: int):
    """``count`` jobs of the Lublin-Feitelson model on ``nodes`` nodes at ``load`` (see the module
    docstring): a :class:`tjap.placement.batch.Jobs` table."""
    from tjap.placement.batch import Jobs, bundled_trace, load_trace, synthetic_jobs

    model, _ = load_trace(bundled_trace("lublin_256"))
    rng = np.random.default_rng([seed, 1])
    runtime = np.maximum(model.runtime_s, 1)
    quarter = 900
    limit = np.maximum(np.ceil(runtime * rng.uniform(1, 3, len(model)) / quarter), 1) * quarter
    timeout = rng.random(len(model)) < 0.05
    runtime = np.where(timeout, limit, runtime)
    like = Jobs.build(
        submit_s=model.submit_s,
        nodes=model.nodes,
        limit_s=limit,
        runtime_s=runtime,
        source="lublin_256",
    )
    return synthetic_jobs(count, nodes, like=like, load=load, seed=seed)


def simulate(jobs, nodes: int):
    """The batch simulator's schedule of ``jobs`` (Slurm's defaults: EASY backfill, first fit)."""
    from tjap.placement.batch import SchedulerConfig, Simulator

    return Simulator(jobs, nodes, SchedulerConfig()).run()


# -- writing -------------------------------------------------------------------------------------
def _times(seconds: np.ndarray) -> np.ndarray:
    """Unix seconds as sacct's ``YYYY-MM-DDTHH:MM:SS`` (UTC)."""
    return np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s")


def _plan(result, records: int, skip_share: float, seed: int) -> dict:
    """Which simulated jobs get steps, where the cancelled jobs go, which jobs are array
    elements; the counts of each kind."""
    n = len(result.jobs)
    rng = np.random.default_rng([seed, 2])
    skips = records - n
    steps = 2 * round(STEP_SHARE * skips / 2)
    cancelled = round(CANCELLED_SHARE * skips)
    pending = skips - steps - cancelled
    if pending < 2:
        raise InvalidInputError(
            f"{records} records leave too few for the skip records; give at least 1,000 records"
        )
    now = int(result.jobs.submit_s[-1]) + 1
    start, end = result.start_s, result.end_s
    done = np.flatnonzero((start >= 0) & (start <= now) & (end <= now))
    with_steps = np.sort(rng.choice(done, steps // 2, replace=False))
    cancelled_after = np.sort(rng.integers(0, n, cancelled))
    # two runs of three started jobs are the elements of job arrays
    arrays = np.sort(rng.choice(done[: max(len(done) - 3, 1)], 2, replace=False))
    array_index = np.full(n, -1, np.int64)
    for first in arrays:
        array_index[first : first + 3] = np.arange(3)
    return {
        "now": now,
        "steps": set(with_steps.tolist()),
        "cancelled_after": cancelled_after,
        "pending": pending,
        "array_index": array_index,
        "counts": {
            "steps": steps,
            "cancelled_while_pending": cancelled,
            "pending_submitted_last_hour": pending,
            "pending_array_ranges": 2,
        },
    }


def write_records(path: Path, result, plan: dict, nodes: int, seed: int) -> dict:
    """Write ``sacct.txt`` chunk by chunk; returns the counts of what was written."""
    from tjap.placement.tree.hostlist import compress_hostlist

    jobs, start, end = result.jobs, result.start_s, result.end_s
    n, now = len(jobs), plan["now"]
    rng = np.random.default_rng([seed, 3])
    names = [f"n{i + 1}" for i in range(nodes)]
    cancel_at = np.bincount(plan["cancelled_after"], minlength=n)
    array_index, with_steps = plan["array_index"], plan["steps"]
    counts = dict.fromkeys(
        (
            "lines",
            "jobs_started",
            "jobs_running",
            "jobs_pending_at_end",
            "multi_node_started",
            "array_elements",
            "step_lines",
            "cancelled_while_pending",
            "pending_extra",
        ),
        0,
    )
    job_id, array_base = FIRST_ID, 0
    with open(path, "w", buffering=1 << 20) as out:
        out.write(HEADER + "\n")
        for lo in range(0, n, CHUNK):
            hi = min(n, lo + CHUNK)
            rows = np.arange(lo, hi)
            submit = _times(jobs.submit_s[rows] + EPOCH_S)
            started_at = _times(np.maximum(start[rows], 0) + EPOCH_S)
            ended_at = _times(np.maximum(end[rows], 0) + EPOCH_S)
            states = rng.choice(len(END_STATES), hi - lo, p=END_STATE_SHARES)
            accounts = rng.integers(0, 40, hi - lo)
            uids = rng.integers(1000, 1100, hi - lo)
            waits = rng.integers(10, 3600, hi - lo)
            sizes = jobs.nodes[rows]
            lines = []
            for i, row in enumerate(range(lo, hi)):
                size = int(sizes[i])
                limit = int(jobs.limit_s[row])
                partition = "short" if limit <= 3600 and size <= 16 else "batch"
                account = f"acct{accounts[i]}"
                if array_index[row] == 0:
                    array_base = job_id
                label = f"{array_base}_{array_index[row]}" if array_index[row] >= 0 else str(job_id)
                s = int(start[row])
                if s < 0 or s > now:  # not started when the records were taken
                    lines.append(
                        f"{label}|{partition}|{submit[i]}|Unknown|Unknown|{size}|"
                        f"None assigned|PENDING|{account}\n"
                    )
                    counts["jobs_pending_at_end"] += 1
                else:
                    ids = np.sort(result.nodes_of(row))
                    hosts = compress_hostlist([names[k] for k in ids])
                    if int(end[row]) > now:
                        finish, state = "Unknown", "RUNNING"
                        counts["jobs_running"] += 1
                    elif jobs.runtime_s[row] == limit:
                        finish, state = ended_at[i], "TIMEOUT"
                    else:
                        finish, state = ended_at[i], END_STATES[states[i]]
                        if state == "CANCELLED":
                            state = f"CANCELLED by {uids[i]}"
                    lines.append(
                        f"{label}|{partition}|{submit[i]}|{started_at[i]}|{finish}|"
                        f"{size}|{hosts}|{state}|{account}\n"
                    )
                    counts["jobs_started"] += 1
                    counts["multi_node_started"] += int(size > 1)
                    counts["array_elements"] += int(array_index[row] >= 0)
                    if row in with_steps:
                        first = hosts if size == 1 else names[ids[0]]
                        lines.append(
                            f"{label}.batch||{submit[i]}|{started_at[i]}|{finish}|1|"
                            f"{first}|{state}|{account}\n"
                        )
                        lines.append(
                            f"{label}.extern||{submit[i]}|{started_at[i]}|{finish}|"
                            f"{size}|{hosts}|COMPLETED|{account}\n"
                        )
                        counts["step_lines"] += 2
                job_id += 1
                for _ in range(cancel_at[row]):  # cancelled while pending, by its owner
                    gone = int(jobs.submit_s[row]) + int(waits[i])
                    lines.append(
                        f"{job_id}|{partition}|{submit[i]}|None|"
                        f"{_times(np.array([gone + EPOCH_S]))[0]}|{size}|None assigned|"
                        f"CANCELLED by {uids[i]}|{account}\n"
                    )
                    counts["cancelled_while_pending"] += 1
                    job_id += 1
            out.write("".join(lines))
            counts["lines"] += len(lines)
        # pending jobs submitted in the last hour; the first two are pending array ranges
        pending = plan["pending"]
        submits = _times(np.sort(now - rng.integers(1, 3600, pending)) + EPOCH_S)
        sizes = rng.choice(jobs.nodes, pending)
        for i in range(pending):
            label = f"{job_id}_[5-10]" if i < 2 else str(job_id)
            out.write(
                f"{label}|batch|{submits[i]}|Unknown|Unknown|{sizes[i]}|None assigned|"
                f"PENDING|acct{i % 40}\n"
            )
            counts["pending_extra"] += 1
            counts["lines"] += 1
            job_id += 1
    return counts


def generate(
    out,
    records: int = 1_000_000,
    seed: int = 0,
    nodes: int = 10_000,
    leaf: int = 25,
    fanout: int = 20,
    load: float = 0.95,
    skip_share: float = 0.01,
) -> dict:
    """Write ``topology.conf``, ``sacct.txt`` and ``generation.json`` to ``out`` (see the module
    docstring); returns what ``generation.json`` holds."""
    if records < 1000:
        raise InvalidInputError(f"--records must be at least 1000, got {records}")
    if not 0 < skip_share < 0.5:
        raise InvalidInputError(f"--skip-share must lie in (0, 0.5), got {skip_share}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tick = time.perf_counter()
    (out / "topology.conf").write_text(topology_conf(nodes, leaf, fanout))
    simulated = records - max(round(skip_share * records), 5)
    jobs = workload(simulated, nodes, load, seed)
    sim_tick = time.perf_counter()
    result = simulate(jobs, nodes)
    sim_s = time.perf_counter() - sim_tick
    plan = _plan(result, records, skip_share, seed)
    write_tick = time.perf_counter()
    counts = write_records(out / "sacct.txt", result, plan, nodes, seed)
    write_s = time.perf_counter() - write_tick
    summary = result.summary()
    skip_records = (
        counts["step_lines"]
        + counts["cancelled_while_pending"]
        + counts["pending_extra"]
        + counts["jobs_pending_at_end"]
    )
    info = {
        "records": counts["lines"],
        "seed": seed,
        "nodes": nodes,
        "topology": {
            "file": "topology.conf",
            "leaf_nodes": leaf,
            "leaves_per_middle": fanout,
            "levels": 3,
        },
        "workload": {
            "model": "lublin_256 rows resampled (tjap.placement.batch.synthetic_jobs)",
            "load": load,
            "jobs": len(jobs),
            "max_nodes": jobs.max_nodes,
            "multi_node_share": float((jobs.nodes > 1).mean()),
            "scheduler": "easy/firstfit (SchedulerConfig defaults)",
        },
        "simulation": {
            "seconds": round(sim_s, 2),
            "utilization": summary["utilization"],
            "mean_wait_s": summary["mean_wait_s"],
            "span_days": round(summary["makespan_s"] / 86400, 1),
            "first": str(_times(np.array([EPOCH_S]))[0]),
            "records_taken_at": str(_times(np.array([plan["now"] + EPOCH_S]))[0]),
        },
        "counts": counts,
        "skip_records": skip_records,
        "skip_share": skip_records / counts["lines"],
        "write_seconds": round(write_s, 1),
        "generation_seconds": round(time.perf_counter() - tick, 1),
        "command": shlex.join(
            [
                "python",
                "-m",
                "benchmarks.audit_scale",
                "generate",
                "--out",
                str(out),
                "--records",
                str(records),
                "--seed",
                str(seed),
                "--nodes",
                str(nodes),
                "--load",
                str(load),
            ]
        ),
    }
    (out / "generation.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


# -- measuring -----------------------------------------------------------------------------------
def audit_command(records: Path, topology: Path, as_json: bool = False) -> list[str]:
    """The ``tjap audit`` command line measured (the interpreter running this module)."""
    command = [
        sys.executable,
        "-m",
        "tjap",
        "audit",
        str(records),
        "--topology",
        str(topology),
        "--timezone",
        "UTC",
    ]
    return command + (["--json"] if as_json else ["--quiet"])


def measure(
    command: list[str], stdout: Path, cpus: int | None = None, timeout_s: float = 600
) -> dict:
    """Run ``command`` with its stdout in the file ``stdout``, on the first ``cpus`` CPUs this
    process may use (all if None); its exit status, wall seconds, peak resident MB and stderr."""
    env = dict(os.environ)
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[:cpus] if cpus else allowed
    if cpus:
        env["NUMBA_NUM_THREADS"] = str(len(chosen))
    with open(stdout, "wb") as sink:
        tick = time.perf_counter()
        child = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.PIPE,
            env=env,
            preexec_fn=lambda: os.sched_setaffinity(0, chosen),
        )
        timer = threading.Timer(timeout_s, child.kill)
        timer.start()
        err = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - tick
        timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
    return {
        "returncode": child.returncode,
        "wall_s": round(wall, 2),
        "peak_mb": round(usage.ru_maxrss / 1024, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "cpus": len(chosen),
        "timed_out": wall >= timeout_s,
        "stderr_tail": err.decode(errors="replace")[-2000:],
    }


def machine() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _head(source: Path, target: Path, lines: int) -> None:
    with open(source) as src, open(target, "w") as dst:
        for i, line in enumerate(src):
            if i > lines:
                break
            dst.write(line)


def _figures(output: Path, as_json: bool) -> dict:
    """Allocations read, jobs audited and skipped counts from the audit's output (the JSON, or
    the lines of the terminal summary that give them)."""
    if as_json:
        with open(output) as f:
            data = json.load(f)
        return {
            "allocations": data["records"]["allocations"],
            "audited_jobs": data["summary"]["jobs"],
            "skipped": data["skipped"],
            "overlap_jobs": sum(bool(job["overlap"]) for job in data["jobs"]),
        }
    text = output.read_text()
    head = re.search(r"([\d,]+) allocations read, ([\d,]+) jobs", text)
    skipped = {
        reason: int(count.replace(",", ""))
        for count, reason in re.findall(r"^\s+([\d,]+)\s+(\w+): ", text, re.MULTILINE)
    }
    if head is None:
        return {"skipped": skipped}
    return {
        "allocations": int(head[1].replace(",", "")),
        "audited_jobs": int(head[2].replace(",", "")),
        "skipped": skipped,
    }


def run(
    directory,
    out,
    cpus: int | None = 2,
    as_json: bool = False,
    timeout_s: float = 600,
    warmup: bool = True,
) -> dict:
    """Audit ``directory``'s records in a child process and write ``out/audit_scale.json``."""
    directory, out = Path(directory), Path(out)
    records, topology = directory / "sacct.txt", directory / "topology.conf"
    for path in (records, topology):
        if not path.is_file():
            raise InvalidInputError(
                f"{path} is missing; write it with python -m "
                f"benchmarks.audit_scale generate --out {directory}"
            )
    out.mkdir(parents=True, exist_ok=True)
    generation_file = directory / "generation.json"
    generation = json.loads(generation_file.read_text()) if generation_file.is_file() else {}
    if warmup:  # fill the compiled kernels' cache, so the measured run does not compile
        sample = out / "warmup_sacct.txt"
        _head(records, sample, WARMUP_RECORDS)
        first = measure(
            audit_command(sample, topology, as_json), out / "warmup_out.txt", cpus, timeout_s
        )
        sample.unlink()
        if first["returncode"] != 0:
            raise InvalidInputError(
                f"the warm-up audit failed (exit {first['returncode']}): "
                f"{first['stderr_tail'].strip().splitlines()[-1:]}"
            )
    command = audit_command(records, topology, as_json)
    output = out / ("audit.json" if as_json else "audit.txt")
    taken = measure(command, output, cpus, timeout_s)
    row = {
        "records": generation.get("records"),
        "nodes": generation.get("nodes"),
        "output": str(output),
        "output_bytes": output.stat().st_size,
    }
    if taken["returncode"] == 0:
        row |= _figures(output, as_json)
    row |= {
        "wall_s": taken["wall_s"],
        "cpu_s": taken["cpu_s"],
        "peak_mb": taken["peak_mb"],
        "cpus": taken["cpus"],
        "returncode": taken["returncode"],
        "timed_out": taken["timed_out"],
        "target": {"wall_s": 60, "peak_mb": 2048, "cpus": 2},
        "within_target": (
            taken["returncode"] == 0 and taken["wall_s"] <= 60 and taken["peak_mb"] < 2048
        ),
        "machine": machine(),
        "commands": {
            "generate": generation.get("command"),
            "audit": shlex.join(command) + f" > {output}",
            "run": shlex.join(
                [
                    "python",
                    "-m",
                    "benchmarks.audit_scale",
                    "run",
                    "--dir",
                    str(directory),
                    "--out",
                    str(out),
                ]
                + (["--cpus", str(cpus)] if cpus else [])
                + (["--json"] if as_json else [])
            ),
        },
        "generation_seconds": generation.get("generation_seconds"),
        "stderr_tail": taken["stderr_tail"],
    }
    (out / "audit_scale.json").write_text(json.dumps(row, indent=2) + "\n")
    return row


# -- command line --------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = parser("audit_scale", __doc__)
    sub = p.add_subparsers(dest="what", required=True, metavar="STEP")
    g = sub.add_parser(
        "generate",
        help="write the topology and the accounting records",
        description="write DIR/topology.conf, DIR/sacct.txt, DIR/generation.json",
    )
    add_out(g, "topology.conf, sacct.txt and generation.json")
    g.add_argument(
        "--records",
        type=int,
        default=1_000_000,
        help="lines of sacct.txt after the header (default 1,000,000)",
    )
    g.add_argument("--seed", type=int, default=0, help="the workload's seed (default 0)")
    g.add_argument("--nodes", type=int, default=10_000, help="cluster nodes (default 10,000)")
    g.add_argument("--leaf", type=int, default=25, help="nodes per leaf switch (default 25)")
    g.add_argument(
        "--fanout", type=int, default=20, help="leaf switches per middle switch (default 20)"
    )
    g.add_argument(
        "--load", type=float, default=0.95, help="offered share of the node-seconds (default 0.95)"
    )
    g.add_argument(
        "--skip-share",
        type=float,
        default=0.01,
        help="share of records the audit must skip (default 0.01)",
    )
    r = sub.add_parser(
        "run",
        help="audit the records in a child process, timed",
        description="time tjap audit on DIR's records; write OUT/audit_scale.json",
    )
    r.add_argument(
        "--dir", default=OUT, metavar="DIR", help=f"the folder generate wrote (default {OUT})"
    )
    add_out(r, "the audit's output and audit_scale.json")
    r.add_argument("--cpus", type=int, default=2, help="CPUs the audit may use (default 2; 0: all)")
    r.add_argument(
        "--json",
        action="store_true",
        help="measure tjap audit --json (every audited job) instead of the summary",
    )
    r.add_argument(
        "--timeout",
        type=float,
        default=600,
        help="seconds before the audit is stopped (default 600)",
    )
    r.add_argument(
        "--no-warmup", action="store_true", help="measure the first run, compilation included"
    )
    return p


@one_line_errors
def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.what == "generate":
        info = generate(
            args.out,
            args.records,
            args.seed,
            args.nodes,
            args.leaf,
            args.fanout,
            args.load,
            args.skip_share,
        )
    else:
        info = run(
            args.dir, args.out, args.cpus or None, args.json, args.timeout, not args.no_warmup
        )
        info.pop("stderr_tail", None)
    print(json.dumps(info, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
