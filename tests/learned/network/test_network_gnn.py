"""Seed 003's learned allocator: the environment (check_env, the episode it plays matches
run_episode), the feature kernel against a plain-Python reference, the GraphSAGE network
(size-agnostic, masked, deterministic, save/load round trip), the shipped weights and the CLI."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from tjap.core.errors import InvalidInputError  # noqa: E402
from tjap.learned.network import nets as gnn  # noqa: E402
from tjap.learned.network.env import NetworkAllocEnv  # noqa: E402
from tjap.learned.network.features import NODE_FEATURES, FeatureBuilder  # noqa: E402
from tjap.learned.network.nets import GraphSAGEAllocator, load, save  # noqa: E402
from tjap.learned.network.policy import GNNPolicy  # noqa: E402
from tjap.placement.network import (  # noqa: E402
    DataCentre,
    Engine,
    Outcome,
    Requests,
    evaluate,
    paper_topology,
    run_episode,
)


def tiny(channels=(2, 2, 1)) -> DataCentre:
    return DataCentre(
        clusters=2,
        racks_per_cluster=2,
        servers_per_rack=2,
        tier2_per_cluster=2,
        tier3_switches=2,
        channels=channels,
        server_cpu=4,
        server_mem=4,
    )


class Checked:
    """Wraps a policy and checks each choice is one the engine's mask allows."""

    def __init__(self, policy):
        self.policy, self.name, self.routing = policy, policy.name, policy.routing
        self.choices = 0

    def reset(self, topology, seed):
        self.policy.reset(topology, seed)

    def choose(self, engine):
        server = self.policy.choose(engine)
        assert isinstance(server, int) and engine.mask()[server]
        self.choices += 1
        return server


# -- environment ---------------------------------------------------------------------------------
def test_env_passes_check_env():
    from stable_baselines3.common.env_checker import check_env

    check_env(NetworkAllocEnv(["8:1-16", "32:1-4"], requests=6), warn=False)
    check_env(NetworkAllocEnv(tiny(), requests=5), warn=False)


def test_env_plays_the_episode_loop():
    """Taking a policy's choices in the env gives the same outcomes as run_episode with it."""
    topology = paper_topology("8:1-8", 64)
    env = NetworkAllocEnv(topology, requests=20)
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    policy = GNNPolicy()
    policy.reset(topology, 0)
    rewards, done = [], False
    while not done:
        mask = env.action_masks()
        action = policy.choose(env.engine)
        assert mask[action]
        obs, reward, done, truncated, info = env.step(action)
        assert not truncated and env.observation_space.contains(obs)
        rewards.append(reward)
    assert set(rewards) <= {0.0, 10.0, -10.0}
    accepted = rewards.count(10.0)
    assert accepted + rewards.count(-10.0) == 20 == info["request"]
    result = run_episode(topology, env.stream, policy)
    assert result.accepted.sum() == accepted == info["accepted"]
    assert result.steps == len(rewards)


def test_env_forbidden_action_fails_the_request():
    env = NetworkAllocEnv(tiny(), requests=3)
    env.reset(seed=0)
    chosen = int(np.flatnonzero(env.action_masks())[0])
    _, reward, _, _, info = env.step(chosen)
    assert reward == 0.0  # still pending: the same server again is forbidden -> failure
    _, reward, _, _, info = env.step(chosen)
    assert reward == -10.0 and info["request"] == 1
    held = env.engine.held()  # the failed request holds nothing
    assert (held["cpu"] + env.engine.free_cpu == 4).all()
    assert (held["channels"] + env.engine.free_channels == tiny().link_capacity).all()
    with pytest.raises(InvalidInputError, match="same servers and switches"):
        NetworkAllocEnv([paper_topology("8:1-16", 64), tiny()])


# -- features ------------------------------------------------------------------------------------
def reference_connectable(engine: Engine) -> np.ndarray:
    """Plain Python: servers the engine would take as the next pick (tried on a copy)."""
    out = np.zeros(engine.topology.num_servers, bool)
    for v in np.flatnonzero(engine.mask()):
        out[v] = copy.deepcopy(engine).step(int(v)) != Outcome.FAILED
    return out


