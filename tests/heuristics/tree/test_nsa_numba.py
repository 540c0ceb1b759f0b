"""The learned repair compiled into the SA loop (tjap.heuristics.tree._mlp_kernels, tjap.learned.tree.policy).

The Numba forward pass must give torch's actor logits (to 1e-5 against torch's float32, absolute
or relative: torch sums in float32, whose rounding reaches 1e-5 on logits of 1-5 with q = 200
inputs; to 1e-9 against torch in float64, which is the exact check) for every Table II architecture, on random weights and observations
and on the shipped weights with observations of the paper's stream; its masked argmax must be
the old torch path's; the compiled NSA must follow the plain-Python twin (tests/oracles/sa_reference.py)
driven by a torch oracle, draw for draw. Torch is the oracle here only: solving imports none.

The switch changed NSA's sampled trajectories: the old path drew each start with numpy's
``default_rng(seed)`` in a Python callback, the new one with one draw of the loop's own generator
per re-inserted job (the budget of the drawn repairs). So results by seed differ from before; the
mean cost over windows is the same (``test_mean_cost_as_the_old_torch_path``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

import sa_reference as reference  # noqa: E402

import tjap  # noqa: E402
from tjap.heuristics.tree import _kernels  # noqa: E402
from tjap.heuristics.tree._mlp_kernels import forward, net_scratch, net_start, observe  # noqa: E402
from tjap.learned.policy_io import file_sha256  # noqa: E402
from tjap.learned.tree.env import NSARepairEnv  # noqa: E402
from tjap.learned.tree.features import ARCHS, feature_spec, repair_observation  # noqa: E402
from tjap.learned.tree.policy import (  # noqa: E402
    LearnedRepair,
    actor_arrays,
    build_policy,
    load_actor,
    load_policy,
)
from tjap.learned.tree.train import save_policy  # noqa: E402
from tjap.placement.tree.cost import convention_code  # noqa: E402
from tjap.placement.tree.dcas import Arrays  # noqa: E402
from tjap.placement.tree.stream import generate_windows  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = sorted((ROOT / "learned" / "weights").glob("nsa_*.json"))
SPECS = {
    "paper4": feature_spec(),
    "idle": feature_spec(idle_flag=True),
    "boundaries": feature_spec(boundaries=True),
    "all": feature_spec(q=60, idle_flag=True, boundaries=True),
}


# -- oracles -------------------------------------------------------------------------------------
def numpy_observation(
    switch_q,
    pod_q,
    alive,
    length,
    size,
    others,
    num_others,
    num_switches,
    num_pods,
    q=100,
    n_max=40,
    idle_flag=False,
    boundaries=False,
):
    """The observation as tjap.learned.tree.features built it in numpy before the kernel (the oracle)."""
    channels = 4 + int(idle_flag) + 2 * int(boundaries)
    obs = np.zeros((channels, q), dtype=np.float32)
    n = min(q, int(length))
    positions = np.asarray(alive[:n])
    obs[0, :n] = switch_q[positions] / num_switches
    obs[1, :n] = pod_q[positions] / num_pods
    obs[2, :n] = size / n_max
    obs[3, :n] = others / (num_others * n_max) if num_others > 0 else 0.0
    if idle_flag:
        obs[4, :n] = 1.0
    if boundaries and n:
        c = 4 + int(idle_flag)
        sw, pd = switch_q[positions], pod_q[positions]
        obs[c, 0] = obs[c + 1, 0] = 1.0
        obs[c, 1:n] = sw[1:] != sw[:-1]
        obs[c + 1, 1:n] = pd[1:] != pd[:-1]
    mask = np.zeros(q, dtype=bool)
    mask[:n] = True
    return obs, mask


def torch_logits(policy, obs) -> np.ndarray:
    """The actor's logits as the old LearnedRepair.start computed them, in the policy's dtype
    (sb3's extract_features casts a Box observation to float32, so a float64 copy of the policy
    gets the features extractor's output directly)."""
    dtype = next(policy.parameters()).dtype
    with torch.no_grad():
        x = torch.as_tensor(np.asarray(obs)[None], dtype=dtype)
        if dtype == torch.float32:
            features = policy.extract_features(x, policy.pi_features_extractor)
        else:
            features = policy.pi_features_extractor(x)
        return policy.action_net(policy.mlp_extractor.forward_actor(features))[0].double().numpy()


def numba_logits(repair: LearnedRepair, obs) -> np.ndarray:
    scratch = net_scratch(repair.layers)
    scratch[0, : obs.size] = np.asarray(obs, np.float64).ravel()
    return scratch[forward(repair.params, repair.layers, scratch), : repair.q].copy()


def flags(spec):
    return "idle" in spec["channels"], "switch_start" in spec["channels"]


def old_start(policy, spec, a, alive, length, size, others, num_others, rng=None) -> int:
    """The old path's start (LearnedRepair.start before the switch): numpy observation, torch
    float32 logits, masked argmax or a draw of numpy's generator ``rng``."""
    obs, mask = numpy_observation(
        a.switch_q,
        a.pod_q,
        alive,
        length,
        size,
        others,
        num_others,
        a.num_switches,
        a.num_pods,
        spec["q"],
        spec["n_max"],
        *flags(spec),
    )
    logits = torch_logits(policy, obs)
    logits[~mask] = -np.inf
    if rng is None:
        return int(np.argmax(logits))
    p = np.exp(logits - logits.max())
    return int(rng.choice(p.size, p=p / p.sum()))


def twin_repair(policy, spec, a, sample: bool):
    """The learned repair for sa_reference.anneal: torch logits, then the kernel's rule (argmax,
    or the first position whose cumulative softmax exceeds the loop's draw u)."""

    def repair(alive, size, others, num_others, u, rest=()):
        obs, mask = numpy_observation(
            a.switch_q,
            a.pod_q,
            alive,
            len(alive),
            size,
            others,
            num_others,
            a.num_switches,
            a.num_pods,
            spec["q"],
            spec["n_max"],
            *flags(spec),
        )
        logits = torch_logits(policy, obs)[mask]
        if not sample:
            return int(np.argmax(logits))
        cumulative = np.cumsum(np.exp(logits - logits.max()))
        return int(
            min(np.searchsorted(cumulative, u * cumulative[-1], side="right"), logits.size - 1)
        )

    return repair


def twin_lookahead_repair(policy, spec, a, sample: bool, k: int, convention: str):
    """The learned look-ahead for sa_reference.anneal: torch logits, the twin's proposals
    (systematic sampling with the loop's draw, or the k largest), each scored with the later
    jobs placed greedily (sa_reference.lookahead)."""
    switch_q, pod_q, code = a.switch_q.tolist(), a.pod_q.tolist(), convention_code(convention)

    def repair(alive, size, others, num_others, u, rest):
        obs, mask = numpy_observation(
            a.switch_q,
            a.pod_q,
            alive,
            len(alive),
            size,
            others,
            num_others,
            a.num_switches,
            a.num_pods,
            spec["q"],
            spec["n_max"],
            *flags(spec),
        )
        logits = torch_logits(policy, obs)[mask]
        starts = reference.candidates(logits, k, u if sample else None)
        return reference.lookahead(switch_q, pod_q, alive, size, code, starts, rest)

    return repair


def random_policy(arch, spec, seed, scale=None):
    """build_policy's random init, or (``scale``) weights ~ N(0, scale^2 / fan_in), which makes
    logits of order 1 (sb3's init gives the actor head a gain of 0.01)."""
    torch.manual_seed(seed)
    policy = build_policy(arch, spec)
    if scale:
        with torch.no_grad():
            for p in policy.parameters():
                p.normal_(0.0, scale / math.sqrt(p[0].numel() if p.dim() > 1 else 1))
    return policy.eval()


def repair_of(policy, arch, spec, sample=False) -> LearnedRepair:
    return LearnedRepair.from_arrays(actor_arrays(policy), arch, spec, sample=sample)


def random_observations(spec, count, seed) -> np.ndarray:
    rng = np.random.default_rng(seed)
    obs = rng.random((count, len(spec["channels"]), spec["q"])).astype(np.float32)
    for i, n in enumerate(rng.integers(0, spec["q"] + 1, count)):
        obs[i, :, n:] = 0.0  # past the idle sequence, as the loop builds it
    obs[0] = 0.0
    return obs


@pytest.fixture(scope="module")
def stream():
    return generate_windows("published", 8, seed=5, convention="published")


def env_states(windows, spec, count, seed=0):
    """(Arrays, alive, length, size, others, num_others, observation) of repair states of
    NSARepairEnv on ``windows``, stepping with random valid starts."""
    idle, boundaries = flags(spec)
    env = NSARepairEnv(
        windows, q=spec["q"], n_max=spec["n_max"], idle_flag=idle, boundaries=boundaries
    )
    rng = np.random.default_rng(seed)
    states = []
    obs, _ = env.reset(seed=seed)
    while len(states) < count:
        a, j = env.a, env.order[env.step_index]
        rest = env.order[env.step_index + 1 :]
        states.append(
            (
                a,
                env.alive.copy(),
                int(env.length),
                int(a.sizes[j]),
                int(a.sizes[rest].sum()),
                int(rest.size),
                obs,
            )
        )
        obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if done:
            obs, _ = env.reset()
    return states


# -- the observation -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SPECS))
def test_observation_kernel_equals_the_numpy_one(stream, name):
    spec = SPECS[name]
    for a, alive, length, size, others, num_others, obs in env_states(stream, spec, 150):
        want, mask = numpy_observation(
            a.switch_q,
            a.pod_q,
            alive,
            length,
            size,
            others,
            num_others,
            a.num_switches,
            a.num_pods,
            spec["q"],
            spec["n_max"],
            *flags(spec),
        )
        got, got_mask = repair_observation(
            a.switch_q,
            a.pod_q,
            alive,
            length,
            size,
            others,
            num_others,
            a.num_switches,
            a.num_pods,
            spec["q"],
            spec["n_max"],
            *flags(spec),
        )
        assert np.array_equal(got, want) and np.array_equal(got_mask, mask)
        assert np.array_equal(obs, want)  # what the environment showed
        into64 = np.full(want.shape, 7.0)  # the loop's float64 buffer
        n = observe(
            into64,
            a.switch_q,
            a.pod_q,
            alive,
            length,
            size,
            others,
            num_others,
            spec["n_max"],
            a.num_switches,
            a.num_pods,
            *flags(spec),
        )
        assert n == mask.sum() and np.array_equal(into64, want.astype(np.float64))


# -- the forward pass ----------------------------------------------------------------------------
@pytest.mark.parametrize("spec_name", ["paper4", "boundaries", "all"])
@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_forward_equals_torch_on_random_weights(arch, spec_name, stream):
    spec = SPECS[spec_name]
    states = env_states(stream, spec, 16, seed=1)
    observations = np.concatenate(
        [random_observations(spec, 16, seed=2), np.array([s[-1] for s in states])]
    )
    for seed, scale in ((0, None), (1, 1.5)):
        policy = random_policy(arch, spec, seed, scale)
        repair = repair_of(policy, arch, spec)
        double = copy.deepcopy(policy).double()
        spread = 0.0
        for obs in observations:
            got = numba_logits(repair, obs)
            np.testing.assert_allclose(got, torch_logits(policy, obs), rtol=0, atol=1e-5)
            np.testing.assert_allclose(got, torch_logits(double, obs), rtol=0, atol=1e-9)
            spread = max(spread, np.ptp(got))
        assert spread > (1.0 if scale else 0.0)  # the logits are not all alike


@pytest.mark.parametrize("meta_path", SHIPPED, ids=lambda p: p.stem)
def test_forward_equals_torch_on_shipped_weights(meta_path, stream):
    policy, meta = load_policy(meta_path)
    spec = meta["feature_spec"]
    repair = LearnedRepair.load(meta_path)
    assert repair.spec == spec and repair.q == spec["q"]
    windows = generate_windows(
        meta["training"]["setting"], 6, seed=9, convention=meta["training"]["setting"]
    )
    double = copy.deepcopy(policy).double()
    ties = 0
    for a, alive, length, size, others, num_others, obs in env_states(windows, spec, 60):
        got = numba_logits(repair, obs)
        want = torch_logits(policy, obs)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, torch_logits(double, obs), rtol=0, atol=1e-9)
        # the start the loop takes (argmax) is the old torch path's, but for a near-tie
        n = min(spec["q"], length)
        top2 = np.sort(want[:n])[-2:] if n > 1 else np.array([0.0, 1.0])
        start = _net_start(repair, a, alive, length, size, others, num_others, 0.5)
        if top2[1] - top2[0] < 1e-4:
            ties += 1
            continue
        assert start == old_start(policy, spec, a, alive, length, size, others, num_others)
    assert ties <= 2


