"""The anchor methods: what Slurm's topology/block selection (``slurm-block``) and Kueue's
topology-aware scheduling (``kueue-bestfit``, ``kueue-leastfree``) do with a window's jobs.

Hand-made cases whose answer follows from the documented rules (the placements a real Slurm
24.11.5 made on 16 nodes in 4 blocks of 4 included), the INFEASIBLE / unplaced convention, the
one-line refusals, determinism, and random windows: every returned placement is checked by
``Result.is_feasible`` and by the independent checker (tests/oracles/constraint_oracle.py)."""

from __future__ import annotations

import random

import constraint_oracle as oracle
import numpy as np
import pytest
from constraint_cases import BLOCKS, LABELS, TAIL, random_jobs

import tjap
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.jobs import switch_levels
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window
from tjap.registry import get

ANCHORS = ["slurm-block", "kueue-bestfit", "kueue-leastfree"]
KUEUE = ["kueue-bestfit", "kueue-leastfree"]


def blocks(count, size, sizes):
    return Topology.from_slurm(
        "\n".join(
            [f"BlockName=b{i} Nodes=n[{size * i + 1}-{size * i + size}]" for i in range(count)]
            + [f"BlockSizes={sizes}"]
        )
    )


#: The cluster the Slurm 24.11.5 placements were seen on: 16 nodes, 4 blocks of 4.
B16 = blocks(4, 4, "4,8,16")
#: Kueue levels block > rack > host, 2 blocks of 2 racks of 3 nodes (tjap: rack 1, block 2).
RACKS = Topology.from_node_labels(
    [(f"h{i:02d}", {"block": f"B{i // 6}", "rack": f"R{i // 3}"}) for i in range(12)],
    levels=["block", "rack"],
)


def names(*ranges):
    """Node names n{a}..n{b} for each (a, b), and single names."""
    out = []
    for r in ranges:
        out += [f"n{i}" for i in range(r[0], r[1] + 1)] if isinstance(r, tuple) else [r]
    return out


def check(result, window):
    """A returned placement: feasible by the library and by the independent checker."""
    assert result.has_solution and result.status.value == "FEASIBLE"
    assert result.is_feasible(), result.violations()
    assert oracle.keeps(window, result.assignment)


def check_partial(result, window):
    """An INFEASIBLE result: the placed jobs keep their constraints among themselves, every job
    is either placed or listed as unplaced."""
    assert result.status.value == "INFEASIBLE" and not result.has_solution
    placed, unplaced = result.info["placed"], result.info["unplaced"]
    assert unplaced and sorted([*placed, *unplaced]) == list(range(window.num_jobs))
    if placed:
        jobs = [window.jobs[j] for j in sorted(placed)]
        sub = Window(window.topology, window.idle_nodes, jobs, levels=window.levels)
        assignment = [placed[j] for j in sorted(placed)]
        assert oracle.keeps(sub, assignment)


def solve(tree, idle, jobs, method="slurm-block", **kwargs):
    window = Window(tree, idle, jobs, **kwargs)
    result = tjap.solve(window, method)
    if result.has_solution:
        check(result, window)
    else:
        check_partial(result, window)
    return result


# -- slurm-block: what Slurm 24.11.5 did ----------------------------------------------------------
@pytest.mark.parametrize(
    "idle, job, expected",
    [
        (names((1, 16)), {"nodes": 8, "segment": 4}, names((9, 16))),
        (names((1, 16)), {"nodes": 6, "segment": 3}, names((9, 11), (13, 15))),
        (names((1, 16)), {"nodes": 12, "segment": 4}, names((5, 16))),
        (names((1, 8)), 6, names((1, 2), (5, 8))),  # n[9-16] busy
        # a busy set under which the rule gives what Slurm printed (segments in unrelated blocks)
        (
            names("n1", "n3", (5, 12), "n14", "n15"),
            {"nodes": 4, "segment": 2},
            names("n1", "n3", "n14", "n15"),
        ),
    ],
    ids=["N8-seg4", "N6-seg3", "N12-seg4", "N6-after-N8", "N4-seg2"],
)
def test_the_placements_slurm_24_11_made(idle, job, expected):
    result = solve(B16, idle, [job])
    assert sorted(result.node_names()[0]) == sorted(expected)


