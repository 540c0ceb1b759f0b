"""Clusters drawn as levels, read into tjap's switch tree: Slurm's topology.yaml
(tjap.placement.tree.slurm_yaml), Kubernetes node labels at Kueue's levels and Volcano HyperNodes
(tjap.placement.tree.levels), and ``tjap topology show`` on each."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tjap.cli import main
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.levels import domain_name
from tjap.placement.tree.slurm_yaml import slurm_yaml_default, slurm_yaml_topologies
from tjap.placement.tree.topology import IMPLICIT_ROOT, Topology

SLURM_YAML = """\
# the example of topology.yaml(5), and a deeper tree
- topology: topo1
  cluster_default: True
  tree:
    switches:
    - switch: sw_root
      nodes: node[01-04]
- topology: topo2
  cluster_default: False
  block:
    block_sizes:
      - 4
      - 16
    blocks:
    - block: b1
      nodes: node[01-04]
    - block: b2
      nodes: node[05-08]
    - block: b3
      nodes: node[09-12]
    - block: b4
      nodes: node[13-16]
- topology: topo3
  cluster_default: False
  flat: True
- topology: fabric
  tree:
    switches:
    - switch: spine
      children: [agg1, leaf3]
    - switch: agg1
      children: leaf[1-2]
    - switch: leaf1
      nodes: c[1-3]
    - switch: leaf2
      nodes: [g2, g1]
    - switch: leaf3
      nodes: x7
"""

NODES = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "cloud.provider.com/topology-block": block,
                    "cloud.provider.com/topology-rack": rack,
                    "kubernetes.io/hostname": name,
                },
            },
        }
        for name, block, rack in (
            ("n1", "b1", "r1"),
            ("n2", "b1", "r1"),
            ("n3", "b1", "r2"),
            ("n4", "b2", "r1"),
            ("n5", "b1", "r2"),
        )
    ],
}
KEYS = [
    "cloud.provider.com/topology-block",
    "cloud.provider.com/topology-rack",
    "kubernetes.io/hostname",
]
KUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata:
  name: default
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-block
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
"""

HYPERNODES = """\
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: s0
spec:
  tier: 1
  members:
  - type: Node
    selector:
      exactMatch:
        name: node-0
  - type: Node
    selector:
      regexMatch:
        pattern: node-[01]$
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: s1
spec:
  tier: 1
  members:
  - type: Node
    selector:
      labelMatch:
        matchLabels:
          rack: r1
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: s2
spec:
  tier: 1
  members:
  - type: Node
    selector:
      exactMatch:
        name: node-4
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: s4
spec:
  tier: 2
  members:
  - type: HyperNode
    selector:
      exactMatch:
        name: s0
  - type: HyperNode
    selector:
      exactMatch:
        name: s1
"""
CLUSTER = [
    ("node-0", {}),
    ("node-1", {}),
    ("node-2", {"rack": "r1"}),
    ("node-3", {"rack": "r1"}),
    ("node-4", {}),
    ("node-10", {}),
]


def shape(tree: Topology):
    """(switch names, each switch's parent's name, node order): the whole tree."""
    return (
        tree.switch_names,
        tuple(tree.switch_names[p] if p >= 0 else None for p in tree.switch_parent),
        tree.node_names,
    )


def hypernode(name, tier, members, kind="Node"):
    return {
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {
            "tier": tier,
            "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members],
        },
    }


# ---------------------------------------------------------------------------- topology.yaml
def test_topology_yaml_lists_names_kinds_and_the_default():
    assert slurm_yaml_topologies(SLURM_YAML) == {
        "topo1": "tree",
        "topo2": "block",
        "topo3": "flat",
        "fabric": "tree",
    }
    assert slurm_yaml_default(SLURM_YAML) == "topo1"
    no_default = SLURM_YAML.replace("cluster_default: True", "cluster_default: False")
    assert slurm_yaml_default(no_default) == "topo1"  # else the first
    assert (
        slurm_yaml_default(
            no_default.replace("- topology: fabric", "- topology: fabric\n  cluster_default: true")
        )
        == "fabric"
    )


