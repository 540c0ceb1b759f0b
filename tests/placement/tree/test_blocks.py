"""Slurm's ``topology/block`` configurations read as trees (tjap.placement.tree.blocks): base blocks
as leaf switches, the aggregated blocks Slurm plans with as the switches above them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tjap
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.blocks import aggregates, block_levels
from tjap.placement.tree.topology import IMPLICIT_ROOT, Topology


def block_conf(counts, sizes=None, prefix="b") -> str:
    """A topology.conf of blocks of ``counts`` nodes each, nodes numbered across blocks."""
    lines, start = [], 1
    for i, count in enumerate(counts, 1):
        lines.append(
            f"BlockName={prefix}{i} Nodes=n[{start}-{start + count - 1}]"
            if count > 1
            else f"BlockName={prefix}{i} Nodes=n{start}"
        )
        start += count
    if sizes:
        lines.append("BlockSizes=" + ",".join(map(str, sizes)))
    return "\n".join(lines) + "\n"


def node_sets(tree: Topology) -> dict[str, frozenset]:
    """Every switch's nodes (all below it), by switch name."""
    below = {s: set() for s in range(tree.num_switches)}
    for node in tree.node_names:
        for s in tree.ancestors(node):
            below[s].add(node)
    return {name: frozenset(below[s]) for s, name in enumerate(tree.switch_names)}


def reference_groups(num_blocks: int, factors) -> set[tuple[int, int]]:
    """Slurm's aggregates written plainly, as (first, stop) base-block ranges: sizes in base
    blocks up to the first that holds every block; an aggregate at every multiple of its size,
    except at the end where the next smaller size already holds the blocks that remain."""
    sizes = []
    for f in sorted(set(factors)):
        sizes.append(f)
        if f >= num_blocks:
            break
    found = set()
    for j in range(1, len(sizes)):
        for first in range(0, num_blocks, sizes[j]):
            left = num_blocks - first
            if not (sizes[j] > left and sizes[j - 1] >= left):
                found.add((first, min(first + sizes[j], num_blocks)))
    return found


def test_slurms_observed_aggregates():
    """4 blocks of 4 with BlockSizes=4,8,16: Slurm 24.11 lists b[1-2], b[3-4] and b[1-4]."""
    tree = Topology.from_slurm(block_conf([4] * 4, [4, 8, 16]))
    sets = node_sets(tree)
    assert tree.switch_names[0] == "b1..b4" and tree.num_levels == 3
    assert sets["b1..b2"] == {f"n{i}" for i in range(1, 9)}
    assert sets["b3..b4"] == {f"n{i}" for i in range(9, 17)}
    assert sets["b1..b4"] == {f"n{i}" for i in range(1, 17)}
    assert [tree.switch_names[p] for p in tree.switch_parent[1:]] == [
        "b1..b4",
        "b1..b2",
        "b1..b2",
        "b1..b4",
        "b3..b4",
        "b3..b4",
    ]


def test_the_manual_example_with_a_planning_size_below_the_block():
    """topology.conf(5)'s example: 4 blocks of 32 nodes, BlockSizes=30,120: 120 nodes are 4 base
    blocks, so one aggregate joins all four (no pairs are planned)."""
    tree = Topology.from_slurm(block_conf([32] * 4, [30, 120]))
    assert tree.num_switches == 5 and tree.num_levels == 2
    assert tree.switch_names[0] == "b1..b4"
    assert [tree.switch_names[c] for c in tree.children(0)] == ["b1", "b2", "b3", "b4"]
    assert tree.num_nodes == 128


def test_without_block_sizes_slurm_plans_up_to_8_blocks():
    tree = Topology.from_slurm(block_conf([2] * 16))
    assert tree.switch_names[0] == IMPLICIT_ROOT
    assert [tree.switch_names[c] for c in tree.children(0)] == ["b1..b8", "b9..b16"]
    assert tree.num_levels == 5  # block, pair, quad, eight, the implicit root


def test_a_tail_of_blocks_joins_the_aggregate_that_holds_it():
    """5 blocks, planned sizes 1-8: b5 has no pair nor quad of its own; the 8-aggregate takes it."""
    tree = Topology.from_slurm(block_conf([3] * 5))
    parent = {
        tree.switch_names[s]: tree.switch_names[p]
        for s, p in enumerate(tree.switch_parent)
        if p >= 0
    }
    assert parent["b5"] == "b1..b5" and parent["b1..b4"] == "b1..b5"
    assert "b5..b5" not in parent and tree.switch_names[0] == "b1..b5"