def _net_start(repair, a, alive, length, size, others, num_others, u):
    """The start the loop's kernel takes for a repair state (of a fat-tree window's Arrays)."""
    arg = repair.kernel_argument(SimpleNamespace(is_fat_tree=True), a)
    return net_start(*arg[:6], alive, length, size, others, num_others, u)


def test_sampling_follows_the_cumulative_softmax(stream):
    spec = SPECS["boundaries"]
    policy = random_policy("cnn1", spec, 3, 1.5)
    repair = repair_of(policy, "cnn1", spec, sample=True)
    counts = np.zeros(spec["q"])
    rng = np.random.default_rng(0)
    double = copy.deepcopy(policy).double()
    for a, alive, length, size, others, num_others, _ in env_states(stream, spec, 24, seed=4):
        oracle = twin_repair(double, spec, a, sample=True)
        for u in np.concatenate([[0.0, 1.0 - 1e-12], rng.random(6)]):
            got = _net_start(repair, a, alive, length, size, others, num_others, u)
            assert got == oracle(alive[:length], size, others, num_others, u)
            counts[got] += 1
    assert (counts > 0).sum() > 5  # draws spread over starts


# -- inside the loop -----------------------------------------------------------------------------
def _anneal_both(
    window,
    repair,
    policy,
    spec,
    *,
    iterations,
    seed,
    t_max=25000.0,
    reinsert="window-order",
    convention="published",
    max_remove=2,
):
    from tjap.heuristics.tree.anneal import anneal
    from tjap.heuristics.tree.operators import REINSERT, Metropolis, RandomDestroy

    r = anneal(
        window,
        iterations=iterations,
        repair=repair,
        destroy=RandomDestroy(max_remove),
        accept=Metropolis(t_max, 2.5),
        reinsert=reinsert,
        convention=convention,
        seed=seed,
        method="nsa",
    )
    a = Arrays(window)
    twin = (
        twin_repair(policy, spec, a, repair.sample)
        if repair.lookahead <= 1
        else twin_lookahead_repair(policy, spec, a, repair.sample, repair.lookahead, convention)
    )
    ref = reference.anneal(
        a.switch_q,
        a.pod_q,
        convention_code(convention),
        a.sizes,
        np.arange(window.num_jobs),
        np.zeros(window.num_jobs, np.int64),
        iterations,
        t_max,
        2.5,
        max_remove,
        twin,
        spec["q"],
        REINSERT[reinsert],
        _kernels.ACCEPT_METROPOLIS,
        seed,
    )
    return r, ref