def test_topology_yaml_tree():
    assert Topology.from_slurm_yaml(SLURM_YAML) == Topology.from_slurm(
        "SwitchName=sw_root Nodes=node[01-04]"
    )
    tree = Topology.from_slurm_yaml(SLURM_YAML, "fabric")
    assert shape(tree) == (
        ("spine", "agg1", "leaf1", "leaf2", "leaf3"),
        (None, "spine", "agg1", "agg1", "spine"),
        ("c1", "c2", "c3", "g2", "g1", "x7"),
    )


def test_a_block_topology_is_the_same_tree_as_its_topology_conf():
    conf = (
        "".join(f"BlockName=b{i} Nodes=node[{4 * i - 3:02d}-{4 * i:02d}]\n" for i in range(1, 5))
        + "BlockSizes=4,16\n"
    )
    tree = Topology.from_slurm_yaml(SLURM_YAML, "topo2")
    assert tree == Topology.from_slurm(conf)
    assert shape(tree)[:2] == (
        ("b1..b4", "b1", "b2", "b3", "b4"),
        (None, "b1..b4", "b1..b4", "b1..b4", "b1..b4"),
    )


def test_a_flat_topology_has_no_structure_unless_nodes_are_given(tmp_path):
    with pytest.raises(InvalidInputError, match="flat.*no structure to place on"):
        Topology.from_slurm_yaml(SLURM_YAML, "topo3")
    tree = Topology.from_slurm_yaml(SLURM_YAML, "topo3", nodes="n[1-3]")
    assert shape(tree) == (("topo3",), (None,), ("n1", "n2", "n3"))
    path = tmp_path / "topology.yaml"
    path.write_text(SLURM_YAML)
    assert Topology.from_file(path) == Topology.from_slurm_yaml(path)  # the default one


@pytest.mark.parametrize(
    "text, fragment",
    [
        (SLURM_YAML, "no topology 'nope'; its topologies are topo1 (tree), topo2 (block)"),
        (
            "- topology: a\n  tree:\n    switches:\n    - switch: s\n      nodes: n1\n"
            "- topology: a\n  flat: true\n",
            "topology 'a' is defined twice",
        ),
        (
            "- topology: a\n  tree:\n    switches:\n    - switch: s\n      nodes: n1\n  flat: true\n",
            "defines tree and flat; give exactly one",
        ),
        ("- topology: a\n  cluster_default: yes please\n  flat: true\n", "cluster_default"),
        (
            "- topology: a\n  tree:\n    switches:\n    - switch: s\n      nodes: n1\n      speed: 1\n",
            "switches[0] (switch 's'): unknown key 'speed'",
        ),
        (
            "- topology: a\n  tree:\n    switches:\n    - switch: s\n      nodes: n1\n"
            "      children: t\n",
            "exactly one of nodes: (a leaf switch) or children:",
        ),
        (
            "- topology: a\n  tree:\n    switches:\n    - switch: s\n      children: t\n",
            "unknown switch 't'",
        ),
        (
            "- topology: a\n  tree:\n    switches:\n    - switch: s\n      nodes: n[3-1]\n",
            "nodes: hostlist 'n[3-1]'",
        ),
        (
            "- topology: a\n  tree:\n    switches:\n    - switch: 7\n      nodes: n1\n",
            "switch: 7 is not a name",
        ),
        (
            "- topology: a\n  block:\n    block_sizes: [4, 6]\n    blocks:\n    - block: b\n"
            "      nodes: n[1-4]\n",
            "6 is not the base block size 4 times a power of two",
        ),
        ("- topology: a\n  block:\n    blocks: []\n", "'blocks:' must be a non-empty list"),
        ("topology: a\nflat: true\n", "must be one YAML list of topologies"),
        ("- topology: a\n  tree: [\n", "not valid YAML (line"),
        ("kind: HyperNode\nmetadata: {name: s}\n", "Kubernetes manifest"),
    ],
)
def test_topology_yaml_errors_are_one_line(text, fragment):
    name = "nope" if text is SLURM_YAML else None
    with pytest.raises(InvalidInputError) as error:
        Topology.from_slurm_yaml(text, name)
    assert fragment in str(error.value) and len(str(error.value).splitlines()) == 1


# ---------------------------------------------------------------------------- node labels
def test_node_labels_draw_the_domains():
    tree = Topology.from_node_labels(NODES, KEYS)
    assert shape(tree) == (
        ("(root)", "b1", "b1/r1", "b1/r2", "b2", "b2/r1"),
        (None, "(root)", "b1", "b1", "(root)", "b2"),
        ("n1", "n2", "n3", "n5", "n4"),
    )
    assert Topology.from_node_labels(NODES, KUEUE) == tree  # a Kueue Topology's text
    pairs = [(n["metadata"]["name"], n["metadata"]["labels"]) for n in NODES["items"]]
    assert Topology.from_node_labels(pairs, KEYS[:2]) == tree  # no hostname level


