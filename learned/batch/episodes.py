"""Recorded chained-job episodes: the training data of every learned provisioner.

Before the successor is submitted, a provisioner's choices do not change the replay: the episode's
states are the same whatever it decided so far. So one pass along the "wait" path records the
whole decision problem of an injection time: the state at each decision k and the outcome had the
successor been submitted then (a probe: submit, run the replay until the successor starts,
rewind), plus the reactive fallback's outcome. The pass steps the gymnasium environment
(:class:`tjap.learned.batch.env.ProvisionEnv`: :meth:`~tjap.learned.batch.env.ProvisionEnv.step`
to wait, :meth:`~tjap.learned.batch.env.ProvisionEnv.probe` to probe), so the training data come
from the one step function of the environment, which a provisioner's own episodes share.
Supervised pretraining regresses the probed wait on the state; the DQN and policy-gradient heads
learn on the same recorded decisions.

A set of episodes is a dict of flat arrays (saved as .npz): ``rows`` (all snapshot rows, raw),
``row_offset`` (episode e's rows are ``rows[row_offset[e]:row_offset[e+1]]``: ``history`` warm-up
rows, then one per decision), ``decision_offset`` (episode e's decisions), per decision
``wait_s``, ``outcome_s``, ``remaining_s``, ``running``, and per episode ``inject_s``, ``nodes``,
``fallback_outcome_s``.
"""

from __future__ import annotations

import time

import numpy as np

from tjap.core.executor import Executor, TaskFailure
from tjap.learned.batch.env import WAIT, ProvisionEnv
from tjap.learned.batch.features import remaining_s
from tjap.placement.batch.chained import Pair
from tjap.placement.batch.jobs import Jobs
from tjap.placement.batch.simulator import SchedulerConfig

_JOBS: Jobs | None = None  # the trace of the worker processes (set before forking)


def record_episode(
    jobs: Jobs,
    cluster_nodes: int,
    inject_s: int,
    pair: Pair,
    config: SchedulerConfig | None = None,
    history: int = 144,
) -> dict:
    """One injection time's decisions, recorded by stepping :class:`ProvisionEnv`: raw rows, and
    per decision the probed wait and outcome (s) had the successor been submitted then, the
    predecessor's remaining time and whether it runs."""
    env = ProvisionEnv(jobs, [inject_s], cluster_nodes, pair, config, history=history, cache=1)
    env.reset(options={"inject_s": inject_s})
    rows = [*env.episode.observation()]  # the warm-up history before the first decision
    wait, outcome, remaining, running = [], [], [], []
    done = False
    while not done:
        rows.append(env.raw[-1])  # the snapshot at this decision
        remaining.append(remaining_s(env.episode))
        running.append(env.episode.predecessor()["start_s"] is not None)
        _, probe = env.probe()
        outcome.append(probe["outcome_s"])
        wait.append(probe["wait_s"])
        _, _, done, _, info = env.step(WAIT)
    return {
        "rows": np.array(rows, np.float32),
        "wait_s": np.array(wait, np.float64),
        "outcome_s": np.array(outcome, np.float64),
        "remaining_s": np.array(remaining, np.float64),
        "running": np.array(running, bool),
        "inject_s": int(inject_s),
        "nodes": pair.nodes,
        "fallback_outcome_s": info["outcome_s"],
    }


def _record(args):
    inject_s, nodes, cluster_nodes, config = args
    return record_episode(_JOBS, cluster_nodes, inject_s, Pair(nodes=nodes), config)


def record_many(
    jobs: Jobs,
    cluster_nodes: int,
    injections: list[tuple[int, int]],
    config: SchedulerConfig | None = None,
    workers: int = 1,
    deadline_s: float | None = None,
) -> dict:
    """Record ``(inject_s, pair_nodes)`` episodes on ``workers`` processes of the sweep executor
    (forked, so they share ``jobs``; hence no Ray here); stops taking new results at
    ``deadline_s`` (time.time()), keeping those done. An episode that fails is reported and
    left out."""
    global _JOBS
    _JOBS = jobs
    tasks = [((int(t), int(n), cluster_nodes, config),) for t, n in injections]
    done = []
    for episode in Executor(workers, start_method="fork").map(_record, tasks, desc="episodes"):
        if not isinstance(episode, TaskFailure):
            done.append(episode)
        if deadline_s is not None and time.time() > deadline_s:
            break  # leaving the loop stops the workers
    return stack(done)


def stack(episodes: list[dict]) -> dict:
    """Flat arrays (see the module docstring) from per-episode records."""

    def cat(key, dtype):
        parts = [np.asarray(e[key], dtype) for e in episodes]
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    rows = [e["rows"] for e in episodes]
    return {
        "rows": np.concatenate(rows) if rows else np.zeros((0, 40), np.float32),
        "row_offset": np.cumsum([0] + [len(r) for r in rows]).astype(np.int64),
        "decision_offset": np.cumsum([0] + [len(e["wait_s"]) for e in episodes]).astype(np.int64),
        "wait_s": cat("wait_s", np.float64),
        "outcome_s": cat("outcome_s", np.float64),
        "remaining_s": cat("remaining_s", np.float64),
        "running": cat("running", bool),
        "inject_s": np.array([e["inject_s"] for e in episodes], np.int64),
        "nodes": np.array([e["nodes"] for e in episodes], np.int64),
        "fallback_outcome_s": np.array([e["fallback_outcome_s"] for e in episodes], np.float64),
    }


def subset(data: dict, episodes) -> dict:
    """The episodes ``episodes`` (indices) of ``data``, as a new set."""
    ro, do = data["row_offset"], data["decision_offset"]
    parts = []
    for e in np.asarray(episodes, dtype=np.int64):
        d = slice(do[e], do[e + 1])
        parts.append(
            {
                "rows": data["rows"][ro[e] : ro[e + 1]],
                "wait_s": data["wait_s"][d],
                "outcome_s": data["outcome_s"][d],
                "remaining_s": data["remaining_s"][d],
                "running": data["running"][d],
                "inject_s": data["inject_s"][e],
                "nodes": data["nodes"][e],
                "fallback_outcome_s": data["fallback_outcome_s"][e],
            }
        )
    return stack(parts)


def window_index(data: dict, history: int = 144) -> np.ndarray:
    """(decisions x history) row indices of every decision's observation."""
    ro, do = data["row_offset"], data["decision_offset"]
    episode = np.repeat(np.arange(len(ro) - 1), np.diff(do))
    k = np.arange(do[-1]) - do[episode]
    last = ro[episode] + history + k  # the row recorded at decision k
    return last[:, None] - np.arange(history - 1, -1, -1)[None, :]


def episode_of(data: dict) -> np.ndarray:
    """The episode of each decision."""
    return np.repeat(np.arange(len(data["decision_offset"]) - 1), np.diff(data["decision_offset"]))


def first_submission(data: dict, submit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Replay a decision rule on recorded episodes: ``submit`` is a bool per decision; returns per
    episode the outcome (s) of submitting at its first True decision (else the fallback) and
    that decision's index in the episode (-1: the fallback)."""
    do = data["decision_offset"]
    outcomes = data["fallback_outcome_s"].copy()
    at = np.full(len(do) - 1, -1, np.int64)
    for e in range(len(do) - 1):
        hits = np.flatnonzero(submit[do[e] : do[e + 1]])
        if hits.size:
            at[e] = hits[0]
            outcomes[e] = data["outcome_s"][do[e] + hits[0]]
    return outcomes, at
