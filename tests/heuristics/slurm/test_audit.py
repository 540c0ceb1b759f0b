"""tjap audit (tjap.slurm.audit) against brute force on small random histories, its filters and
reasons, and the command line."""

import itertools
import json
from datetime import datetime, timezone

import numpy as np
import pytest

import tjap
from tjap.cli import main
from tjap.core.errors import InvalidInputError
from tjap.heuristics.slurm.tree import slurm_tree_nodes
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.hostlist import compress_hostlist, expand_hostlist
from tjap.placement.tree.topology import Topology

TREE = """SwitchName=s1 Nodes=n[1-3]
SwitchName=s2 Nodes=n[4-7]
SwitchName=s3 Nodes=n[8-9]
SwitchName=a Switches=s[1-2]
SwitchName=top Switches=a,s3
"""
#: every leaf at one depth: the bound runs in the compiled kernel (TREE: the Python fallback)
EVEN_TREE = """SwitchName=l1 Nodes=n[1-3]
SwitchName=l2 Nodes=n[4-5]
SwitchName=l3 Nodes=n[6-9]
SwitchName=a Switches=l[1-2]
SwitchName=b Switches=l3
SwitchName=top Switches=a,b
"""
HEADER = "JobID|Partition|Submit|Start|End|NNodes|NodeList|State"


def stamp(t: int) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def random_jobs(rng, topo: Topology, count: int):
    """Jobs placed on free nodes of a random schedule: (job id, start, end, node ids)."""
    jobs, running, t = [], [], 1_790_000_000
    for j in range(count):
        t += int(rng.integers(0, 4))
        running = [r for r in running if r[2] > t]
        busy = {v for r in running for v in r[3]}
        free = [v for v in range(topo.num_nodes) if v not in busy]
        if not free:
            continue
        size = int(rng.integers(1, min(5, len(free)) + 1))
        nodes = sorted(rng.choice(free, size, replace=False).tolist())
        job = (str(100 + j), t, t + int(rng.integers(0, 9)), nodes)
        jobs.append(job)
        running.append(job)
    return jobs


def sacct_text(topo, jobs) -> list[str]:
    lines = [HEADER]
    for job_id, start, end, nodes in jobs:
        names = compress_hostlist([topo.node_names[v] for v in nodes])
        lines.append(
            f"{job_id}|batch|{stamp(start)}|{stamp(start)}|{stamp(end)}|{len(nodes)}|"
            f"{names}|COMPLETED"
        )
    return lines


def jobcomp_text(topo, jobs) -> list[str]:
    lines = []
    for job_id, start, end, nodes in sorted(jobs, key=lambda j: (j[2], j[0])):  # by end
        names = compress_hostlist([topo.node_names[v] for v in nodes])
        lines.append(
            f"JobId={job_id} UserId=u(1) GroupId=g(1) Name=wrap JobState=COMPLETED "
            f"Partition=batch TimeLimit=5 StartTime={stamp(start)} EndTime={stamp(end)} "
            f"NodeList={names} NodeCnt={len(nodes)} ProcCnt={len(nodes)} WorkDir=/tmp "
            f"SubmitTime={stamp(start)} ExitCode=0:0"
        )
    return lines


def brute_idle(jobs, k: int, num_nodes: int) -> list[int]:
    """Idle nodes at job k's start, from the definition: not held by a job started before it
    (ties by job id) that ended in its second or later; its own nodes idle."""
    _, start, _, own = jobs[k]
    key = lambda j: (j[1], int(j[0]))
    busy = {
        v
        for j in jobs
        if j is not jobs[k] and key(j) < key(jobs[k]) and j[2] >= start
        for v in j[3]
    }
    return [v for v in range(num_nodes) if v not in busy or v in own]


def brute_optimum(topo, idle: list[int], size: int) -> float:
    m = len(idle)
    return min(job_cost(topo, [idle[(p + i) % m] for i in range(size)]) for p in range(m))


