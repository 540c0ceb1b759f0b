"""Seed 001's server-level learned schedulers: the network picks a server, the task goes
to a random group of it that can take it (``level="server"``, policy ``marl-server``)."""

import json

import numpy as np
import pytest
import torch

from tjap.cli import main
from tjap.core.errors import InvalidInputError
from tjap.learned.interference.env import InterferenceEnv, rule_action
from tjap.learned.interference.features import (
    NODE_FEATURES,
    PartitionGraph,
    Planning,
    choose_group,
    observe,
)
from tjap.learned.interference.nets import InterferenceGNN, to_torch
from tjap.learned.interference.policy import (
    DEFAULT_WEIGHTS,
    SERVER_WEIGHTS,
    MarlPolicy,
    ServerLevelPolicy,
    load_model,
    save_model,
)
from tjap.placement.interference import Simulator, Workload, make_cluster
from tjap.registry import make

COL = NODE_FEATURES.index


def device_view(env):
    """The device level's observation and mask of the env's current decision."""
    p = env._agent
    graph = PartitionGraph(env.cluster, p, "device")
    return graph, *observe(env.sim, env._plan, graph, p)


def test_server_graph_has_servers_and_switches_only():
    cluster = make_cluster("fattree", 4, "pcie")
    for p in range(cluster.num_partitions):
        dev, srv = PartitionGraph(cluster, p), PartitionGraph(cluster, p, "server")
        assert srv.num_actions == srv.num_servers == dev.num_servers
        assert dev.num_actions == dev.num_groups
        assert srv.num_nodes == dev.num_nodes - dev.num_groups  # no group nodes
        assert srv.edge_index.shape[1] == dev.edge_index.shape[1] - 2 * dev.num_groups
        assert np.array_equal(srv.node_server[: srv.num_servers], dev.servers)
        assert np.all(srv.node_server[srv.num_servers :] == -1)  # then the switches
        assert np.array_equal(srv.servers[srv.group_action], cluster.group_server[srv.groups])
    with pytest.raises(InvalidInputError, match="unknown level"):
        PartitionGraph(cluster, 0, "rack")
    with pytest.raises(InvalidInputError, match="unknown level"):
        InterferenceEnv(k=4, intervals=2, level="rack")


def test_check_env_server_level():
    from gymnasium.utils.env_checker import check_env

    env = InterferenceEnv(k=4, intervals=2, level="server")
    assert env.num_actions == env.cluster.num_servers // env.cluster.num_partitions
    check_env(env, skip_render_check=True)


def test_server_mask_features_and_rule_against_the_device_level(checked_commits):
    """Decision by decision of a random server-level episode: a server is allowed iff one of its
    groups can take the task, its features are the documented aggregates of its groups', and
    both rules pick the server of their device-level choice; nothing is oversubscribed."""
    env = InterferenceEnv(k=4, intervals=4, rate=3.0, extra_intervals=40, level="server")
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=3)
    done, steps = False, 0
    while not done:
        mask = env.action_masks()
        graph, dev_obs, dev_mask = device_view(env)
        S, groups = env.num_actions, graph.groups
        server_of = np.searchsorted(graph.servers, env.cluster.group_server[groups])
        feasible = dev_mask[:-1]
        expected = np.array([feasible[server_of == s].any() for s in range(S)])
        assert np.array_equal(mask[:-1], expected) and mask[-1] == dev_mask[-1]
        nodes, dev = obs["nodes"], dev_obs["nodes"]
        assert obs["nodes"].shape[0] == dev.shape[0] - len(groups)
        assert np.array_equal(nodes[S:], dev[len(groups) + S :])  # switches unchanged
        for s in range(S):
            mine = dev[: len(groups)][server_of == s]
            fs = feasible[server_of == s]
            assert nodes[s, COL("is_server")] == 1 and nodes[s, COL("is_group")] == 0
            assert nodes[s, COL("cpu_used")] == pytest.approx(mine[:, COL("cpu_used")].mean())
            assert nodes[s, COL("gpus")] == pytest.approx(mine[:, COL("gpus")].sum())
            if fs.any():
                assert nodes[s, COL("tetris_fill")] == mine[fs, COL("tetris_fill")].max()
                assert nodes[s, COL("added_slowdown")] == mine[fs, COL("added_slowdown")].min()
            ok = mine[:, COL("whole_ok")] > 0
            assert nodes[s, COL("whole_ok")] == ok.any()
            assert nodes[s, COL("whole_gap")] == (
                mine[ok, COL("whole_gap")].min() if ok.any() else 2.0
            )
        for rule in ("whole", "tetris"):
            a_dev = rule_action(dev, dev_mask, rule)
            a_srv = env.expert_action(rule)
            assert a_srv == (S if a_dev == len(groups) else server_of[a_dev])
        obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        steps += 1
    assert steps > 20 and len(checked_commits) == len(env.workload)


