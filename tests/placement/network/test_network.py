"""Seed 003's network model: topologies and their k shortest paths, the path-reservation kernel
against a plain-Python reference, channel and resource conservation over random episodes, the
baselines' choices, the exact per-request model against brute force, determinism, bad input and
the CLI."""

from __future__ import annotations

import itertools
import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from network_oracle import fewest_channels

from tjap.api import place_request
from tjap.core.errors import InvalidInputError, TjapError, UnknownMethodError
from tjap.core.result import Status
from tjap.heuristics.network.rules import NALBPolicy, NULBPolicy, TetrisPolicy
from tjap.placement.network import (
    NAMES,
    DataCentre,
    Engine,
    Episode,
    Outcome,
    Requests,
    evaluate,
    paper_topology,
    run_episode,
    solve_request,
)
from tjap.placement.network import _kernels as kern
from tjap.registry import get, make, methods

HEURISTICS = ("tetris", "nalb", "nulb", "random")


def tiny(channels=(2, 2, 1), racks=2, cpu=4, mem=4) -> DataCentre:
    """8 servers (2 clusters x 2 racks x 2), 2 tier-2 switches per cluster, 2 tier-3 switches."""
    return DataCentre(
        clusters=2,
        racks_per_cluster=racks,
        servers_per_rack=2,
        tier2_per_cluster=2,
        tier3_switches=2,
        channels=channels,
        server_cpu=cpu,
        server_mem=mem,
    )