def test_node_labels_from_files(tmp_path):
    (tmp_path / "nodes.json").write_text(json.dumps(NODES))
    (tmp_path / "kueue.yaml").write_text(KUEUE)
    assert Topology.from_node_labels(
        tmp_path / "nodes.json", tmp_path / "kueue.yaml"
    ) == Topology.from_node_labels(NODES, KEYS)


def test_domain_names_are_escaped_and_distinct():
    assert domain_name(["b1", "r1"]) == "b1/r1"
    assert domain_name(["a/b"]) != domain_name(["a", "b"])
    tree = Topology.from_node_labels(
        [("n1", {"z": "zone a", "r": ""}), ("n2", {"z": "zone a", "r": "x=1"})], ["z", "r"]
    )
    assert tree.switch_names == ("zone%20a", 'zone%20a/""', "zone%20a/x%3D1")


def test_nodes_without_a_label_are_an_error_or_skipped():
    nodes = {"items": NODES["items"] + [{"metadata": {"name": "cp", "labels": {}}}]}
    with pytest.raises(
        InvalidInputError, match="node 'cp' has no label 'cloud.provider.com/topology-block'"
    ):
        Topology.from_node_labels(nodes, KEYS)
    with pytest.warns(UserWarning, match=r"left out 1 node\(s\).*'cp'"):
        tree = Topology.from_node_labels(nodes, KEYS, missing="skip")
    assert tree == Topology.from_node_labels(NODES, KEYS)


@pytest.mark.parametrize(
    "nodes, levels, fragment",
    [
        (NODES, [], "lists no level"),
        (NODES, ["kubernetes.io/hostname"], "only the hostname level"),
        (NODES, ["kubernetes.io/hostname", KEYS[0]], "can only be the last"),
        (NODES, [KEYS[0], KEYS[0]], "given twice"),
        (NODES, {"kind": "ResourceFlavor"}, "one object of kind Topology"),
        ([("n1", {"r": "a"}), ("n1", {"r": "a"})], ["r"], "node 'n1' appears twice"),
        ([("n1", {"r": 3})], ["r"], "must map strings to strings"),
        ([{"kind": "Pod", "metadata": {"name": "p"}}], ["r"], "not a Node"),
        ({"items": []}, ["r"], "holds no node"),
    ],
)
def test_node_label_errors_are_one_line(nodes, levels, fragment):
    with pytest.raises(InvalidInputError) as error:
        Topology.from_node_labels(nodes, levels)
    assert fragment in str(error.value) and len(str(error.value).splitlines()) == 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c/d"]),
            st.sampled_from(["1", "2", ""]),
            st.sampled_from(["x", "y"]),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_every_domain_holds_exactly_the_nodes_with_its_labels(labels):
    """Random label assignments: the nodes under each of a node's switches are exactly the nodes
    that share that node's label values down to that switch's level; the tree does not depend
    on anything but the input (read twice, equal)."""
    keys = ["block", "rack", "unit"]
    nodes = [(f"n{i}", dict(zip(keys, values))) for i, values in enumerate(labels)]
    tree = Topology.from_node_labels(nodes, keys)
    assert tree == Topology.from_node_labels(list(nodes), list(keys))
    under = {s: set() for s in range(tree.num_switches)}
    for node in tree.node_names:
        for s in tree.ancestors(node):
            under[s].add(node)
    values = dict(nodes)
    for name, own in nodes:
        path = tree.ancestors(name)
        switches = [s for s in reversed(path) if tree.switch_names[s] != IMPLICIT_ROOT]
        assert len(switches) == len(keys)
        for depth, s in enumerate(switches, 1):
            same = {n for n, lab in values.items() if all(lab[k] == own[k] for k in keys[:depth])}
            assert under[s] == same
            assert tree.switch_names[s] == domain_name([own[k] for k in keys[:depth]])
    order = [n for n, _ in nodes]  # nodes keep their input order inside each leaf
    for leaf in tree.leaf_switches:
        listed = tree.nodes_of(int(leaf))
        assert list(listed) == sorted(listed, key=order.index)