@pytest.mark.parametrize("sample", [True, False])
def test_trajectory_follows_the_twin_with_a_torch_oracle(stream, sample):
    spec = SPECS["boundaries"]
    cases = [(random_policy("cnn1", spec, 5, 1.5), "cnn1")]
    shipped, meta = load_policy(ROOT / "learned" / "weights" / "nsa_cnn3.json")
    cases.append((shipped, meta["architecture"]))
    for policy, arch in cases:
        repair = repair_of(policy, arch, spec, sample=sample)
        double = copy.deepcopy(policy).double()
        for i, w in enumerate(stream[:3]):
            r, (order, starts, cost) = _anneal_both(w, repair, double, spec, iterations=100, seed=i)
            assert r.info["order"] == order and r.info["starts"] == starts
            assert r.objective == cost


@pytest.mark.parametrize("sample", [True, False])
@pytest.mark.parametrize("k", [2, 5])
def test_lookahead_trajectory_follows_the_twin_with_a_torch_oracle(stream, sample, k):
    """The learned look-ahead: the policy's k proposals, scored by greedy completion of the
    jobs still to re-insert, against the twin (torch logits, plain proposals and scores)."""
    spec = SPECS["boundaries"]
    policy = random_policy("cnn1", spec, 7, 1.5)
    repair = dataclasses.replace(repair_of(policy, "cnn1", spec, sample=sample), lookahead=k)
    double = copy.deepcopy(policy).double()
    for i, w in enumerate(stream[:2]):
        r, (order, starts, cost) = _anneal_both(
            w, repair, double, spec, iterations=40, seed=i, reinsert="largest-first", max_remove=4
        )
        assert r.info["order"] == order and r.info["starts"] == starts
        assert r.objective == cost


