"""Your own cluster end to end: the benchmark trees, the paper's stream on any tree
(``generate_windows(topology=...)``, ``tjap generate windows --topology``) and window files that
name their tree file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import topologies
from tjap.cli import main
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.stream import generate_windows, tree_load
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window, load_windows
from tjap.placement.tree.workload import Workload

SMALL = """\
SwitchName=l1 Nodes=a[01-06]
SwitchName=l2 Nodes=b[1-9]
SwitchName=l3 Nodes=c[01-04]
SwitchName=l4 Nodes=d[01-12]
SwitchName=s1 Switches=l[1-2]
SwitchName=s2 Switches=l[3-4]
SwitchName=top Switches=s[1-2]
"""


def test_shipped_benchmark_trees_are_the_generated_ones():
    for name, text in topologies.files().items():
        assert (topologies.FOLDER / name).read_text(encoding="utf-8") == text, (
            f"{name} differs from `python -m benchmarks.topologies`"
        )


def test_irregular_tree_has_the_promised_shape():
    tree = Topology.from_file(topologies.FOLDER / "irregular_2000.conf")
    assert tree.num_nodes == 2000 and tree.num_levels == 3
    assert tree.leaf_sizes.min() >= 8 and tree.leaf_sizes.max() <= 32
    assert len(set(tree.leaf_sizes.tolist())) > 10  # really uneven
    spines = tree.children(0)
    assert len({len(tree.children(s)) for s in spines}) > 2


def test_k48_file_is_the_k48_fat_tree():
    tree = Topology.from_file(topologies.FOLDER / "fat_tree_k48.conf")
    fat = FatTree(k=48)
    assert tree.num_nodes == fat.num_nodes == 27648
    assert (tree.node_leaf == fat.node_leaf).all() and (
        tree.switch_parent == fat.switch_parent
    ).all()
    rng = np.random.default_rng(0)
    for _ in range(20):
        nodes = rng.choice(fat.num_nodes, int(rng.integers(1, 60)), replace=False)
        for convention in ("paper", "published"):
            assert job_cost(tree, nodes, convention) == job_cost(fat, nodes, convention)


def test_runtime_scale_multiplies_runtimes_only():
    a, b = Workload.generate(500, 3), Workload.generate(500, 3, runtime_scale=2.5)
    assert (a.arrival_s == b.arrival_s).all() and (a.requested_nodes == b.requested_nodes).all()
    assert (b.runtime_s == np.rint(a.runtime_s * 2.5)).all()
    with pytest.raises(InvalidInputError, match="runtime_scale"):
        Workload.generate(5, 0, runtime_scale=0)


def test_stream_on_a_tree_is_seeded_feasible_and_warmed_up():
    tree = Topology.from_slurm(SMALL)
    a = generate_windows(topology=tree, num_windows=6, seed=4, num_jobs=3000)
    b = generate_windows(topology=tree, num_windows=6, seed=4, num_jobs=3000)
    assert a == b
    cold = generate_windows(topology=tree, num_windows=6, seed=4, num_jobs=3000, warmup_windows=0)
    assert cold != a
    for w in a:
        assert w.topology is tree and sum(w.job_sizes) <= w.num_idle
        assert max(w.job_sizes) <= 40
    with pytest.raises(InvalidInputError, match="warmup_windows"):
        generate_windows(topology=tree, num_windows=1, warmup_windows=-1)


def test_arrival_scale_spaces_arrivals_only():
    a, b = Workload.generate(500, 3), Workload.generate(500, 3, arrival_scale=2.5)
    assert (a.runtime_s == b.runtime_s).all() and (a.requested_nodes == b.requested_nodes).all()
    assert (b.arrival_s == np.floor(a.arrival_s * 2.5)).all()
    assert (Workload.generate(500, 3, arrival_scale=1.0).arrival_s == a.arrival_s).all()
    with pytest.raises(InvalidInputError, match="arrival_scale"):
        Workload.generate(5, 0, arrival_scale=0)


@pytest.mark.parametrize("nodes", [4, 29, 160, 360, 999, 1000, 2000, 27648])
def test_tree_load_keeps_the_papers_load_per_node(nodes):
    """Offered load per node (mean request x mean runtime / mean inter-arrival time / nodes)
    is the paper's on every cluster size, with runtimes never below the paper's."""
    load = tree_load(nodes)
    mean_request = (1 + load["max_nodes"]) / 2
    offered = mean_request * 905 * load["runtime_scale"] / (17.5 * load["arrival_scale"]) / nodes
    assert offered == pytest.approx(20.5 * 905 / 17.5 / 1000)  # 1.06
    assert load["runtime_scale"] >= 1 and 2 <= load["max_nodes"] <= min(40, max(nodes, 2))
    if nodes < 1000:
        assert load["max_nodes"] <= max(2, nodes // 4)
    assert tree_load(1000) == {"max_nodes": 40, "runtime_scale": 1.0, "arrival_scale": 1.0}


def _grid_tree(spines=4, leaves=5) -> Topology:
    """A three-level tree of 360 nodes: leaves of 10-26 nodes under 4 spines."""
    lines, first = [], 1
    for s in range(spines):
        for leaf in range(leaves):
            n = 10 + 4 * ((s * leaves + leaf) % 5)
            lines.append(f"SwitchName=l{s}_{leaf} Nodes=h[{first:04d}-{first + n - 1:04d}]")
            first += n
        lines.append(f"SwitchName=s{s} Switches=l{s}_[0-{leaves - 1}]")
    lines.append(f"SwitchName=top Switches=s[0-{spines - 1}]")
    return Topology.from_slurm("\n".join(lines))


EXAMPLE_CONF = Path(__file__).resolve().parents[3] / "examples" / "topology.conf"


@pytest.mark.parametrize("which", ["readme-29", "grid-360"])
def test_windows_on_a_tree_see_a_loaded_fragmented_cluster(which):
    """The stream on a small tree (the README's 29 nodes) and on a larger one: busy nodes over
    several switches, idle nodes on more than one leaf, a job or more per window, seeded."""
    tree = Topology.from_file(EXAMPLE_CONF) if which == "readme-29" else _grid_tree()
    assert tree.num_nodes == (29 if which == "readme-29" else 360)
    windows = generate_windows(topology=tree, num_windows=60, seed=0, epoch_windows=30)
    assert len(windows) == 60
    idle = np.array([w.num_idle / tree.num_nodes for w in windows])
    assert 0.1 < idle.mean() < 0.8 and idle.max() < 1
    leaves = lambda nodes: len(np.unique(tree.node_leaf[nodes]))  # noqa: E731
    idle_leaves = np.array([leaves(w.idle_nodes) for w in windows])
    busy_leaves = np.array(
        [leaves(np.setdiff1d(np.arange(tree.num_nodes), w.idle_nodes)) for w in windows]
    )
    assert (idle_leaves > 1).mean() >= 0.7 and (busy_leaves > 1).mean() >= 0.9
    for w in windows:
        assert w.num_jobs >= 1 and sum(w.job_sizes) <= w.num_idle
        assert max(w.job_sizes) <= tree_load(tree.num_nodes)["max_nodes"]
    again = generate_windows(topology=tree, num_windows=60, seed=0, epoch_windows=30)
    assert again == windows
    assert generate_windows(topology=tree, num_windows=60, seed=1, epoch_windows=30) != windows


def test_generate_windows_cli_on_the_readme_tree_writes_loaded_windows(tmp_path, capsys):
    out = tmp_path / "windows.jsonl"
    assert (
        main(
            [
                "generate",
                "windows",
                "--topology",
                str(EXAMPLE_CONF),
                "--num-windows",
                "100",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    windows = load_windows(out)
    assert len(windows) == 100
    idle = np.mean([w.num_idle for w in windows]) / 29
    assert 0.1 < idle < 0.8


def test_paper_layout_stream_is_unchanged_by_the_new_options():
    assert generate_windows("paper", 3, 0) == generate_windows("paper", 3, 0, warmup_windows=0)


def test_generate_windows_cli_names_the_tree_file(tmp_path, capsys):
    conf = tmp_path / "cluster" / "topology.conf"
    conf.parent.mkdir()
    conf.write_text(SMALL)
    out = tmp_path / "runs" / "w.jsonl"
    assert (
        main(
            [
                "generate",
                "windows",
                "--topology",
                str(conf),
                "--num-windows",
                "3",
                "--seed",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "3 windows" in capsys.readouterr().out
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(line["topology"] == {"slurm": "../cluster/topology.conf"} for line in lines)
    assert all(isinstance(v, str) for v in lines[0]["idle_nodes"])  # names, not indices
    windows = load_windows(out)
    assert len(windows) == 3 and windows[0].topology == Topology.from_slurm(SMALL)
    assert main(["solve", str(out), "--method", "dp", "--json"]) == 0


def test_generate_windows_cli_refuses_warmup_without_topology(tmp_path, capsys):
    assert main(["generate", "windows", "--warmup", "3", "--out", str(tmp_path / "w.jsonl")]) != 0
    err = capsys.readouterr().err
    assert "--warmup needs --topology" in err and len(err.strip().splitlines()) == 1


def test_window_names_a_json_tree_file(tmp_path):
    tree = Topology.from_slurm(SMALL)
    (tmp_path / "tree.json").write_text(json.dumps(tree.to_dict()))
    data = {"topology": {"json": "tree.json"}, "idle_nodes": ["a01", "b2", "d05"], "job_sizes": [2]}
    (tmp_path / "w.json").write_text(json.dumps(data))
    (w,) = load_windows(tmp_path / "w.json")
    assert w.topology == tree
    with pytest.raises(InvalidInputError, match="must name a .json file"):
        Window.from_dict({**data, "topology": {"json": "topology.conf"}}, tmp_path)
    with pytest.raises(InvalidInputError, match="takes one key"):
        Window.from_dict({**data, "topology": {"json": "tree.json", "x": 1}}, tmp_path)


def test_topology_from_file_reads_conf_and_json_and_names_bad_files(tmp_path):
    (tmp_path / "t.conf").write_text(SMALL)
    tree = Topology.from_file(tmp_path / "t.conf")
    (tmp_path / "t.json").write_text(json.dumps(tree.to_dict()))
    assert Topology.from_file(tmp_path / "t.json") == tree
    (tmp_path / "bad.json").write_text("{")
    for path, match in (
        (tmp_path / "bad.json", "not valid JSON"),
        (tmp_path / "none.conf", "no such topology file"),
    ):
        with pytest.raises(InvalidInputError, match=match) as info:
            Topology.from_file(path)
        assert "\n" not in str(info.value)


def test_a_fat_tree_is_a_topology():
    import tjap

    fat = tjap.FatTree(k=4)
    assert isinstance(fat, tjap.Topology)
    assert fat.node_names[:3] == ("0", "1", "2") and fat.num_levels == 3
    assert fat.num_edge_switches == 8 and fat.num_switches == 1 + 4 + 8
    assert Path(topologies.__file__).name == "topologies.py"


def test_idle_nodes_as_a_hostlist_expression():
    tree = Topology.from_slurm(SMALL)
    a = Window(tree, "a[02-04],b[1-2],d07", [3, 2])
    b = Window(tree, ["a02", "a03", "a04", "b1", "b2", "d07"], [3, 2])
    assert a == b
    with pytest.raises(InvalidInputError, match="idle_nodes: hostlist 'a\\[04-02\\]'.*reversed"):
        Window(tree, "a[04-02]", [1])
    with pytest.raises(InvalidInputError, match="unknown node 'zz1'"):
        Window(tree, "a01,zz1", [1])


def test_readme_your_own_cluster_example_runs_as_written(tmp_path, monkeypatch, capsys):
    """The README's topology.conf and Python example, run as they stand, print what they say."""
    import re
    import runpy

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Your own cluster") :]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
    conf = next(b for lang, b in blocks if lang == "")  # the topology.conf
    code = next(b for lang, b in blocks if lang == "python")  # the first Python example
    (tmp_path / "topology.conf").write_text(conf)
    (tmp_path / "example.py").write_text(code)
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(tmp_path / "example.py"))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "29 3 [16, 9, 4]"
    best, slurm = map(float, lines[-1].split())
    assert round(best, 1) == 34666.7 and round(slurm, 1) == 36666.7  # the numbers it quotes
