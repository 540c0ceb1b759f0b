"""The interval loop of seed 001's simulator as an object that stops at each scheduling decision.

At the start of interval i the jobs that arrived at each scheduler join its queue (behind the jobs
still waiting there), and every scheduler, in partition order, is asked to place its queue on its
partition: one *turn* (:class:`Turn`). A job not placed there is forwarded: it is offered to the
other partitions, most free GPUs first (only those with enough free GPUs and CPU for it), each at
most once, one turn per offer; if none takes it, it waits at its home scheduler for the next
interval. With ``scope="cluster"`` there is one scheduler for the whole cluster: one turn per
interval with every queued job (the schedulers' queues in partition order) on :data:`CLUSTER`, and
nothing is forwarded. Then the interval runs (:meth:`Simulator.advance`): placed jobs run to
completion without preemption.

:class:`PlacementEpisode` is that loop. :meth:`~PlacementEpisode.next_turn` runs it to the next
turn; the caller places the turn's jobs (:meth:`~PlacementEpisode.submit` a policy's plans, or
:meth:`~PlacementEpisode.commit` them one job at a time) and asks for the next turn; the jobs of a
turn left waiting are what the loop forwards. :meth:`Simulator.run` drives it with a placement
policy, one ``place`` call per turn; the gym env :class:`tjap.learned.interference.env.InterferenceEnv` drives the
same object one task at a time.

>>> from tjap.placement.interference import Simulator, Workload, make_cluster
>>> cluster = make_cluster("fattree", 4)
>>> sim = Simulator(cluster, Workload.generate(cluster.num_partitions, 2, "poisson", 0, rate=1))
>>> episode = PlacementEpisode(sim)
>>> turn = episode.next_turn()
>>> (turn.interval, turn.partition) == (0, 0)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.core.result import Record, Status
from tjap.placement.interference.cluster import CLUSTER
from tjap.placement.interference.jobs import DONE, RUNNING, WAITING

SCOPES = ("partition", "cluster")


@dataclass(frozen=True)
class Turn:
    """One scheduling decision: place ``jobs`` (queued job ids, in queue order) on ``partition``
    (:data:`CLUSTER`: anywhere in the cluster) in ``interval``."""

    interval: int
    partition: int
    jobs: tuple[int, ...]


@dataclass(frozen=True)
class JobPlacement(Record):
    """One placement decision outside an episode (:func:`tjap.place_job`): the ``jobs`` offered,
    in order, and per job its ``plans`` entry (the GPU group of each task, workers first, then
    parameter servers; None where the policy did not place it: it would be forwarded).

    ``objective`` is the number of jobs placed (a placement has no time of its own until the jobs
    run: the JCT is :func:`tjap.placement.interference.simulate`'s); ``status`` FEASIBLE when
    every job was placed, INFEASIBLE when none was, TIME_LIMIT never (a policy has no limit)."""

    jobs: tuple
    plans: tuple
    method: str
    partition: int
    runtime_s: float
    seed: int

    @property
    def placed(self) -> int:
        return sum(plan is not None for plan in self.plans)

    @property
    def objective(self) -> int:
        return self.placed

    @property
    def status(self) -> Status:
        return Status.INFEASIBLE if self.placed == 0 else Status.FEASIBLE

    @property
    def plan(self):
        """The plan of the first (or only) job."""
        return self.plans[0]


def check_plans(sim, partition: int, jobs: Sequence[int], plans, who: str = "the policy") -> list:
    """``plans`` (one per job of ``jobs``: GPU groups per task, or None) as int arrays, or a
    one-line error when their number is wrong or a plan leaves ``partition``. Whether a plan fits
    the free resources is checked when it is committed (:meth:`Simulator.commit`)."""
    if len(plans) != len(jobs):
        raise InvalidInputError(f"{who} returned {len(plans)} plans for {len(jobs)} jobs")
    allowed = sim.cluster.group_partition
    out = []
    for job, plan in zip(jobs, plans):
        if plan is not None:
            plan = np.asarray(plan, np.int64)
            if plan.size and (
                plan.min() < 0
                or plan.max() >= len(allowed)
                or (partition != CLUSTER and np.any(allowed[plan] != partition))
            ):
                raise InvalidInputError(f"{who} placed job {job} outside partition {partition}")
        out.append(plan)
    return out


def forward_order(sim, job: int, free_gpu: np.ndarray, free_cpu: np.ndarray) -> list[int]:
    """The partitions a job left waiting by its home scheduler is offered to, in order: most free
    GPUs first (``free_gpu``, ``free_cpu``: per partition, :meth:`Simulator.free_by_partition`
    less what the forwarded jobs before it took), only those with enough free GPUs and CPU for
    it, its home left out. The episode's loop and the Kubernetes controller
    (:mod:`tjap.k8s.interference`) forward by it."""
    gpus, cpus, _ = sim.task_demands(job)
    need_gpu, need_cpu = gpus.sum(), cpus.sum()
    home = sim.workload.home[job]
    return [
        int(q)
        for q in np.argsort(-free_gpu, kind="stable")
        if q != home and free_gpu[q] >= need_gpu and free_cpu[q] >= need_cpu
    ]


class PlacementEpisode:
    """The run of ``sim``'s workload from an empty cluster, one turn at a time.

    Parameters
    ----------
    sim : Simulator
        The simulator; the episode resets it and then owns its state.
    scope : {"partition", "cluster"}
        One scheduler per partition with forwarding, or one for the whole cluster.
    max_intervals : int, optional
        Intervals at most (default: the arrival span, plus 100000 with ``drain``).
    drain : bool
        Run until every job has finished (within ``max_intervals``); without it, stop after the
        last arrival interval.
    progress : callable, optional
        Wraps the iterable of intervals (a progress bar).

    Attributes
    ----------
    utilization : list of float
        Per interval, the fraction of GPUs allocated once its turns are placed.
    waiting : list of int
        Per interval, the jobs left waiting in the queues after its turns.
    time_in_system : list of float
        Per interval, the time every arrived, unfinished job spent in the system during it (in
        intervals: 1 for a whole interval, the fraction up to its finish for a job finishing in
        it); the sum over an episode is the total JCT of its jobs up to its end.
    turn : Turn or None
        The current turn (None before the first and after the last).
    done : bool
        Whether the episode has ended.
    """

    def __init__(
        self,
        sim,
        *,
        scope: str = "partition",
        max_intervals: int | None = None,
        drain: bool = True,
        progress: Callable | None = None,
    ):
        if scope not in SCOPES:
            raise InvalidInputError(
                f"a policy's scope is 'partition' (the default) or 'cluster', got {scope!r}"
            )
        w = sim.workload
        self.span = int(w.arrival.max()) + 1 if len(w) else 0
        if max_intervals is None:
            max_intervals = self.span + 100000 if drain else self.span
        check_int("max_intervals", max_intervals, 1)
        self.sim, self.scope = sim, scope
        self.max_intervals, self.drain, self._progress = int(max_intervals), bool(drain), progress
        self.utilization: list[float] = []
        self.waiting: list[int] = []
        self.time_in_system: list[float] = []
        self.turn: Turn | None = None
        self.done = False
        sim.reset()
        self._loop = self._intervals()

    # -- decisions -------------------------------------------------------------------------------
    def next_turn(self) -> Turn | None:
        """Run the loop to the next turn and return it (None: the episode has ended). The jobs of
        the current turn not committed by then stay waiting (forwarded from a home turn)."""
        if self.done:
            return None
        try:
            self.turn = next(self._loop)
        except StopIteration:
            self.turn, self.done = None, True
        return self.turn

    def commit(self, job: int, plan) -> None:
        """Start ``job``, one of the current turn's, on ``plan`` (GPU groups of the turn's
        partition, one per task: workers first)."""
        turn = self.turn
        if turn is None or job not in turn.jobs:
            raise InvalidInputError(f"job {job} is not one of the current turn's jobs")
        self.sim.commit(job, check_plans(self.sim, turn.partition, [job], [plan])[0])

    def submit(self, plans, who: str = "the policy") -> None:
        """Commit the current turn's ``plans`` (one per job, in order; None: not placed here)."""
        turn = self.turn
        if turn is None:
            raise InvalidInputError("no turn to place: call next_turn() first")
        for job, plan in zip(
            turn.jobs, check_plans(self.sim, turn.partition, turn.jobs, plans, who)
        ):
            if plan is not None:
                self.sim.commit(job, plan)

    def run(self, policy) -> None:
        """Play every remaining turn with ``policy`` (one ``place`` call per turn)."""
        while (turn := self.next_turn()) is not None:
            self.submit(
                policy.place(self.sim, turn.partition, list(turn.jobs)), f"policy {policy.name}"
            )

    # -- the loop --------------------------------------------------------------------------------
    def _offer(self, partition: int, jobs: list[int]):
        """Yield the turn of ``jobs`` on ``partition``; return the jobs still waiting after it."""
        sim = self.sim
        if partition != CLUSTER:
            for job in jobs:
                sim.mark_offered(job, partition)
        yield Turn(sim.interval, partition, tuple(jobs))
        return [job for job in jobs if sim.state[job] == WAITING]

    def _intervals(self):
        sim = self.sim
        w, c = sim.workload, sim.cluster
        queues: list[list[int]] = [[] for _ in range(c.num_partitions)]
        running: list[int] = []
        next_job = 0
        buffers = (np.zeros(len(w)), np.zeros(len(w)), np.zeros(len(w)))
        steps = range(self.max_intervals)
        for i in self._progress(steps) if self._progress else steps:
            sim.interval = i
            while next_job < len(w) and w.arrival[next_job] <= i:
                queues[w.home[next_job]].append(next_job)
                next_job += 1
            sim.begin_interval(queues)
            forward = []
            if self.scope == "cluster":  # one scheduler, one queue, no forwarding
                queued = [j for q in queues for j in q]
                if queued:
                    yield from self._offer(CLUSTER, queued)
            else:
                for p in range(c.num_partitions):
                    if queues[p]:
                        forward += yield from self._offer(p, queues[p])
            if forward:
                free_gpu, free_cpu = sim.free_by_partition()
                for job in forward:
                    gpus, cpus, _ = sim.task_demands(job)
                    for q in forward_order(sim, job, free_gpu, free_cpu):
                        sim.forwarded[job] += 1
                        if not (yield from self._offer(q, [job])):
                            free_gpu[q] -= gpus.sum()
                            free_cpu[q] -= cpus.sum()
                            break
            for p in range(c.num_partitions):
                queues[p] = [j for j in queues[p] if sim.state[j] == WAITING]
            self.waiting.append(sum(len(q) for q in queues))
            self.utilization.append(1.0 - sim.gpu_free.sum() / c.total_gpus)
            in_system = np.flatnonzero((w.arrival[:next_job] <= i) & (sim.state[:next_job] != DONE))
            running = sim.advance(running, buffers)
            finish = sim.finish[in_system]
            self.time_in_system.append(float(np.where(np.isfinite(finish), finish - i, 1.0).sum()))
            if (
                self.drain
                and next_job == len(w)
                and not any(queues)
                and not np.any(sim.state == RUNNING)
            ):
                return
            if not self.drain and i + 1 >= self.span:
                return
