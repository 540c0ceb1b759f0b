"""Run a provisioner against a real Slurm: watch the predecessor, submit the successor with sbatch.

The simulator path (:class:`tjap.placement.batch.chained.ChainedEpisode`) and this live path show a
provisioner the same thing: at each decision the cluster's state is put into a
:class:`~tjap.placement.batch.simulator.Simulator` (:meth:`~tjap.placement.batch.simulator.Simulator.
from_trace_state`, nothing simulated) and read by the one feature function
:func:`~tjap.placement.batch.chained.snapshot_features`; :class:`LiveEpisode` borrows the simulator
episode's own ``observation``, ``predecessor`` and ``recent_mean_wait_s``. Any provisioner behind
the submit-or-wait protocol (``decide(episode) -> bool``) runs unchanged.

Where the state comes from (:func:`live_state`): ``squeue`` (pending and running jobs: submit,
start, limit, CPUs) and the ``jobcomp/filetxt`` log (jobs that ended in the last day: start, end),
both through :class:`tjap.placement.slurm.client.SlurmClient`. One CPU stands for one trace node (the
local cluster's convention, ``size="cpus"``). A job's runtime is unknown until it ends, so running
jobs carry their limit (as :meth:`SlurmClient.to_jobs` does).

Compressed time: a live run can play a trace ``compress`` times faster. Trace seconds are wall
(Unix) seconds times ``compress``; every time and duration Slurm reports is multiplied by it, the
decision interval (10 trace minutes) divided. Slurm records whole seconds and time limits in whole
minutes, so limits are rounded up to ``60 * compress`` trace seconds (48 h pairs are exact when
``2880 / compress`` minutes is whole: compress 480, 576, 720, 960, 1440) and every recorded time
has a resolution of ``compress`` trace seconds (a local Slurm also starts a job up to about 1 s
after it could, i.e. ``compress`` trace seconds).

The loop (:func:`run_live`): from the predecessor's submission on, every interval, read the state,
ask the provisioner, record the decision (time, action, predicted wait if the provisioner makes
one), and ``sbatch`` the successor (no dependency) when it says submit, or at once when the
predecessor is seen to end between decisions (the reactive fallback, polled every ``poll_s``). The
outcome is Slurm's own successor start minus predecessor end, from the jobcomp log.

Command line: ``tjap provision live`` (an existing Slurm; ``--local`` starts a throw-away
localhost Slurm, ``--trace`` adds a compressed trace load: :mod:`tjap.placement.slurm.background`).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.core.result import Measurement, plain
from tjap.placement.batch.chained import (
    DAY_S,
    FEATURES,
    HOUR_S,
    ChainedEpisode,
    Pair,
    snapshot_features,
)
from tjap.placement.batch.jobs import Jobs
from tjap.placement.batch.simulator import Simulator
from tjap.placement.slurm.client import CompletedJob, QueuedJob, SlurmClient, SlurmError

#: recorded start of a job that has not started (as ChainedEpisode marks the pair)
NOT_STARTED = np.iinfo(np.int64).max // 4
#: How to get a Slurm to run against, for error messages.
START_HINT = (
    "to use a throw-away localhost Slurm instead, run `tjap provision live --local ...` "
    "(as root; install Slurm with `bash .ci/install-slurm`, as `make test-slurm` does)"
)


def slurm_limit_min(limit_s: int, compress: float) -> int:
    """The whole-minute ``sbatch -t`` limit of a job whose trace limit is ``limit_s``."""
    return max(1, math.ceil(limit_s / compress / 60 - 1e-9))


def slurm_runtime_s(runtime_s: int, limit_s: int, compress: float) -> float:
    """The wall seconds a job of trace runtime ``runtime_s`` sleeps: compressed, and at least 2 s
    inside its (rounded) limit so that Slurm never kills it at the limit."""
    return min(runtime_s / compress, slurm_limit_min(limit_s, compress) * 60 - 2)


# -- the state ---------------------------------------------------------------------------------


@dataclass
class LiveState:
    """The cluster at ``now_s`` (trace clock) as a simulator state, with the pair's rows."""

    sim: Simulator
    pred: int
    succ: int
    pred_status: str  # "future", "pending", "running", "done"


