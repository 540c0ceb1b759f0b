"""Event-driven simulator of a Slurm-like batch queue: multifactor priority, a main pass in priority
order, backfilling with a reservation depth, and pluggable node selection.

Rules (the kernels are in :mod:`tjap.placement.batch._kernels`):

- **Events** are submissions, job ends (a job ends at start + runtime; runtimes are clipped to the
  time limit, as Slurm kills a job at its limit), periodic priority recalculations and backfill
  passes. At one time t they are processed in this order: ends (by row), submissions (by row),
  the priority recalculation, the main pass, then the backfill pass if it is due.
- **Priority** is Slurm's multifactor sum, floored to an integer:
  ``w_age * min(age, max_age) / max_age + w_size * size + w_fairshare * 2^(-U/S) + w_qos * qos``,
  with age counted from eligibility (submission, or the end of the job it depends on), size =
  nodes / N (with ``favor_small``: (N - nodes + 1) / N), U the user's usage (node-seconds decayed
  with ``decay_half_life_s``) over all users' usage and S = 1 / number of users (equal shares:
  Slurm's classic fair-share formula). Priorities are recomputed every ``calc_period_s`` (Slurm's
  PriorityCalcPeriod) and at submission. All weights default to 0, as in Slurm, which makes the
  order first come, first served. Ties go to the earlier submission.
- **Main pass** (at every change): pending eligible jobs in priority order start while they fit;
  the first that does not fit stops the pass (Slurm's main scheduler). Jobs waiting on a
  dependency are skipped, not blocking.
- **Backfill** (``backfill``): ``"none"`` (depth 0: the main pass only), ``"easy"`` (depth 1), an
  integer depth k, ``"slurm"`` (unlimited depth, as Slurm's default bf_job_part_count_reserve=0),
  or ``"conservative"``. A pass builds the free-node profile from the running jobs' *time limits*
  (the scheduler does not know runtimes), ends rounded up to ``bf_resolution_s``; then, in
  priority order (at most ``bf_max_job_test`` jobs), a job starts now if it fits now until its
  limit without overlapping a reservation (it must end strictly before a reservation begins:
  Slurm's backfill counts a job ending at a reservation's first second as overlapping it), and
  otherwise, while fewer than ``depth`` reservations exist, gets a reservation at its earliest
  start. With ``bf_end_at_reservation`` a job may instead end exactly when a reservation begins
  (the textbook EASY rule of Mu'alem and Feitelson, and seed 002's baseline: it delays nobody,
  since nodes freed at an end are usable at once). A reservation holds the job's nodes; with
  ``reserve_whole_node`` it holds every node, which is what Slurm does when the simulated nodes
  stand for the CPUs of one Slurm node (its backfill reserves whole nodes), as in the fidelity
  replay. With ``bf_will_run_window_s`` = W > 0 a reservation starts when Slurm's will-run test
  says rather than at the earliest time the job fits: running jobs, by predicted end, are taken
  away in batches (the first up to the first multiple of W after the earliest end, plus W; the
  window doubling for each next batch), and the job starts at the last end of the first batch after
  which it fits (exact for one reservation, as EASY; for deeper modes it is the later of the two
  times). With ``bf_reserve_nodes`` (EASY only) the reservation holds named nodes, the lowest ids
  free at its start by the time limits, and a job that would still run when it begins is
  backfilled only onto free nodes outside them (lowest first), as Slurm does when each simulated
  node is a Slurm node on one switch. Depth reservations are recomputed from scratch at every pass (as Slurm does). ``"conservative"`` keeps every job's reservation between passes
  and only ever moves it earlier (Mu'alem and Feitelson's compression), so no reservation is ever
  delayed; its pass runs at every change. The other modes pass every ``bf_interval_s`` seconds
  (0: at every change); a pass with nothing changed since the last one cannot start a job, so
  only passes after a change are simulated.
- **Release**: a job's nodes return ``release_delay_s`` after it ends (Slurm's COMPLETING state,
  about 1 s on a local Slurm; default 0); jobs depending on it become eligible then.
- **Nodes**: ``placement="firstfit"`` (lowest free ids), ``"contiguous"`` (the cheapest block of
  consecutive free nodes of the ``topology``, any :class:`tjap.placement.tree.topology.Topology`,
  under the hop-cost convention ``cost_convention``, priced by the tree's count form
  (:mod:`tjap.placement.tree.tree_cost`), as :func:`tjap.placement.tree.online.place_job`) or ``"freeform"`` (the cheapest node set
  of all for the job alone, :func:`tjap.placement.tree.freeform.best_single_job_nodes`). Every scheduling decision
  counts nodes and never looks at which ones are free, so node choice changes no time: the
  Python-level placements (``"freeform"``) run the kernels with first-fit bookkeeping and
  :meth:`Simulator.result` then replays the starts in the kernels' order (``start_seq``), each
  job on the nodes free at that moment.

Deliberate departures from Slurm: no partitions, QoS limits, preemption or bf_window (reservations
are made however far ahead they fall; Slurm's docs advise a window at least the longest limit).
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field, fields, replace

import numpy as np

from tjap.core.backends import Slices
from tjap.core.errors import InvalidInputError, check_int, check_number, check_options, is_int
from tjap.core.renames import renamed
from tjap.core.result import Measurement, plain
from tjap.placement.batch import _kernels as k
from tjap.placement.batch.jobs import Jobs
from tjap.placement.tree.cost import CONVENTIONS, convention_code
from tjap.placement.tree.topology import MAX_NODES, Topology

# the old names, kept for one release (they warn): tjap.core.renames
__getattr__ = renamed(__name__, {"SimulationResult": "BatchResult"})

BACKFILL_MODES = ("none", "easy", "slurm", "conservative")
PLACEMENTS = ("firstfit", "contiguous", "freeform")
#: placements chosen in Python after the kernels ran (see the module docstring, "Nodes")
PYTHON_PLACEMENTS = ("freeform",)
DAY_S = 86400
#: The most node allocations (the jobs' node counts summed) one simulation records: each is a
#: slot of an int64 array, so 2 GiB at most.
MAX_ALLOCATIONS = 2**28


@dataclass(frozen=True)
class Priority:
    """Multifactor priority weights and parameters (Slurm's names and defaults)."""

    age: float = 0.0  # PriorityWeightAge
    job_size: float = 0.0  # PriorityWeightJobSize
    fairshare: float = 0.0  # PriorityWeightFairshare
    qos: float = 0.0  # PriorityWeightQOS
    qos_factor: float = 0.0  # the (constant) normalised QoS priority of every job
    max_age_s: int = 7 * DAY_S  # PriorityMaxAge (7-0)
    decay_half_life_s: int = 7 * DAY_S  # PriorityDecayHalfLife (7-0)
    calc_period_s: int = 300  # PriorityCalcPeriod (5 minutes)
    favor_small: bool = False  # PriorityFavorSmall

    def __post_init__(self):
        for name in ("age", "job_size", "fairshare", "qos"):
            check_number(
                f"priority weight {name}",
                getattr(self, name),
                0,
                2**32,
                high_open=True,
                must="a number in [0, 2^32)",
            )
        check_number("qos_factor", self.qos_factor, 0, 1)
        for name in ("max_age_s", "decay_half_life_s", "calc_period_s"):
            check_int(name, getattr(self, name), 1, must="a positive integer number of seconds")


@dataclass(frozen=True)
class SchedulerConfig:
    """How the simulated scheduler decides (defaults follow Slurm's documentation)."""

    backfill: str | int = "easy"
    bf_interval_s: int = 30  # bf_interval
    bf_resolution_s: int = 60  # bf_resolution
    bf_max_job_test: int = 500  # bf_max_job_test
    release_delay_s: int = 0  # seconds a job's nodes stay busy after it ends (COMPLETING)
    #: the simulated nodes are the CPUs of ONE Slurm node (the fidelity replay): Slurm's backfill
    #: reserves whole nodes, so a reservation keeps every simulated node from its start to its end
    reserve_whole_node: bool = False
    placement: str = "firstfit"
    #: hop-cost convention the "contiguous" placement minimises ("paper" or "published")
    cost_convention: str = "paper"
    #: True: a backfilled job may end exactly when a reservation begins (textbook EASY, seed
    #: 002's baseline); False: strictly before it (Slurm, the default)
    bf_end_at_reservation: bool = False
    #: 0: a backfill reservation starts at the earliest time the job fits (the default); W > 0:
    #: when Slurm 22.05's will-run test says, removing running jobs in batches of ends W seconds
    #: wide (Slurm's is 30) and starting the job at the last end of the batch it fits after; job
    #: times are then Unix seconds, since the batches are aligned on multiples of W
    bf_will_run_window_s: int = 0
    #: False: a reservation is a node count (the default); True: it holds named nodes, the lowest
    #: ids free at its start (by the time limits), and a job backfilled past its start takes the
    #: lowest free nodes outside them: Slurm with each simulated node a Slurm node, all on one
    #: switch (topology/tree then takes idle nodes in index order). Needs backfill "easy" (one
    #: reservation) and first-fit placement
    bf_reserve_nodes: bool = False
    priority: Priority = field(default_factory=Priority)

    def __post_init__(self):
        b = self.backfill
        if not (b in BACKFILL_MODES or (is_int(b) and b >= 0)):
            raise InvalidInputError(
                f"backfill must be one of {', '.join(BACKFILL_MODES)} or a "
                f"reservation depth >= 0, got {b!r}"
            )
        for name in (
            "bf_interval_s",
            "bf_resolution_s",
            "bf_max_job_test",
            "release_delay_s",
            "bf_will_run_window_s",
        ):
            value = getattr(self, name)
            low = 0 if name in ("bf_interval_s", "release_delay_s", "bf_will_run_window_s") else 1
            check_int(name, value, low)
        if self.placement not in PLACEMENTS:
            raise InvalidInputError(
                f"placement must be one of {', '.join(PLACEMENTS)}, got {self.placement!r}"
            )
        if self.bf_reserve_nodes and (
            self.backfill not in ("easy", 1)
            or self.reserve_whole_node
            or self.placement != "firstfit"
        ):
            raise InvalidInputError(
                "bf_reserve_nodes=True models one reservation on named nodes: "
                "use it with backfill='easy', placement='firstfit' and "
                "reserve_whole_node=False"
            )
        for name in ("reserve_whole_node", "bf_end_at_reservation", "bf_reserve_nodes"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidInputError(
                    f"{name} must be True or False, got {getattr(self, name)!r}"
                )
        if self.cost_convention not in CONVENTIONS:
            raise InvalidInputError(
                f"cost_convention must be one of {', '.join(CONVENTIONS)}, "
                f"got {self.cost_convention!r}"
            )
        if not isinstance(self.priority, Priority):
            raise InvalidInputError("priority must be a tjap.placement.batch.Priority")

    @classmethod
    def textbook_easy(cls, **changes) -> "SchedulerConfig":
        """Textbook EASY backfilling (Mu'alem and Feitelson) instead of Slurm's defaults: one
        reservation, a backfill pass at every event (``bf_interval_s=0``), no rounding of ends
        (``bf_resolution_s=1``), no limit on the jobs a pass tests, and a backfilled job may end
        exactly when the reservation begins. ``changes`` set other fields (e.g. ``priority``)."""
        textbook = dict(
            backfill="easy",
            bf_interval_s=0,
            bf_resolution_s=1,
            bf_max_job_test=2**31,
            bf_end_at_reservation=True,
        )
        return cls(**(textbook | changes))

    @property
    def mode_and_depth(self) -> tuple[int, int]:
        b = self.backfill
        if b == "none" or b == 0:
            return k.MODE_NONE, 0
        if b == "easy":
            return k.MODE_DEPTH, 1
        if b == "slurm":
            return k.MODE_DEPTH, -1
        if b == "conservative":
            return k.MODE_CONSERVATIVE, -1
        return k.MODE_DEPTH, int(b)


@dataclass(frozen=True)
class Snapshot:
    """The full state of a :class:`Simulator` at ``now_s`` (copies; restore with
    :meth:`Simulator.restore`)."""

    now_s: int
    arrays: dict


class Simulator:
    """Replay ``jobs`` on ``nodes`` nodes under ``config``.

    >>> sim = Simulator(jobs, nodes=76, config=SchedulerConfig(backfill="easy"))
    >>> result = sim.run()
    >>> result.summary()["mean_wait_s"]
    """

    def __init__(
        self,
        jobs: Jobs,
        nodes: int | None = None,
        config: SchedulerConfig | None = None,
        topology=None,
    ):
        if not isinstance(jobs, Jobs):
            raise InvalidInputError(
                "jobs must be a tjap.placement.batch.Jobs table (see load_trace)"
            )
        self.config = config or SchedulerConfig()
        if nodes is None:
            if topology is None:
                raise InvalidInputError("pass nodes=N (the cluster size) or a topology")
            nodes = topology.num_nodes
        check_int("nodes", nodes, 1)
        if nodes > MAX_NODES:
            raise InvalidInputError(
                f"a cluster of {int(nodes):,} nodes is more than tjap simulates ({MAX_NODES:,} "
                "nodes, tjap.placement.tree.topology.MAX_NODES); give nodes (--nodes) of at most "
                f"{MAX_NODES:,}"
            )
        if topology is not None and not isinstance(topology, Topology):
            raise InvalidInputError(
                f"topology must be a tjap.Topology (or tjap.FatTree), got {type(topology).__name__}"
            )
        if topology is not None and topology.num_nodes != nodes:
            raise InvalidInputError(f"nodes={nodes} but the topology has {topology.num_nodes}")
        if self.config.placement != "firstfit" and topology is None:
            raise InvalidInputError(
                f"placement {self.config.placement!r} needs a topology (a tjap.Topology: any "
                "switch tree, a tjap.FatTree among them)"
            )
        if len(jobs) and jobs.max_nodes > nodes:
            too_big = int((jobs.nodes > nodes).sum())
            raise InvalidInputError(
                f"{too_big} job(s) request more than the cluster's {nodes} nodes (largest: "
                f"{jobs.max_nodes}); use at least {jobs.max_nodes} nodes or drop them with "
                f"jobs.take(np.flatnonzero(jobs.nodes <= {nodes}))"
            )
        allocations = int(jobs.nodes.sum()) if len(jobs) else 0  # each job <= nodes here
        if allocations > MAX_ALLOCATIONS:
            raise InvalidInputError(
                f"the {len(jobs):,} jobs request {allocations:,} nodes in all, more than one "
                f"simulation records ({MAX_ALLOCATIONS:,}); simulate fewer jobs at a time "
                "(--start/--days)"
            )
        self.jobs = jobs
        self.num_nodes = int(nodes)
        self.topology = topology
        self._static(jobs, topology)
        self._reset()

    # -- set-up --------------------------------------------------------------------------------
    def _static(self, jobs, topology):
        n = len(jobs)
        c, p = self.config, self.config.priority
        mode, depth = c.mode_and_depth
        iconf = np.zeros(k.NUM_ICONFIG, np.int64)
        iconf[k.MODE], iconf[k.DEPTH] = mode, depth
        iconf[k.BF_INTERVAL], iconf[k.BF_RESOLUTION] = c.bf_interval_s, c.bf_resolution_s
        iconf[k.BF_MAX_JOB_TEST], iconf[k.CALC_PERIOD] = c.bf_max_job_test, p.calc_period_s
        iconf[k.PLACEMENT] = (
            k.PLACE_CONTIGUOUS if c.placement == "contiguous" else k.PLACE_FIRST_FIT
        )
        iconf[k.NUM_NODES], iconf[k.FAVOR_SMALL] = self.num_nodes, int(p.favor_small)
        iconf[k.RELEASE_DELAY] = c.release_delay_s
        iconf[k.WHOLE_RESERVATION] = int(c.reserve_whole_node)
        iconf[k.CONVENTION] = convention_code(c.cost_convention)
        iconf[k.BF_END_SLACK] = 0 if c.bf_end_at_reservation else 1
        iconf[k.WILL_RUN_WINDOW] = c.bf_will_run_window_s
        iconf[k.NODE_RESERVATION] = int(c.bf_reserve_nodes)
        if topology is not None and c.placement == "contiguous":
            form = topology.count_form
            iconf[k.TOP_LEVEL], iconf[k.NUM_GROUPS] = form.top_level, form.num_groups
            self._group_of = np.ascontiguousarray(form.group_of, dtype=np.int64)
        else:
            self._group_of = np.zeros((1, self.num_nodes), np.int64)
        fconf = np.zeros(k.NUM_FCONFIG, np.float64)
        fconf[k.W_AGE], fconf[k.W_SIZE] = p.age, p.job_size
        fconf[k.W_FAIRSHARE], fconf[k.W_QOS], fconf[k.QOS_FACTOR] = p.fairshare, p.qos, p.qos_factor
        fconf[k.MAX_AGE], fconf[k.HALF_LIFE] = p.max_age_s, p.decay_half_life_s
        self._iconf, self._fconf = iconf, fconf
        dep = jobs.depends_on
        has = dep >= 0
        order = np.argsort(dep[has], kind="stable")
        self._children = np.flatnonzero(has)[order].astype(np.int64)
        self._child_ptr = np.zeros(n + 1, np.int64)
        np.add.at(self._child_ptr, dep[has] + 1, 1)
        self._child_ptr = np.cumsum(self._child_ptr).astype(np.int64)
        self._node_offset = (
            np.concatenate([[0], np.cumsum(jobs.nodes)[:-1]]).astype(np.int64)
            if n
            else np.zeros(0, np.int64)
        )
        self._work = k.work_arrays(n)

    def _reset(self):
        n, j = len(self.jobs), self.jobs
        first = int(j.submit_s[0]) if n else 0
        clock = np.zeros(k.NUM_CLOCK, np.int64)
        clock[k.NOW] = first - 1
        clock[k.FREE] = self.num_nodes
        clock[k.LAST_CALC] = first
        clock[k.NEXT_CALC] = first
        self._state = {
            "clock": clock,
            "status": np.zeros(n, np.int64),
            "eligible": np.full(n, -1, np.int64),
            "start": np.full(n, -1, np.int64),
            "end": np.full(n, -1, np.int64),
            "prio": np.zeros(n, np.float64),
            "reserved_at": np.full(n, -1, np.int64),
            "first_reservation": np.full(n, -1, np.int64),
            "queue": np.zeros(n, np.int64),
            "running": np.zeros(n, np.int64),
            "free": np.ones(self.num_nodes, np.bool_),
            "node_of": np.full(int(j.nodes.sum()) if n else 0, -1, np.int64),
            "usage": np.zeros(max(j.num_users, 1), np.float64),
            "held": np.zeros(n, np.bool_),
            "start_seq": np.full(n, -1, np.int64),
        }
        self.simulated = np.ones(n, bool)  # False for jobs whose start came from the trace
        self.runtime_s = 0.0

    # -- running -------------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return int(self._state["clock"][k.NOW])

    def advance(self, until_s: int | None = None, progress=None) -> int | None:
        """Process every event up to and including ``until_s`` (all of them if None). Returns
        the time of the next event, or None if nothing is left. ``progress``, if given, is
        called with the number of jobs done after each slice of the run (about every 0.1 s)."""
        j, s = self.jobs, self._state
        stop = k.INF - 1 if until_s is None else int(until_s)
        # in slices of simulated time of about 0.1 s of computing each (the first a simulated
        # day), so that a Ctrl-C is seen between kernel calls; a slice ends where the kernel
        # stops anyway, before the first event after it, so slicing changes nothing
        slices = Slices(unit=1, first=86_400)
        upto = int(s["clock"][k.NOW])
        while True:
            upto = min(stop, upto + slices.size)
            tick = time.perf_counter()
            nxt = k.advance(
                j.submit_s,
                j.nodes,
                j.limit_s,
                j.runtime_s,
                j.user,
                j.depends_on,
                self._child_ptr,
                self._children,
                self._node_offset,
                self._group_of,
                self._iconf,
                self._fconf,
                s["clock"],
                s["status"],
                s["eligible"],
                s["start"],
                s["end"],
                s["prio"],
                s["reserved_at"],
                s["first_reservation"],
                s["queue"],
                s["running"],
                s["free"],
                s["node_of"],
                s["usage"],
                s["held"],
                s["start_seq"],
                *self._work,
                upto,
            )
            took = time.perf_counter() - tick
            self.runtime_s += took
            slices.took(took)
            if progress is not None:
                progress(self.jobs_done())
            if upto >= stop or nxt >= k.INF:
                break
            upto = max(upto, nxt - slices.size)  # nothing happens before nxt: skip to it
        if until_s is not None and s["clock"][k.NOW] < until_s:
            s["clock"][k.NOW] = until_s
        return None if nxt >= k.INF else int(nxt)

    def hold(self, rows) -> None:
        """Hold jobs (``sbatch --hold``): submitted as usual but never started until
        :meth:`release`. Only jobs not yet started can be held."""
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        s = self._state
        if ((s["status"][rows] == k.RUNNING) | (s["status"][rows] == k.DONE)).any():
            raise InvalidInputError("only jobs that have not started can be held")
        s["held"][rows] = True
        pending = rows[s["status"][rows] == k.PENDING]
        s["eligible"][pending] = k.HELD
        s["reserved_at"][pending] = -1

    def release(self, rows) -> None:
        """Release held jobs now (``scontrol release``): eligible from this moment (their age
        counts from now) unless they still wait on a dependency."""
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        s, now = self._state, self.now
        s["held"][rows] = False
        dep = self.jobs.depends_on
        for row in rows[s["status"][rows] == k.PENDING]:
            d = dep[row]
            s["eligible"][row] = now if d < 0 or s["status"][d] == k.DONE else k.WAITING
        s["clock"][k.DIRTY] = 1

    def state(self, row: int) -> str:
        """ "future", "pending", "held", "running" or "done"."""
        status = int(self._state["status"][row])
        if status == k.PENDING and self._state["eligible"][row] == k.HELD:
            return "held"
        return ("future", "pending", "running", "done")[status]

    def jobs_done(self) -> int:
        """How many jobs have ended (a warm start's earlier jobs included)."""
        return int(np.count_nonzero(self._state["status"] == k.DONE))

    def run(self, until_s: int | None = None, progress=None) -> "BatchResult":
        """Advance to ``until_s`` (to the end if None) and return the result; ``progress`` as
        :meth:`advance`."""
        self.advance(until_s, progress)
        return self.result()

    # -- snapshots and warm starts ---------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        return Snapshot(
            self.now,
            {name: a.copy() for name, a in self._state.items()}
            | {"simulated": self.simulated.copy()},
        )

    def restore(self, snapshot: Snapshot) -> None:
        for name, a in snapshot.arrays.items():
            target = self.simulated if name == "simulated" else self._state[name]
            target[...] = a

    @classmethod
    def from_trace_state(
        cls,
        jobs: Jobs,
        at_s: int,
        nodes: int | None = None,
        config: SchedulerConfig | None = None,
        topology=None,
    ) -> "Simulator":
        """A simulator at time ``at_s`` in the trace's own state: jobs the trace had running then
        are running (on first-fit nodes) until their recorded end, jobs submitted but not yet
        started are queued, earlier jobs are done; everything after is simulated."""
        if (jobs.recorded_start_s < 0).any():
            raise InvalidInputError(
                f"{jobs.source or 'the trace'} lacks recorded start times "
                f"for {(jobs.recorded_start_s < 0).sum()} job(s); a warm start "
                "needs them"
            )
        sim = cls(jobs, nodes, config, topology)
        s, at_s = sim._state, int(at_s)
        rec_start, rec_end = jobs.recorded_start_s, jobs.recorded_start_s + jobs.runtime_s
        submitted = jobs.submit_s <= at_s
        done = submitted & (rec_end <= at_s)
        running = submitted & (rec_start <= at_s) & ~done
        pending = submitted & ~done & ~running
        if jobs.nodes[running].sum() > sim.num_nodes:
            raise InvalidInputError(
                f"the trace had {jobs.nodes[running].sum()} nodes busy at {at_s}, more than "
                f"nodes={sim.num_nodes}; use a larger cluster for this warm start"
            )
        status, start, end = s["status"], s["start"], s["end"]
        status[done] = k.DONE
        start[done | running] = rec_start[done | running]
        end[done | running] = rec_end[done | running]
        sim.simulated[done | running] = False
        clock = s["clock"]
        for row in np.flatnonzero(running)[np.argsort(rec_end[running], kind="stable")]:
            lo = sim._node_offset[row]
            ids = np.flatnonzero(s["free"])[: jobs.nodes[row]]
            s["node_of"][lo : lo + jobs.nodes[row]] = ids
            s["free"][ids] = False
            status[row] = k.RUNNING
            s["running"][clock[k.RLEN]] = row
            clock[k.RLEN] += 1
        clock[k.FREE] = int(s["free"].sum())
        dep = jobs.depends_on
        for row in np.flatnonzero(pending):
            status[row] = k.PENDING
            d = dep[row]
            s["eligible"][row] = jobs.submit_s[row] if d < 0 or status[d] == k.DONE else -1
        queue = np.flatnonzero(pending)  # equal priorities until the first recalculation
        s["queue"][: queue.size] = queue
        clock[k.QLEN] = queue.size
        clock[k.NEXT_SUBMIT] = int(np.searchsorted(jobs.submit_s, at_s, side="right"))
        clock[k.NOW] = at_s
        clock[k.LAST_CALC] = at_s
        clock[k.NEXT_CALC] = at_s
        clock[k.DIRTY] = 1
        return sim

    # -- results ----------------------------------------------------------------------------------
    def result(self) -> "BatchResult":
        s = self._state
        node_of = (
            self._python_placement()
            if self.config.placement in PYTHON_PLACEMENTS
            else s["node_of"].copy()
        )
        return BatchResult(
            self.jobs,
            self.num_nodes,
            self.config,
            s["start"].copy(),
            s["end"].copy(),
            s["first_reservation"].copy(),
            self.simulated.copy(),
            node_of,
            self._node_offset,
            self.now,
            self.runtime_s,
            s["start_seq"].copy(),
        )

    def _python_placement(self) -> np.ndarray:
        """``node_of`` with every simulated start's nodes chosen by the Python-level placement:
        the starts replayed in the kernels' order (start time, then ``start_seq``), each on the
        nodes free at that moment (jobs end, and free their nodes, before jobs start)."""
        from tjap.placement.tree.freeform import best_single_job_nodes

        s, jobs, delay = self._state, self.jobs, self.config.release_delay_s
        node_of, free = s["node_of"].copy(), np.ones(self.num_nodes, bool)
        busy: list = []  # heap of (release time, row)
        started = np.flatnonzero(s["start"] >= 0)
        for row in started[~self.simulated[started]]:  # running at a warm start: kernel nodes
            lo = self._node_offset[row]
            if node_of[lo] >= 0:
                free[node_of[lo : lo + jobs.nodes[row]]] = False
                heapq.heappush(busy, (int(s["end"][row]) + delay, int(row)))
        placed = started[self.simulated[started]]
        placed = placed[np.lexsort((s["start_seq"][placed], s["start"][placed]))]
        for row in placed:
            while busy and busy[0][0] <= s["start"][row]:
                _, done = heapq.heappop(busy)
                lo = self._node_offset[done]
                free[node_of[lo : lo + jobs.nodes[done]]] = True
            lo, size = self._node_offset[row], int(jobs.nodes[row])
            nodes = best_single_job_nodes(self.topology, np.flatnonzero(free), size)
            node_of[lo : lo + size] = nodes
            free[nodes] = False
            heapq.heappush(busy, (int(s["end"][row]) + delay, int(row)))
        return node_of


@dataclass(frozen=True)
class BatchResult(Measurement):
    """Per-job start and end (-1: not started / not ended by ``now_s``) and the summary.

    ``to_dict()`` holds the common fields, the configuration, the summary and one row per job
    (:meth:`per_job`); ``summary()`` the headline figures.

    The fields every result shares (:data:`tjap.core.result.COMMON_FIELDS`): ``method`` (the
    scheduler: backfill mode and node placement, e.g. ``"easy/firstfit"``), ``status``
    (FEASIBLE: the replay ran its course), ``objective`` (the mean wait in seconds of the jobs
    the simulator started, ``summary()["mean_wait_s"]``; lower is better), ``runtime_s`` (the
    simulator's computing time) and ``seed`` (always 0: the replay draws no random numbers).
    """

    jobs: Jobs
    num_nodes: int
    config: SchedulerConfig
    start_s: np.ndarray
    end_s: np.ndarray
    first_reservation_s: np.ndarray
    simulated: np.ndarray
    node_of: np.ndarray
    node_offset: np.ndarray
    now_s: int
    runtime_s: float
    #: order of the simulator's starts (jobs started before this one; -1: not started by it)
    start_seq: np.ndarray

    @property
    def method(self) -> str:
        """The scheduler: ``"<backfill>/<placement>"`` of ``config``."""
        return f"{self.config.backfill}/{self.config.placement}"

    @property
    def objective(self) -> float:
        """The mean wait (s) of the jobs the simulator started (``summary()["mean_wait_s"]``;
        0 when it started none)."""
        done = self.simulated & (self.start_s >= 0)
        return (
            float((self.start_s - self.jobs.submit_s)[done].astype(float).mean())
            if done.any()
            else 0.0
        )

    @property
    def seed(self) -> int:
        """Always 0: the replay is deterministic."""
        return 0

    @property
    def wait_s(self) -> np.ndarray:
        """Start minus submission (-1 where not started)."""
        return np.where(self.start_s >= 0, self.start_s - self.jobs.submit_s, -1)

    def nodes_of(self, row: int) -> list[int]:
        lo = self.node_offset[row]
        return self.node_of[lo : lo + self.jobs.nodes[row]].tolist()

    def summary(self, bound_s: int = 10) -> dict:
        """jobs (started by the simulator), mean / median / p95 wait, mean bounded slowdown
        (tau = ``bound_s``), utilization (node-seconds of the simulated jobs over N x makespan),
        makespan (first submission to last end), and the simulation's wall time."""
        j = self.jobs
        done = self.simulated & (self.start_s >= 0)
        wait = (self.start_s - j.submit_s)[done].astype(float)
        run = j.runtime_s[done].astype(float)
        out = {
            "jobs": int(done.sum()),
            "unfinished": int((self.simulated & (self.start_s < 0)).sum()),
        }
        if done.any():
            makespan = int(self.end_s[done].max() - j.submit_s[done].min())
            slowdown = np.maximum((wait + run) / np.maximum(run, bound_s), 1.0)
            work = float((j.nodes[done] * j.runtime_s[done]).sum())
            out |= {
                "mean_wait_s": float(wait.mean()),
                "median_wait_s": float(np.median(wait)),
                "p95_wait_s": float(np.percentile(wait, 95)),
                "mean_bounded_slowdown": float(slowdown.mean()),
                "utilization": work / (self.num_nodes * makespan) if makespan > 0 else 0.0,
                "makespan_s": makespan,
            }
        else:
            out |= {
                "mean_wait_s": 0.0,
                "median_wait_s": 0.0,
                "p95_wait_s": 0.0,
                "mean_bounded_slowdown": 1.0,
                "utilization": 0.0,
                "makespan_s": 0,
            }
        out["runtime_s"] = self.runtime_s
        return out

    def per_job(self) -> list[dict]:
        """One row per job: id, submission, nodes, start, end and wait (s; -1: not started)."""
        j, wait = self.jobs, self.wait_s
        return [
            {
                "job_id": int(j.job_id[r]),
                "submit_s": int(j.submit_s[r]),
                "nodes": int(j.nodes[r]),
                "start_s": int(self.start_s[r]),
                "end_s": int(self.end_s[r]),
                "wait_s": int(wait[r]),
            }
            for r in range(len(j))
        ]

    def to_dict(self) -> dict:
        return self.common() | plain(
            {
                "num_nodes": self.num_nodes,
                "config": self.config,
                "summary": self.summary(),
                "jobs": self.per_job(),
            }
        )

    def series(self) -> dict:
        """Busy nodes and queued jobs over time (step functions: value from each time on)."""
        j = self.jobs
        started = self.start_s >= 0
        ends = np.where(self.end_s >= 0, self.end_s, self.now_s)
        t_busy = np.concatenate([self.start_s[started], ends[started]])
        d_busy = np.concatenate([j.nodes[started], -j.nodes[started]])
        queued_until = np.where(started, self.start_s, self.now_s)
        t_q = np.concatenate([j.submit_s, queued_until])
        d_q = np.concatenate([np.ones(len(j), np.int64), -np.ones(len(j), np.int64)])
        return {"busy": _steps(t_busy, d_busy), "queued": _steps(t_q, d_q)}

    def plot(self, path) -> None:
        """Utilisation and queue length over time, and the wait distribution, as one figure."""
        from tjap.core.report import pyplot

        plt = pyplot()
        series = self.series()
        fig, axes = plt.subplots(3, 1, figsize=(9, 8))
        t0 = self.jobs.submit_s.min() if len(self.jobs) else 0
        (tb, vb), (tq, vq) = series["busy"], series["queued"]
        axes[0].step((tb - t0) / DAY_S, vb / self.num_nodes, where="post")
        axes[0].set_ylabel("utilization")
        axes[1].step((tq - t0) / DAY_S, vq, where="post", color="tab:orange")
        axes[1].set_ylabel("queued jobs")
        axes[1].set_xlabel("days since the first submission")
        wait = self.wait_s[self.simulated & (self.start_s >= 0)] / 3600
        axes[2].hist(wait, bins=60, log=True)
        axes[2].set_xlabel("wait (hours)")
        axes[2].set_ylabel("jobs")
        fig.suptitle(
            f"{self.jobs.source or 'jobs'}: {self.num_nodes} nodes, backfill={self.config.backfill}"
        )
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def _steps(times, deltas):
    order = np.argsort(times, kind="stable")
    t, v = times[order], np.cumsum(deltas[order])
    last = np.r_[t[1:] != t[:-1], True] if t.size else np.zeros(0, bool)
    return t[last], v[last]


def simulate(
    jobs: Jobs,
    nodes: int | None = None,
    config: SchedulerConfig | None = None,
    topology=None,
    **options,
) -> BatchResult:
    """One-call replay: ``simulate(jobs, 76, backfill="easy")``. Keyword options override fields
    of ``config``."""
    check_options(options, [f.name for f in fields(SchedulerConfig)], "simulate()")
    config = replace(config or SchedulerConfig(), **options) if options else config
    return Simulator(jobs, nodes, config, topology).run()
