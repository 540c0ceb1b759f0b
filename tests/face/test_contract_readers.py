"""The error contract at the tree readers: a round trip of ``generate windows`` on a Slurm
``topology.yaml``, and one true line for files the readers used to misname (a space in
``BlockSizes=``, a key beside it, an empty ``topology.yaml``, an empty Kubernetes List)."""

from __future__ import annotations

import json

import pytest
from cli_calls import assert_one_line_error, run

from tjap.core.errors import InvalidInputError
from tjap.placement.tree import levels
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import load_windows

#: A Slurm topology.yaml (Slurm 25.05+): one tree topology of 32 nodes under 4 leaves.
TOPOLOGY_YAML = """\
- topology: fabric
  cluster_default: true
  tree:
    switches:
    - switch: spine
      children: leaf[1-4]
    - switch: leaf1
      nodes: c[01-08]
    - switch: leaf2
      nodes: c[09-16]
    - switch: leaf3
      nodes: c[17-24]
    - switch: leaf4
      nodes: c[25-32]
"""

BLOCKS = "BlockName=b1 Nodes=n[1-18]\nBlockName=b2 Nodes=n[19-36]\n"
EMPTY_LIST = "apiVersion: v1\nkind: List\nitems: []\n"


def one_line(call, *fragments):
    with pytest.raises(InvalidInputError) as error:
        call()
    message = str(error.value)
    assert len(message.splitlines()) == 1, message
    for fragment in fragments:
        assert fragment in message, message
    return message


# ------------------------------------------------------------ 1. generate windows on a yaml, solve
def test_windows_generated_on_a_topology_yaml_solve(tmp_path, capsys):
    (tmp_path / "topology.yaml").write_text(TOPOLOGY_YAML)
    out = tmp_path / "out" / "windows.jsonl"
    code, _, err = run(
        capsys, "generate", "windows", "--topology", tmp_path / "topology.yaml",
        "--num-windows", "3", "--out", out, "--quiet",
    )  # fmt: skip
    assert code == 0, err
    first = json.loads(out.read_text().splitlines()[0])
    assert first["topology"] == {"slurm": "../topology.yaml"}
    code, text, err = run(capsys, "solve", out)
    assert code == 0, err
    assert "window 2:" in text
    windows = load_windows(out)
    assert len(windows) == 3
    assert windows[0].topology == Topology.from_file(tmp_path / "topology.yaml")


def test_constrained_windows_on_a_block_topology_yaml_solve(tmp_path, capsys):
    (tmp_path / "blocks.yaml").write_text(
        "- topology: t\n  block:\n    block_sizes: [4, 8]\n    blocks:\n"
        + "".join(f"    - block: b{b}\n      nodes: n[{4 * b - 3}-{4 * b}]\n" for b in range(1, 5))
    )
    out = tmp_path / "windows.jsonl"
    code, _, err = run(
        capsys, "generate", "windows", "--topology", tmp_path / "blocks.yaml",
        "--constraints", "mix", "--num-windows", "2", "--out", out, "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out.read_text().splitlines()[0])["topology"] == {"slurm": "blocks.yaml"}
    code, text, err = run(capsys, "solve", out)
    assert code == 0 and "window 1:" in text, err


def test_a_window_names_a_topology_yaml_or_yml(tmp_path):
    (tmp_path / "t.yml").write_text(TOPOLOGY_YAML)
    window = {"topology": {"slurm": "t.yml"}, "idle_nodes": "c[01-04]", "job_sizes": [2]}
    (tmp_path / "w.json").write_text(json.dumps(window))
    assert load_windows(tmp_path / "w.json")[0].topology.num_nodes == 32


def test_a_slurm_reference_to_a_json_file_says_use_json(tmp_path, capsys):
    tree = Topology.from_slurm_yaml(TOPOLOGY_YAML)
    (tmp_path / "tree.json").write_text(json.dumps(tree.to_dict()))
    window = {"topology": {"slurm": "tree.json"}, "idle_nodes": ["c01"], "job_sizes": [1]}
    (tmp_path / "w.json").write_text(json.dumps(window))
    assert_one_line_error(*run(capsys, "solve", tmp_path / "w.json"), "{'json': PATH}")


def test_a_window_on_an_empty_topology_yaml_says_it_is_empty(tmp_path, capsys):
    (tmp_path / "topology.yaml").write_text("# to be filled in\n")
    window = {"topology": {"slurm": "topology.yaml"}, "idle_nodes": [], "job_sizes": [1]}
    (tmp_path / "w.json").write_text(json.dumps(window))
    assert_one_line_error(*run(capsys, "solve", tmp_path / "w.json"), "topology.yaml", "is empty")


# ------------------------------------------------------------------------- 2. BlockSizes= lines
@pytest.mark.parametrize(
    "line, fixed",
    [
        ("BlockSizes=18, 36", "BlockSizes=18,36"),
        ("BlockSizes=18 ,36", "BlockSizes=18,36"),
        ("BlockSizes=18 36", "BlockSizes=18,36"),
        ("BlockSizes=18, 36, 72", "BlockSizes=18,36,72"),
    ],
)
def test_a_space_in_block_sizes_names_the_space_and_the_fix(tmp_path, capsys, line, fixed):
    conf = tmp_path / "topology.conf"
    conf.write_text(BLOCKS + line + "\n")
    one_line(lambda: Topology.from_file(conf), "line 3", "space", fixed)
    assert_one_line_error(*run(capsys, "topology", "show", conf), "line 3", "space", fixed)


def test_a_space_in_a_node_list_names_the_fix():
    one_line(lambda: Topology.from_slurm("SwitchName=s Nodes=n1, n2\n"), "space", "Nodes=n1,n2")


@pytest.mark.parametrize(
    "line, fragments",
    [
        (
            "BlockSizes=18,36 Nodes=n[37-54]",
            ["line 3", "BlockSizes= goes on a line of its own", "Nodes=", "BlockName="],
        ),
        (
            "BlockName=b3 Nodes=n[37-54] BlockSizes=18,36",
            ["line 3", "BlockSizes= goes on a line of its own", "BlockSizes=18,36 alone"],
        ),
    ],
)
def test_block_sizes_beside_another_key_is_refused(tmp_path, capsys, line, fragments):
    conf = tmp_path / "topology.conf"
    conf.write_text(BLOCKS + line + "\n")
    one_line(lambda: Topology.from_file(conf), *fragments)
    assert_one_line_error(*run(capsys, "topology", "show", conf), *fragments)


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("18,²", "'²', not a positive number"),  # str.isdigit but not int(): was a ValueError
        ("18," + "9" * 5000, "5000 digits"),  # was int()'s digit limit, or a float overflow
        ("", "lists no size"),
    ],
)
def test_block_sizes_values_are_one_line_errors(value, fragment):
    one_line(lambda: Topology.from_slurm(BLOCKS + f"BlockSizes={value}\n"), "line 3", fragment)


