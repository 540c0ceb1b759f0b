"""Chained jobs on the batch simulator: feature extraction on a hand-built queue, outcome signs,
the reactive fallback, and episodes."""

from __future__ import annotations

import numpy as np
import pytest

from tjap.core.errors import InvalidInputError
from tjap.placement.batch import Jobs, SchedulerConfig, Simulator
from tjap.placement.batch.chained import (
    FEATURES,
    ChainedEpisode,
    Pair,
    snapshot_features,
    split,
    with_pair,
)

H = 3600
EXACT = SchedulerConfig(backfill="easy", bf_interval_s=0, bf_resolution_s=1)


def test_features_on_a_hand_built_queue():
    # 4 nodes. A (2 nodes) and B (2 nodes) run from 0; C (3 nodes) and D (1 node) queue.
    jobs = Jobs.build(
        submit_s=[0, 0, 0, 3600],
        nodes=[2, 2, 3, 1],
        limit_s=[10 * H, 20 * H, 5 * H, 1 * H],
        runtime_s=[10 * H, 20 * H, H, H],
    )
    table, pred, succ = with_pair(jobs, 1800, Pair(nodes=2, runtime_s=4 * H, limit_s=5 * H))
    sim = Simulator(table, 4, EXACT)
    sim.hold(succ)
    sim.advance(2 * H)
    f = dict(zip(FEATURES, snapshot_features(sim, pred, succ)))
    assert f["queue_jobs"] == 2  # C and D; P is reported separately and S is held
    assert (f["queue_size_p0"], f["queue_size_p100"]) == (1, 3)
    assert (f["queue_age_h_p0"], f["queue_age_h_p100"]) == (1, 2)
    assert (f["queue_limit_h_p0"], f["queue_limit_h_p100"]) == (1, 5)
    assert f["running_jobs"] == 2 and f["busy_nodes"] == 4 and f["free_nodes"] == 0
    assert f["running_elapsed_h_p50"] == 2 and f["running_limit_h_p100"] == 20
    assert (f["pred_size"], f["pred_limit_h"], f["pred_queue_h"], f["pred_elapsed_h"]) == (
        2,
        5,
        1.5,
        0,
    )
    assert (f["succ_size"], f["succ_limit_h"]) == (2, 5)


def test_outcome_signs_and_the_reactive_fallback():
    # an empty 8-node cluster: S submitted when P ends starts at once (outcome 0); submitted at
    # once, S runs beside P (overlap = P's runtime)
    jobs = Jobs.build(submit_s=[0], nodes=[1], limit_s=[60], runtime_s=[60])
    pair = Pair(nodes=2, runtime_s=3 * H, limit_s=4 * H)
    reactive = ChainedEpisode(jobs, 8, 7200, pair, config=EXACT, warmup_s=3600)
    while not reactive.step(False):
        pass
    assert reactive.submitted_s == 7200 + 3 * H and reactive.outcome() == 0
    eager = ChainedEpisode(jobs, 8, 7200, pair, config=EXACT, warmup_s=3600)
    assert eager.step(True) and eager.outcome() == -3 * H
    interruption, overlap = split([2 * H, -3 * H, 0])
    assert interruption.tolist() == [2, 0, 0] and overlap.tolist() == [0, 3, 0]


def test_episode_history_and_errors():
    jobs = Jobs.build(
        submit_s=np.arange(0, 50 * H, H), nodes=[1] * 50, limit_s=[2 * H] * 50, runtime_s=[H] * 50
    )
    ep = ChainedEpisode(jobs, 4, 30 * H, Pair(nodes=1), config=EXACT, warmup_s=5 * H)
    obs = ep.observation()
    assert obs.shape == (144, 40) and (obs[:-30] == 0).all() and (obs[-30:, 0] >= 0).all()
    with pytest.raises(InvalidInputError, match="submit the successor first"):
        ep.outcome()
    with pytest.raises(InvalidInputError, match="cluster has 4"):
        ChainedEpisode(jobs, 4, 30 * H, Pair(nodes=8))


# -- provisioners ----------------------------------------------------------------------------------
from tjap.heuristics.batch.rules import Average, Reactive, evaluate, run_episode  # noqa: E402


class Recorder:
    """Wraps a provisioner and records when it was asked and what the predecessor was then."""

    name = "recorder"

    def __init__(self, inner):
        self.inner, self.asked = inner, []

    def decide(self, episode):
        self.asked.append((episode.now, episode.sim.state(episode.pred)))
        return self.inner.decide(episode)


def busy_trace():
    # 4 nodes kept busy by a stream of 2-node, 5-hour jobs: waits of hours
    n = 120
    return Jobs.build(
        submit_s=np.arange(n) * 1800, nodes=[2] * n, limit_s=[6 * H] * n, runtime_s=[5 * H] * n
    )


@pytest.mark.parametrize("inner", [Reactive(), Average()])
def test_provisioners_never_act_before_the_predecessor_is_submitted(inner):
    jobs = busy_trace()
    ep = ChainedEpisode(
        jobs, 4, 30 * H, Pair(nodes=2, runtime_s=10 * H, limit_s=12 * H), config=EXACT
    )
    rec = Recorder(inner)
    outcome = run_episode(ep, rec)
    assert rec.asked and all(t >= 30 * H for t, _ in rec.asked)
    assert all(state != "future" for _, state in rec.asked)
    assert ep.submitted_s >= 30 * H and isinstance(outcome, int)


def test_reactive_interrupts_and_avg_trades_it_for_overlap_on_a_busy_queue():
    jobs = busy_trace()
    pair = Pair(nodes=2, runtime_s=10 * H, limit_s=10 * H)
    times = [30 * H, 40 * H]
    reactive = evaluate(jobs, 4, pair, times, Reactive(), config=EXACT)
    avg = evaluate(jobs, 4, pair, times, Average(), config=EXACT)
    assert reactive.mean_interruption_h > 1 and reactive.mean_overlap_h == 0
    assert avg.mean_interruption_h < reactive.mean_interruption_h
    assert set(avg.summary()) == {
        "method",
        "status",
        "objective",
        "runtime_s",
        "seed",
        "policy",
        "pairs",
        "mean_interruption_h",
        "mean_overlap_h",
        "zero_interruption_fraction",
    }
    assert avg.objective == avg.mean_interruption_h and avg.method == "avg"
    assert isinstance(avg.to_dict()["pairs"], int) and len(avg.outcomes_h) == len(times)
