"""Chained jobs on a batch queue (seed 004): when to submit a successor so that it starts just as its
predecessor ends.

A pair (predecessor P, successor S; by default 48 h each with a 2880-minute limit) is injected into a
replay of a real trace at a chosen time. S is held (not submitted) until a provisioner decides to
submit it; decisions come every ``interval_s`` (10 minutes) from P's submission on; if P ends first,
S is submitted then (the reactive fallback). The outcome is S's start minus P's end: an
*interruption* when positive, an *overlap* when negative (both in seconds).

The state of the cluster at each decision is the paper's 40-feature vector (:data:`FEATURES`), kept
for the last ``history`` snapshots (144 x 10 minutes = 24 h) as a matrix. :func:`snapshot_features`
is the one feature extractor every method uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.placement.batch import _kernels as k
from tjap.placement.batch.jobs import COLUMNS, Jobs
from tjap.placement.batch.simulator import SchedulerConfig, Simulator

HOUR_S = 3600
DAY_S = 86400
_P = ("p0", "p25", "p50", "p75", "p100")

#: The 40 features of one snapshot (seed 004 section 4.1). The paper lists 7 variables for the
#: running jobs' sizes (var18-24) but only 5 percentiles elsewhere; the two extra are the busy and
#: free node counts.
FEATURES = (
    ("queue_jobs",)
    + tuple(f"queue_size_{p}" for p in _P)
    + tuple(f"queue_age_h_{p}" for p in _P)
    + tuple(f"queue_limit_h_{p}" for p in _P)
    + ("running_jobs",)
    + tuple(f"running_size_{p}" for p in _P)
    + ("busy_nodes", "free_nodes")
    + tuple(f"running_elapsed_h_{p}" for p in _P)
    + tuple(f"running_limit_h_{p}" for p in _P)
    + ("pred_size", "pred_limit_h", "pred_queue_h", "pred_elapsed_h", "succ_size", "succ_limit_h")
)
assert len(FEATURES) == 40


def _percentiles(values) -> np.ndarray:
    if len(values) == 0:
        return np.zeros(5)
    return np.percentile(values, (0, 25, 50, 75, 100))


def snapshot_features(sim: Simulator, pred: int, succ: int) -> np.ndarray:
    """The 40-feature vector of the cluster at ``sim.now`` for the pair (pred, succ) (rows of the
    simulator's job table). The held successor is not part of the queue."""
    s, jobs, now = sim._state, sim.jobs, sim.now
    queue = s["queue"][: s["clock"][k.QLEN]]
    queue = queue[(s["eligible"][queue] != k.HELD) & (queue != pred)]
    running = s["running"][: s["clock"][k.RLEN]]
    running = running[running != pred]
    busy = int(jobs.nodes[s["running"][: s["clock"][k.RLEN]]].sum())
    status = s["status"][pred]
    if status == k.PENDING:
        pred_queue, pred_elapsed = now - jobs.submit_s[pred], 0
    elif status in (k.RUNNING, k.DONE):
        pred_queue = s["start"][pred] - jobs.submit_s[pred]
        pred_elapsed = min(now, s["end"][pred]) - s["start"][pred]
    else:
        pred_queue = pred_elapsed = 0
    return np.concatenate(
        [
            [queue.size],
            _percentiles(jobs.nodes[queue]),
            _percentiles((now - jobs.submit_s[queue]) / HOUR_S),
            _percentiles(jobs.limit_s[queue] / HOUR_S),
            [running.size],
            _percentiles(jobs.nodes[running]),
            [busy, sim.num_nodes - busy],
            _percentiles((now - s["start"][running]) / HOUR_S),
            _percentiles(jobs.limit_s[running] / HOUR_S),
            [
                jobs.nodes[pred],
                jobs.limit_s[pred] / HOUR_S,
                pred_queue / HOUR_S,
                pred_elapsed / HOUR_S,
                jobs.nodes[succ],
                jobs.limit_s[succ] / HOUR_S,
            ],
        ]
    ).astype(np.float32)


@dataclass(frozen=True)
class Pair:
    """A predecessor/successor pair: both ``nodes`` nodes, ``runtime_s`` long, ``limit_s`` limit."""

    nodes: int = 1
    runtime_s: int = 48 * HOUR_S
    limit_s: int = 2880 * 60

    def __post_init__(self):
        if self.nodes < 1 or self.runtime_s < 1 or not 0 < self.runtime_s <= self.limit_s:
            raise InvalidInputError(f"a pair needs nodes >= 1 and 0 < runtime <= limit, got {self}")


def with_pair(jobs: Jobs, at_s: int, pair: Pair) -> tuple[Jobs, int, int]:
    """``jobs`` plus the pair submitted at ``at_s``; returns (table, predecessor row, successor
    row). The pair's ids are above every trace id; they belong to a new user."""
    top = int(jobs.job_id.max()) + 1 if len(jobs) else 1
    extra = {
        "job_id": [top, top + 1],
        "submit_s": [at_s, at_s],
        "nodes": [pair.nodes] * 2,
        "limit_s": [pair.limit_s] * 2,
        "runtime_s": [pair.runtime_s] * 2,
        "user": [jobs.num_users] * 2,
        "recorded_start_s": [-1, -1],
        "recorded_end_s": [-1, -1],
    }
    cols = {c: np.concatenate([getattr(jobs, c), extra[c]]) for c in COLUMNS if c != "depends_on"}
    dep_ids = np.where(jobs.depends_on >= 0, jobs.job_id[np.maximum(jobs.depends_on, 0)], -1)
    table = Jobs.build(
        **cols,
        depends_on_id=np.concatenate([dep_ids, [-1, -1]]),
        epoch=jobs.epoch,
        source=jobs.source,
    )
    rows = np.flatnonzero(table.job_id >= top)
    return table, int(rows[0]), int(rows[1])


class ChainedEpisode:
    """One pair injected at ``inject_s`` (trace clock) into a replay of ``jobs`` on ``nodes`` nodes.

    The replay starts ``warmup_s`` before the injection from the trace's own state (its recorded
    running and queued jobs) when the trace records starts, else on an empty cluster. Trace jobs
    submitted up to ``horizon_s`` after the injection are simulated.
    """

    def __init__(
        self,
        jobs: Jobs,
        nodes: int,
        inject_s: int,
        pair: Pair = Pair(),
        *,
        config: SchedulerConfig | None = None,
        warmup_s: int = 2 * DAY_S,
        interval_s: int = 600,
        history: int = 144,
        horizon_s: int = 8 * DAY_S,
    ):
        if pair.nodes > nodes:
            raise InvalidInputError(f"the pair needs {pair.nodes} nodes; the cluster has {nodes}")
        start = int(inject_s) - warmup_s
        window = jobs.between(start - 14 * DAY_S, int(inject_s) + horizon_s)
        window = window.take(np.flatnonzero(window.nodes <= nodes))
        table, self.pred, self.succ = with_pair(window, int(inject_s), pair)
        self.interval_s, self.history = interval_s, history
        if (table.recorded_start_s[:-2] >= 0).all() and len(table) > 2:
            rec = table.recorded_start_s.copy()
            rec[[self.pred, self.succ]] = np.iinfo(np.int64).max // 4  # never started by the trace
            table = Jobs(
                **{c: (rec if c == "recorded_start_s" else getattr(table, c)) for c in COLUMNS},
                epoch=table.epoch,
                source=table.source,
            )
            self.sim = Simulator.from_trace_state(table, start, nodes, config)
        else:
            self.sim = Simulator(table, nodes, config)
        self.sim.hold(self.succ)
        self.inject_s = int(inject_s)
        self._rows: list[np.ndarray] = []
        t = start
        while t < self.inject_s:  # warm-up history
            self.sim.advance(t)
            self._record()
            t += interval_s
        self.sim.advance(self.inject_s)
        self.submitted_s: int | None = None

    # -- state -------------------------------------------------------------------------------------
    def _record(self):
        self._rows.append(snapshot_features(self.sim, self.pred, self.succ))
        del self._rows[: -self.history]

    def observation(self) -> np.ndarray:
        """The last ``history`` snapshots, oldest first (history x 40), zero-padded at the top."""
        out = np.zeros((self.history, len(FEATURES)), np.float32)
        rows = np.array(self._rows[-self.history :])
        out[self.history - len(rows) :] = rows
        return out

    @property
    def now(self) -> int:
        return self.sim.now

    def predecessor(self) -> dict:
        """What a provisioner may know about P: submit, start (or None), limit, expected end by its
        limit (or None before it starts)."""
        s, j = self.sim._state, self.sim.jobs
        start = int(s["start"][self.pred]) if s["status"][self.pred] >= k.RUNNING else None
        return {
            "submit_s": int(j.submit_s[self.pred]),
            "start_s": start,
            "limit_s": int(j.limit_s[self.pred]),
            "expected_end_s": None if start is None else start + int(j.limit_s[self.pred]),
        }

    def recent_mean_wait_s(self, window_s: int = DAY_S) -> float:
        """Mean wait of the jobs that started in the last ``window_s`` (0 if none)."""
        s, j = self.sim._state, self.sim.jobs
        started = (s["start"] >= 0) & (s["start"] > self.now - window_s) & (s["start"] <= self.now)
        started[[self.pred, self.succ]] = False
        return float((s["start"][started] - j.submit_s[started]).mean()) if started.any() else 0.0

    @property
    def done(self) -> bool:
        return self.submitted_s is not None

    def checkpoint(self) -> tuple:
        """The episode's whole state now (simulator snapshot, history, submission), for
        :meth:`rewind`: a warm start costs a copy instead of a replay of the warm-up."""
        return self.sim.snapshot(), list(self._rows), self.submitted_s

    def rewind(self, checkpoint: tuple) -> None:
        """Return to a state saved by :meth:`checkpoint` (of this episode)."""
        snapshot, rows, submitted_s = checkpoint
        self.sim.restore(snapshot)
        self._rows, self.submitted_s = list(rows), submitted_s

    # -- decisions -----------------------------------------------------------------------------------
    def step(self, submit: bool) -> bool:
        """Submit S now, or wait ``interval_s``; returns True once S is submitted (then
        :meth:`outcome` runs the replay until S starts)."""
        if self.done:
            raise InvalidInputError("the successor has already been submitted")
        self._record()
        if submit:
            self._submit()
            return True
        p = self.sim._state
        nxt = self.now + self.interval_s
        if p["status"][self.pred] >= k.RUNNING and p["end"][self.pred] <= nxt:
            self.sim.advance(int(p["end"][self.pred]))  # P ends first: the reactive fallback
            self._submit()
            return True
        self.sim.advance(nxt)
        return False

    def _submit(self):
        self.sim.release(self.succ)
        self.submitted_s = self.now

    def outcome(self) -> int:
        """S's start minus P's end (seconds): > 0 interruption, < 0 overlap. Runs the replay on
        until both are known."""
        if not self.done:
            raise InvalidInputError("submit the successor first (step(True)) or run to the end")
        s = self.sim._state
        while s["status"][self.succ] < k.RUNNING or s["status"][self.pred] < k.RUNNING:
            nxt = self.sim.advance(self.now + DAY_S)
            if nxt is None and s["status"][self.succ] < k.RUNNING:
                raise InvalidInputError("the replay ended before the successor started")
        return int(s["start"][self.succ] - s["end"][self.pred])


def split(outcome_s) -> tuple[np.ndarray, np.ndarray]:
    """(interruption, overlap) in hours from outcomes in seconds."""
    o = np.asarray(outcome_s, dtype=float) / HOUR_S
    return np.maximum(o, 0.0), np.maximum(-o, 0.0)