def test_lookahead_of_one_is_the_policy_as_is(stream):
    meta = ROOT / "learned" / "weights" / "nsa_cnn3_best_published.json"
    for i, w in enumerate(stream[:3]):
        runs = [
            tjap.solve(
                w,
                "nsa",
                preset="best",
                weights=meta,
                iterations=200,
                seed=i,
                convention="published",
                lookahead=k,
            )
            for k in (0, 1)
        ]
        assert runs[0].info["order"] == runs[1].info["order"]
        assert runs[0].info["starts"] == runs[1].info["starts"]
        la = tjap.solve(
            w, "nsa", preset="best", weights=meta, iterations=200, seed=i, convention="published"
        )  # the best preset's look-ahead, 32
        again = tjap.solve(
            w,
            "nsa",
            preset="best",
            weights=meta,
            iterations=200,
            seed=i,
            convention="published",
            lookahead=32,
        )
        assert la.assignment == again.assignment and la.is_feasible()
        assert la.objective <= la.info["initial_cost"] + 1e-9


@pytest.mark.parametrize("bad", [-1, 2.5, True, "4"])
def test_bad_lookahead_is_a_one_line_error(stream, bad):
    with pytest.raises(tjap.InvalidInputError, match="lookahead must be"):
        tjap.solve(stream[0], "nsa", iterations=10, lookahead=bad, convention="published")


