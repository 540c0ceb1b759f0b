"""The single-agent scheduler in the simulator (``single``), the ``jct_rule`` reward and the
PPO learning-curve plumbing of seed 001. No training here."""

import json

import numpy as np
import pytest
import torch

from tjap.cli import main
from tjap.core.errors import InvalidInputError
from tjap.learned.interference.env import InterferenceEnv
from tjap.learned.interference.nets import InterferenceGNN, to_torch
from tjap.learned.interference.policy import SINGLE_WEIGHTS, SingleAgentPolicy
from tjap.learned.interference.train import evaluate_in_env, ppo
from tjap.placement.interference import Simulator, Workload, make_cluster
from tjap.registry import make


def _model(seed, hidden=8):
    torch.manual_seed(seed)
    return InterferenceGNN(hidden=hidden, layers=1)


def test_single_places_feasibly_without_forwarding_and_is_deterministic(checked_commits):
    cluster = make_cluster("fattree", 4, "pcie")
    w = Workload.generate(cluster.num_partitions, 2, "poisson", 0, rate=2.0)
    model = _model(0)
    sims = [Simulator(cluster, w) for _ in range(2)]
    runs = [sim.run(SingleAgentPolicy(model=model), seed=0) for sim in sims]
    assert np.isfinite(runs[0].finish).all() and runs[0].forwarded.max() == 0
    assert np.array_equal(runs[0].finish, runs[1].finish)
    assert np.array_equal(runs[0].start, runs[1].start)
    sim = sims[0]
    groups = [
        set(cluster.group_partition[sim.task_group[sim.task_ptr[j] : sim.task_ptr[j + 1]]])
        for j in range(len(w))
    ]
    homes = [cluster.group_partition[sim.task_group[sim.task_ptr[j]]] for j in range(len(w))]
    # one scheduler over every pod: an untrained network places jobs away from their home pod
    assert any(h != w.home[j] for j, h in enumerate(homes)) or max(map(len, groups)) > 1


# The single agent replaying the env's episodes, observation by observation: see
# tests/learned/interference/test_interference_learned.py::test_simulator_policy_sees_exactly_the_env_observations.


def test_shipped_single_weights_clone_the_whole_rule():
    """The shipped single-agent weights track the rule they imitate (``whole`` over the whole
    cluster: the env's expert in single-agent mode) on unseen k = 4 episodes, well below Tetris."""
    policy = make("interference", "single")
    assert policy.name == "single" and policy.scope == "cluster"
    meta = json.loads(SINGLE_WEIGHTS.read_text())
    assert meta["training"]["single_agent"] and meta["training"]["expert"] == "whole"
    env = InterferenceEnv(k=4, intervals=3, rate=2.0, extra_intervals=80, single_agent=True)
    single, whole, tetris = (
        np.mean(evaluate_in_env(p, env, [5, 6])) for p in (policy.model, "whole", "tetris")
    )
    assert abs(single - whole) < 0.03 * whole and single < 0.8 * tetris


def test_policy_scope_is_checked():
    class Odd:
        name, scope = "odd", "rack"

        def reset(self, sim, seed):
            pass

        def place(self, sim, partition, jobs):
            return [None] * len(jobs)

    cluster = make_cluster("fattree", 4, "pcie")
    w = Workload.generate(cluster.num_partitions, 1, "uniform", 0, rate=1.0)
    with pytest.raises(InvalidInputError, match="scope"):
        Simulator(cluster, w).run(Odd(), max_intervals=1)


def test_cli_single(capsys, tmp_path):
    base = ["interference", "evaluate", "--k", "4", "--intervals", "2", "--seed", "1"]
    assert main([*base, "--policy", "single", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "single" and out["completed"] == out["jobs"] > 0
    assert out["forwarded_jobs"] == 0
    assert main([*base, "--policy", "single", "--weights", str(tmp_path / "none.json")]) == 2
    assert main([*base, "--policy", "tetris", "--weights", str(SINGLE_WEIGHTS)]) == 2
    err = capsys.readouterr().err
    assert "--weights needs --policy marl or single" in err and "Traceback" not in err


def test_jct_rule_reward_is_the_jct_saved_against_the_rule():
    """Following the rule earns exactly 0 in every step; any other agent's return is the rule's
    total time in system minus its own."""
    env = InterferenceEnv(k=4, intervals=3, rate=2.0, extra_intervals=60, reward="jct_rule")
    env.reset(seed=4)
    done, rewards = False, []
    while not done:
        _, r, done, _, _ = env.step(env.expert_action("whole"))
        rewards.append(r)
    assert np.allclose(rewards, 0.0)
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    done, total = False, 0.0
    while not done:
        mask = env.action_masks()
        _, r, done, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        total += r
    assert total == pytest.approx(env._rule_cost.sum() - sum(env.episode.time_in_system))
    assert total < 0  # random choices lose time against the rule
    with pytest.raises(InvalidInputError, match="unknown rule"):
        InterferenceEnv(k=4, reward="jct_rule", rule="best")


def test_ppo_records_greedy_evaluations():
    model = _model(2)
    env = InterferenceEnv(k=4, intervals=1, rate=1.0, reward="jct_rule", single_agent=True)
    calls = []

    def evaluate(m):
        calls.append(1)
        return [float(len(calls))]

    curve = ppo(
        model,
        env,
        steps=96,
        rollout=48,
        epochs=1,
        batch=32,
        lr=1e-3,
        seed=0,
        gamma=0.99,
        lam=0.95,
        clip=0.2,
        value_scale=50.0,
        entropy=0.0,
        evaluate=evaluate,
        eval_every=48,
    )
    evals = [row for row in curve if row["phase"] == "eval"]
    assert [row["step"] for row in evals] == [0, 48, 96]
    assert [row["avg_jct"] for row in evals] == [[1.0], [2.0], [3.0]]
    obs, _ = env.reset(seed=0)
    logits, _ = model(to_torch([obs]), env.num_groups)
    assert torch.isfinite(logits[0, :-1]).all()
