"""Exact methods against brute-force oracles on tiny windows, and the solve() entry point.

The SCAS oracle enumerates one start position per job (blocks D(p, n_j) wrap to the head of Q) and
keeps the cheapest tuple of pairwise disjoint blocks. The free-form oracle enumerates every way to
give each job its own node subset. Costs in both oracles come from a plain pair loop.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tjap
from tjap import (
    FatTree,
    InvalidInputError,
    Result,
    StateSpaceTooLargeError,
    Status,
    UnknownMethodError,
    Window,
    assignment_cost,
    solve,
)
from tjap.placement.tree import csp
from tjap.placement.tree.scas import is_scas
from tjap.registry import get as get_method

#: four base blocks of four nodes, for the methods of Slurm's block rule
BLOCK_TREE = tjap.Topology.from_slurm(
    "\n".join(f"BlockName=b{i} Nodes=g[{4 * i + 1}-{4 * i + 4}]" for i in range(4))
)

CONVENTIONS = ("paper", "published")
SCAS_EXACT = ("dp", "scip", "cpsat")
TOL = 1e-6


# -- brute-force cost and oracles -----------------------------------------------------------------
def pair_cost(t: FatTree, nodes, convention: str) -> float:
    """Cost of a node set by a plain loop over node pairs (both conventions)."""
    nodes = [int(v) for v in nodes]
    n = len(nodes)
    per_pod = t.nodes_per_switch * t.switches_per_pod
    total = 0
    for x in range(n):
        for y in range(x + 1, n):
            a, b = nodes[x], nodes[y]
            level = (
                0
                if a // t.nodes_per_switch == b // t.nodes_per_switch
                else 1
                if a // per_pod == b // per_pod
                else 2
            )
            total += 1000 * ((2, 4, 6) if convention == "paper" else (1, 3, 5))[level]
    if convention == "paper":
        return 2 * total / n  # each unordered pair counted twice
    return max(1, total // n)


def scas_oracle(w: Window, convention: str):
    """(best cost, best cost without a wrapping block) over all disjoint SCAS start tuples."""
    m = w.num_idle
    cost, cover = {}, {}
    for n in set(w.job_sizes):
        for p in range(m):
            block = [int(w.idle_nodes[(p + i) % m]) for i in range(n)]
            cost[n, p] = pair_cost(w.topology, block, convention)
            cover[n, p] = frozenset((p + i) % m for i in range(n))
    best = [math.inf, math.inf]

    def rec(j, used, total, wraps):
        if j == w.num_jobs:
            best[0] = min(best[0], total)
            if not wraps:
                best[1] = min(best[1], total)
            return
        n = w.job_sizes[j]
        for p in range(m):
            if not used & cover[n, p]:
                rec(j + 1, used | cover[n, p], total + cost[n, p], wraps or p + n > m)

    rec(0, frozenset(), 0.0, False)
    return best[0], best[1]


def freeform_oracle(w: Window, convention: str) -> float:
    """Minimum total cost over every assignment of disjoint node subsets (no contiguity rule)."""
    idle = [int(v) for v in w.idle_nodes]
    best = math.inf

    def rec(j, free, total):
        nonlocal best
        if j == w.num_jobs:
            best = min(best, total)
            return
        for nodes in itertools.combinations(sorted(free), w.job_sizes[j]):
            rec(j + 1, free - set(nodes), total + pair_cost(w.topology, nodes, convention))

    rec(0, set(idle), 0.0)
    return best


def check_result(w: Window, r: Result, convention: str, *, scas: bool) -> None:
    """Invariants every returned Result must satisfy."""
    assert r.window is w
    assert r.has_solution
    assert r.is_feasible()
    assert r.convention == convention
    assert len(r.assignment) == w.num_jobs
    for nodes, n in zip(r.assignment, w.job_sizes):
        assert len(nodes) == n
    assert r.objective == pytest.approx(
        assignment_cost(w.topology, r.assignment, convention), abs=TOL
    )
    assert r.objective == pytest.approx(
        sum(pair_cost(w.topology, nodes, convention) for nodes in r.assignment), abs=TOL
    )
    if scas:
        assert is_scas(w, r.assignment)
    assert r.runtime_s >= 0


def wraps(w: Window, assignment) -> bool:
    """True if some job's block runs from the tail of Q to its head."""
    m = w.num_idle
    position = {int(v): i for i, v in enumerate(w.idle_nodes)}
    for nodes in assignment:
        held = {position[v] for v in nodes}
        if len(held) < m and 0 in held and m - 1 in held:
            return True
    return False