def test_nsa_is_seeded_feasible_and_never_worse_than_seq(stream):
    for i, w in enumerate(stream[:5]):
        for sample in (True, False):
            r = tjap.solve(w, "nsa", iterations=300, seed=i, sample=sample, convention="published")
            again = tjap.solve(
                w, "nsa", iterations=300, seed=i, sample=sample, convention="published"
            )
            assert r.assignment == again.assignment and r.objective == again.objective
            assert r.is_feasible() and r.objective <= r.info["initial_cost"] + 1e-9
            assert r.objective == pytest.approx(
                tjap.assignment_cost(w.topology, r.assignment, "published")
            )


def test_time_limit_stops_the_learned_loop_between_chunks(stream):
    r = tjap.solve(
        stream[0], "nsa", iterations=100_000, time_limit_s=0.3, seed=0, convention="published"
    )
    assert r.status.name == "TIME_LIMIT" and r.info["stopped"] == "time limit"
    assert 0 < r.iterations < 100_000 and r.iterations % _kernels.CHUNK == 0
    assert r.runtime_s < 3.0 and r.is_feasible()


@pytest.mark.slow
def test_mean_cost_as_the_old_torch_path():
    """New (compiled, the loop's draws) against old (torch logits, numpy's generator, run in the
    twin) NSA-500 with the default weights on 20 windows of the paper's stream: the same mean
    cost within 1.5 % (seed-to-seed spread of the mean: about 0.3 %), both far below Seq."""
    path = ROOT / "learned" / "weights" / "nsa_cnn3.json"
    policy, meta = load_policy(path)
    spec = meta["feature_spec"]
    windows = generate_windows("paper", 20, seed=11)
    new, old, initial = [], [], []
    for i, w in enumerate(windows):
        r = tjap.solve(w, "nsa", iterations=500, seed=i, weights=path)
        a = Arrays(w)
        rng = np.random.default_rng(i)

        def repair(alive, size, others, num_others, u, rest, a=a, rng=rng):
            return old_start(
                policy, spec, a, np.asarray(alive), len(alive), size, others, num_others, rng
            )

        _, _, cost = reference.anneal(
            a.switch_q,
            a.pod_q,
            0,
            a.sizes,
            np.arange(w.num_jobs),
            np.zeros(w.num_jobs, np.int64),
            500,
            2500.0,
            2.5,
            2,
            repair,
            100,
            _kernels.REINSERT_LARGEST_FIRST,
            _kernels.ACCEPT_METROPOLIS,
            i,
        )
        new.append(r.objective)
        old.append(cost)
        initial.append(r.info["initial_cost"])
    assert abs(np.mean(new) / np.mean(old) - 1) < 0.015
    assert np.mean(new) < 0.9 * np.mean(initial) and np.mean(old) < 0.9 * np.mean(initial)


