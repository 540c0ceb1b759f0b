"""The JCT simulator of seed 001 and the protocol of a placement policy.

Time runs in scheduling intervals of 30 minutes (Sec. VI-A). In each interval the schedulers place
their queues and forward what they cannot place (the loop, one scheduling decision at a time:
:class:`tjap.placement.interference.episode.PlacementEpisode`); placed jobs run to completion without
preemption (the paper's rule).

Tasks: a worker takes one GPU of a GPU group and its model's CPU cores on that group's socket; a
parameter server takes no GPU and ``PS_CPU_CORES``. A socket holds at most 2 x its physical cores
(hyperthreads) and a group at most its GPUs; the simulator refuses any plan that would exceed them
(:meth:`Simulator.fits`). PCIe is not reserved: its contention is interference.

During the interval every running job progresses at its current speed (one Numba kernel,
:func:`tjap.placement.interference._kernels.interval_update`): an iteration takes the slowest worker's
compute time, ideal x (1 + S) with S the interference model's slowdown of that worker given every
other task on its server, plus the slowest worker-PS flow's gradient / PS over its bottleneck
bandwidth (push and pull overlap on full-duplex links), each link's bandwidth shared equally among
the flows on it. A job that completes its epochs frees its resources at the end of the interval.
JCT = finish - arrival, in intervals (fractional: a job finishing 40 % into an interval counts 0.4
of it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from tjap.core.errors import InvalidInputError, check_number, check_options
from tjap.core.renames import renamed
from tjap.core.result import Measurement
from tjap.placement.interference import _kernels as kern
from tjap.placement.interference import profiles
from tjap.placement.interference.cluster import Cluster
from tjap.placement.interference.episode import PlacementEpisode
from tjap.placement.interference.jobs import DONE, INTERVAL_S, RUNNING, WAITING, Workload
from tjap.placement.interference.model import Coefficients

# the old names, kept for one release (they warn): tjap.core.renames
__getattr__ = renamed(__name__, {"SimResult": "InterferenceResult"})


@runtime_checkable
class PlacementPolicy(Protocol):
    """Places the queued jobs of one scheduler on its partition.

    ``place(sim, partition, jobs)`` returns, per job id in ``jobs`` (in order), either an int
    array of GPU group ids of ``partition`` (one per task: the job's workers first, then its
    parameter servers) or None (not here: the job is forwarded). The plans of one call are
    committed in order, so together they must fit (:meth:`Simulator.fits`); a policy reads the
    simulator's state and never writes it. A learned policy implements the same methods.

    A policy with ``scope = "cluster"`` is one scheduler for the whole cluster (the single-agent
    variant): it is called once per interval with ``partition = CLUSTER`` (-1,
    :data:`tjap.placement.interference.cluster.CLUSTER`) and every queued job
    (the schedulers' queues in partition order), may use any GPU group, and nothing is
    forwarded (a job it returns None for waits for the next interval).
    """

    name: str

    def reset(self, sim: "Simulator", seed: int) -> None: ...

    def place(
        self, sim: "Simulator", partition: int, jobs: Sequence[int]
    ) -> list[np.ndarray | None]: ...


@dataclass(frozen=True)
class InterferenceResult(Measurement):
    """Per-job outcome of a run and its summary (:meth:`summary`); ``to_dict()`` holds every
    field (per-job arrays as lists, NaN as null).

    The fields every result shares (:data:`tjap.core.result.COMMON_FIELDS`): ``method`` (the
    policy's name, an alias of ``policy``), ``status`` (FEASIBLE: the run ran its course),
    ``objective`` (the average JCT of the finished jobs in intervals, ``summary()["avg_jct"]``;
    lower is better; NaN, written as null, when none finished), ``runtime_s`` and ``seed``.
    """

    policy: str
    cluster: str
    pattern: str
    seed: int
    arrival: np.ndarray
    start: np.ndarray  # interval the job was placed in, -1 never
    finish: np.ndarray  # fractional interval it completed, nan never
    slowdown: np.ndarray  # mean over its running intervals of the slowest worker's S
    comm_share: np.ndarray  # mean share of communication in its iteration time
    forwarded: np.ndarray  # partitions it was offered beyond its home one
    utilization: np.ndarray  # fraction of GPUs allocated in each interval
    intervals: int
    runtime_s: float
    info: dict = field(default_factory=dict)

    @property
    def jct(self) -> np.ndarray:
        return self.finish - self.arrival

    @property
    def objective(self) -> float:
        """The average JCT of the finished jobs (intervals); NaN when none finished."""
        done = np.isfinite(self.finish)
        return float(self.jct[done].mean()) if done.any() else float("nan")

    def summary(self) -> dict:
        """avg_jct (intervals, finished jobs), jobs, completed, unfinished, avg_wait (intervals,
        started jobs), avg_slowdown and avg_comm_share (started jobs), forwarded_jobs,
        utilization (mean fraction of GPUs allocated), intervals and runtime_s."""
        done = np.isfinite(self.finish)
        started = self.start >= 0
        return {
            "avg_jct": self.objective,
            "jobs": int(len(self.arrival)),
            "completed": int(done.sum()),
            "unfinished": int((~done).sum()),
            "avg_wait": float((self.start[started] - self.arrival[started]).mean())
            if started.any()
            else float("nan"),
            "avg_slowdown": float(self.slowdown[started].mean()) if started.any() else 0.0,
            "avg_comm_share": float(self.comm_share[started].mean()) if started.any() else 0.0,
            "forwarded_jobs": int((self.forwarded > 0).sum()),
            "utilization": float(self.utilization.mean()) if len(self.utilization) else 0.0,
            "intervals": int(self.intervals),
            "runtime_s": float(self.runtime_s),
        }


class Simulator:
    """Hot state of one run: free GPUs, CPU, PCIe and tasks per GPU group, flows per link, and
    where each job's tasks and flows are.

    Policies read ``cluster``, ``workload``, ``coefficients``, ``interval`` and the per-group
    arrays ``gpu_free``, ``cpu_used``, ``pcie_used``, ``tasks``, ``exp_sum`` (sum over the
    group's tasks of exp((alpha3 - alpha2) C_t), for exact interference sums), ``cpu_capacity``,
    ``server_tasks`` and the per-link ``link_flows``; :meth:`task_demands` gives a job's tasks.
    What the schedulers know of the interval's queues: ``queue_len`` (jobs queued at each
    scheduler when the interval began) and :meth:`offered` (the partitions a job was offered to
    in this interval), kept by :meth:`begin_interval` and :meth:`mark_offered`.
    """

    def __init__(
        self,
        cluster: Cluster,
        workload: Workload,
        coefficients: Coefficients | None = None,
        interval_s: float = INTERVAL_S,
    ):
        if not isinstance(cluster, Cluster):
            raise InvalidInputError(
                f"cluster must be a tjap.placement.interference.Cluster, got "
                f"{type(cluster).__name__}"
            )
        if not isinstance(workload, Workload):
            raise InvalidInputError(
                f"workload must be a tjap.placement.interference.Workload, got "
                f"{type(workload).__name__}"
            )
        if len(workload) and workload.home.max() >= cluster.num_partitions:
            raise InvalidInputError(
                f"workload has jobs for scheduler {int(workload.home.max())} "
                f"but the cluster has {cluster.num_partitions} partitions; "
                "generate it with schedulers=cluster.num_partitions"
            )
        if len(workload) and workload.workers.max() > cluster.total_gpus:
            raise InvalidInputError("a job needs more GPUs than the cluster has")
        check_number("interval_s", interval_s, 0, low_open=True)
        self.cluster, self.workload = cluster, workload
        self.coefficients = coefficients or Coefficients.generator()
        self.coef = self.coefficients.as_array()
        self.interval_s = float(interval_s)
        w = workload
        self.task_ptr = np.concatenate([[0], np.cumsum(w.tasks)]).astype(np.int64)
        self.flow_ptr = np.concatenate([[0], np.cumsum(w.workers * w.ps)]).astype(np.int64)
        worker = np.zeros(self.task_ptr[-1], bool)
        for j in range(len(w)):  # workers first in each job's task range
            worker[self.task_ptr[j] : self.task_ptr[j] + w.workers[j]] = True
        model_of_task = np.repeat(w.model, w.tasks)
        self.task_worker = worker
        self.task_cpu = np.where(worker, profiles.CPU_CORES[model_of_task], profiles.PS_CPU_CORES)
        self.task_pcie = np.where(worker, profiles.PCIE_GBPS[model_of_task], 0.0)
        self.task_exp = np.exp((self.coef[2] - self.coef[1]) * self.task_cpu)
        self.cpu_capacity = 2.0 * cluster.group_cores
        self._grad_gbit = profiles.GRAD_MB * 8e-3
        self._iters = profiles.ITERS_PER_EPOCH.astype(np.float64)
        self.reset()

    def reset(self) -> None:
        c, w = self.cluster, self.workload
        self.gpu_free = c.group_gpus.copy()
        self.cpu_used = np.zeros(c.num_groups)
        self.pcie_used = np.zeros(c.num_groups)
        self.tasks = np.zeros(c.num_groups, np.int64)
        self.exp_sum = np.zeros(c.num_groups)
        self.server_tasks = np.zeros(c.num_servers, np.int64)
        self.link_flows = np.zeros(c.num_links, np.int64)
        self.task_group = np.full(self.task_ptr[-1], -1, np.int64)
        self.flow_links = np.full((self.flow_ptr[-1], c.max_path_len), -1, np.int64)
        self.flow_len = np.zeros(self.flow_ptr[-1], np.int64)
        n = len(w)
        self.state = np.zeros(n, np.int64)
        self.progress = np.zeros(n)
        self.start = np.full(n, -1, np.int64)
        self.finish = np.full(n, np.nan)
        self.forwarded = np.zeros(n, np.int64)
        self._slowdown_sum = np.zeros(n)
        self._comm_sum = np.zeros(n)
        self._run_intervals = np.zeros(n)
        self.interval = 0
        self.queue_len = np.zeros(self.cluster.num_partitions)
        self._offered: dict[int, np.ndarray] = {}

    # -- jobs and plans --------------------------------------------------------------------------
    def task_demands(self, job: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(GPUs, CPU cores, PCIe Gbps) of each task of ``job``: workers first, then PSs."""
        lo, hi = self.task_ptr[job], self.task_ptr[job + 1]
        return (
            self.task_worker[lo:hi].astype(np.int64),
            self.task_cpu[lo:hi],
            self.task_pcie[lo:hi],
        )

    def fits(self, job: int, groups) -> bool:
        """Whether ``groups`` (one GPU group per task) is a plan for ``job`` that the free GPUs and
        CPU hold, with every group in the cluster."""
        groups = np.asarray(groups)
        lo, hi = self.task_ptr[job], self.task_ptr[job + 1]
        if (
            groups.shape != (hi - lo,)
            or not np.issubdtype(groups.dtype, np.integer)
            or groups.min() < 0
            or groups.max() >= self.cluster.num_groups
        ):
            return False
        gpu = np.bincount(groups, weights=self.task_worker[lo:hi], minlength=0)
        cpu = np.bincount(groups, weights=self.task_cpu[lo:hi])
        used = np.flatnonzero(gpu + cpu > 0)
        return bool(
            np.all(gpu[used] <= self.gpu_free[used])
            and np.all(self.cpu_used[used] + cpu[used] <= self.cpu_capacity[used] + 1e-9)
        )

    def commit(self, job: int, groups) -> None:
        """Start ``job`` on ``groups`` now (raises if the plan does not fit)."""
        if self.state[job] != WAITING:
            raise InvalidInputError(f"job {job} is not waiting")
        if not self.fits(job, groups):
            raise InvalidInputError(
                f"plan {list(groups)} for job {job} does not fit the free "
                "GPUs and CPU (or names an unknown group)"
            )
        groups = np.asarray(groups, np.int64)
        self._apply(job, groups, +1)
        lo = self.task_ptr[job]
        self.task_group[lo : lo + len(groups)] = groups
        c, w = self.cluster, self.workload
        kern.fill_job_flows(
            groups,
            int(w.workers[job]),
            int(w.ps[job]),
            *c.path_arrays(),
            self.flow_links,
            self.flow_len,
            int(self.flow_ptr[job]),
        )
        kern.add_flows(
            self.flow_links,
            self.flow_len,
            int(self.flow_ptr[job]),
            int(self.flow_ptr[job + 1] - self.flow_ptr[job]),
            self.link_flows,
            1,
        )
        self.state[job] = RUNNING
        self.start[job] = self.interval

    def _apply(self, job: int, groups: np.ndarray, sign: int) -> None:
        lo, hi = self.task_ptr[job], self.task_ptr[job + 1]
        np.subtract.at(self.gpu_free, groups, sign * self.task_worker[lo:hi])
        np.add.at(self.cpu_used, groups, sign * self.task_cpu[lo:hi])
        np.add.at(self.pcie_used, groups, sign * self.task_pcie[lo:hi])
        np.add.at(self.exp_sum, groups, sign * self.task_exp[lo:hi])
        np.add.at(self.tasks, groups, sign)
        np.add.at(self.server_tasks, self.cluster.group_server[groups], sign)

    def release(self, job: int) -> None:
        """Free everything ``job`` holds."""
        lo, hi = self.task_ptr[job], self.task_ptr[job + 1]
        self._apply(job, self.task_group[lo:hi], -1)
        kern.add_flows(
            self.flow_links,
            self.flow_len,
            int(self.flow_ptr[job]),
            int(self.flow_ptr[job + 1] - self.flow_ptr[job]),
            self.link_flows,
            -1,
        )
        self.state[job] = DONE
        if np.any(self.tasks[self.task_group[lo:hi]] == 0):  # keep sums exact when emptied
            empty = self.task_group[lo:hi][self.tasks[self.task_group[lo:hi]] == 0]
            self.cpu_used[empty] = self.pcie_used[empty] = self.exp_sum[empty] = 0.0

    def free_by_partition(self) -> tuple[np.ndarray, np.ndarray]:
        """Free GPUs and free CPU cores per partition."""
        c = self.cluster
        gpu = np.bincount(c.group_partition, weights=self.gpu_free, minlength=c.num_partitions)
        cpu = np.bincount(
            c.group_partition, weights=self.cpu_capacity - self.cpu_used, minlength=c.num_partitions
        )
        return gpu, cpu

    # -- the schedulers' view of the queues ----------------------------------------------------
    def begin_interval(self, queues: Sequence[Sequence[int]]) -> None:
        """Record the queue of each scheduler at the start of the interval and forget the
        previous interval's offers."""
        self.queue_len = np.array([len(q) for q in queues], float)
        self._offered = {}

    def mark_offered(self, job: int, partition: int) -> None:
        """Record that ``job`` is offered to ``partition``'s scheduler in this interval."""
        if job not in self._offered:
            self._offered[job] = np.zeros(self.cluster.num_partitions, bool)
        self._offered[job][partition] = True

    def offered(self, job: int) -> np.ndarray:
        """Bool per partition: whether ``job`` has been offered to it in this interval (its home
        scheduler's turn included)."""
        return self._offered.get(job, np.zeros(self.cluster.num_partitions, bool)).copy()

    # -- a run -----------------------------------------------------------------------------------
    def run(
        self,
        policy: PlacementPolicy,
        *,
        seed: int | None = None,
        max_intervals: int | None = None,
        drain: bool = True,
        progress: Callable | None = None,
    ) -> InterferenceResult:
        """Run the workload under ``policy`` from an empty cluster (one
        :class:`~tjap.placement.interference.episode.PlacementEpisode`, one ``place`` call per turn).

        Arrivals span the workload's intervals; with ``drain`` the run continues until every job
        has finished (at most ``max_intervals`` intervals in all, default the arrival span +
        100000), without it stops after the last arrival interval (or ``max_intervals``).
        """
        if not isinstance(policy, PlacementPolicy):
            raise InvalidInputError(
                f"policy must have name, reset() and place(), got {type(policy).__name__}"
            )
        seed = self.workload.seed if seed is None else int(seed)
        started = time.perf_counter()
        episode = PlacementEpisode(
            self,
            scope=getattr(policy, "scope", "partition"),
            max_intervals=max_intervals,
            drain=drain,
            progress=progress,
        )
        policy.reset(self, seed)
        episode.run(policy)
        runs = np.maximum(self._run_intervals, 1)
        return InterferenceResult(
            getattr(policy, "name", type(policy).__name__),
            self.cluster.name,
            self.workload.pattern,
            seed,
            self.workload.arrival.astype(float),
            self.start.copy(),
            self.finish.copy(),
            self._slowdown_sum / runs,
            self._comm_sum / runs,
            self.forwarded.copy(),
            np.array(episode.utilization),
            self.interval + 1,
            time.perf_counter() - started,
            info=dict(getattr(policy, "stats", {}) or {}),
        )

    def advance(self, running: list[int], buffers=None) -> list[int]:
        """Run interval ``self.interval``: add the jobs started in it to ``running``, progress
        them (one kernel call), release those that finish; returns the jobs still running.
        ``buffers`` are three float arrays of at least the workload's length (scratch)."""
        w, c = self.workload, self.cluster
        i = self.interval
        if buffers is None:
            buffers = (np.zeros(len(w)), np.zeros(len(w)), np.zeros(len(w)))
        used_s, slow, comm = buffers
        running = [j for j in running if self.state[j] == RUNNING]
        running += [j for j in np.flatnonzero(self.start == i)]
        if running:
            run = np.array(running, np.int64)
            n = len(run)
            kern.interval_update(
                run,
                self.interval_s,
                w.model,
                w.workers,
                w.ps,
                w.epochs,
                self.progress,
                self.task_ptr,
                self.task_group,
                self.task_cpu,
                self.task_pcie,
                self.flow_ptr,
                self.flow_links,
                self.flow_len,
                self.link_flows,
                c.link_gbps,
                c.group_server,
                c.server_first_group,
                c.server_groups,
                c.group_cores,
                self.cpu_used,
                self.pcie_used,
                self.server_tasks,
                profiles.ITER_S,
                self._iters,
                self._grad_gbit,
                self.coef,
                used_s[:n],
                slow[:n],
                comm[:n],
            )
            self._slowdown_sum[run] += slow[:n]
            ideal = profiles.ITER_S[w.model[run]]
            self._comm_sum[run] += comm[:n] / (ideal * (1 + slow[:n]) + comm[:n])
            self._run_intervals[run] += 1
            done = used_s[:n] < self.interval_s - 1e-9
            done |= self.progress[run] >= w.epochs[run]
            for j, used in zip(run[done], used_s[:n][done]):
                self.finish[j] = i + used / self.interval_s
                self.release(int(j))
        return [j for j in running if self.state[j] == RUNNING]

    def check(self) -> None:
        """Raise if any GPU group or socket is oversubscribed or the incremental sums drifted from
        the tasks placed (the tests call it)."""
        c = self.cluster
        placed = self.task_group >= 0
        live = placed & np.repeat(self.state == RUNNING, np.diff(self.task_ptr))
        groups = self.task_group[live]
        gpu = np.bincount(groups, weights=self.task_worker[live], minlength=c.num_groups)
        cpu = np.bincount(groups, weights=self.task_cpu[live], minlength=c.num_groups)
        if np.any(gpu > c.group_gpus) or np.any(cpu > self.cpu_capacity + 1e-9):
            raise AssertionError("a GPU group or socket is oversubscribed")
        if not (
            np.array_equal(c.group_gpus - gpu, self.gpu_free) and np.allclose(cpu, self.cpu_used)
        ):
            raise AssertionError("free GPUs or CPU sums drifted from the placed tasks")
        flows = np.zeros(c.num_links, np.int64)
        for j in np.flatnonzero(self.state == RUNNING):
            for f in range(self.flow_ptr[j], self.flow_ptr[j + 1]):
                np.add.at(flows, self.flow_links[f, : self.flow_len[f]], 1)
        if not np.array_equal(flows, self.link_flows):
            raise AssertionError("link flow counts drifted from the running jobs' paths")


def simulate(
    cluster: Cluster, workload: Workload, policy: PlacementPolicy, **options
) -> InterferenceResult:
    """Run ``workload`` on ``cluster`` under ``policy`` (options: seed, max_intervals, drain,
    progress; coefficients and interval_s go to the :class:`Simulator`)."""
    check_options(
        options,
        ("seed", "max_intervals", "drain", "progress", "coefficients", "interval_s"),
        "simulate()",
    )
    sim_options = {k: options.pop(k) for k in ("coefficients", "interval_s") if k in options}
    return Simulator(cluster, workload, **sim_options).run(policy, **options)