@settings(max_examples=150, deadline=None)
@given(
    num_blocks=st.integers(1, 40),
    factors=st.sets(st.sampled_from([2, 4, 8, 16, 32, 64]), max_size=4),
    per_block=st.integers(1, 3),
)
def test_the_tree_holds_exactly_slurms_aggregates(num_blocks, factors, per_block):
    base = 2 * per_block
    sizes = [base] + sorted(base * f for f in factors)
    tree = Topology.from_slurm(block_conf([base] * num_blocks, sizes))
    block_nodes = [
        frozenset(f"n{i}" for i in range(b * base + 1, (b + 1) * base + 1))
        for b in range(num_blocks)
    ]
    expected = {
        frozenset().union(*block_nodes[first:stop])
        for first, stop in reference_groups(num_blocks, [1, *factors])
    }
    sets = node_sets(tree)
    found = {nodes for name, nodes in sets.items() if ".." in name}
    assert found == expected
    assert {sets[f"b{b + 1}"] for b in range(num_blocks)} == set(block_nodes)
    # the node order is the blocks' order, so the SCAS sequence runs block after block
    assert list(tree.node_names) == [f"n{i}" for i in range(1, num_blocks * base + 1)]
    # nesting: a switch's nodes are the union of its children's
    for s, name in enumerate(tree.switch_names):
        kids = tree.children(s)
        if kids:
            assert sets[name] == frozenset().union(*(sets[tree.switch_names[k]] for k in kids))


def test_levels_and_groups_of_the_plain_functions():
    assert block_levels(4, [18, 36, 72, 144]) == [1, 2, 4]
    assert block_levels(32, [18, 36, 72, 144, 288, 576]) == [1, 2, 4, 8, 16, 32]
    assert block_levels(3, None) == [1, 2, 4]
    assert aggregates(3, [1, 2, 4]) == [(1, 0, 2), (2, 0, 3)]


def test_every_window_method_runs_on_a_block_cluster():
    tree = Topology.from_slurm(block_conf([18] * 8, [18, 36, 72, 144]))
    rng = np.random.default_rng(0)
    idle = sorted(rng.choice(tree.num_nodes, 100, replace=False).tolist())
    window = tjap.Window(tree, idle_nodes=idle, job_sizes=[18, 9, 12, 30, 4])
    best = tjap.solve(window, method="dp")
    assert best.is_feasible()
    for method in ("scip", "cpsat"):
        assert tjap.solve(window, method=method, time_limit_s=60).objective == pytest.approx(
            best.objective
        )
    for method in ("sa", "slurm-tree", "guarded", "seq"):
        r = tjap.solve(window, method=method, seed=1)
        assert r.is_feasible() and r.objective >= best.objective - 1e-6


@pytest.mark.parametrize(
    "text, fragment",
    [
        (block_conf([4, 3]), "fewer than the base block size 4"),
        (block_conf([4, 4], [4, 12]), "times a power of two"),
        (block_conf([4, 4], [4, 6]), "times a power of two"),
        (block_conf([4, 4], [8, 4]), "times a power of two"),
        (block_conf([4, 4], [4, 4]), "must increase"),
        (block_conf([4, 4]) + "BlockSizes=4,x\n", "not a positive number"),
        (block_conf([4, 4]) + "BlockSizes=0\n", "not a positive number"),
        (block_conf([4, 4], [4, 8]) + "BlockSizes=4\n", "given twice"),
        ("BlockSizes=4,8\n", "no block"),
        (block_conf([4, 4]) + "SwitchName=s1 Nodes=m[1-4]\n", "mixes switches"),
        ("BlockName=b1 Switches=s[1-2]\n", "a block lists nodes, not switches"),
        ("BlockName=b1\n", "has no Nodes="),
        ("BlockName= Nodes=n1\n", "BlockName= is empty"),
        ("BlockName=b1 SwitchName=s Nodes=n1\n", "both SwitchName= and BlockName="),
        (block_conf([2, 2]) + "BlockName=b1 Nodes=m[1-2]\n", "already defined"),
        ("BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[2-3]\n", "node 'n2'"),
        (
            "BlockName=a Nodes=n[1-2]\nBlockName=b Nodes=n[3-4]\nBlockName=a..b Nodes=n[5-6]\n"
            "BlockSizes=2,4,8\n",
            "rename",
        ),
    ],
)
def test_bad_block_configurations_are_one_line(text, fragment):
    with pytest.raises(InvalidInputError) as info:
        Topology.from_slurm(text)
    message = str(info.value)
    assert "\n" not in message and fragment in message, message