def live_state(
    queue: list[QueuedJob],
    completed: list[CompletedJob],
    now_wall: float,
    *,
    compress: float,
    cluster_nodes: int,
    pair: Pair,
    pred_job_id: int | None,
    pred_submit_wall: float | None = None,
    lookback_s: int = DAY_S,
) -> LiveState:
    """Slurm's records (``squeue`` and the jobcomp log) at wall time ``now_wall`` mapped onto the
    simulator's job table and state, trace clock = wall seconds x ``compress``.

    Rows: completed jobs that ended in the last ``lookback_s`` trace seconds (done: start, end);
    running jobs (start; runtime = limit, unknown yet); pending jobs (queued, eligible since
    submission). The predecessor is Slurm's job ``pred_job_id``; before it exists (``None``) a
    row for ``pair`` submitted at ``pred_submit_wall`` (in the future) stands for it. The
    successor is a held row of ``pair`` (not yet in Slurm): it never counts as queued.
    """
    if compress <= 0:
        raise InvalidInputError(f"compress must be > 0, got {compress!r}")

    def trace(t) -> int:
        return int(round(float(t) * compress))

    now = trace(now_wall)
    rows: dict[int, dict] = {}
    for job in completed:
        if job.start_time is None or job.end_time is None:
            continue  # cancelled before it started: it never held nodes
        if trace(job.end_time) < now - lookback_s and job.job_id != pred_job_id:
            continue
        start, end = trace(job.start_time), trace(job.end_time)
        runtime = max(end - start, 0)
        submit = trace(job.submit_time if job.submit_time is not None else job.start_time)
        limit = max(trace(job.time_limit_s or 0) or runtime, runtime, 1)
        rows[job.job_id] = dict(
            submit_s=min(submit, start),
            nodes=max(1, job.cpus),
            limit_s=limit,
            runtime_s=runtime,
            recorded_start_s=start,
        )
    for job in queue:
        if job.job_id in rows or not (job.pending or job.running):
            continue
        limit = trace(job.time_limit_s) if job.time_limit_s else 365 * DAY_S
        submit = trace(job.submit_time)
        if job.running and job.start_time:
            start = trace(job.start_time)
            # still running: it must end after now in the table (it may overrun its rounded limit)
            limit = runtime = max(limit, now - start + 1)
        else:
            start, runtime = NOT_STARTED, limit
        rows[job.job_id] = dict(
            submit_s=min(submit, now),
            nodes=max(1, job.cpus),
            limit_s=limit,
            runtime_s=runtime,
            recorded_start_s=start,
        )
    pair_limit = slurm_limit_min(pair.limit_s, compress) * 60 * compress
    top = max(rows, default=0) + 1
    if pred_job_id is None:
        if pred_submit_wall is None:
            raise InvalidInputError("give the predecessor's job id or its planned submit time")
        pred_job_id = top
        rows[pred_job_id] = dict(
            submit_s=trace(pred_submit_wall),
            nodes=pair.nodes,
            limit_s=pair_limit,
            runtime_s=pair_limit,
            recorded_start_s=NOT_STARTED,
        )
    elif pred_job_id not in rows:
        raise InvalidInputError(
            f"predecessor job {pred_job_id} is neither in squeue nor in the "
            "jobcomp log (wrong job id, or it ended more than a day ago?)"
        )
    succ_id = max(top, pred_job_id + 1, max(rows) + 1)
    rows[succ_id] = dict(
        submit_s=rows[pred_job_id]["submit_s"],
        nodes=pair.nodes,
        limit_s=pair_limit,
        runtime_s=pair_limit,
        recorded_start_s=NOT_STARTED,
    )
    ids = list(rows)
    table = Jobs.build(
        job_id=ids,
        **{
            c: [rows[j][c] for j in ids]
            for c in ("submit_s", "nodes", "limit_s", "runtime_s", "recorded_start_s")
        },
        epoch=None,
        source=f"slurm (x{compress:g} time)",
    )
    busy = int(
        table.nodes[
            (table.recorded_start_s <= now) & (table.recorded_start_s + table.runtime_s > now)
        ].sum()
    )
    if busy > cluster_nodes:
        raise InvalidInputError(
            f"Slurm reports {busy} CPUs busy, more than cluster_nodes={cluster_nodes}"
        )
    sim = Simulator.from_trace_state(table, now, cluster_nodes)
    row_of = {int(j): r for r, j in enumerate(table.job_id)}
    pred, succ = row_of[pred_job_id], row_of[succ_id]
    sim.hold(succ)
    return LiveState(sim, pred, succ, sim.state(pred))


