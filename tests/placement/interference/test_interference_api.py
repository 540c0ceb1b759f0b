"""Seed 001 through the tjap face: ``tjap.api.place_job`` (one decision outside an episode), the
registry's interference policies, and the steppable episode that the simulator and the env share."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from tjap.api import place_job
from tjap.core.errors import InvalidInputError, UnknownMethodError
from tjap.placement.interference import (
    CLUSTER,
    PlacementEpisode,
    Simulator,
    Workload,
    make_cluster,
    simulate,
)
from tjap.registry import make, methods


def fresh(seed=0, intervals=1, rate=3.0):
    cluster = make_cluster("fattree", 4)
    return Simulator(
        cluster, Workload.generate(cluster.num_partitions, intervals, "poisson", seed, rate=rate)
    )


@pytest.mark.parametrize("policy", ["tetris", "lb", "lif", "random", "whole"])
def test_place_job_is_the_first_turn_of_a_run(policy):
    """On an empty cluster, the plans of partition 0's queue are what the run commits in its
    first turn (same policy, same seed)."""
    sim = fresh(seed=3)
    queue = [j for j in range(len(sim.workload)) if sim.workload.home[j] == 0]
    decision = place_job(sim, queue, policy, seed=7)
    plans = decision.plans
    assert decision.jobs == tuple(queue) and decision.method == policy and decision.seed == 7
    assert decision.objective == sum(p is not None for p in plans)
    assert np.all(sim.gpu_free == sim.cluster.group_gpus)  # nothing committed
    run = Simulator(sim.cluster, sim.workload)
    run.run(make("interference", policy), seed=7, max_intervals=1, drain=False)
    for job, plan in zip(queue, plans):
        lo, hi = run.task_ptr[job], run.task_ptr[job + 1]
        if plan is None:
            assert run.forwarded[job] > 0 or run.start[job] < 0
        else:
            assert run.task_group[lo:hi].tolist() == plan.tolist()


def test_place_job_one_job_commit_and_policy_objects():
    sim = fresh()
    decision = place_job(sim, 0, "tetris")
    plan = decision.plan
    assert isinstance(plan, np.ndarray) and len(plan) == sim.workload.tasks[0]
    assert sim.fits(0, plan) and sim.state[0] == 0
    assert decision.status.value == "FEASIBLE" and decision.to_dict()["objective"] == 1
    again = place_job(sim, 0, make("interference", "tetris"), commit=True).plan
    assert again.tolist() == plan.tolist() and sim.state[0] == 1
    assert sim.task_group[sim.task_ptr[0] : sim.task_ptr[1]].tolist() == plan.tolist()
    batch = [j for j in range(1, len(sim.workload)) if sim.workload.home[j] == 0][:3]
    opt = place_job(sim, batch, "opt", iterations=50, seed=1).plans
    assert len(opt) == len(batch) and all(p is None or sim.fits(j, p) for j, p in zip(batch, opt))


def test_place_job_with_learned_policies():
    sim = fresh()
    plan = place_job(sim, 0, "marl").plan
    assert sim.fits(0, plan) and sim.offered(0)[sim.workload.home[0]]
    both = place_job(sim, [0, 1], "single").plans  # scope "cluster": any partition
    assert all(p is None or sim.fits(j, p) for j, p in zip([0, 1], both))


def test_place_job_refuses_bad_input():
    sim = fresh()
    other = next(j for j in range(len(sim.workload)) if sim.workload.home[j] != 0)
    with pytest.raises(UnknownMethodError, match="deepsys"):
        place_job(sim, 0, "deepsys")
    with pytest.raises(InvalidInputError, match="valid options: iterations, t_start, t_end, start"):
        place_job(sim, 0, "opt", moves=3)
    with pytest.raises(InvalidInputError, match="valid options: none"):
        place_job(sim, 0, "tetris", iterations=3)
    with pytest.raises(InvalidInputError, match="policy given by name"):
        place_job(sim, 0, make("interference", "lb"), iterations=3)
    with pytest.raises(InvalidInputError, match="give the partition"):
        place_job(sim, [0, other], "tetris")
    with pytest.raises(InvalidInputError, match="partition must be"):
        place_job(sim, 0, "tetris", partition=CLUSTER)
    with pytest.raises(InvalidInputError, match="whole cluster"):
        place_job(sim, 0, "single", partition=0)
    for jobs in (10**6, [], [0, 0], "0", True):
        with pytest.raises(InvalidInputError):
            place_job(sim, jobs, "tetris")
    with pytest.raises(InvalidInputError, match="Simulator"):
        place_job(object(), 0)
    place_job(sim, 0, "tetris", commit=True)
    with pytest.raises(InvalidInputError, match="not waiting"):
        place_job(sim, 0, "tetris")


def test_registry_builds_every_interference_policy_and_checks_options():
    assert set(methods("interference")) == {
        "tetris",
        "lb",
        "lif",
        "random",
        "opt",
        "whole",
        "marl",
        "single",
        "marl-server",
    }
    for name in ("tetris", "lb", "lif", "random", "whole"):
        assert make("interference", name).name == name
    with pytest.raises(InvalidInputError, match="unknown option 'weights'.*valid options: none"):
        make("interference", "whole", weights="x.json")
    with pytest.raises(InvalidInputError, match="valid options: weights, model"):
        make("interference", "marl", iterations=3)


def test_episode_steps_one_turn_at_a_time_and_matches_the_run():
    """Driving the episode by hand with a policy gives the run's result; turns come in
    partition order within an interval, forwarded offers after the home turns."""
    cluster = make_cluster("fattree", 4)
    w = Workload.generate(cluster.num_partitions, 4, "poisson", 2, rate=4.0)
    reference = simulate(cluster, w, make("interference", "lb"), seed=2)
    sim = Simulator(cluster, w)
    policy = make("interference", "lb")
    episode = PlacementEpisode(sim)
    policy.reset(sim, 2)
    turns = []
    while (turn := episode.next_turn()) is not None:
        turns.append(turn)
        episode.submit(policy.place(sim, turn.partition, list(turn.jobs)))
    assert episode.done and episode.next_turn() is None
    np.testing.assert_array_equal(sim.finish, reference.finish)
    np.testing.assert_array_equal(np.array(episode.utilization), reference.utilization)
    assert len(episode.time_in_system) == reference.intervals
    jct = reference.jct[np.isfinite(reference.finish)].sum()
    assert sum(episode.time_in_system) == pytest.approx(jct)
    home = [t.partition for t in turns if t.interval == 0][: cluster.num_partitions]
    assert home == sorted(home)
    with pytest.raises(InvalidInputError, match="no turn"):
        episode.submit([])


def test_episode_commit_checks_the_turn():
    sim = fresh(rate=2.0)
    episode = PlacementEpisode(sim)
    turn = episode.next_turn()
    outsider = next(j for j in range(len(sim.workload)) if j not in turn.jobs)
    with pytest.raises(InvalidInputError, match="current turn"):
        episode.commit(outsider, [0])
    job = turn.jobs[0]
    far = sim.cluster.partition_groups[(turn.partition + 1) % sim.cluster.num_partitions][0]
    with pytest.raises(InvalidInputError, match="outside partition"):
        episode.commit(job, [far] * int(sim.workload.tasks[job]))
    with pytest.raises(InvalidInputError, match="returned 0 plans"):
        episode.submit([])
    with pytest.raises(InvalidInputError, match="scope"):
        PlacementEpisode(sim, scope="rack")
    with pytest.raises(InvalidInputError, match="max_intervals"):
        PlacementEpisode(sim, max_intervals=0)


def test_sim_result_is_a_record():
    sim = fresh(rate=2.0)
    result = sim.run(make("interference", "tetris"))
    summary = result.summary()
    assert {"avg_jct", "jobs", "completed", "utilization", "intervals", "runtime_s"} <= set(summary)
    assert isinstance(summary["jobs"], int) and isinstance(summary["intervals"], int)
    data = json.loads(result.to_json())
    assert data["policy"] == "tetris" and len(data["finish"]) == len(sim.workload)
    assert isinstance(data["start"][0], int)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.policy = "lb"  # frozen
