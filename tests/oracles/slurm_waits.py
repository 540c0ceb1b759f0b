"""Waiting on a live Slurm in the tests: poll until a condition holds, or until jobs run."""

from __future__ import annotations

import time


def wait_for(predicate, timeout_s: float, what: str, poll_s: float = 0.2):
    """``predicate()``'s first true value, polled every ``poll_s``; AssertionError naming
    ``what`` after ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll_s)


def wait_running(client, ids, jobs_now, timeout_s: float = 20) -> dict:
    """``jobs_now(client)`` (job id -> a row whose first field is the state) once every job of
    ``ids`` runs; AssertionError with their rows after ``timeout_s``."""
    ids = list(ids)

    def ready():
        rows = jobs_now(client)
        return rows if all(rows.get(i, ("",))[0] == "RUNNING" for i in ids) else None

    try:
        return wait_for(ready, timeout_s, f"jobs {ids} to run")
    except AssertionError:
        raise AssertionError(
            f"timed out waiting for jobs {ids} to run: "
            f"{ {i: jobs_now(client).get(i) for i in ids} }"
        ) from None