class LiveEpisode:
    """What a provisioner sees in live mode: the attributes and methods of a
    :class:`~tjap.placement.batch.chained.ChainedEpisode` (the same functions, not copies), over a state
    rebuilt from Slurm at each :meth:`update`; :meth:`record` appends the snapshot to the history
    (the simulator episode records one per interval too)."""

    observation = ChainedEpisode.observation
    predecessor = ChainedEpisode.predecessor
    recent_mean_wait_s = ChainedEpisode.recent_mean_wait_s
    _record = ChainedEpisode._record
    now = ChainedEpisode.now

    def __init__(self, history: int = 144, interval_s: int = 600):
        self.history, self.interval_s = history, interval_s
        self._rows: list[np.ndarray] = []
        self.state: LiveState | None = None
        self.submitted_s: int | None = None

    def update(self, state: LiveState) -> None:
        self.state = state
        self.sim, self.pred, self.succ = state.sim, state.pred, state.succ

    def features(self) -> np.ndarray:
        """The 40-feature snapshot now (:func:`snapshot_features`)."""
        return snapshot_features(self.sim, self.pred, self.succ)

    def record(self) -> None:
        self._record()

    @property
    def done(self) -> bool:
        return self.submitted_s is not None


# -- the loop ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """One decision: wall time, trace hours since the predecessor's submission, the action
    (``wait``, ``submit``, or ``submit (predecessor ended)``: the reactive fallback), the
    predecessor's state, the provisioner's predicted wait (hours, if it makes one) and the
    predecessor's remaining time by its limit (hours)."""

    wall_s: float
    trace_h: float
    action: str
    pred_state: str
    predicted_wait_h: float | None = None
    remaining_h: float | None = None


@dataclass(frozen=True)
class LiveResult(Measurement):
    """One pair run against a real Slurm (:func:`run_live`): the decisions and Slurm's records
    of the two jobs (Unix seconds; None where Slurm recorded none).

    The fields every result shares (:data:`tjap.core.result.COMMON_FIELDS`): ``method`` (the
    provisioner's name, an alias of ``policy``), ``status`` (FEASIBLE: the pair ran its course),
    ``objective`` (the interruption in trace hours, :attr:`interruption_h`; lower is better; None
    while Slurm's records are missing), ``runtime_s`` (wall seconds of the run) and ``seed`` (the
    provisioner's seed, as the caller gave it). ``to_dict()`` adds the outcome
    (``outcome_wall_s``, ``outcome_h``, ``interruption_h``, ``overlap_h``).
    """

    policy: str
    compress: float
    pair: dict
    pred_job_id: int
    succ_job_id: int | None = None
    decisions: tuple = ()
    pred_submit: int | None = None  # Slurm's records, Unix seconds
    pred_start: int | None = None
    pred_end: int | None = None
    succ_submit: int | None = None
    succ_start: int | None = None
    succ_end: int | None = None
    succ_submitted_wall: float | None = None
    fallback: bool = False
    runtime_s: float = 0.0
    seed: int = 0

    @property
    def objective(self) -> float | None:
        """The interruption in trace hours (:attr:`interruption_h`)."""
        return self.interruption_h

    @property
    def outcome_wall_s(self) -> int | None:
        """Successor start minus predecessor end in wall seconds (Slurm's records)."""
        if self.succ_start is None or self.pred_end is None:
            return None
        return int(self.succ_start - self.pred_end)

    @property
    def outcome_h(self) -> float | None:
        """The outcome in trace hours: > 0 interruption, < 0 overlap."""
        o = self.outcome_wall_s
        return None if o is None else o * self.compress / HOUR_S

    @property
    def interruption_h(self) -> float | None:
        """The positive part of the outcome (trace hours)."""
        o = self.outcome_h
        return None if o is None else max(o, 0.0)

    @property
    def overlap_h(self) -> float | None:
        """The negative part of the outcome, as hours of overlap."""
        o = self.outcome_h
        return None if o is None else max(-o, 0.0)

    def to_dict(self) -> dict:
        """The common fields, every field (the decisions as dicts) and the outcome."""
        return super().to_dict() | plain(
            {
                "outcome_wall_s": self.outcome_wall_s,
                "outcome_h": self.outcome_h,
                "interruption_h": self.interruption_h,
                "overlap_h": self.overlap_h,
            }
        )


