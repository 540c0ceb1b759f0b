"""The NSA pieces: environment, features, networks, save/load, the learned repair inside the SA
loop, and a tiny training run (a few hundred steps; real training never runs in CI)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from stable_baselines3.common.env_checker import check_env  # noqa: E402

import tjap  # noqa: E402
from learned.envs import NSARepairEnv  # noqa: E402
from learned.features import feature_spec, spec_hash  # noqa: E402
from learned.nets import ARCHS, count_parameters  # noqa: E402
from learned.nsa import LearnedRepair  # noqa: E402
from learned.policy_io import build_policy, load_policy, save_policy  # noqa: E402
from tjap.stream import generate_windows  # noqa: E402


@pytest.fixture(scope="module")
def windows():
    return generate_windows("published", 6, seed=3, num_jobs=3000, convention="published")


@pytest.fixture(scope="module")
def saved_policy(tmp_path_factory):
    spec = feature_spec()
    policy = build_policy("cnn1", spec)
    path = tmp_path_factory.mktemp("w") / "tiny"
    save_policy(policy, path, arch="cnn1", spec=spec, training={"seed": 0, "timesteps": 0})
    return path, policy


@pytest.mark.parametrize("idle_flag", [False, True])
def test_env_passes_check_env(windows, idle_flag):
    check_env(NSARepairEnv(windows, idle_flag=idle_flag), warn=False)


def test_masked_actions_never_taken_and_reward_is_minus_cost(windows):
    env = NSARepairEnv(windows)
    rng = np.random.default_rng(0)
    for episode in range(200):
        obs, _ = env.reset(seed=episode)
        done = False
        while not done:
            mask = env.action_masks()
            assert mask.any() and obs.shape == env.observation_space.shape
            assert np.all(obs[:, ~mask] == 0)                 # masked positions carry no state
            assert mask.sum() == min(env.q, env.length)
            action = int(rng.choice(np.flatnonzero(mask)))
            obs, reward, done, _, info = env.step(action)
        assert reward == pytest.approx(-info["cost"] / env.reward_scale)
        assert info["cost"] > 0


def test_a_masked_action_is_refused(windows):
    env = NSARepairEnv(windows, q=100)
    env.reset(seed=0)
    masked = np.flatnonzero(~env.action_masks())
    if masked.size:
        with pytest.raises(tjap.InvalidInputError, match="masked"):
            env.step(int(masked[0]))


def test_env_is_deterministic_by_seed(windows):
    a, b = NSARepairEnv(windows), NSARepairEnv(windows)
    for s in range(20):
        oa, _ = a.reset(seed=s)
        ob, _ = b.reset(seed=s)
        assert np.array_equal(oa, ob)


def test_env_bad_arguments(windows):
    with pytest.raises(tjap.InvalidInputError):
        NSARepairEnv([])
    with pytest.raises(tjap.InvalidInputError, match="reward"):
        NSARepairEnv(windows, reward="nope")


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_every_table2_architecture_builds(arch):
    policy = build_policy(arch, feature_spec())
    assert count_parameters(policy) > 1000


def test_save_load_predict_round_trip(saved_policy, windows):
    path, policy = saved_policy
    loaded, meta = load_policy(path.with_suffix(".json"))
    assert meta["architecture"] == "cnn1"
    assert meta["feature_spec_hash"] == spec_hash(feature_spec())
    assert "torch" in meta["versions"]
    env = NSARepairEnv(windows)
    for s in range(10):
        obs, _ = env.reset(seed=s)
        mask = env.action_masks()
        a1, _ = policy.predict(obs, action_masks=mask, deterministic=True)
        a2, _ = loaded.predict(obs, action_masks=mask, deterministic=True)
        assert int(a1) == int(a2) and mask[int(a1)]


def test_load_refuses_mismatch(saved_policy, tmp_path):
    path, _ = saved_policy
    with pytest.raises(tjap.InvalidInputError, match="trained on features"):
        load_policy(path.with_suffix(".json"), expect_spec=feature_spec(q=50))
    meta = json.loads(path.with_suffix(".json").read_text())
    meta["feature_spec"]["q"] = 7
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(meta))
    with pytest.raises(tjap.InvalidInputError, match="hash"):
        load_policy(edited)
    with pytest.raises(tjap.InvalidInputError, match="no policy metadata"):
        load_policy(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(tjap.InvalidInputError, match="not valid JSON"):
        load_policy(bad)


def test_nsa_through_solve_is_feasible_and_uses_the_policy(saved_policy, windows):
    path, _ = saved_policy
    for w in windows[:3]:
        r = tjap.solve(w, "nsa", weights=path.with_suffix(".json"), iterations=40,
                       convention="published", seed=1)
        assert r.is_feasible() and r.method == "nsa"
        assert r.objective <= r.info["initial_cost"] + 1e-9
        assert r.objective == pytest.approx(tjap.assignment_cost(w.topology, r.assignment, "published"))
        again = tjap.solve(w, "nsa", weights=path.with_suffix(".json"), iterations=40,
                           convention="published", seed=1)
        assert again.assignment == r.assignment


def test_learned_repair_is_called_back_by_the_loop(saved_policy, windows):
    from heuristics.anneal import anneal

    path, _ = saved_policy
    repair = LearnedRepair.load(path.with_suffix(".json"))
    before = repair.calls[0]
    anneal(windows[0], iterations=30, repair=repair, convention="published")
    assert repair.calls[0] - before >= 30  # at least one re-inserted job per move


def test_tiny_training_run(tmp_path, windows):
    from learned.train import train_nsa

    out = train_nsa("cnn1", timesteps=256, seed=0, out=tmp_path / "t", num_windows=4, quiet=True,
                    ppo={"n_steps": 128, "batch_size": 64, "n_epochs": 1})
    meta = json.loads((tmp_path / "t.json").read_text())
    assert meta["training"]["timesteps"] == 256 and meta["training"]["seed"] == 0
    load_policy(tmp_path / "t.json")
    assert (tmp_path / "t.pt").stat().st_size < 2_000_000
    assert out["curve"].endswith("t_curve.csv")


def test_sampled_nsa_is_seeded_and_feasible(saved_policy, windows):
    path, _ = saved_policy
    w = windows[1]
    a = tjap.solve(w, "nsa", weights=path.with_suffix(".json"), iterations=60, sample=True,
                   convention="published", seed=3)
    b = tjap.solve(w, "nsa", weights=path.with_suffix(".json"), iterations=60, sample=True,
                   convention="published", seed=3)
    assert a.is_feasible() and a.assignment == b.assignment