@pytest.mark.parametrize("seed", range(4))
def test_features_match_a_reference(seed):
    topology = tiny()
    engine = Engine(topology)
    rng = np.random.default_rng(seed)
    builder = FeatureBuilder(topology)
    col = {name: i for i, name in enumerate(NODE_FEATURES)}
    for _request in range(12):
        cpu, mem = int(rng.integers(1, 20)), int(rng.integers(1, 20))
        while not engine.fits(cpu, mem):
            engine.advance(1)
        engine.begin(cpu, mem, int(rng.integers(1, 5)))
        outcome = Outcome.PENDING
        while outcome == Outcome.PENDING:
            obs = builder.observe(engine)
            n = topology.num_servers
            assert obs.shape == (topology.graph.number_of_nodes() + 1, len(NODE_FEATURES))
            np.testing.assert_allclose(obs[:n, col["free_cpu"]], engine.free_cpu / 4)
            np.testing.assert_allclose(
                obs[:n, col["give_mem"]], np.minimum(engine.free_mem, engine.need_mem) / 4
            )
            np.testing.assert_allclose(
                obs[:n, col["up_free_frac"]], engine.free_channels[:n] / topology.link_capacity[:n]
            )
            chosen = np.zeros(n, bool)
            chosen[engine.chosen] = True
            assert (obs[:n, col["chosen"]] == chosen).all()
            assert (obs[:n, col["connectable"]] == reference_connectable(engine)).all()
            assert (obs[n:-1, col["is_server"]] == 0).all() and (
                obs[:n, col["is_server"]] == 1
            ).all()
            mask = engine.mask()
            outcome = engine.step(int(rng.choice(np.flatnonzero(mask))))
        engine.advance(1)


# -- network -------------------------------------------------------------------------------------
def test_same_weights_run_on_64_and_1024_servers():
    torch.manual_seed(0)
    net = GraphSAGEAllocator(topology=paper_topology("8:1-16", 64))
    for servers in (64, 1024):
        t = paper_topology("16:1-8", servers)
        net.set_topology(t)
        engine = Engine(t)
        engine.begin(40, 30, 5)
        engine.step(3)
        obs = torch.from_numpy(FeatureBuilder(t).observe(engine))[None]
        logits, value = net(obs)
        assert logits.shape == (1, servers) and value.shape == (1, 1)
        assert torch.isfinite(logits).all()
    with pytest.raises(InvalidInputError, match="observation batch"):
        net(torch.zeros(1, 10, 16))


def test_adjacency_is_row_normalised():
    t = paper_topology("8:1-16", 64)
    a = gnn.adjacency(t).to_dense()
    assert torch.allclose(a.sum(1), torch.ones(a.shape[0]))
    assert ((a > 0) == (a.T > 0)).all()
    assert int((a > 0).sum()) == 2 * t.num_links


def test_save_load_round_trip(tmp_path):
    torch.manual_seed(1)
    t = paper_topology("8:1-4", 64)
    net = GraphSAGEAllocator(topology=t)
    weights, meta = save(
        net, tmp_path / "g", arch={}, routing="balanced", training={"algorithm": "none (test)"}
    )
    again, info = load(meta, topology=t)
    assert info["routing"] == "balanced" and info["training"]["algorithm"] == "none (test)"
    obs = torch.rand(3, t.graph.number_of_nodes() + 1, 16)
    for a, b in zip(net(obs), again(obs)):
        assert torch.equal(a, b)
    policy = GNNPolicy(meta)
    assert policy.routing == "balanced"
    broken = json.loads(meta.read_text())
    broken["feature_spec"]["version"] = 0
    (tmp_path / "h.json").write_text(json.dumps(broken))
    with pytest.raises(InvalidInputError, match="another feature layout"):
        load(tmp_path / "h.json")
    with pytest.raises(InvalidInputError, match="no network GNN metadata"):
        load(tmp_path / "missing.json")


def test_ppo_plumbing_takes_a_few_steps():
    from sb3_contrib import MaskablePPO

    from tjap.learned.network.nets import GNNMaskablePolicy

    env = NetworkAllocEnv(tiny(), requests=4)
    model = MaskablePPO(
        GNNMaskablePolicy,
        env,
        policy_kwargs={"topology": tiny()},
        n_steps=32,
        batch_size=16,
        n_epochs=1,
        seed=0,
        device="cpu",
    )
    before = [p.detach().clone() for p in model.policy.net.parameters()]
    model.learn(64)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.policy.net.parameters()))
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(action)]


