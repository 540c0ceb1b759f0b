"""The seed-001 learned schedulers: env, GNN, the ``marl`` policy. No training here."""

import json

import numpy as np
import pytest
import torch

from tjap.core.errors import InvalidInputError
from tjap.learned.interference.env import InterferenceEnv
from tjap.learned.interference.features import JOB_FEATURES, PARTITION_FEATURES
from tjap.learned.interference.nets import InterferenceGNN, to_torch
from tjap.learned.interference.policy import MarlPolicy, load_model, save_model
from tjap.placement.interference import Simulator, Workload, make_cluster
from tjap.registry import make

FORWARD_BIAS = 1.0


def brute_feasible(env) -> np.ndarray:
    """Feasible groups of the current task, recomputed from the simulator and the partial plan."""
    sim, plan = env.sim, env._plan
    groups = env.graphs[env._agent].groups
    c = sim.cluster
    lo = sim.task_ptr[plan.job]
    gpu = sim.gpu_free.astype(float).copy()
    cpu = sim.cpu_used.copy()
    for t, g in enumerate(plan.plan):
        gpu[g] -= sim.task_worker[lo + t]
        cpu[g] += sim.task_cpu[lo + t]
    t = len(plan.plan)
    need_gpu, need_cpu = sim.task_worker[lo + t], sim.task_cpu[lo + t]
    assert np.all(c.group_partition[groups] == env._agent)
    return (gpu[groups] >= need_gpu) & (cpu[groups] + need_cpu <= sim.cpu_capacity[groups] + 1e-9)


def test_check_env():
    from gymnasium.utils.env_checker import check_env

    check_env(InterferenceEnv(k=4, intervals=2), skip_render_check=True)


def test_masks_match_brute_force_and_nothing_is_oversubscribed(checked_commits):
    env = InterferenceEnv(k=4, intervals=4, rate=3.0)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=3)
    done, steps = False, 0
    while not done:
        mask = env.action_masks()
        assert np.array_equal(mask[:-1], brute_feasible(env))
        assert mask.any() and np.array_equal(mask, info["action_mask"])
        assert not mask[-1] or len(env._plan.plan) == 0  # forward only before the first task
        obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        steps += 1
    assert steps > 20


def test_masked_action_is_refused():
    env = InterferenceEnv(k=4, intervals=2)
    env.reset(seed=0)
    mask = env.action_masks()
    bad = np.flatnonzero(~mask)
    if len(bad):
        with pytest.raises(InvalidInputError):
            env.step(int(bad[0]))
    with pytest.raises(InvalidInputError):
        env.step(len(mask))


def test_forwarding_terminates():
    """An agent that forwards whenever it may: each job visits each partition at most once and
    the episode ends with every job placed."""
    env = InterferenceEnv(k=4, intervals=3, rate=2.0, extra_intervals=40)
    _, info = env.reset(seed=1)
    P = env.cluster.num_partitions
    done, steps, forwards = False, 0, 0
    interval, before = info["interval"], env.sim.forwarded.copy()
    while not done:
        mask = env.action_masks()
        action = len(mask) - 1 if mask[-1] else int(np.flatnonzero(mask)[0])
        forwards += action == len(mask) - 1
        _, _, done, _, info = env.step(action)
        if info["interval"] != interval:
            interval, before = info["interval"], env.sim.forwarded.copy()
        assert np.all(env.sim.forwarded - before <= P - 1)  # per interval, each partition once
        steps += 1
        assert steps < 10000
    assert forwards > 0 and np.all(env.sim.state >= 1)  # every job was placed in the end