def predicted_wait_h(provisioner, episode) -> float | None:
    """The provisioner's predicted successor wait (hours) if it makes one (trees, networks)."""
    if hasattr(provisioner, "outputs"):
        return float(provisioner.outputs(episode)["predicted_wait_h"])
    if hasattr(provisioner, "predicted_wait_h"):
        return float(provisioner.predicted_wait_h(episode))
    return None


def decide(provisioner, episode: LiveEpisode) -> tuple[bool, float | None]:
    """Ask the provisioner (before the snapshot is recorded, as in the simulator's step)."""
    submit = bool(provisioner.decide(episode))
    return submit, predicted_wait_h(provisioner, episode)


def cluster_cpus(client: SlurmClient) -> int:
    """CPUs of the cluster's nodes (one CPU stands for one trace node)."""
    nodes = client.nodes()
    if not nodes:
        raise SlurmError("sinfo lists no nodes")
    return sum(n.cpus_total for n in nodes)


def jobcomp_location(client: SlurmClient) -> str:
    """``JobCompLoc`` from ``scontrol show config``; the live mode needs ``jobcomp/filetxt``."""
    text = client.run(["scontrol", "show", "config"]).stdout
    conf = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    conf = {k.strip(): v.strip() for k, v in conf.items()}
    if conf.get("JobCompType") != "jobcomp/filetxt":
        raise SlurmError(
            f"the live mode reads ended jobs from the jobcomp log, but this Slurm has "
            f"JobCompType={conf.get('JobCompType')!r}; set "
            "JobCompType=jobcomp/filetxt "
            "and JobCompLoc; " + START_HINT
        )
    return conf["JobCompLoc"]


def _sleep_until(wall: float) -> None:
    delay = wall - time.time()
    if delay > 0:
        time.sleep(delay)