# -- windows whose every optimum wraps ------------------------------------------------------------
T16_2_2 = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
T16_3_2 = FatTree(num_nodes=16, nodes_per_switch=3, switches_per_pod=2)
T18_2_3 = FatTree(num_nodes=18, nodes_per_switch=2, switches_per_pod=3)

WRAP_WINDOWS = [
    (T16_2_2, [0, 4, 5, 6, 7, 15], [4, 2]),
    (T16_2_2, [0, 4, 5, 6, 7, 15], [2, 4]),
    (T16_3_2, [4, 5, 7, 8, 9, 13, 14], [4, 3]),
    (T18_2_3, [0, 3, 6, 7, 8, 9, 10, 13], [3, 4]),
    (T16_3_2, [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14], [3, 7, 3]),
    (T18_2_3, [0, 1, 3, 4, 5, 8, 9, 10, 12, 13, 14, 16], [6, 2, 3]),
    (T16_2_2, [0, 1, 3, 4, 5, 7, 9, 10, 12, 13, 14, 15], [7, 1]),
    (T16_3_2, [0, 1, 2, 3, 4, 6, 7, 9, 10, 11, 12, 13, 14, 15], [6, 7, 1]),
]
WRAP_IDS = [f"wrap{i}" for i in range(len(WRAP_WINDOWS))]


@pytest.fixture(params=range(len(WRAP_WINDOWS)), ids=WRAP_IDS)
def forced_wrap(request):
    t, idle, sizes = WRAP_WINDOWS[request.param]
    return Window(t, idle, sizes)


# -- SCAS: dp, scip, cpsat against the oracle -----------------------------------------------------
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(60))
def test_dp_matches_oracle(seed, convention, window_factory):
    w = window_factory(seed)
    best, _ = scas_oracle(w, convention)
    r = solve(w, "dp", convention=convention, seed=seed)
    assert r.status == Status.OPTIMAL
    assert r.method == "dp"
    assert r.objective == pytest.approx(best, abs=TOL)
    assert r.bound == pytest.approx(best, abs=TOL)
    assert r.gap == pytest.approx(0, abs=1e-9)
    check_result(w, r, convention, scas=True)


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(100, 130))
def test_dp_many_jobs_matches_oracle(seed, convention, window_factory):
    """Up to 5 jobs, often of equal sizes, so size classes hold several jobs."""
    w = window_factory(seed, min_idle=6, max_idle=11, max_jobs=5, max_size=3)
    best, _ = scas_oracle(w, convention)
    r = solve(w, "dp", convention=convention)
    assert r.status == Status.OPTIMAL
    assert r.objective == pytest.approx(best, abs=TOL)
    check_result(w, r, convention, scas=True)


@st.composite
def tiny_windows(draw):
    per_switch = draw(st.integers(1, 4))
    per_pod = draw(st.integers(1, 3))
    num_nodes = draw(st.integers(2, 20))
    t = FatTree(num_nodes=num_nodes, nodes_per_switch=per_switch, switches_per_pod=per_pod)
    idle = draw(
        st.lists(
            st.integers(0, num_nodes - 1), min_size=1, max_size=min(num_nodes, 12), unique=True
        )
    )
    sizes = draw(
        st.lists(st.integers(1, len(idle)), min_size=1, max_size=3).filter(
            lambda s: sum(s) <= len(idle)
        )
    )
    return Window(t, idle, sizes)


@settings(max_examples=200, deadline=None)
@given(tiny_windows(), st.sampled_from(CONVENTIONS))
def test_dp_matches_oracle_property(w, convention):
    best, _ = scas_oracle(w, convention)
    r = solve(w, "dp", convention=convention)
    assert r.status == Status.OPTIMAL
    assert r.objective == pytest.approx(best, abs=TOL)
    assert r.is_feasible() and is_scas(w, r.assignment)
    assert r.objective == pytest.approx(assignment_cost(w.topology, r.assignment, convention))