# -- topology ------------------------------------------------------------------------------------
@pytest.mark.parametrize("servers, names", [(64, NAMES), (1024, ("8:1-16", "32:1-4"))])
def test_paper_topologies_follow_table1(servers, names):
    for name in names:
        t = paper_topology(name, servers)
        n, o = map(int, name.replace(":1-", " ").split())
        c2, c3 = {16: (2 * n, n // 2), 8: (4 * n, n), 4: (4 * n, 2 * n)}[o]
        assert t.channels == (n, c2, c3) and t.name == name
        assert t.num_servers == servers and t.server_cpu == t.server_mem == 16
        assert nx.is_connected(t.graph)
        # bottom-top oversubscription: server channels into a tier-1 switch over its uplinks, and
        # tier-1 uplinks into a tier-2 switch over its uplinks
        down1, up1 = t.servers_per_rack * n, t.tier2_per_cluster * c2
        down2, up2 = t.racks_per_cluster * c2, t.tier3_switches * c3
        assert (down1 / up1) * (down2 / up2) == o
        assert t.graph.number_of_edges() == t.num_links


def test_k_shortest_paths_match_networkx():
    for t in (paper_topology("8:1-16", 64), tiny(racks=3)):
        for u, v in itertools.combinations(range(0, t.num_servers, 3), 2):
            ours = t.server_paths(u, v)
            lengths = [
                len(p) - 1 for p in itertools.islice(nx.shortest_simple_paths(t.graph, u, v), t.k)
            ]
            assert [len(p) for p in ours] == lengths  # link counts = hop counts, shortest first
            for p in ours:
                nodes = [u]
                for link in p:
                    a, b = t.link_ends[link]
                    assert nodes[-1] in (a, b)
                    nodes.append(b if nodes[-1] == a else a)
                assert nodes[-1] == v and len(set(nodes)) == len(nodes)  # a simple u-v path
            assert len({tuple(p) for p in ours}) == len(ours)


def test_equal_length_paths_spread_over_tier3_switches():
    t = paper_topology("8:1-16", 1024)
    used = set()
    for b in range(16, 64, 16):
        for a in range(16):
            for j in range(t.rack_path_count[a, b]):
                path = t.rack_paths[a, b, j, : t.rack_path_len[a, b, j]]
                used |= {int(x) for x in path if t.link_tier[x] == 3}
    assert len(used) == (t.link_tier == 3).sum()  # every tier-3 link is on some candidate


def test_spread_levels():
    t = paper_topology("8:1-16", 64)
    assert [t.spread([3]), t.spread([0, 15]), t.spread([0, 16]), t.spread([0, 32])] == [0, 1, 2, 3]


# -- the path kernel against a plain-Python reference --------------------------------------------
def connect_reference(t, v, chosen, free, routing, given=None):
    """Connect v to each chosen server in order; all or nothing. Returns (links, paths) or None."""
    free = free.copy()
    links, paths = [], []
    for i, u in enumerate(chosen):
        candidates = t.server_paths(u, v)
        ok = [j for j, p in enumerate(candidates) if all(free[x] >= 1 for x in p)]
        if routing == "given":
            ok = [given[i]] if given[i] in ok else []
        elif routing == "balanced" and ok:
            costs = [sum(t.link_capacity[x] / free[x] for x in candidates[j]) for j in ok]
            ok = [ok[int(np.argmin(costs))]]
        if not ok:
            return None
        for x in candidates[ok[0]]:
            free[x] -= 1
        links += candidates[ok[0]]
        paths.append(ok[0])
    return links, paths, free


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_connect_kernel_matches_reference(data):
    t = tiny(channels=(3, 2, 2), racks=data.draw(st.sampled_from([2, 3])))
    free = np.array([data.draw(st.integers(0, c)) for c in t.link_capacity], np.int64)
    servers = data.draw(st.permutations(range(t.num_servers)))
    m = data.draw(st.integers(0, 4))
    chosen, v = list(servers[:m]), servers[m]
    routing = data.draw(st.sampled_from(["shortest", "balanced", "given"]))
    given_paths = [data.draw(st.integers(0, t.k - 1)) for _ in chosen]
    code = {
        "shortest": kern.ROUTE_SHORTEST,
        "balanced": kern.ROUTE_BALANCED,
        "given": kern.ROUTE_GIVEN,
    }[routing]
    mine = free.copy()
    out_links = np.empty(64, np.int64)
    out_paths = np.empty(8, np.int64)
    count = kern.connect(
        v,
        np.array(chosen + [0], np.int64),
        m,
        t.rack_of,
        t.rack_paths,
        t.rack_path_len,
        t.rack_path_count,
        t.link_capacity.astype(float),
        mine,
        code,
        np.array(given_paths + [0], np.int64),
        out_links,
        out_paths,
    )
    ref = connect_reference(t, v, chosen, free, routing, given_paths)
    if ref is None:
        assert count < 0 and (mine == free).all()
    else:
        links, paths, after = ref
        assert count == len(links)
        assert out_links[:count].tolist() == links and out_paths[:m].tolist() == paths
        assert (mine == after).all()


def test_balanced_routing_prefers_emptier_links():
    t = paper_topology("8:1-16", 64)
    for routing, expected in (("shortest", 0), ("balanced", 1)):
        engine = Engine(t, routing=routing)
        first = t.rack_paths[0, 1, 0, : t.rack_path_len[0, 1, 0]]
        engine.free_channels[first] = 1  # the first candidate is nearly full
        engine.begin(48, 48, 5)
        engine.step(0)
        assert engine.step(16) == Outcome.PENDING
        assert engine.paths[1].tolist() == [expected]


# -- the engine's rules --------------------------------------------------------------------------
def test_contributions_are_min_of_free_and_needed():
    t = paper_topology("32:1-4", 64)
    e = Engine(t)
    e.begin(40, 20, 3)
    assert e.step(5) == Outcome.PENDING and (e.need_cpu, e.need_mem) == (24, 4)
    assert e.step(6) == Outcome.PENDING and (e.need_cpu, e.need_mem) == (8, 0)
    assert not e.mask()[7] or e.free_cpu[7] > 0
    e.free_cpu[9] = 0  # a server with only memory left cannot help a request needing only CPU
    assert not e.mask()[9] and not e.mask()[5]
    assert e.step(7) == Outcome.ACCEPTED
    assert (e.free_cpu[[5, 6, 7]] == [0, 0, 8]).all() and (
        e.free_mem[[5, 6, 7]] == [0, 12, 16]
    ).all()
    assert e.active_requests == 1
    e.advance(2)
    assert e.active_requests == 1
    e.advance(1)  # released after its holding time of 3 ticks
    assert e.active_requests == 0 and (e.free_cpu[[5, 6, 7]] == 16).all()
    assert (e.free_channels == t.link_capacity).all()


def test_failed_request_holds_nothing():
    t = tiny(channels=(1, 2, 1))
    e = Engine(t)
    e.begin(4, 4, 9)  # an earlier request on server 1
    e.step(1)
    before = (e.free_cpu.copy(), e.free_mem.copy(), e.free_channels.copy())
    e.begin(12, 12, 9)
    assert e.step(0) == Outcome.PENDING
    assert e.step(2) == Outcome.PENDING  # uses the only channel of servers 0 and 2
    assert e.step(3) == Outcome.FAILED  # server 0's link is full
    assert e.request is None and e.chosen == []
    for a, b in zip(before, (e.free_cpu, e.free_mem, e.free_channels)):
        assert (a == b).all()
    held = e.held()
    assert held["cpu"].sum() == 4 and held["channels"].sum() == 0


class Checked:
    """Wraps a policy and asserts every choice is allowed by the engine's mask."""

    def __init__(self, policy):
        self.policy, self.name, self.routing = policy, policy.name, policy.routing

    def reset(self, topology, seed):
        self.policy.reset(topology, seed)

    def choose(self, engine):
        choice = self.policy.choose(engine)
        server = choice[0] if isinstance(choice, tuple) else choice
        if choice is not None:
            assert engine.mask()[server], (self.name, server)
        return choice


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(NAMES),
    st.sampled_from(HEURISTICS + ("exact",)),
    st.integers(0, 10**6),
    st.integers(1, 60),
)
def test_channels_and_resources_are_conserved(name, policy_name, seed, count):
    t = paper_topology(name, 64)
    policy = Checked(make("network", policy_name))
    requests = Requests.generate(t, count, seed)
    engine = Engine(t, routing=policy.routing)
    policy.reset(t, seed)
    cap_cpu = np.full(t.num_servers, t.server_cpu)

    def conserved():
        held = engine.held()
        assert (engine.free_channels >= 0).all() and (engine.free_cpu >= 0).all()
        assert (engine.free_channels + held["channels"] == t.link_capacity).all()
        assert (engine.free_cpu + held["cpu"] == cap_cpu).all()
        assert (engine.free_mem + held["mem"] == cap_cpu).all()

    for i in range(count):
        if i:
            engine.advance(1)
        while not engine.fits(int(requests.cpu[i]), int(requests.mem[i])):
            engine.advance(1)
        engine.begin(int(requests.cpu[i]), int(requests.mem[i]), int(requests.holding[i]))
        outcome = Outcome.PENDING
        while outcome == Outcome.PENDING:
            choice = policy.choose(engine)
            if choice is None:
                outcome = engine.abort()
            else:
                outcome = engine.step(*choice) if isinstance(choice, tuple) else engine.step(choice)
            conserved()
        if outcome == Outcome.FAILED:  # the failed request holds nothing
            assert engine.request is None and not engine.chosen
    engine.advance(10**6)  # every holding time over: the data centre is empty again
    assert engine.active_requests == 0 and (engine.free_channels == t.link_capacity).all()
    assert (engine.free_cpu == t.server_cpu).all() and (engine.free_mem == t.server_mem).all()


# -- the baselines -------------------------------------------------------------------------------
def test_tetris_prefers_aligned_servers_and_penalises_other_racks():
    t = paper_topology("32:1-4", 64)
    e = Engine(t)
    e.free_mem[:] = 2
    e.free_mem[20] = 16  # the only server with memory to give
    e.begin(8, 8, 5)
    tetris = TetrisPolicy()
    tetris.reset(t, 0)
    assert tetris.choose(e) == 20
    e.abort()
    e.free_mem[:] = 16
    e.begin(64, 64, 5)
    e.step(40)
    scores = tetris.scores(e)
    assert scores[41] > scores[0] and np.isclose(scores[0], scores[41] * 0.9)
    assert scores[40] == -np.inf


def test_nulb_and_nalb_walk_from_the_first_server():
    t = paper_topology("16:1-8", 64)
    for policy in (NULBPolicy(), NALBPolicy()):
        e = Engine(t, routing=policy.routing)
        e.free_channels[[1, 2]] = 1  # two servers of rack 0 with nearly full links
        policy.reset(t, 0)
        e.begin(48, 48, 5)
        plan = policy.plan(e)
        assert policy.choose(e) == plan[0] and len(plan) == 3 and len(set(plan)) == 3
        assert t.spread(plan) == 1  # rack first
        if policy.name == "nulb":
            assert plan[1:] == [s for s in range(16) if s != plan[0]][:2]
        else:
            assert not {1, 2} & set(plan[1:])  # NALB visits emptier links first
        assert policy.routing == "balanced"


@pytest.mark.parametrize("policy_name", HEURISTICS + ("exact",))
def test_every_policy_is_deterministic_by_seed(policy_name):
    t = paper_topology("16:1-16", 64)

    def summary(seed):
        result = run_episode(t, Requests.generate(t, 48, seed), make("network", policy_name))
        out = result.summary()
        out.pop("runtime_s")
        out.get("info", {}).pop("solve_s", None)  # the exact model's solver time
        return out, result.accepted.tolist()

    assert summary(3) == summary(3)
    assert Requests.generate(t, 48, 3).cpu.tolist() != Requests.generate(t, 48, 4).cpu.tolist()


def test_requests_offered_load_and_sizes():
    for servers in (64, 1024):
        t = paper_topology("8:1-16", servers)
        r = Requests.generate(t, 5000, 1)
        assert abs(r.offered_load - 0.95) < 0.01
        assert 1 <= r.cpu.min() and r.cpu.max() <= 128 and r.mem.max() <= 128
        assert abs(r.holding.mean() * r.cpu.mean() / t.capacity[0] - 0.95) < 0.06
    assert (
        Requests.generate(t, 10, 7).holding.tolist() == Requests.generate(t, 10, 7).holding.tolist()
    )


def test_evaluate_averages_over_seeds():
    t = paper_topology("32:1-8", 64)
    out = evaluate(t, lambda: make("network", "random"), requests=20, seeds=3, seed_base=5)
    assert [ep.seed for ep in out.episodes] == [5, 6, 7]
    assert np.isclose(out.acceptance, np.mean([ep.acceptance for ep in out.episodes]))
    assert 0 < out.acceptance <= 1 and out.requests == 20 and out.policy == "random"
    spread = sum(getattr(out, f"spread_{k}") for k in ("server", "rack", "cluster", "global"))
    assert np.isclose(spread, 1.0)
    assert out.mean_accepted == np.mean([ep.accepted.sum() for ep in out.episodes])


def test_results_are_records_with_integer_counts():
    t = paper_topology("16:1-8", 64)
    out = evaluate(t, lambda: make("network", "tetris"), requests=12, seeds=2)
    data = json.loads(out.to_json())
    assert data["requests"] == 12 and data["seeds"] == 2 and "episodes" not in out.summary()
    assert isinstance(data["mean_accepted"], float) and "accepted" not in data
    episode = data["episodes"][0]
    for key in ("requests", "accepted", "ticks", "steps", "seed"):
        assert type(episode[key]) is int, key
    assert {"cpu_utilization", "mem_utilization", "net_utilization_tier1"} <= set(episode)
    full = out.episodes[0].to_dict()
    assert full["accepted"] == out.episodes[0].accepted.tolist()
    assert len(full["utilization"]) == 12 and len(full["utilization"][0]) == 5
    free = np.full(64, 16)
    plan = json.loads(solve_request(t, free, free, t.link_capacity, 40, 20).to_json())
    assert plan["status"] == "OPTIMAL" and type(plan["channels"]) is int
    assert type(plan["bound"]) is int and isinstance(plan["servers"], list)


@pytest.mark.parametrize("policy_name", ["nalb", "exact"])
def test_episode_steps_one_decision_at_a_time(policy_name):
    """Driving an Episode by hand gives run_episode's result; it refuses a step after the end."""
    t = paper_topology("16:1-16", 64)
    reqs = Requests.generate(t, 30, 6)
    # exact: no per-request time limit, so a loaded machine cannot change its answers
    options = {"time_limit_s": None} if policy_name == "exact" else {}
    policy = make("network", policy_name, **options)
    episode = Episode(t, reqs, routing=policy.routing)
    policy.reset(t, reqs.seed)
    outcomes = []
    while not episode.done:
        outcomes.append(episode.step(policy.choose(episode.engine)))
        assert episode.index == sum(o != Outcome.PENDING for o in outcomes)
    mine = episode.result(policy.name)
    theirs = run_episode(t, reqs, make("network", policy_name, **options))
    for name in ("accepted", "num_servers", "spread", "utilization"):
        assert np.array_equal(getattr(mine, name), getattr(theirs, name)), name
    assert (
        (mine.ticks, mine.steps)
        == (theirs.ticks, theirs.steps)
        == (episode.engine.now + 1, len(outcomes))
    )
    assert episode.accepted_count == outcomes.count(Outcome.ACCEPTED) == mine.accepted.sum()
    with pytest.raises(InvalidInputError, match="the episode is over"):
        episode.step(0)


# -- one request outside an episode ----------------------------------------------------------------
def loaded_engine(t, count=30, seed=2) -> Engine:
    """An engine after ``count`` Tetris-served requests (a partly used data centre)."""
    episode = Episode(t, Requests.generate(t, count + 1, seed))
    tetris = make("network", "tetris")
    tetris.reset(t, seed)
    while episode.index < count:
        episode.step(tetris.choose(episode.engine))
    episode.engine.abort()  # the next request has arrived: give it up, the state stays
    return episode.engine


@pytest.mark.parametrize("name", ["tetris", "nalb", "random", "exact"])
def test_place_request_commits_or_not_and_replays(name):
    t = paper_topology("8:1-16", 64)
    engine = loaded_engine(t)
    state = lambda e: (
        e.free_cpu.tolist(),
        e.free_mem.tolist(),
        e.free_channels.tolist(),  # noqa
        e.active_requests,
    )
    before = state(engine)
    cpu, mem = 24, 40
    dry = place_request(engine, cpu, mem, 3, name, seed=1, commit=False)
    assert state(engine) == before
    placed = place_request(engine, cpu, mem, 3, name, seed=1)
    assert (dry is None) == (placed is None)
    if placed is None:
        assert state(engine) == before
        return
    assert (dry.servers, dry.paths, dry.channels) == (placed.servers, placed.paths, placed.channels)
    assert placed.status == Status.FEASIBLE and len(set(placed.servers)) == len(placed.servers)
    assert engine.active_requests == before[3] + 1
    assert sum(before[2]) - int(engine.free_channels.sum()) == placed.channels
    replay = loaded_engine(t)
    replay.begin(cpu, mem, 3)
    outcomes = [replay.step(s, list(p)) for s, p in zip(placed.servers, placed.paths)]
    assert outcomes[-1] == Outcome.ACCEPTED and state(replay) == state(engine)
    if name == "exact":  # the policy's plan is the exact model's: fewest channels
        plan = solve_request(t, *before[:3], cpu, mem)
        assert plan.channels == placed.channels


def test_place_request_takes_a_policy_object_and_reports_a_failure():
    t = tiny(channels=(1, 2, 1))
    engine = Engine(t)
    engine.begin(4, 4, 9)  # server 1's link carries nothing, but it holds a request
    engine.step(1)
    before = (engine.free_cpu.tolist(), engine.free_channels.tolist())
    # three servers of 4 units: each server's link (one channel) would carry two paths
    assert place_request(engine, 12, 12, 2, NULBPolicy()) is None
    assert (engine.free_cpu.tolist(), engine.free_channels.tolist()) == before
    assert engine.active_requests == 1 and engine.request is None
    tetris = TetrisPolicy()
    assert place_request(Engine(t), 4, 4, 1, tetris).servers == (0,)
    with pytest.raises(InvalidInputError, match="options .* are for a policy given by name"):
        place_request(Engine(t), 4, 4, 1, tetris, penalty=0.5)
    with pytest.raises(
        InvalidInputError, match="unknown option 'time_limit_s'.*valid options: penalty"
    ):
        place_request(Engine(t), 4, 4, 1, "tetris", time_limit_s=1)
    with pytest.raises(UnknownMethodError, match="unknown network policy 'best'"):
        place_request(Engine(t), 4, 4, 1, "best")
    with pytest.raises(InvalidInputError, match="engine must be"):
        place_request(t, 4, 4, 1)
    with pytest.raises(InvalidInputError, match="exceeds the free resources"):
        place_request(Engine(t), 40, 4, 1)
    with pytest.raises(InvalidInputError, match="policy must have"):
        place_request(Engine(t), 4, 4, 1, object())


# -- the exact model against brute force ---------------------------------------------------------
@st.composite
def tiny_states(draw):
    t = tiny(channels=(draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))))
    free_cpu = np.array(draw(st.lists(st.integers(0, 4), min_size=8, max_size=8)))
    free_mem = np.array(draw(st.lists(st.integers(0, 4), min_size=8, max_size=8)))
    free_ch = np.array([c - draw(st.integers(0, min(c, 1))) for c in t.link_capacity])
    cpu, mem = draw(st.integers(1, 10)), draw(st.integers(1, 10))
    return t, free_cpu, free_mem, free_ch, cpu, mem