def test_topology_yaml_block_sizes_are_named_as_the_yaml_writes_them():
    text = (
        "- topology: t\n  block:\n    block_sizes: [4, 6]\n    blocks:\n"
        "    - block: b\n      nodes: n[1-4]\n"
    )
    message = one_line(lambda: Topology.from_slurm_yaml(text), "block_sizes: [4, 8, 16]")
    assert "BlockSizes=" not in message


# ------------------------------------------------------------------ 2. an empty topology.yaml
@pytest.mark.parametrize("text", ["", "\n\n", "# nothing yet\n"])
def test_an_empty_topology_yaml_says_it_is_empty(tmp_path, capsys, text):
    path = tmp_path / "topology.yaml"
    path.write_text(text)
    one_line(lambda: Topology.from_file(path), "topology.yaml", "is empty", "- topology:")
    assert_one_line_error(*run(capsys, "topology", "show", path), "is empty")
    assert_one_line_error(
        *run(capsys, "generate", "windows", "--topology", path, "--out", tmp_path / "w.jsonl"),
        "is empty",
    )


# ------------------------------------------------- 2. a Kubernetes List with no items (items: [])
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_an_empty_list_of_hypernodes_says_it_has_no_items(tmp_path, capsys, suffix):
    path = tmp_path / f"hypernodes{suffix}"
    path.write_text(
        EMPTY_LIST if suffix == ".yaml" else '{"apiVersion": "v1", "kind": "List", "items": []}'
    )
    fragments = ("List with no items", "HyperNode")
    one_line(lambda: Topology.from_hypernodes(path), *fragments)
    code, out, err = run(capsys, "topology", "show", path, "--format", "hypernodes")
    assert_one_line_error(code, out, err, *fragments)
    assert_one_line_error(*run(capsys, "topology", "show", path), "List with no items")


def test_an_empty_list_as_a_kueue_topology_says_it_has_no_items(tmp_path, capsys):
    path = tmp_path / "kueue-topology.yaml"
    path.write_text(EMPTY_LIST)
    fragments = ("List with no items", "kind: Topology")
    message = one_line(lambda: levels.read_levels(path), *fragments)
    assert "kinds: List" not in message
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"items": [{"metadata": {"name": "a", "labels": {"rack": "r1"}}}]}))
    code, out, err = run(capsys, "topology", "show", nodes, "--kueue-topology", path)
    assert_one_line_error(code, out, err, *fragments)


def test_a_list_holding_one_kueue_topology_is_read():
    text = (
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: kueue.x-k8s.io/v1beta1\n"
        "  kind: Topology\n  metadata: {name: t}\n  spec:\n    levels:\n"
        "    - nodeLabel: rack\n    - nodeLabel: kubernetes.io/hostname\n"
    )
    assert levels.read_levels(text) == ["rack", "kubernetes.io/hostname"]


def test_an_empty_list_of_nodes_says_it_has_no_items(tmp_path):
    path = tmp_path / "nodes.yaml"
    path.write_text(EMPTY_LIST)
    one_line(lambda: levels.read_nodes(path), "List with no items", "holds no node")


def test_items_that_are_no_list_name_the_file(tmp_path):
    path = tmp_path / "hypernodes.yaml"
    path.write_text("kind: List\nitems: 3\n")
    one_line(lambda: Topology.from_hypernodes(path), "hypernodes.yaml", "'items' must be a list")