def test_random_windows_include_forced_wraps(window_factory):
    """The seeds of the oracle tests do exercise windows whose optimum must wrap."""
    forced = []
    for s in range(60):
        best, best_linear = scas_oracle(window_factory(s), "paper")
        if best_linear > best + TOL:
            forced.append(s)
    assert len(forced) >= 2, forced


@pytest.mark.parametrize("method", ["scip", "cpsat"])
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(40))
def test_mip_matches_oracle(seed, convention, method, window_factory):
    w = window_factory(seed)
    best, _ = scas_oracle(w, convention)
    r = solve(w, method, convention=convention, seed=seed)
    assert r.status == Status.OPTIMAL
    assert r.method == method
    assert r.objective == pytest.approx(best, abs=TOL)
    assert r.bound is not None and r.bound <= r.objective + TOL
    assert r.info["formulation"] == "set-packing"
    check_result(w, r, convention, scas=True)


@pytest.mark.parametrize("method", ["scip-paper", "cpsat-paper"])
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", [3, 11, 47])
def test_paper_formulations_match_oracle(seed, convention, method, window_factory):
    w = window_factory(seed, max_idle=10)
    best, _ = scas_oracle(w, convention)
    r = solve(w, method, convention=convention)
    assert r.status == Status.OPTIMAL
    assert r.method == method
    assert r.info["formulation"] == "paper"
    assert r.objective == pytest.approx(best, abs=TOL)
    check_result(w, r, convention, scas=True)


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_forced_wrap(forced_wrap, convention):
    w = forced_wrap
    best, best_linear = scas_oracle(w, convention)
    assert best_linear > best + TOL, "this window must need a wrapping block"
    for method in SCAS_EXACT + ("auto",):
        r = solve(w, method, convention=convention)
        assert r.status == Status.OPTIMAL, method
        assert r.objective == pytest.approx(best, abs=TOL), method
        assert wraps(w, r.assignment), method
        check_result(w, r, convention, scas=True)


def test_forced_wrap_paper_formulations(wrap_window):
    for convention in CONVENTIONS:
        best, best_linear = scas_oracle(wrap_window, convention)
        assert best_linear > best
        for method in ("scip-paper", "cpsat-paper"):
            r = solve(wrap_window, method, convention=convention)
            assert r.status == Status.OPTIMAL
            assert r.objective == pytest.approx(best, abs=TOL)
            assert wraps(wrap_window, r.assignment)


def test_wrap_window_solution(wrap_window):
    r = solve(wrap_window, "dp")
    assert r.assignment == ((4, 5, 6, 7), (15, 0))
    assert r.objective == 16000.0


def test_single_job_taking_all_idle_nodes(tree):
    w = Window(tree, [1, 2, 6, 9, 12], [5])
    expected = pair_cost(tree, w.idle_nodes, "paper")
    for method in SCAS_EXACT + ("seq", "freeform", "freeform-greedy"):
        r = solve(w, method)
        assert sorted(r.assignment[0]) == [1, 2, 6, 9, 12]
        assert r.objective == pytest.approx(expected)


def test_one_node_jobs(tree):
    w = Window(tree, [3, 7, 8], [1, 1, 1])
    for convention, per_job in (("paper", 0.0), ("published", 1.0)):
        for method in SCAS_EXACT + ("freeform", "freeform-greedy", "seq"):
            r = solve(w, method, convention=convention)
            assert r.objective == 3 * per_job
            assert r.is_feasible()


