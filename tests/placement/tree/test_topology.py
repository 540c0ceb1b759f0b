"""Topology and hostlists: Slurm topology.conf parsing, depth-first node order, one-line errors
for every bad input, round trips (dict, Slurm text, networkx), and the fat-tree layouts as trees."""

import json
import pickle

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tjap.core.errors import InvalidInputError
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.hostlist import compress_hostlist, expand_hostlist
from tjap.placement.tree.topology import IMPLICIT_ROOT, Topology

# a two-level topology.conf: four leaf switches of four nodes under one spine
SLURM_EXAMPLE = """\
SwitchName=leaf1 Nodes=n[01-04]
SwitchName=leaf2 Nodes=n[05-08]
SwitchName=leaf3 Nodes=n[09-12]
SwitchName=leaf4 Nodes=n[13-16]
SwitchName=spine Switches=leaf[1-4]
"""

THREE_LEVELS = """\
# a three-level tree with uneven leaves
SwitchName=core Switches=agg[1-2]        # the top
SwitchName=agg1 Switches=tor1,tor2 LinkSpeed=100
SwitchName=agg2 Switches=tor3
SwitchName=tor1 Nodes=c101-[001-003]
SwitchName=tor2 Nodes=gpu[01-02]
SwitchName=tor3 Nodes=n[1-3,7] linkspeed=25
"""

# four levels, leaves at depths 2, 3 and 4, and two top-level switches (an implicit root)
FOUR_LEVELS = """\
switchname=top1 switches=mid1,leafA
SwitchName=mid1 Switches=low1,leafB
SwitchName=low1 \\
    Switches=leafC
SwitchName=leafC Nodes=r[1-2]n[1-2]
SwitchName=leafB Nodes=b1
SwitchName=leafA Nodes=a[1-3]
SwitchName=top2 Switches=leafD
SwitchName=leafD Nodes=d[9-10]
"""


def one_line_error(call, *fragments):
    with pytest.raises(InvalidInputError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


# ------------------------------------------------------------------ hostlists
@pytest.mark.parametrize(
    "text, names",
    [
        ("n1", ["n1"]),
        ("c101-[001-003]", ["c101-001", "c101-002", "c101-003"]),
        ("gpu[08-10]", ["gpu08", "gpu09", "gpu10"]),
        ("gpu[8-10]", ["gpu8", "gpu9", "gpu10"]),
        ("n[1-3,7]", ["n1", "n2", "n3", "n7"]),
        ("r[1-2]n[1-3]", ["r1n1", "r1n2", "r1n3", "r2n1", "r2n2", "r2n3"]),
        ("a,b[1-2]c,login", ["a", "b1c", "b2c", "login"]),
        ("x[007]", ["x007"]),
        (" n[1-2] ", ["n1", "n2"]),
        ("[0-2]", ["0", "1", "2"]),
    ],
)
def test_expand_hostlist(text, names):
    assert expand_hostlist(text) == names


def test_expand_the_issue_example():
    names = expand_hostlist("c101-[001-016],gpu[01-09],n[1-3,7]")
    assert len(names) == 16 + 9 + 4
    assert names[0] == "c101-001" and names[15] == "c101-016" and names[16] == "gpu01"
    assert names[-4:] == ["n1", "n2", "n3", "n7"]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("n[1-3", "unclosed"),
        ("n[5-3]", "reversed"),
        ("n[]", "empty range"),
        ("n[a-c]", "not a number"),
        ("n[1-x]", "not a number"),
        ("a,,b", "empty name"),
        ("a,", "empty name"),
        ("", "empty hostlist"),
        ("n]1", "without '['"),
        ("n[1[2]]", "nested"),
        ("n[1,]", "empty item"),
        ("a b", "whitespace"),
    ],
)
def test_bad_hostlists_are_one_line_errors(text, fragment):
    one_line_error(lambda: expand_hostlist(text), repr(text), fragment)


@pytest.mark.parametrize(
    "names, text",
    [
        (["n01", "n02", "n03", "n07"], "n[01-03,07]"),
        (["gpu9", "gpu10"], "gpu[9-10]"),
        (["r1n1", "r1n2", "login"], "r1n[1-2],login"),
        (["n3", "n1", "n2"], "n[3,1-2]"),
        (["a"], "a"),
    ],
)
def test_compress_hostlist(names, text):
    assert compress_hostlist(names) == text
    assert expand_hostlist(text) == names


