"""The free-form methods on any switch tree: ``freeform`` against a brute-force free-form oracle on
tiny irregular trees (2-4 switch levels, uneven leaf depths and sizes), below the SCAS optimum,
``freeform-greedy`` feasible and never better, the single-job DP against brute force, trees with
interchangeable subtrees (symmetry breaking), a FatTree against the same tree as a plain Topology,
and online scheduling (place_job, the window policy, the stream) on an irregular tree."""

from __future__ import annotations

import functools
import itertools
import math
import random

import numpy as np
import pytest
from conftest import make_window
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_cases import IRREGULAR, random_tree, random_window
from tree_cost_oracle import set_cost_bruteforce

import tjap
from tjap import InvalidInputError, Status, solve
from tjap.placement.tree.freeform import best_single_job_nodes
from tjap.placement.tree.online import place_job, replay
from tjap.placement.tree.stream import window_stream
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window
from tjap.placement.tree.workload import Workload

CONVENTIONS = ("paper", "published")
TOL = 1e-6


# -- brute force ----------------------------------------------------------------------------------
def set_cost(tree: Topology, nodes, convention: str) -> float:
    return set_cost_bruteforce(tree.switch_parent, tree.node_leaf, nodes, convention)


def freeform_oracle(w: Window, convention: str) -> float:
    """Cheapest assignment of disjoint idle node subsets to the jobs (no contiguity rule)."""
    tree = w.topology
    cost = functools.lru_cache(maxsize=None)(lambda nodes: set_cost(tree, nodes, convention))
    best = math.inf

    def rec(j, free, total):
        nonlocal best
        if j == w.num_jobs:
            best = min(best, total)
            return
        for nodes in itertools.combinations(sorted(free), w.job_sizes[j]):
            rec(j + 1, free - set(nodes), total + cost(nodes))

    rec(0, frozenset(w.idle_nodes.tolist()), 0.0)
    return best


def single_job_oracle(tree: Topology, idle, size: int, convention: str) -> float:
    return min(set_cost(tree, nodes, convention) for nodes in itertools.combinations(idle, size))


def check(w: Window, r, convention: str) -> None:
    """A feasible assignment whose objective is its cost by the pair-loop oracle."""
    assert r.window is w and r.has_solution and r.is_feasible()
    assert r.convention == convention
    assert r.objective == pytest.approx(
        sum(set_cost(w.topology, nodes, convention) for nodes in r.assignment), abs=TOL
    )


def random_shape(rng: random.Random, depth: int = 0):
    """A random subtree shape: ("leaf", node count) or ("switch", [child shapes])."""
    if depth < 2 and rng.random() < 0.6:
        return ("switch", [random_shape(rng, depth + 1) for _ in range(rng.randint(1, 3))])
    return ("leaf", rng.randint(1, 3))


def symmetric_tree(rng: random.Random, copies: int) -> Topology:
    """``copies`` identical random subtrees under one root, beside a shallow leaf ``z``:
    sibling subtrees that the free-form model's symmetry breaking may order. Copy ``i``'s
    switches and nodes are named ``c{i}_...`` alike."""
    shape = random_shape(rng, 1)
    entries = [
        {"name": "root", "switches": [f"c{i}_s" for i in range(copies)] + ["z"]},
        {"name": "z", "nodes": ["z1", "z2"]},
    ]

    def add(shape, name):
        kind, body = shape
        if kind == "leaf":
            entries.append({"name": name, "nodes": [f"{name}n{k}" for k in range(body)]})
        else:
            entries.append({"name": name, "switches": [f"{name}{k}" for k in range(len(body))]})
            for k, child in enumerate(body):
                add(child, f"{name}{k}")

    for i in range(copies):
        add(shape, f"c{i}_s")
    return Topology.from_dict({"switches": entries})


