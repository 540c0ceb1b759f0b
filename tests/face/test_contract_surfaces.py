"""The error and limits contract on the newer surfaces (block and label windows with job
constraints, large trees, the audit, seeds): one test per cause of a traceback, an overrun or a
silent result found by probing them; each failed before its fix."""

from __future__ import annotations

import json

import pytest
from cli_calls import assert_one_line_error, run

import tjap
from tjap.placement.tree.jobs import MAX_WEIGHT

BLOCKS = "examples/blocks-window.json"


# -- weights every exact model takes ----------------------------------------------------------
@pytest.mark.parametrize("weight", ["1e20", "1e308", str(MAX_WEIGHT * 10)])
@pytest.mark.parametrize("method", ["scip", "cpsat", "dp"])
def test_a_weight_no_exact_model_takes_is_refused_up_front(capsys, method, weight):
    code, out, err = run(capsys, "solve", BLOCKS, "--method", method, "--fragmentation", weight)
    assert_one_line_error(code, out, err, "fragmentation weight", "1e+09")


def test_a_prefer_cost_above_the_bound_is_refused_in_python():
    tree = tjap.Topology.from_slurm("BlockName=b1 Nodes=n[1-4]\nBlockSizes=4")
    with pytest.raises(tjap.InvalidInputError, match="prefer_cost must be a number from 0 to"):
        tjap.Window(tree, range(4), [{"nodes": 2, "prefer": 1, "prefer_cost": 1e20}])


def test_at_the_bound_every_exact_model_gives_the_same_optimum(capsys):
    found = {}
    for method in ("scip", "cpsat", "dp", "freeform"):
        code, out, _ = run(
            capsys,
            "solve",
            BLOCKS,
            "--method",
            method,
            "--fragmentation",
            str(MAX_WEIGHT),
            "--time-limit",
            "20",
            "--json",
        )
        assert code == 0
        found[method] = json.loads(out)["objective"]
    assert len(set(found.values())) == 1, found