@pytest.mark.parametrize("names", [[], ["a b"], ["n[1]"], ["a,b"], [""], "n1"])
def test_compress_refuses_what_a_hostlist_cannot_hold(names):
    one_line_error(lambda: compress_hostlist(names))


NAME = st.text(alphabet="ab-_.0123456789", min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(NAME, min_size=1, max_size=30))
def test_compress_then_expand_is_the_identity(names):
    assert expand_hostlist(compress_hostlist(names)) == names


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 120), min_size=1, max_size=40),
    st.sampled_from(["n", "r2c", ""]),
    st.integers(1, 4),
)
def test_compress_then_expand_numbered_names(numbers, prefix, width):
    names = [f"{prefix}{str(n).zfill(width)}" for n in numbers]
    assert expand_hostlist(compress_hostlist(names)) == names


# ------------------------------------------------------------------ topology.conf
def test_the_multinode_note_example():
    tree = Topology.from_slurm(SLURM_EXAMPLE)
    assert tree.switch_names == ("spine", "leaf1", "leaf2", "leaf3", "leaf4")
    assert tree.switch_parent.tolist() == [-1, 0, 0, 0, 0]
    assert tree.node_names == tuple(f"n{i:02d}" for i in range(1, 17))
    assert tree.node_leaf.tolist() == [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4
    assert tree.num_nodes == 16 and tree.num_levels == 2 and tree.num_switches == 5
    assert tree.leaf_sizes.tolist() == [4, 4, 4, 4]
    assert tree.leaf_switches.tolist() == [1, 2, 3, 4]
    assert tree.ancestors("n06") == (2, 0) == tree.ancestors(5)


def test_three_levels_comments_and_unknown_keys():
    tree = Topology.from_slurm(THREE_LEVELS)
    assert tree.switch_names == ("core", "agg1", "tor1", "tor2", "agg2", "tor3")
    assert tree.switch_parent.tolist() == [-1, 0, 1, 1, 0, 4]
    assert tree.node_names == (
        "c101-001",
        "c101-002",
        "c101-003",
        "gpu01",
        "gpu02",
        "n1",
        "n2",
        "n3",
        "n7",
    )
    assert tree.leaf_sizes.tolist() == [3, 2, 4]
    assert tree.num_levels == 3
    assert tree.ancestors("gpu02") == (3, 1, 0)
    assert tree.switch_depth.tolist() == [0, 1, 2, 2, 1, 2]


def test_four_levels_uneven_with_an_implicit_root_and_a_continued_line():
    tree = Topology.from_slurm(FOUR_LEVELS)
    assert tree.switch_names == (
        IMPLICIT_ROOT,
        "top1",
        "mid1",
        "low1",
        "leafC",
        "leafB",
        "leafA",
        "top2",
        "leafD",
    )
    assert tree.switch_parent.tolist() == [-1, 0, 1, 2, 3, 2, 1, 0, 7]
    assert tree.node_names == ("r1n1", "r1n2", "r2n1", "r2n2", "b1", "a1", "a2", "a3", "d9", "d10")
    assert tree.num_levels == 5  # leafC, low1, mid1, top1, (root)
    assert len(tree.ancestors("r2n1")) == 5
    assert tree.ancestors("d10") == (8, 7, 0)
    assert tree.ancestors("a2") == (6, 1, 0)
    assert tree.leaf_sizes.tolist() == [4, 1, 3, 2]


def test_depth_first_order_follows_the_switches_line_not_the_file():
    text = "SwitchName=z Nodes=z[1-2]\nSwitchName=a Nodes=a1\nSwitchName=top Switches=z,a\n"
    tree = Topology.from_slurm(text)
    assert tree.node_names == ("z1", "z2", "a1")
    flipped = Topology.from_slurm(text.replace("Switches=z,a", "Switches=a,z"))
    assert flipped.node_names == ("a1", "z1", "z2")


def test_top_level_switches_keep_file_order():
    tree = Topology.from_slurm("SwitchName=b Nodes=b1\nSwitchName=a Nodes=a1\n")
    assert tree.switch_names == (IMPLICIT_ROOT, "b", "a")
    assert tree.node_names == ("b1", "a1")
    assert tree.num_levels == 2


def test_one_leaf_switch_is_a_one_level_tree():
    tree = Topology.from_slurm("SwitchName=only Nodes=n[1-3]")
    assert tree.num_levels == 1 and tree.switch_parent.tolist() == [-1]
    assert tree.ancestors("n2") == (0,)


def test_from_slurm_reads_a_path(tmp_path):
    path = tmp_path / "topology.conf"
    path.write_text(SLURM_EXAMPLE)
    assert Topology.from_slurm(path) == Topology.from_slurm(str(path))
    assert Topology.from_slurm(path) == Topology.from_slurm(SLURM_EXAMPLE)
    one_line_error(lambda: Topology.from_slurm(tmp_path / "missing.conf"), "missing.conf")


@pytest.mark.parametrize(
    "text, fragments",
    [
        (
            "SwitchName=a Nodes=n1\nSwitchName=b Nodes=n2\nSwitchName=s1 Switches=a,b\n"
            "SwitchName=s2 Switches=b\n",
            ["line 4", "'b'", "one parent"],
        ),
        ("SwitchName=a Switches=b\nSwitchName=b Switches=a\n", ["line 1", "cycle"]),
        ("SwitchName=a Switches=a\n", ["line 1", "lists itself"]),
        (
            "SwitchName=top Nodes=n1\nSwitchName=a Switches=b\nSwitchName=b Switches=a\n",
            ["line 2", "cycle"],
        ),
        ("SwitchName=s Switches=leaf9\n", ["line 1", "unknown switch 'leaf9'"]),
        ("SwitchName=a Nodes=n[1-3]\nSwitchName=b Nodes=n[3-4]\n", ["line 2", "'n3'", "line 1"]),
        ("SwitchName=a Nodes=n[1-3],n2\n", ["line 1", "'n2'"]),
        ("SwitchName=l Nodes=n1\nSwitchName=a Nodes=n2 Switches=l\n", ["line 2", "both"]),
        ("SwitchName=a LinkSpeed=10\n", ["line 1", "neither"]),
        ("SwitchName=a Nodes=n1\n\nSwitchName=a Nodes=n2\n", ["line 3", "'a'", "line 1"]),
        ("SwitchName=a Nodes=n[5-3]\n", ["line 1", "reversed"]),
        ("# comment\nSwitchName=a Nodes=n[1-3\n", ["line 2", "unclosed"]),
        ("SwitchName=a Nodes=\n", ["line 1", "empty"]),
        ("# only a comment\n\n", ["no switch"]),
        ("Nodes=n1\n", ["line 1", "SwitchName"]),
        ("SwitchName=a Nodes=n1 junk\n", ["line 1", "'junk'"]),
        ("SwitchName=a Nodes=n1 nodes=n2\n", ["line 1", "twice"]),
        ("SwitchName=l Nodes=n1\nSwitchName=s Switches=l,l\n", ["line 2", "twice"]),
        (f"SwitchName={IMPLICIT_ROOT} Nodes=n1\nSwitchName=b Nodes=n2\n", ["line 1", "reserved"]),
    ],
)
def test_bad_topology_conf_is_one_line_error(text, fragments):
    one_line_error(lambda: Topology.from_slurm(text), *fragments)


def test_a_node_under_two_leaves_names_the_node():
    text = "SwitchName=l1 Nodes=x,y\nSwitchName=l2 Nodes=z,x\nSwitchName=t Switches=l1,l2\n"
    one_line_error(lambda: Topology.from_slurm(text), "node 'x'", "'l1'", "line 2")


# ------------------------------------------------------------------ names, indices, immutability
def test_node_index_takes_names_and_indices():
    tree = Topology.from_slurm(THREE_LEVELS)
    assert tree.node_index("gpu01") == 3
    assert tree.node_index(3) == 3 and tree.node_index(np.int64(8)) == 8
    assert tree.node_indices(["n7", 0, "gpu02"]).tolist() == [8, 0, 4]
    one_line_error(lambda: tree.node_index("gpu99"), "unknown node 'gpu99'")
    one_line_error(lambda: tree.node_index(9), "out of range")
    one_line_error(lambda: tree.node_index(True))
    one_line_error(lambda: tree.node_index(-1), "out of range")
    one_line_error(lambda: tree.switch_index("nope"), "unknown switch 'nope'")
    assert tree.switch_index("tor2") == 3


def test_the_tree_is_immutable_and_pickles():
    tree = Topology.from_slurm(THREE_LEVELS)
    with pytest.raises(AttributeError):
        tree.num_levels = 7
    for array in (tree.switch_parent, tree.node_leaf, tree.leaf_sizes, tree.switch_depth):
        with pytest.raises(ValueError):
            array[0] = 5
    assert pickle.loads(pickle.dumps(tree)) == tree
    assert hash(pickle.loads(pickle.dumps(tree))) == hash(tree)


@pytest.mark.parametrize(
    "args, fragment",
    [
        ((["a", "b"], [-1, -1], ["n1"], [1]), "one root"),
        ((["a", "b", "c"], [-1, 0, 0], ["n1", "n2"], [2, 1]), "depth-first"),
        ((["a", "b", "c", "d"], [-1, 0, 0, 1], ["n1", "n2"], [2, 3]), "depth first"),
        ((["a", "b"], [-1, 0], ["n1", "n1"], [1, 1]), "'n1' appears twice"),
        ((["a", "a"], [-1, 0], ["n1"], [1]), "'a' appears twice"),
        ((["a", "b"], [-1, 0], ["n1"], [0]), "both"),
        ((["a", "b", "c"], [-1, 0, 0], ["n1"], [1]), "neither"),
        ((["a", "b"], [-1, 0], ["n 1"], [1]), "not allowed"),
        ((["a", "b"], [-1, 0], ["n1"], [1, 1]), "one per node"),
        ((["a", "b"], [0, -1], ["n1"], [1]), "must be the root"),
    ],
)
def test_the_constructor_checks_the_canonical_arrays(args, fragment):
    one_line_error(lambda: Topology(*args), fragment)


# ------------------------------------------------------------------ round trips
TREES = [SLURM_EXAMPLE, THREE_LEVELS, FOUR_LEVELS, "SwitchName=only Nodes=n[1-3]"]


@pytest.mark.parametrize("text", TREES)
def test_slurm_text_round_trip(text):
    tree = Topology.from_slurm(text)
    written = tree.to_slurm()
    assert Topology.from_slurm(written) == tree
    assert IMPLICIT_ROOT not in written


@pytest.mark.parametrize("text", TREES)
def test_dict_round_trip_through_json(text):
    tree = Topology.from_slurm(text)
    data = json.loads(json.dumps(tree.to_dict()))
    assert Topology.from_dict(data) == tree
    assert data["switches"][0]["name"] == tree.switch_names[0]


def test_from_dict_takes_lists_and_any_switch_order():
    tree = Topology.from_dict(
        {
            "switches": [
                {"name": "t1", "nodes": ["x", "y"]},
                {"name": "spine", "switches": ["t2", "t1"]},
                {"name": "t2", "nodes": "n[1-2]"},
            ]
        }
    )
    assert tree.switch_names == ("spine", "t2", "t1")
    assert tree.node_names == ("n1", "n2", "x", "y")


@pytest.mark.parametrize(
    "data, fragments",
    [
        ([], ["object"]),
        ({"switches": [], "extra": 1}, ["switches"]),
        ({"switches": []}, ["no switch"]),
        ({"switches": "x"}, ["list"]),
        ({"switches": [{"nodes": "n1"}]}, ["switches[0]", "name"]),
        ({"switches": [{"name": "a", "nodes": "n1", "speed": 3}]}, ["switches[0]", "speed"]),
        ({"switches": [{"name": "a", "nodes": 5}]}, ["switches[0]", "nodes"]),
        ({"switches": [{"name": "a", "nodes": []}]}, ["switches[0]", "empty"]),
        ({"switches": [{"name": "a", "nodes": "n[2-1]"}]}, ["switches[0]", "reversed"]),
        (
            {"switches": [{"name": "a", "nodes": "n1"}, {"name": "b", "switches": "c"}]},
            ["switches[1]", "unknown switch 'c'"],
        ),
    ],
)
def test_bad_dicts_are_one_line_errors(data, fragments):
    one_line_error(lambda: Topology.from_dict(data), *fragments)


@pytest.mark.parametrize("text", TREES)
def test_networkx_round_trip(text):
    tree = Topology.from_slurm(text)
    graph = tree.to_networkx()
    assert nx.is_tree(graph)
    assert graph.nodes["n1" if "n1" in graph else tree.node_names[0]]["kind"] == "node"
    assert Topology.from_networkx(graph, root=tree.switch_names[0]) == tree


def test_from_networkx_directed_and_integer_vertices():
    graph = nx.DiGraph()
    graph.add_edges_from([("root", "a"), ("root", "b"), ("a", 1), ("a", 2), ("b", 3)])
    tree = Topology.from_networkx(graph, root="root")
    assert tree.switch_names == ("root", "a", "b")
    assert tree.node_names == ("1", "2", "3")
    upward = Topology.from_networkx(nx.DiGraph([(v, u) for u, v in graph.edges]), root="root")
    assert sorted(upward.switch_names) == sorted(tree.switch_names)
    assert {
        n: upward.switch_names[upward.node_leaf[upward.node_index(n)]] for n in upward.node_names
    } == {"1": "a", "2": "a", "3": "b"}


def test_from_networkx_refuses_what_is_not_a_switch_tree():
    cycle = nx.Graph([("r", "a"), ("a", "b"), ("b", "r"), ("a", "n1")])
    one_line_error(lambda: Topology.from_networkx(cycle, root="r"), "not a tree")
    apart = nx.Graph([("r", "a"), ("a", "n1"), ("x", "y"), ("y", "z")])
    apart.remove_edge("x", "y")
    apart.add_edge("a", "n2")
    one_line_error(lambda: Topology.from_networkx(apart, root="r"), "not a tree")
    one_line_error(lambda: Topology.from_networkx(nx.path_graph(3), root=9), "root 9")
    mixed = nx.Graph([("r", "a"), ("r", "n9"), ("a", "n1")])
    one_line_error(lambda: Topology.from_networkx(mixed, root="r"), "switch 'r'", "both")
    parallel = nx.MultiGraph([("r", "n1"), ("r", "n1")])
    one_line_error(lambda: Topology.from_networkx(parallel, root="r"), "not a tree")


def test_to_networkx_refuses_a_node_named_like_a_switch():
    tree = Topology.from_slurm("SwitchName=x Nodes=x,y")
    one_line_error(lambda: tree.to_networkx(), "'x'")


# ------------------------------------------------------------------ the paper's fat-trees
FAT_TREES = [
    FatTree.from_layout("paper"),
    FatTree.from_layout("published"),
    FatTree(k=4),
    FatTree(k=4, num_nodes=11),
    FatTree(k=20, num_nodes=1000),
    FatTree(num_nodes=37, nodes_per_switch=5, switches_per_pod=3),
    FatTree(num_nodes=1, nodes_per_switch=4, switches_per_pod=2),
    FatTree(num_nodes=6, nodes_per_switch=3, switches_per_pod=2),
]


@pytest.mark.parametrize("fat", FAT_TREES, ids=repr)
def test_fat_tree_is_a_topology_with_its_node_order_switches_and_pods(fat):
    assert isinstance(fat, Topology)
    tree = fat.as_tree()
    assert type(tree) is Topology and tree.switch_names == fat.switch_names
    assert tree.num_nodes == fat.num_nodes
    assert tree.num_levels == 3
    assert tree.node_names == tuple(str(i) for i in range(fat.num_nodes))
    leaf_names = [tree.switch_names[s] for s in tree.node_leaf]
    assert leaf_names == [f"s{s}" for s in fat.switch_of]
    pods = tree.switch_parent[tree.node_leaf]
    assert [tree.switch_names[p] for p in pods] == [f"pod{p}" for p in fat.pod_of]
    assert (tree.switch_parent[pods] == 0).all() and tree.switch_names[0] == "core"
    assert len(tree.leaf_switches) == fat.num_edge_switches
    assert int((tree.switch_parent == 0).sum()) == fat.num_pods
    # the hop level of every pair agrees: the lowest common switch's level minus one
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, fat.num_nodes, size=(200, 2))
    for a, b in pairs:
        common = set(tree.ancestors(int(a))) & set(tree.ancestors(int(b)))
        level = min(tree.ancestors(int(a)).index(s) for s in common)
        assert level == fat.hop_level(a, b)
    assert Topology.from_slurm(tree.to_slurm()) == tree


def test_fat_tree_is_immutable_pickles_and_compares_by_layout():
    import pickle

    fat = FatTree(k=4, num_nodes=11)
    assert pickle.loads(pickle.dumps(fat)) == fat
    assert pickle.loads(pickle.dumps(FatTree.from_layout("published"))) == FatTree.from_layout(
        "published"
    )
    assert fat != fat.as_tree() and fat.as_tree() == FatTree(k=4, num_nodes=11).as_tree()
    with pytest.raises(AttributeError, match="immutable"):
        fat.k = 6
    one_line_error(lambda: FatTree(k=3), "k must be even")