def run_live(
    client: SlurmClient,
    provisioner,
    *,
    pair: Pair = Pair(),
    compress: float = 720,
    pred_job_id: int | None = None,
    succ_command: str | None = None,
    jobcomp_path=None,
    cluster_nodes: int | None = None,
    interval_s: int = 600,
    warmup_s: int = 0,
    poll_s: float = 0.2,
    history: int = 144,
    cancel_successor: bool = False,
    workdir: str | None = None,
    timeout_s: float | None = None,
    on_decision=None,
    seed: int = 0,
) -> LiveResult:
    """Drive ``provisioner`` on the Slurm of ``client`` for one predecessor/successor pair.

    ``pred_job_id``: watch this job; None: record ``warmup_s`` trace seconds of history, then
    submit a predecessor of ``pair`` (``sleep`` for its compressed runtime). The successor is
    ``sbatch -n pair.nodes -t <limit> --wrap succ_command`` (default: a ``sleep`` of the pair's
    compressed runtime), submitted once. With ``cancel_successor`` it is cancelled as soon as it
    has started (its start is all the outcome needs). ``on_decision(decision)`` is called after
    each decision (for printing). ``timeout_s`` (wall; default 10 x the pair's compressed limit,
    plus twice the compressed warm-up, plus 60 s) bounds the whole run; the jobs this call
    submitted are cancelled if it fails or is interrupted.

    Returns a :class:`LiveResult`: method (the provisioner's name), status FEASIBLE, objective
    (the interruption in trace hours), runtime_s (wall seconds), ``seed`` as given (the seed the
    provisioner was built with, recorded with the outcome), the decisions and Slurm's records.
    """
    if compress <= 0 or interval_s < 1 or poll_s <= 0:
        raise InvalidInputError("compress and poll_s must be > 0, interval_s >= 1")
    check_int("seed", seed)
    limit_min = slurm_limit_min(pair.limit_s, compress)
    sleep = f"sleep {slurm_runtime_s(pair.runtime_s, pair.limit_s, compress):.3f}"
    succ_command = succ_command or sleep
    if jobcomp_path is None:
        jobcomp_path = jobcomp_location(client)
    if cluster_nodes is None:
        cluster_nodes = cluster_cpus(client)
    if pair.nodes > cluster_nodes:
        raise InvalidInputError(
            f"the pair needs {pair.nodes} CPUs; the cluster has {cluster_nodes}"
        )
    interval_wall = interval_s / compress
    if timeout_s is None:
        timeout_s = 10 * limit_min * 60 + 2 * warmup_s / compress + 60
    began = time.perf_counter()
    deadline = time.time() + timeout_s
    kw = dict(output="/dev/null", chdir=workdir)
    episode = LiveEpisode(history, interval_s)
    submitted: list[int] = []

    def state(now, pred_id, planned=None):
        return live_state(
            client.queue(),
            client.completed(jobcomp_path),
            now,
            compress=compress,
            cluster_nodes=cluster_nodes,
            pair=pair,
            pred_job_id=pred_id,
            pred_submit_wall=planned,
        )

    try:
        if pred_job_id is None:
            start = time.time()
            planned = start + warmup_s / compress
            tick = start
            while tick < planned - 1e-6:  # warm-up history, as ChainedEpisode records it
                _sleep_until(tick)
                episode.update(state(time.time(), None, planned))
                episode.record()
                tick += interval_wall
            _sleep_until(planned)
            pred_job_id = client.submit(
                nodes_or_tasks=pair.nodes,
                time_limit_min=limit_min,
                command=sleep,
                name="tjap-predecessor",
                **kw,
            )
            submitted.append(pred_job_id)
            first_tick = time.time()
        else:
            first_tick = time.time()
        decisions: list[Decision] = []
        succ_job_id, succ_submitted_wall = None, None
        origin = None
        tick = first_tick
        fallback = False
        while True:
            # between decisions: watch for the predecessor's end (the reactive fallback)
            while time.time() < tick:
                if _pred_ended(client, pred_job_id):
                    fallback = True
                    break
                if time.time() > deadline:
                    raise SlurmError(f"live run timed out after {timeout_s:.0f} s")
                time.sleep(min(poll_s, max(tick - time.time(), 0)))
            now = time.time()
            st = state(now, pred_job_id)
            episode.update(st)
            if origin is None:
                origin = episode.sim.jobs.submit_s[st.pred]
            if st.pred_status == "done":
                fallback = True
            trace_h = (episode.now - origin) / HOUR_S
            if fallback:
                submit, predicted = True, None
                action = "submit (predecessor ended)"
            else:
                submit, predicted = decide(provisioner, episode)
                action = "submit" if submit else "wait"
            pred = episode.predecessor()
            remaining = (
                pred["limit_s"]
                if pred["start_s"] is None
                else max(pred["expected_end_s"] - episode.now, 0)
            )
            decision = Decision(
                now, float(trace_h), action, st.pred_status, predicted, remaining / HOUR_S
            )
            episode.record()
            if submit:
                succ_job_id = client.submit(
                    nodes_or_tasks=pair.nodes,
                    time_limit_min=limit_min,
                    command=succ_command,
                    name="tjap-successor",
                    **kw,
                )
                submitted.append(succ_job_id)
                succ_submitted_wall = now
                episode.submitted_s = episode.now
            decisions.append(decision)
            if on_decision is not None:
                on_decision(decision)
            if submit:
                break
            tick += interval_wall
            if tick < time.time():  # a slow decision: skip to the next interval boundary
                tick += math.ceil((time.time() - tick) / interval_wall) * interval_wall
        pred, succ = _finish(
            client,
            jobcomp_path,
            pred_job_id,
            succ_job_id,
            cancel_successor,
            poll_s,
            deadline,
            timeout_s,
        )
    except BaseException:
        try:
            client.cancel(submitted)
        except SlurmError:
            pass
        raise
    return LiveResult(
        getattr(provisioner, "name", type(provisioner).__name__),
        compress,
        asdict(pair),
        pred_job_id,
        succ_job_id,
        tuple(decisions),
        pred.submit_time,
        pred.start_time,
        pred.end_time,
        succ.submit_time,
        succ.start_time,
        succ.end_time,
        succ_submitted_wall,
        fallback,
        time.perf_counter() - began,
        int(seed),
    )


