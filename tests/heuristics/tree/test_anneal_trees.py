"""The DCAS search methods (sa, lns) on any switch tree: the count-form kernels against the
brute-force pairwise oracle on random irregular trees (2-4 switch levels, uneven leaf depths and
sizes), every solution feasible and DCAS, its cost between the free-form and DCAS optima found by
enumeration, determinism by seed, the two walks of the cost kernel (one pass on a two-row form,
one pass per row otherwise) against each other, a fat-tree and its as_tree() giving the same
search, and the learned repair refusing a general tree in one line."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from conftest import make_window
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_cases import IRREGULAR, random_tree, random_window, scas_oracle, tree_cost

from tjap import InvalidInputError, solve
from tjap.heuristics.tree import _kernels
from tjap.placement.tree import _dcas_kernels
from tjap.placement.tree.cost import convention_code
from tjap.placement.tree.dcas import Arrays, decode, is_dcas
from tjap.placement.tree.window import Window

CONVENTIONS = ("paper", "published")
TOL = 1e-6


# -- brute-force optima on tiny windows -----------------------------------------------------------
def freeform_optimum(w: Window, convention: str) -> float:
    """Cheapest assignment of pairwise disjoint idle node sets of the jobs' sizes (any sets)."""
    idle = [int(v) for v in w.idle_nodes]
    best = math.inf

    def rec(j, free, total):
        nonlocal best
        if total >= best:
            return
        if j == w.num_jobs:
            best = total
            return
        for nodes in itertools.combinations(free, w.job_sizes[j]):
            rest = [v for v in free if v not in nodes]
            rec(j + 1, rest, total + tree_cost(w, nodes, convention))

    rec(0, idle, 0.0)
    return best


def dcas_optimum(w: Window, convention: str) -> float:
    """Cheapest DCAS solution: every job order and every start of every step."""
    best = math.inf
    for order in itertools.permutations(range(w.num_jobs)):
        lengths, left = [], w.num_idle
        for j in order:
            lengths.append(left)
            left -= w.job_sizes[j]
        for starts in itertools.product(*(range(n) for n in lengths)):
            assignment = decode(w, order, starts)
            best = min(best, sum(tree_cost(w, nodes, convention) for nodes in assignment))
    return best


def oracle_cost(w: Window, assignment, convention: str) -> float:
    return sum(tree_cost(w, nodes, convention) for nodes in assignment)


def check_dcas_result(w: Window, r, convention: str) -> None:
    """Feasible, DCAS, and both the Result's cost and the kernel's cost of its (order, starts)
    equal the pairwise oracle's."""
    assert r.has_solution and r.is_feasible()
    idle = set(int(v) for v in w.idle_nodes)
    held = [v for nodes in r.assignment for v in nodes]
    assert len(held) == len(set(held)) and set(held) <= idle
    assert [len(nodes) for nodes in r.assignment] == list(w.job_sizes)
    assert is_dcas(w, r.assignment)
    expected = oracle_cost(w, r.assignment, convention)
    assert r.objective == pytest.approx(expected, abs=TOL)
    a = Arrays(w)
    kernel = _kernels.solution_cost(
        *a.tree,
        convention_code(convention),
        a.sizes,
        np.array(r.info["order"], np.int64),
        np.array(r.info["starts"], np.int64),
    )
    assert kernel == pytest.approx(expected, abs=TOL)


# -- the search methods on irregular trees --------------------------------------------------------
SEARCHES = [
    ("sa", {"preset": "paper", "iterations": 300}),
    ("sa", {"preset": "best", "iterations": 100}),
    ("sa", {"preset": "paper", "iterations": 200, "repair": "uniform"}),
    ("lns", {"iterations": 100}),
    ("lns", {"iterations": 100, "repair": "paper"}),
]


@pytest.mark.parametrize("method, options", SEARCHES)
@pytest.mark.parametrize("seed", range(12))
def test_search_on_random_trees_is_a_costed_dcas_solution(seed, method, options):
    w = random_window(seed, max_idle=8, max_jobs=3)
    convention = CONVENTIONS[seed % 2]
    r = solve(w, method, seed=seed, convention=convention, **options)
    check_dcas_result(w, r, convention)
    assert r.node_names() and all(isinstance(n, str) for nodes in r.node_names() for n in nodes)


@pytest.mark.parametrize("seed", range(16))
def test_search_lies_between_the_freeform_and_dcas_optima(seed):
    """DCAS contains SCAS, so its optimum is never above SCAS's, never below the free-form one;
    no search result is below the DCAS optimum, and LNS (starting from the exact SCAS optimum)
    never ends above SCAS's."""
    w = random_window(1000 + seed, max_idle=7, max_jobs=3)
    convention = CONVENTIONS[seed % 2]
    free_form, dcas, scas = (
        freeform_optimum(w, convention),
        dcas_optimum(w, convention),
        scas_oracle(w, convention),
    )
    assert free_form - TOL <= dcas <= scas + TOL
    sa = solve(w, "sa", seed=seed, convention=convention, iterations=200)
    lns = solve(w, "lns", seed=seed, convention=convention, iterations=100)
    for r in (sa, lns):
        check_dcas_result(w, r, convention)
        assert r.objective >= dcas - TOL
    assert lns.objective <= scas + TOL