def test_a_window_replays_slurms_sequence():
    """The second job sees the first one's nodes busy, as Slurm did."""
    result = solve(B16, names((1, 16)), [{"nodes": 8, "segment": 4}, 6])
    assert result.node_names() == (tuple(names((9, 16))), tuple(names((1, 2), (5, 8))))


@pytest.mark.parametrize("size, expected", [(6, [(9, 10), (13, 16)]), (9, ["n5", (9, 16)])])
def test_an_unsegmented_job_takes_base_blocks_by_slurms_order(size, expected):
    """On an empty cluster 6 nodes ask for a pair of blocks: b2-b3, the last of two equal
    pairs. No base block holds 6, so the last of the fullest (b3) gives its 4 nodes, then b2,
    which holds the 2 missing ones, its first two. 9 nodes ask for all four blocks: b3, b2,
    then of b0 and b1, equal and both holding the last node, the last (b1)."""
    result = solve(B16, names((1, 16)), [size])
    assert result.node_names()[0] == tuple(names(*expected))


@pytest.mark.parametrize("size, block", [(3, "b3"), (2, "b1"), (4, "b0")])
def test_best_fit_picks_the_fullest_block_that_holds_the_job(size, block):
    """Idle: b0 4, b1 2, b2 3, b3 3 nodes: the block with the fewest idle nodes that holds the
    job, the last of equal ones."""
    idle = names((1, 4), "n5", "n6", (9, 11), (14, 16))
    result = solve(B16, idle, [size])
    assert {B16.switch_names[B16.node_leaf[v]] for v in result.assignment[0]} == {block}


def test_a_level_that_skips_a_block_size_counts_only_the_fullest_base_blocks():
    """BlockSizes=4,16: 6 nodes ask for 2 base blocks, so a 16-node block holds the job only
    if two of its base blocks hold 6 idle nodes. b0-b3 (2, 2, 2, 1 idle) has fewer idle nodes
    than b4-b7 (4, 2, 1, 1) but cannot hold it."""
    tree = blocks(8, 4, "4,16")
    idle = names((1, 2), (5, 6), (9, 10), "n13", (17, 22), "n25", "n29")
    result = solve(tree, idle, [6])
    assert result.node_names()[0] == tuple(names((17, 22)))


@pytest.mark.parametrize("b3_idle, placed", [(0, False), (1, True)])
def test_an_empty_base_block_in_a_used_llblock_ends_the_search(b3_idle, placed):
    """BlockSizes=4,16,64: 17 nodes may use two 16-node llblocks. With b0-b2 full, b3 empty
    and 4 + 1 idle in b4-b5, the search takes b2, b1, b0, then prefers b3 (its llblock is in
    use) and adds nothing: Slurm's code leaves the job pending. One idle node in b3 and it
    goes on to b4."""
    tree = blocks(16, 4, "4,16,64")
    idle = names((1, 12), (17, 20)) + (["n13"] if b3_idle else ["n21"])
    result = solve(tree, idle, [17])
    assert result.has_solution is placed
    if placed:
        assert result.node_names()[0] == tuple(names((1, 13), (17, 20)))


def test_segments_of_12_on_blocks_of_18():
    """36 nodes in segments of 12 where 17, 17, 12 and 2 nodes are idle: one segment per
    block, the emptiest block that holds a segment first."""
    tree = blocks(4, 18, "18,36,72")
    idle = names((2, 18), (20, 36), (37, 48), "n55", "n56")
    result = solve(tree, idle, [{"nodes": 36, "segment": 12}])
    nodes = result.node_names()[0]
    assert sorted(nodes) == sorted(names((2, 13), (20, 31), (37, 48)))
    assert sorted(np.bincount(tree.node_leaf[list(result.assignment[0])]).tolist())[-3:] == [
        12,
        12,
        12,
    ]


def uneven(sizes, block_sizes):
    """Base blocks b1, b2 ... of the given node counts, nodes n1, n2 ... in order."""
    lines, first = [], 1
    for i, size in enumerate(sizes):
        lines.append(f"BlockName=b{i + 1} Nodes=n[{first}-{first + size - 1}]")
        first += size
    return Topology.from_slurm("\n".join(lines) + f"\nBlockSizes={block_sizes}\n")


