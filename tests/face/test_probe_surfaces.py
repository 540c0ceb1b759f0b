"""A probe of every newer surface with bad and edge inputs: readers, windows with constraints,
each method, the audit, the window generator, the Slurm commands without a Slurm. Each outcome
is a valid result (exit 0, or 1 for a window without a solution, with its reason) or one line
``tjap: error: ...`` with exit 2 (3 when Slurm cannot be reached), never a traceback."""

from __future__ import annotations

import json

import pytest
from cli_calls import run as run_main

from tjap.registry import entries

METHODS = [m.name for m in entries("tree") if m.is_available() and m.name != "nsa"]

BLOCK_CONF = "BlockName=b1 Nodes=g[1-4]\nBlockName=b2 Nodes=g[5-8]\nBlockSizes=4,8\n"
TREE_CONF = (
    "SwitchName=l1 Nodes=n[1-4]\nSwitchName=l2 Nodes=n[5-8]\nSwitchName=top Switches=l[1-2]\n"
)

#: (name, file name, text): files a reader must read or refuse in one line
FILES = [
    ("empty conf", "t.conf", ""),
    ("comment only", "t.conf", "# nothing\n"),
    ("block sizes with a space", "t.conf", "BlockName=b1 Nodes=g[1-4]\nBlockSizes=4, 8\n"),
    ("block sizes alone", "t.conf", "BlockSizes=4,8\n"),
    ("mixed plugins", "t.conf", "SwitchName=s1 Nodes=n1\nBlockName=b1 Nodes=g[1-4]\n"),
    ("bad hostlist", "t.conf", "SwitchName=s1 Nodes=n[1-\n"),
    ("switch loop", "t.conf", "SwitchName=a Switches=b\nSwitchName=b Switches=a\n"),
    ("not utf-8", "t.conf", b"SwitchName=s\xe91 Nodes=n1\n"),
    ("empty yaml", "t.yaml", ""),
    ("yaml list of nothing", "t.yaml", "[]\n"),
    ("json not a tree", "t.json", '{"switches": 3}'),
    ("json garbage", "t.json", "{"),
    ("a block tree", "t.conf", BLOCK_CONF),
    ("a switch tree", "t.conf", TREE_CONF),
]


def run(capsys, *argv):
    """``tjap argv`` in-process; an argument refused by the parser is its exit status too."""
    try:
        return run_main(capsys, *argv)
    except SystemExit as exc:
        out, err = capsys.readouterr()
        return exc.code, out, err


def outcome(code: int, out: str, err: str, allowed=(0, 2)) -> None:
    assert "Traceback" not in err and "Traceback" not in out, err
    assert code in allowed, (code, err)
    if code in (2, 3):
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("tjap: error: "), err


@pytest.mark.parametrize("name, filename, text", FILES, ids=[f[0] for f in FILES])
def test_every_topology_file_is_read_or_refused_in_one_line(capsys, tmp_path, name, filename, text):
    path = tmp_path / filename
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    code, out, err = run(capsys, "topology", "show", path)
    outcome(code, out, err)
    if name.startswith("a "):
        assert code == 0


#: jobs of a window on the block tree and the switch tree above (8 nodes, all idle)
JOBS = [
    [4, 4],
    [9],
    [{"nodes": 4, "segment": 2}],
    [{"nodes": 4, "segment": 3}],
    [{"nodes": 4, "within": 1}, {"nodes": 4, "within": 1}],
    [{"nodes": 6, "within": 1}],
    [{"nodes": 2, "prefer": 1, "prefer_cost": 5}],
    [{"nodes": 2, "exclusive": True}, {"nodes": 4}],
    [{"nodes": 4, "slurm_rule": True}],
    [{"nodes": 2, "within": 9}],
    [{"nodes": 2, "within": "rack"}],
    [{"nodes": 2, "color": "red"}],
    [{"nodes": 0}],
    [{"nodes": 2.5}],
]


@pytest.mark.parametrize("conf", [BLOCK_CONF, TREE_CONF], ids=["blocks", "tree"])
@pytest.mark.parametrize("jobs", JOBS, ids=[json.dumps(j)[:40] for j in JOBS])
def test_every_method_on_every_window_is_a_result_or_one_line(capsys, tmp_path, conf, jobs):
    (tmp_path / "t.conf").write_text(conf)
    window = tmp_path / "w.json"
    window.write_text(
        json.dumps({"topology": {"slurm": "t.conf"}, "idle_nodes": list(range(8)), "jobs": jobs})
    )
    for method in METHODS:
        code, out, err = run(capsys, "solve", window, "--method", method, "--time-limit", "2")
        outcome(code, out, err, allowed=(0, 1, 2))
        if code == 1:  # no solution: it says why
            assert "status=INFEASIBLE" in out and "  no solution: " in out, (method, out)
        if code == 0:
            assert "status=" in out and "nan" not in out, (method, out)


AUDIT = ["examples/audit/sacct.txt", "--topology", "examples/audit/topology.conf"]


@pytest.mark.parametrize(
    "argv",
    [
        [*AUDIT, "--timezone", "Mars/Olympus"],
        [*AUDIT, "--from", "yesterday"],
        [*AUDIT, "--from", "2026-11-29", "--to", "2026-11-28"],
        [*AUDIT, "--min-nodes", "1"],
        [*AUDIT, "--worst", "-3"],
        [*AUDIT, "--format", "csv"],
        [*AUDIT, "--slurm", "21.08"],
        ["examples/audit/topology.conf", "--topology", "examples/audit/topology.conf"],
        ["no-such-file.txt", "--topology", "examples/audit/topology.conf"],
        [*AUDIT, "--timezone", "UTC", "--json"],
        ["examples/audit/jobcomp.txt", *AUDIT[1:], "--timezone", "UTC"],
    ],
)
def test_every_audit_is_a_result_or_one_line(capsys, argv):
    code, out, err = run(capsys, "audit", *argv, "--quiet")
    outcome(code, out, err)
    if "--json" in argv:
        assert json.loads(out)["summary"]["jobs"] > 0


@pytest.mark.parametrize(
    "argv",
    [
        ["--num-windows", "0"],
        ["--num-windows", "2", "--seed", "-1"],
        ["--num-windows", "2", "--constraints", "segment=2"],
        ["--num-windows", "2", "--constraints", "segment=0.5,within=0.6"],
        ["--num-windows", "2", "--constraints", "color=0.5"],
    ],
)
def test_every_window_generation_is_a_result_or_one_line(capsys, tmp_path, argv):
    (tmp_path / "t.conf").write_text(BLOCK_CONF)
    out_file = tmp_path / "w.jsonl"
    code, out, err = run(
        capsys, "generate", "windows", "--topology", tmp_path / "t.conf", "--out", out_file, *argv
    )
    outcome(code, out, err)
    if code == 0:  # what it wrote reads back
        code, out, err = run(capsys, "solve", out_file, "--method", "seq")
        outcome(code, out, err, allowed=(0, 1))


@pytest.mark.parametrize("argv", [["slurm", "advise"], ["slurm", "place", "--once"]])
def test_the_slurm_commands_without_a_slurm_are_one_line(capsys, monkeypatch, tmp_path, argv):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sinfo, squeue or scontrol
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    code, out, err = run(capsys, *argv)
    outcome(code, out, err, allowed=(2, 3))