@settings(max_examples=200, deadline=None)
@given(tiny_states())
def test_exact_matches_brute_force(state):
    t, free_cpu, free_mem, free_ch, cpu, mem = state
    plan = solve_request(t, free_cpu, free_mem, free_ch, cpu, mem, time_limit_s=10)
    best = fewest_channels(t, free_cpu, free_mem, free_ch, cpu, mem)
    if best is None:
        assert plan.status == Status.INFEASIBLE and not plan.has_solution
        return
    assert plan.status == Status.OPTIMAL and plan.channels == best
    assert plan.is_feasible(t, free_cpu, free_mem, free_ch, cpu, mem)
    # replayed through the engine, the plan is accepted with exactly its channels
    e = Engine(t)
    e.free_cpu[:], e.free_mem[:], e.free_channels[:] = free_cpu, free_mem, free_ch
    e.begin(cpu, mem, 1)
    outcomes = [e.step(s, list(p)) for s, p in zip(plan.servers, plan.paths)]
    assert outcomes[-1] == Outcome.ACCEPTED and Outcome.FAILED not in outcomes
    assert int((free_ch - e.free_channels).sum()) == plan.channels


@settings(max_examples=100, deadline=None)
@given(tiny_states(), st.lists(st.integers(0, 9), min_size=8, max_size=8))
def test_exact_tie_cost_breaks_ties_only(state, costs):
    """Any tie-break costs keep the fewest channels and get the least cost among such plans (no
    more than the default best-fit plan's)."""
    t, free_cpu, free_mem, free_ch, cpu, mem = state
    cost = np.array(costs)
    default = solve_request(t, free_cpu, free_mem, free_ch, cpu, mem, time_limit_s=10)
    plan = solve_request(t, free_cpu, free_mem, free_ch, cpu, mem, time_limit_s=10, tie_cost=cost)
    assert plan.status == default.status
    if default.has_solution:
        assert plan.is_feasible(t, free_cpu, free_mem, free_ch, cpu, mem)
        assert plan.channels == default.channels
        assert cost[list(plan.servers)].sum() <= cost[list(default.servers)].sum()