def test_simulator_forwarding_with_marl_terminates():
    """A model biased to forward: the simulator offers each job to each partition at most once,
    and the last partition to see it cannot forward it (the env's mask), so it places it there."""
    model = InterferenceGNN(hidden=8, layers=1)
    with torch.no_grad():
        model.forward_head[-1].bias.fill_(100.0)
    cluster = make_cluster("fattree", 4, "pcie")
    w = Workload.generate(cluster.num_partitions, 2, "uniform", 0, rate=2.0)
    policy = MarlPolicy(model=model)
    result = Simulator(cluster, w).run(policy, seed=0, max_intervals=1)
    assert result.forwarded.max() <= cluster.num_partitions - 1
    last = result.forwarded == cluster.num_partitions - 1  # every partition has seen the job
    assert last.any() and np.all(result.start[last] == 0)
    assert np.all(result.start[~last] == -1)  # jobs some partition has not seen wait


def test_same_weights_run_on_k4_and_k8():
    torch.manual_seed(0)
    model = InterferenceGNN(hidden=16, layers=2)
    for k in (4, 8):
        env = InterferenceEnv(k=k, intervals=2)
        obs, _ = env.reset(seed=0)
        logits, value = model(to_torch([obs, obs]), env.num_groups)
        assert logits.shape == (2, env.num_groups + 1) and value.shape == (2,)
        assert torch.isfinite(logits).all()
        assert torch.allclose(logits[0], logits[1])