# -- free-form ------------------------------------------------------------------------------------
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(200, 215))
def test_freeform_matches_oracle(seed, convention, window_factory):
    w = window_factory(seed, min_idle=4, max_idle=8, max_jobs=2)
    best = freeform_oracle(w, convention)
    scas_best, _ = scas_oracle(w, convention)
    r = solve(w, "freeform", convention=convention, seed=seed)
    assert r.status == Status.OPTIMAL
    assert r.method == "freeform"
    assert r.objective == pytest.approx(best, abs=TOL)
    assert r.objective <= scas_best + TOL
    assert r.bound == pytest.approx(best, abs=1e-3)
    check_result(w, r, convention, scas=False)

    g = solve(w, "freeform-greedy", convention=convention, seed=seed)
    assert g.status == Status.FEASIBLE
    assert g.objective >= best - TOL
    check_result(w, g, convention, scas=False)


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", [201, 207])
def test_freeform_scip_matches_oracle(seed, convention, window_factory):
    w = window_factory(seed, min_idle=4, max_idle=8, max_jobs=2)
    r = solve(w, "freeform", convention=convention, solver="scip")
    assert r.status == Status.OPTIMAL
    assert r.objective == pytest.approx(freeform_oracle(w, convention), abs=TOL)
    check_result(w, r, convention, scas=False)


def test_freeform_three_jobs():
    w = Window(T16_2_2, [0, 2, 3, 5, 8, 9, 14], [2, 2, 3])
    for convention in CONVENTIONS:
        r = solve(w, "freeform", convention=convention)
        assert r.status == Status.OPTIMAL
        assert r.objective == pytest.approx(freeform_oracle(w, convention), abs=TOL)


def test_freeform_beats_scas_strictly():
    # Pod 0 of T18_2_3 holds switches {0,1}, {2,3}, {4,5}. The best 4 nodes are {0, 1, 4, 5} (two
    # full switches), which skip node 2 of Q, so no SCAS block can take them.
    w = Window(T18_2_3, [0, 1, 2, 4, 5, 17], [4])
    for convention in CONVENTIONS:
        ff = freeform_oracle(w, convention)
        sc, _ = scas_oracle(w, convention)
        assert ff < sc - TOL
        r = solve(w, "freeform", convention=convention)
        assert r.status == Status.OPTIMAL
        assert sorted(r.assignment[0]) == [0, 1, 4, 5]
        assert r.objective == pytest.approx(ff, abs=TOL)
        assert not is_scas(w, r.assignment)
        assert solve(w, "dp", convention=convention).objective == pytest.approx(sc, abs=TOL)
    assert solve(w, "freeform").objective == 10000.0


def test_freeform_warm_start_never_worse(window_factory):
    w = window_factory(5, min_idle=8, max_idle=10, max_jobs=2)
    g = solve(w, "freeform-greedy")
    r = solve(w, "freeform", warm_start=g)
    assert r.objective <= g.objective + TOL
    assert r.is_feasible()


def test_freeform_unknown_solver(window_factory):
    with pytest.raises(InvalidInputError, match="solver"):
        solve(window_factory(1), "freeform", solver="gurobi")


# -- seq ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(10))
def test_seq_takes_next_idle_nodes(seed, window_factory):
    w = window_factory(seed)
    r = solve(w, "seq")
    q = w.idle_nodes.tolist()
    offset = 0
    for nodes, n in zip(r.assignment, w.job_sizes):
        assert list(nodes) == q[offset : offset + n]
        offset += n
    assert r.status == Status.FEASIBLE
    for convention in CONVENTIONS:
        r = solve(w, "seq", convention=convention)
        check_result(w, r, convention, scas=True)
        assert r.objective >= scas_oracle(w, convention)[0] - TOL


# -- determinism ----------------------------------------------------------------------------------
@pytest.mark.parametrize("method", tjap.methods())
def test_same_seed_same_assignment(method, window_factory):
    if method == "nsa":
        pytest.importorskip("torch")
        from tjap.learned.tree.policy import DEFAULT_WEIGHTS

        if not DEFAULT_WEIGHTS.exists():
            pytest.skip("no shipped NSA weights")
    blocks = get_method("tree", method).blocks  # Slurm's block rule: block clusters
    for s in (7, 31):
        w = window_factory(s, min_idle=8, max_idle=12)
        if blocks:
            idle = sorted(np.random.default_rng(s).choice(16, 10, replace=False).tolist())
            w = Window(BLOCK_TREE, idle, [2, 3])
        a = solve(w, method, seed=4)
        b = solve(w, method, seed=4)
        assert a.assignment == b.assignment
        assert a.objective == b.objective
        assert a.status == b.status
        # a fresh but equal window gives the same answer too
        c = solve(Window.from_json(w.to_json()), method, seed=4)
        assert c.assignment == a.assignment


