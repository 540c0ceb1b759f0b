"""Imitation of the exact model by the seed-003 gnn: the exact model's completion of a request
whose first servers are fixed (against brute force), the labeller's cached plans against fresh
solves, labelled rollouts (labels feasible, returns discounted), a fit that learns the labels on a
tiny case, determinism by seed, and the training entry's bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from network_oracle import fewest_channels

from tjap.core.errors import InvalidInputError
from tjap.core.result import Status
from tjap.placement.network import (
    DataCentre,
    Engine,
    Outcome,
    Requests,
    paper_topology,
    solve_request,
)

torch = pytest.importorskip("torch")

from tjap.learned.network import imitation  # noqa: E402
from tjap.learned.network.nets import ARCH, GraphSAGEAllocator  # noqa: E402


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small batches run faster on one thread, and the machine's cores are shared."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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


@st.composite
def partial_requests(draw):
    t = tiny(channels=(draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))))
    e = Engine(t)
    e.free_cpu[:] = draw(st.lists(st.integers(0, 4), min_size=8, max_size=8))
    e.free_mem[:] = draw(st.lists(st.integers(0, 4), min_size=8, max_size=8))
    e.free_channels[:] = [c - draw(st.integers(0, min(c, 1))) for c in t.link_capacity]
    cpu, mem = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    if not e.fits(cpu, mem):
        cpu, mem = max(1, int(e.free_cpu.sum())), max(1, int(e.free_mem.sum()))
    if not e.fits(cpu, mem):
        e.free_cpu[0] = e.free_mem[0] = 4
        cpu = mem = 1
    e.begin(cpu, mem, 1)
    for _ in range(draw(st.integers(1, 2))):
        allowed = np.flatnonzero(e.mask())
        if e.request is None or not allowed.size:
            break
        if e.step(int(draw(st.sampled_from(allowed.tolist())))) != Outcome.PENDING:
            break
    return t, e


@settings(max_examples=120, deadline=None)
@given(partial_requests())
def test_completion_with_fixed_servers_matches_brute_force(state):
    t, e = state
    if e.request is None:  # the first steps finished (or failed) the request
        return
    free_ch = e.free_channels.copy()
    plan = solve_request(
        t,
        e.free_cpu,
        e.free_mem,
        e.free_channels,
        e.need_cpu,
        e.need_mem,
        time_limit_s=10,
        fixed=e.chosen,
    )
    best = fewest_channels(
        t, e.free_cpu, e.free_mem, e.free_channels, e.need_cpu, e.need_mem, fixed=e.chosen
    )
    if best is None:
        assert plan.status == Status.INFEASIBLE and not plan.has_solution
        return
    assert plan.status == Status.OPTIMAL and plan.channels == best
    assert not set(plan.servers) & set(e.chosen)
    # replayed through the engine with its paths, the completion is accepted with its channels
    outcomes = [e.step(s, list(p)) for s, p in zip(plan.servers, plan.paths)]
    assert outcomes[-1] == Outcome.ACCEPTED and Outcome.FAILED not in outcomes
    assert int((free_ch - e.free_channels).sum()) == plan.channels


def test_fixed_must_name_distinct_servers():
    t = tiny()
    args = (t, np.full(8, 4), np.full(8, 4), t.link_capacity.copy(), 6, 6)
    with pytest.raises(InvalidInputError, match="fixed"):
        solve_request(*args, fixed=[1, 1])
    with pytest.raises(InvalidInputError, match="fixed"):
        solve_request(*args, fixed=[8])


def test_without_fixed_servers_the_model_is_unchanged():
    t = paper_topology("8:1-16", 64)
    free = np.full(64, 16)
    a = solve_request(t, free, free, t.link_capacity, 40, 20)
    b = solve_request(t, free, free, t.link_capacity, 40, 20, fixed=())
    assert a.servers == b.servers and a.channels == b.channels


def test_labeller_cache_agrees_with_fresh_solves():
    t = paper_topology("8:1-8", 64)
    reqs = Requests.generate(t, 40, 1000)
    labeller = imitation.ExactLabeller()
    samples, _ = imitation.rollout(t, reqs, beta=1.0, labeller=labeller)
    assert len(samples) > 0
    # every label is a set of allowed servers; fresh solves of labelled states are as cheap
    for mask, label in zip(samples.masks, samples.labels):
        assert label.any() and not (label & ~mask).any()
    assert labeller.solves < len(samples)  # the request plan is reused within a request


def test_rollout_returns_are_discounted_rewards():
    t = paper_topology("16:1-16", 64)
    reqs = Requests.generate(t, 6, 1001)
    net = GraphSAGEAllocator(**ARCH)
    net.set_topology(t)
    samples, acceptance = imitation.rollout(t, reqs, net, beta=0.0, seed=3)
    assert 0.0 <= acceptance <= 1.0 and len(samples) >= 6 * acceptance
    r = np.array(samples.returns)
    assert np.all(np.abs(r) <= 10.0 / (1 - imitation.GAMMA) + 1e-6)
    with pytest.raises(InvalidInputError, match="beta"):
        imitation.rollout(t, reqs, None, beta=0.5)


def test_fit_learns_the_labels_and_is_deterministic():
    t = paper_topology("8:1-16", 64)
    samples, _ = imitation.rollout(t, Requests.generate(t, 12, 1002), beta=1.0)
    chance = np.mean(
        [label.sum() / mask.sum() for label, mask in zip(samples.labels, samples.masks)]
    )

    def trained(epochs):
        torch.manual_seed(0)
        net = GraphSAGEAllocator(**ARCH)
        stats = imitation.fit(
            net, samples, epochs=epochs, batch_size=16, lr=3e-3, seed=0, topologies={t.name: t}
        )
        return net, stats

    _, stats = trained(15)
    assert stats["accuracy"] > max(0.5, 2 * chance)
    (net, stats), (net2, stats2) = trained(1), trained(1)
    assert stats == stats2
    for a, b in zip(net.state_dict().values(), net2.state_dict().values()):
        assert torch.equal(a, b)


def test_train_imitation_bad_input():
    with pytest.raises(InvalidInputError, match="positive"):
        imitation.train_imitation(["8:1-16"], iterations=0)
    with pytest.raises(InvalidInputError, match="unknown topology"):
        imitation.train_imitation(["9:1-3"], iterations=1)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--timesteps", "0"], "nothing to train"),
        (["--init", "no/such/weights.json"], "no such weights"),
        (["--topologies", "9:1-3"], "unknown topology"),
        (["--imitation-iterations", "-1"], ">= 0"),
        (["--imitation-iterations", "1", "--imitation-beta", "1.5"], "--imitation-beta must be in"),
    ],
)
def test_cli_train_network_errors_are_one_line(capsys, argv, message):
    from tjap.cli import main

    assert main(["train", "network", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tjap: error:") and message in err and "\n" not in err


def test_cli_train_network_rejects_bad_numbers(capsys):
    from tjap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["train", "network", "--envs", "0"])
    assert exc.value.code == 2 and "positive" in capsys.readouterr().err


def test_shipped_weights_record_the_imitation_stage():
    import json

    from tjap.learned.network import nets as gnn

    meta = json.loads(gnn.DEFAULT_WEIGHTS.read_text())
    stage1 = meta["training"]["continued_from"]["training"]
    assert stage1["algorithm"].startswith("imitation of the exact")
    assert stage1["command"].startswith("python -m tjap.learned.network.imitation")
    validation = meta["training"]["validation"]
    ours = validation["this (imitation + PPO)"]["mean"]
    assert ours >= max(v["mean"] for k, v in validation.items() if isinstance(v, dict))
    net, imitation_meta = gnn.load(gnn.WEIGHTS_DIR / "network_gnn_imitation.json")
    assert imitation_meta["training"]["history"]
