"""The window rules of the placement service, as pure functions of what Slurm reported.

- :func:`eligible`: which pending jobs the service may place. Only plain jobs (not arrays or
  heterogeneous jobs) of its partition, held by their owner (``sbatch --hold``: reason
  ``JobHeldUser``), asking for no nodes of their own (``--nodelist``), no ``--exclude`` and no
  ``--constraint``; an administrator's hold (``JobHeldAdmin``) is never touched. The others are
  left alone and listed as ``ignored`` with the reason.
- :class:`WaitTracker`: windows waited (the paper's NWP) per job, across passes, in memory.
- :func:`plan_window`: the paper's order (more windows waited first, then fewer nodes, then
  earlier submission, then job id) and the greedy prefix that fits the idle nodes, at most
  ``cap`` multi-node jobs (:func:`placement.tree.workload.select_prefix`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from placement.batch.slurm import PendingJob
from placement.tree.hostlist import expand_hostlist
from placement.tree.workload import select_prefix
from tjap.errors import InvalidInputError


def eligible(job: PendingJob, partition: str, ours: dict | None = None) -> str | None:
    """None if the service may place ``job``, else why not (one short phrase).

    ``ours`` maps job ids to the node names of a ``ReqNodeList`` this service set and left
    behind (its update went through, its release did not): such a node list is not the user's
    own.
    """
    if not job.plain:
        return "array or heterogeneous job"
    if job.partition != partition:
        return f"partition {job.partition}"
    if job.state != "PENDING":
        return f"state {job.state}"
    if job.reason == "JobHeldAdmin":
        return "held by an administrator"
    if not job.held_by_user:
        return "not held"
    if job.req_nodes and not _same_nodes(job.req_nodes, (ours or {}).get(job.job_id)):
        return "asks for its own nodes (--nodelist)"
    if job.exc_nodes:
        return "excludes nodes (--exclude)"
    if job.features:
        return "has a --constraint"
    if job.nodes < 1:
        return f"asks for {job.nodes} nodes"
    return None


def _same_nodes(hostlist: str, names) -> bool:
    if not names:
        return False
    try:
        return set(expand_hostlist(hostlist)) == set(names)
    except InvalidInputError:
        return False


class WaitTracker:
    """Windows waited per job id (NWP), kept across passes of one service process."""

    def __init__(self):
        self.waited: dict[int, int] = {}

    def get(self, job_id: int) -> int:
        return self.waited.get(int(job_id), 0)

    def after_window(self, present: Iterable[int], waiting: Iterable[int]) -> None:
        """Forget jobs no longer held (``present``: the held jobs seen in this window) and add
        one window to each job left ``waiting`` (not placed by it)."""
        keep = {int(j) for j in present}
        self.waited = {j: n for j, n in self.waited.items() if j in keep}
        for j in waiting:
            self.waited[int(j)] = self.waited.get(int(j), 0) + 1


def priority_key(job: PendingJob, waited: int) -> tuple:
    """Sort key of the paper's order: more windows waited, fewer nodes, earlier, lower id."""
    return (-int(waited), int(job.nodes), int(job.submit_time), int(job.job_id))


def plan_window(jobs: Sequence[PendingJob], idle_count: int, tracker: WaitTracker,
                cap: int | None = 5) -> tuple[list[PendingJob], list[PendingJob]]:
    """``(window, waiting)``: the eligible held ``jobs`` in the paper's order, split at the
    greedy prefix that fits ``idle_count`` nodes with at most ``cap`` multi-node jobs (None: no
    cap)."""
    ordered = sorted(jobs, key=lambda j: priority_key(j, tracker.get(j.job_id)))
    k = select_prefix([int(j.nodes) for j in ordered], int(idle_count), cap)
    return ordered[:k], ordered[k:]


__all__ = ["WaitTracker", "eligible", "plan_window", "priority_key"]
