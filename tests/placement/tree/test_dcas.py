"""DCAS (dynamic contiguity) against a brute-force oracle on tiny windows.

Under DCAS jobs are placed one after another; each takes n_j consecutive nodes (wrapping) of the idle
sequence *as updated after the previous jobs* (seed 002, section III-B). The oracle here enumerates
every job order and every start of every step (0 <= start < idle nodes left at that step) and
decodes them with a plain list, independently of tjap.placement.tree.dcas and its kernels.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tree_cost_oracle import fat_tree_cost

from tjap import FatTree, InvalidInputError, Window, assignment_cost, solve
from tjap.placement.tree import _dcas_kernels
from tjap.placement.tree.dcas import decode, encode, is_dcas

CONVENTIONS = ("paper", "published")
TOL = 1e-6


# -- plain-Python DCAS ----------------------------------------------------------------------------
def py_take(alive: list, start: int, size: int) -> tuple[list, list]:
    """(block, rest): ``size`` consecutive entries of ``alive`` from ``start``, wrapping, and what
    is left of ``alive`` (in order) once they are removed."""
    length = len(alive)
    idx = [(start + i) % length for i in range(size)]
    block = [alive[i] for i in idx]
    taken = set(idx)
    return block, [alive[i] for i in range(length) if i not in taken]


def py_decode(w: Window, order, starts) -> list[list[int]]:
    """Node ids of each job (window order, each in block order) for the DCAS solution."""
    alive = [int(v) for v in w.idle_nodes]
    out = [None] * w.num_jobs
    for j, s in zip(order, starts):
        assert 0 <= s < len(alive)
        out[j], alive = py_take(alive, s, w.job_sizes[j])
    return out


def all_dcas_solutions(w: Window):
    """Every (order, starts, decoded node lists) of the window."""
    sizes = w.job_sizes
    for order in itertools.permutations(range(w.num_jobs)):
        left = [w.num_idle]
        for j in order[:-1]:
            left.append(left[-1] - sizes[j])
        for starts in itertools.product(*(range(n) for n in left)):
            yield list(order), list(starts), py_decode(w, order, starts)


def canon(assignment) -> tuple:
    """An assignment as comparable node sets, in window order."""
    return tuple(frozenset(int(v) for v in nodes) for nodes in assignment)


# Tiny windows the brute force enumerates: (seed, max_idle, max_jobs) for window_factory with
# min_idle=6. Besides a few arbitrary seeds, these were picked because the bracket is strict there:
# the DCAS optimum lies below the SCAS optimum (STRICT_BELOW_SCAS) or above the free-form one.
BRUTE_CASES = [(s, 10, 3) for s in (0, 1, 2, 3, 65, 102, 151, 154, 204, 277)] + [
    (s, 8, 4) for s in (200, 201, 149, 169, 236, 275)
]
BRUTE_IDS = [f"seed{s}-idle{i}-jobs{j}" for s, i, j in BRUTE_CASES]
STRICT_BELOW_SCAS = {65, 151, 154, 204, 277, 149, 169, 236, 275}
STRICT_ABOVE_FREE = {102}


@pytest.mark.parametrize("case", BRUTE_CASES, ids=BRUTE_IDS)
def test_decode_matches_bruteforce_and_dcas_optimum_is_bracketed(case, window_factory):
    seed, max_idle, max_jobs = case
    w = window_factory(seed, min_idle=6, max_idle=max_idle, max_jobs=max_jobs)
    cost_cache: dict = {}
    best = {c: math.inf for c in CONVENTIONS}
    reachable = set()
    count = 0
    for order, starts, expected in all_dcas_solutions(w):
        got = decode(w, order, starts)
        assert got == expected, (order, starts)
        key = canon(got)
        reachable.add(key)
        count += 1
        if key not in cost_cache:
            cost_cache[key] = {c: assignment_cost(w.topology, got, c) for c in CONVENTIONS}
        for c in CONVENTIONS:
            best[c] = min(best[c], cost_cache[key][c])
        # encode recovers these steps when told the order (a start is free only when the job
        # takes everything still idle; encode then says 0)
        if count % 7 == 0:
            o, s = encode(w, got, order=order)
            assert o == order
            assert canon(decode(w, o, s)) == key
    assert count > 0

    for c in CONVENTIONS:
        scas = solve(w, "dp", convention=c).objective
        free = solve(w, "freeform", convention=c).objective
        assert best[c] <= scas + TOL, (c, best[c], scas)
        assert best[c] >= free - TOL, (c, best[c], free)
        if seed in STRICT_BELOW_SCAS:
            assert best[c] < scas - TOL
        if seed in STRICT_ABOVE_FREE:
            assert best[c] > free + TOL
        # the DCAS search methods never beat the DCAS optimum
        for method, options in (
            ("sa", {"iterations": 300}),
            ("sa", {"repair": "greedy"}),
            ("lns", {"iterations": 100}),
        ):
            r = solve(w, method, convention=c, seed=seed, **options)
            assert r.objective >= best[c] - TOL, (method, options, c)

    # is_dcas against the oracle: every decoded assignment is DCAS, and a random disjoint
    # assignment is DCAS exactly when some (order, starts) decodes to it
    for key in list(reachable)[:50]:
        assert is_dcas(w, [sorted(s) for s in key])
    rng = random.Random(seed)
    idle = [int(v) for v in w.idle_nodes]
    for _ in range(40):
        free_nodes = idle[:]
        rng.shuffle(free_nodes)
        assignment, used = [], 0
        for n in w.job_sizes:
            assignment.append(sorted(free_nodes[used : used + n]))
            used += n
        assert is_dcas(w, assignment) == (canon(assignment) in reachable), assignment


# -- every SCAS solution is a DCAS solution in window order ---------------------------------------
@pytest.mark.parametrize("method", ["dp", "scip"])
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(12))
def test_scas_solutions_are_dcas_in_window_order(seed, convention, method, window_factory):
    w = window_factory(seed, max_jobs=4)
    r = solve(w, method, convention=convention, seed=seed)
    order, starts = encode(w, r.assignment)
    assert order == list(range(w.num_jobs))
    assert len(starts) == w.num_jobs
    left = w.num_idle
    for j, s in zip(order, starts):
        assert 0 <= s < left
        left -= w.job_sizes[j]
    assert canon(decode(w, order, starts)) == canon(r.assignment)
    assert canon(py_decode(w, order, starts)) == canon(r.assignment)
    assert is_dcas(w, r.assignment)


def test_wrapping_scas_block_is_dcas(wrap_window):
    """The 2-node job of the wrap fixture takes [15, 0]: a wrapping block of the first step."""
    r = solve(wrap_window, "dp")
    assert canon(r.assignment) == canon([[4, 5, 6, 7], [15, 0]])
    order, starts = encode(wrap_window, r.assignment)
    assert order == [0, 1]
    assert canon(decode(wrap_window, order, starts)) == canon(r.assignment)
    # the same node sets also decode with the wrapping job first, from the last position
    assert canon(decode(wrap_window, [1, 0], [5, 0])) == canon(r.assignment)


# -- assignments that are not DCAS ----------------------------------------------------------------
T16 = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)

NOT_DCAS = [
    # one job split by free idle nodes on both sides (positions {0, 2} of 4)
    (Window(T16, [0, 1, 2, 3], [2]), [[0, 2]]),
    # interleaved jobs: A = {q0, q2}, B = {q1, q3} of 6; in either order the first is split
    (Window(T16, [0, 1, 2, 3, 4, 5], [2, 2]), [[0, 2], [1, 3]]),
    # three jobs; the 3-node one holds q0, q2, q5 while q1 and q4 stay free: split on both arcs
    # whatever the order
    (Window(T16, [2, 3, 5, 8, 9, 11, 12, 14], [3, 2, 1]), [[2, 5, 11], [12, 14], [8]]),
]


@pytest.mark.parametrize("w, assignment", NOT_DCAS, ids=["split", "interleaved", "three-jobs"])
def test_non_dcas_assignment_is_rejected(w, assignment):
    # the oracle agrees that no (order, starts) gives these node sets
    assert canon(assignment) not in {canon(a) for _, _, a in all_dcas_solutions(w)}
    assert not is_dcas(w, assignment)
    with pytest.raises(InvalidInputError):
        encode(w, assignment)
    with pytest.raises(InvalidInputError):
        encode(w, assignment, order=list(range(w.num_jobs)))


def test_dcas_but_not_window_order():
    """Job 0 = {q0, q3} is contiguous only once job 1 = {q1, q2} has gone: DCAS, not SCAS."""
    w = Window(T16, [0, 1, 2, 3, 4, 5], [2, 2])
    assignment = [[0, 3], [1, 2]]
    assert is_dcas(w, assignment)
    order, starts = encode(w, assignment)
    assert order == [1, 0]
    assert canon(decode(w, order, starts)) == canon(assignment)


def test_encode_rejects_non_idle_node():
    w = Window(T16, [0, 1, 2, 3], [2])
    with pytest.raises(InvalidInputError):
        encode(w, [[0, 7]])
    assert not is_dcas(w, [[0, 7]])


def test_is_dcas_with_more_than_eight_jobs():
    """Same shape as test_dcas_but_not_window_order plus seven one-node jobs (9 jobs in all)."""
    w = Window(T16, list(range(11)), [2, 2, 1, 1, 1, 1, 1, 1, 1])
    order, starts = [1, 0, 2, 3, 4, 5, 6, 7, 8], [1, 0, 0, 0, 0, 0, 0, 0, 0]
    assignment = decode(w, order, starts)
    assert canon(assignment) == canon(py_decode(w, order, starts))
    assert canon(assignment)[:2] == (frozenset({0, 3}), frozenset({1, 2}))
    assert is_dcas(w, assignment)


def test_is_dcas_with_eight_jobs():
    """The 8-job twin of the case above is recognised (all orders are tried up to 8 jobs)."""
    w = Window(T16, list(range(10)), [2, 2, 1, 1, 1, 1, 1, 1])
    assignment = decode(w, [1, 0, 2, 3, 4, 5, 6, 7], [1, 0, 0, 0, 0, 0, 0, 0])
    assert is_dcas(w, assignment)


# -- decode validation ----------------------------------------------------------------------------
@pytest.fixture
def w42(tree) -> Window:
    return Window(tree, [0, 4, 5, 6, 7, 15], [4, 2])


@pytest.mark.parametrize("order", [[0, 0], [1, 1], [0], [0, 1, 2], [1, 2], [-1, 0], []])
def test_decode_rejects_non_permutation(w42, order):
    with pytest.raises(InvalidInputError):
        decode(w42, order, [0] * len(order))


@pytest.mark.parametrize("starts", [[0], [0, 0, 0], []])
def test_decode_rejects_wrong_number_of_starts(w42, starts):
    with pytest.raises(InvalidInputError):
        decode(w42, [0, 1], starts)


@pytest.mark.parametrize(
    "order, starts",
    [
        ([0, 1], [6, 0]),  # step 0: only 6 idle nodes
        ([0, 1], [-1, 0]),
        ([0, 1], [0, 2]),  # step 1: 2 nodes left after the 4-node job
        ([0, 1], [0, -1]),
        ([1, 0], [0, 4]),  # step 1: 4 nodes left after the 2-node job
        ([1, 0], [100, 0]),
    ],
)
def test_decode_rejects_start_out_of_range(w42, order, starts):
    with pytest.raises(InvalidInputError):
        decode(w42, order, starts)


@pytest.mark.parametrize("order, starts", [([0, 1], [5, 1]), ([1, 0], [5, 3]), ([0, 1], [2, 0])])
def test_decode_accepts_last_valid_starts(w42, order, starts):
    assert decode(w42, order, starts) == py_decode(w42, order, starts)


# -- the take_block kernel against a list ---------------------------------------------------------
@st.composite
def take_cases(draw):
    num_idle = draw(st.integers(1, 200))
    taken = sorted(draw(st.sets(st.integers(0, num_idle - 1), max_size=num_idle - 1)))
    length = num_idle - len(taken)
    start = draw(st.integers(0, length - 1))
    size = draw(st.integers(1, length))
    offset = draw(st.integers(0, 5))
    return num_idle, taken, start, size, offset


@settings(max_examples=400, deadline=None)
@given(take_cases())
@example(
    (21, [0, 1, 2, 4, 6, 7, 10, 11, 13, 14, 15, 16, 17, 18, 19], 4, 4, 0)
)  # wraps: 12, 20, 3, 5
@example((6, [], 5, 6, 1))  # takes everything, starting at the last position
@example((8, [0, 1, 2, 3, 4, 5, 6], 0, 1, 0))
@example((130, sorted(set(range(130)) - {2, 63, 64, 65, 127, 128, 129}), 4, 5, 0))  # words, wrap
@example((128, [], 100, 128, 0))  # a full last word
def test_take_block_matches_list(case):
    num_idle, taken_list, start, size, offset = case
    alive_list = [p for p in range(num_idle) if p not in set(taken_list)]
    taken = np.empty(_dcas_kernels.taken_words(num_idle), dtype=np.uint64)
    _dcas_kernels.reset_taken(taken, num_idle)
    for p in taken_list:
        taken[p // 64] |= np.uint64(1) << np.uint64(p % 64)
    out = np.full(offset + size + 2, -5, dtype=np.int64)
    _dcas_kernels.take_block(taken, start, size, out, offset)
    block, rest = py_take(alive_list, start, size)
    assert out[offset : offset + size].tolist() == block  # in sequence order, wrapping
    assert (out[:offset] == -5).all() and (out[offset + size :] == -5).all()
    alive = np.empty(num_idle, dtype=np.int64)
    length = _dcas_kernels.free_positions(taken, alive)
    assert alive[:length].tolist() == rest


def _node_set_cost(switch_ids, pod_ids, convention: int) -> float:
    """Cost from counts per switch and per pod (the definition, no run lengths)."""
    return fat_tree_cost(switch_ids, pod_ids, convention)


@settings(max_examples=400, deadline=None)
@given(take_cases(), st.integers(1, 12), st.integers(1, 4), st.sampled_from([0, 1]))
@example((21, [0, 1, 2, 4, 6, 7, 10, 11, 13, 14, 15, 16, 17, 18, 19], 4, 4, 0), 3, 2, 0)  # wraps
@example((130, sorted(set(range(130)) - {2, 63, 64, 65, 127, 128, 129}), 4, 5, 0), 2, 3, 1)
@example((200, [], 150, 200, 0), 10, 4, 0)  # the whole sequence, wrapping in the middle of a switch
def test_take_block_cost_matches_counts(case, nodes_per_switch, switches_per_pod, convention):
    """The fused walk (no positions written) marks the same positions as take_block and costs the
    block as counting its nodes per switch and per pod does, wrapping included."""
    num_idle, taken_list, start, size, _ = case
    rng = np.random.default_rng(num_idle + size)
    node_ids = np.sort(rng.choice(4 * num_idle, size=num_idle, replace=False))  # Q, in id order
    switch_q = node_ids // nodes_per_switch
    pod_q = switch_q // switches_per_pod
    taken = np.empty(_dcas_kernels.taken_words(num_idle), dtype=np.uint64)
    _dcas_kernels.reset_taken(taken, num_idle)
    for p in taken_list:
        taken[p // 64] |= np.uint64(1) << np.uint64(p % 64)
    reference = taken.copy()
    positions = np.empty(size, dtype=np.int64)
    _dcas_kernels.take_block(reference, start, size, positions, 0)
    group_q = np.stack([switch_q, pod_q])  # the fat-tree's count-form rows
    shallow = None  # no node above the edge switches
    cost = _dcas_kernels.take_block_cost(
        taken, start, size, group_q, _dcas_kernels.row_ends(group_q), shallow, 3, convention
    )
    assert (taken == reference).all()
    assert cost == _node_set_cost(switch_q[positions], pod_q[positions], convention)
    assert cost == _dcas_kernels.block_cost(group_q, shallow, positions, 0, size, 3, convention)


def test_run_ends():
    ids = np.array([0, 0, 1, 3, 3, 3, 4], dtype=np.int64)
    assert _dcas_kernels.run_ends(ids).tolist() == [2, 2, 3, 6, 6, 6, 7]