# -- the shipped policy --------------------------------------------------------------------------
@pytest.mark.parametrize("servers, requests", [(64, 40), (1024, 24)])
def test_gnn_chooses_only_allowed_servers_and_is_deterministic(servers, requests):
    t = paper_topology("8:1-16", servers)
    reqs = Requests.generate(t, requests, seed=2)
    checked = Checked(GNNPolicy())
    first = run_episode(t, reqs, checked)
    again = run_episode(t, reqs, GNNPolicy())
    assert checked.choices == first.steps > requests
    assert (first.accepted == again.accepted).all() and first.steps == again.steps
    if servers == 64:  # sampling is seeded too
        sampled = [run_episode(t, reqs, GNNPolicy(sample=True), seed=5) for _ in range(2)]
        assert (sampled[0].accepted == sampled[1].accepted).all()
        assert sampled[0].steps == sampled[1].steps


def test_shipped_weights_metadata():
    meta = json.loads(gnn.DEFAULT_WEIGHTS.read_text())
    assert "MaskablePPO" in meta["training"]["algorithm"]
    assert meta["training"]["command"].startswith("python -m tjap.learned.network.train")
    assert gnn.DEFAULT_WEIGHTS.with_suffix(".pt").stat().st_size < 300_000


def test_shipped_gnn_beats_tetris_on_a_constrained_topology():
    from tjap.registry import make

    t = paper_topology("8:1-16", 64)
    ours = evaluate(t, lambda: make("network", "gnn"), requests=64, seeds=2)
    theirs = evaluate(t, lambda: make("network", "tetris"), requests=64, seeds=2)
    assert ours.acceptance > theirs.acceptance


def test_cli_gnn(capsys):
    from tjap.cli import main

    assert (
        main(
            [
                "network",
                "evaluate",
                "--topology",
                "16:1-4",
                "--policy",
                "gnn",
                "--requests",
                "16",
                "--seeds",
                "1",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "gnn" and 0 <= out["acceptance"] <= 1
    assert (
        main(
            [
                "network",
                "evaluate",
                "--policy",
                "tetris",
                "--weights",
                "x.json",
                "--requests",
                "4",
                "--seeds",
                "1",
            ]
        )
        == 2
    )
    assert "unknown option 'weights'" in capsys.readouterr().err
    assert (
        main(
            [
                "network",
                "evaluate",
                "--policy",
                "gnn",
                "--weights",
                "nope.json",
                "--requests",
                "4",
                "--seeds",
                "1",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "metadata" in err and "nope.json" in err and len(err.strip().splitlines()) == 1


def test_ppo_validation_keeps_the_best_check(tmp_path, monkeypatch):
    """With validate_every_s, PPO saves the weights of the best validation check: here the fake
    validation ranks the start best, so the saved weights are the initial ones."""
    from tjap.learned.network import imitation
    from tjap.learned.network.train import train_network

    means = iter([0.9, 0.2, 0.1, 0.1, 0.1, 0.1])
    monkeypatch.setattr(imitation, "validate", lambda net, topologies: {"mean": next(means)})
    init = tmp_path / "init"
    net = GraphSAGEAllocator(**gnn.ARCH)
    save(net, init, arch=gnn.ARCH, routing="shortest", training={"what": "random init"})
    out = train_network(
        ["8:1-16"],
        timesteps=64,
        requests=4,
        seed=0,
        out=tmp_path / "ppo",
        ppo={"n_steps": 32, "batch_size": 16, "n_epochs": 1, "learning_rate": 1e-2},
        eval_seeds=0,
        quiet=True,
        init=init.with_suffix(".json"),
        validate_every_s=1e-9,
    )
    saved, meta = load(out["weights"])
    checks = meta["training"]["validation"]["checks"]
    assert [c["timesteps"] for c in checks] == [0, 32, 64, 64]
    assert meta["training"]["validation"]["chosen_timesteps"] == 0
    for a, b in zip(net.state_dict().values(), saved.state_dict().values()):
        assert torch.equal(a, b)