# ---------------------------------------------------------------------------- HyperNodes
def test_hypernodes_draw_the_tree():
    tree = Topology.from_hypernodes(HYPERNODES, CLUSTER)
    assert shape(tree) == (
        ("(root)", "s2", "s4", "s0", "s1"),  # tops in file order
        (None, "(root)", "(root)", "s4", "s4"),
        ("node-4", "node-0", "node-1", "node-2", "node-3"),
    )
    import yaml

    documents = list(yaml.safe_load_all(HYPERNODES))
    listed = {"apiVersion": "v1", "kind": "List", "items": documents}
    assert Topology.from_hypernodes(listed, CLUSTER) == tree
    assert Topology.from_hypernodes(json.dumps(listed) + "\n", CLUSTER) == tree


def test_exact_matches_need_no_node_list():
    tree = Topology.from_hypernodes(
        [
            hypernode("top", 2, ["r1", "r2"], "HyperNode"),
            hypernode("r1", 1, ["a", "b"]),
            hypernode("r2", 1, ["c"]),
        ]
    )
    assert shape(tree) == (("top", "r1", "r2"), (None, "top", "top"), ("a", "b", "c"))


@pytest.mark.parametrize(
    "manifests, fragment",
    [
        (
            [hypernode("r1", 1, ["a"]), hypernode("r2", 1, ["a"])],
            "node 'a' is a member of both HyperNode 'r1' and 'r2'",
        ),
        (
            [
                hypernode("t1", 2, ["r"], "HyperNode"),
                hypernode("t2", 2, ["r"], "HyperNode"),
                hypernode("r", 1, ["a"]),
            ],
            "HyperNode 'r' is a member of both",
        ),
        (
            [hypernode("t", 2, ["r9"], "HyperNode"), hypernode("r", 1, ["a"])],
            "holds unknown HyperNode 'r9'",
        ),
        (
            [hypernode("t1", 2, ["t2"], "HyperNode"), hypernode("t2", 2, ["t1"], "HyperNode")],
            "HyperNodes form a cycle ('t1' in 't2' in 't1')",
        ),
        (
            [
                hypernode("t", 2, ["r"], "HyperNode"),
                hypernode("r", 3, ["q"], "HyperNode"),
                hypernode("q", 1, ["a"]),
            ],
            "a member's tier must be below its HyperNode's",
        ),
        ([hypernode("r", 2, ["a"])], "tier 2 and holds nodes"),
        (
            [hypernode("r", 1, ["q"], "HyperNode"), hypernode("q", 1, ["a"])],
            "tier 1 and holds HyperNodes",
        ),
        ([hypernode("r", 0, ["a"])], "spec.tier 0 is not a positive integer"),
        ([hypernode("r", 1, ["a"]), hypernode("r", 1, ["b"])], "defined twice"),
        ([{"kind": "Node", "metadata": {"name": "x"}}], "not a HyperNode"),
        (
            [
                {
                    "kind": "HyperNode",
                    "metadata": {"name": "r"},
                    "spec": {
                        "tier": 1,
                        "members": [
                            {"type": "Node", "selector": {"regexMatch": {"pattern": "a.*"}}}
                        ],
                    },
                }
            ],
            "regexMatch picks nodes from the cluster's node list",
        ),
        (
            [
                {
                    "kind": "HyperNode",
                    "metadata": {"name": "r"},
                    "spec": {
                        "tier": 1,
                        "members": [
                            {
                                "type": "Node",
                                "selector": {
                                    "exactMatch": {"name": "a"},
                                    "regexMatch": {"pattern": "a"},
                                },
                            }
                        ],
                    },
                }
            ],
            "exactly one of exactMatch",
        ),
    ],
)
def test_hypernode_errors_are_one_line(manifests, fragment):
    with pytest.raises(InvalidInputError) as error:
        Topology.from_hypernodes(manifests)
    assert fragment in str(error.value) and len(str(error.value).splitlines()) == 1


