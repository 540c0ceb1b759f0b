"""Replay a trace file on the simulator in one call (what ``tjap simulate`` runs)."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.placement.batch.jobs import Jobs
from tjap.placement.batch.simulator import BatchResult, SchedulerConfig, Simulator
from tjap.placement.batch.traces import default_nodes, load_trace
from tjap.placement.tree.topology import MAX_NODES

DAY_S = 86400


def parse_date(text: str, flag: str = "--start") -> int:
    """Unix seconds of an ISO date or date-time (UTC unless it names a zone); ``flag`` is the
    option the error message names."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInputError(
            f"{flag} must be an ISO date such as 2023-03-01 or 2023-03-01T08:00:00, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp())


def _moment(jobs: Jobs, t_s: int) -> str:
    """A time on the trace's clock as a UTC date-time (trace seconds without an epoch)."""
    if jobs.epoch is None:
        return f"{int(t_s)} s"
    return datetime.fromtimestamp(int(jobs.to_unix(t_s)), timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S"
    )


def submit_span(jobs: Jobs) -> str:
    """What the trace covers, for error messages: 'jobs submitted FIRST .. LAST (UTC)'."""
    if len(jobs) == 0:
        return "no jobs"
    unit = "" if jobs.epoch is None else " (UTC)"
    return (
        f"{len(jobs)} jobs submitted {_moment(jobs, jobs.submit_s.min())} .. "
        f"{_moment(jobs, jobs.submit_s.max())}{unit}"
    )


def check_period(jobs: Jobs, start_s: int, end_s: int, what: str = "--from/--to") -> None:
    """Refuse an evaluation period [start_s, end_s) (trace clock) that is empty or holds none of
    the trace's submissions: evaluating it would report zeros that measure nothing."""
    if end_s <= start_s:
        raise InvalidInputError(
            f"the period {what} is empty ({_moment(jobs, start_s)} .. "
            f"{_moment(jobs, end_s)}); the end must come after the start"
        )
    inside = int(((jobs.submit_s >= start_s) & (jobs.submit_s < end_s)).sum())
    if inside == 0:
        raise InvalidInputError(
            f"{jobs.source or 'the trace'} has no job submitted in {what} "
            f"{_moment(jobs, start_s)} .. {_moment(jobs, end_s)}; it covers "
            f"{submit_span(jobs)}"
        )


def check_warm_start(jobs: Jobs, t0: int, message: str | None = None) -> None:
    """Refuse a warm start at ``t0`` (trace clock) that leaves the simulator nothing to decide:
    it decides the jobs queued at ``t0`` and those submitted later."""
    if not ((jobs.submit_s > t0) | (jobs.recorded_start_s > t0)).any():
        raise InvalidInputError(
            message
            or (
                f"{jobs.source or 'the trace'}: no job is queued at or submitted after "
                f"{_moment(jobs, t0)} (nothing to simulate from there); the trace holds "
                f"{submit_span(jobs)}"
            )
        )


def replay_trace(
    path,
    *,
    format: str | None = None,
    nodes: int | None = None,
    config: SchedulerConfig | None = None,
    start: str | None = None,
    days: float | None = None,
    warm_start: bool = False,
    ignore_dependencies: bool = False,
    progress=None,
) -> tuple[BatchResult, dict]:
    """Load ``path``, keep the jobs submitted in [start, start + days), and simulate them.

    Without ``warm_start`` the selected jobs arrive on an empty cluster. With it the simulation
    starts at ``start`` from the trace's own state then (its running and queued jobs) and
    simulates every later job until ``start + days``. ``ignore_dependencies`` drops the
    dependencies the trace states (SWF field 17). Returns (result, info) where info has the
    loader's report (``info["report"]``, a :class:`~tjap.placement.batch.traces.TraceReport`) and the
    nodes used. ``progress(done, total)``, if given, is called as the simulation runs (jobs
    done, jobs to simulate).
    """
    jobs, report = load_trace(path, format, ignore_dependencies=ignore_dependencies)
    if len(jobs) == 0:
        raise InvalidInputError(f"{path}: no usable jobs ({report.skipped} line(s) skipped)")
    if nodes is None:
        nodes = default_nodes(jobs, report)
        if nodes is None:
            raise InvalidInputError(
                f"{path} does not state its cluster size (no MaxNodes / "
                "MaxProcs header); pass --nodes N"
            )
    t0 = int(jobs.from_unix(parse_date(start))) if start is not None else None
    if days is not None and days <= 0:
        raise InvalidInputError(f"--days must be positive, got {days}")
    if days is not None and t0 is None:
        t0 = int(jobs.submit_s[0])
    t1 = None if days is None else t0 + int(round(days * DAY_S))
    oversized = int((jobs.nodes > nodes).sum())
    if oversized:
        fix = (
            f"pass --nodes {jobs.max_nodes} or more"
            if jobs.max_nodes <= MAX_NODES
            else f"tjap simulates at most {MAX_NODES:,} nodes (MAX_NODES): remove the larger "
            "jobs from the trace"
        )
        raise InvalidInputError(
            f"{oversized} job(s) of {path} request more than {nodes} nodes "
            f"(largest {jobs.max_nodes}); {fix}"
        )
    period = f"--start {_moment(jobs, t0) if t0 is not None else 'of the trace'}" + (
        f" --days {days:g}" if days is not None else ""
    )
    if warm_start:
        if t0 is None:
            raise InvalidInputError("--warm-start needs --start (the moment to start from)")
        chosen = jobs if t1 is None else jobs.between(None, t1)
        after = f"in the {days:g} day(s) after it" if days is not None else "after it"
        check_warm_start(
            chosen,
            t0,
            f"{path}: no job is queued at --start {_moment(jobs, t0)} "
            f"or submitted {after} (nothing to simulate); the trace holds "
            f"{submit_span(jobs)}",
        )
        sim = Simulator.from_trace_state(chosen, t0, nodes, config)
    else:
        chosen = jobs.between(t0, t1)
        if len(chosen) == 0:
            raise InvalidInputError(
                f"{path}: no job submitted in {period}; the trace holds {submit_span(jobs)}"
            )
        sim = Simulator(chosen, nodes, config)
    before = sim.jobs_done()  # a warm start's jobs that had ended by then
    result = sim.run(
        progress=None
        if progress is None
        else lambda done: progress(done - before, len(chosen) - before)
    )
    info = {
        "trace": str(path),
        "format": report.format,
        "nodes": int(nodes),
        "loaded_jobs": report.jobs,
        "skipped_lines": report.skipped,
        "skipped_examples": list(report.examples),
        "warm_start": warm_start,
        "report": report,
    }
    return result, info


def monthly_waits(result: BatchResult) -> list[dict]:
    """Per calendar month of submission (UTC): simulated and recorded mean wait of the jobs whose
    start the simulator decided."""
    jobs = result.jobs
    keep = result.simulated & (result.start_s >= 0) & (jobs.recorded_start_s >= 0)
    months = np.array(
        [
            datetime.fromtimestamp(int(t), timezone.utc).strftime("%Y-%m")
            for t in jobs.to_unix(jobs.submit_s[keep])
        ]
    )
    sim_wait = (result.start_s - jobs.submit_s)[keep]
    rec_wait = (jobs.recorded_start_s - jobs.submit_s)[keep]
    rows = []
    for month in sorted(set(months.tolist())):
        m = months == month
        rows.append(
            {
                "month": month,
                "jobs": int(m.sum()),
                "simulated_mean_wait_h": float(sim_wait[m].mean() / 3600),
                "recorded_mean_wait_h": float(rec_wait[m].mean() / 3600),
            }
        )
    return rows