def test_random_group_is_a_feasible_group_of_the_server_and_seeded():
    cluster = make_cluster("fattree", 4, "pcie")
    w = Workload.generate(cluster.num_partitions, 1, "uniform", 0, rate=2.0)
    sim = Simulator(cluster, w)
    graph = PartitionGraph(cluster, 0, "server")
    first, second = graph.groups[0], graph.groups[1]  # the first server's two groups
    assert cluster.group_server[first] == cluster.group_server[second]
    job = next(j for j in range(len(w)) if sim.task_demands(j)[0][0] >= 1)  # a worker first
    plan = Planning(sim, 0)
    plan.start(sim, job)

    def draws(seed, n=40):
        rng = np.random.default_rng(seed)
        return [choose_group(sim, plan, graph, 0, rng) for _ in range(n)]

    both = draws(5)
    assert set(both) == {first, second} and draws(5) == both and draws(6) != both
    plan.gpu_free[first] = 0  # the first group cannot take a worker now
    assert set(draws(5)) == {second}
    plan.gpu_free[second] = 0
    with pytest.raises(InvalidInputError, match="no group"):
        draws(5, 1)


def test_marl_server_in_simulator_replays_the_env(monkeypatch, checked_commits):
    """The greedy policy of one network in the server-level env and as ``marl-server`` in the
    simulator (seeded with the workload's seed, as the env's group generator) draw the same
    groups: same finish times, nothing oversubscribed; runs are deterministic by seed."""
    from tjap.learned.interference.train import evaluate_in_env

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(4)
        model = InterferenceGNN(hidden=16, layers=1)
        env = InterferenceEnv(k=4, intervals=2, rate=3.0, extra_intervals=80, level="server")
        evaluate_in_env(model, env, [4])
        sims = [Simulator(env.cluster, env.workload) for _ in range(3)]
        seeds = [env.workload.seed, env.workload.seed, env.workload.seed + 1]
        runs = [
            sim.run(ServerLevelPolicy(model=model), seed=seed) for sim, seed in zip(sims, seeds)
        ]
    finally:
        torch.set_num_threads(threads)
    assert np.isfinite(env.sim.finish).all()
    assert np.allclose(env.sim.finish, runs[0].finish)
    assert np.array_equal(env.sim.task_group, sims[0].task_group)  # the same random groups
    assert np.array_equal(runs[0].finish, runs[1].finish)
    assert not np.array_equal(sims[0].task_group, sims[2].task_group)  # another seed, others
    assert len(checked_commits) == 4 * len(env.workload)
    assert runs[0].info["decisions"] > 20


def test_save_load_round_trip_and_level_mismatch(tmp_path):
    torch.manual_seed(1)
    model = InterferenceGNN(hidden=16, layers=2)
    save_model(model, tmp_path / "s", {"what": "test"}, level="server")
    assert json.loads((tmp_path / "s.json").read_text())["level"] == "server"
    loaded, meta = load_model(tmp_path / "s.json", level="server")
    env = InterferenceEnv(k=4, intervals=2, level="server")
    obs, _ = env.reset(seed=0)
    a, va = model(to_torch([obs]), env.num_actions)
    b, vb = loaded(to_torch([obs]), env.num_actions)
    assert a.shape == (1, env.num_actions + 1) and torch.equal(a, b) and torch.equal(va, vb)
    with pytest.raises(InvalidInputError, match="server-level weights, not device-level"):
        load_model(tmp_path / "s.json", level="device")
    with pytest.raises(InvalidInputError, match="server-level weights"):
        MarlPolicy(weights=tmp_path / "s.json")
    with pytest.raises(InvalidInputError, match="device-level weights, not server-level"):
        ServerLevelPolicy(weights=DEFAULT_WEIGHTS)
    with pytest.raises(InvalidInputError, match="unknown level"):
        save_model(model, tmp_path / "x", {}, level="rack")


def test_shipped_server_weights_load_with_their_metadata():
    policy = make("interference", "marl-server")
    assert policy.name == "marl-server" and policy.meta["level"] == "server"
    training = policy.meta["training"]
    assert training["level"] == "server" and training["seed"] == 0
    assert "--level server" in training["command"]
    assert SERVER_WEIGHTS.with_suffix(".pt").stat().st_size < 300_000


def test_cli_marl_server(capsys):
    base = ["interference", "evaluate", "--k", "4", "--intervals", "2", "--seed", "1"]
    assert main([*base, "--policy", "marl-server", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "marl-server" and out["completed"] == out["jobs"] > 0
    assert main([*base, "--policy", "marl-server", "--weights", str(DEFAULT_WEIGHTS)]) == 2
    err = capsys.readouterr().err
    assert "device-level weights, not server-level" in err and "Traceback" not in err