def test_search_finds_the_dcas_optimum_on_the_hand_written_tree():
    """A window on the hand-written tree (leaves at depths 1, 2 and 3) where the greedy search
    reaches the enumerated DCAS optimum."""
    w = Window(IRREGULAR, ["a1", "a3", "d1", "e1", "b2", "b3", "c1", "c2"], [3, 2, 2])
    for convention in CONVENTIONS:
        best = dcas_optimum(w, convention)
        r = solve(w, "sa", convention=convention, iterations=300, seed=1)
        check_dcas_result(w, r, convention)
        assert r.objective == pytest.approx(best, abs=TOL)


@pytest.mark.parametrize("seed", range(8))
def test_search_on_larger_irregular_windows_costs_as_the_oracle(seed):
    """Windows of up to 60 idle nodes and several jobs, where blocks cross split shallow groups:
    the kernel's cost of the best solution (greedy and drawn repairs) is the oracle's."""
    rng = random.Random(seed)
    tree = random_tree(rng, max_levels=4)
    while tree.num_nodes < 12:
        tree = random_tree(rng, max_levels=4)
    m = rng.randint(8, min(60, tree.num_nodes))
    sizes = [rng.randint(1, m // 3) for _ in range(3)]
    w = Window(tree, rng.sample(tree.node_names, m), sizes)
    convention = CONVENTIONS[seed % 2]
    for options in ({"preset": "best", "iterations": 60}, {"preset": "paper", "iterations": 200}):
        check_dcas_result(
            w, solve(w, "sa", seed=seed, convention=convention, **options), convention
        )


@pytest.mark.parametrize("method", ["sa", "lns"])
def test_search_on_a_tree_is_deterministic_by_seed(method):
    w = random_window(7, max_idle=10, max_jobs=3)
    a, b = (solve(w, method, seed=3, iterations=150) for _ in range(2))
    assert a.assignment == b.assignment and a.objective == b.objective
    assert a.info["order"] == b.info["order"] and a.info["starts"] == b.info["starts"]


@pytest.mark.parametrize("method, options", SEARCHES)
@pytest.mark.parametrize("seed", range(4))
def test_fat_tree_and_its_as_tree_search_the_same(seed, method, options):
    """A fat-tree window and the same window on fat.as_tree() (a plain Topology) give the same
    trajectory: same assignment, order, starts and cost for the same seed."""
    w = make_window(seed, max_idle=40, max_jobs=5)
    t = Window(w.topology.as_tree(), w.idle_nodes.tolist(), w.job_sizes)
    assert not t.is_fat_tree
    convention = CONVENTIONS[seed % 2]
    a = solve(w, method, seed=seed, convention=convention, **options)
    b = solve(t, method, seed=seed, convention=convention, **options)
    assert a.assignment == b.assignment
    assert a.objective == b.objective
    assert a.info["order"] == b.info["order"] and a.info["starts"] == b.info["starts"]


# -- the kernels: both walks, against the oracle ---------------------------------------------------
def _taken_bitmap(num_idle: int, taken_positions) -> np.ndarray:
    taken = np.empty(_dcas_kernels.taken_words(num_idle), dtype=np.uint64)
    _dcas_kernels.reset_taken(taken, num_idle)
    for p in taken_positions:
        taken[p // 64] |= np.uint64(1) << np.uint64(p % 64)
    return taken


def _tree_window(seed: int) -> Window:
    """A window of up to 80 idle nodes on a random irregular tree (bitmaps of several words)."""
    rng = random.Random(seed)
    tree = random_tree(rng)
    while tree.num_nodes < 4:
        tree = random_tree(rng)
    m = rng.randint(2, min(80, tree.num_nodes))
    return Window(tree, rng.sample(tree.node_names, m), [1])


def _check_block(
    w: Window, a: Arrays, taken_positions, start: int, size: int, shallow, convention: int
) -> None:
    taken = _taken_bitmap(w.num_idle, taken_positions)
    reference = taken.copy()
    positions = np.empty(size, dtype=np.int64)
    _dcas_kernels.take_block(reference, start, size, positions, 0)
    cost = _dcas_kernels.take_block_cost(
        taken,
        start,
        size,
        a.group_q,
        _dcas_kernels.row_ends(a.group_q),
        shallow,
        a.top_level,
        convention,
    )
    assert (taken == reference).all()
    expected = tree_cost(w, w.idle_nodes[positions], CONVENTIONS[convention])
    assert cost == pytest.approx(expected, abs=TOL)
    assert _dcas_kernels.block_cost(
        a.group_q, shallow, positions, 0, size, a.top_level, convention
    ) == pytest.approx(expected, abs=TOL)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10_000), st.data(), st.sampled_from([0, 1]))
def test_take_block_cost_matches_the_oracle_on_trees(seed, data, convention):
    """The fused walk (either form) marks the block take_block marks and costs it as the pairwise
    oracle does, wrapping included, on irregular trees (shallow groups split along Q)."""
    w = _tree_window(seed)
    a = Arrays(w)
    m = w.num_idle
    taken_positions = data.draw(st.sets(st.integers(0, m - 1), max_size=m - 1))
    free = m - len(taken_positions)
    start = data.draw(st.integers(0, free - 1))
    size = data.draw(st.integers(1, free))
    shallow = a.shallow  # None on two rows without shallow nodes: the one-pass walk
    if shallow is None and data.draw(st.booleans()):
        shallow = np.full(2, -1, np.int64)  # the per-row walk on the same form
    _check_block(w, a, sorted(taken_positions), start, size, shallow, convention)


@pytest.mark.parametrize("convention", [0, 1])
def test_every_block_of_the_hand_written_tree(convention):
    """Every block, from a free and from a fragmented sequence, of the hand-written tree, whose
    deepest row's shallow group (a*, b*, c*) is split by a deeper subtree (d*, e*)."""
    w = Window(IRREGULAR, IRREGULAR.node_names, [1])
    a = Arrays(w)
    m = w.num_idle
    for taken_positions in ([], [1, 4, 5, 9], [0, m - 1]):
        free = m - len(taken_positions)
        for start in range(free):
            for size in range(1, free + 1):
                _check_block(w, a, taken_positions, start, size, a.shallow, convention)


def test_blocks_of_random_trees_sweep():
    """A fixed sweep of fragmented blocks on random irregular trees (both walk forms where the
    form has two rows and no shallow node)."""
    rng = np.random.default_rng(0)
    for seed in range(60):
        w = _tree_window(seed)
        a = Arrays(w)
        m = w.num_idle
        forms = [a.shallow] if a.shallow is not None else [None, np.full(2, -1, np.int64)]
        for _ in range(8):
            taken_positions = rng.choice(m, int(rng.integers(0, m)), replace=False).tolist()
            free = m - len(taken_positions)
            start = int(rng.integers(free))
            size = int(rng.integers(1, min(free, 24) + 1))
            for shallow in forms:
                _check_block(w, a, taken_positions, start, size, shallow, seed % 2)


@pytest.mark.parametrize("seed", range(6))
def test_the_two_walks_give_the_same_search_on_fat_trees(seed):
    """On a fat-tree (two rows, no shallow node) the one-pass walk (shallow=None) and the per-row
    walk (shallow ids that never match) run the same trajectory to the same costs."""
    w = make_window(seed, max_idle=40, max_jobs=5)
    a = Arrays(w)
    assert a.shallow is None
    never = np.full(2, -1, np.int64)
    code = seed % 2
    runs = []
    for shallow in (None, never):
        order, starts = np.arange(w.num_jobs), np.zeros(w.num_jobs, np.int64)
        best_order, best_starts = order.copy(), starts.copy()
        cost = _kernels.solution_cost(
            a.group_q, shallow, a.top_level, a.num_groups, code, a.sizes, order, starts
        )
        out = _kernels.anneal(
            a.group_q,
            shallow,
            a.top_level,
            a.num_groups,
            code,
            a.sizes,
            order,
            starts,
            cost,
            best_order,
            best_starts,
            cost,
            0,
            300,
            300,
            2500.0,
            2.5,
            2,
            _kernels.REPAIR_PAPER,
            100,
            _kernels.REINSERT_LARGEST_FIRST,
            _kernels.ACCEPT_METROPOLIS,
            seed,
        )
        runs.append((out, best_order.tolist(), best_starts.tolist()))
    assert runs[0] == runs[1]


def test_arrays_of_a_tree_with_split_shallow_groups():
    """On the hand-written tree the shallow group of the deepest row (nodes at depths 1 and 2)
    is split along Q by a deeper subtree; Arrays keeps its id for the kernels to count apart."""
    w = Window(IRREGULAR, IRREGULAR.node_names, [2])
    a = Arrays(w)
    assert a.group_q.shape == (IRREGULAR.num_levels - 1, IRREGULAR.num_nodes)
    last = a.group_q[-1]
    runs_of_shallow = np.count_nonzero(np.diff((last == a.shallow[-1]).astype(int)) == 1)
    assert runs_of_shallow + (last[0] == a.shallow[-1]) >= 2
    assert a.switch_q is None and a.pod_q is None


# -- the learned repair stays on fat-trees --------------------------------------------------------
def test_nsa_refuses_a_general_tree_in_one_line():
    w = Window(IRREGULAR, ["a1", "a2", "b1", "b2"], [2, 2])
    with pytest.raises(InvalidInputError) as info:
        solve(w, "nsa")
    message = str(info.value)
    assert "\n" not in message
    assert "fat-tree" in message and "edge switches and pods" in message
    assert "'sa'" in message and "'lns'" in message


def test_nsa_environment_refuses_a_general_tree():
    pytest.importorskip("gymnasium")
    from tjap.learned.tree.env import NSARepairEnv

    w = Window(IRREGULAR, ["a1", "a2", "b1", "b2"], [2, 2])
    with pytest.raises(InvalidInputError, match="fat-tree"):
        NSARepairEnv([w])
