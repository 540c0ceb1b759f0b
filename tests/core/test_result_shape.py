"""One shape for every family's results: each decision call and evaluation returns a frozen
Record with the common fields (method, status, objective, runtime_s, seed) of the right types,
written by to_dict and round-tripping through strict JSON."""

from __future__ import annotations

import dataclasses
import json
import math
import time

import numpy as np
import pytest
from provision_cases import EXACT, PAIR, H, busy_trace

import tjap
from tjap.core.result import COMMON_FIELDS, Record, Status, plain
from tjap.placement.batch.chained import Pair


def check_shape(result, method: str | None = None) -> dict:
    """The result is a frozen Record with the common fields; returns its to_dict()."""
    assert isinstance(result, Record)
    assert dataclasses.is_dataclass(result) and type(result).__dataclass_params__.frozen
    assert isinstance(result.method, str) and result.method
    if method is not None:
        assert result.method == method
    assert isinstance(result.status, Status)
    objective = result.objective
    assert objective is None or (
        isinstance(objective, (int, float, np.integer, np.floating))
        and not isinstance(objective, bool)
    )
    assert isinstance(result.runtime_s, float) and result.runtime_s >= 0
    assert isinstance(result.seed, (int, np.integer)) and not isinstance(result.seed, bool)
    data = result.to_dict()
    assert json.loads(result.to_json()) == data  # strict JSON: no NaN, no Infinity
    for name in COMMON_FIELDS:  # written, as the attributes say
        assert data[name] == plain(getattr(result, name)), name
    assert data["status"] == result.status.value
    return data


def test_tree_solve():
    window = tjap.Window(tjap.FatTree(k=4), idle_nodes=range(16), job_sizes=[3, 2])
    result = tjap.solve(window, "dp", seed=3)
    check_shape(result, "dp")
    assert result.status == Status.OPTIMAL and result.seed == 3
    assert result.objective == tjap.job_cost(window.topology, result.assignment[0]) + tjap.job_cost(
        window.topology, result.assignment[1]
    )


def test_network_request_episode_and_evaluation():
    from tjap.placement.network import Engine, Requests, evaluate, paper_topology, run_episode
    from tjap.registry import make

    topo = paper_topology("8:1-16", 64)
    plan = tjap.place_request(Engine(topo), 40, 20, 5, "tetris", seed=2)
    data = check_shape(plan, "tetris")
    assert plan.status == Status.FEASIBLE and plan.objective == plan.channels == data["channels"]
    assert plan.seed == 2

    episode = run_episode(topo, Requests.generate(topo, 8, seed=1), make("network", "nalb"))
    check_shape(episode, "nalb")
    assert episode.objective == episode.acceptance and episode.seed == 1
    assert episode.method == episode.policy and episode.status == Status.FEASIBLE

    evaluation = evaluate(topo, lambda: make("network", "tetris"), requests=8, seeds=2, seed_base=4)
    data = check_shape(evaluation, "tetris")
    assert evaluation.objective == evaluation.acceptance and evaluation.seed == 4
    assert evaluation.runtime_s == pytest.approx(sum(e.runtime_s for e in evaluation.episodes))
    assert len(data["episodes"]) == 2


def test_interference_simulation():
    from tjap.placement.interference import Workload, make_cluster, simulate
    from tjap.registry import make

    cluster = make_cluster("fattree", 4)
    workload = Workload.generate(cluster.num_partitions, 2, "uniform", 0)
    result = simulate(cluster, workload, make("interference", "tetris"), seed=5)
    data = check_shape(result, "tetris")
    assert result.seed == 5 and result.status == Status.FEASIBLE
    assert result.objective == result.summary()["avg_jct"] == data["objective"]
    done = np.isfinite(result.finish)
    assert done.any() and result.objective == pytest.approx(
        float((result.finish - result.arrival)[done].mean())
    )


