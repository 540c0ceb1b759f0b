"""The single-job kernels (:mod:`tjap.placement.tree.single_job`): the free-form optimum against
brute force over all subsets (tiny trees) and against ``best_single_job_nodes`` (bigger ones), the
SCAS optimum against ``CountForm.block_costs`` and the ``dp`` method on a one-job window, on
random trees of uneven depth and leaf sizes and on Slurm block topologies; every returned node
set is idle, distinct, of the job's size and costs what its S says."""

from __future__ import annotations

import itertools
import random

import numba
import numpy as np
import pytest
from tree_cases import random_tree

from tjap import FatTree, InvalidInputError, Window, solve
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.freeform import best_single_job_nodes
from tjap.placement.tree.single_job import SingleJobTables, leaf_idle_counts, scas_best
from tjap.placement.tree.topology import Topology

CONVENTIONS = ("paper", "published")


def uniform_tree(rng: random.Random, levels: int, max_fan: int = 3, max_leaf: int = 5) -> Topology:
    """A tree of ``levels`` switch levels, every leaf at the bottom, uneven fan-out and leaf sizes."""
    entries, counter = [], {"s": 0, "n": 0}

    def grow(depth) -> str:
        name = f"sw{counter['s']}"
        counter["s"] += 1
        entry = {"name": name}
        entries.append(entry)
        if depth + 1 < levels:
            entry["switches"] = [grow(depth + 1) for _ in range(rng.randint(1, max_fan))]
        else:
            first = counter["n"]
            counter["n"] += rng.randint(1, max_leaf)
            entry["nodes"] = [f"n{i}" for i in range(first, counter["n"])]
        return name

    grow(0)
    return Topology.from_dict({"switches": entries})


def block_tree(rng: random.Random) -> Topology:
    """A Slurm ``topology/block`` configuration of 2..7 blocks (some leftover blocks sit
    higher in the tree than the others)."""
    base = rng.randint(1, 3)
    lines, first = [], 1
    for b in range(rng.randint(2, 7)):
        size = base + (rng.randint(0, 2) if b else 0)  # the first block sets the base size
        lines.append(f"BlockName=b{b} Nodes=n[{first}-{first + size - 1}]")
        first += size
    if rng.random() < 0.5:
        lines.append(f"BlockSizes={base},{2 * base},{4 * base}")
    return Topology.from_slurm("\n".join(lines))


def sum_of_squares(tree: Topology, nodes) -> int:
    """S of a node set from the count form, group by group."""
    group_of = tree.count_form.group_of
    total = 0
    for row in group_of:
        _, counts = np.unique(row[np.asarray(nodes, dtype=np.int64)], return_counts=True)
        total += int((counts**2).sum())
    return total


def idle_mask(tree: Topology, idle) -> np.ndarray:
    mask = np.zeros(tree.num_nodes, dtype=bool)
    mask[list(idle)] = True
    return mask


def check_nodes(tables: SingleJobTables, mask, size, s, nodes) -> None:
    """Idle, distinct, ``size`` of them, and S and the cost are the set's own."""
    assert nodes.dtype == np.int64 and nodes.size == size
    assert len(set(nodes.tolist())) == size and mask[nodes].all()
    assert sum_of_squares(tables.topology, nodes) == s
    for convention in CONVENTIONS:
        assert tables.cost(size, s, convention) == pytest.approx(
            job_cost(tables.topology, nodes, convention)
        )


def random_case(seed: int):
    rng = random.Random(seed)
    kind = seed % 3
    if kind == 0:
        tree = uniform_tree(rng, rng.randint(1, 4))
    elif kind == 1:
        tree = random_tree(rng)
    else:
        tree = block_tree(rng)
    return rng, tree


