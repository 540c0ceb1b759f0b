"""slurm-tree: Slurm 22.05's topology/tree node selection (tjap.heuristics.slurm.tree), and
24.11's (``slurm="24.11"``), without Slurm.

The hand-worked cases follow the rule in the module docstring; the 9-node case with a leaf beside
a switch (``test_leaf_beside_a_switch_wins_when_its_parent_fits``) is also what a real Slurm
22.05.8 chose (tests/placement/slurm/test_slurm_tree_live.py runs such checks against Slurm itself).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tjap.core.errors import InvalidInputError
from tjap.core.result import Status
from tjap.heuristics.slurm.tree import (
    INFINITE,
    RELEASES,
    SlurmWouldNotPlaceError,
    release_for,
    slurm_tree_nodes,
    solve_slurm_tree,
    switch_table,
)
from tjap.heuristics.tree.guarded import solve_guarded
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window

TWO_LEAVES = Topology.from_slurm("""
SwitchName=a Nodes=a[1-4]
SwitchName=b Nodes=b[1-2]
SwitchName=top Switches=a,b
""")

# top -> m (a: 4 nodes, b: 2 nodes), c (3 nodes): leaves at depths 2, 2 and 1
UNEVEN = Topology.from_slurm("""
SwitchName=a Nodes=n[1-4]
SwitchName=b Nodes=n[5-6]
SwitchName=c Nodes=n[7-9]
SwitchName=m Switches=a,b
SwitchName=top Switches=m,c
""")

# top -> m1 (a: 4, b: 2), m2 (c: 3, d: 3)
THREE_LEVELS = Topology.from_slurm("""
SwitchName=top Switches=m1,m2
SwitchName=m1 Switches=a,b
SwitchName=a Nodes=a[1-4]
SwitchName=b Nodes=b[1-2]
SwitchName=m2 Switches=c,d
SwitchName=c Nodes=c[1-3]
SwitchName=d Nodes=d[1-3]
""")

# two top-level switches, no common root in Slurm (an implicit root in the Topology)
TWO_TOPS = Topology.from_slurm("""
SwitchName=a Nodes=a[1-3]
SwitchName=b Nodes=b[1-2]
SwitchName=c Nodes=c[1-4]
SwitchName=p Switches=a,b
""")


def names(topology, nodes):
    return [topology.node_names[v] for v in nodes]


def pick(topology, idle, size):
    return names(topology, slurm_tree_nodes(topology, idle, size))


# -- plain-Python reference of the rule (the oracle of the Numba kernel) ----------------------
def reference_nodes(topology: Topology, idle: set[int], size: int, slurm: str = "22.05"):
    """The rule of tjap.heuristics.slurm.tree (22.05's, or 24.11's), written with sets and dicts,
    or None when no switch holds ``size`` idle nodes."""
    implicit = topology.switch_names[0] == "(root)"
    switches = list(range(1 if implicit else 0, topology.num_switches))
    parent_t = {s: int(topology.switch_parent[s]) for s in switches}
    tops = [s for s in switches if parent_t[s] in (-1, 0) and (implicit or parent_t[s] == -1)]
    # Slurm's parent field: the listing switch, else the first switch of the table
    parent = {s: (parent_t[s] if s not in tops else switches[0]) for s in switches}
    kids = {s: [c for c in switches if c not in tops and parent_t[c] == s] for s in switches}

    def below(s):
        if not kids[s]:
            return [v for v in range(topology.num_nodes) if topology.node_leaf[v] == s]
        return [v for c in kids[s] for v in below(c)]

    def height(s):
        return 0 if not kids[s] else 1 + max(height(c) for c in kids[s])

    def path_up(s):
        out = [s]
        while s not in tops:
            s = parent[s]
            out.append(s)
        return out

    def distance(s, t):
        up_s, up_t = path_up(s), path_up(t)
        common = [u for u in up_s if u in up_t]
        if not common:
            return INFINITE
        return up_s.index(common[0]) + up_t.index(common[0])

    level = {s: height(s) for s in switches}
    count = {s: len(set(below(s)) & idle) for s in switches}
    top = None
    for s in switches:
        if count[s] >= size and count[s] > 0 and (top is None or level[s] >= level[top]):
            top = s
    if top is None:
        return None
    inside = set(below(top)) & idle
    count = {s: len(set(below(s)) & inside) for s in switches}

    def better(i, j, rem):
        """(order, whether i or the ancestor of i the comparison ended at holds rem)"""
        while True:
            fi, fj = count[i] >= rem, count[j] >= rem
            if fi and fj:
                if count[i] != count[j]:
                    return (1 if count[i] < count[j] else -1), fi
                break
            if fi != fj:
                return (1 if fi else -1), fi
            if (parent[i] != i or parent[j] != j) and parent[i] != parent[j]:
                i, j = parent[i], parent[j]
                continue
            break
        if count[i] != count[j]:
            return (1 if count[i] > count[j] else -1), fi
        if level[i] != level[j]:
            return (1 if level[i] < level[j] else -1), fi
        return 0, fi

    leaves = [s for s in switches if level[s] == 0]
    dist = {s: 0 for s in switches}
    taken, rem = [], size
    while rem > 0:
        best = None
        for i in leaves:
            if count[i] == 0 or dist[i] >= INFINITE:
                continue
            if best is None:
                best = i
                continue
            c, fit = better(i, best, rem)
            closer = fit if slurm == "24.11" else c >= 0
            if (dist[i] < dist[best] and closer) or (dist[i] == dist[best] and c > 0):
                best = i
        assert best is not None
        for s in switches:
            d = distance(best, s)
            dist[s] = INFINITE if INFINITE in (d, dist[s]) else dist[s] + d
        for v in sorted(set(below(best)) & inside - set(taken)):
            if rem:
                taken.append(v)
                rem -= 1
        if slurm == "24.11" and rem:
            for s in path_up(best):
                count[s] = max(0, count[s] - count[best]) if s != best else count[s]
        count[best] = 0
    return sorted(taken)


def random_topology(rng) -> Topology:
    """A random tree of 1-4 levels, uneven fan-out and leaf sizes, sometimes several tops."""
    lines, counter, leaf = [], [0], [0]

    def build(depth):
        if depth == 0 or rng.random() < 0.3:
            leaf[0] += 1
            k = int(rng.integers(1, 6))
            nodes = ",".join(f"x{counter[0] + i}" for i in range(k))
            counter[0] += k
            name = f"l{leaf[0]}"
            lines.append(f"SwitchName={name} Nodes={nodes}")
            return name
        kids = [build(depth - 1) for _ in range(int(rng.integers(1, 4)))]
        name = f"s{len(lines)}"
        lines.append(f"SwitchName={name} Switches={','.join(kids)}")
        return name

    tops = 1 if rng.random() < 0.8 else 2
    for _ in range(tops):
        build(int(rng.integers(1, 4)))
    return Topology.from_slurm("\n".join(lines) + "\n")


# -- hand-worked examples --------------------------------------------------------------------
def test_best_fit_prefers_the_smallest_leaf_that_fits():
    assert pick(TWO_LEAVES, TWO_LEAVES.node_names, 2) == ["b1", "b2"]
    assert pick(TWO_LEAVES, TWO_LEAVES.node_names, 1) == ["b1"]
    assert pick(TWO_LEAVES, TWO_LEAVES.node_names, 3) == ["a1", "a2", "a3"]
    assert pick(THREE_LEVELS, THREE_LEVELS.node_names, 2) == ["b1", "b2"]
    assert pick(THREE_LEVELS, THREE_LEVELS.node_names, 3) == ["c1", "c2", "c3"]  # c before d


def test_best_fit_counts_idle_nodes_not_leaf_sizes():
    idle = ["a1", "a3", "b1", "b2"]  # leaf a has 2 idle nodes left, b has 2
    assert pick(TWO_LEAVES, idle, 2) == ["a1", "a3"]  # equal fit: the first leaf
    idle = ["a2", "a3", "a4", "b1"]
    assert pick(TWO_LEAVES, idle, 1) == ["b1"]
    assert pick(TWO_LEAVES, idle, 2) == ["a2", "a3"]  # first idle nodes of the leaf, in order


def test_a_large_job_starts_with_the_fullest_leaf():
    assert pick(TWO_LEAVES, TWO_LEAVES.node_names, 5) == ["a1", "a2", "a3", "a4", "b1"]
    # 8 of 12: no leaf and no middle switch fits; m1 (6) vs m2 (6) tie, a (4) is the fullest
    # leaf; then 4 missing: d, c (3 each) at distance 4, b (2) at distance 2: b is closer
    assert pick(THREE_LEVELS, THREE_LEVELS.node_names, 8) == [
        "a1",
        "a2",
        "a3",
        "a4",
        "b1",
        "b2",
        "c1",
        "c2",
    ]


def test_near_leaf_beats_a_farther_better_fit():
    # 6 nodes: a (4 idle) first; 2 missing: b (1 idle, distance 2) beats c (2 idle, distance 4)
    # although c alone would hold both; then c for the last one
    idle = ["a1", "a2", "a3", "a4", "b1", "c1", "c2"]
    assert pick(THREE_LEVELS, idle, 6) == ["a1", "a2", "a3", "a4", "b1", "c1"]


def test_leaf_beside_a_switch_wins_when_its_parent_fits():
    # 7 of 9: a (4) vs c (3): neither fits, so compare parents: m (6) cannot hold 7, top can,
    # so c goes first; then a (fits the remaining 4). Real Slurm 22.05.8 chose n[01-04,07-09].
    assert pick(UNEVEN, UNEVEN.node_names, 7) == ["n1", "n2", "n3", "n4", "n7", "n8", "n9"]
    assert pick(UNEVEN, UNEVEN.node_names, 3) == ["n7", "n8", "n9"]
    assert pick(UNEVEN, UNEVEN.node_names, 5) == ["n1", "n2", "n3", "n4", "n5"]


def test_switch_table_matches_slurm():
    t = switch_table(UNEVEN)  # table order top, m, a, b, c (to_slurm's order)
    assert t.level.tolist() == [2, 1, 0, 0, 0]
    assert t.parent.tolist() == [0, 0, 1, 1, 0]  # the root keeps 0: itself
    assert t.leaves.tolist() == [2, 3, 4]
    assert t.leaf_distances().tolist() == [[2, 1, 0, 2, 3], [2, 1, 2, 0, 3], [1, 2, 3, 3, 0]]
    two = switch_table(TWO_TOPS)  # Slurm's table: c, p, a, b (no implicit root)
    assert two.level.tolist() == [0, 1, 0, 0]
    assert two.parent.tolist() == [0, 0, 1, 1]  # the unlisted p keeps 0: switch c
    assert two.leaves.tolist() == [0, 2, 3]
    assert two.leaf_distances().tolist() == [
        [0] + [INFINITE] * 3,
        [INFINITE, 1, 0, 2],
        [INFINITE, 1, 2, 0],
    ]


def test_several_top_level_switches_confine_the_job():
    everything = TWO_TOPS.node_names
    # 4 nodes: c (4 idle) and p (5 idle) hold them; the higher level wins
    assert pick(TWO_TOPS, everything, 4) == ["a1", "a2", "a3", "b1"]
    # with p down to 3 idle nodes only c holds 4
    idle = ["a3", "b1", "b2", "c1", "c2", "c3", "c4"]
    assert pick(TWO_TOPS, idle, 4) == ["c1", "c2", "c3", "c4"]
    assert pick(TWO_TOPS, idle, 3) == ["a3", "b1", "b2"]
    with pytest.raises(SlurmWouldNotPlaceError, match="pending"):
        slurm_tree_nodes(TWO_TOPS, everything, 6)
    r = solve_slurm_tree(Window(TWO_TOPS, everything, [4, 5]))
    assert r.status == Status.INFEASIBLE and r.assignment == ()
    assert r.info["unplaced_job"] == 1


#: Two trees of benchmarks/slurm_tree_validation.py (seed 0) on which Slurm 24.11.5 and 22.05.8
#: chose differently; the node sets are theirs.
BESIDE = Topology.from_slurm("""
SwitchName=top Switches=l[1-3],m1
SwitchName=l1 Nodes=n[001-004]
SwitchName=l2 Nodes=n[005-010]
SwitchName=l3 Nodes=n[011-016]
SwitchName=m1 Switches=l[4-5]
SwitchName=l4 Nodes=n[017-021]
SwitchName=l5 Nodes=n[022-027]
""")
PAIRS = Topology.from_slurm("""
SwitchName=top Switches=m[1-2]
SwitchName=m1 Switches=l[1-2]
SwitchName=l1 Nodes=n[001-006]
SwitchName=l2 Nodes=n[007-011]
SwitchName=m2 Switches=l[3-5]
SwitchName=l3 Nodes=n[012-017]
SwitchName=l4 Nodes=n[018-021]
SwitchName=l5 Nodes=n[022-025]
""")


def _n(*numbers):
    return [f"n{i:03d}" for i in numbers]


@pytest.mark.parametrize(
    "tree, idle, sizes, slurm_22_05, slurm_24_11",
    [
        # l5 (5 idle, its switch m1 holds 8) first; 2 missing: 22.05 takes the best fit l1 (2 idle),
        # 24.11 the closer l4, which holds them
        (
            BESIDE,
            _n(1, 3, 8, 9, 10, 17, 19, 20, 23, 24, 25, 26, 27),
            [7],
            [_n(1, 3, 23, 24, 25, 26, 27)],
            [_n(17, 19, 23, 24, 25, 26, 27)],
        ),
        # 8 nodes: l3 first (its switch m2 holds 8); for the 5 missing, 24.11 counts the 5 left
        # under m2, a tighter fit than m1's 6, and stays there (l4, l5); 22.05 still counts m2's 8,
        # so m1 is the tighter fit and it goes to l1, then back to l4
        (
            PAIRS,
            _n(1, 2, 4, 7, 8, 9, 12, 16, 17, 18, 19, 22, 23, 24),
            [8, 1],
            [_n(1, 2, 4, 12, 16, 17, 18, 19), _n(7)],
            [_n(12, 16, 17, 18, 19, 22, 23, 24), _n(1)],
        ),
    ],
)
def test_what_slurm_22_05_and_24_11_chose(tree, idle, sizes, slurm_22_05, slurm_24_11):
    window = Window(tree, idle, sizes)
    for slurm, expected in (("22.05", slurm_22_05), ("24.11", slurm_24_11)):
        result = solve_slurm_tree(window, slurm=slurm)
        assert [sorted(nodes) for nodes in result.node_names()] == expected, slurm


@pytest.mark.parametrize(
    "version, rule",
    [
        ("slurm 24.11.5", "24.11"),
        ("slurm 25.05.0", "24.11"),
        ("slurm-wlm 22.05.8", "22.05"),
        ("slurm 23.11.4", "22.05"),
        ("", "22.05"),
    ],
)
def test_the_rule_follows_the_live_version(version, rule):
    assert release_for(version) == rule


def test_guarded_follows_the_rule_it_is_given():
    window = Window(BESIDE, _n(1, 3, 8, 9, 10, 17, 19, 20, 23, 24, 25, 26, 27), [7])
    for slurm in RELEASES:
        r = solve_guarded(window, slurm=slurm)
        assert r.info["slurm_tree_cost"] == solve_slurm_tree(window, slurm=slurm).objective
    assert (
        solve_slurm_tree(window, slurm="22.05").objective
        != solve_slurm_tree(window, slurm="24.11").objective
    )
    with pytest.raises(InvalidInputError, match="slurm must be one of") as info:
        solve_guarded(window, slurm="23.02")
    assert "\n" not in str(info.value)


# -- the oracle, feasibility, determinism ----------------------------------------------------
@pytest.mark.parametrize("slurm", ["22.05", "24.11"])
@pytest.mark.parametrize("seed", range(40))
def test_kernel_matches_the_reference(seed, slurm):
    rng = np.random.default_rng(seed)
    topology = random_topology(rng)
    for _ in range(8):
        idle = set(np.flatnonzero(rng.random(topology.num_nodes) < rng.uniform(0.3, 1)).tolist())
        if not idle:
            continue
        size = int(rng.integers(1, len(idle) + 1))
        expected = reference_nodes(topology, idle, size, slurm)
        if expected is None:
            with pytest.raises(SlurmWouldNotPlaceError):
                slurm_tree_nodes(topology, sorted(idle), size, slurm=slurm)
        else:
            assert slurm_tree_nodes(topology, sorted(idle), size, slurm=slurm).tolist() == expected


@pytest.mark.parametrize("seed", range(10))
def test_window_is_feasible_deterministic_and_sequential(seed):
    rng = np.random.default_rng(100 + seed)
    topology = random_topology(rng)
    while topology.switch_names[0] == "(root)":
        topology = random_topology(rng)
    idle = np.flatnonzero(rng.random(topology.num_nodes) < 0.7)
    if idle.size == 0:
        idle = np.arange(topology.num_nodes)
    sizes, left = [], idle.size
    while left:
        sizes.append(int(rng.integers(1, left + 1)))
        left -= sizes[-1]
        if rng.random() < 0.4:
            break
    window = Window(topology, idle.tolist(), sizes)
    r = solve_slurm_tree(window)
    assert r.status == Status.FEASIBLE and r.method == "slurm-tree" and r.is_feasible()
    again = solve_slurm_tree(window, seed=7)
    assert again.assignment == r.assignment and again.objective == r.objective
    free = set(idle.tolist())
    for nodes, size in zip(r.assignment, sizes):  # each job: the one-job rule on what is left
        assert list(nodes) == slurm_tree_nodes(topology, sorted(free), size).tolist()
        free -= set(nodes)


def test_mask_and_names_give_the_same_nodes():
    mask = np.zeros(UNEVEN.num_nodes, dtype=bool)
    mask[[0, 2, 4, 5, 8]] = True
    by_mask = slurm_tree_nodes(UNEVEN, mask, 3)
    assert by_mask.tolist() == slurm_tree_nodes(UNEVEN, [0, 2, 4, 5, 8], 3).tolist()
    assert by_mask.tolist() == slurm_tree_nodes(UNEVEN, ["n1", "n3", "n5", "n6", "n9"], 3).tolist()


def test_works_on_a_fat_tree_and_through_tjap_solve():
    import tjap
    from tjap.registry import get

    ft = FatTree(k=4)
    window = Window(ft, list(range(1, 16)), [3, 4, 2])
    r = tjap.solve(window, "slurm-tree")
    assert r.is_feasible() and r.status == Status.FEASIBLE
    # 3 nodes: no edge switch holds them; s1 (2 idle, in pod0 with 3 idle: the tightest pod)
    # then its neighbour s0; 4 nodes: pod1's two switches; 2 nodes: the first full switch
    assert r.assignment == ((1, 2, 3), (4, 5, 6, 7), (8, 9))
    assert get("tree", "slurm-tree").load() is solve_slurm_tree
    json.dumps(r.to_dict())


def test_cli_solve(tmp_path, capsys):
    from tjap.cli import main

    path = tmp_path / "w.json"
    path.write_text(Window(UNEVEN, UNEVEN.node_names, [7, 2]).to_json())
    code = main(["solve", str(path), "--method", "slurm-tree", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "FEASIBLE"
    assert out["nodes"] == [["n1", "n2", "n3", "n4", "n7", "n8", "n9"], ["n5", "n6"]]


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "idle, size, match",
    [
        (["n1", "n2"], 3, "does not fit"),
        (["n1", "n2"], 0, "positive integer"),
        (["n1", "n2"], 1.5, "positive integer"),
        (["n1", "n1"], 1, "twice"),
        (["zz"], 1, "unknown node"),
        (np.ones(3, dtype=bool), 1, "one entry per node"),
        (5, 1, "boolean mask or a list"),
    ],
)
def test_bad_input_is_one_line(idle, size, match):
    with pytest.raises(InvalidInputError, match=match) as info:
        slurm_tree_nodes(UNEVEN, idle, size)
    assert "\n" not in str(info.value)


def test_bad_release_is_one_line():
    for call in (
        lambda: slurm_tree_nodes(UNEVEN, ["n1"], 1, slurm="23.02"),
        lambda: solve_slurm_tree(Window(UNEVEN, ["n1"], [1]), slurm=24.11),
    ):
        with pytest.raises(
            InvalidInputError, match="slurm must be one of '22.05', '24.11'"
        ) as info:
            call()
        assert "\n" not in str(info.value)


def test_bad_topology_and_window():
    with pytest.raises(InvalidInputError, match="Topology"):
        slurm_tree_nodes("top", ["n1"], 1)
    with pytest.raises(InvalidInputError, match="Window"):
        solve_slurm_tree({"job_sizes": [1]})