# -- Slurm's tree selection on large trees ----------------------------------------------------
def _wide_tree(leaves: int):
    lines = [f"SwitchName=l{i} Nodes=n[{10 * i:07d}-{10 * i + 9:07d}]" for i in range(leaves)]
    lines += [f"SwitchName=s{j} Switches=l[{100 * j}-{100 * j + 99}]" for j in range(leaves // 100)]
    lines += [f"SwitchName=top Switches=s[0-{leaves // 100 - 1}]"]
    return tjap.Topology.from_slurm("\n".join(lines))


def test_slurm_tree_keeps_no_leaves_by_switches_table():
    """The table of links from every leaf to every switch was 74.5 GiB on 1,000,000 nodes; the
    links now follow from each switch's ancestors (switches x depth)."""
    from tjap.heuristics.slurm.tree import switch_distance, switch_table

    tree = _wide_tree(2_000)  # 20,000 nodes, 2,021 switches
    table = switch_table(tree)
    assert table.ancestors.shape == (table.num_switches, 3)
    assert all(
        a.nbytes < 10 * table.num_switches * 8 for a in vars(table).values() if hasattr(a, "nbytes")
    )
    leaf, other_spine_leaf = int(table.leaves[0]), int(table.leaves[150])
    assert switch_distance(table.ancestors, leaf, leaf) == 0
    assert switch_distance(table.ancestors, leaf, int(table.leaves[1])) == 2
    assert switch_distance(table.ancestors, leaf, other_spine_leaf) == 4
    window = tjap.Window(tree, range(0, tree.num_nodes, 2), [64, 200, 12])
    result = tjap.solve(window, "slurm-tree")
    assert result.is_feasible() and result.has_solution


# -- seeds ------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", ["-1", "4294967296", "99999999999999999999999"])
@pytest.mark.parametrize(
    "command",
    [
        ["generate", "windows", "--count", "2"],
        ["bench", "exact", "--num-windows", "2"],
        ["solve", "examples/window.json", "--method", "sa"],
        ["interference", "evaluate"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_a_seed_out_of_range_is_one_line_everywhere(capsys, command, seed):
    with pytest.raises(SystemExit) as stop:  # argparse's own exit
        run(capsys, *command, "--seed", seed)
    out, err = capsys.readouterr()
    code = stop.value.code
    assert_one_line_error(code, out, err, "--seed", "4294967295")


@pytest.mark.parametrize("seed", [-1, 2**32, 10**23, True])
def test_solve_refuses_a_seed_out_of_range(seed):
    window = tjap.Window(tjap.FatTree(k=4, num_nodes=16), range(16), [3, 2])
    with pytest.raises(tjap.InvalidInputError, match="seed must be a whole number from 0 to"):
        tjap.solve(window, "sa", seed=seed)


# -- the audit reads a running topology/block Slurm --------------------------------------------
SCONTROL_BLOCKS = """BlockName=b1 Nodes=g[01-04] BlockSize=4
BlockName=b2 Nodes=g[05-08] BlockSize=4
AggregatedBlock=b1,b2 Nodes=g[01-08] BlockSize=8
"""


def test_the_audits_live_topology_keeps_a_block_slurms_block_sizes(monkeypatch):
    """``tjap audit --topology slurm`` on topology/block: the live reader's topology.conf text is
    read once (reading it as scontrol's output again lost BlockSize= and refused every block
    Slurm)."""
    from tjap.placement.slurm import readers
    from tjap.slurm import audit as auditor

    conf = readers.show_topology_conf(SCONTROL_BLOCKS)
    monkeypatch.setattr(readers, "live_topology_conf", lambda *a, **k: conf)
    tree, where, block = auditor._topology("slurm")
    assert block and "running Slurm" in where
    assert tree == tjap.Topology.from_scontrol(SCONTROL_BLOCKS)
    assert tree.num_nodes == 8


# -- the audit: no silent zero, UTF-8 or one line -----------------------------------------------
AUDIT = ("examples/audit/sacct.txt", "--topology", "examples/audit/topology.conf")


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (("--from", "2030-01-01"), "start outside --from/--to"),
        (("--to", "2001-01-01"), "start outside --from/--to"),
        (("--partition", "nowhere"), "another partition than --partition"),
        (("--min-nodes", "500"), "fewer than --min-nodes 500"),
    ],
)
def test_an_audit_left_with_no_job_names_what_the_records_cover(capsys, extra, fragment):
    code, out, err = run(capsys, "audit", *AUDIT, "--timezone", "UTC", *extra, "--quiet")
    assert_one_line_error(code, out, err, fragment, "the records start from 2026-11-28", "main")


def test_an_audit_on_the_wrong_topology_says_so(capsys, tmp_path):
    other = tmp_path / "topology.conf"
    other.write_text("SwitchName=s1 Nodes=x[1-8]\n")
    code, out, err = run(capsys, "audit", AUDIT[0], "--topology", other, "--quiet")
    assert_one_line_error(code, out, err, "nodes the topology lacks", "--topology")


def test_an_audit_of_a_header_alone_is_refused(capsys, tmp_path):
    records = tmp_path / "sacct.txt"
    records.write_text(open(AUDIT[0]).readline())
    code, out, err = run(capsys, "audit", records, *AUDIT[1:], "--quiet")
    assert_one_line_error(code, out, err, "no started job to audit")


def test_records_that_are_not_utf8_are_one_line_naming_the_line(capsys, tmp_path):
    lines = open(AUDIT[0], encoding="utf-8").read().splitlines(keepends=True)
    records = tmp_path / "sacct.txt"
    records.write_bytes(
        "".join(lines[:7]).encode() + lines[7].replace("main", "m\xe9in").encode("latin-1")
    )
    code, out, err = run(capsys, "audit", records, *AUDIT[1:], "--quiet")
    assert_one_line_error(code, out, err, "is not UTF-8 text: line 8 holds the byte 0xe9", "iconv")


def test_an_interrupted_audit_stops_with_a_marked_summary_and_no_file(
    capsys, tmp_path, monkeypatch
):
    """A SIGTERM in the measuring loop: exit 143, the JSON marked interrupted (its summary of
    the jobs audited, no per-job list), no report or CSV (writing them for a large audit takes
    longer than a signal may wait), one line saying so; the HTML page of an interrupted result
    says so when it is written from Python."""
    from tjap.core.errors import Terminated
    from tjap.heuristics.slurm import audit_loop
    from tjap.slurm.audit_report import report_html

    real = audit_loop._measure_chunk
    calls = []

    def stop_on_second(*args):
        calls.append(1)
        if len(calls) == 2:
            raise Terminated()
        return real(*args)

    monkeypatch.setattr(audit_loop, "_measure_chunk", stop_on_second)
    monkeypatch.setattr(audit_loop, "FIRST_CHUNK", 10)
    monkeypatch.setattr(audit_loop, "CHUNK_S", 0.0)  # one job a chunk after the first
    report, table = tmp_path / "report", tmp_path / "jobs.csv"
    code, out, err = run(
        capsys, "audit", *AUDIT, "--timezone", "UTC", "--report", report, "--csv", table, "--json"
    )
    assert code == 143, err
    data = json.loads(out)
    assert data["interrupted"] and data["summary"]["jobs"] == 10 and data["jobs"] == []
    assert not report.exists() and not table.exists() and not list(tmp_path.glob("*.csv"))
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tjap: terminated (SIGTERM): audited 10 jobs")
    assert "--report and --csv not written" in lines[0]
    calls.clear()
    result = tjap.audit(AUDIT[0], AUDIT[2], timezone="UTC")
    assert result.interrupted and result.stopped_by == "SIGTERM"
    assert "Placement audit (interrupted)" in report_html(result, result.topology)