# -- freeform: exact on irregular trees -----------------------------------------------------------
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(30))
def test_freeform_matches_oracle_on_irregular_trees(seed, convention):
    w = random_window(seed, max_idle=8, max_jobs=3)
    best = freeform_oracle(w, convention)
    solver = "cpsat" if seed % 3 == 0 else "scip"
    r = solve(w, "freeform", convention=convention, seed=seed, solver=solver)
    assert r.status == Status.OPTIMAL and r.method == "freeform"
    assert r.objective == pytest.approx(best, abs=TOL)
    assert r.bound == pytest.approx(best, abs=1e-3)
    check(w, r, convention)
    assert r.objective <= solve(w, "dp", convention=convention).objective + TOL
    g = solve(w, "freeform-greedy", convention=convention, seed=seed)
    assert g.status == Status.FEASIBLE and g.method == "freeform-greedy"
    check(w, g, convention)
    assert g.objective >= best - TOL


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_freeform_hand_written_tree(convention):
    w = Window(IRREGULAR, ["a1", "a3", "d1", "d2", "e1", "b1", "b2", "b4", "c1", "c2"], [3, 2, 3])
    best = freeform_oracle(w, convention)
    for solver in ("scip", "cpsat"):
        r = solve(w, "freeform", convention=convention, solver=solver)
        assert r.status == Status.OPTIMAL
        assert r.objective == pytest.approx(best, abs=TOL)
        check(w, r, convention)
    warm = solve(w, "freeform", convention=convention, warm_start=solve(w, "dp"))
    assert warm.objective == pytest.approx(best, abs=TOL)


