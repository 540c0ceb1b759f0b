"""The window rules of the placement service, as pure functions of what Slurm reported.

- :func:`eligible`: which pending jobs the service may place. Only plain jobs (not arrays or
  heterogeneous jobs) of its partition, held by their owner (``sbatch --hold``: reason
  ``JobHeldUser``), asking for no nodes of their own (``--nodelist``), no ``--exclude`` and no
  ``--constraint``; an administrator's hold (``JobHeldAdmin``) is never touched. The others are
  left alone and listed as ``ignored`` with the reason.
- :func:`segment_problem`: on a ``topology/block`` cluster, a held job whose ``--segment``
  Slurm never places (it does not divide the job, or exceeds a base block) is left alone too.
- :class:`WaitTracker`: windows waited (the paper's NWP) per job, across passes, in memory.
- :func:`plan_window`: the paper's order (more windows waited first, then fewer nodes, then
  earlier submission, then job id) and the greedy prefix that fits the idle nodes, at most
  ``cap`` multi-node jobs (:func:`tjap.placement.tree.workload.select_prefix`); with
  ``backfill="easy"`` (the service's default) jobs behind the first one that does not fit join
  the window when they fit now and do not delay that job's reservation (EASY backfilling, as
  Slurm's ``sched/backfill`` would start them; :func:`easy_backfill`).
- :func:`hold_for_locality`: optionally, the window's multi-node jobs that would land on nodes
  much costlier than their best on the partition wait a while for better ones (Slurm's
  ``--switches=N@TIME`` by CH cost rather than by switch count).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.client import PendingJob
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.freeform import best_single_job_nodes
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.workload import select_prefix


def eligible(
    job: PendingJob, partition: str, ours: dict | None = None, excluded: dict | None = None
) -> str | None:
    """None if the service may place ``job``, else why not (one short phrase).

    ``ours`` maps job ids to the node names of a ``ReqNodeList`` this service set and left
    behind (its update went through, its release did not): such a node list is not the user's
    own; ``excluded`` likewise for an ``ExcNodeList`` (a segmented job's steer).
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
    if job.exc_nodes and not _same_nodes(job.exc_nodes, (excluded or {}).get(job.job_id)):
        return "excludes nodes (--exclude)"
    if job.features:
        return "has a --constraint"
    if job.nodes < 1:
        return f"asks for {job.nodes} nodes"
    return None


def segment_problem(nodes: int, segment: int | None, base: int) -> str | None:
    """Why Slurm 24.11's ``topology/block`` never starts a job of ``nodes`` nodes in segments of
    ``segment`` on base blocks of ``base`` nodes (None: it may): a segment that does not divide
    the job, or one larger than a base block (Slurm then leaves the job pending with
    ``BadConstraints`` whatever its nodes)."""
    if segment is None:
        return None
    if nodes % segment:
        return f"its --segment={segment} does not divide its {nodes} nodes"
    if segment > base:
        return (
            f"its --segment={segment} is larger than a base block ({base} nodes), which "
            f"Slurm 24.11 does not place"
        )
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


#: How a window fills past the first job that does not fit: ``none`` (the paper's prefix only)
#: or ``easy`` (EASY backfilling behind that job's reservation).
BACKFILL = ("easy", "none")
INFINITE = float("inf")


def shadow(need: int, free: int, releases) -> tuple[float, int]:
    """``(time, extra)`` of EASY's reservation for a job of ``need`` nodes: ``free`` nodes are
    idle now and ``releases`` are ``(end time, nodes)`` of running jobs (end None or inf:
    unknown, taken as never before the others). ``time`` is the earliest end at which enough
    nodes are free (now: -inf when they are free already; inf when only jobs of unknown end
    free them), ``extra`` the nodes free then beyond ``need``; ``(inf, -1)`` when even every
    release leaves too few nodes (the job cannot start; no reservation holds anything back)."""
    if need <= free:
        return -INFINITE, free - need
    ends = sorted(((INFINITE if e is None else float(e)), int(n)) for e, n in releases)
    for end, nodes in ends:
        free += nodes
        if free >= need:
            return end, free - need
    return INFINITE, -1


def easy_backfill(
    ordered: Sequence[PendingJob],
    k: int,
    idle_count: int,
    cap: int | None,
    now: float,
    releases,
    limits: dict,
) -> list[int]:
    """Indices (into ``ordered``, after the prefix of ``k``) of the jobs EASY backfills.

    The first job past the prefix that does not fit gets a reservation
    (:func:`shadow`, counting the prefix's jobs as running from ``now`` for their time limit);
    a later job joins when it fits the nodes still idle and either ends before the reservation
    (``now`` + its time limit from ``limits``, job id -> seconds, None or missing: unknown) or
    leaves the reservation's extra nodes. Stops at ``cap`` multi-node jobs in all. A job
    blocked only by the cap gets no backfill behind it (the next window comes soon)."""
    if k >= len(ordered):
        return []
    sizes = [int(j.nodes) for j in ordered]
    free = int(idle_count) - sum(sizes[:k])
    multi = sum(n > 1 for n in sizes[:k])
    if sizes[k] <= free:  # blocked by the cap, not by its size
        return []
    running = list(releases) + [
        (now + limits[j.job_id] if limits.get(j.job_id) is not None else None, sizes[i])
        for i, j in enumerate(ordered[:k])
    ]
    start, extra = shadow(sizes[k], free, running)
    chosen = []
    for i in range(k + 1, len(ordered)):
        n = sizes[i]
        if n > free or (n > 1 and cap is not None and multi >= cap):
            continue
        limit = limits.get(ordered[i].job_id)
        ends_in_time = limit is not None and now + limit <= start
        if extra < 0 or ends_in_time:
            pass
        elif n <= extra:
            extra -= n
        else:
            continue
        chosen.append(i)
        free -= n
        multi += n > 1
    return chosen


def plan_window(
    jobs: Sequence[PendingJob],
    idle_count: int,
    tracker: WaitTracker,
    cap: int | None = 5,
    *,
    backfill: str = "none",
    now: float = 0.0,
    releases=(),
    limits: dict | None = None,
) -> tuple[list[PendingJob], list[PendingJob]]:
    """``(window, waiting)``: the eligible held ``jobs`` in the paper's order, split at the
    greedy prefix that fits ``idle_count`` nodes with at most ``cap`` multi-node jobs (None: no
    cap). With ``backfill="easy"`` the window also takes the jobs :func:`easy_backfill` picks
    behind the first job that does not fit (``now``: the time read, ``releases``: ``(end,
    nodes)`` of running jobs, ``limits``: job id -> time limit in seconds)."""
    if backfill not in BACKFILL:
        raise InvalidInputError(
            f"unknown backfill {backfill!r}; choose one of {', '.join(BACKFILL)}"
        )
    ordered = sorted(jobs, key=lambda j: priority_key(j, tracker.get(j.job_id)))
    k = select_prefix([int(j.nodes) for j in ordered], int(idle_count), cap)
    extra = (
        easy_backfill(ordered, k, idle_count, cap, now, releases, limits or {})
        if backfill == "easy"
        else []
    )
    taken = set(range(k)) | set(extra)
    return (
        [j for i, j in enumerate(ordered) if i in taken],
        [j for i, j in enumerate(ordered) if i not in taken],
    )


def hold_for_locality(
    jobs: Sequence[PendingJob],
    topology: Topology,
    idle: Sequence[str],
    nodes: Sequence[str],
    now: float,
    slack: float,
    wait_s: float,
    convention: str = "paper",
    floors: dict | None = None,
) -> list[dict]:
    """The jobs of a window that stay held for a better placement, one dict each: ``job_id``,
    ``nodes_requested``, ``cost_now`` (its cheapest node set among the ``idle`` node names),
    ``best`` (its cheapest set among all the partition's ``nodes``, as if it were empty) and
    ``waited_s`` (``now`` minus its submit time) and ``wait_left_s`` (how much longer it may be
    held for locality).

    A multi-node job is held when ``cost_now > (1 + slack) * best`` and it was submitted less
    than ``wait_s`` seconds before ``now``; after that it takes what there is, so no job waits
    more than ``wait_s`` for locality. One-node jobs cost nothing anywhere and are never held.
    ``floors`` (size -> best), if given, caches ``best`` across calls for the same ``nodes``.
    """
    if not (slack >= 0 and wait_s >= 0):
        raise InvalidInputError(f"slack and wait must be >= 0, got {slack!r} and {wait_s!r}")
    floors = {} if floors is None else floors
    idle_ids = np.sort(topology.node_indices(list(idle))) if len(idle) else None
    held = []
    for job in jobs:
        size = int(job.nodes)
        waited = float(now) - float(job.submit_time)
        if size < 2 or waited >= wait_s or idle_ids is None or size > len(idle_ids):
            continue
        if size not in floors:
            floors[size] = job_cost(
                topology,
                best_single_job_nodes(topology, np.sort(topology.node_indices(list(nodes))), size),
                convention,
            )
        now_cost = job_cost(topology, best_single_job_nodes(topology, idle_ids, size), convention)
        if now_cost > (1 + slack) * floors[size] + 1e-9:
            held.append(
                {
                    "job_id": job.job_id,
                    "nodes_requested": size,
                    "cost_now": now_cost,
                    "best": floors[size],
                    "waited_s": waited,
                    "wait_left_s": float(wait_s) - waited,
                }
            )
    return held


__all__ = [
    "BACKFILL",
    "WaitTracker",
    "easy_backfill",
    "eligible",
    "hold_for_locality",
    "plan_window",
    "priority_key",
    "segment_problem",
    "shadow",
]