def brute_bound(topo, idle: list[int], size: int) -> float:
    return min(job_cost(topo, list(c)) for c in itertools.combinations(idle, size))


@pytest.mark.parametrize("tree", [TREE, EVEN_TREE])
@pytest.mark.parametrize("seed", range(10))
def test_every_measure_equals_brute_force(seed, tree):
    topo = Topology.from_slurm(tree)
    rng = np.random.default_rng(seed)
    jobs = random_jobs(rng, topo, 25)
    result = tjap.audit(sacct_text(topo, jobs), topo, timezone="UTC", worst=3)
    data = result.to_dict()
    multi = [k for k, j in enumerate(jobs) if len(j[3]) >= 2]
    assert {e["job_id"] for e in data["jobs"]} == {jobs[k][0] for k in multi}
    by_id = {j[0]: k for k, j in enumerate(jobs)}
    for entry in data["jobs"]:
        k = by_id[entry["job_id"]]
        _, start, _, own = jobs[k]
        idle = brute_idle(jobs, k, topo.num_nodes)
        assert set(own) <= set(idle)
        assert not entry["overlap"]
        size = len(own)
        assert entry["size"] == size and entry["idle"] == len(idle)
        assert entry["cost"] == pytest.approx(job_cost(topo, own))
        assert entry["optimum"] == pytest.approx(brute_optimum(topo, idle, size))
        assert entry["bound"] == pytest.approx(brute_bound(topo, idle, size))
        assert entry["floor"] == pytest.approx(brute_bound(topo, list(range(topo.num_nodes)), size))
        tree = slurm_tree_nodes(topo, [topo.node_names[v] for v in idle], size)
        assert entry["slurm_tree"] == pytest.approx(job_cost(topo, tree))
        assert entry["slurm_tree_same"] == (sorted(tree.tolist()) == own)
        for key in ("optimum_nodes", "bound_nodes", "slurm_tree_nodes"):  # idle, right size
            got = topo.node_indices(expand_hostlist(entry[key]))
            assert len(set(got.tolist())) == size and set(got.tolist()) <= set(idle)
        assert entry["floor"] <= entry["bound"] + 1e-9 <= entry["optimum"] + 2e-9
        assert entry["bound"] <= entry["cost"] + 1e-9
    s = data["summary"]
    assert s["jobs"] == len(data["jobs"])
    assert s["cost"] == pytest.approx(sum(e["cost"] for e in data["jobs"]))
    assert s["differing_jobs"] == [e["job_id"] for e in data["jobs"] if not e["slurm_tree_same"]]
    assert sum(g["jobs"] for g in s["by_size"]) == s["jobs"]
    gaps = sorted((e["cost"] - e["optimum"] for e in data["jobs"]), reverse=True)[:3]
    assert [w["cost"] - w["optimum"] for w in s["worst"]] == pytest.approx(gaps)


@pytest.mark.parametrize("seed", range(4))
def test_sacct_and_jobcomp_give_the_same_numbers(seed):
    topo = Topology.from_slurm(TREE)
    jobs = random_jobs(np.random.default_rng(seed), topo, 30)
    a = tjap.audit(sacct_text(topo, jobs), topo, timezone="UTC").to_dict()
    b = tjap.audit(jobcomp_text(topo, jobs), topo, timezone="UTC").to_dict()
    assert a["records"]["format"] == "sacct" and b["records"]["format"] == "jobcomp"
    key = lambda e: e["job_id"]
    assert sorted(a["jobs"], key=key) == sorted(b["jobs"], key=key)
    assert a["summary"] == b["summary"]