# -- no torch at solve time; the inference files ---------------------------------------------------
def test_solving_with_nsa_imports_no_torch():
    code = (
        "import sys, tjap\n"
        "from tjap.placement.tree.stream import generate_windows\n"
        "w = generate_windows('paper', 1, seed=0)[0]\n"
        "r = tjap.solve(w, 'nsa', iterations=50, seed=0)\n"
        "assert r.is_feasible() and r.method == 'nsa'\n"
        "loaded = sorted(m for m in ('torch', 'stable_baselines3', 'sb3_contrib') "
        "if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("meta_path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_inference_files_are_the_pt_actors(meta_path):
    meta = json.loads(meta_path.read_text())
    npz = meta_path.with_name(meta["inference_file"])
    assert npz.name == meta_path.with_suffix(".npz").name
    assert meta["inference_sha256"] == file_sha256(npz)
    policy, _ = load_policy(meta_path)
    with np.load(npz) as z:
        stored = {k: z[k] for k in z.files}
    exported = actor_arrays(policy)
    assert sorted(stored) == sorted(exported)
    assert all(
        np.array_equal(stored[k], exported[k]) and stored[k].dtype == np.float32 for k in stored
    )


def test_training_writes_the_inference_file(tmp_path, stream):
    spec = SPECS["boundaries"]
    policy = random_policy("fcn3", spec, 0, 1.0)
    weights, meta_path = save_policy(
        policy, tmp_path / "p", arch="fcn3", spec=spec, training={"seed": 0}
    )
    meta = json.loads(meta_path.read_text())
    assert weights.suffix == ".pt" and meta["inference_file"] == "p.npz"
    params, layers, again = load_actor(meta_path)
    assert again == meta and layers.shape[0] == 3
    obs = env_states(stream, spec, 1)[0][-1]
    np.testing.assert_allclose(
        numba_logits(LearnedRepair.load(meta_path), obs),
        torch_logits(policy, obs),
        rtol=0,
        atol=1e-5,
    )


def _one_line(call, *fragments):
    with pytest.raises(tjap.InvalidInputError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_bad_inference_files_are_one_line_errors(tmp_path):
    from tjap.learned.policy_io import save_inference

    spec = SPECS["paper4"]
    save_policy(random_policy("fcn1", spec, 0), tmp_path / "a", arch="fcn1", spec=spec, training={})
    meta_path, npz = tmp_path / "a.json", tmp_path / "a.npz"
    good = npz.read_bytes()
    npz.write_bytes(good[: len(good) // 2])  # truncated
    _one_line(lambda: load_actor(meta_path), "a.npz", "sha256", "tjap train nsa")
    meta = json.loads(meta_path.read_text())
    meta["inference_sha256"] = file_sha256(npz)  # even with its hash
    meta_path.write_text(json.dumps(meta))
    _one_line(lambda: load_actor(meta_path), "a.npz", "cannot be read")
    # another model's arrays (a wider net), checksum rewritten to match: names/shapes refused
    save_policy(random_policy("fcn3", spec, 0), tmp_path / "b", arch="fcn3", spec=spec, training={})
    npz.write_bytes((tmp_path / "b.npz").read_bytes())
    meta["inference_sha256"] = file_sha256(npz)
    meta_path.write_text(json.dumps(meta))
    _one_line(lambda: load_actor(meta_path), "a.npz", "another model", "shape")
    # foreign arrays, and arrays of the right shapes but not floats
    shapes = {k: v.shape for k, v in np.load(tmp_path / "b.npz").items()}
    save_inference(meta_path, "nsa", {"x": np.zeros(3)})
    _one_line(lambda: load_actor(meta_path), "a.npz", "another model", "missing")
    save_inference(
        tmp_path / "b.json", "nsa", {k: np.zeros(shape, np.int64) for k, shape in shapes.items()}
    )
    _one_line(lambda: load_actor(tmp_path / "b.json"), "b.npz", "non-float")
    # weights without an inference file (older weights): how to export one
    del meta["inference_file"], meta["inference_sha256"]
    meta_path.write_text(json.dumps(meta))
    _one_line(
        lambda: load_actor(meta_path),
        "a.json",
        "no inference_file",
        "python -m tjap.learned.tree.policy export",
    )
    npz.unlink()
    _one_line(
        lambda: tjap.solve(generate_windows("paper", 1, seed=0)[0], "nsa", weights=meta_path),
        "no inference_file",
    )
    # the export command writes it back
    from tjap.learned.tree.policy import main

    assert main(["export", str(meta_path)]) == 0
    load_actor(meta_path)