def test_save_load_round_trip(tmp_path):
    torch.manual_seed(1)
    model = InterferenceGNN(hidden=16, layers=2)
    save_model(model, tmp_path / "m", {"what": "test"})
    loaded, meta = load_model(tmp_path / "m.json")
    assert meta["training"]["what"] == "test" and meta["model"] == {"hidden": 16, "layers": 2}
    env = InterferenceEnv(k=4, intervals=2)
    obs, _ = env.reset(seed=0)
    a, va = model(to_torch([obs]), env.num_groups)
    b, vb = loaded(to_torch([obs]), env.num_groups)
    assert torch.equal(a, b) and torch.equal(va, vb)
    (tmp_path / "bad.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(InvalidInputError):
        load_model(tmp_path / "bad.json")
    with pytest.raises(InvalidInputError):
        load_model(tmp_path / "missing.json")
    with pytest.raises(InvalidInputError):
        make("interference", "marl", weights=tmp_path / "missing.json")


def test_env_and_marl_runs_are_deterministic():
    def trace(seed):
        env = InterferenceEnv(k=4, intervals=2)
        obs, _ = env.reset(seed=seed)
        out, done = [], False
        while not done:
            a = env.expert_action()
            obs, r, done, _, _ = env.step(a)
            out.append((a, r))
        return out

    assert trace(5) == trace(5)
    torch.manual_seed(2)
    model = InterferenceGNN(hidden=8, layers=1)
    cluster = make_cluster("fattree", 4, "pcie")
    w = Workload.generate(cluster.num_partitions, 2, "poisson", 0, rate=2.0)
    runs = [
        Simulator(cluster, w).run(MarlPolicy(model=model), seed=0, max_intervals=4)
        for _ in range(2)
    ]
    assert np.array_equal(runs[0].finish, runs[1].finish, equal_nan=True)


def test_expert_in_env_matches_tetris_in_simulator():
    """The env replays the simulator's loop: following Tetris's choices in it gives Tetris's JCTs."""
    env = InterferenceEnv(k=4, intervals=3, rate=1.5, extra_intervals=60)
    env.reset(seed=7)
    done = False
    while not done:
        _, _, done, _, _ = env.step(env.expert_action())
    ref = Simulator(env.cluster, env.workload).run(make("interference", "tetris"), seed=0)
    assert np.allclose(env.sim.finish, ref.finish, equal_nan=True)


def test_single_agent_env_places_across_partitions_without_forwarding(checked_commits):
    """The single-agent variant: one scheduler sees every GPU group of the cluster, one queue, no
    forwarding action; resources are never oversubscribed and every job finishes."""
    env = InterferenceEnv(k=4, intervals=3, rate=2.0, extra_intervals=60, single_agent=True)
    assert env.num_groups == env.cluster.num_groups
    obs, info = env.reset(seed=2)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        mask = env.action_masks()
        assert not mask[-1] or not mask[:-1].any()  # forwarding never offered
        assert info["agent"] == 0
        obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
    sim = env.sim
    assert np.isfinite(sim.finish).all() and sim.forwarded.max() == 0
    partitions = [
        len(set(env.cluster.group_partition[sim.task_group[sim.task_ptr[j] : sim.task_ptr[j + 1]]]))
        for j in range(len(env.workload))
    ]
    assert max(partitions) > 1  # random choices cross pods: no partition boundary


def test_evaluate_in_env_follows_the_greedy_policy():
    from tjap.learned.interference.train import evaluate_in_env

    torch.manual_seed(3)
    model = InterferenceGNN(hidden=8, layers=1)
    env = InterferenceEnv(k=4, intervals=2, rate=1.5, extra_intervals=60)
    a = evaluate_in_env(model, env, [4, 5])
    b = evaluate_in_env(model, env, [4, 5])
    assert a == b and all(0.0 < x < 62 for x in a)
    env = InterferenceEnv(k=4, intervals=3, rate=1.5, extra_intervals=60)
    env.reset(seed=7)
    done = False
    while not done:
        _, _, done, _, _ = env.step(env.expert_action("whole"))
    expected = float(np.mean(env.sim.finish - env.workload.arrival))
    assert evaluate_in_env("whole", env, [7]) == [pytest.approx(expected)]


def _record_observations(monkeypatch, module) -> list:
    """Patch ``module.observe`` to record every (observation, mask) it returns."""
    from tjap.learned.interference import features

    seen, original = [], features.observe

    def recording(*args):
        obs, mask = original(*args)
        seen.append((obs, mask.copy()))
        return obs, mask

    monkeypatch.setattr(module, "observe", recording)
    return seen


@pytest.mark.parametrize("single_agent", [False, True])
def test_simulator_policy_sees_exactly_the_env_observations(monkeypatch, single_agent):
    """The greedy policy of one network in the env (where it is trained) and as ``marl`` /
    ``single`` in the simulator gets the same observations and masks, decision by decision (the
    queue lengths of every scheduler and the partitions a forwarded job was offered to included),
    so both runs end with the same finish times."""
    import tjap.learned.interference.env as env_module
    from tjap.learned.interference import features
    from tjap.learned.interference.policy import SingleAgentPolicy
    from tjap.learned.interference.train import evaluate_in_env

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny networks: more threads only contend (as the CLI sets)
    torch.manual_seed(3)
    model = InterferenceGNN(hidden=16, layers=1)
    with torch.no_grad():  # forward often, so jobs visit several partitions
        model.forward_head[-1].bias.fill_(FORWARD_BIAS)
    env = InterferenceEnv(k=4, intervals=2, rate=3.0, extra_intervals=80, single_agent=single_agent)
    in_env = _record_observations(monkeypatch, env_module)
    try:
        evaluate_in_env(model, env, [4])
        in_sim = _record_observations(monkeypatch, features)
        policy = (SingleAgentPolicy if single_agent else MarlPolicy)(model=model)
        ref = Simulator(env.cluster, env.workload).run(policy, seed=0)
    finally:
        torch.set_num_threads(threads)
    assert np.isfinite(env.sim.finish).all()
    assert len(in_sim) == len(in_env) > 50
    for (a, mask_a), (b, mask_b) in zip(in_env, in_sim):
        assert np.array_equal(mask_a, mask_b)
        for key in a:
            assert np.allclose(a[key], b[key], atol=1e-6), key
    assert np.allclose(env.sim.finish, ref.finish)
    queues = np.array(
        [obs["partitions"][:, PARTITION_FEATURES.index("queue")] for obs, _ in in_env]
    )
    assert (np.count_nonzero(queues, axis=1) > 1).any()  # other schedulers' queues are seen
    if not single_agent:  # a job offered to every partition in one interval
        visited = [obs["job"][JOB_FEATURES.index("visited")] for obs, _ in in_env]
        assert max(visited) == 1.0 and ref.forwarded.max() >= 2