def test_selectors_against_the_node_list():
    regex = {
        "kind": "HyperNode",
        "metadata": {"name": "r"},
        "spec": {
            "tier": 1,
            "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "zzz"}}}],
        },
    }
    with pytest.raises(InvalidInputError, match="selects no node"):
        Topology.from_hypernodes([regex], CLUSTER)
    with pytest.raises(InvalidInputError, match="node 'node-9' is not in the node list"):
        Topology.from_hypernodes([hypernode("r", 1, ["node-9"])], CLUSTER)
    regex["spec"]["members"][0]["selector"]["regexMatch"]["pattern"] = "node-1"  # anywhere
    assert Topology.from_hypernodes([regex], CLUSTER).node_names == ("node-1", "node-10")


# ---------------------------------------------------------------------------- the command line
def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path):
    (tmp_path / "topology.yaml").write_text(SLURM_YAML)
    (tmp_path / "nodes.json").write_text(json.dumps(NODES))
    (tmp_path / "kueue.yaml").write_text(KUEUE)
    (tmp_path / "hypernodes.yaml").write_text(HYPERNODES)
    (tmp_path / "cluster.json").write_text(
        json.dumps({"items": [{"metadata": {"name": n, "labels": lab}} for n, lab in CLUSTER]})
    )
    return tmp_path


def test_cli_lists_every_topology_of_a_topology_yaml(files, capsys):
    code, out, err = run(capsys, "topology", "show", files / "topology.yaml", "--json")
    assert code == 0 and err == ""
    rows = json.loads(out)["topologies"]
    assert [(r["name"], r["kind"], r["cluster_default"]) for r in rows] == [
        ("topo1", "tree", True),
        ("topo2", "block", False),
        ("topo3", "flat", False),
        ("fabric", "tree", False),
    ]
    assert rows[1]["nodes"] == 16 and "nodes" not in rows[2]
    code, out, _ = run(capsys, "topology", "show", files / "topology.yaml")
    assert code == 0 and "topology 'topo1' (tree, cluster default): 4 nodes" in out
    assert "topology 'topo3' (flat): flat" in out
    code, out, _ = run(
        capsys, "topology", "show", files / "topology.yaml", "--name", "fabric", "--json", "--nodes"
    )
    assert code == 0 and json.loads(out)["node_order"] == ["c1", "c2", "c3", "g2", "g1", "x7"]


def test_cli_reads_node_labels_and_hypernodes(files, capsys):
    expected = list(Topology.from_node_labels(NODES, KEYS).node_names)
    for how in (["--levels", ",".join(KEYS)], ["--kueue-topology", files / "kueue.yaml"]):
        code, out, err = run(
            capsys, "topology", "show", files / "nodes.json", *how, "--json", "--nodes"
        )
        assert code == 0 and err == "" and json.loads(out)["node_order"] == expected
        assert json.loads(out)["levels"][-1]["names"] == ["(root)"]
    code, out, _ = run(
        capsys,
        "topology",
        "show",
        files / "hypernodes.yaml",
        "--node-list",
        files / "cluster.json",
        "--json",
    )
    assert code == 0 and json.loads(out)["nodes"] == 5
    code, out, _ = run(
        capsys,
        "topology",
        "show",
        files / "topology.yaml",
        "--format",
        "yaml",
        "--name",
        "topo2",
        "--json",
    )
    assert code == 0 and json.loads(out)["switches"] == 5


def test_cli_skips_unlabelled_nodes_with_a_note(files, capsys):
    nodes = {"items": NODES["items"] + [{"metadata": {"name": "cp", "labels": {}}}]}
    (files / "more.json").write_text(json.dumps(nodes))
    code, out, err = run(
        capsys,
        "topology",
        "show",
        files / "more.json",
        "--levels",
        ",".join(KEYS),
        "--missing",
        "skip",
        "--json",
    )
    assert code == 0 and json.loads(out)["nodes"] == 5
    assert err.startswith("tjap: note: left out 1 node(s)")


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["topology.yaml", "--name", "topo3"], "no structure to place on"),
        (["topology.yaml", "--name", "nope"], "no topology 'nope'"),
        (["nodes.json"], "give the levels with --levels"),
        (["topology.yaml", "--levels", "a"], "--levels does not apply"),
        (["hypernodes.yaml"], "regexMatch picks nodes from the cluster's node list"),
        (["kueue.yaml"], "name its format with --format"),
        (["nodes.json", "--format", "hypernodes"], "not a HyperNode"),
    ],
)
def test_cli_errors_are_one_line(files, capsys, args, fragment):
    code, out, err = run(capsys, "topology", "show", files / args[0], *args[1:])
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("tjap: error:") and fragment in err, err
