"""The placement service behind ``tjap slurm place`` and ``tjap slurm advise``.

One pass (a *window*):

1. read the live switch tree (``scontrol show topology``; re-read every pass, a change is
   logged), the partition's idle nodes (``sinfo``) and its pending jobs (one ``squeue``, which
   with EASY also lists the running jobs); idle nodes
   that a released but not yet started job asks for (``ReqNodeList``, or an ``ExcNodeList``
   that leaves it just its node count) do not count as idle;
2. keep the jobs the service may place (:func:`tjap.placement.slurm.queue.eligible`: held by their owner
   with ``sbatch --hold``, plain ``-N n`` jobs), order them as the paper does (more windows
   waited first, then fewer nodes) and take the greedy prefix that fits the idle nodes; with
   ``backfill="easy"`` (the default) also the later jobs that fit now without delaying the
   first job that does not (EASY, from the running jobs' start times and time limits), as
   Slurm's own backfill would have started them;
   with ``locality_slack`` set, a multi-node job whose best nodes now cost more than
   ``1 + locality_slack`` times its best on the empty partition stays held for up to
   ``locality_wait_s`` seconds after its submission (:func:`tjap.placement.slurm.queue.hold_for_locality`);
3. solve that window with ``method`` (default ``guarded``: never costlier than Slurm's own
   ``topology/tree`` choice nor than the SCAS optimum), and compute Slurm's would-be cost
   (``slurm-tree``) and the SCAS optimum beside it;
4. for each job, in window order: check that it is still held and unchanged, ``scontrol update
   JobId=ID ReqNodeList=NODES``, check that every one of those nodes is still idle, then
   ``scontrol release ID``. A job that vanished, was released or was modified in the meantime is
   skipped; a failed update, a node no longer idle (its ``ReqNodeList`` is cleared again) or a
   failed release leaves the job held for the next window.

Every window is one JSON line (:meth:`PlacementService.run_pass`), appended to the log file and
handed to ``emit``. Jobs not placed wait: their windows-waited count grows by one, in memory.

On a ``topology/block`` cluster (Slurm 23.11 or later; ``scontrol show topology`` lists
``BlockName=`` lines, read as a tree whose leaf switches are the base blocks and whose higher
switches are the aggregated blocks):

- each held job's ``--segment`` is read from its batch script's ``#SBATCH`` directives
  (:func:`tjap.placement.slurm.readers.script_segment`: Slurm 24.11 shows the segment in no
  ``squeue`` or ``scontrol show job`` field); a job whose segment Slurm never places (it does
  not divide the job, or exceeds a base block) is ignored with the reason;
- every job of the window is a :class:`~tjap.placement.tree.jobs.Job` with ``slurm_rule`` (and
  its ``segment``), so every method only chooses node sets Slurm's block rule accepts: all of a
  job's nodes inside one block of the level its size asks for, or each segment inside one
  block of the level the segment's size asks for. A job that no such set fits stays held (and
  waits a window), and so, from the last, do jobs that do not fit beside the earlier ones;
- the window is one ``solve`` with the method, by default ``guarded`` (the method of
  ``tjap solve --method guarded``: on a block cluster the cheapest of the exact optimum under
  the rule, ``auto``: ``dp`` when its table is small, else SCIP within the time limit, and
  Slurm's own choice, ``slurm-block``, ties to the optimum: never costlier than either); a
  window whose jobs do not fit together is solved again without its last job. Any other method
  must take constraints (``tjap methods``). The record logs ``slurm_block_cost`` and
  ``scas_optimum`` (the optimum under the rule), and with ``compare`` (the default; one more
  solve) ``unconstrained_optimum`` (the same jobs without the rule or segments) and
  ``rule_price`` (the difference);
- a job of one segment (or none) is pinned with ``ReqNodeList`` as above; a job of several
  segments cannot be (Slurm refuses a node list with more than one segment), so it is steered
  with ``scontrol update JobId=ID ExcNodeList=<every node of the partition but the chosen
  ones>``, checked and released the same way. Each job's entry names its ``mechanism``
  (``reqnodelist`` or ``excnodelist``) and ``segment``;
- after the window's releases the service watches the steered jobs for up to
  ``steer_check_s`` seconds, and at the start of every later pass, until Slurm has judged them:
  a job Slurm leaves pending with ``Reason=BadConstraints`` (it refused the node set: e.g. a
  segment given on ``sbatch``'s command line, invisible to the service, with a node list) gets
  its ``ReqNodeList`` / ``ExcNodeList`` cleared at once, so that Slurm places it itself (it stays
  released; the service does not retry a steer Slurm refused). Its entry's outcome is
  ``unsteered`` (or it is listed under ``unsteered`` in a later window's record). No job is left
  pending with ``BadConstraints`` by a steer of the service.

:meth:`PlacementService.run` repeats passes every ``interval_s`` seconds. A Slurm command that
fails (typically an unreachable ``slurmctld``) is reported in one line and retried with
exponential backoff (1 s, doubling, at most the interval); SIGTERM and SIGINT let the current
job's update and release finish, leave the rest held, log a ``stop`` line and return (0 for
SIGTERM, 130 for SIGINT). A signal while the pass reads Slurm stops it at once: the Slurm command
in flight (an ``sinfo`` waiting for a controller that does not answer, say) is killed.

The Slurm commands are found on ``PATH`` and read ``SLURM_CONF`` from the environment; they are
run with argument lists (:class:`tjap.placement.slurm.client.SlurmClient`), never through a shell.
An account with no Slurm rights may run the service for its own jobs; other users' jobs need a
Slurm operator account (or the ``SlurmUser``): Slurm refuses the update otherwise, and the job
stays held with that reason in its record.
"""