def _pred_ended(client: SlurmClient, job_id: int) -> bool:
    """Whether squeue no longer shows the job pending or running (completing counts as ended)."""
    for job in client.queue():
        if job.job_id == job_id:
            return not (job.pending or (job.running and job.state != "COMPLETING"))
    return True  # gone from squeue: ended


def _finish(
    client,
    jobcomp_path,
    pred_job_id: int,
    succ_job_id: int,
    cancel_successor: bool,
    poll_s: float,
    deadline: float,
    timeout_s: float,
) -> tuple[CompletedJob, CompletedJob]:
    """Wait until Slurm has recorded the predecessor's end and the successor's start (cancelling
    the successor once started, if asked); returns Slurm's records of the two jobs."""
    wanted = {pred_job_id, succ_job_id}
    cancelled = False
    while True:
        done = {j.job_id: j for j in client.completed(jobcomp_path) if j.job_id in wanted}
        if len(done) == 2:
            break
        if cancel_successor and not cancelled and succ_job_id not in done:
            succ = [q for q in client.queue() if q.job_id == succ_job_id]
            if succ and succ[0].running and pred_job_id in done:
                client.cancel([succ_job_id])
                cancelled = True
        if time.time() > deadline:
            raise SlurmError(
                f"live run timed out after {timeout_s:.0f} s waiting for Slurm's "
                f"records of jobs {sorted(wanted - set(done))}"
            )
        time.sleep(poll_s)
    pred, succ = done[pred_job_id], done[succ_job_id]
    if succ.start_time is None:
        raise SlurmError(f"successor job {succ.job_id} ended without starting ({succ.state})")
    return pred, succ


def format_decisions(result: LiveResult, decisions: bool = True) -> str:
    """The decision log (unless ``decisions`` is False) and the outcome as text."""
    lines = [
        f"policy {result.policy}, x{result.compress:g} time, predecessor job "
        f"{result.pred_job_id}, successor job {result.succ_job_id}, "
        f"{len(result.decisions)} decisions"
    ]
    if decisions:
        lines.append(
            f"{'trace h':>8} {'wall s':>7}  {'predecessor':11s} {'remaining h':>11} "
            f"{'pred. wait h':>12}  action"
        )
    t0 = result.decisions[0].wall_s if result.decisions else 0.0
    for d in result.decisions if decisions else ():
        pw = "" if d.predicted_wait_h is None else f"{d.predicted_wait_h:.2f}"
        rem = "" if d.remaining_h is None else f"{d.remaining_h:.2f}"
        lines.append(
            f"{d.trace_h:8.2f} {d.wall_s - t0:7.1f}  {d.pred_state:11s} {rem:>11} "
            f"{pw:>12}  {d.action}"
        )
    o = result.outcome_h
    if o is not None:
        kind = "interruption" if o > 0 else ("overlap" if o < 0 else "seamless")
        lines.append(
            f"outcome (Slurm's records): successor start - predecessor end = "
            f"{result.outcome_wall_s} s wall = {o:+.2f} h trace ({kind})"
        )
    return "\n".join(lines)


__all__ = [
    "Decision",
    "FEATURES",
    "LiveEpisode",
    "LiveResult",
    "LiveState",
    "START_HINT",
    "decide",
    "format_decisions",
    "live_state",
    "run_live",
    "slurm_limit_min",
]