def test_topology_show_reads_a_block_file(tmp_path, capsys):
    from tjap.cli import main

    path = tmp_path / "topology.conf"
    path.write_text(block_conf([18] * 4, [18, 36, 72]))
    assert main(["topology", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "b1..b4" in out and "72" in out


SCONTROL_BLOCKS = """BlockName=b1 BlockIndex=0 Nodes=n[1-4] BlockSize=4
BlockName=b2 BlockIndex=1 Nodes=n[5-8] BlockSize=4
BlockName=b3 BlockIndex=2 Nodes=n[9-12] BlockSize=4
BlockName=b4 BlockIndex=3 Nodes=n[13-16] BlockSize=4
AggregatedBlock=b[1-2] BlockIndex=4 Nodes=n[1-8] BlockSize=8
AggregatedBlock=b[3-4] BlockIndex=5 Nodes=n[9-16] BlockSize=8
AggregatedBlock=b[1-4] BlockIndex=6 Nodes=n[1-16] BlockSize=16
"""


def test_scontrol_show_topology_of_a_block_cluster():
    """What a live 24.11 prints under topology/block (base blocks, then aggregated blocks) is the
    tree of the equivalent topology.conf, and Slurm's aggregates are checked against tjap's."""
    tree = Topology.from_scontrol(SCONTROL_BLOCKS)
    assert tree == Topology.from_slurm(block_conf([4] * 4, [4, 8, 16]))
    two = Topology.from_scontrol(
        "BlockName=g0 BlockIndex=0 Nodes=h[1-2] BlockSize=2\n"
        "BlockName=g1 BlockIndex=1 Nodes=h[3-4] BlockSize=2\n"
        "AggregatedBlock=g[0-1] BlockIndex=2 Nodes=h[1-4] BlockSize=4\n"
    )
    assert two.switch_names == ("g0..g1", "g0", "g1")


def test_an_aggregate_slurm_lists_that_tjap_does_not_build_is_one_line():
    text = SCONTROL_BLOCKS.replace(
        "AggregatedBlock=b[3-4] BlockIndex=5 Nodes=n[9-16]",
        "AggregatedBlock=b[2-3] BlockIndex=5 Nodes=n[5-12]",
    )
    with pytest.raises(InvalidInputError, match=r"aggregated block b\[2-3\] \(n\[5-12\]\)"):
        Topology.from_scontrol(text)
    with pytest.raises(InvalidInputError, match="lacks Nodes= or BlockSize="):
        Topology.from_scontrol("BlockName=b1 BlockIndex=0 Nodes=n[1-4]\n")


def free_domains_by_definition(result, level: int) -> int:
    """Whole domains of ``level`` left idle, from Topology.ancestors (an independent count)."""
    tree = result.window.topology
    taken = {n for nodes in result.assignment for n in nodes}
    free = set(result.window.idle_nodes.tolist()) - taken
    domains: dict[int, list[int]] = {}
    for node in range(tree.num_nodes):
        up = tree.ancestors(node)  # the node's leaf switch first, the root last
        domains.setdefault(up[min(level, len(up)) - 1], []).append(node)
    return sum(all(n in free for n in nodes) for nodes in domains.values())


@pytest.mark.parametrize("seed", range(6))
def test_free_blocks_counts_whole_idle_domains(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(2, 6, size=int(rng.integers(3, 12))).tolist()
    base = min(counts)
    tree = Topology.from_slurm(block_conf(counts, [base, 2 * base, 4 * base]))
    idle = sorted(rng.choice(tree.num_nodes, int(tree.num_nodes * 0.7), replace=False).tolist())
    sizes = [int(s) for s in rng.integers(1, 6, size=3)]
    result = tjap.solve(tjap.Window(tree, idle_nodes=idle, job_sizes=sizes), method="dp")
    for level in (1, 2, 3, 9):
        assert result.free_blocks(level) == free_domains_by_definition(result, level)
    assert result.to_dict()["free_blocks"] == result.free_blocks(1)
    with pytest.raises(InvalidInputError, match="level must be a positive integer"):
        result.free_blocks(0)