def test_the_whole_cluster_counts_only_its_full_llblocks():
    """What Slurm 24.11.5 did (tests/placement/slurm/test_slurm_block_live.py): 7 blocks of 4-6 with
    BlockSizes=4,8. 11 nodes ask for three base blocks, a level no BlockSizes entry gives: the
    whole cluster, counted as llblocks of two blocks. Slurm counts 7 // 2 = 3 of them, so the
    lone b7 (5 idle) is left out and b3-b4 (7 idle) alone cannot hold 11: pending."""
    tree = uneven([5, 4, 4, 4, 6, 5, 5], "4,8")
    idle = [n for n in names((1, 33)) if n not in ("n2", "n13", "n26")]
    result = solve(tree, idle, [9, 9, 11, 1])
    assert result.info["unplaced"] == [2]
    placed = {
        j: sorted(tree.node_names[v] for v in nodes) for j, nodes in result.info["placed"].items()
    }
    assert placed == {
        0: sorted(names((18, 25), "n27")),
        1: sorted(names("n1", (3, 9), "n28")),
        3: ["n10"],
    }


@pytest.mark.parametrize(
    "jobs, busy, expected",
    [
        ([30, 2], ("n3", "n12"), [names("n1", (5, 11), (13, 34)), ["n2", "n4"]]),
        ([33], (), None),
    ],
)
def test_a_short_top_block_counts_at_its_block_size(jobs, busy, expected):
    """What Slurm 24.11.5 did: 7 blocks of 4-5 with BlockSizes=4,8,16,32. The top block counts
    as 8 base blocks: 30 nodes (8 blocks' worth) go to it; 33 (9) go to the whole cluster,
    whose one llblock, the top block, is larger than the 7 base blocks and never counted:
    Slurm refuses the job although every node is idle."""
    tree = uneven([4, 5, 5, 5, 5, 5, 5], "4,8,16,32")
    result = solve(tree, [n for n in names((1, 34)) if n not in busy], jobs)
    if expected is None:
        assert result.info["unplaced"] == [0]
    else:
        assert [sorted(nodes) for nodes in result.node_names()] == [sorted(e) for e in expected]


def test_the_whole_cluster_above_a_full_top_block_takes_it_as_llblock():
    """What Slurm 24.11.5 did: 8 blocks of 4-7, BlockSizes=4,8,16,32; 39 nodes ask for 10 base
    blocks, more than the top block's 8: the whole cluster, whose llblock is the top block
    itself. Base blocks are taken most idle first (b8, the last of the fullest, first), and the
    last node comes from b2, the one with the fewest idle nodes that holds it."""
    tree = uneven([7, 4, 7, 6, 5, 7, 6, 7], "4,8,16,32")
    idle = names((1, 6), (8, 14), (16, 27), "n29", "n31", (33, 39), (41, 42), (44, 49))
    result = solve(tree, idle, [39])
    assert result.node_names()[0] == tuple(
        names((1, 6), "n8", (12, 14), (16, 27), "n29", "n31", (33, 39), (41, 42), (44, 49))
    )


def test_a_job_no_block_holds_is_unplaced_and_later_jobs_still_go():
    """Two idle nodes per block: 5 nodes ask for a pair of blocks, which holds 4: pending."""
    idle = names((1, 2), (5, 6), (9, 10), (13, 14))
    result = solve(B16, idle, [5, 2, 1])
    assert result.info["unplaced"] == [0]
    assert set(result.info["placed"]) == {1, 2}
    assert result.objective != result.objective  # NaN: no solution
    assert "job 0" in result.info["reason"]


def test_a_pending_segment_leaves_the_whole_job_pending():
    """Two segments fit (b1, then b0), the third finds no block with 2 idle nodes left: the job
    takes nothing, and the next one takes the last of the equally full blocks."""
    idle = names((1, 3), (5, 7), "n9")
    result = solve(B16, idle, [{"nodes": 6, "segment": 2}, 1])
    assert result.info["unplaced"] == [0]
    assert result.info["placed"] == {1: tuple(B16.node_indices(["n9"]))}


