"""Replay a slice of a job trace on a real (local) Slurm, to compare its starts with a simulator's.

Each input job becomes ``sbatch -n cpus -t limit_min --wrap "sleep runtime"``, submitted at its
(already compressed) submit time; once every job has ended, Slurm's own records
(``jobcomp/filetxt``) give submit, start and end times. Independent of any simulator.

Timing notes (Slurm 22.05, see :mod:`tjap.placement.slurm.harness`):

- The replay clock starts on a whole Unix second (``t0``), so Slurm's 1 s-resolution times,
  relative to ``t0``, are whole numbers: a time ``t`` means the event happened in ``[t, t+1)``.
- A submitted batch job is not started during the submit call: the backfill pass
  (every ``bf_interval``) or the main scheduler's periodic pass (``sched_interval``) starts it,
  so a job that fits waits up to about 1 s. A job ending triggers the main scheduler at once.
- ``observed_start`` is the wall time at which polling (every ``poll_s``) first saw the job
  out of PENDING: an upper bound on the true start with ``poll_s`` resolution.

Command line: ``python -m benchmarks.slurm_replay jobs.json [--cpus 256] [--scheduler backfill]``
where ``jobs.json`` is a JSON list (or JSON lines) of input rows; prints the result as JSON and
writes it to ``--out DIR`` (default benchmarks/out) as ``slurm_replay.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from benchmarks.common import add_out, one_line_errors, parser
from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.background import sleep_command
from tjap.placement.slurm.client import SlurmError
from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig

REQUIRED = ("id", "submit_s", "cpus", "limit_min", "runtime_s")


def _as_int(value):
    """``value`` as an int if it is a whole number (NumPy integers included), else None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() and not isinstance(value, bool) else None


def _check(jobs: list[dict], cpus: int) -> None:
    for i, job in enumerate(jobs):
        missing = [k for k in REQUIRED if k not in job]
        if missing:
            raise SlurmError(
                f"replay job {i}: missing {', '.join(missing)} (rows need {', '.join(REQUIRED)})"
            )
        jid = job["id"]
        n = _as_int(job["cpus"])
        if n is None or not 1 <= n <= cpus:
            raise SlurmError(
                f"replay job {jid}: cpus must be an integer in 1..{cpus} (the node's "
                f"CPUs), got {job['cpus']!r}"
            )
        limit = _as_int(job["limit_min"])
        if limit is None or limit < 1:
            raise SlurmError(
                f"replay job {jid}: limit_min must be an integer >= 1, got {job['limit_min']!r}"
            )
        job["cpus"], job["limit_min"] = n, limit
        try:
            runtime = float(job["runtime_s"])
            submit = float(job["submit_s"])
        except (TypeError, ValueError):
            raise SlurmError(f"replay job {jid}: runtime_s and submit_s must be numbers") from None
        if not (0 <= runtime <= 60 * limit):
            raise SlurmError(
                f"replay job {jid}: runtime_s must lie in [0, 60*limit_min], got "
                f"{job['runtime_s']!r}"
            )
        if not submit >= 0:
            raise SlurmError(f"replay job {jid}: submit_s must be >= 0, got {job['submit_s']!r}")


#: Seconds after each target time at which a job is submitted (see replay_on_slurm).
SUBMIT_GUARD_S = 0.02
#: With ``end_on_second``: seconds after its start second + runtime at which a job's sleep ends.
#: Not before: a job's end runs the main scheduler at once (measured: 13 ms later), so an end a
#: few ms before the second would start the next job in the second before.
END_AFTER_S = 0.01


def whole_second_command(runtime_s: int, after_s: float = END_AFTER_S) -> str:
    """The job script of a replayed job that ends on a whole second: it reads the start time
    Slurm recorded for it (``squeue -o %S`` in Unix seconds, five tries 50 ms apart; if they
    all fail, the second this script started, one second late when the pass that started it
    ran in the last few ms of a second: see ``ran_their_runtime`` in the results) and
    sleeps until that second + ``runtime_s`` + ``after_s``. So a job of runtime R recorded as
    started at second S ends early in second S + R, wherever in second S the scheduling pass
    that started it ran: the simulator's whole-second rule (nodes free from S + R), without the
    race of a plain ``sleep R`` against the passes' sub-second phases."""
    runtime = int(runtime_s)
    if runtime != runtime_s or runtime < 1:
        raise ValueError(f"a whole-second end needs a whole positive runtime, got {runtime_s!r}")
    return (
        "t=$(date +%s); for i in 1 2 3 4 5; do "
        's=$(SLURM_TIME_FORMAT=%s squeue -h -j "$SLURM_JOB_ID" -o %S 2>/dev/null); '
        'case "$s" in ""|*[!0-9]*) sleep 0.05;; *) t=$s; break;; esac; done; '
        f'd=$(awk -v t="$t" -v n="$(date +%s.%N)" \'BEGIN {{ d = t + {runtime} + {after_s:g} - n; '
        'if (d < 0) d = 0; printf "%.3f", d }\'); sleep "$d"'
    )


