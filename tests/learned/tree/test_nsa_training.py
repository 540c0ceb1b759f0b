"""Training NSA in the best SA loop: the look-ahead expert against a brute
force, the environment's warm-up repair, ``preset="best"`` only for weights trained in that loop,
and the training options recorded in the metadata (tiny runs only; real training never runs here).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

import tjap  # noqa: E402
from tjap.learned.tree.env import NSARepairEnv  # noqa: E402
from tjap.learned.tree.features import feature_spec  # noqa: E402
from tjap.learned.tree.policy import build_policy  # noqa: E402
from tjap.learned.tree.train import save_policy  # noqa: E402
from tjap.placement.tree.stream import generate_windows  # noqa: E402


@pytest.fixture(scope="module")
def small_windows():
    """Windows of 3-5 jobs on at most 110 idle nodes: small enough for the brute force."""
    ws = generate_windows("published", 40, seed=3, num_jobs=3000, convention="published")
    picked = [w for w in ws if w.num_idle <= 110 and w.num_jobs >= 3]
    assert len(picked) >= 6
    return picked


def _brute_force_totals(env):
    """For each valid start: the cost of the current job's block there plus those of the later
    removed jobs, each then put at its cheapest block over the whole sequence (first of equal
    ones), every block costed on its own node set."""
    from tree_cost_oracle import fat_tree_cost

    a = env.a
    sizes = [int(a.sizes[j]) for j in env.order[env.step_index :]]

    def cost(nodes):
        return fat_tree_cost(a.switch_q[nodes], a.pod_q[nodes], env.code)

    def take(alive, start, size):
        idx = [(start + i) % len(alive) for i in range(size)]
        return [alive[i] for i in idx], [p for i, p in enumerate(alive) if i not in set(idx)]

    totals = []
    for start in np.flatnonzero(env.action_masks()):
        block, alive = take(list(env.alive[: env.length]), int(start), sizes[0])
        total = cost(block)
        for size in sizes[1:]:
            costs = [cost(take(alive, s, size)[0]) for s in range(len(alive))]
            block, alive = take(alive, int(np.argmin(costs)), size)
            total += cost(block)
        totals.append(total)
    return np.array(totals)


@pytest.mark.parametrize("q", [7, 100])
def test_lookahead_expert_is_the_argmin_of_its_total_by_brute_force(small_windows, q):
    from tjap.learned.tree.imitation import expert_action, expert_scores

    env = NSARepairEnv(small_windows, q=q, max_remove=5, reinsert="largest-first")
    steps_with_rest = 0
    for episode in range(25):
        env.reset(seed=episode)
        done = False
        while not done:
            mask = env.action_masks()
            scores = expert_scores(env, "lookahead")
            brute = _brute_force_totals(env)
            assert scores[mask] == pytest.approx(brute)
            assert np.all(np.isinf(scores[~mask]))
            action = expert_action(env, "lookahead")
            assert mask[action] and brute[action] == pytest.approx(brute.min())
            if env.step_index + 1 < env.order.size:
                steps_with_rest += 1
            else:  # the last job: the look-ahead is the greedy-within-q expert
                assert np.array_equal(scores, expert_scores(env, "greedy-within-q"))
            _, _, done, _, _ = env.step(action)
    assert steps_with_rest > 20  # the look-ahead part was exercised


def test_lookahead_demonstrations_label_the_best_total(small_windows):
    from tjap.learned.tree.imitation import collect_demonstrations

    env = NSARepairEnv(small_windows, max_remove=5)
    demos = collect_demonstrations(env, 150, seed=0, temperature=300.0, expert="lookahead")
    assert len(demos) >= 150 and np.all(demos.returns < 0)
    assert np.array_equal(demos.actions, np.argmin(demos.costs, axis=1))
    again = collect_demonstrations(
        NSARepairEnv(small_windows, max_remove=5),
        150,
        seed=0,
        temperature=300.0,
        expert="lookahead",
    )
    assert np.array_equal(demos.obs, again.obs) and np.array_equal(demos.costs, again.costs)


def test_relative_reward_subtracts_the_lookahead_baseline(small_windows):
    """reward="relative": (the look-ahead's best total at the episode's start - the repaired
    jobs' cost) / scale; with q past every window's idle nodes the look-ahead expert, which
    re-plans at every step, never ends above its own first plan."""
    from tjap.learned.tree.imitation import expert_action, expert_scores

    env = NSARepairEnv(small_windows, q=120, max_remove=5, reward="relative")
    plain = NSARepairEnv(small_windows, q=120, max_remove=5)
    rng = np.random.default_rng(0)
    for episode in range(40):
        env.reset(seed=episode)
        plain.reset(seed=episode)
        assert env.baseline == pytest.approx(expert_scores(env, "lookahead").min())
        done, follow = False, episode % 2 == 0
        while not done:
            action = (
                expert_action(env, "lookahead")
                if follow
                else int(rng.choice(np.flatnonzero(env.action_masks())))
            )
            _, reward, done, _, info = env.step(action)
            _, plain_reward, _, _, _ = plain.step(action)
        assert reward == pytest.approx((env.baseline - info["cost"]) / env.reward_scale)
        assert plain_reward == pytest.approx(-info["cost"] / env.reward_scale)
        if follow:
            assert reward >= -1e-9


def test_env_warmup_repair(small_windows):
    with pytest.raises(tjap.InvalidInputError, match="warmup_repair") as info:
        NSARepairEnv(small_windows, warmup_repair="paper")
    assert "\n" not in str(info.value)

    def kept_solutions(repair):
        env = NSARepairEnv(small_windows, warmup_repair=repair, warmup_moves=30, max_remove=5)
        out = []
        for s in range(30):
            env.reset(seed=s)
            out.append((env.order.tolist(), env.starts[: env.kept].tolist()))
        return out

    greedy = kept_solutions("greedy")
    assert greedy == kept_solutions("greedy")  # deterministic by seed
    assert greedy != kept_solutions("uniform")


# -- preset "best" only for weights trained in its loop --------------------------------------------
def _weights(tmp_path, name, training):
    spec = feature_spec()
    path = tmp_path / name
    save_policy(build_policy("fcn1", spec), path, arch="fcn1", spec=spec, training=training)
    return path.with_suffix(".json")


@pytest.mark.parametrize(
    "training", [{"seed": 0}, {"setting": "published"}, {"setting": "paper", "loop": "paper"}]
)
def test_preset_best_refuses_weights_not_trained_in_it(tmp_path, small_windows, training):
    weights = _weights(tmp_path, "other", training)
    with pytest.raises(tjap.InvalidInputError, match="--loop best") as info:
        tjap.solve(small_windows[0], "nsa", weights=weights, preset="best", iterations=10)
    assert "\n" not in str(info.value)
    # the shipped published-setting model too, named (without weights "best" runs the shipped
    # best-loop ones, tests/learned/tree/test_nsa_default.py)
    from tjap.learned.tree.policy import DEFAULT_WEIGHTS

    with pytest.raises(tjap.InvalidInputError, match="trained in the published loop"):
        tjap.solve(small_windows[0], "nsa", preset="best", weights=DEFAULT_WEIGHTS, iterations=10)
    tjap.solve(small_windows[0], "nsa", weights=weights, preset="paper", iterations=10)


def test_preset_best_runs_weights_trained_in_it_in_the_best_loop(tmp_path, small_windows):
    from tjap.heuristics.tree.anneal import SA_PRESETS
    from tjap.learned.tree.policy import NSA_LOOKAHEAD, NSA_PRESETS

    assert NSA_PRESETS["best"] == {
        k: v for k, v in SA_PRESETS["best"].items() if k not in ("repair", "q")
    }
    assert NSA_LOOKAHEAD == {"paper": 0, "published": 0, "best": 32}
    weights = _weights(tmp_path, "best", {"setting": "published", "loop": "best"})
    w = small_windows[1]
    common = {"weights": weights, "seed": 4, "convention": "published"}
    r = tjap.solve(w, "nsa", preset="best", iterations=80, **common)
    assert r.is_feasible() and r.iterations == 80
    explicit = tjap.solve(
        w,
        "nsa",
        preset="paper",
        iterations=80,
        max_remove=5,
        t_max=25000.0,
        reinsert="largest-first",
        lookahead=32,
        **common,
    )
    assert r.assignment == explicit.assignment and r.objective == explicit.objective
    assert tjap.solve(w, "nsa", preset="best", **common).iterations == 1000


# -- the training options, recorded ----------------------------------------------------------------
def test_cli_training_in_the_best_loop_records_its_options(tmp_path, small_windows):
    from tjap.cli import main
    from tjap.learned.tree.policy import LearnedRepair

    out = tmp_path / "b"
    argv = [
        "train",
        "nsa",
        "--arch",
        "fcn1",
        "--setting",
        "paper",
        "--loop",
        "best",
        "--q",
        "40",
        "--expert",
        "lookahead",
        "--warmup-repair",
        "greedy",
        "--timesteps",
        "0",
        "--imitation-steps",
        "40",
        "--imitation-epochs",
        "1",
        "--imitation-temperature",
        "300",
        "--windows",
        "3",
        "--quiet",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    meta = json.loads(out.with_suffix(".json").read_text())
    t = meta["training"]
    assert t["loop"] == "best" and t["setting"] == "paper" and t["warmup_repair"] == "greedy"
    assert t["loop_options"]["max_remove"] == 5 and t["loop_options"]["t_max"] == 25000.0
    assert t["imitation"]["expert"] == "lookahead" and meta["feature_spec"]["q"] == 40
    assert t["command"] == "tjap " + " ".join(argv)
    assert LearnedRepair.load(out.with_suffix(".json")).loop == "best"
    r = tjap.solve(
        small_windows[0], "nsa", weights=out.with_suffix(".json"), preset="best", iterations=20
    )
    assert r.is_feasible()


def test_cli_training_options_are_checked():
    from tjap.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["train", "nsa", "--imitation-steps", "10", "--timesteps", "0"])
    assert (args.loop, args.q, args.expert, args.warmup_repair) == (
        "setting",
        None,
        "greedy-within-q",
        "uniform",
    )
    assert parser.parse_args(["train", "nsa", "--reward", "relative"]).reward == "relative"
    for bad in (
        ["--loop", "fast"],
        ["--expert", "oracle"],
        ["--q", "0"],
        ["--warmup-repair", "paper"],
        ["--reward", "baseline"],
    ):
        with pytest.raises(SystemExit):
            parser.parse_args(["train", "nsa", *bad])