from __future__ import annotations

import copy
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tjap.api import MAX_TIME_LIMIT_S, solve
from tjap.core.errors import InvalidInputError, TjapError
from tjap.core.result import plain
from tjap.placement.slurm.client import (
    PendingJob,
    SlurmClient,
    SlurmError,
    SlurmStopped,
    transient,
    unreachable,
)
from tjap.placement.slurm.queue import (
    BACKFILL,
    WaitTracker,
    eligible,
    hold_for_locality,
    plan_window,
    priority_key,
    segment_problem,
)
from tjap.placement.slurm.readers import State, is_block_topology, read_segments, read_state
from tjap.placement.tree.arcs import fits_alone
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.hostlist import compress_hostlist, expand_hostlist
from tjap.placement.tree.jobs import Job, slurm_level
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window
from tjap.registry import get

#: Seconds of the first retry after a failed pass (doubling up to the interval).
BACKOFF_START_S = 1.0


@dataclass(frozen=True)
class Decision:
    """What :meth:`PlacementService.decide` chose for one window.

    Attributes
    ----------
    record : dict
        The window's JSON line, each job's ``outcome`` still None (``decision["cost"]`` reads it).
    jobs : tuple of PendingJob
        The window's jobs as read, in the record's order (:meth:`PlacementService.apply`
        checks each is still held and unchanged before it steers it).
    excluded : dict
        For each job steered with ``ExcNodeList``, by job id, the nodes it excludes.
    """

    record: dict
    jobs: tuple = ()
    excluded: dict = field(default_factory=dict)

    def __getitem__(self, key: str):
        return self.record[key]


@dataclass(frozen=True)
class Applied:
    """A window carried out by :meth:`PlacementService.apply`: the ``record`` with each job's
    outcome, whether the window ``had_jobs``, and the Slurm ``failure`` that stopped it."""

    record: dict
    had_jobs: bool = False
    failure: SlurmError | None = None


@dataclass
class ServiceConfig:
    """What the service does; :meth:`validate` checks it (one-line errors).

    Attributes
    ----------
    partition : str, optional
        The partition served (None: Slurm's default partition).
    users, accounts : tuple of str
        Only jobs of these users / accounts (empty: all).
    method : str
        The window method (``tjap methods``); ``guarded`` by default (on a ``topology/block``
        cluster: the cheapest of the optimum under Slurm's block rule and ``slurm-block``).
    time_limit_s : float, optional
        Time limit of the method per window.
    cap : int, optional
        At most this many multi-node jobs per window (None: no cap).
    backfill : {"easy", "none"}
        ``easy``: the window also takes held jobs behind the first one that does not fit when
        they fit now and do not delay it (EASY backfilling); ``none``: the paper's prefix only.
    interval_s : float
        Seconds between windows.
    dry_run : bool
        Decide and log, change nothing in Slurm.
    compare : bool
        Also compute Slurm's would-be cost (``slurm-tree``) and the SCAS optimum when the method
        does not report them (``guarded`` does).
    test_only : bool
        Ask Slurm itself (``sbatch --test-only``) where it would start the window's first job
        (``topology/tree`` clusters).
    retries : int, optional
        Failed passes in a row before :meth:`PlacementService.run` gives up (None: never).
    locality_slack : float, optional
        Hold a multi-node job of the window whose cheapest idle nodes cost more than ``1 +
        locality_slack`` times its cheapest nodes on the empty partition, for a better
        placement (None, the default: never hold for locality).
    locality_wait_s : float
        With ``locality_slack``: a job submitted this many seconds ago or more is no longer
        held for locality (it takes the best nodes there are).
    steer_check_s : float
        On a ``topology/block`` cluster: seconds to wait after a window's releases for Slurm's
        verdict on the steered jobs (a refused steer, ``BadConstraints``, is undone at once);
        jobs not judged by then are checked again at the start of every pass.
    """

    partition: str | None = None
    users: tuple = ()
    accounts: tuple = ()
    method: str = "guarded"
    time_limit_s: float | None = 10.0
    cap: int | None = 5
    backfill: str = "easy"
    interval_s: float = 60.0
    dry_run: bool = False
    seed: int = 0
    convention: str = "paper"
    compare: bool = True
    test_only: bool = False
    retries: int | None = None
    locality_slack: float | None = None
    locality_wait_s: float = 300.0
    steer_check_s: float = 5.0

    def validate(self) -> "ServiceConfig":
        """Raise :class:`~tjap.core.errors.InvalidInputError` (or ``UnknownMethodError``) on a bad
        setting; returns self."""
        if not (
            isinstance(self.interval_s, (int, float))
            and math.isfinite(self.interval_s)
            and 0 < self.interval_s <= 86400
        ):
            raise InvalidInputError(
                f"interval must be more than 0 and at most 86400 s, got {self.interval_s!r}"
            )
        if self.time_limit_s is not None and not (
            isinstance(self.time_limit_s, (int, float))
            and 0 < self.time_limit_s <= MAX_TIME_LIMIT_S
        ):
            raise InvalidInputError(
                f"time limit must be positive (or none), got {self.time_limit_s!r}"
            )
        if self.cap is not None and (not isinstance(self.cap, int) or self.cap < 1):
            raise InvalidInputError(
                f"cap must be a positive number of multi-node jobs or none, got {self.cap!r}"
            )
        if self.backfill not in BACKFILL:
            raise InvalidInputError(
                f"unknown backfill {self.backfill!r}; choose one of {', '.join(BACKFILL)}"
            )
        if self.locality_slack is not None and not (
            isinstance(self.locality_slack, (int, float)) and 0 <= self.locality_slack < math.inf
        ):
            raise InvalidInputError(
                f"locality slack must be a number >= 0 (0.5: hold jobs "
                f"whose nodes cost over 1.5x their best) or none, got "
                f"{self.locality_slack!r}"
            )
        if not (
            isinstance(self.locality_wait_s, (int, float)) and 0 < self.locality_wait_s <= 7 * 86400
        ):
            raise InvalidInputError(
                f"locality wait must be more than 0 and at most 604800 s, "
                f"got {self.locality_wait_s!r}"
            )
        if not (isinstance(self.steer_check_s, (int, float)) and 0 <= self.steer_check_s <= 600):
            raise InvalidInputError(f"steer check must be 0 to 600 s, got {self.steer_check_s!r}")
        if self.retries is not None and (not isinstance(self.retries, int) or self.retries < 0):
            raise InvalidInputError(f"retries must be a non-negative integer, got {self.retries!r}")
        for what, names in (
            ("partition", [self.partition] if self.partition else []),
            ("user", self.users),
            ("account", self.accounts),
        ):
            for name in names:
                if not name or any(c.isspace() or c in ",=" for c in str(name)):
                    raise InvalidInputError(
                        f"bad {what} name {name!r}: no spaces, commas or "
                        "'=' (give several as separate values)"
                    )
        get("tree", self.method)  # one-line UnknownMethodError listing the methods
        return self