def test_exact_tie_cost_picks_the_cheapest_single_server_and_rejects_bad_costs():
    t = tiny()
    full = np.full(8, 4)
    assert solve_request(t, full, full, t.link_capacity, 3, 3).servers == (0,)
    cost = np.array([5, 5, 5, 1, 5, 5, 5, 5])
    assert solve_request(t, full, full, t.link_capacity, 3, 3, tie_cost=cost).servers == (3,)
    for bad in (np.ones(7, int), -np.ones(8, int), np.ones(8) / 2):
        with pytest.raises(InvalidInputError, match="tie_cost must hold 8 non-negative integers"):
            solve_request(t, full, full, t.link_capacity, 3, 3, tie_cost=bad)


def test_exact_on_a_paper_topology_mid_episode():
    t = paper_topology("8:1-16", 64)
    requests = Requests.generate(t, 40, 2)
    engine = Engine(t)
    policy = make("network", "tetris")
    policy.reset(t, 2)
    for i in range(len(requests)):  # a loaded data centre, as the exact policy meets it
        engine.advance(1)
        while not engine.fits(int(requests.cpu[i]), int(requests.mem[i])):
            engine.advance(1)
        engine.begin(int(requests.cpu[i]), int(requests.mem[i]), int(requests.holding[i]))
        while engine.step(policy.choose(engine)) == Outcome.PENDING:
            pass
    solved = 0
    for cpu, mem in ((20, 30), (60, 20), (90, 100)):
        state = (engine.free_cpu.copy(), engine.free_mem.copy(), engine.free_channels.copy())
        plan = solve_request(t, *state, cpu, mem, time_limit_s=20)
        assert plan.status in (Status.OPTIMAL, Status.INFEASIBLE)
        if plan.has_solution:
            solved += 1
            assert plan.is_feasible(t, *state, cpu, mem) and plan.bound == plan.channels
            engine.begin(cpu, mem, 1)
            outcomes = [engine.step(s, list(p)) for s, p in zip(plan.servers, plan.paths)]
            assert outcomes[-1] == Outcome.ACCEPTED and Outcome.FAILED not in outcomes
            assert int((state[2] - engine.free_channels).sum()) == plan.channels
            engine.advance(1)
    assert solved >= 1
    empty = solve_request(t, np.full(64, 16), np.full(64, 16), t.link_capacity, 100, 90)
    assert empty.status == Status.OPTIMAL and len(empty.servers) == 7 and empty.channels == 42
    assert t.spread(empty.servers) == 1  # one rack: 21 pairs x 2 server links