def test_exclusive_topo_takes_only_quiet_blocks_and_holds_them():
    """b0 has a busy node, b1 two: the exclusive job goes to a wholly idle block (b3, the last),
    the next job fits best in b1, the last one cannot use b3's rest."""
    idle = names((2, 4), "n5", "n6", (9, 16))
    result = solve(B16, idle, [{"nodes": 2, "exclusive": True}, 2, 4])
    assert result.node_names() == (("n13", "n14"), ("n5", "n6"), tuple(names((9, 12))))
    plain = solve(B16, idle, [2, 2, 4])
    assert plain.node_names()[0] == ("n5", "n6")  # best fit without it


def test_slurm_block_keeps_slurm_rule_and_refuses_a_switch_tree():
    window = Window(
        B16,
        range(16),
        [{"nodes": 6, "slurm_rule": True}, {"nodes": 4, "segment": 2, "slurm_rule": True}],
    )
    check(tjap.solve(window, "slurm-block"), window)
    fat = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)  # no topology/block
    with pytest.raises(InvalidInputError, match="topology/block rule") as info:
        tjap.solve(Window(fat, range(16), [3, 2, 4]), "slurm-block")
    assert "\n" not in str(info.value)


# -- Kueue ----------------------------------------------------------------------------------------
# racks: R0 h00-h02, R1 h03-h05 (block B0); R2 h06-h08, R3 h09-h11 (block B1)
IDLE = ["h00", "h01", "h03", "h04", "h06", "h07", "h08", "h09"]  # racks 2, 2, 3, 1 idle


@pytest.mark.parametrize("method", KUEUE)
def test_required_level_fails_where_preferred_climbs(method):
    """No rack holds 4 idle nodes: required fails; preferred climbs to the blocks, both hold 4,
    and of equal ones the first in label order (B0) is taken, across its two racks."""
    levels = ["rack", "block"]
    required = solve(RACKS, IDLE, [{"nodes": 4, "within": "rack"}], method, levels=levels)
    assert required.info["unplaced"] == [0] and "required" in required.info["reason"]
    preferred = solve(RACKS, IDLE, [{"nodes": 4, "prefer": "rack"}], method, levels=levels)
    assert preferred.node_names()[0] == ("h00", "h01", "h03", "h04")
    block = solve(RACKS, IDLE, [{"nodes": 4, "within": "block"}], method, levels=levels)
    assert block.assignment == preferred.assignment


@pytest.mark.parametrize("method", KUEUE)
@pytest.mark.parametrize("size, rack", [(2, "R0"), (3, "R2"), (1, "R3")])
def test_kueue_best_fit_picks_the_fullest_rack_that_holds_the_job(method, size, rack):
    result = solve(RACKS, IDLE, [{"nodes": size, "within": 1}], method)
    assert {RACKS.switch_names[RACKS.node_leaf[v]].split("/")[1] for v in result.assignment[0]} == {
        rack
    }


@pytest.mark.parametrize("method", KUEUE)
def test_unconstrained_jobs_take_the_first_idle_hosts(method):
    """Every node holds one pod: both profiles take idle hosts in label order."""
    result = solve(RACKS, IDLE, [3, 2], method)
    assert result.node_names() == (("h00", "h01", "h03"), ("h04", "h06"))


def test_least_free_spreads_a_slice_only_request_where_best_fit_packs():
    """Slices of one pod per rack, no level asked: B0 (R0 1 idle, R1 2 idle) is the only block
    that holds them; BestFit fills R1, LeastFreeCapacity starts from R0."""
    idle = ["h00", "h03", "h04"]
    job = [{"nodes": 2, "segment": 1, "segment_level": "rack"}]
    best = solve(RACKS, idle, job, "kueue-bestfit", levels=["rack", "block"])
    least = solve(RACKS, idle, job, "kueue-leastfree", levels=["rack", "block"])
    assert best.node_names()[0] == ("h03", "h04")
    assert least.node_names()[0] == ("h00", "h03")


@pytest.mark.parametrize("method", KUEUE)
def test_kueue_slices_stay_whole(method):
    """Slices of 3 within a rack, 6 pods within a block: only B1's racks hold whole slices."""
    idle = ["h00", "h01", "h03", "h04", "h05", "h06", "h07", "h08", "h09", "h10", "h11"]
    result = solve(
        RACKS, idle, [{"nodes": 6, "segment": 3, "segment_level": 1, "within": 2}], method
    )
    assert result.node_names()[0] == ("h06", "h07", "h08", "h09", "h10", "h11")
    spread = solve(RACKS, idle, [{"nodes": 6, "segment": 3, "segment_level": 1}], method)
    racks = np.bincount(RACKS.node_leaf[list(spread.assignment[0])])
    assert set(racks[racks > 0].tolist()) == {3}


