"""The communication-hop cost in both conventions against a plain pair loop, and the block kernel."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_cost_oracle import fat_tree_block_costs, fat_tree_cost

import tjap
from tjap import FatTree, InvalidInputError, Window, assignment_cost, job_cost
from tjap.placement.tree.cost import cost_from_counts

C = 1000


# -- brute force ----------------------------------------------------------------------------------
def _same_switch(t, a, b):
    return a // t.nodes_per_switch == b // t.nodes_per_switch


def _same_pod(t, a, b):
    per_pod = t.nodes_per_switch * t.switches_per_pod
    return a // per_pod == b // per_pod


def paper_cost(t, nodes):
    """Eq. (1): (1/n) * sum over ordered pairs i != k of c*h, h = 2/4/6."""
    total = 0
    for i in nodes:
        for k in nodes:
            if i == k:
                continue
            h = 2 if _same_switch(t, i, k) else 4 if _same_pod(t, i, k) else 6
            total += C * h
    return total / len(nodes)


def published_pair_sum(t, nodes):
    """Sum over unordered pairs of c*h, h = 1/3/5 (before the division by n)."""
    total = 0
    nodes = list(nodes)
    for x in range(len(nodes)):
        for y in range(x + 1, len(nodes)):
            i, k = nodes[x], nodes[y]
            h = 1 if _same_switch(t, i, k) else 3 if _same_pod(t, i, k) else 5
            total += C * h
    return total


def published_cost(t, nodes):
    return max(1, published_pair_sum(t, nodes) // len(nodes))


# -- strategies -----------------------------------------------------------------------------------
@st.composite
def tree_and_nodes(draw, max_nodes=60):
    per_switch = draw(st.integers(1, 5))
    per_pod = draw(st.integers(1, 4))
    num_nodes = draw(st.integers(1, max_nodes))
    t = FatTree(num_nodes=num_nodes, nodes_per_switch=per_switch, switches_per_pod=per_pod)
    nodes = draw(
        st.lists(
            st.integers(0, num_nodes - 1), min_size=1, max_size=min(num_nodes, 25), unique=True
        )
    )
    return t, nodes


# -- property tests -------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(tree_and_nodes())
def test_paper_cost_matches_pair_loop(data):
    t, nodes = data
    assert job_cost(t, nodes, "paper") == pytest.approx(paper_cost(t, nodes), rel=1e-12, abs=1e-9)
    assert job_cost(t, nodes) == job_cost(t, nodes, "paper")  # paper is the default


@settings(max_examples=150, deadline=None)
@given(tree_and_nodes())
def test_published_cost_matches_pair_loop(data):
    t, nodes = data
    got = job_cost(t, nodes, "published")
    assert got == published_cost(t, nodes)
    assert float(got).is_integer()
    assert got >= 1


@settings(max_examples=100, deadline=None)
@given(tree_and_nodes())
def test_paper_is_twice_published_unrounded_plus_constant(data):
    t, nodes = data
    n = len(nodes)
    unrounded = published_pair_sum(t, nodes) / n
    assert job_cost(t, nodes, "paper") == pytest.approx(2 * unrounded + C * (n - 1), abs=1e-6)


@settings(max_examples=100, deadline=None)
@given(tree_and_nodes(), st.randoms(use_true_random=False))
def test_cost_is_order_independent(data, rnd):
    t, nodes = data
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    for conv in ("paper", "published"):
        assert job_cost(t, shuffled, conv) == job_cost(t, nodes, conv)
        assert job_cost(t, np.array(nodes), conv) == job_cost(t, nodes, conv)


@settings(max_examples=150, deadline=None)
@given(tree_and_nodes())
def test_job_cost_is_the_fat_tree_formula_to_the_bit(data):
    """The count form prices a fat-tree as the switch-and-pod formula did: the same floats."""
    t, nodes = data
    ids = np.array(nodes)
    for conv in ("paper", "published"):
        expected = fat_tree_cost(t.switch_of[ids], t.pod_of[ids], conv)
        assert job_cost(t, nodes, conv) == expected
        assert job_cost(t, ids, conv) == expected
        assert job_cost(t, [str(v) for v in nodes], conv) == expected  # by name too


@settings(max_examples=100, deadline=None)
@given(tree_and_nodes())
def test_cost_from_counts_matches_job_cost(data):
    t, nodes = data
    ids = np.array(nodes)
    switch_counts = np.bincount(t.switch_of[ids], minlength=t.num_edge_switches)
    pod_counts = np.bincount(t.pod_of[ids], minlength=t.num_pods)
    for conv in ("paper", "published"):
        assert cost_from_counts(switch_counts, pod_counts, conv) == job_cost(t, nodes, conv)
        # only the non-zero counts matter
        assert cost_from_counts(
            switch_counts[switch_counts > 0], pod_counts[pod_counts > 0], conv
        ) == job_cost(t, nodes, conv)


# -- hand-checked values --------------------------------------------------------------------------
def test_docstring_values():
    t = FatTree(k=4)
    assert job_cost(t, [0, 1]) == 2000.0
    assert job_cost(t, [0, 1], convention="published") == 500.0


def test_known_values(tree):
    # tree: 2 nodes per switch, 2 switches per pod
    assert job_cost(tree, [0]) == 0.0
    assert job_cost(tree, [0], "published") == 1.0  # minimum of 1
    assert job_cost(tree, [0, 2]) == 4000.0  # same pod: 2 * 4000 / 2
    assert job_cost(tree, [0, 4]) == 6000.0  # other pods
    assert job_cost(tree, [0, 2], "published") == 1500.0  # 3000 // 2
    assert job_cost(tree, [0, 4], "published") == 2500.0  # 5000 // 2
    # three nodes: pairs (0,1) h=1, (0,2) h=3, (1,2) h=3 -> 7000 // 3 = 2333
    assert job_cost(tree, [0, 1, 2], "published") == 2333.0
    # ordered: 2*(2000 + 4000 + 4000) / 3
    assert job_cost(tree, [0, 1, 2]) == pytest.approx(20000 / 3)


def test_assignment_cost_is_the_sum(tree):
    a = [[0, 1], [4, 8, 9], [15]]
    for conv in ("paper", "published"):
        assert assignment_cost(tree, a, conv) == sum(job_cost(tree, n, conv) for n in a)
    assert assignment_cost(tree, []) == 0.0


# -- the SCAS block costs -------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(12))
def test_block_costs_match_job_cost_and_the_fat_tree_formula(seed, window_factory):
    w = window_factory(seed, min_idle=1, max_idle=16)
    t = w.topology
    for conv in ("paper", "published"):
        for n in range(1, w.num_idle + 1):
            costs = w.block_costs(n, conv)
            assert costs.shape == (w.num_idle,)
            expected = [job_cost(t, w.block(p, n), conv) for p in range(w.num_idle)]
            np.testing.assert_allclose(costs, expected, rtol=1e-12, atol=1e-9)
            formula = fat_tree_block_costs(
                t.switch_of[w.idle_nodes], t.pod_of[w.idle_nodes], n, conv
            )
            np.testing.assert_array_equal(costs, formula)  # the same floats, not just close


def test_block_wraps_to_head_of_q(tree):
    w = Window(tree, [9, 0, 4, 5, 14], [1])
    np.testing.assert_array_equal(w.idle_nodes, [0, 4, 5, 9, 14])
    np.testing.assert_array_equal(w.block(0, 3), [0, 4, 5])
    np.testing.assert_array_equal(w.block(3, 3), [9, 14, 0])
    np.testing.assert_array_equal(w.block(4, 3), [14, 0, 4])
    np.testing.assert_array_equal(w.block(2, 5), [5, 9, 14, 0, 4])
    costs = w.block_costs(3)
    assert costs[4] == job_cost(tree, [14, 0, 4])
    assert not costs.flags.writeable
    assert w.block_costs(3) is costs  # cached


@settings(max_examples=60, deadline=None)
@given(tree_and_nodes(max_nodes=40), st.integers(1, 40), st.sampled_from(["paper", "published"]))
def test_block_costs_property(data, size, conv):
    t, nodes = data
    w = Window(t, nodes, [1])
    size = min(size, w.num_idle)
    costs = w.block_costs(size, conv)
    for p in range(w.num_idle):
        assert costs[p] == pytest.approx(job_cost(t, w.block(p, size), conv), abs=1e-9)


# -- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("conv", ["Paper", "code", "", None, 0])
def test_bad_convention(tree, conv):
    with pytest.raises(InvalidInputError, match="convention"):
        job_cost(tree, [0, 1], conv)
    with pytest.raises(InvalidInputError, match="convention"):
        cost_from_counts([2], [2], conv)
    with pytest.raises(InvalidInputError, match="convention"):
        assignment_cost(tree, [[0, 1]], conv)


def test_bad_node_ids(tree):
    with pytest.raises(InvalidInputError, match="0..15"):
        job_cost(tree, [0, 16])
    with pytest.raises(InvalidInputError, match="0..15"):
        job_cost(tree, [-1, 3])
    with pytest.raises(InvalidInputError, match="distinct"):
        job_cost(tree, [3, 3])
    with pytest.raises(InvalidInputError, match="non-empty"):
        job_cost(tree, [])
    with pytest.raises(InvalidInputError, match="non-empty"):
        job_cost(tree, [[0, 1], [2, 3]])


def test_cost_from_counts_needs_a_node():
    with pytest.raises(InvalidInputError, match="at least one node"):
        cost_from_counts([0, 0], [0])
    with pytest.raises(InvalidInputError):
        cost_from_counts([], [])


def test_errors_are_value_errors(tree):
    with pytest.raises(ValueError):
        job_cost(tree, [0, 99])
    assert issubclass(tjap.InvalidInputError, tjap.TjapError)
