"""Replay a trace file on the simulator in one call (what ``tjap simulate`` runs)."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from placement.batch.simulator import SchedulerConfig, SimulationResult, Simulator
from placement.batch.traces import default_nodes, load_trace
from tjap.errors import InvalidInputError

DAY_S = 86400


def parse_date(text: str) -> int:
    """Unix seconds of an ISO date or date-time (UTC unless it names a zone)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInputError(f"--start must be an ISO date such as 2023-03-01 or "
                                f"2023-03-01T08:00:00, got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp())


def replay_trace(path, *, format: str | None = None, nodes: int | None = None,
                 config: SchedulerConfig | None = None, start: str | None = None,
                 days: float | None = None, warm_start: bool = False
                 ) -> tuple[SimulationResult, dict]:
    """Load ``path``, keep the jobs submitted in [start, start + days), and simulate them.

    Without ``warm_start`` the selected jobs arrive on an empty cluster. With it the simulation
    starts at ``start`` from the trace's own state then (its running and queued jobs) and
    simulates every later job until ``start + days``. Returns (result, info) where info has the
    loader's report and the nodes used.
    """
    jobs, report = load_trace(path, format)
    if len(jobs) == 0:
        raise InvalidInputError(f"{path}: no usable jobs ({report.skipped} line(s) skipped)")
    if nodes is None:
        nodes = default_nodes(jobs, report)
        if nodes is None:
            raise InvalidInputError(f"{path} does not state its cluster size (no MaxNodes / "
                                    "MaxProcs header); pass --nodes N")
    t0 = int(jobs.from_unix(parse_date(start))) if start is not None else None
    if days is not None and days <= 0:
        raise InvalidInputError(f"--days must be positive, got {days}")
    if days is not None and t0 is None:
        t0 = int(jobs.submit_s[0])
    t1 = None if days is None else t0 + int(round(days * DAY_S))
    oversized = int((jobs.nodes > nodes).sum())
    if oversized:
        raise InvalidInputError(f"{oversized} job(s) of {path} request more than {nodes} nodes "
                                f"(largest {jobs.max_nodes}); pass --nodes {jobs.max_nodes} or more")
    if warm_start:
        if t0 is None:
            raise InvalidInputError("--warm-start needs --start (the moment to start from)")
        chosen = jobs if t1 is None else jobs.between(None, t1)
        sim = Simulator.from_trace_state(chosen, t0, nodes, config)
    else:
        chosen = jobs.between(t0, t1)
        if len(chosen) == 0:
            raise InvalidInputError(f"{path}: no job submitted in the chosen period")
        sim = Simulator(chosen, nodes, config)
    result = sim.run()
    info = {"trace": str(path), "format": report.format, "nodes": int(nodes),
            "loaded_jobs": report.jobs, "skipped_lines": report.skipped,
            "skipped_examples": list(report.examples), "warm_start": warm_start}
    return result, info


def monthly_waits(result: SimulationResult) -> list[dict]:
    """Per calendar month of submission (UTC): simulated and recorded mean wait of the jobs whose
    start the simulator decided."""
    jobs = result.jobs
    keep = result.simulated & (result.start_s >= 0) & (jobs.recorded_start_s >= 0)
    months = np.array([datetime.fromtimestamp(int(t), timezone.utc).strftime("%Y-%m")
                       for t in jobs.to_unix(jobs.submit_s[keep])])
    sim_wait = (result.start_s - jobs.submit_s)[keep]
    rec_wait = (jobs.recorded_start_s - jobs.submit_s)[keep]
    rows = []
    for month in sorted(set(months.tolist())):
        m = months == month
        rows.append({"month": month, "jobs": int(m.sum()),
                     "simulated_mean_wait_h": float(sim_wait[m].mean() / 3600),
                     "recorded_mean_wait_h": float(rec_wait[m].mean() / 3600)})
    return rows
