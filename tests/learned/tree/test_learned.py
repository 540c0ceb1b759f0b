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
from tjap.learned.policy_io import spec_hash  # noqa: E402
from tjap.learned.tree.env import NSARepairEnv  # noqa: E402
from tjap.learned.tree.features import feature_spec  # noqa: E402
from tjap.learned.tree.nets import ARCHS, count_parameters  # noqa: E402
from tjap.learned.tree.policy import LearnedRepair, build_policy, load_policy  # noqa: E402
from tjap.learned.tree.train import save_policy  # noqa: E402
from tjap.placement.tree.stream import generate_windows  # noqa: E402


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
            assert np.all(obs[:, ~mask] == 0)  # masked positions carry no state
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
    with pytest.raises(tjap.InvalidInputError, match="no NSA policy metadata"):
        load_policy(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(tjap.InvalidInputError, match="not valid JSON"):
        load_policy(bad)


def test_nsa_through_solve_is_feasible_and_uses_the_policy(saved_policy, windows):
    path, _ = saved_policy
    for w in windows[:3]:
        r = tjap.solve(
            w,
            "nsa",
            weights=path.with_suffix(".json"),
            iterations=40,
            convention="published",
            seed=1,
        )
        assert r.is_feasible() and r.method == "nsa"
        assert r.objective <= r.info["initial_cost"] + 1e-9
        assert r.objective == pytest.approx(
            tjap.assignment_cost(w.topology, r.assignment, "published")
        )
        again = tjap.solve(
            w,
            "nsa",
            weights=path.with_suffix(".json"),
            iterations=40,
            convention="published",
            seed=1,
        )
        assert again.assignment == r.assignment


#: solve_nsa's loop options before it had presets: the paper's Table I.
NSA_PAPER_LOOP = dict(
    iterations=500, max_remove=2, t_max=2500.0, t_min=2.5, reinsert="largest-first", initial="seq"
)


def _same_result(a, b):
    assert a.assignment == b.assignment and a.objective == b.objective
    assert a.info["order"] == b.info["order"] and a.info["starts"] == b.info["starts"]
    assert a.iterations == b.iterations


@pytest.mark.parametrize(
    "preset, loop",
    [
        ("paper", NSA_PAPER_LOOP),
        ("published", {**NSA_PAPER_LOOP, "t_max": 25000.0, "reinsert": "window-order"}),
    ],
)
def test_nsa_presets_are_the_loops_of_the_sa_presets(saved_policy, windows, preset, loop):
    from tjap.heuristics.tree.anneal import SA_PRESETS
    from tjap.learned.tree.policy import NSA_PRESETS

    assert NSA_PRESETS[preset] == loop
    assert all(SA_PRESETS[preset][k] == v for k, v in loop.items())
    path, _ = saved_policy
    w = windows[2]
    weights = path.with_suffix(".json")
    short = {**loop, "iterations": 60}
    r = tjap.solve(
        w, "nsa", weights=weights, preset=preset, iterations=60, seed=5, convention="published"
    )
    _same_result(r, tjap.solve(w, "nsa", weights=weights, seed=5, convention="published", **short))
    if preset == "paper":  # the default of weights not trained in the best loop
        _same_result(
            r, tjap.solve(w, "nsa", weights=weights, iterations=60, seed=5, convention="published")
        )
    else:  # explicit options override the default preset
        _same_result(
            r,
            tjap.solve(
                w,
                "nsa",
                weights=weights,
                iterations=60,
                t_max=25000.0,
                reinsert="window-order",
                seed=5,
                convention="published",
            ),
        )


@pytest.mark.parametrize("preset", ["fast", ""])
def test_nsa_unknown_preset_is_a_one_line_error(saved_policy, windows, preset):
    path, _ = saved_policy
    with pytest.raises(tjap.InvalidInputError) as info:
        tjap.solve(windows[0], "nsa", weights=path.with_suffix(".json"), preset=preset)
    assert "\n" not in str(info.value) and "paper, published, best" in str(info.value)
    # preset "best" only for weights trained in its loop: tests/learned/tree/test_nsa_training.py


def test_nsa_documents_every_option():
    import inspect

    from tjap.learned.tree.policy import solve_nsa

    doc = inspect.getdoc(solve_nsa)
    params = doc.split("Parameters\n----------\n")[1].split("\n\n")[0]
    documented = {
        name.strip()
        for line in params.splitlines()
        if " : " in line and not line.startswith(" ")
        for name in line.split(" : ")[0].split(",")
    }
    assert documented == set(inspect.signature(solve_nsa).parameters)


def test_learned_repair_is_a_network_the_loop_runs(saved_policy, windows):
    """No callback: the loop gets the actor's arrays, its kind chosen by type (the forward pass
    and the trajectory against torch: tests/heuristics/tree/test_nsa_numba.py)."""
    from tjap.heuristics.tree import _kernels
    from tjap.placement.tree.dcas import Arrays

    path, _ = saved_policy
    repair = LearnedRepair.load(path.with_suffix(".json"))
    argument = repair.kernel_argument(windows[0], Arrays(windows[0]))
    assert isinstance(argument, tuple) and len(argument) == 7
    assert all(isinstance(part, np.ndarray) for part in argument)
    assert not hasattr(_kernels, "LEARNED_REPAIR") and not hasattr(_kernels, "LEARNED_DEADLINE")


def test_tiny_training_run(tmp_path, windows):
    from tjap.learned.tree.train import train_nsa

    out = train_nsa(
        "cnn1",
        timesteps=256,
        seed=0,
        out=tmp_path / "t",
        num_windows=4,
        quiet=True,
        ppo={"n_steps": 128, "batch_size": 64, "n_epochs": 1},
    )
    meta = json.loads((tmp_path / "t.json").read_text())
    assert meta["training"]["timesteps"] == 256 and meta["training"]["seed"] == 0
    load_policy(tmp_path / "t.json")
    assert (tmp_path / "t.pt").stat().st_size < 2_000_000
    assert meta["inference_file"] == "t.npz" and LearnedRepair.load(tmp_path / "t.json").q == 100
    assert out["curve"].endswith("t_curve.csv")


def test_sampled_nsa_is_seeded_and_feasible(saved_policy, windows):
    path, _ = saved_policy
    w = windows[1]
    a = tjap.solve(
        w,
        "nsa",
        weights=path.with_suffix(".json"),
        iterations=60,
        sample=True,
        convention="published",
        seed=3,
    )
    b = tjap.solve(
        w,
        "nsa",
        weights=path.with_suffix(".json"),
        iterations=60,
        sample=True,
        convention="published",
        seed=3,
    )
    assert a.is_feasible() and a.assignment == b.assignment


# -- imitation warm start (tjap.learned.tree.imitation) ---------------------------------------------------


def _brute_force_cheapest_valid_block(env):
    """The cheapest block among the valid starts, each block's node set costed on its own."""
    from tree_cost_oracle import fat_tree_cost

    a, length = env.a, env.length
    size = int(a.sizes[env.order[env.step_index]])
    alive = env.alive[:length]
    mask = env.action_masks()
    costs = []
    for start in np.flatnonzero(mask):
        block = alive[(start + np.arange(size)) % length]  # wraps to the head of Q
        costs.append(fat_tree_cost(a.switch_q[block], a.pod_q[block], env.code))
    return int(np.flatnonzero(mask)[int(np.argmin(costs))]), float(min(costs))


@pytest.mark.parametrize("q", [7, 100])
def test_expert_action_is_the_cheapest_valid_block(windows, q):
    from tjap.learned.tree.imitation import expert_action, expert_block_costs

    env = NSARepairEnv(windows, q=q)
    for episode in range(40):
        env.reset(seed=episode)
        done = False
        while not done:
            best, cost = _brute_force_cheapest_valid_block(env)
            costs = expert_block_costs(env)
            assert expert_action(env) == best
            assert costs[best] == pytest.approx(cost)
            assert np.all(np.isinf(costs[~env.action_masks()]))
            _, _, done, _, _ = env.step(best)


def test_soft_targets():
    from tjap.learned.tree.imitation import soft_targets

    costs = np.array([[3.0, 1.0, 1.0, np.inf]])
    assert soft_targets(costs, 0.0).tolist() == [[0.0, 1.0, 0.0, 0.0]]  # ties to the lowest
    p = soft_targets(costs, 1.0)[0]
    assert p.sum() == pytest.approx(1.0) and p[3] == 0.0 and p[1] == p[2] > p[0]


@pytest.mark.parametrize("temperature", [0.0, 300.0])
def test_demonstrations_and_behaviour_cloning_lower_the_loss(windows, temperature):
    from tjap.learned.tree.imitation import bc_losses, behaviour_clone, collect_demonstrations

    env = NSARepairEnv(windows)
    demos = collect_demonstrations(env, 200, seed=0, temperature=temperature)
    assert len(demos) >= 200 and demos.episodes > 0
    assert demos.obs.shape == (len(demos),) + env.observation_space.shape
    assert np.all(demos.masks[np.arange(len(demos)), demos.actions])
    assert np.all(demos.returns < 0)
    again = collect_demonstrations(NSARepairEnv(windows), 200, seed=0, temperature=temperature)
    assert np.array_equal(demos.obs, again.obs) and np.array_equal(demos.actions, again.actions)

    import torch

    torch.manual_seed(0)
    policy = build_policy("cnn1", feature_spec())
    before = bc_losses(policy, demos, temperature=temperature)
    history = behaviour_clone(
        policy, demos, epochs=4, batch_size=64, learning_rate=3e-3, temperature=temperature, seed=0
    )
    after = bc_losses(policy, demos, temperature=temperature)
    assert len(history) == 4 and after["loss"] < before["loss"]
    assert after["actor_ce"] < before["actor_ce"]


def test_behaviour_cloning_is_reproducible(windows):
    import torch

    from tjap.learned.tree.imitation import behaviour_clone, collect_demonstrations

    demos = collect_demonstrations(NSARepairEnv(windows), 100, seed=1)
    states = []
    for _ in range(2):
        torch.manual_seed(0)
        policy = build_policy("cnn1", feature_spec())
        behaviour_clone(policy, demos, epochs=2, batch_size=32, seed=5)
        states.append(policy.state_dict())
    assert all(torch.equal(states[0][key], states[1][key]) for key in states[0])


def test_imitation_bad_arguments(windows):
    from tjap.learned.tree.imitation import collect_demonstrations

    with pytest.raises(tjap.InvalidInputError, match="expert"):
        collect_demonstrations(NSARepairEnv(windows), 10, expert="oracle")
    with pytest.raises(tjap.InvalidInputError, match="at least one step"):
        collect_demonstrations(NSARepairEnv(windows), 0)


def test_tiny_training_run_with_imitation(tmp_path):
    from tjap.learned.tree.train import train_nsa

    out = train_nsa(
        "cnn1",
        timesteps=128,
        seed=0,
        out=tmp_path / "t",
        num_windows=4,
        quiet=True,
        ppo={"n_steps": 128, "batch_size": 64, "n_epochs": 1},
        imitation_steps=150,
        imitation_epochs=2,
        imitation_temperature=300.0,
    )
    meta = json.loads((tmp_path / "t.json").read_text())
    im = meta["training"]["imitation"]
    assert im["steps"] == 150 and im["epochs"] == 2 and im["expert"] == "greedy-within-q"
    assert im["temperature"] == 300.0 and im["collected_steps"] >= 150
    assert len(im["train_loss"]) == 2 and out["imitation"] == im
    assert meta["training"]["timesteps"] == 128
    assert meta["training"]["algorithm"] == "behaviour cloning + MaskablePPO"
    load_policy(tmp_path / "t.json")
    import csv

    with open(out["curve"]) as f:
        stages = [row["stage"] for row in csv.DictReader(f)]
    assert stages[:2] == ["imitation", "imitation"] and stages[2:] == ["ppo"] * (len(stages) - 2)

    only = train_nsa(
        "cnn1",
        timesteps=0,
        seed=0,
        out=tmp_path / "bc",
        num_windows=4,
        quiet=True,
        imitation_steps=50,
        imitation_epochs=1,
    )
    assert json.loads((tmp_path / "bc.json").read_text())["training"]["timesteps"] == 0
    assert only["imitation"]["targets"] == "hard"
    with pytest.raises(tjap.InvalidInputError, match="nothing to train"):
        train_nsa("cnn1", timesteps=0, out=tmp_path / "none", num_windows=4, quiet=True)


def test_cli_train_parser_has_imitation_options():
    from tjap.cli import build_parser

    args = build_parser().parse_args(
        [
            "train",
            "nsa",
            "--timesteps",
            "0",
            "--imitation-steps",
            "1000",
            "--imitation-temperature",
            "300",
            "--clip-range",
            "0.1",
        ]
    )
    assert args.timesteps == 0 and args.imitation_steps == 1000
    assert args.imitation_temperature == 300.0 and args.clip_range == 0.1