# -- bad input -----------------------------------------------------------------------------------
def test_bad_input_is_reported_clearly():
    with pytest.raises(InvalidInputError, match="unknown topology"):
        paper_topology("7:1-3", 64)
    with pytest.raises(InvalidInputError, match="servers must be one of 64, 1024"):
        paper_topology("8:1-16", 100)
    with pytest.raises(UnknownMethodError, match="unknown network policy 'best'"):
        make("network", "best")
    with pytest.raises(
        InvalidInputError, match="unknown option 'time_limit'.*'tetris'.*valid options: penalty"
    ):
        make("network", "tetris", time_limit=1)
    with pytest.raises(InvalidInputError, match="channels must be 3 positive"):
        tiny(channels=(1, 0, 1))
    with pytest.raises(InvalidInputError, match="racks_per_cluster"):
        DataCentre(
            clusters=1,
            racks_per_cluster=0,
            servers_per_rack=1,
            tier2_per_cluster=1,
            tier3_switches=1,
            channels=(1, 1, 1),
        )
    t = paper_topology("8:1-16", 64)
    with pytest.raises(InvalidInputError, match="count"):
        Requests.generate(t, 0)
    with pytest.raises(InvalidInputError, match="max_servers"):
        Requests.generate(t, 5, max_servers=65)
    with pytest.raises(InvalidInputError, match="load"):
        Requests.generate(t, 5, load=-1.0)
    with pytest.raises(InvalidInputError, match="routing"):
        Engine(t, routing="widest")
    e = Engine(t)
    with pytest.raises(InvalidInputError, match="begin"):
        e.step(0)
    with pytest.raises(InvalidInputError, match="cpu must be a positive integer"):
        e.begin(0, 4, 1)
    with pytest.raises(InvalidInputError, match="exceeds the free resources"):
        e.begin(2000, 4, 1)
    e.begin(40, 4, 1)
    e.step(3)
    with pytest.raises(InvalidInputError, match="cannot be chosen"):
        e.step(3)
    with pytest.raises(InvalidInputError, match="server must be an integer"):
        e.step(64)
    with pytest.raises(InvalidInputError, match="finish the current request"):
        e.advance(1)
    with pytest.raises(InvalidInputError, match="exceeds the data centre"):
        run_episode(tiny(), Requests.generate(t, 3, 0), make("network", "random"))
    with pytest.raises(InvalidInputError, match="policy must have"):
        run_episode(t, Requests.generate(t, 3, 0), object())
    assert issubclass(UnknownMethodError, TjapError)