def test_filters_and_reasons_count_every_record():
    topo = Topology.from_slurm(TREE)
    t = 1_790_000_000
    lines = [
        HEADER,
        f"1|batch|{stamp(t)}|{stamp(t)}|{stamp(t + 50)}|2|n[1-2]|COMPLETED",
        f"2|gpu|{stamp(t)}|{stamp(t + 10)}|{stamp(t + 50)}|2|n[4-5]|COMPLETED",
        f"3|batch|{stamp(t)}|{stamp(t + 20)}|{stamp(t + 50)}|2|n6,z1|COMPLETED",
        f"4+0|batch|{stamp(t)}|{stamp(t + 30)}|{stamp(t + 50)}|2|n[8-9]|COMPLETED",
        f"5|batch|{stamp(t)}|{stamp(t + 40)}|{stamp(t + 50)}|1|n3|COMPLETED",
        f"6|batch|{stamp(t)}|{stamp(t + 100)}|{stamp(t + 150)}|2|n[1-2]|COMPLETED",
    ]
    r = tjap.audit(lines, topo, timezone="UTC", partition="batch", end=t + 60)
    assert [e["job_id"] for e in r.to_dict()["jobs"]] == ["1"]
    assert r.skipped == {
        "other_partition": 1,
        "unknown_nodes": 1,
        "heterogeneous": 1,
        "below_min_nodes": 1,
        "outside_window": 1,
    }
    # the skipped jobs' nodes still count as busy: job 6 (at t+100) sees none; job 1 saw none
    r = tjap.audit(lines, topo, timezone="UTC", start=stamp(t + 5))
    first = r.to_dict()["jobs"][0]
    assert first["job_id"] == "2" and first["idle"] == topo.num_nodes - 2  # job 1 holds n[1-2]


def test_timezone_reads_local_times():
    topo = Topology.from_slurm(TREE)
    line = "1|batch|2026-07-01T12:00:00|2026-07-01T12:00:00|2026-07-01T13:00:00|2|n[1-2]|COMPLETED"
    utc = tjap.audit([HEADER, line], topo, timezone="UTC").to_dict()["jobs"][0]
    berlin = tjap.audit([HEADER, line], topo, timezone="Europe/Berlin").to_dict()["jobs"][0]
    assert utc["start_s"] - berlin["start_s"] == 7200  # CEST is UTC+2
    assert berlin["start"] == "2026-07-01T12:00:00+02:00"


def test_bad_options_are_one_line_errors():
    topo = Topology.from_slurm(TREE)
    for kwargs, match in (
        ({"fmt": "csv"}, "format"),
        ({"slurm": "21.08"}, "slurm"),
        ({"min_nodes": 1}, "min_nodes"),
        ({"convention": "x"}, "convention"),
        ({"timezone": "Mars/Olympus"}, "IANA"),
        ({"start": "yesterday"}, "date"),
        ({"start": "2026-02-01", "end": "2026-01-01"}, "after"),
    ):
        with pytest.raises(InvalidInputError, match=match):
            tjap.audit([HEADER], topo, **kwargs)
    with pytest.raises(InvalidInputError):
        tjap.audit([HEADER], 42)


