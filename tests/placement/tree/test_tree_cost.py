"""The cost on any switch tree (tjap.placement.tree.tree_cost): the count form and its kernels against
a pair loop on random irregular trees, and against the paper's fat-tree formula (switch and pod
counts, tree_cost_oracle.fat_tree_cost) to the bit."""

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_cost_oracle import fat_tree_block_costs, fat_tree_cost, pair_hops, set_cost_bruteforce

from tjap.core.errors import InvalidInputError
from tjap.placement.tree.cost import convention_code, job_cost
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.tree_cost import (
    CountForm,
    block_costs,
    count_groups,
    node_set_cost,
    switch_depths,
)

CONVENTIONS = ("paper", "published")


# -- trees ----------------------------------------------------------------------------------------
@st.composite
def irregular_trees(draw, max_levels=4):
    """A random tree of 2..max_levels switch levels with leaves at uneven depths and of uneven
    sizes, its switches numbered in a random order: (switch_parent, node_leaf)."""
    levels = draw(st.integers(2, max_levels))
    parents, leaves = [-1], []

    def grow(switch, depth):
        if depth + 1 < levels and (depth == 0 or draw(st.booleans())):
            for _ in range(draw(st.integers(1, 3))):
                parents.append(switch)
                grow(len(parents) - 1, depth + 1)
        else:
            leaves.extend([switch] * draw(st.integers(1, 4)))

    grow(0, 0)
    order = draw(st.permutations(range(len(parents))))  # new index of each switch
    switch_parent = np.full(len(parents), -1, np.int64)
    for s, p in enumerate(parents):
        switch_parent[order[s]] = -1 if p == -1 else order[p]
    node_leaf = np.array([order[s] for s in leaves], np.int64)
    return switch_parent, node_leaf


@st.composite
def tree_and_set(draw):
    switch_parent, node_leaf = draw(irregular_trees())
    nodes = draw(st.lists(st.integers(0, node_leaf.size - 1), min_size=1, unique=True))
    return switch_parent, node_leaf, nodes


def fat_tree_arrays(t: FatTree):
    """Leaf switches 0..S-1 under pods S..S+P-1 under one root S+P."""
    s, p = t.num_edge_switches, t.num_pods
    switch_parent = np.empty(s + p + 1, np.int64)
    switch_parent[:s] = s + np.arange(s) // t.switches_per_pod
    switch_parent[s : s + p] = s + p
    switch_parent[-1] = -1
    return switch_parent, np.asarray(t.switch_of, np.int64)


@st.composite
def fat_tree_and_set(draw):
    t = FatTree(
        num_nodes=draw(st.integers(1, 80)),
        nodes_per_switch=draw(st.integers(1, 5)),
        switches_per_pod=draw(st.integers(1, 4)),
    )
    nodes = draw(st.lists(st.integers(0, t.num_nodes - 1), min_size=1, unique=True))
    return t, nodes


