"""Background load for a real Slurm: a compressed slice of a trace submitted as sleep jobs.

Used by ``tjap provision live --trace`` (the live provisioner among real queued jobs) and by the
fidelity replay of ``benchmarks/slurm_replay.py``.
"""

from __future__ import annotations

import threading
import time


def sleep_command(runtime_s) -> str:
    """The job script of a replayed job: ``sleep <runtime>`` (whole seconds, or milliseconds)."""
    runtime = float(runtime_s)
    text = str(int(runtime)) if runtime == int(runtime) else f"{runtime:.3f}"
    return f"sleep {text}"


def background_rows(
    trace: str, at: str, warmup_h: float, horizon_h: float, compress: float, cpus: int
) -> list[dict]:
    """Jobs of ``trace`` around ``at``, compressed: the jobs running or queued at ``at -
    warmup_h`` (submitted at 0 with what remains of their runtime and limit, running ones first),
    then those submitted until ``at + horizon_h`` at their compressed times. Rows as
    the trace replay on Slurm (``benchmarks/slurm_replay.py``) takes them; ``submit_s`` in wall seconds."""
    import numpy as np

    from tjap.core.errors import InvalidInputError
    from tjap.placement.batch import load_trace
    from tjap.placement.batch.replay import parse_date, submit_span
    from tjap.placement.slurm.chained import slurm_limit_min, slurm_runtime_s

    jobs, _ = load_trace(trace)
    at_s = int(jobs.from_unix(parse_date(at, "--at")))
    start = at_s - int(warmup_h * 3600)
    end = at_s + int(horizon_h * 3600)
    rec_start, sub = jobs.recorded_start_s, jobs.submit_s
    rec_end = rec_start + jobs.runtime_s
    fits = jobs.nodes <= cpus
    running = fits & (sub < start) & (rec_start >= 0) & (rec_start <= start) & (rec_end > start)
    queued = fits & (sub < start) & (rec_start > start)
    later = fits & (sub >= start) & (sub < end)
    rows = []
    for rows_of, kind in (
        (np.flatnonzero(running), "running"),
        (np.flatnonzero(queued), "queued"),
        (np.flatnonzero(later), "later"),
    ):
        for r in rows_of:
            used = start - rec_start[r] if kind == "running" else 0
            limit = int(jobs.limit_s[r] - used)
            runtime = int(jobs.runtime_s[r] - used)
            limit_min = slurm_limit_min(max(limit, 1), compress)
            rows.append(
                {
                    "id": int(jobs.job_id[r]),
                    "cpus": int(jobs.nodes[r]),
                    "submit_s": 0.0 if kind != "later" else (sub[r] - start) / compress,
                    "limit_min": limit_min,
                    "runtime_s": max(
                        1.0, slurm_runtime_s(max(runtime, 0), max(limit, 1), compress)
                    ),
                }
            )
    if not rows:  # a background load of nothing would be a silent change of the experiment
        raise InvalidInputError(
            f"no job of {trace} runs, waits or is submitted between "
            f"{warmup_h:g} h before --at {at} and {horizon_h:g} h after it; "
            f"the trace holds {submit_span(jobs)}"
        )
    return rows


class BackgroundLoad(threading.Thread):
    """Submits ``rows`` at ``t0 + submit_s`` (wall) until stopped; :meth:`stop` cancels them."""

    def __init__(self, client, rows: list[dict], t0: float, workdir: str | None = None):
        super().__init__(daemon=True)
        self.client, self.rows, self.t0, self.workdir = client, rows, t0, workdir
        self.job_ids: list[int] = []
        self.error: Exception | None = None
        self._stop_event = threading.Event()

    def run(self) -> None:
        from tjap.placement.slurm.client import SlurmError

        try:
            for row in self.rows:
                if self._stop_event.wait(max(0.0, self.t0 + row["submit_s"] - time.time())):
                    return
                self.job_ids.append(
                    self.client.submit(
                        nodes_or_tasks=row["cpus"],
                        time_limit_min=row["limit_min"],
                        command=sleep_command(round(row["runtime_s"], 3)),
                        name=f"trace-{row['id']}",
                        output="/dev/null",
                        chdir=self.workdir,
                    )
                )
        except SlurmError as exc:
            self.error = exc

    def stop(self) -> None:
        from tjap.placement.slurm.client import SlurmError

        self._stop_event.set()
        self.join(timeout=30)
        try:
            self.client.cancel(self.job_ids)
        except SlurmError:
            pass