def test_cli_summary_json_and_errors(tmp_path, capsys):
    topo = Topology.from_slurm(TREE)
    (tmp_path / "topology.conf").write_text(TREE)
    jobs = random_jobs(np.random.default_rng(5), topo, 20)
    records = tmp_path / "sacct.txt"
    records.write_text("\n".join(sacct_text(topo, jobs)) + "\n")
    args = [str(records), "--topology", str(tmp_path / "topology.conf"), "--timezone", "UTC"]
    assert main(["audit", *args]) == 0
    out = capsys.readouterr().out
    assert "above the empty-cluster floor" in out and "slurm-tree" in out
    assert main(["audit", *args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tjap_audit"] == 1 and data["jobs"]
    assert data == json.loads(
        json.dumps(tjap.audit(records, tmp_path / "topology.conf", timezone="UTC").to_dict())
    )
    assert main(["audit", *args, "--csv", str(tmp_path / "out" / "jobs.csv"), "--quiet"]) == 0
    capsys.readouterr()
    import csv

    from tjap.cli.audit import JOB_FIELDS

    rows = list(csv.DictReader(open(tmp_path / "out" / "jobs.csv")))
    assert [r["job_id"] for r in rows] == [j["job_id"] for j in data["jobs"]]
    assert tuple(rows[0]) == JOB_FIELDS
    assert float(rows[0]["cost"]) == pytest.approx(data["jobs"][0]["cost"])
    (tmp_path / "file").write_text("x")
    assert main(["audit", *args, "--report", str(tmp_path / "file")]) == 2
    assert "--report" in capsys.readouterr().err
    (tmp_path / "junk.txt").write_text("hello world\n")
    assert (
        main(["audit", str(tmp_path / "junk.txt"), "--topology", str(tmp_path / "topology.conf")])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("tjap: error:") and len(err.strip().splitlines()) == 1
    assert main(["audit", str(records), "--topology", str(tmp_path / "missing.conf")]) == 2


def test_records_that_share_a_running_node_are_flagged_not_dropped():
    topo = Topology.from_slurm(TREE)
    t = 1_790_000_000
    lines = [
        HEADER,
        f"1|batch|{stamp(t)}|{stamp(t)}|{stamp(t + 50)}|2|n[1-2]|COMPLETED",
        f"2|batch|{stamp(t)}|{stamp(t + 50)}|{stamp(t + 60)}|2|n[1-2]|COMPLETED",  # at its end
        f"3|batch|{stamp(t)}|{stamp(t + 55)}|{stamp(t + 60)}|2|n[2-3]|COMPLETED",
    ]  # job 2's n2
    jobs = {e["job_id"]: e for e in tjap.audit(lines, topo, timezone="UTC").to_dict()["jobs"]}
    assert not jobs["1"]["overlap"] and not jobs["2"]["overlap"] and jobs["3"]["overlap"]
    # job 2 starts in the second job 1 ends: n[1-2] are its own, so idle; n3 was never held
    assert jobs["2"]["idle"] == topo.num_nodes
    assert jobs["3"]["cost"] == pytest.approx(job_cost(topo, [1, 2]))


BLOCKS = """BlockName=b1 Nodes=g[01-04]
BlockName=b2 Nodes=g[05-08]
BlockName=b3 Nodes=g[09-12]
BlockSizes=4,8
"""


@pytest.mark.parametrize("seed", range(4))
def test_block_topologies_compare_with_slurms_block_rule(seed, tmp_path):
    from tjap.heuristics.slurm.block import slurm_block_nodes

    path = tmp_path / "topology.conf"
    path.write_text(BLOCKS)
    topo = Topology.from_file(path)
    jobs = random_jobs(np.random.default_rng(seed), topo, 25)
    data = tjap.audit(sacct_text(topo, jobs), path, timezone="UTC").to_dict()
    assert data["options"]["slurm_rule"] == "topology/block"
    by_id = {j[0]: k for k, j in enumerate(jobs)}
    for entry in data["jobs"]:
        k = by_id[entry["job_id"]]
        idle = np.zeros(topo.num_nodes, bool)
        idle[brute_idle(jobs, k, topo.num_nodes)] = True
        block = slurm_block_nodes(topo, idle, entry["size"])
        if block is None:
            assert entry["slurm_tree"] is None and not entry["slurm_tree_same"]
        else:
            assert entry["slurm_tree"] == pytest.approx(job_cost(topo, block))
            assert entry["slurm_tree_same"] == (block == jobs[k][3])
        assert entry["bound"] == pytest.approx(
            brute_bound(topo, brute_idle(jobs, k, topo.num_nodes), entry["size"])
        )
    tree = tjap.audit(sacct_text(topo, jobs), path, timezone="UTC", slurm_rule="tree").to_dict()
    assert tree["options"]["slurm_rule"] == "topology/tree"
    assert [e["cost"] for e in tree["jobs"]] == [e["cost"] for e in data["jobs"]]


def test_an_interrupted_audit_keeps_whole_jobs_and_says_so(monkeypatch, tmp_path, capsys):
    from tjap.heuristics.slurm import audit_loop

    topo = Topology.from_slurm(EVEN_TREE)
    jobs = random_jobs(np.random.default_rng(1), topo, 40)
    full = tjap.audit(sacct_text(topo, jobs), topo, timezone="UTC").to_dict()
    real, calls = audit_loop._measure_chunk, []

    def stopped_after_two_chunks(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(audit_loop, "_measure_chunk", stopped_after_two_chunks)
    monkeypatch.setitem(audit_loop.measure.__kwdefaults__, "chunk", 5)
    monkeypatch.setattr(audit_loop, "CHUNK_S", 1e9)  # chunks of 5 all along
    monkeypatch.setattr(audit_loop, "MAX_GROWTH", 1)
    part = tjap.audit(sacct_text(topo, jobs), topo, timezone="UTC")
    assert part.interrupted and part.num_jobs == 10
    assert part.to_dict()["jobs"] == full["jobs"][:10]
    assert part.summary_text().startswith("INTERRUPTED")
    records = tmp_path / "sacct.txt"
    records.write_text("\n".join(sacct_text(topo, jobs)) + "\n")
    (tmp_path / "t.conf").write_text(EVEN_TREE)
    calls.clear()
    code = main(
        [
            "audit",
            str(records),
            "--topology",
            str(tmp_path / "t.conf"),
            "--timezone",
            "UTC",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 130 and "interrupted" in err
    data = json.loads(out)
    assert data["interrupted"] is True and data["summary"]["jobs"] == 10 and data["jobs"] == []


def test_topology_slurm_reads_the_running_slurms(monkeypatch):
    from tjap.placement.slurm import readers

    scontrol = """SwitchName=top Level=1 LinkSpeed=1 Nodes=n[1-9] Switches=a,s3
SwitchName=a Level=1 LinkSpeed=1 Nodes=n[1-7] Switches=s[1-2]
SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-3]
SwitchName=s2 Level=0 LinkSpeed=1 Nodes=n[4-7]
SwitchName=s3 Level=0 LinkSpeed=1 Nodes=n[8-9]"""
    conf = readers.show_topology_conf(scontrol)  # what the live reader returns
    monkeypatch.setattr(readers, "live_topology_conf", lambda *a, **k: conf)
    topo = Topology.from_slurm(TREE)
    jobs = random_jobs(np.random.default_rng(2), topo, 20)
    live = tjap.audit(sacct_text(topo, jobs), "slurm", timezone="UTC").to_dict()
    assert live["topology"]["source"].startswith("the running Slurm")
    assert (
        live["jobs"] == tjap.audit(sacct_text(topo, jobs), topo, timezone="UTC").to_dict()["jobs"]
    )


def test_node_index_reads_and_writes_hostlists_as_expand_and_compress_do():
    import random

    from tjap.placement.tree.hostlist import NodeIndex

    names = (
        [f"n{i}" for i in range(1, 13)]
        + [f"gpu{i:03d}" for i in range(1, 11)]
        + ["x7y"]
        + [f"r001n{i:02d}" for i in range(1, 6)]
        + [f"r002n{i:02d}" for i in range(1, 13)]
        + ["login"]
    )
    index = NodeIndex(names)
    rng = random.Random(0)
    for _ in range(2000):
        pick = sorted(rng.sample(range(len(names)), rng.randint(1, 8)))
        extra = [] if rng.random() < 0.7 else ["zz9", "n99", "gpu011"][: rng.randint(1, 3)]
        listed = [names[v] for v in pick] + extra
        rng.shuffle(listed)
        ids, complete = index.ids(compress_hostlist(listed))
        assert ids.tolist() == pick and complete == (not extra)
        assert expand_hostlist(index.hostlist(pick)) == [names[v] for v in pick]
    assert index.ids("n[1-2]x[3]")[0].tolist() == []  # read by expand_hostlist
    with pytest.raises(InvalidInputError):
        index.ids("n[5-3]")
