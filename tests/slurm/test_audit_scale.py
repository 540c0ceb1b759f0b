"""The scale benchmark's records (benchmarks/audit_scale.py), on a small instance: the same seed
writes the same files, every line reads as sacct, no node is held by two jobs at once, and the
records the audit must skip are there in the counts generation.json gives."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from benchmarks import audit_scale
from tjap.placement.slurm.accounting import Skipped, read_allocations
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.placement.tree.topology import Topology

RECORDS, NODES = 2000, 200


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("audit_scale")
    info = audit_scale.generate(out, RECORDS, seed=3, nodes=NODES, leaf=10, fanout=5)
    return out, info


def test_the_same_seed_writes_the_same_files_and_another_seed_others(small, tmp_path):
    out, _ = small
    audit_scale.generate(tmp_path / "again", RECORDS, seed=3, nodes=NODES, leaf=10, fanout=5)
    audit_scale.generate(tmp_path / "other", RECORDS, seed=4, nodes=NODES, leaf=10, fanout=5)
    for name in ("sacct.txt", "topology.conf"):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes(), name
    assert (tmp_path / "other" / "sacct.txt").read_bytes() != (out / "sacct.txt").read_bytes()


def test_the_topology_is_the_three_level_tree_asked_for(small):
    out, _ = small
    topology = Topology.from_slurm((out / "topology.conf").read_text())
    assert topology.num_nodes == NODES and topology.num_switches == 1 + 4 + 20
    assert topology.node_names == tuple(f"n{i}" for i in range(1, NODES + 1))
    assert topology.ancestors("n11") == (
        topology.switch_index("s1"),
        topology.switch_index("m0"),
        topology.switch_index("top"),
    )


def test_every_line_reads_as_sacct_and_the_skips_are_counted(small):
    out, info = small
    lines = (out / "sacct.txt").read_text().splitlines()
    assert lines[0] == audit_scale.HEADER and len(lines) == RECORDS + 1 == info["records"] + 1
    assert all(line.count("|") == 8 for line in lines)
    skipped = Skipped()
    allocations = list(read_allocations(out / "sacct.txt", timezone="UTC", skipped=skipped))
    counts = info["counts"]
    assert len(allocations) == counts["jobs_started"]
    assert skipped.counts == {
        "step": counts["step_lines"],
        "not_started": counts["cancelled_while_pending"],
        "pending": counts["pending_extra"] + counts["jobs_pending_at_end"],
    }
    assert sum(skipped.counts.values()) == info["skip_records"] >= 0.01 * RECORDS
    assert min(counts["step_lines"], counts["cancelled_while_pending"], counts["pending_extra"]) > 0
    assert sum("_[5-10]" in line for line in lines) == 2  # pending array ranges
    arrays = [a for a in allocations if "_" in a.job_id]
    assert len(arrays) == counts["array_elements"] > 0
    running = [a for a in allocations if a.end is None]
    assert len(running) == counts["jobs_running"] and {a.state for a in running} == {"RUNNING"}
    multi = [a for a in allocations if a.num_nodes > 1]
    assert len(multi) == counts["multi_node_started"] > len(allocations) / 2
    for a in allocations:
        assert len(expand_hostlist(a.nodes)) == a.num_nodes
        assert a.submit <= a.start and (a.end is None or a.start <= a.end)


def test_no_node_is_held_by_two_jobs_at_once(small):
    """Each node's jobs, by start: their [start, end) intervals never overlap (a job may start
    the second another ends on the same node: the simulator frees nodes at once)."""
    out, _ = small
    held = defaultdict(list)
    for a in read_allocations(out / "sacct.txt", timezone="UTC"):
        for node in expand_hostlist(a.nodes):
            held[node].append((a.start, a.end if a.end is not None else float("inf"), a.job_id))
    assert set(held) <= {f"n{i}" for i in range(1, NODES + 1)}
    for node, spans in held.items():
        spans.sort()  # by start: a job overlapping any later one overlaps the next one
        for (_, end, job), (start, _, later) in zip(spans, spans[1:]):
            assert end <= start, (node, job, later)


def test_generation_json_says_what_was_written(small):
    out, info = small
    assert json.loads((out / "generation.json").read_text()) == info
    assert (
        info["workload"]["jobs"]
        + info["counts"]["step_lines"]
        + info["counts"]["cancelled_while_pending"]
        + info["counts"]["pending_extra"]
        == RECORDS
    )
    assert "benchmarks.audit_scale generate" in info["command"]


def test_bad_sizes_are_one_line_errors(tmp_path, capsys):
    assert audit_scale.main(["generate", "--out", str(tmp_path), "--records", "10"]) == 2
    assert capsys.readouterr().err.startswith("tjap: error: --records must be at least 1000")
    assert audit_scale.main(["run", "--dir", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
    assert "sacct.txt is missing" in capsys.readouterr().err


def test_run_measures_the_audit_of_the_records(small, tmp_path):
    """``run`` audits the records in a child process and reads back what the audit counted: every
    started multi-node job audited, every skip record skipped for its reason."""
    out, info = small
    row = audit_scale.run(out, tmp_path, cpus=1, warmup=False)
    counts = info["counts"]
    assert row["returncode"] == 0, row["stderr_tail"]
    assert row["records"] == RECORDS and row["allocations"] == counts["jobs_started"]
    assert row["audited_jobs"] == counts["multi_node_started"]
    assert row["skipped"] == {
        "below_min_nodes": counts["jobs_started"] - counts["multi_node_started"],
        "step": counts["step_lines"],
        "not_started": counts["cancelled_while_pending"],
        "pending": counts["pending_extra"] + counts["jobs_pending_at_end"],
    }
    assert row["wall_s"] > 0 and row["peak_mb"] > 0 and row["cpus"] == 1
    assert "tjap audit" in row["commands"]["audit"] and "--quiet" in row["commands"]["audit"]
    assert json.loads((tmp_path / "audit_scale.json").read_text()) == row