# -- the command line ----------------------------------------------------------------------------
def test_cli_evaluate_json(capsys):
    from tjap.cli import main

    assert (
        main(
            [
                "network",
                "evaluate",
                "--topology",
                "16:1-4",
                "--servers",
                "64",
                "--policy",
                "nalb",
                "--requests",
                "24",
                "--seeds",
                "2",
                "--seed-base",
                "3",
                "--json",
                "--per-seed",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert {
        "acceptance",
        "cpu_utilization",
        "mem_utilization",
        "requests",
        "net_utilization_tier1",
        "net_utilization_tier2",
        "net_utilization_tier3",
        "spread_rack",
        "mean_accepted",
        "mean_ticks",
        "offered_load",
    } <= set(out)
    assert out["requests"] == 24 and out["seeds"] == 2 and out["seed_base"] == 3
    assert [ep["seed"] for ep in out["episodes"]] == [3, 4]
    assert all(type(ep["accepted"]) is int for ep in out["episodes"])
    direct = evaluate(
        paper_topology("16:1-4", 64),
        lambda: make("network", "nalb"),
        requests=24,
        seeds=2,
        seed_base=3,
    )
    assert out["acceptance"] == direct.acceptance
    assert (
        main(
            [
                "network",
                "evaluate",
                "--topology",
                "16:1-4",
                "--policy",
                "nalb",
                "--requests",
                "24",
                "--seeds",
                "2",
                "--seed",
                "3",
                "--workers",
                "2",
                "--json",
            ]
        )
        == 0
    )
    pooled = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in pooled.items() if k != "mean_runtime_s"} == {
        k: v for k, v in out.items() if k not in ("mean_runtime_s", "episodes")
    }


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--policy", "best"], "unknown network policy 'best'"),
        (["--policy", "tetris", "--time-limit", "2"], "unknown option 'time_limit_s'"),
        (["--topology", "8:1-3"], "unknown topology"),
        (["--policy", "exact", "--servers", "1024"], "64-server"),
        (["--max-servers", "100"], "max_servers"),
    ],
)
def test_cli_errors_are_one_line(capsys, argv, message):
    from tjap.cli import main

    assert main(["network", "evaluate", "--requests", "4", "--seeds", "1", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tjap: error:") and message in err and len(err.strip().splitlines()) == 1


def test_cli_rejects_bad_sizes(capsys):
    from tjap.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["network", "evaluate", "--servers", "100"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_policies_registry():
    assert set(methods("network")) >= set(HEURISTICS) | {"exact", "gnn"}
    for name in methods("network"):
        if get("network", name).learned:
            continue
        policy = make("network", name)
        assert policy.name == name and policy.routing in ("shortest", "balanced")


def test_arrive_moves_time_until_the_request_fits_and_refuses_one_that_never_can():
    t = tiny()
    e = Engine(t)
    e.arrive(32, 32, 3, first=True)  # the whole data centre, for 3 ticks
    assert e.now == 0 and e.need_cpu == 32
    assert e.step(int(np.flatnonzero(e.mask())[0])) in (Outcome.PENDING, Outcome.ACCEPTED)
    while e.request is not None:
        e.step(int(np.flatnonzero(e.mask())[0]))
    accepted = int(e.free_cpu.sum()) == 0
    e.arrive(1, 1, 1)
    assert e.now == (3 if accepted else 1)  # waited for the first request's release
    with pytest.raises(InvalidInputError, match="exceeds the data centre"):
        Engine(t).arrive(33, 1, 1, first=True)


# -- the look-ahead headroom diagnostic ------------------------------------------------------------
@pytest.mark.slow
def test_headroom_diagnostic_runs_every_mode_and_names_bad_modes(capsys):
    from benchmarks import network_headroom as headroom

    assert (
        headroom.main(
            [
                "--topologies",
                "8:1-16",
                "--seeds",
                "1",
                "--requests",
                "16",
                "--horizon",
                "3",
                "--samples",
                "1",
                "--workers",
                "1",
                "--json",
                "--quiet",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert [r["mode"] for r in out["episodes"]] == list(headroom.MODES)
    exact = out["episodes"][0]["acceptance"]
    assert (
        exact
        == evaluate(
            paper_topology("8:1-16"), lambda: make("network", "exact"), requests=16, seeds=1
        ).acceptance
    )
    for row in out["episodes"]:
        assert 0 < row["acceptance"] <= 1 and row["changed"] <= row["looked"] <= 16
    capsys.readouterr()
    with pytest.raises(SystemExit):
        headroom.main(["--modes", "oracle"])
    assert "unknown mode 'oracle'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["nalb", "tetris"])
def test_a_dry_run_replays_to_the_same_state(name):
    """A policy's dry run on a copy (its own routing) replays on the engine, through the recorded
    ``last_paths``, to exactly the copy's state."""
    from benchmarks.network_headroom import _commit, _dry_run

    t = paper_topology("8:1-16")
    reqs = Requests.generate(t, 30, 4)
    engine, policy = Engine(t, routing="shortest"), make("network", name)
    policy.reset(t, 4)
    replayed = 0
    for i in range(len(reqs)):
        engine.arrive(int(reqs.cpu[i]), int(reqs.mem[i]), int(reqs.holding[i]), first=i == 0)
        plan, after = _dry_run(policy, engine)
        if plan is None:
            engine.abort()
            continue
        _commit(engine, plan)
        replayed += 1
        for a in ("free_cpu", "free_mem", "free_channels"):
            assert np.array_equal(getattr(engine, a), getattr(after, a))
    assert replayed >= 10
