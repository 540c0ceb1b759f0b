"""Learned provisioners for chained jobs (seed 004): the environment, the shared features, the
recorded episodes, the training objectives against brute-force oracles, the tree arrays, save/load
and the shipped weights behind the submit-or-wait protocol."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from provision_cases import EXACT, PAIR, H, busy_trace
from provision_reference import reference_record

from tjap.core.errors import InvalidInputError, UnknownMethodError
from tjap.heuristics.batch.rules import run_episode
from tjap.learned.batch import MODELS
from tjap.learned.batch.episodes import (
    first_submission,
    record_episode,
    record_many,
    stack,
    window_index,
)
from tjap.learned.batch.features import SCALES, normalise, observation
from tjap.placement.batch.chained import ChainedEpisode, Pair
from tjap.registry import make as make_policy


def make_env(**kw):
    from tjap.learned.batch.env import ProvisionEnv

    return ProvisionEnv(
        busy_trace(), [30 * H, 34 * H], cluster_nodes=4, pair=PAIR, config=EXACT, **kw
    )


def test_env_passes_check_env():
    from stable_baselines3.common.env_checker import check_env

    env = make_env()
    check_env(env, warn=True)
    obs, info = env.reset(seed=3)
    assert obs.shape == (144, 40) and obs.dtype == np.float32 and info["inject_s"] in env.times


def test_env_rewards_and_sign_conventions():
    env = make_env(e_interruption=2.0, e_overlap=0.5)
    # submit at once: the successor queues behind the predecessor's peers; whatever the outcome,
    # the reward is -(2 * interruption + 0.5 * overlap) and exactly one of them is positive
    env.reset(options={"inject_s": 30 * H})
    _, reward, done, _, info = env.step(1)
    assert done and not info["fallback"]
    o = info["outcome_s"] / H
    assert info["interruption_h"] == max(o, 0) and info["overlap_h"] == max(-o, 0)
    assert reward == pytest.approx(-(2.0 * max(o, 0) + 0.5 * max(-o, 0)))
    # always wait: the reactive fallback submits when the predecessor ends; never an overlap
    env.reset(options={"inject_s": 30 * H})
    done, steps = False, 0
    while not done:
        _, reward, done, _, info = env.step(0)
        steps += 1
    assert info["fallback"] and info["overlap_h"] == 0 and info["interruption_h"] > 0
    assert reward == pytest.approx(-2.0 * info["interruption_h"]) and steps > 30
    with pytest.raises(InvalidInputError, match="reset"):
        env.step(0)


def test_probe_is_a_submission_step_that_leaves_the_env_as_it_was():
    env = make_env(e_interruption=2.0)
    env.reset(options={"inject_s": 30 * H})
    for _ in range(3):
        env.step(0)
    raw, now = env.raw.copy(), env.episode.now
    reward, info = env.probe()
    assert np.array_equal(env.raw, raw) and env.episode.now == now and not env.episode.done
    env.reset(options={"inject_s": 30 * H})
    for _ in range(3):
        env.step(0)
    _, stepped, done, _, stepped_info = env.step(1)
    assert done and stepped == reward and stepped_info == info
    ep = env.episode  # wait (from the submission) - outcome (from P's end) = P's end - submission
    pred_end = int(ep.sim._state["end"][ep.pred])
    assert info["wait_s"] - info["outcome_s"] == pred_end - ep.submitted_s


def test_env_reset_is_seeded_and_warm_starts_from_its_checkpoint():
    env_a, env_b = make_env(), make_env()
    first = [env_a.reset(seed=7)[1]["inject_s"]] + [env_a.reset()[1]["inject_s"] for _ in range(4)]
    second = [env_b.reset(seed=7)[1]["inject_s"]] + [env_b.reset()[1]["inject_s"] for _ in range(4)]
    assert first == second
    obs0, _ = env_a.reset(options={"inject_s": 34 * H})
    for _ in range(5):
        env_a.step(0)
    obs1, _ = env_a.reset(options={"inject_s": 34 * H})  # rewound, not replayed
    assert np.array_equal(obs0, obs1)


def test_features_are_shared_by_env_records_and_provisioners():
    jobs = busy_trace()
    rec = stack([record_episode(jobs, 4, 30 * H, PAIR, EXACT)])
    idx = window_index(rec)
    env = make_env()
    obs, _ = env.reset(options={"inject_s": 30 * H})
    for k in range(len(idx)):
        assert np.allclose(obs, normalise(rec["rows"][idx[k]]))  # the same 144 x 40 history
        obs, _, done, _, _ = env.step(0)
        if done:
            break
    assert k == len(idx) - 1  # the recorded episode has exactly the env's decisions
    ep = ChainedEpisode(jobs, 4, 30 * H, PAIR, config=EXACT)
    raw = observation(ep)
    assert raw.shape == (144, 40) and np.allclose(normalise(raw), raw / SCALES)


def test_recorded_outcomes_match_fresh_episodes():
    jobs = busy_trace()
    rec = record_episode(jobs, 4, 30 * H, PAIR, EXACT)
    for k in (0, 3, len(rec["outcome_s"]) - 1):  # submit at decision k in a fresh episode
        ep = ChainedEpisode(jobs, 4, 30 * H, PAIR, config=EXACT)
        for _ in range(k):
            assert not ep.step(False)
        ep.step(True)
        assert ep.outcome() == rec["outcome_s"][k]
    ep = ChainedEpisode(jobs, 4, 30 * H, PAIR, config=EXACT)
    assert run_episode(ep, make_policy("provision", "reactive")) == rec["fallback_outcome_s"]
    # outcome = wait - remaining while the predecessor runs (its runtime equals its limit)
    run = rec["running"]
    assert np.array_equal(rec["outcome_s"][run], rec["wait_s"][run] - rec["remaining_s"][run])
    data = stack([rec])
    never, at = first_submission(data, np.zeros(len(rec["wait_s"]), bool))
    assert never[0] == rec["fallback_outcome_s"] and at[0] == -1
    third = np.zeros(len(rec["wait_s"]), bool)
    third[2:] = True
    got, at = first_submission(data, third)
    assert got[0] == rec["outcome_s"][2] and at[0] == 2


@pytest.mark.parametrize(
    "inject_h, pair, config",
    [
        (30, PAIR, EXACT),
        (30, Pair(nodes=2), EXACT),  # the 48 h pair of training
        (36, Pair(nodes=1, runtime_s=4 * H, limit_s=5 * H), None),  # the simulator's defaults
    ],
)
def test_recorded_episodes_equal_the_plain_recording(inject_h, pair, config):
    """The training data (recorded through the environment's step) are those of the plain
    recording that steps the chained episode directly (tests/oracles/provision_reference.py): the same
    rows, probes, remaining times, fallback outcome and dtypes, one episode and a stacked set."""
    jobs = busy_trace()
    got = record_episode(jobs, 4, inject_h * H, pair, config)
    want = reference_record(jobs, 4, inject_h * H, pair, config)
    assert got.keys() == want.keys() and len(want["wait_s"]) > 30
    for key in want:
        assert np.asarray(got[key]).dtype == np.asarray(want[key]).dtype, key
        assert np.array_equal(got[key], want[key]), key
    if pair == Pair(nodes=pair.nodes):  # record_many's pairs are Pair(nodes=n)
        many = record_many(jobs, 4, [(inject_h * H, pair.nodes)], config)
        for key, value in stack([want]).items():
            assert np.array_equal(many[key], value), key


def test_reward_signs():
    from tjap.learned.batch.train import reward_h

    assert reward_h([2 * H], e_interruption=3.0).tolist() == [-6.0]
    assert reward_h([-3 * H], e_overlap=0.5).tolist() == [-1.5]
    assert reward_h([0]).tolist() == [0.0]


def test_policy_gradient_objective_is_the_exact_expected_return():
    torch = pytest.importorskip("torch")
    from tjap.learned.batch.train import segment_expected_return

    rng = np.random.default_rng(0)
    lengths = [3, 1, 4]
    logits = rng.normal(size=sum(lengths))
    rewards = -rng.uniform(0, 5, size=sum(lengths))
    fallback = -rng.uniform(0, 5, size=len(lengths))
    starts = np.cumsum([0] + lengths)
    episode = np.repeat(np.arange(len(lengths)), lengths)
    got = segment_expected_return(
        torch.tensor(logits),
        torch.tensor(rewards),
        torch.tensor(fallback),
        torch.tensor(starts),
        torch.tensor(episode),
    ).numpy()
    p = 1 / (1 + np.exp(-logits))
    for e, n in enumerate(lengths):  # brute force over every action sequence
        expected = 0.0
        for actions in itertools.product((0, 1), repeat=n):
            prob = np.prod(
                [p[starts[e] + k] if a else 1 - p[starts[e] + k] for k, a in enumerate(actions)]
            )
            first = next((k for k, a in enumerate(actions) if a), None)
            expected += prob * (fallback[e] if first is None else rewards[starts[e] + first])
        assert got[e] == pytest.approx(expected, rel=1e-9)


def test_tree_arrays_predict_exactly_like_sklearn(tmp_path):
    sklearn = pytest.importorskip("sklearn.ensemble")
    from tjap.learned.batch.trees import from_sklearn_forest
    from tjap.learned.batch.weights import load_trees, save

    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 12)).astype(np.float32)
    y = x[:, 0] * 3 + np.round(x[:, 1], 1)
    forest = sklearn.RandomForestRegressor(8, max_leaf_nodes=16, random_state=0).fit(x, y)
    ens = from_sklearn_forest(forest)
    assert np.allclose(ens.predict(x), forest.predict(x), atol=1e-9)
    save(tmp_path / "provision_rf", ens.arrays(), {"kind": "rf"})
    loaded, _ = load_trees(tmp_path / "provision_rf")  # leaf values stored as float32
    assert np.allclose(loaded.predict(x), ens.predict(x), atol=1e-5)
    assert np.array_equal(loaded.feature, ens.feature) and np.array_equal(
        loaded.threshold, ens.threshold
    )


def test_tree_arrays_predict_like_xgboost():
    xgb = pytest.importorskip("xgboost")
    from tjap.learned.batch.trees import from_xgboost

    rng = np.random.default_rng(2)
    x = rng.normal(size=(400, 12)).astype(np.float32)
    y = x[:, 0] * 3 + np.sin(x[:, 2])
    booster = xgb.train({"max_depth": 3, "eta": 0.3, "nthread": 1}, xgb.DMatrix(x, label=y), 20)
    assert np.allclose(from_xgboost(booster).predict(x), booster.predict(xgb.DMatrix(x)), atol=1e-4)


def test_network_save_load_round_trip(tmp_path):
    torch = pytest.importorskip("torch")
    from tjap.learned.batch.nets import DecisionHead, HistoryTransformer, MixtureOfExperts
    from tjap.learned.batch.weights import load_network, save

    torch.manual_seed(0)
    experts = [HistoryTransformer(d_model=8, heads=2, layers=1, feedforward=16) for _ in range(2)]
    moe = MixtureOfExperts(experts)
    dqn, pg = DecisionHead(moe.embedding_dim, outputs=2), DecisionHead(moe.embedding_dim, outputs=1)
    meta = {
        "kind": "moe",
        "foundation": experts[0].config,
        "experts": 2,
        "heads": {"dqn": dqn.config, "pg": pg.config},
    }
    save(tmp_path / "provision_moe", {"foundation": moe, "dqn": dqn, "pg": pg}, meta)
    foundation, heads, loaded_meta = load_network(tmp_path / "provision_moe")
    x = torch.rand(3, 144, 40)
    moe.eval()
    with torch.no_grad():
        assert torch.allclose(moe(x)[0], foundation(x)[0], atol=1e-6)
        e = moe(x)[1]
        extra = torch.rand(3, 4)
        assert torch.equal(dqn(e, extra), heads["dqn"](e, extra))
    # a file with another feature spec, or none at all, is refused with a clear error
    path = tmp_path / "provision_moe.json"
    path.write_text(path.read_text().replace(loaded_meta["feature_spec_hash"], "0" * 16))
    with pytest.raises(InvalidInputError, match="other features"):
        load_network(tmp_path / "provision_moe")
    with pytest.raises(InvalidInputError, match="no provisioner metadata"):
        load_network(tmp_path / "missing")


class Recorder:
    name = "recorder"

    def __init__(self, inner):
        self.inner, self.asked, self.submitted = inner, [], None

    def decide(self, episode):
        self.asked.append((episode.now, episode.sim.state(episode.pred)))
        choice = bool(self.inner.decide(episode))
        if choice and self.submitted is None:
            self.submitted = episode.now
        return choice


@pytest.mark.parametrize("name", sorted(MODELS))
def test_shipped_provisioners_never_act_before_the_predecessor_is_submitted(name):
    pytest.importorskip("torch")
    provisioner = make_policy("provision", name)
    ep = ChainedEpisode(busy_trace(), 4, 30 * H, PAIR, config=EXACT)
    rec = Recorder(provisioner)
    outcome = run_episode(ep, rec)
    assert rec.asked and all(t >= 30 * H for t, _ in rec.asked)
    assert all(state != "future" for _, state in rec.asked)
    assert ep.submitted_s >= 30 * H and isinstance(outcome, int)
    assert provisioner.meta["scheduler"] == "mirage" and provisioner.meta["train_period"] == [
        "2022-11-01",
        "2023-03-01",
    ]


def test_unknown_provisioner_names_the_choices():
    with pytest.raises(UnknownMethodError, match="moe_dqn"):
        make_policy("provision", "moe_dpn")


def test_cli_evaluates_a_learned_provisioner(capsys):
    import json

    from tjap.cli import main
    from tjap.placement.batch.traces import bundled_trace

    trace = bundled_trace("ls6-a100")
    code = main(
        [
            "provision",
            "evaluate",
            "--trace",
            str(trace),
            "--from",
            "2023-03-01",
            "--to",
            "2023-03-08",
            "--nodes",
            "8",
            "--policy",
            "xgb",
            "--scheduler",
            "mirage",
            "--pairs",
            "1",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["policy"] == "xgb" and data["scheduler"] == "mirage"
    assert data["pairs"] == 1 and data["mean_interruption_h"] >= 0 and data["mean_overlap_h"] >= 0
