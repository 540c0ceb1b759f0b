"""Online scheduling of a workload on a switch tree (the paper's fat-tree or any other):
window-based (the paper) against per-job FCFS and EASY backfilling, with topology-blind or
topology-aware placement.

- ``policy="window"``: every ``tau_s`` seconds the queue is ordered and a greedy prefix selected as
  in :mod:`tjap.placement.tree.stream`; its multi-node jobs are solved as one window with any :func:`tjap.solve`
  method, one-node jobs placed first-fit.
- ``policy="fcfs"``: jobs start in arrival order as soon as the head fits.
- ``policy="easy"``: EASY backfilling. When the head does not fit, it gets a reservation at its
  shadow time (from running jobs' exact runtimes, as the paper's baseline used); a later job may
  start now if it fits and either ends by the shadow time or uses only nodes the head will not need.

Both per-job policies run on the batch-queue simulator (:mod:`tjap.placement.batch.simulator`),
configured by :func:`per_job_config`. Every policy and every placement takes any
:class:`Topology` (the paper's :class:`FatTree`, a Slurm tree or block cluster, a tree of node
labels); every cost, of a window's blocks, of a placement and of the metrics, is the tree's count
form (:mod:`tjap.placement.tree.tree_cost`).

A :class:`Workload` carries arrival, runtime and node count per job, and no job constraints
(``segment``, ``within``, ``exclusive``): none of the job lists it reads (the authors' format, SWF,
sacct) states them, so every job of a replay is a plain node count.

Per-job placement: ``"firstfit"`` (lowest idle ids, the paper's baselines), ``"contiguous"`` (the
cheapest block of consecutive idle nodes, SCAS for one job) or ``"freeform"`` (the cheapest node
set of all, exact for one job).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.core.registry import solver
from tjap.core.result import Record, plain
from tjap.placement.tree.cost import convention_code, job_cost
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.freeform import best_single_job_nodes
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window
from tjap.placement.tree.workload import Workload, priority_order, select_prefix

POLICIES = ("window", "fcfs", "easy")
PLACEMENTS = ("firstfit", "contiguous", "freeform")


# -- placing one job ---------------------------------------------------------------------------
def place_job(
    topology: Topology,
    idle_nodes: np.ndarray,
    size: int,
    placement: str = "firstfit",
    convention: str = "paper",
) -> list[int]:
    """Node ids (indices) for one job of ``size`` nodes among ``idle_nodes`` (sorted indices)
    under a placement, on any switch tree."""
    if size > idle_nodes.size:
        raise InvalidInputError(f"a job of {size} nodes does not fit {idle_nodes.size} idle nodes")
    if placement == "firstfit":
        return idle_nodes[:size].tolist()
    if placement == "contiguous":
        window = Window(topology, idle_nodes, [size])
        return window.block(int(np.argmin(window.block_costs(size, convention))), size).tolist()
    if placement == "freeform":
        return best_single_job_nodes(topology, idle_nodes, size)
    raise InvalidInputError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")


# -- the simulation record ---------------------------------------------------------------------
@dataclass(frozen=True)
class Schedule(Record):
    """Start time and nodes of every job of a replay, and its metrics (``summary()``)."""

    topology: Topology
    workload: Workload
    jobs: range
    start_s: dict = field(default_factory=dict)
    nodes: dict = field(default_factory=dict)
    reservations: dict = field(default_factory=dict)  # EASY: first reservation of a blocked head

    def record(self, job: int, t: int, nodes) -> None:
        self.start_s[job] = int(t)
        self.nodes[job] = [int(v) for v in nodes]

    def to_dict(self) -> dict:
        """The metrics and, per job, its start time and nodes (indices; on a tree other than a
        FatTree also their ``names``)."""
        names = not isinstance(self.topology, FatTree)
        return plain(
            {
                "summary": self.metrics(),
                "jobs": [
                    {
                        "job": j,
                        "start_s": self.start_s[j],
                        "nodes": self.nodes[j],
                        **(
                            {"names": [self.topology.node_names[v] for v in self.nodes[j]]}
                            if names
                            else {}
                        ),
                    }
                    for j in self.jobs
                ],
            }
        )

    def summary(self) -> dict:
        return self.metrics()

    def metrics(self) -> dict:
        """jobs, multi-node jobs, mean and p95 wait, makespan, utilization and the mean cost of
        the multi-node jobs in both conventions."""
        w = self.workload
        jobs = list(self.jobs)
        multi = [j for j in jobs if w.requested_nodes[j] > 1]
        wait = np.array([self.start_s[j] - w.arrival_s[j] for j in jobs], dtype=float)
        ends = [self.start_s[j] + w.runtime_s[j] for j in jobs]
        first = int(w.arrival_s[jobs[0]])
        makespan = max(ends) - first
        work = float(sum(w.requested_nodes[j] * w.runtime_s[j] for j in jobs))
        out = {
            "jobs": len(jobs),
            "multi_node_jobs": len(multi),
            "mean_wait_s": float(wait.mean()),
            "p95_wait_s": float(np.percentile(wait, 95)),
            "makespan_s": int(makespan),
            "utilization": work / (self.topology.num_nodes * makespan) if makespan else 0.0,
        }
        for conv in ("paper", "published"):
            costs = [job_cost(self.topology, self.nodes[j], conv) for j in multi]
            out[f"mean_cost_{conv}"] = float(np.mean(costs)) if costs else 0.0
        return out


# -- window-based policy -------------------------------------------------------------------------
@dataclass
class Tick:
    """One period of the window policy: its time, the window solved (or None) and who started."""

    time_s: int
    window: Window | None
    result: object
    started: list  # (job, nodes)


def window_ticks(
    topology: Topology,
    workload: Workload,
    first_job: int,
    last_job: int | None,
    *,
    tau_s: int,
    cap: int | None,
    method="dp",
    convention: str,
    seed: int,
    **solve_options,
) -> Iterator[Tick]:
    """The window policy, period by period, over jobs first_job.. (all later jobs if last_job is
    None: the caller stops). Ends once every job of [first_job, last_job) has started.

    ``method`` solves each window: a method of :func:`tjap.registry.methods` by name (the method
    itself, without :func:`tjap.solve`'s checks) or
    a callable ``solver(window, *, seed, convention, **options) -> Result`` such as
    ``functools.partial(tjap.solve, method="sa")``."""
    solve = solver(method)
    label = (
        method
        if isinstance(method, str)
        else getattr(method, "keywords", {}).get("method", getattr(method, "__name__", "solver"))
    )
    free_at = np.zeros(topology.num_nodes, dtype=np.int64)
    nwp: dict[int, int] = {}
    queue: list[int] = []
    next_job = first_job
    end = workload.num_jobs if last_job is None else last_job
    t = int(workload.arrival_s[first_job])
    while next_job < end or queue:
        t += tau_s
        while next_job < end and workload.arrival_s[next_job] < t:
            queue.append(next_job)
            nwp[next_job] = 0
            next_job += 1
        idle = np.flatnonzero(free_at <= t)
        ordered = priority_order(queue, nwp, workload.requested_nodes)
        k = select_prefix([int(workload.requested_nodes[j]) for j in ordered], idle.size, cap)
        selected, queue = ordered[:k], ordered[k:]
        for j in queue:
            nwp[j] += 1
        multi = [j for j in selected if workload.requested_nodes[j] > 1]
        started, window, result = [], None, None
        if multi:
            window = Window(
                topology,
                idle,
                [int(workload.requested_nodes[j]) for j in multi],
                meta={"time_s": t, "jobs": multi},
            )
            result = solve(window, seed=seed, convention=convention, **solve_options)
            if not result.has_solution:
                raise InvalidInputError(
                    f"method {label!r} found no solution for the window at "
                    f"t={t}s ({result.status.value}); give it more time"
                )
            for j, nodes in zip(multi, result.assignment):
                free_at[list(nodes)] = t + int(workload.runtime_s[j])
                started.append((j, nodes))
        idle = np.flatnonzero(free_at <= t)
        for j, node in zip([j for j in selected if workload.requested_nodes[j] == 1], idle):
            free_at[node] = t + int(workload.runtime_s[j])
            started.append((j, [int(node)]))
        for j in selected:
            del nwp[j]
        yield Tick(t, window, result, started)
    return


# -- per-job policies ----------------------------------------------------------------------------
def per_job_config(policy: str, placement: str = "firstfit", convention: str = "paper"):
    """The batch simulator's configuration of the paper's per-job baselines: FCFS (no backfill) or
    EASY (one reservation) with exact runtimes as time limits, a pass at every event, one-second
    resolution, no release delay, equal priorities, no limit on the jobs a pass tests, and the
    textbook EASY rule (a backfilled job may end exactly at the head's shadow time)."""
    from tjap.placement.batch.simulator import SchedulerConfig

    return SchedulerConfig(
        backfill="none" if policy == "fcfs" else "easy",
        bf_interval_s=0,
        bf_resolution_s=1,
        bf_max_job_test=2**31,
        release_delay_s=0,
        placement=placement,
        cost_convention=convention,
        bf_end_at_reservation=True,
    )


def workload_jobs(workload: Workload, jobs: range):
    """The ``jobs`` of ``workload`` as a :class:`tjap.placement.batch.jobs.Jobs` table: job id = index,
    time limit = runtime (a zero runtime gets the table's least limit, 1 s, so EASY predicts it
    ends 1 s after its start)."""
    from tjap.placement.batch.jobs import Jobs

    rows = np.arange(jobs.start, jobs.stop)
    runtime = workload.runtime_s[rows]
    return Jobs.build(
        submit_s=workload.arrival_s[rows],
        nodes=workload.requested_nodes[rows],
        limit_s=np.maximum(runtime, 1),
        runtime_s=runtime,
        job_id=rows,
        source="tjap workload",
    )


def _per_job(topology, workload, jobs, policy, placement, convention, schedule) -> None:
    """FCFS or EASY on :func:`tjap.placement.batch.simulator.simulate` (:func:`per_job_config`)."""
    from tjap.placement.batch.simulator import simulate

    result = simulate(
        workload_jobs(workload, jobs),
        topology.num_nodes,
        per_job_config(policy, placement, convention),
        topology,
    )
    for row, j in enumerate(jobs):
        schedule.record(j, result.start_s[row], result.nodes_of(row))
        if result.first_reservation_s[row] >= 0:
            schedule.reservations[j] = int(result.first_reservation_s[row])


def replay(
    topology: Topology,
    workload: Workload,
    *,
    policy: str = "window",
    placement: str = "firstfit",
    tau_s: int = 60,
    cap: int | None = 5,
    method: str = "dp",
    convention: str = "paper",
    seed: int = 0,
    jobs: range | None = None,
    progress=None,
    **solve_options,
) -> Schedule:
    """Replay ``jobs`` of ``workload`` (all by default) on an initially empty cluster, any
    :class:`Topology` (nodes are indices in its depth-first order). ``progress(started,
    total)``, if given, is called as jobs start (after each window of the window policy)."""
    if not isinstance(topology, Topology):
        raise InvalidInputError(
            f"topology must be a tjap.Topology (or tjap.FatTree), got {type(topology).__name__}"
        )
    if policy not in POLICIES:
        raise InvalidInputError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    if placement not in PLACEMENTS:
        raise InvalidInputError(
            f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}"
        )
    if policy == "window" and placement != "firstfit":
        raise InvalidInputError(
            f"placement {placement!r} is for the fcfs and easy policies; the window policy places "
            f"each window with its method (e.g. method='freeform' for the cheapest node sets)"
        )
    convention_code(convention)  # names the allowed conventions if it is not one
    if tau_s < 1:
        raise InvalidInputError(f"tau_s must be a positive number of seconds, got {tau_s}")
    if cap is not None and cap < 1:
        raise InvalidInputError(
            f"cap must be a positive number of multi-node jobs or None, got {cap}"
        )
    jobs = range(workload.num_jobs) if jobs is None else jobs
    if not isinstance(jobs, range) or jobs.step != 1:
        raise InvalidInputError("jobs must be a range of consecutive job indices (step 1)")
    if len(jobs) == 0:
        raise InvalidInputError("no jobs to replay")
    if workload.requested_nodes[list(jobs)].max() > topology.num_nodes:
        raise InvalidInputError("a job requests more nodes than the cluster has")
    schedule = Schedule(topology, workload, jobs)
    started = 0
    if policy == "window":
        for tick in window_ticks(
            topology,
            workload,
            jobs.start,
            jobs.stop,
            tau_s=tau_s,
            cap=cap,
            method=method,
            convention=convention,
            seed=seed,
            **solve_options,
        ):
            for j, nodes in tick.started:
                schedule.record(j, tick.time_s, nodes)
            started += len(tick.started)
            if progress is not None:
                progress(started, len(jobs))
    else:
        _per_job(topology, workload, jobs, policy, placement, convention, schedule)
        if progress is not None:
            progress(len(jobs), len(jobs))
    return schedule