# -- plain-Python reference of the count form ------------------------------------------------------
def count_form_cost(form: CountForm, nodes, convention):
    """The module docstring's formulas, from the group table, in exact Python integers."""
    n, top = len(nodes), form.top_level
    sum_sq = sum(
        c * c for row in form.group_of for c in Counter(int(row[v]) for v in nodes).values()
    )
    if convention == "paper":
        return 1000 * 2 * (top * n * n - n - sum_sq) / n
    return float(max(1, 1000 * ((2 * top - 1) * n * n - n - 2 * sum_sq) // 2 // n))


def blocks_reference(form, q, size, convention):
    m = len(q)
    return [
        count_form_cost(form, [q[(p + i) % m] for i in range(size)], convention) for p in range(m)
    ]


# -- any tree -------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(tree_and_set())
def test_count_form_and_kernel_equal_the_pair_loop_on_irregular_trees(case):
    switch_parent, node_leaf, nodes = case
    form = count_groups(switch_parent, node_leaf)
    for convention in CONVENTIONS:
        expected = set_cost_bruteforce(switch_parent, node_leaf, nodes, convention)
        assert count_form_cost(form, nodes, convention) == pytest.approx(expected, rel=1e-12)
        assert form.cost(nodes, convention) == pytest.approx(expected, rel=1e-12)
        counts = np.zeros(form.num_groups, np.int64)
        kernel = node_set_cost(
            form.group_of,
            form.top_level,
            np.asarray(nodes, np.int64),
            counts,
            convention_code(convention),
        )
        assert kernel == form.cost(nodes, convention)
        assert not counts.any()  # the scratch comes back zeroed


@settings(max_examples=80, deadline=None)
@given(irregular_trees(), st.data())
def test_block_costs_equal_each_block_on_irregular_trees(tree, data):
    switch_parent, node_leaf = tree
    form = count_groups(switch_parent, node_leaf)
    q = data.draw(st.permutations(range(node_leaf.size)))
    q = q[: data.draw(st.integers(1, len(q)))]
    size = data.draw(st.integers(1, len(q)))
    for convention in CONVENTIONS:
        got = form.block_costs(q, size, convention)
        expected = [
            set_cost_bruteforce(
                switch_parent, node_leaf, [q[(p + i) % len(q)] for i in range(size)], convention
            )
            for p in range(len(q))
        ]
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        np.testing.assert_array_equal(
            got,
            [
                form.cost([q[(p + i) % len(q)] for i in range(size)], convention)
                for p in range(len(q))
            ],
        )


def test_uneven_depths_take_the_larger_distance():
    # 0 top; 1, 2 under 0; 3 under 2; 4 under 3. Node 0 on 1, node 1 on 3, node 2 on 4.
    switch_parent, node_leaf = [-1, 0, 0, 2, 3], [1, 3, 4]
    assert pair_hops(switch_parent, node_leaf, 0, 1) == 2 * 3  # at 0: distances 2 and 3
    assert pair_hops(switch_parent, node_leaf, 1, 2) == 2 * 2  # at 3: distances 1 and 2
    assert pair_hops(switch_parent, node_leaf, 0, 2) == 2 * 4
    form = count_groups(switch_parent, node_leaf)
    assert form.top_level == 4 and form.group_of.shape == (3, 3)
    assert form.cost([0, 1, 2]) == 1000 * 2 * (6 + 4 + 8) / 3
    assert form.cost([0, 1, 2], "published") == (1000 * (5 + 3 + 7)) // 3


def test_one_switch_and_one_node():
    form = count_groups([-1], [0, 0, 0])
    assert form.group_of.shape == (0, 3)
    assert form.cost([0, 2]) == 2000.0 and form.cost([0, 1, 2], "published") == 1000.0
    assert form.cost([1]) == 0.0 and form.cost([1], "published") == 1.0
    t = FatTree(k=4)
    assert count_groups(*fat_tree_arrays(t)).cost([5]) == job_cost(t, [5])
    assert count_groups(*fat_tree_arrays(t)).cost([5], "published") == job_cost(t, [5], "published")


# -- fat-trees: the paper's switch-and-pod formula ------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(fat_tree_and_set())
def test_equals_the_fat_tree_formula(case):
    t, nodes = case
    form = count_groups(*fat_tree_arrays(t))
    assert form.top_level == 3
    ids = np.asarray(nodes)
    for convention in CONVENTIONS:
        formula = fat_tree_cost(t.switch_of[ids], t.pod_of[ids], convention)
        assert form.cost(nodes, convention) == formula
        assert job_cost(t, nodes, convention) == formula


@pytest.mark.parametrize("layout", ["paper", "published"])
def test_equals_the_fat_tree_formula_on_the_named_layouts(layout):
    t = FatTree.from_layout(layout)
    form = count_groups(*fat_tree_arrays(t))
    rng = np.random.default_rng(7)
    for _ in range(50):
        nodes = rng.choice(t.num_nodes, size=rng.integers(1, 200), replace=False)
        for convention in CONVENTIONS:
            formula = fat_tree_cost(t.switch_of[nodes], t.pod_of[nodes], convention)
            assert form.cost(nodes, convention) == formula
            assert job_cost(t, nodes, convention) == formula
    q = rng.permutation(t.num_nodes)[:600]
    for size in (1, 7, 64, 600):
        for convention in CONVENTIONS:
            formula = fat_tree_block_costs(t.switch_of[q], t.pod_of[q], size, convention)
            np.testing.assert_array_equal(form.block_costs(q, size, convention), formula)


@settings(max_examples=60, deadline=None)
@given(fat_tree_and_set(), st.data())
def test_block_costs_equal_the_fat_tree_formula(case, data):
    t, q = case
    size = data.draw(st.integers(1, len(q)))
    form = count_groups(*fat_tree_arrays(t))
    q = np.asarray(q, np.int64)
    for convention in CONVENTIONS:
        code = convention_code(convention)
        formula = fat_tree_block_costs(t.switch_of[q], t.pod_of[q], size, convention)
        got = block_costs(form.group_of, form.top_level, q, size, form.num_groups, code)
        np.testing.assert_array_equal(got, formula)
        np.testing.assert_array_equal(got, t.count_form.block_costs(q, size, convention))
        assert list(got) == blocks_reference(form, list(q), size, convention)


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "switch_parent, node_leaf, match",
    [
        ([1, -1], [0], None),  # fine: switch 0 under the top 1
        ([-1, -1], [0], "exactly one top switch"),
        ([1, 0], [0], "exactly one top switch"),
        ([-1, 2, 1], [0], "switch 1 does not lead up"),  # 1 and 2 form a cycle
        ([-1, 1], [0], "switch 1 does not lead up"),  # its own parent
        ([-1, 5], [0], r"switch_parent\[1\]=5 is out of range"),
        ([-1, -2], [0], r"switch_parent\[1\]=-2 is out of range"),
        ([-1, 0], [1, 2], r"node_leaf\[1\]=2 is not a switch"),
        ([-1, 0], [-1], r"node_leaf\[0\]=-1 is not a switch"),
        ([-1.0, 0.0], [0], "switch_parent must hold integers"),
        ([-1, 0], [], "node_leaf must be a non-empty"),
        ([[-1, 0]], [0], "switch_parent must be a non-empty 1-D"),
    ],
)
def test_bad_trees_raise_one_line_errors(switch_parent, node_leaf, match):
    if match is None:
        assert count_groups(switch_parent, node_leaf).top_level == 2
        return
    with pytest.raises(InvalidInputError, match=match) as info:
        count_groups(switch_parent, node_leaf)
    assert "\n" not in str(info.value)


def test_bad_node_sets_raise():
    form = count_groups([-1, 0, 0], [1, 1, 2])
    for nodes, match in [
        ([], "non-empty"),
        ([0, 3], r"0\.\.2"),
        ([1, 1], "distinct"),
        ([0.5], "integer"),
    ]:
        with pytest.raises(InvalidInputError, match=match):
            form.cost(nodes)
    with pytest.raises(InvalidInputError, match="convention"):
        form.cost([0], "hops")
    with pytest.raises(InvalidInputError, match=r"size must be an integer in \[1, 3\]"):
        form.block_costs([0, 1, 2], 4)
    with pytest.raises(InvalidInputError, match="size"):
        form.block_costs([0, 1, 2], 0)


def test_switch_depths():
    np.testing.assert_array_equal(switch_depths([2, 2, -1, 0]), [1, 1, 0, 2])