# -- dp limits and auto ---------------------------------------------------------------------------
def test_dp_state_space_too_large(window_factory):
    w = window_factory(3, min_idle=10, max_idle=10, max_jobs=3)
    cells = csp.dp_table_cells(w)
    assert cells == (w.num_idle + 1) * csp.num_dp_states(w)
    with pytest.raises(StateSpaceTooLargeError, match="auto") as info:
        solve(w, "dp", max_cells=cells - 1)
    assert isinstance(info.value, tjap.TjapError)
    r = solve(w, "dp", max_cells=cells)  # exactly at the limit is fine
    assert r.status == Status.OPTIMAL


def test_num_dp_states():
    w = Window(T16_2_2, list(range(12)), [2, 3, 2, 1, 2])
    sizes, counts = csp.size_classes(w)
    assert sizes.tolist() == [2, 3, 1]
    assert counts.tolist() == [3, 1, 1]
    assert csp.num_dp_states(w) == 4 * 2 * 2
    assert csp.dp_table_cells(w) == 13 * 16


def test_auto_uses_dp_for_small_windows(window_factory):
    w = window_factory(9)
    r = solve(w, "auto")
    assert r.method == "dp"
    assert r.status == Status.OPTIMAL
    assert solve(w).method == "dp"  # auto is the default


def test_auto_falls_back_to_scip(monkeypatch, window_factory):
    w = window_factory(9)
    expected = solve(w, "dp").objective
    monkeypatch.setattr(csp, "AUTO_DP_CELLS", 1)
    r = solve(w, "auto")
    assert r.method == "scip"
    assert r.status == Status.OPTIMAL
    assert r.objective == pytest.approx(expected, abs=TOL)


# -- solve() arguments ----------------------------------------------------------------------------
def test_unknown_method_lists_methods(window_factory):
    w = window_factory(0)
    with pytest.raises(UnknownMethodError) as info:
        solve(w, "simplex")
    msg = str(info.value)
    assert "'simplex'" in msg
    for name in tjap.methods():
        assert name in msg
    assert isinstance(info.value, tjap.TjapError)


def test_methods_listing():
    names = tjap.methods()
    assert names[0] == "auto"
    for name in (
        "dp",
        "scip",
        "cpsat",
        "scip-paper",
        "cpsat-paper",
        "freeform",
        "freeform-greedy",
        "seq",
    ):
        assert name in names


@pytest.mark.parametrize("limit", [0, -1, -0.5, float("nan")])
def test_non_positive_time_limit(limit, window_factory):
    with pytest.raises(InvalidInputError, match="time_limit_s"):
        solve(window_factory(0), "scip", time_limit_s=limit)


def test_positive_time_limit_is_accepted(window_factory):
    w = window_factory(2)
    for method in ("dp", "scip", "cpsat", "freeform"):
        assert solve(w, method, time_limit_s=30).status == Status.OPTIMAL


def test_solve_argument_errors(window_factory):
    w = window_factory(0)
    with pytest.raises(InvalidInputError, match="Window"):
        solve(w.to_dict(), "dp")
    with pytest.raises(InvalidInputError, match="convention"):
        solve(w, "dp", convention="code")
    with pytest.raises(InvalidInputError, match="formulation"):
        solve(w, "scip", formulation="strong")


def test_result_serialises(window_factory):
    import json

    w = window_factory(4)
    r = solve(w, "dp")
    d = json.loads(r.to_json())
    assert d["method"] == "dp" and d["status"] == "OPTIMAL"
    assert d["assignment"] == [list(a) for a in r.assignment]
    assert d["objective"] == pytest.approx(r.objective)


def test_result_infeasible_assignments(tree):
    w = Window(tree, [0, 1, 2, 3], [2, 2])

    def make(assignment):
        return Result.from_assignment(
            w, assignment, status=Status.FEASIBLE, method="x", convention="paper", runtime_s=0.0
        )

    assert make([[0, 1], [2, 3]]).is_feasible()
    assert not make([[0, 1], [1, 2]]).is_feasible()  # shared node
    assert not make([[0, 1], [2, 5]]).is_feasible()  # not idle
    assert not make([[0, 1], [2]]).is_feasible()  # wrong size
    assert not make([[0, 1]]).is_feasible()  # missing job
    assert not is_scas(w, [[0, 2]])  # a gap in Q
    assert is_scas(w, [[3, 0]])  # D(3, 2) wraps