# -- refusals, registry, determinism --------------------------------------------------------------
@pytest.mark.parametrize(
    "method, job, kwargs, match",
    [
        ("slurm-block", {"nodes": 2, "within": 1}, {}, "'within'"),
        ("slurm-block", {"nodes": 2, "prefer": 1}, {}, "'prefer'"),
        ("slurm-block", 2, {"fragmentation": 10}, "fragmentation"),
        ("slurm-block", {"nodes": 2, "exclusive": 2}, {}, "level 1 only"),
        ("slurm-block", {"nodes": 6, "segment": 6}, {}, "segment_level >= 2"),
        ("kueue-bestfit", {"nodes": 2, "exclusive": True}, {}, "'exclusive'"),
        ("kueue-leastfree", {"nodes": 2, "slurm_rule": True}, {}, "'slurm_rule'"),
        ("kueue-bestfit", 2, {"fragmentation": 10}, "fragmentation"),
        ("kueue-bestfit", {"nodes": 2, "within": 2, "prefer": 1}, {}, "not both"),
        (
            "kueue-bestfit",
            {"nodes": 4, "segment": 2, "segment_level": 2, "within": 1},
            {},
            "segment_level <= 1",
        ),
    ],
)
def test_what_the_anchor_cannot_express_is_refused_in_one_line(method, job, kwargs, match):
    window = Window(B16, range(16), [job], **kwargs)
    with pytest.raises(InvalidInputError, match=match) as info:
        tjap.solve(window, method)
    assert "\n" not in str(info.value)


def test_kueue_refuses_the_implicit_root_as_a_level():
    window = Window(RACKS, range(12), [{"nodes": 2, "within": 3}])
    with pytest.raises(InvalidInputError, match="not a Kueue level") as info:
        tjap.solve(window, "kueue-bestfit")
    assert "\n" not in str(info.value)


def test_the_anchors_are_registered_with_constraints():
    for name in ANCHORS:
        entry = get("tree", name)
        assert entry.constraints and entry.model == "free" and entry.description
        assert name in tjap.methods()


def random_window(rng, tree):
    idle = sorted(rng.sample(range(tree.num_nodes), rng.randint(4, tree.num_nodes)))
    top = int(switch_levels(tree)[0])
    jobs = random_jobs(rng, idle, top, max_jobs=4, max_nodes=8, blocks=tree.is_block)
    return Window(tree, idle, jobs)


TREES = [
    BLOCKS,
    TAIL,
    LABELS,
    RACKS,
    B16,
    blocks(8, 4, "4,16"),
    FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2),
]


@pytest.mark.parametrize("method", ANCHORS)
def test_random_windows_keep_every_constraint(method):
    rng = random.Random(method)
    answered = placed = 0
    trees = [t for t in TREES if t.is_block] if method == "slurm-block" else TREES
    for _ in range(400):
        window = random_window(rng, rng.choice(trees))
        try:
            result = tjap.solve(window, method)
        except InvalidInputError as exc:
            assert "\n" not in str(exc)
            continue
        answered += 1
        if result.has_solution:
            placed += 1
            check(result, window)
        else:
            check_partial(result, window)
    assert answered >= 60 and placed >= 30


@pytest.mark.parametrize("method", ANCHORS)
def test_same_answer_for_every_seed_and_a_round_trip(method):
    rng = random.Random(7)
    compared = 0
    for _ in range(300):
        window = random_window(rng, rng.choice([B16, RACKS, BLOCKS]))
        try:
            a = tjap.solve(window, method, seed=0)
        except InvalidInputError:
            continue
        b = tjap.solve(Window.from_json(window.to_json()), method, seed=5)
        assert a.assignment == b.assignment and a.status == b.status and b.seed == 5
        assert a.info.get("unplaced") == b.info.get("unplaced")
        assert a.info.get("placed") == b.info.get("placed")
        compared += 1
        if compared == 20:
            break
    assert compared == 20