def _now_iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t))


class PlacementService:
    """The window placement service (see the module docstring).

    Parameters
    ----------
    config : ServiceConfig
        What to do; validated here.
    env : dict, optional
        Environment for the Slurm commands, merged over ``os.environ`` (e.g. ``SLURM_CONF``).
    log_path : path, optional
        JSON lines are appended here (one per window and per start/stop/error event).
    emit : callable, optional
        Called with every record (e.g. to print it).
    report : callable, optional
        Called with one-line messages (errors and retries); default: stderr.
    before_update : callable, optional
        ``before_update(job, hostlist)``, called just before each job is checked and updated
        (a point for tests to change the world between reading and updating).
    client : SlurmClient, optional
        Instead of ``env``.
    """

    def __init__(
        self,
        config: ServiceConfig | None = None,
        *,
        env: dict | None = None,
        log_path=None,
        emit: Callable | None = None,
        report: Callable | None = None,
        before_update: Callable | None = None,
        client: SlurmClient | None = None,
    ):
        self.config = (config or ServiceConfig()).validate()
        self.client = client or SlurmClient(env)
        self.log_path = Path(log_path) if log_path else None
        if self.log_path is not None:
            try:
                open(self.log_path, "a").close()
            except OSError as exc:
                raise InvalidInputError(
                    f"cannot write the log {self.log_path}: {exc.strerror or exc}"
                ) from None
        self.emit = emit
        self.report = report or (lambda msg: print(f"tjap: {msg}", file=sys.stderr, flush=True))
        self.before_update = before_update
        self.tracker = WaitTracker()
        #: job id -> node names of a ReqNodeList this service set but did not release
        self.ours: dict[int, tuple] = {}
        #: job id -> node names of an ExcNodeList this service set but did not release
        self.excluded: dict[int, tuple] = {}
        #: job id -> {"mechanism", "nodes", "value"} of released steers Slurm has not yet judged
        #: (topology/block)
        self.steered: dict[int, dict] = {}
        #: job id -> the --segment read from its batch script (None: none)
        self._segments: dict = {}
        self.windows = 0
        self._tree_rule: str | None = None
        #: passes that read Slurm and finished (a setup error after the first is retried)
        self.passes = 0
        self.partition = self.config.partition
        self.topology: Topology | None = None
        self._topology_text: str | None = None
        #: (partition's nodes, size) -> a job's cheapest cost on the empty partition
        self._floors: dict = {}
        self.stop_event = threading.Event()
        self.stop_signal: str | None = None

    # -- records -----------------------------------------------------------------------------
    def record(self, data: dict) -> dict:
        """Log ``data`` (one JSON line) and hand it to ``emit``."""
        data = plain(data)
        if self.log_path is not None:
            line = json.dumps(data, allow_nan=False, default=str)
            with open(self.log_path, "a") as f:
                f.write(line + "\n")
        if self.emit is not None:
            self.emit(data)
        return data

    # -- reading -----------------------------------------------------------------------------
    def read_state(self) -> State:
        """Partition, switch tree, idle nodes and pending jobs, as Slurm reports them now
        (:func:`tjap.placement.slurm.readers.read_state`); a change of the tree is logged."""
        c = self.client
        partition = self.partition or c.default_partition()
        self.partition = partition
        text = c.show_topology()
        if text != self._topology_text:
            topology = Topology.from_scontrol(text)
            changed = self._topology_text is not None
            self.topology, self._topology_text = topology, text
            self.record(
                {
                    "event": "topology",
                    "time": time.time(),
                    "changed": changed,
                    "nodes": topology.num_nodes,
                    "switches": topology.num_switches,
                }
            )
        state = read_state(
            c,
            partition,
            self.topology,
            easy=self.config.backfill == "easy",
            users=self.config.users,
            accounts=self.config.accounts,
        )
        state.blocks = is_block_topology(self._topology_text)
        if state.blocks:
            held = [j for j in state.pending if j.held_by_user and j.plain]
            self._segments = {
                j.job_id: self._segments[j.job_id] for j in held if j.job_id in self._segments
            }
            state.segments = read_segments(c, held, self._segments)
        return state

    # -- deciding ----------------------------------------------------------------------------
    def decide(self, state: State) -> "Decision":
        """The decision for ``state``: the window's record (nothing applied, outcomes not yet
        known), its jobs and the nodes each ``ExcNodeList`` steer excludes."""
        cfg = self.config
        ignored, held = [], []
        base = state.topology.block_size  # set when Slurm runs topology/block (state.blocks)
        for job in state.pending:
            why = eligible(job, state.partition, self.ours, self.excluded)
            if why is None and state.blocks and base is not None:
                why = segment_problem(job.nodes, state.segments.get(job.job_id), base)
            if why is None:
                held.append(job)
            elif job.state == "PENDING" and job.reason in ("JobHeldUser", "JobHeldAdmin"):
                ignored.append({"job_id": job.job_id, "reason": why})
        blocked: list[tuple[PendingJob, str]] = []
        if state.blocks:  # a job no idle block holds under Slurm's rule takes no place
            held, blocked = self._fit_alone(state, held)
        window_jobs, waiting = plan_window(
            held,
            len(state.idle),
            self.tracker,
            cfg.cap,
            backfill=cfg.backfill,
            now=state.read_at,
            releases=state.releases,
            limits=state.limits,
        )
        waiting = waiting + [job for job, _ in blocked]
        first_waiting = None
        if waiting:
            first_waiting = min(priority_key(j, self.tracker.get(j.job_id)) for j in waiting)
        locality = []
        if cfg.locality_slack is not None and window_jobs:
            key = (self._topology_text, tuple(state.nodes))
            if key not in self._floors:
                self._floors = {key: {}}  # the tree or the partition changed
            locality = hold_for_locality(
                window_jobs,
                state.topology,
                state.idle,
                state.nodes,
                state.read_at,
                cfg.locality_slack,
                cfg.locality_wait_s,
                cfg.convention,
                self._floors[key],
            )
            kept = {h["job_id"] for h in locality}
            waiting = waiting + [j for j in window_jobs if j.job_id in kept]
            window_jobs = [j for j in window_jobs if j.job_id not in kept]
        backfilled = [
            j.job_id
            for j in window_jobs
            if first_waiting is not None
            and priority_key(j, self.tracker.get(j.job_id)) > first_waiting
        ]
        rec: dict[str, Any] = {
            "event": "window",
            "window": self.windows + 1,
            "time": state.read_at,
            "time_iso": _now_iso(state.read_at),
            "partition": state.partition,
            "method": cfg.method,
            "dry_run": cfg.dry_run,
            "idle": compress_hostlist(state.idle) if state.idle else "",
            "idle_count": len(state.idle),
            "reserved": compress_hostlist(state.reserved) if state.reserved else "",
            "held": len(held),
            "backfill": cfg.backfill,
            "backfilled": backfilled,
            "sizes": [j.nodes for j in window_jobs],
            "jobs": [],
            "waiting": [
                {
                    "job_id": j.job_id,
                    "nodes_requested": j.nodes,
                    "waited": self.tracker.get(j.job_id),
                }
                for j in waiting
            ],
            "held_for_locality": locality,
            "ignored": ignored,
            "cost": None,
            "slurm_tree_cost": None,
            "scas_optimum": None,
            "topology": "block" if state.blocks else "tree",
        }
        jobs = tuple(window_jobs)
        if state.blocks:
            rec.update(
                {
                    "slurm_block_cost": None,
                    "unconstrained_optimum": None,
                    "rule_price": None,
                    "held_by_rule": [
                        {"job_id": j.job_id, "nodes_requested": j.nodes, "reason": why}
                        for j, why in blocked
                    ],
                }
            )
        if not window_jobs:
            return Decision(rec)
        if state.blocks:
            rec, excluded = self._decide_blocks(rec, state, window_jobs)
            return Decision(rec, jobs, excluded)
        window = Window(state.topology, state.idle, [j.nodes for j in window_jobs])
        rule = rec["slurm_tree_rule"] = self.tree_rule()
        follow = {"slurm": rule} if cfg.method in ("guarded", "slurm-tree") else {}
        result = solve(
            window,
            cfg.method,
            time_limit_s=cfg.time_limit_s,
            seed=cfg.seed,
            convention=cfg.convention,
            **follow,
        )
        rec.update({"status": result.status.value, "solve_s": result.runtime_s})
        info = result.info or {}
        if cfg.method == "guarded":
            rec.update(
                {
                    "winner": info.get("winner"),
                    "slurm_tree_cost": info.get("slurm_tree_cost"),
                    "scas_optimum": info.get("scas_optimum"),
                }
            )
        elif cfg.compare:
            slurm = solve(window, "slurm-tree", convention=cfg.convention, slurm=rule)
            rec["slurm_tree_cost"] = slurm.objective if slurm.has_solution else None
            try:
                scas = solve(
                    window, "auto", time_limit_s=cfg.time_limit_s, convention=cfg.convention
                )
                rec["scas_optimum"] = scas.objective if scas.status.value == "OPTIMAL" else None
            except InvalidInputError:
                pass
        if not result.has_solution:
            rec["jobs"] = [
                self._job_entry(
                    j, None, None, "held", f"no placement found ({result.status.value})"
                )
                for j in window_jobs
            ]
            return Decision(rec, jobs)
        rec["cost"] = result.objective
        names = result.node_names()
        for job, nodes, ids in zip(window_jobs, names, result.assignment):
            rec["jobs"].append(
                self._job_entry(
                    job,
                    compress_hostlist(sorted(nodes, key=state.topology.node_index)),
                    job_cost(state.topology, list(ids), cfg.convention),
                    None,
                    None,
                )
            )
        if cfg.test_only:
            try:
                seen = self.client.test_only(window_jobs[0].nodes, state.partition)
                rec["slurm_test_only"] = {
                    "job_id": window_jobs[0].job_id,
                    "nodes": seen[0] if seen else None,
                }
            except SlurmError as exc:
                rec["slurm_test_only"] = {"job_id": window_jobs[0].job_id, "error": str(exc)}
        return Decision(rec, jobs)

    def _job_entry(
        self,
        job: PendingJob,
        nodes,
        cost,
        outcome,
        reason,
        *,
        segment=None,
        mechanism="reqnodelist",
    ) -> dict:
        return {
            "job_id": job.job_id,
            "user": job.user,
            "account": job.account,
            "nodes_requested": job.nodes,
            "waited": self.tracker.get(job.job_id),
            "nodes": nodes,
            "cost": cost,
            "outcome": outcome,
            "reason": reason,
            "segment": segment,
            "mechanism": mechanism,
        }

    # -- deciding on a topology/block cluster ---------------------------------------------------
    def _try(self, window: Window, method: str, **options):
        """``solve(window, method)``, or None when it cannot run (a missing solver, ...)."""
        try:
            return solve(
                window, method, seed=self.config.seed, convention=self.config.convention, **options
            )
        except TjapError:
            return None

    def _fit_alone(self, state: State, held: list) -> tuple[list, list]:
        """Split the held jobs of a block cluster into those some idle node set holds alone
        under Slurm's block rule (or that ask for more nodes than are idle: the count decides
        for them, and EASY reserves for them as before) and the others, ``(job, why)``: only the
        first are counted when the window is planned, so that a job no block can take now does
        not keep the jobs behind it out of the window (Slurm's own backfill tests each job
        against the nodes). Nothing is solved: a job alone fits when some run of the idle nodes
        keeps the rule (:func:`~tjap.placement.tree.arcs.fits_alone`)."""
        fits, blocked = [], []
        for job in held:
            if job.nodes > len(state.idle):  # too few idle nodes: the count decides
                fits.append(job)
                continue
            rule = Job(job.nodes, segment=state.segments.get(job.job_id), slurm_rule=True)
            if fits_alone(state.topology, state.idle, rule):
                fits.append(job)
            else:
                blocked.append((job, _no_block_reason(state.topology, rule)))
        return fits, blocked

    def _decide_blocks(self, rec: dict, state: State, window_jobs: list) -> tuple[dict, dict]:
        """The window record on a ``topology/block`` cluster (see the module docstring): one
        ``solve`` of the window's jobs under Slurm's block rule (``guarded`` by default: the
        cheapest of the optimum under the rule and ``slurm-block``); a window whose jobs do not
        fit together is solved again without its last job. With ``compare`` the same jobs
        without the rule are solved once more, for the rule's price. Returns the record and the
        nodes each ``ExcNodeList`` steer excludes, by job id."""
        cfg = self.config
        if not get("tree", cfg.method).constraints:
            raise InvalidInputError(
                f"method {cfg.method!r} does not take Slurm's block rule, which every job of a "
                "topology/block cluster carries; use guarded (the default), auto, dp, scip, "
                "cpsat, seq or slurm-block"
            )
        started = time.perf_counter()
        topology = state.topology
        segments = [state.segments.get(j.job_id) for j in window_jobs]
        jobs = [Job(j.nodes, segment=seg, slurm_rule=True) for j, seg in zip(window_jobs, segments)]
        held = {  # window index -> why it stays held
            i: _no_block_reason(topology, job)
            for i, job in enumerate(jobs)
            if not fits_alone(topology, state.idle, job)
        }
        keep = [i for i in range(len(jobs)) if i not in held]
        result = None
        while keep:
            window = Window(topology, state.idle, [jobs[i] for i in keep])
            result = self._try(window, cfg.method, time_limit_s=cfg.time_limit_s)
            if result is not None and result.has_solution:
                break
            held[keep.pop()] = (
                "does not fit beside the window's earlier jobs under Slurm's block rule"
            )
        placed = {}
        if keep:
            assert result is not None  # the loop above stopped on a solution
            info = result.info or {}
            rec["cost"] = result.objective
            rec["status"] = result.status.value
            rec["slurm_block_cost"] = info.get("slurm_block_cost")
            rec["scas_optimum"] = info.get("scas_optimum")
            if "winner" in info:
                rec["winner"] = info["winner"]
            placed = dict(zip(keep, result.node_names()))
            if cfg.compare:
                self._compare_blocks(rec, window)
        else:
            rec["status"] = "INFEASIBLE"
        everyone = state.partition_nodes or state.nodes
        excluded = {}
        for i, (job, seg) in enumerate(zip(window_jobs, segments)):
            mechanism = "excnodelist" if seg is not None and job.nodes // seg > 1 else "reqnodelist"
            if i not in placed:
                rec["jobs"].append(
                    self._job_entry(
                        job, None, None, "held", held[i], segment=seg, mechanism=mechanism
                    )
                )
                continue
            names = sorted(placed[i], key=topology.node_index)
            rec["jobs"].append(
                self._job_entry(
                    job,
                    compress_hostlist(names),
                    job_cost(topology, topology.node_indices(names), cfg.convention),
                    None,
                    None,
                    segment=seg,
                    mechanism=mechanism,
                )
            )
            if mechanism == "excnodelist":
                chosen = set(names)
                excluded[job.job_id] = compress_hostlist([n for n in everyone if n not in chosen])
        rec["solve_s"] = time.perf_counter() - started
        return rec, excluded

    def _compare_blocks(self, rec: dict, window: Window) -> None:
        """With ``compare``: what Slurm and the optimum under the rule give where the method's
        own result did not say, and the optimum of the same jobs without the rule (its price)."""
        cfg = self.config
        if cfg.method != "guarded":  # guarded's own result names both
            slurm = self._try(window, "slurm-block")
            rec["slurm_block_cost"] = slurm.objective if slurm and slurm.has_solution else None
            scas = self._try(window, "auto", time_limit_s=cfg.time_limit_s)
            rec["scas_optimum"] = (
                scas.objective if scas is not None and scas.status.value == "OPTIMAL" else None
            )
        free = self._try(
            Window(window.topology, window.idle_nodes, list(window.job_sizes)),
            "auto",
            time_limit_s=cfg.time_limit_s,
        )
        if free is not None and free.status.value == "OPTIMAL":
            rec["unconstrained_optimum"] = free.objective
            if rec["scas_optimum"] is not None:
                rec["rule_price"] = rec["scas_optimum"] - free.objective

    # -- applying ----------------------------------------------------------------------------
    def _apply_job(
        self,
        job: PendingJob,
        hostlist: str,
        mechanism: str = "reqnodelist",
        excluded: str | None = None,
    ) -> tuple[str, str | None]:
        """Steer one job to ``hostlist`` (its ``ReqNodeList``, or with ``excnodelist`` its
        ``ExcNodeList`` set to ``excluded``) and release it; ``(outcome, reason)``. An
        unreachable controller raises."""
        c = self.client
        if self.before_update is not None:
            self.before_update(job, hostlist)
        now = c.pending(job_id=job.job_id)
        if not now:
            seen = c.job_state(job.job_id)
            return "skipped", ("gone" if seen is None else f"no longer pending ({seen[0]})")
        current = now[0]
        if not current.held_by_user:
            return "skipped", f"no longer held by its user (reason {current.reason})"
        if current.fingerprint != job.fingerprint:
            return "skipped", "modified since it was read"
        if mechanism == "excnodelist":
            assert excluded is not None  # decide() names the nodes an excnodelist steer excludes
            key, value, mine = "ExcNodeList", excluded, self.excluded
        else:
            key, value, mine = "ReqNodeList", hostlist, self.ours
        try:
            c.update_job(job.job_id, **{key: value})
        except SlurmError as exc:
            if unreachable(exc):
                raise
            return "held", f"update failed: {exc}"
        names = expand_hostlist(hostlist)
        mine[job.job_id] = tuple(expand_hostlist(value))
        states = {n.name: n.state for n in c.partition_nodes(nodelist=hostlist)}
        busy = [f"{n} is {states.get(n, 'missing')}" for n in names if states.get(n) != "idle"]
        if busy:
            try:
                c.update_job(job.job_id, **{key: ""})
                mine.pop(job.job_id, None)
            except SlurmError:
                pass
            return "held", "node " + ", ".join(busy[:3])
        try:
            c.release(job.job_id)
        except SlurmError as exc:
            if unreachable(exc):
                raise
            return "held", f"release failed: {exc}"
        mine.pop(job.job_id, None)
        return "placed", None

    def apply(self, decision: "Decision") -> "Applied":
        """Carry out a :class:`Decision` from :meth:`decide`: the window's record with each
        job's outcome and reason (a copy: the decision is left as it was), and the Slurm failure
        that stopped it, if any."""
        rec = copy.deepcopy(decision.record)
        jobs, excluded = decision.jobs, decision.excluded
        failure = None
        for job, entry in zip(jobs, rec["jobs"]):
            if entry["outcome"] is not None:
                continue
            if self.config.dry_run:
                entry["outcome"] = "dry-run"
                continue
            if failure is not None:
                entry["outcome"], entry["reason"] = "held", "not attempted (Slurm failed)"
                continue
            if self.stop_event.is_set():
                entry["outcome"], entry["reason"] = "held", "not attempted (stopping)"
                continue
            try:
                entry["outcome"], entry["reason"] = self._apply_job(
                    job, entry["nodes"], entry["mechanism"], excluded.get(job.job_id)
                )
            except SlurmError as exc:
                failure = exc
                entry["outcome"], entry["reason"] = "held", f"Slurm failed: {exc}"
        if rec.get("topology") == "block" and not self.config.dry_run:
            for entry in rec["jobs"]:
                if entry["outcome"] == "placed":
                    self.steered[entry["job_id"]] = {
                        "mechanism": entry["mechanism"],
                        "nodes": entry["nodes"],
                        "value": excluded.get(entry["job_id"], entry["nodes"]),
                    }
            if failure is None:
                try:
                    undone = self.check_steers(
                        self.config.steer_check_s,
                        [e["job_id"] for e in rec["jobs"] if e["outcome"] == "placed"],
                    )
                except SlurmError as exc:
                    failure, undone = exc, []
                for entry in rec["jobs"]:
                    why = next(
                        (u["reason"] for u in undone if u["job_id"] == entry["job_id"]), None
                    )
                    if why is not None:
                        entry["outcome"], entry["reason"] = "unsteered", why
        return Applied(rec, bool(jobs), failure)

    def check_steers(self, wait_s: float = 0.0, ids=None) -> list[dict]:
        """Slurm's verdict on the released steers (:attr:`steered`; ``ids``: of these jobs,
        waiting up to ``wait_s`` seconds for Slurm to judge each). A job Slurm leaves pending
        with ``BadConstraints`` gets the ``ReqNodeList`` / ``ExcNodeList`` the service set
        cleared, so that Slurm places it itself; one dict per such job (``job_id``,
        ``mechanism``, ``nodes``, ``reason``). A job that runs, ended, is held again or was
        changed by someone else is forgotten; one still pending for another reason (its nodes
        are busy, ...) is kept and checked again at the next pass."""
        c = self.client
        waiting = set(self.steered if ids is None else ids) & set(self.steered)
        deadline = time.monotonic() + wait_s
        undone = []
        while True:
            for job_id in sorted(waiting):
                steer = self.steered[job_id]
                key = "ReqNodeList" if steer["mechanism"] == "reqnodelist" else "ExcNodeList"
                now = c.pending(job_id=job_id)
                mine = now and _steer_in_place(now[0], steer)
                if not mine:  # running, gone or changed: not ours now
                    self.steered.pop(job_id)
                    waiting.discard(job_id)
                elif now[0].reason in ("JobHeldUser", "JobHeldAdmin"):
                    (self.ours if key == "ReqNodeList" else self.excluded)[job_id] = tuple(
                        expand_hostlist(steer["value"])
                    )
                    self.steered.pop(job_id)
                    waiting.discard(job_id)
                elif now[0].reason == "BadConstraints":
                    try:
                        with c.stopping(None):  # a change, once begun, is finished
                            c.update_job(job_id, **{key: ""})
                    except SlurmError as exc:
                        if unreachable(exc):
                            raise
                        self.report(
                            f"job {job_id}: clearing its {key} failed ({exc}); "
                            "retried at the next pass"
                        )
                        waiting.discard(job_id)
                        continue
                    self.steered.pop(job_id)
                    waiting.discard(job_id)
                    undone.append(
                        {
                            "job_id": job_id,
                            "mechanism": steer["mechanism"],
                            "nodes": steer["nodes"],
                            "reason": f"Slurm refused the node set (BadConstraints); "
                            f"{key} cleared, Slurm places it itself",
                        }
                    )
                elif now[0].reason != "None":  # judged: it waits for its nodes
                    waiting.discard(job_id)
            if not waiting or time.monotonic() >= deadline:
                return undone
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def _finish(
        self, applied: "Applied", *, advance: bool = True
    ) -> tuple[dict, SlurmError | None]:
        rec, failure = applied.record, applied.failure
        if advance and (applied.had_jobs or rec["waiting"]):
            # jobs still held wait one more window; placed and skipped ones are forgotten
            left = [e["job_id"] for e in rec["jobs"] if e["outcome"] in ("held", None)]
            left += [w["job_id"] for w in rec["waiting"]]
            self.tracker.after_window(left, left)
        placed = sum(e["outcome"] == "placed" for e in rec["jobs"])
        rec["placed"] = placed
        return rec, failure

    def tree_rule(self) -> str:
        """Which Slurm's ``topology/tree`` rule ``slurm-tree`` (and ``guarded``) follow: the
        live Slurm's (``scontrol --version``: 24.11's from 24.11 on, else 22.05's), read once;
        22.05's when the version cannot be read."""
        if self._tree_rule is None:
            from tjap.heuristics.slurm.tree import release_for

            try:
                self._tree_rule = release_for(self.client.version())
            except SlurmError:
                return "22.05"
        return self._tree_rule

    def run_pass(self) -> dict | None:
        """One window: read, decide, apply, log. Returns the record (None when no job was held
        and nothing was logged). A Slurm failure is raised after the partial window is logged."""
        with self.client.stopping(self.stop_event):  # reading: a signal stops it at once
            unsteered = self.check_steers() if self.steered else []
            state = self.read_state()
        decision = self.decide(state)
        if state.blocks:
            decision.record["unsteered"] = unsteered
        rec = decision.record
        if not decision.jobs and not rec["waiting"] and not rec["ignored"] and not unsteered:
            return None
        self.windows += 1
        rec, failure = self._finish(self.apply(decision))
        rec = self.record(rec)
        if failure is not None:
            raise failure
        return rec

    def advise(self) -> dict:
        """The window the service would place now (read-only: nothing is changed in Slurm)."""
        state = self.read_state()
        decision = self.decide(state)
        rec = copy.deepcopy(decision.record)
        for entry in rec["jobs"]:
            if entry["outcome"] is None:
                entry["outcome"] = "advice"
        rec, _ = self._finish(Applied(rec, bool(decision.jobs)), advance=False)
        rec["event"] = "advice"
        return plain(rec)

    # -- the loop ----------------------------------------------------------------------------
    def stop(self, signal_name: str | None = None) -> None:
        """Ask :meth:`run` to stop after the current job's update (thread-safe)."""
        if self.stop_signal is None:
            self.stop_signal = signal_name
        self.stop_event.set()

    def _handler(self, signum, frame) -> None:
        self.stop(signal.Signals(signum).name)

    def run(self, *, once: bool = False) -> int:
        """Pass after pass every ``interval_s`` (one with ``once``) until :meth:`stop` or a
        signal; returns the exit code: 0, 130 after SIGINT. Slurm failures (and, once a pass
        has worked, any other failed pass) are reported in one line and retried with backoff;
        after ``retries`` failures in a row (``once``: none) the last one is raised, as is a
        setup error (no switch tree, no default partition, ...) before the first pass."""
        cfg = self.config
        handlers = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                handlers[sig] = signal.signal(sig, self._handler)
        self.record(
            {
                "event": "start",
                "time": time.time(),
                "pid": os.getpid(),
                "partition": cfg.partition,
                "method": cfg.method,
                "interval_s": cfg.interval_s,
                "dry_run": cfg.dry_run,
                "users": list(cfg.users),
                "accounts": list(cfg.accounts),
            }
        )
        retries = 0 if (once and cfg.retries is None) else cfg.retries
        failures, delay = 0, BACKOFF_START_S
        error = None
        try:
            while not self.stop_event.is_set():
                try:
                    self.run_pass()
                    self.passes += 1
                    failures, delay = 0, BACKOFF_START_S
                except SlurmStopped:
                    break  # stopped while reading Slurm: nothing was changed
                except TjapError as exc:
                    # Slurm failing is retried; so is anything else once a pass has worked
                    # (a setup error shows at start-up, not after hours of service)
                    failures += 1
                    retry = transient(exc) if isinstance(exc, SlurmError) else self.passes > 0
                    if not retry or (retries is not None and failures > retries):
                        error = exc
                        raise
                    wait = min(delay, max(cfg.interval_s, BACKOFF_START_S))
                    self.report(
                        f"window failed (attempt {failures}): {exc}; retrying in {wait:g} s"
                    )
                    self.record(
                        {
                            "event": "error",
                            "time": time.time(),
                            "attempt": failures,
                            "error": str(exc),
                            "retry_in_s": wait,
                        }
                    )
                    delay *= 2
                    if self.stop_event.wait(wait):
                        break
                    continue
                if once or self.stop_event.wait(cfg.interval_s):
                    break
        finally:
            for sig, old in handlers.items():
                signal.signal(sig, old)
            self.record(
                {
                    "event": "stop",
                    "time": time.time(),
                    "signal": self.stop_signal,
                    "windows": self.windows,
                    "error": str(error) if error is not None else None,
                }
            )
        return 130 if self.stop_signal == "SIGINT" else 0


def _steer_in_place(job: PendingJob, steer: dict) -> bool:
    """Whether ``job`` (as squeue shows it now) still carries the steer the service set."""
    if job.state != "PENDING":
        return False
    if steer["mechanism"] == "reqnodelist":
        return bool(job.req_nodes) and set(expand_hostlist(job.req_nodes)) == set(
            expand_hostlist(steer["value"])
        )
    return bool(job.exc_nodes) and set(expand_hostlist(job.exc_nodes)) == set(
        expand_hostlist(steer["value"])
    )


def _no_block_reason(topology, job: Job) -> str:
    """Why no idle node set of a window fits ``job`` under Slurm's block rule."""
    if job.segment is None:
        return (
            f"Slurm's block rule: no block of level {slurm_level(topology, job.nodes)} "
            f"has {job.nodes} idle nodes"
        )
    return (
        f"Slurm's block rule: the idle nodes hold fewer than {job.nodes // job.segment} "
        f"segments of {job.segment} inside blocks of level "
        f"{slurm_level(topology, job.segment)}"
    )


__all__ = ["BACKOFF_START_S", "Applied", "Decision", "PlacementService", "ServiceConfig"]