# -- the paper's CSP graph ------------------------------------------------------------------------
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(6))
def test_csp_graph_arcs(seed, convention, window_factory):
    w = window_factory(seed)
    g = csp.graph(w, convention)
    m = w.num_idle
    assert isinstance(g, nx.MultiDiGraph)
    assert sorted(g.nodes) == list(range(m + 1))
    assert g.nodes[m]["node_id"] is None
    assert [g.nodes[p]["node_id"] for p in range(m)] == w.idle_nodes.tolist()
    transitions = [(u, v, d) for u, v, d in g.edges(data=True) if d["kind"] == "transition"]
    operations = [(u, v, d) for u, v, d in g.edges(data=True) if d["kind"] == "operation"]
    assert len(transitions) + len(operations) == g.number_of_edges()
    assert sorted((u, v) for u, v, _ in transitions) == [(p, p + 1) for p in range(m)]
    assert all(d["weight"] == 0 for _, _, d in transitions)
    sizes = sorted(set(w.job_sizes))
    assert len(operations) == sum(m - r + 1 for r in sizes)
    for u, v, d in operations:
        r = d["size"]
        assert r in sizes and v - u == r
        assert d["weight"] == pytest.approx(pair_cost(w.topology, w.block(u, r), convention))
        assert d["weight"] == w.block_costs(r, convention)[u]
        assert list(d["span"]) == w.block(u, r).tolist()
    assert nx.is_directed_acyclic_graph(g)


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(300, 340))
def test_csp_shortest_path_one_job(seed, convention, window_factory):
    w = window_factory(seed, max_jobs=1)
    assert w.num_jobs == 1
    n = w.job_sizes[0]
    g = csp.graph(w, convention)
    best_arc = min(
        d["weight"] for _, _, d in g.edges(data=True) if d["kind"] == "operation" and d["size"] == n
    )
    best, best_linear = scas_oracle(w, convention)
    assert best_arc == pytest.approx(best_linear, abs=TOL)
    r = solve(w, "dp", convention=convention)
    if best_linear <= best + TOL:  # the optimum does not need to wrap
        assert r.objective == pytest.approx(best_arc, abs=TOL)
    else:
        assert r.objective < best_arc


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(40))
def test_csp_constrained_shortest_path(seed, convention, window_factory):
    """The cheapest 0 -> |Q| path with count_r operation arcs of each size r is the best
    non-wrapping SCAS placement."""
    w = window_factory(seed, max_idle=10)
    g = csp.graph(w, convention)
    m = w.num_idle
    need = tuple(sorted(w.job_sizes))
    # label-setting over (vertex, multiset of sizes still to place) in topological order
    dist = {(0, need): 0.0}
    for u in range(m):
        for (_vertex, left), d0 in [(k, v) for k, v in dist.items() if k[0] == u]:
            for _, v, d in g.out_edges(u, data=True):
                if d["kind"] == "operation":
                    if d["size"] not in left:
                        continue
                    rest = list(left)
                    rest.remove(d["size"])
                    key = (v, tuple(rest))
                else:
                    key = (v, left)
                dist[key] = min(dist.get(key, math.inf), d0 + d["weight"])
    best, best_linear = scas_oracle(w, convention)
    assert dist.get((m, ()), math.inf) == pytest.approx(best_linear, abs=TOL)
    assert solve(w, "dp", convention=convention).objective <= best_linear + TOL


# -- light import ---------------------------------------------------------------------------------
def _modules_loaded_by_import_tjap(names):
    code = f"import sys, tjap; print(','.join(m for m in {tuple(names)!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return [m for m in out.stdout.strip().split(",") if m]


def test_import_does_not_load_torch():
    assert "torch" not in _modules_loaded_by_import_tjap(["torch"])


def test_import_does_not_load_solvers():
    # the package docstring: importing tjap loads numpy and numba kernels only
    assert _modules_loaded_by_import_tjap(["pyscipopt", "ortools", "networkx"]) == []