# -- free form --------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(120))
def test_bound_is_the_brute_force_maximum_on_tiny_trees(seed):
    rng, tree = random_case(seed)
    tables = SingleJobTables.from_topology(tree)
    idle = sorted(rng.sample(range(tree.num_nodes), rng.randint(1, min(10, tree.num_nodes))))
    mask = idle_mask(tree, idle)
    for size in range(1, len(idle) + 1):
        s, nodes = tables.bound(mask, size)
        best = max(sum_of_squares(tree, c) for c in itertools.combinations(idle, size))
        assert s == best
        check_nodes(tables, mask, size, s, nodes)


def test_both_paths_are_exercised():
    """The tiny cases above include trees the kernel runs on and trees that fall back."""
    kinds = {
        SingleJobTables.from_topology(random_case(seed)[1]).exact_kernel for seed in range(120)
    }
    assert kinds == {True, False}


@pytest.mark.parametrize("seed", range(30))
def test_bound_equals_best_single_job_nodes_on_bigger_trees(seed):
    rng = random.Random(seed)
    tree = uniform_tree(rng, rng.randint(2, 4), max_fan=6, max_leaf=12)
    while tree.num_nodes < 20:
        tree = uniform_tree(rng, rng.randint(2, 4), max_fan=6, max_leaf=12)
    tables = SingleJobTables.from_topology(tree)
    assert tables.exact_kernel
    for _ in range(4):
        idle = np.flatnonzero(
            np.array([rng.random() < rng.choice((0.3, 0.7)) for _ in range(tree.num_nodes)])
        )
        if idle.size == 0:
            continue
        mask = idle_mask(tree, idle)
        sizes = {1, 2, rng.randint(1, idle.size), idle.size // 2 or 1, idle.size}
        for size in sorted(n for n in sizes if n <= idle.size):
            s, nodes = tables.bound(mask, size)
            expected = best_single_job_nodes(tree, idle, size)
            assert s == sum_of_squares(tree, expected)
            check_nodes(tables, mask, size, s, nodes)


def test_bound_takes_one_leaf_when_one_holds_the_job():
    tree = Topology.from_slurm(
        "SwitchName=a Nodes=n[1-4]\nSwitchName=b Nodes=n[5-9]\nSwitchName=top Switches=a,b"
    )
    tables = SingleJobTables.from_topology(tree)
    mask = idle_mask(tree, [0, 1, 2, 4, 5, 6, 7])
    s, nodes = tables.bound(mask, 3)
    assert s == 9 and nodes.tolist() == [0, 1, 2]  # the tightest leaf that holds it


# -- SCAS -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(90))
def test_scas_is_the_cheapest_block(seed):
    rng, tree = random_case(seed)
    tables = SingleJobTables.from_topology(tree)
    idle = sorted(rng.sample(range(tree.num_nodes), rng.randint(1, min(14, tree.num_nodes))))
    mask = idle_mask(tree, idle)
    q = np.array(idle, dtype=np.int64)
    for size in range(1, len(idle) + 1):
        s, nodes = tables.scas(mask, size)
        check_nodes(tables, mask, size, s, nodes)
        for convention in CONVENTIONS:
            costs = tree.count_form.block_costs(q, size, convention)
            assert tables.cost(size, s, convention) == pytest.approx(costs.min())
        start = int(np.argmin(tree.count_form.block_costs(q, size, "paper")))
        assert nodes.tolist() == q[(start + np.arange(size)) % q.size].tolist()


@pytest.mark.parametrize("seed", range(25))
def test_scas_equals_the_dp_on_a_one_job_window(seed):
    rng, tree = random_case(seed)
    tables = SingleJobTables.from_topology(tree)
    idle = sorted(rng.sample(range(tree.num_nodes), rng.randint(1, min(12, tree.num_nodes))))
    mask = idle_mask(tree, idle)
    size = rng.randint(1, len(idle))
    s, _ = tables.scas(mask, size)
    for convention in CONVENTIONS:
        window = Window(tree, idle, [size])
        dp = solve(window, "dp", convention=convention)
        assert tables.cost(size, s, convention) == pytest.approx(dp.objective)


def test_bigger_tree_scas_and_bound():
    """Leaves of 25 nodes under 4 middle switches: the kernels against the slow references."""
    lines = [f"SwitchName=l{i} Nodes=n[{25 * i}-{25 * i + 24}]" for i in range(16)]
    lines += [f"SwitchName=m{j} Switches=l[{4 * j}-{4 * j + 3}]" for j in range(4)]
    lines.append("SwitchName=top Switches=m[0-3]")
    tree = Topology.from_slurm("\n".join(lines))
    tables = SingleJobTables.from_topology(tree)
    rng = np.random.default_rng(5)
    for share in (0.3, 0.7):
        idle = np.flatnonzero(rng.random(tree.num_nodes) < share)
        mask = idle_mask(tree, idle)
        for size in (2, 8, 30, 64, 100, idle.size):
            s, nodes = tables.scas(mask, size)
            check_nodes(tables, mask, size, s, nodes)
            assert tables.cost(size, s) == pytest.approx(
                tree.count_form.block_costs(idle, size).min()
            )
            s, nodes = tables.bound(mask, size)
            check_nodes(tables, mask, size, s, nodes)
            assert s == sum_of_squares(tree, best_single_job_nodes(tree, idle, size))
            (a, a_nodes), (b, b_nodes) = tables.optima(mask, size)
            assert (a, b) == (tables.scas(mask, size)[0], s) and b >= a
            assert np.array_equal(b_nodes, nodes)


def test_a_fat_tree_works():
    tree = FatTree(k=4)
    tables = SingleJobTables.from_topology(tree)
    mask = idle_mask(tree, [0, 3, 4, 5, 9, 12, 13, 14])
    s, nodes = tables.bound(mask, 3)
    check_nodes(tables, mask, 3, s, nodes)
    s, nodes = tables.scas(mask, 3)
    check_nodes(tables, mask, 3, s, nodes)


# -- use from compiled code and bad input -------------------------------------------------------------
def test_the_kernels_run_inside_compiled_loops():
    tree = FatTree(k=4)
    t = SingleJobTables.from_topology(tree)
    counts = np.zeros(tree.count_form.num_groups, np.int64)

    @numba.njit
    def best_per_size(masks, size, leaf_first, leaf_size, leaf_groups, counts):
        leaf_idle = np.zeros(leaf_first.shape[0], np.int64)
        a, b = np.zeros_like(leaf_idle), np.zeros_like(leaf_idle)
        out = np.empty(masks.shape[0], np.int64)
        for i in range(masks.shape[0]):
            leaf_idle_counts(masks[i], leaf_first, leaf_size, leaf_idle)
            out[i] = scas_best(leaf_groups, leaf_idle, size, counts, a, b)[0]
        return out

    masks = np.random.default_rng(0).random((5, tree.num_nodes)) < 0.6
    masks[:, :4] = True
    got = best_per_size(masks, 3, t.leaf_first, t.leaf_size, t.leaf_groups, counts)
    assert got.tolist() == [t.scas(m, 3)[0] for m in masks]
    assert not counts.any()  # the scratch is handed back zeroed


def test_bad_input_is_one_line():
    tree = FatTree(k=4)
    tables = SingleJobTables.from_topology(tree)
    mask = idle_mask(tree, [0, 1, 2])
    with pytest.raises(InvalidInputError, match=r"size must be an integer in \[1, 3\]"):
        tables.bound(mask, 4)
    with pytest.raises(InvalidInputError, match="size must be"):
        tables.scas(mask, 0)
    with pytest.raises(InvalidInputError, match="idle_mask must be a bool array"):
        tables.scas(mask.astype(int), 2)
    with pytest.raises(InvalidInputError, match="idle_mask must be a bool array"):
        tables.bound(mask[:-1], 2)
    with pytest.raises(InvalidInputError, match="topology must be"):
        SingleJobTables.from_topology("tree")