def replay_on_slurm(
    jobs: list[dict],
    slurm: LocalSlurm,
    *,
    poll_s: float = 0.2,
    timeout_s: float | None = None,
    align_start: bool = True,
    end_on_second: bool = False,
) -> list[dict]:
    """Submit ``jobs`` to the running ``slurm`` at their submit times, wait for all to end, and
    return one row per job (input order).

    Input rows: ``id``, ``submit_s`` (seconds from the replay start), ``cpus`` (int, at most the
    node's CPUs), ``limit_min`` (int >= 1), ``runtime_s`` (<= 60 * limit_min). Jobs are submitted in
    input order, each no earlier than its ``submit_s``.

    Output rows: the input row plus ``slurm_job_id``; ``submit`` (wall time of the sbatch call,
    relative to the replay start ``t0``); ``slurm_submit``, ``start``, ``end`` (Slurm's records,
    relative to ``t0``, whole seconds as floats); ``observed_start`` (first seen running by
    polling, or None); ``state`` (``COMPLETED``, ``TIMEOUT``, ...). ``timeout_s`` (default: last
    submit + sum of limits + 60 s) bounds the whole replay; on timeout the jobs are cancelled and
    :class:`SlurmError` is raised. ``end_on_second``: each job runs
    :func:`whole_second_command` (ends at its recorded start second + runtime) instead of
    ``sleep runtime`` (ends runtime seconds after its process started, at the sub-second phase
    of the pass that started it).
    """
    jobs = [dict(j) for j in jobs]
    _check(jobs, int(slurm.config.cpus))
    client = slurm.client()
    if timeout_s is None:
        timeout_s = (
            max((float(j["submit_s"]) for j in jobs), default=0)
            + sum(60 * j["limit_min"] for j in jobs)
            + 60
        )
    now = time.time()
    t0 = float(math.ceil(now + 0.05)) if align_start else now
    time.sleep(max(0.0, t0 - time.time()))
    deadline = time.monotonic() + timeout_s + (t0 - now)

    slurm_ids: list[int] = []
    observed: dict[int, float] = {}
    pending_ids: set[int] = set()
    next_poll = 0.0

    def poll():
        nonlocal next_poll
        stamp = time.time() - t0
        for q in client.queue():
            if q.job_id in pending_ids and q.state != "PENDING":
                observed[q.job_id] = stamp
                pending_ids.discard(q.job_id)
        next_poll = time.monotonic() + poll_s

    try:
        for job in jobs:
            # a little after the second: slurmctld stamps submissions with time(NULL), a coarse
            # clock that can still read the previous second for a few ms after the boundary
            target = t0 + float(job["submit_s"]) + SUBMIT_GUARD_S
            while True:
                wait = target - time.time()
                if wait <= 0:
                    break
                if pending_ids and time.monotonic() >= next_poll:
                    poll()
                    continue
                time.sleep(min(wait, poll_s))
            submitted = time.time() - t0
            jid = client.submit(
                nodes_or_tasks=job["cpus"],
                time_limit_min=job["limit_min"],
                command=(
                    whole_second_command(job["runtime_s"])
                    if end_on_second
                    else sleep_command(job["runtime_s"])
                ),
                name=f"replay-{job['id']}",
                output="/dev/null",
                chdir=str(slurm.workdir),
            )
            job["slurm_job_id"] = jid
            job["submit"] = submitted
            slurm_ids.append(jid)
            pending_ids.add(jid)

        wanted = set(slurm_ids)
        done: dict[int, object] = {}
        while True:
            for rec in client.completed(slurm.jobcomp_path):
                if rec.job_id in wanted:
                    done[rec.job_id] = rec
            if len(done) == len(wanted):
                break
            if pending_ids:
                poll()
            if time.monotonic() > deadline:
                raise SlurmError(
                    f"replay timed out after {timeout_s:.0f} s with "
                    f"{len(wanted) - len(done)} of {len(wanted)} jobs unfinished"
                )
            time.sleep(poll_s)
    except BaseException:
        try:
            client.cancel(slurm_ids)
        except SlurmError:
            pass
        raise

    out = []
    for job in jobs:
        rec = done[job["slurm_job_id"]]

        def rel(t):
            return None if t is None else float(t - t0)

        job.update(
            slurm_submit=rel(rec.submit_time),
            start=rel(rec.start_time),
            end=rel(rec.end_time),
            observed_start=observed.get(job["slurm_job_id"]),
            state=rec.state,
        )
        out.append(job)
    return out


def _load(path: Path) -> list[dict]:
    try:
        text = path.read_text()
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        return json.loads(text)
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"cannot read the jobs {path}: {exc}; give a JSON list or JSON lines of input rows"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    p = parser("slurm_replay", __doc__)
    p.add_argument("jobs", type=Path, help="JSON list or JSON lines of input rows")
    p.add_argument("--cpus", type=int, default=256)
    p.add_argument("--scheduler", choices=("backfill", "builtin"), default="backfill")
    p.add_argument("--bf-job-part-count-reserve", type=int, default=None)
    add_out(p, "the rows (slurm_replay.json)")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Replay the jobs on a throw-away local Slurm; print the rows as JSON and write them."""
    args = build_parser().parse_args(argv)
    config = LocalSlurmConfig(
        cpus=args.cpus,
        scheduler=args.scheduler,
        bf_job_part_count_reserve=args.bf_job_part_count_reserve,
    )
    jobs = _load(args.jobs)  # a bad file fails before Slurm starts
    with LocalSlurm(config) as slurm:
        rows = replay_on_slurm(jobs, slurm)
    text = json.dumps(rows, indent=1)
    print(text)
    out = Path(args.out) / "slurm_replay.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