def test_interference_simulation_without_a_finished_job_writes_null():
    from tjap.placement.interference import Workload, make_cluster, simulate
    from tjap.registry import make

    cluster = make_cluster("fattree", 4)
    workload = Workload.generate(cluster.num_partitions, 2, "uniform", 0)
    result = simulate(
        cluster, workload, make("interference", "tetris"), drain=False, max_intervals=1
    )
    assert not np.isfinite(result.finish).any()  # nothing finishes in one interval
    assert math.isnan(result.objective) and check_shape(result)["objective"] is None


def test_batch_simulation():
    from tjap.placement.batch import simulate

    result = simulate(busy_trace(20), 4, backfill="easy")
    data = check_shape(result, "easy/firstfit")
    assert result.objective == result.summary()["mean_wait_s"] > 0 and result.seed == 0
    assert data["summary"]["mean_wait_s"] == data["objective"]


def test_provisioning_evaluation():
    from tjap.heuristics.batch.rules import Average, evaluate

    result = evaluate(busy_trace(), 4, PAIR, [30 * H], Average(), config=EXACT, seed=7)
    data = check_shape(result, "avg")
    assert result.objective == result.mean_interruption_h and result.seed == 7
    assert data["outcomes_h"] == list(result.outcomes_h)


class EndedSlurm:
    """A Slurm whose job 42 (the predecessor) has just ended: a live run submits the successor
    at its first decision (the reactive fallback), and Slurm records it starting 1 s later."""

    def __init__(self):
        from tjap.placement.slurm.client import CompletedJob

        self.completed_job = CompletedJob
        now = int(time.time())
        self.jobs = {
            42: CompletedJob(
                42,
                "tjap-predecessor",
                "root",
                "COMPLETED",
                "main",
                240,
                now - 200,
                now - 200,
                now - 190,
                now - 2,
                1,
                1,
                "localhost",
                "0:0",
            )
        }
        self.submitted = []

    def queue(self):
        return []

    def completed(self, path):
        return list(self.jobs.values())

    def submit(self, *, nodes_or_tasks, time_limit_min, command, name, **kw):
        now = int(time.time())
        job_id = 43 + len(self.submitted)
        self.submitted.append(job_id)
        self.jobs[job_id] = self.completed_job(
            job_id,
            name,
            "root",
            "COMPLETED",
            "main",
            time_limit_min * 60,
            now,
            now,
            now + 1,
            now + 3,
            1,
            nodes_or_tasks,
            "localhost",
            "0:0",
        )
        return job_id

    def cancel(self, job_ids):
        pass


def test_live_provisioning_result():
    from tjap.heuristics.batch.rules import Reactive
    from tjap.placement.slurm.chained import LiveResult, run_live

    slurm = EndedSlurm()
    result = run_live(
        slurm,
        Reactive(),
        pair=Pair(nodes=1),
        compress=720,
        pred_job_id=42,
        jobcomp_path="jobcomp.log",
        cluster_nodes=4,
        seed=9,
        timeout_s=30,
    )
    assert isinstance(result, LiveResult) and slurm.submitted == [result.succ_job_id]
    data = check_shape(result, "reactive")
    assert result.fallback and result.decisions[-1].action == "submit (predecessor ended)"
    assert result.seed == 9 and result.status == Status.FEASIBLE
    assert result.outcome_wall_s == result.succ_start - result.pred_end
    assert (
        result.objective
        == result.interruption_h
        == data["interruption_h"]
        == pytest.approx(max(result.outcome_wall_s, 0) * 720 / H)
    )
    assert data["decisions"][-1]["action"] == "submit (predecessor ended)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.succ_start = 0


def test_live_result_without_records_has_no_objective():
    from tjap.placement.slurm.chained import LiveResult

    result = LiveResult("moe", 720, {"nodes": 1}, 42)
    assert check_shape(result, "moe")["objective"] is None and result.outcome_h is None