@pytest.mark.parametrize("seed", range(12))
def test_symmetry_breaking_keeps_the_optimum_on_interchangeable_subtrees(seed):
    """Two or three copies of one subtree (same idle nodes in each), and a shallow leaf."""
    rng = random.Random(seed)
    copies = rng.choice((2, 3))
    tree = symmetric_tree(rng, copies)
    suffixes = [v[3:] for v in tree.node_names if v.startswith("c0_")]
    chosen = rng.sample(suffixes, min(len(suffixes), rng.randint(1, 8 // copies)))
    idle = [f"c{i}_{v}" for i in range(copies) for v in chosen] + ["z1"]
    first = rng.randint(1, max(1, len(idle) // 2))
    sizes = [first] + ([rng.randint(1, min(3, len(idle) - first))] if len(idle) > first else [])
    w = Window(tree, idle, sizes)
    for convention in CONVENTIONS:
        r = solve(w, "freeform", convention=convention)
        assert r.status == Status.OPTIMAL
        assert r.objective == pytest.approx(freeform_oracle(w, convention), abs=TOL)
        check(w, r, convention)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from(CONVENTIONS))
def test_freeform_below_dp_and_greedy_on_random_trees(seed, convention):
    w = random_window(seed, max_idle=14, max_jobs=4)
    r = solve(w, "freeform", convention=convention, time_limit_s=20)
    assert r.status == Status.OPTIMAL
    check(w, r, convention)
    assert r.objective <= solve(w, "dp", convention=convention).objective + TOL
    g = solve(w, "freeform-greedy", convention=convention)
    check(w, g, convention)
    assert g.objective >= r.objective - TOL


def test_one_switch_tree_every_placement_costs_the_same():
    tree = Topology.from_dict({"switches": [{"name": "only", "nodes": "n[1-6]"}]})
    w = Window(tree, ["n2", "n3", "n5", "n6"], [2, 2])
    for convention in CONVENTIONS:
        for method in ("freeform", "freeform-greedy", "dp"):
            r = solve(w, method, convention=convention)
            check(w, r, convention)
            assert r.objective == pytest.approx(2 * set_cost(tree, [0, 1], convention))
        assert solve(w, "freeform", convention=convention).status == Status.OPTIMAL
    assert best_single_job_nodes(tree, np.array([1, 2, 4]), 2) == [1, 2]


# -- a fat-tree and the same tree as a Topology ---------------------------------------------------
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(10))
def test_fat_tree_and_its_topology_give_the_same_freeform_optimum(seed, convention):
    fat = make_window(seed, max_jobs=3)
    w = Window(fat.topology.as_tree(), fat.idle_nodes, fat.job_sizes)
    a = solve(fat, "freeform", convention=convention)
    b = solve(w, "freeform", convention=convention)
    assert a.status == b.status == Status.OPTIMAL
    assert b.objective == pytest.approx(a.objective, abs=TOL)
    assert b.assignment == a.assignment  # the same model, node for node
    assert (
        solve(w, "freeform-greedy", convention=convention).assignment
        == solve(fat, "freeform-greedy", convention=convention).assignment
    )
    for size in set(fat.job_sizes):
        assert best_single_job_nodes(w.topology, w.idle_nodes, size) == best_single_job_nodes(
            fat.topology, fat.idle_nodes, size
        )


# -- one job alone ----------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9))
def test_best_single_job_nodes_is_the_brute_force_minimum(seed):
    rng = random.Random(seed)
    tree = random_tree(rng)
    idle = sorted(rng.sample(range(tree.num_nodes), rng.randint(1, min(10, tree.num_nodes))))
    size = rng.randint(1, len(idle))
    got = best_single_job_nodes(tree, np.array(idle), size)
    assert len(got) == size and len(set(got)) == size and set(got) <= set(idle)
    assert got == sorted(got)
    for convention in CONVENTIONS:
        assert set_cost(tree, got, convention) == pytest.approx(
            single_job_oracle(tree, idle, size, convention), abs=TOL
        )
    assert place_job(tree, np.array(idle), size, "freeform") == got


def test_best_single_job_prefers_shallow_nodes_across_subtrees():
    """Leaves at depth 1 are two hops closer to each other than to a deep leaf's nodes: the
    best 3 nodes are the two shallow leaves' nodes, though they share no switch below the top."""
    tree = Topology.from_dict(
        {
            "switches": [
                {"name": "top", "switches": "x,y,deep"},
                {"name": "x", "nodes": "x[1-2]"},
                {"name": "y", "nodes": "y1"},
                {"name": "deep", "switches": "mid"},
                {"name": "mid", "switches": "leaf"},
                {"name": "leaf", "nodes": "d[1-2]"},
            ]
        }
    )
    idle = np.arange(tree.num_nodes)
    got = best_single_job_nodes(tree, idle, 3)
    assert [tree.node_names[v] for v in got] == ["x1", "x2", "y1"]
    for convention in CONVENTIONS:
        assert set_cost(tree, got, convention) == single_job_oracle(tree, idle, 3, convention)


# -- online scheduling on an irregular tree ---------------------------------------------------------
def small_workload(num_jobs=40, seed=3, max_nodes=6) -> Workload:
    rng = np.random.default_rng(seed)
    gaps = rng.integers(0, 20, num_jobs)
    return Workload(
        np.cumsum(gaps) - gaps[0],
        rng.integers(5, 120, num_jobs),
        rng.integers(1, max_nodes + 1, num_jobs),
    )


def assert_valid(tree, workload, schedule):
    busy = {}
    for j in range(workload.num_jobs):
        nodes = schedule.nodes[j]
        assert len(nodes) == len(set(nodes)) == workload.requested_nodes[j]
        assert all(0 <= v < tree.num_nodes for v in nodes)
        assert schedule.start_s[j] >= workload.arrival_s[j]
        for v in nodes:
            busy.setdefault(v, []).append(
                (schedule.start_s[j], schedule.start_s[j] + int(workload.runtime_s[j]))
            )
    for spans in busy.values():
        spans.sort()
        assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("method", ["dp", "freeform", "freeform-greedy", "seq"])
def test_window_replay_on_an_irregular_tree(method):
    workload = small_workload()
    schedule = replay(IRREGULAR, workload, policy="window", method=method, tau_s=30, cap=3)
    assert_valid(IRREGULAR, workload, schedule)
    metrics = schedule.metrics()
    assert metrics["jobs"] == workload.num_jobs and metrics["mean_cost_paper"] > 0
    job = schedule.to_dict()["jobs"][0]
    assert job["names"] == [IRREGULAR.node_names[v] for v in job["nodes"]]


@pytest.mark.parametrize("placement", ["firstfit", "contiguous", "freeform"])
@pytest.mark.parametrize("policy", ["fcfs", "easy"])
def test_per_job_policies_on_an_irregular_tree(policy, placement):
    """Every placement of the per-job policies runs on a tree that is no fat-tree: each job gets
    place_job's nodes among the nodes idle at its start (jobs starting together in arrival
    order), and those are the cheapest set (freeform) or the cheapest block (contiguous) by the
    pair-loop oracle."""
    workload = small_workload(seed=4)
    schedule = replay(IRREGULAR, workload, policy=policy, placement=placement)
    assert_valid(IRREGULAR, workload, schedule)
    busy_until = np.zeros(IRREGULAR.num_nodes, dtype=np.int64)
    for j in sorted(range(workload.num_jobs), key=lambda j: (schedule.start_s[j], j)):
        t, size = schedule.start_s[j], int(workload.requested_nodes[j])
        idle = np.flatnonzero(busy_until <= t)
        nodes = schedule.nodes[j]
        assert sorted(nodes) == sorted(place_job(IRREGULAR, idle, size, placement))
        if placement == "freeform":
            best = single_job_oracle(IRREGULAR, idle.tolist(), size, "paper")
            assert set_cost(IRREGULAR, nodes, "paper") == pytest.approx(best, abs=TOL)
        elif placement == "contiguous":
            m = idle.size
            blocks = [[int(idle[(p + i) % m]) for i in range(size)] for p in range(m)]
            best = min(set_cost(IRREGULAR, b, "paper") for b in blocks)
            assert nodes in blocks
            assert set_cost(IRREGULAR, nodes, "paper") == pytest.approx(best, abs=TOL)
        busy_until[nodes] = t + workload.runtime_s[j]


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_place_job_on_an_irregular_tree(convention):
    idle = IRREGULAR.node_indices(["a2", "d1", "d2", "e1", "b1", "b3", "c1", "c2"])
    for size in range(1, idle.size + 1):
        best = single_job_oracle(IRREGULAR, idle.tolist(), size, convention)
        free = place_job(IRREGULAR, idle, size, "freeform", convention)
        assert set_cost(IRREGULAR, free, convention) == pytest.approx(best, abs=TOL)
        block = place_job(IRREGULAR, idle, size, "contiguous", convention)
        assert set(block) <= set(idle.tolist()) and len(set(block)) == size
        assert set_cost(IRREGULAR, block, convention) >= best - TOL
        assert place_job(IRREGULAR, idle, size, "firstfit") == idle[:size].tolist()


def test_replay_rejects_a_non_topology():
    with pytest.raises(InvalidInputError, match="tjap.Topology"):
        replay("fat", small_workload())


def test_window_stream_on_an_irregular_tree_solved_by_freeform():
    windows = list(
        window_stream(
            IRREGULAR,
            small_workload(num_jobs=200, seed=5),
            num_windows=6,
            tau_s=30,
            epoch_windows=3,
            method="freeform",
        )
    )
    assert len(windows) == 6
    for w in windows:
        assert w.topology is IRREGULAR
        r = solve(w, "freeform")
        assert r.is_feasible() and r.objective <= solve(w, "dp").objective + TOL


def test_time_limit_covers_building_the_model():
    """On a big tree the model takes longer to build than a short limit: the limit still holds
    (no solution, or the warm start kept), instead of the solver getting its full limit after."""
    import time

    from tjap import solve
    from tjap.placement.tree.fat_tree import FatTree

    tree = FatTree(k=24)  # 3456 nodes, 288 edge switches
    rng = np.random.default_rng(0)
    idle = np.sort(rng.choice(tree.num_nodes, 2500, replace=False))
    w = Window(tree, idle, [30, 25, 40, 33, 12])
    dp = solve(w, "dp")
    for warm in (None, dp):
        started = time.perf_counter()
        r = solve(w, "freeform", time_limit_s=0.05, warm_start=warm)
        assert time.perf_counter() - started < 3.0  # 0.05 s asked; generous for CI noise
        if warm is None:
            assert r.status.value in ("TIME_LIMIT", "FEASIBLE", "OPTIMAL")
        else:
            assert r.is_feasible() and r.objective <= dp.objective + 1e-6


@pytest.mark.parametrize(
    "warm, message",
    [
        ("x", "warm_start must be a Result of this window or one list"),
        ([[0, 1]], "warm_start has 1 node lists, the window 2 jobs"),
        ([[0, 1, 2], [2, 3]], "job 1 gets node 2"),
        ([[0, 1], [2, 3]], "job 0 gets 2 nodes, it asks for 3"),
        ([["a", 1, 2], [3, 4]], "not lists of integer node ids"),
    ],
)
def test_a_bad_warm_start_is_one_line(warm, message):
    """It used to be a bare ValueError or ``KeyError: 57`` from deep inside."""
    pytest.importorskip("pyscipopt")
    window = tjap.Window(
        tjap.FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2),
        idle_nodes=range(12),
        job_sizes=[3, 2],
    )
    with pytest.raises(InvalidInputError, match=message) as info:
        tjap.solve(window, "freeform", warm_start=warm)
    assert "\n" not in str(info.value)


def test_a_warm_start_of_another_window_is_refused():
    pytest.importorskip("pyscipopt")
    tree = tjap.FatTree(num_nodes=64, nodes_per_switch=4, switches_per_pod=4)
    other = tjap.solve(tjap.Window(tree, range(60), [3, 2]), "dp")
    window = tjap.Window(tree, range(4, 64), [3, 2])
    with pytest.raises(InvalidInputError, match="a Result of another window"):
        tjap.solve(window, "freeform", warm_start=other)
    ok = tjap.solve(window, "freeform", warm_start=tjap.solve(window, "dp"))
    assert ok.is_feasible()
