"""``tjap topology show``: a Slurm topology.conf or a JSON tree, summarised."""

from __future__ import annotations

import json

from tjap.cli import main

CONF = """# a small uneven cluster
SwitchName=leaf1 Nodes=c101-[001-016] LinkSpeed=100
SwitchName=leaf2 Nodes=gpu[01-09]
SwitchName=leaf3 Nodes=n[1-3,7]
SwitchName=agg1 Switches=leaf[1-2]
SwitchName=top Switches=agg1,leaf3
"""


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_show_levels_sizes_and_order(tmp_path, capsys):
    conf = tmp_path / "topology.conf"
    conf.write_text(CONF)
    code, out, err = run(capsys, "topology", "show", conf, "--json", "--nodes")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["nodes"] == 29 and data["switches"] == 5
    assert [
        (lv["level"], lv["switches"], lv["min_nodes"], lv["max_nodes"]) for lv in data["levels"]
    ] == [(1, 3, 4, 16), (2, 1, 25, 25), (3, 1, 29, 29)]
    assert data["leaf_sizes"] == [4, 9, 16]
    assert data["node_order"][:2] == ["c101-001", "c101-002"] and data["node_order"][-1] == "n7"
    code, out, _ = run(capsys, "topology", "show", conf)
    assert code == 0 and "29 nodes under 5 switches, 3 level(s)" in out


def test_json_tree_reads_like_the_conf(tmp_path, capsys):
    from tjap.placement.tree.topology import Topology

    path = tmp_path / "tree.json"
    path.write_text(json.dumps(Topology.from_slurm(CONF).to_dict()))
    code, out, _ = run(capsys, "topology", "show", path, "--json")
    assert code == 0 and json.loads(out)["nodes"] == 29


def test_bad_files_are_one_line_errors(tmp_path, capsys):
    bad = tmp_path / "bad.conf"
    bad.write_text("SwitchName=s1 Nodes=n[5-3]\n")
    for path, fragment in ((tmp_path / "missing.conf", "no such topology file"), (bad, "n[5-3]")):
        code, out, err = run(capsys, "topology", "show", path)
        assert code == 2 and out == "" and len(err.splitlines()) == 1
        assert err.startswith("tjap: error:") and fragment in err, err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, _, err = run(capsys, "topology", "show", broken)
    assert code == 2 and "not valid JSON" in err and len(err.splitlines()) == 1


def test_solve_a_window_on_a_slurm_tree_names_in_names_out(tmp_path, capsys):
    (tmp_path / "topology.conf").write_text(CONF)
    idle = [f"c101-{i:03d}" for i in range(3, 9)] + [
        "gpu01",
        "gpu02",
        "gpu03",
        "n1",
        "n2",
        "n3",
        "n7",
    ]
    window = tmp_path / "window.json"
    window.write_text(
        json.dumps(
            {"topology": {"slurm": "topology.conf"}, "idle_nodes": idle, "job_sizes": [4, 3, 2]}
        )
    )
    code, out, err = run(capsys, "solve", window, "--method", "dp")
    assert code == 0 and err == ""
    assert "cost=12000.00" in out and "gpu[01-03]" in out  # each job on one leaf switch
    code, out, _ = run(capsys, "solve", window, "--method", "scip", "--json")
    data = json.loads(out)
    assert data["objective"] == 12000.0 and sorted(map(len, data["nodes"])) == [2, 3, 4]
    assert all(name in idle for job in data["nodes"] for name in job)
    code, out, err = run(capsys, "solve", window, "--method", "sa", "--seed", "1")
    assert code == 0 and "method=sa" in out and "gpu" in out
    code, out, err = run(capsys, "solve", window, "--method", "nsa")
    assert code == 2 and "needs a fat-tree" in err and len(err.strip().splitlines()) == 1
