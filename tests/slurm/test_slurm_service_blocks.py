"""``tjap slurm place`` on a ``topology/block`` cluster (Slurm 24.11): segments read from the batch
script, windows solved under Slurm's block rule, segmented jobs steered with ``ExcNodeList``,
refused steers undone.

The first tests need no Slurm (the script reader, the window record on a block tree, the
reserved nodes of a steered job). The ones marked ``slurm`` start a 16-node 24.11 cluster in 4
base blocks of 4 (``BlockSizes=4,8,16``; skipped with the reason when 24.11 is not built, see
``.ci/build-slurm-newer``): a window placed exactly as logged; a job whose cheapest nodes break
Slurm's rule placed within it; a segmented job steered by its exclusion list; a segment Slurm
hides from the service (given on ``sbatch``'s command line) refused and undone; a node drained
between reading and updating; the service stopped and started again with jobs held.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import constraint_oracle as oracle
import pytest
import slurm_waits

import tjap
from tjap.cli.slurm import describe
from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.client import PendingJob, SlurmClient
from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig, newer_slurm_available
from tjap.placement.slurm.queue import segment_problem
from tjap.placement.slurm.readers import State, pinned_nodes, read_state, script_segment
from tjap.placement.tree.arcs import violations
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.placement.tree.jobs import Job
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window
from tjap.slurm.service import PlacementService, ServiceConfig

ROOT = Path(__file__).resolve().parents[2]
#: 16 nodes in 4 base blocks of 4; Slurm plans blocks of 4, 8 and 16 nodes.
BLOCKS_CONF = (
    "".join(f"BlockName=b{i} Nodes=n[{4 * i - 3}-{4 * i}]\n" for i in range(1, 5))
    + "BlockSizes=4,8,16\n"
)
BLOCKS = Topology.from_slurm(BLOCKS_CONF)
NAMES = list(BLOCKS.node_names)

_REASON = newer_slurm_available()
needs_newer = [
    pytest.mark.slurm,
    pytest.mark.skipif(_REASON is not None, reason=f"no Slurm 24.11: {_REASON}"),
]


def job(job_id, nodes, *, reason="JobHeldUser", req="", exc="") -> PendingJob:
    return PendingJob(
        job_id=job_id,
        job_text=str(job_id),
        state="PENDING",
        reason=reason,
        nodes=nodes,
        submit_time=job_id,
        user="u",
        account="",
        partition="main",
        priority=0,
        req_nodes=req,
        exc_nodes=exc,
        features="",
        name="j",
    )


def dry_service(**options) -> PlacementService:
    return PlacementService(
        ServiceConfig(**{"time_limit_s": None, "dry_run": True, **options}),
        client=SlurmClient({"SLURM_CONF": "/nonexistent/slurm.conf"}),
    )


def block_state(idle, jobs, segments=None) -> State:
    return State(
        "main",
        BLOCKS,
        list(idle),
        list(jobs),
        read_at=1.0,
        nodes=NAMES,
        partition_nodes=NAMES,
        blocks=True,
        segments=dict(segments or {}),
    )


def window_of(rec: dict, segments: dict | None = None) -> tuple[Window, list]:
    """The window a record placed (its placed jobs, with the rule) and their node ids."""
    placed = [e for e in rec["jobs"] if e["nodes"]]
    window = Window(
        BLOCKS,
        expand_hostlist(rec["idle"]),
        [Job(e["nodes_requested"], segment=e["segment"], slurm_rule=True) for e in placed],
    )
    return window, [BLOCKS.node_indices(expand_hostlist(e["nodes"])) for e in placed]


# -- without Slurm -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "script, segment",
    [
        ("#!/bin/sh\n#SBATCH --segment=2\n#SBATCH -N 4\nsleep 60\n", 2),
        ("#!/bin/bash\n#SBATCH -N 8 --segment 4 -J 'a b'\n\n# a comment\nsrun hostname\n", 4),
        ("#!/bin/sh\n#SBATCH --segment=2\n#SBATCH --segment=4\nsleep 1\n", 4),  # the last wins
        ("#!/bin/sh\n#SLURM --segment=2\nsleep 1\n", 2),
        ("#!/bin/sh\nsleep 1\n#SBATCH --segment=2\n", None),  # after the first command
        ("#!/bin/sh\n  #SBATCH --segment=2\nsleep 1\n", None),  # not at the line's start
        ("#!/bin/sh\n#SBATCH --segment=0\nsleep 1\n", None),
        ("#!/bin/sh\n# This script was created by sbatch --wrap.\n\nsleep 60\n", None),
        ("#!/bin/sh\n#SBATCH -N 2\n#SBATCH hetjob\n#SBATCH --segment=2\nsleep 1\n", None),
    ],
)
def test_the_segment_is_read_from_the_scripts_directives(script, segment):
    assert script_segment(script) == segment


def test_segments_slurm_never_places_are_named():
    assert segment_problem(8, None, 4) is None and segment_problem(8, 4, 4) is None
    assert segment_problem(8, 3, 4) == "its --segment=3 does not divide its 8 nodes"
    assert "larger than a base block (4 nodes)" in segment_problem(16, 8, 4)


def test_a_released_steer_holds_its_nodes():
    assert pinned_nodes(job(1, 2, req="n[3-4]"), NAMES) == ["n3", "n4"]
    left = [n for n in NAMES if n not in ("n1", "n2", "n13", "n14")]
    assert pinned_nodes(job(1, 4, exc=",".join(left)), NAMES) == ["n1", "n2", "n13", "n14"]
    # an exclusion that leaves more nodes than the job asks for pins nothing
    assert pinned_nodes(job(1, 2, exc="n[1-8]"), NAMES) == []
    assert pinned_nodes(job(1, 2), NAMES) == []


def test_read_state_reserves_the_nodes_of_released_steers(tmp_path):
    """Without Slurm: a fake client whose squeue shows a released job steered by exclusion."""
    left = ["n13", "n14", "n15", "n16"]
    steered = job(7, 4, reason="None", exc=",".join(n for n in NAMES if n not in left))

    class Fake(SlurmClient):
        def partition_nodes(self, partition=None, nodelist=None):
            from tjap.placement.slurm.client import NodeState

            return [NodeState(n, "idle", 1, 0, 1, 0, ("main",)) for n in NAMES]

        def pending(self, **kwargs):
            return [steered, job(8, 2)]

    state = read_state(Fake(), "main", BLOCKS, easy=False)
    assert state.reserved == left and not set(left) & set(state.idle)
    assert state.partition_nodes == NAMES


def test_block_window_keeps_slurms_rule_and_logs_what_it_costs():
    # n4 and n5 busy: the cheapest 4 nodes beside a 10-node job (n1-n3 + n6) span two base
    # blocks, which Slurm refuses; under the rule the 4-node job takes b4
    idle = [n for n in NAMES if n not in ("n4", "n5")]
    svc = dry_service()
    rec = svc.decide(block_state(idle, [job(1, 10), job(2, 4)]))
    window, ids = window_of(rec)
    assert rec["topology"] == "block" and rec["winner"] == "scas"
    assert [(e["job_id"], e["mechanism"], e["segment"]) for e in rec["jobs"]] == [
        (2, "reqnodelist", None),
        (1, "reqnodelist", None),
    ]
    assert rec["jobs"][0]["nodes"] == "n[13-16]" and rec.excluded == {}
    assert oracle.keeps(window, ids) and not violations(window, ids)
    assert rec["cost"] == pytest.approx(oracle.objective(window, ids))
    assert rec["cost"] == rec["scas_optimum"] == pytest.approx(tjap.solve(window, "dp").objective)
    # Slurm's own choice, the smaller job first, is the same here
    assert rec["slurm_block_cost"] == pytest.approx(tjap.solve(window, "slurm-block").objective)
    free = tjap.solve(Window(BLOCKS, idle, [4, 10]), "dp")
    assert violations(window, free.assignment)
    assert rec["unconstrained_optimum"] == pytest.approx(free.objective)
    assert rec["rule_price"] == pytest.approx(rec["scas_optimum"] - free.objective)
    assert rec["rule_price"] > 0


def test_a_segmented_job_is_steered_by_excluding_every_other_node():
    idle = [n for n in NAMES if n not in ("n3", "n6", "n12")]
    rec = dry_service().decide(block_state(idle, [job(1, 4), job(2, 2)], {1: 2}))
    (seg,) = [e for e in rec["jobs"] if e["job_id"] == 1]
    assert (seg["segment"], seg["mechanism"]) == (2, "excnodelist")
    excluded = expand_hostlist(rec.excluded[1])
    assert sorted(excluded + expand_hostlist(seg["nodes"]), key=NAMES.index) == NAMES
    # Slurm's own choice scatters the two pairs over the fullest blocks; the service keeps them
    # in one
    assert rec["cost"] < rec["slurm_block_cost"]
    window, ids = window_of(rec)
    assert oracle.keeps(window, ids)
    head, *lines = describe(rec.record)
    assert f"slurm-block {rec['slurm_block_cost']:g}" in head and "without it" in head
    assert any(line.startswith("  job 1 (4 nodes, segments of 2, waited 0)") for line in lines)
    # one segment (the whole job): a node list works, as for an unsegmented job
    rec = dry_service().decide(block_state(idle, [job(1, 4)], {1: 4}))
    assert rec["jobs"][0]["mechanism"] == "reqnodelist" and rec.excluded == {}


def test_block_window_never_costs_more_than_slurm_block_nor_the_rules_optimum():
    svc = dry_service()
    for busy, sizes, segments in [
        (("n3", "n6", "n12"), [4], {1: 2}),
        (("n3", "n6", "n12"), [6, 3], {1: 2, 2: 3}),
        (("n10", "n14", "n15"), [9, 4], {}),
        (("n1", "n8"), [2, 2, 4, 5], {3: 2}),
    ]:
        idle = [n for n in NAMES if n not in busy]
        rec = svc.decide(block_state(idle, [job(i + 1, n) for i, n in enumerate(sizes)], segments))
        window, ids = window_of(rec)
        assert all(e["nodes"] for e in rec["jobs"]), rec["jobs"]
        assert oracle.keeps(window, ids)
        assert rec["cost"] <= rec["scas_optimum"] + 1e-9
        if rec["slurm_block_cost"] is not None:
            assert rec["cost"] <= rec["slurm_block_cost"] + 1e-9


def test_jobs_the_rule_cannot_place_stay_held_and_bad_segments_are_ignored():
    svc = dry_service()
    # one idle node per base block but b4: a 2-node job fits only b4, a 3-node job nowhere
    idle = ["n1", "n5", "n9", "n13", "n14"]
    rec = svc.decide(block_state(idle, [job(1, 3), job(2, 2), job(3, 4), job(4, 8)], {3: 3, 4: 8}))
    assert [e["job_id"] for e in rec["ignored"]] == [3, 4]
    assert "does not divide its 4 nodes" in rec["ignored"][0]["reason"]
    assert "larger than a base block" in rec["ignored"][1]["reason"]
    by_id = {e["job_id"]: e for e in rec["jobs"]}
    assert by_id[2]["nodes"] == "n[13-14]" and by_id[2]["outcome"] is None
    # a job no idle block holds stays out of the window, so it keeps no later job out
    assert 1 not in by_id and [w["job_id"] for w in rec["waiting"]] == [1]
    assert rec["held_by_rule"] == [
        {
            "job_id": 1,
            "nodes_requested": 3,
            "reason": "Slurm's block rule: no block of level 1 has 3 idle nodes",
        }
    ]
    rec, _ = svc._finish(svc.apply(rec))
    assert svc.tracker.get(1) == 1 and svc.tracker.get(2) == 0  # held: one window waited
    rec = dry_service().decide(
        block_state(["n1", "n2", "n13", "n14", "n15"], [job(1, 2), job(2, 3)], {})
    )
    assert [e["nodes"] for e in rec["jobs"]] == ["n[1-2]", "n[13-15]"]
    # two jobs that each fit alone (in b4) but not together: the later one waits
    rec = dry_service().decide(block_state(["n1", "n13", "n14", "n15"], [job(1, 2), job(2, 2)], {}))
    assert [e["nodes"] for e in rec["jobs"]] == ["n[13-14]", None]
    assert rec["jobs"][1]["reason"] == (
        "does not fit beside the window's earlier jobs under Slurm's block rule"
    )


@pytest.mark.parametrize("compare, calls", [(False, 1), (True, 2)])
def test_a_block_window_is_one_solve_of_guarded(monkeypatch, compare, calls):
    """The decision is one ``solve(window, "guarded")`` of the window's jobs under the rule
    (``compare`` adds one solve of the same jobs without it, for the rule's price)."""
    import tjap.slurm.service as service

    seen = []

    def counted(window, method, **options):
        seen.append((method, [job.slurm_rule for job in window.jobs]))
        return tjap.solve(window, method, **options)

    monkeypatch.setattr(service, "solve", counted)
    idle = [n for n in NAMES if n not in ("n3", "n6", "n12")]
    svc = dry_service(compare=compare)
    rec = svc.decide(block_state(idle, [job(1, 6), job(2, 3), job(3, 2)], {1: 2, 2: 3}))
    assert all(e["nodes"] for e in rec["jobs"])
    assert len(seen) == calls
    assert seen[0] == ("guarded", [True, True, True])
    assert rec["winner"] in ("scas", "slurm-block")
    assert rec["cost"] <= min(rec["scas_optimum"], rec["slurm_block_cost"]) + 1e-9
    if compare:
        assert seen[1] == ("auto", [False, False, False]) and rec["rule_price"] is not None


def test_methods_without_constraints_are_refused_on_a_block_cluster():
    state = block_state(NAMES, [job(1, 4)])
    with pytest.raises(InvalidInputError, match="does not take Slurm's block rule"):
        dry_service(method="slurm-tree").decide(state)
    rec = dry_service(method="dp").decide(state)
    assert rec["method"] == "dp" and rec["slurm_block_cost"] == rec["cost"] == 6000.0


# -- on a real Slurm 24.11 -------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    if _REASON is not None:
        pytest.skip(f"no Slurm 24.11: {_REASON}")
    config = LocalSlurmConfig.for_blocks(BLOCKS, slurm="24.11", extra={"MessageTimeout": "2"})
    with LocalSlurm(config) as slurm:
        yield slurm


@pytest.fixture
def slurm(cluster):
    yield cluster
    client = cluster.client()
    client.cancel([j.job_id for j in client.queue()])
    for node in client.partition_nodes():
        if node.state.startswith("drain"):
            client.resume(node.name)
    cluster.wait_idle(30)


def jobs_now(client) -> dict:
    """job id -> (state, reason, allocated nodes, ReqNodeList, ExcNodeList), every state."""
    out = client.run(["squeue", "-h", "-t", "all", "-o", "%i|%T|%r|%N|%n|%x"]).stdout
    return {int(row[0]): tuple(row[1:]) for row in (ln.split("|") for ln in out.splitlines())}


def wait_for(predicate, timeout_s: float, what: str):
    return slurm_waits.wait_for(predicate, timeout_s, what)


def wait_running(client, ids, timeout_s: float = 20) -> dict:
    return slurm_waits.wait_running(client, ids, jobs_now, timeout_s)


def busy(client, *names) -> list[int]:
    """Filler jobs running on ``names``."""
    ids = [
        client.submit(
            nodes_or_tasks=1,
            time_limit_min=3,
            command="sleep 120",
            output="/dev/null",
            name="busy",
            extra_args=["-N", "1", "-w", n],
        )
        for n in names
    ]
    wait_running(client, ids)
    return ids


def held(client, tmp_path, n: int, segment: int | None = None, *, extra=()) -> int:
    """A held job of ``n`` nodes; with ``segment`` its script asks for it (#SBATCH --segment)."""
    script = tmp_path / f"job-{n}-{segment}-{time.monotonic_ns()}.sh"
    script.write_text(
        "#!/bin/sh\n" + (f"#SBATCH --segment={segment}\n" if segment else "") + "sleep 120\n"
    )
    out = client.run(
        [
            "sbatch",
            "--parsable",
            "--hold",
            "-N",
            str(n),
            "-t",
            "3",
            "-o",
            "/dev/null",
            *extra,
            str(script),
        ]
    ).stdout
    return int(out.strip().split(";")[0])


def service(slurm, tmp_path, **options) -> PlacementService:
    hook = options.pop("before_update", None)
    return PlacementService(
        ServiceConfig(**{"time_limit_s": 5, **options}),
        env=slurm.env,
        before_update=hook,
        log_path=tmp_path / "log.jsonl",
    )


def log_lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() else []


def ran_as_logged(client, rec: dict) -> dict:
    placed = [e for e in rec["jobs"] if e["outcome"] == "placed"]
    rows = wait_running(client, [e["job_id"] for e in placed])
    for e in placed:
        assert expand_hostlist(rows[e["job_id"]][2]) == expand_hostlist(e["nodes"]), e
    return rows


def no_bad_constraints(client) -> None:
    rows = jobs_now(client)
    assert not [i for i, r in rows.items() if r[1] == "BadConstraints"], rows


@pytest.mark.slurm
def test_a_block_window_runs_exactly_where_it_was_logged(slurm, tmp_path):
    client = slurm.client()
    fillers = busy(client, "n3", "n6", "n12")
    ids = [held(client, tmp_path, 4, 2), held(client, tmp_path, 3), held(client, tmp_path, 2)]
    rec = service(slurm, tmp_path).run_pass()
    assert [r for r in log_lines(tmp_path / "log.jsonl") if r["event"] == "window"] == [rec]
    assert rec["topology"] == "block" and rec["placed"] == 3 and rec["unsteered"] == []
    assert sorted(e["job_id"] for e in rec["jobs"]) == sorted(ids)
    by_id = {e["job_id"]: e for e in rec["jobs"]}
    assert (by_id[ids[0]]["segment"], by_id[ids[0]]["mechanism"]) == (2, "excnodelist")
    assert [by_id[i]["mechanism"] for i in ids[1:]] == ["reqnodelist", "reqnodelist"]
    window, nodes = window_of(rec)
    assert oracle.keeps(window, nodes)
    assert rec["cost"] <= rec["scas_optimum"] + 1e-9
    assert rec["slurm_block_cost"] is None or rec["cost"] <= rec["slurm_block_cost"] + 1e-9
    rows = ran_as_logged(client, rec)
    assert rows[ids[1]][3] and not rows[ids[0]][3]  # ReqNodeList, and none for segments
    no_bad_constraints(client)
    client.cancel(fillers)


@pytest.mark.slurm
def test_a_job_whose_cheapest_nodes_break_slurms_rule_runs_within_it(slurm, tmp_path):
    client = slurm.client()
    busy(client, "n4", "n5")
    four, ten = held(client, tmp_path, 4), held(client, tmp_path, 10)
    idle = [n for n in NAMES if n not in ("n4", "n5")]
    free = tjap.solve(Window(BLOCKS, idle, [4, 10]), "dp")
    rule = Window(BLOCKS, idle, [Job(4, slurm_rule=True), Job(10, slurm_rule=True)])
    assert violations(rule, free.assignment)  # the cheapest 4 span two blocks
    rec = service(slurm, tmp_path).run_pass()
    assert [e["job_id"] for e in rec["jobs"]] == [four, ten] and rec["placed"] == 2
    assert rec["unconstrained_optimum"] == pytest.approx(free.objective)
    assert rec["rule_price"] > 0 and rec["cost"] <= rec["scas_optimum"] + 1e-9
    rows = ran_as_logged(client, rec)
    assert (
        len({BLOCKS.node_leaf[v] for v in BLOCKS.node_indices(expand_hostlist(rows[four][2]))}) == 1
    )


@pytest.mark.slurm
def test_a_segmented_job_is_steered_by_its_exclusion_list(slurm, tmp_path):
    client = slurm.client()
    busy(client, "n3", "n6", "n12")
    seg = held(client, tmp_path, 4, 2)
    rec = service(slurm, tmp_path).run_pass()
    (entry,) = rec["jobs"]
    assert (entry["job_id"], entry["mechanism"], entry["outcome"]) == (seg, "excnodelist", "placed")
    # Slurm's own choice puts the two pairs in the fullest blocks (n5,n7 and n9,n10)
    assert rec["cost"] == 6000.0 and rec["slurm_block_cost"] == 14000.0
    rows = ran_as_logged(client, rec)
    assert expand_hostlist(rows[seg][2]) == ["n13", "n14", "n15", "n16"]
    assert set(expand_hostlist(rows[seg][4])) == set(NAMES) - {"n13", "n14", "n15", "n16"}


@pytest.mark.slurm
def test_a_steer_slurm_refuses_is_undone_at_once(slurm, tmp_path):
    """A segment given on sbatch's command line is not in the script: the service pins the job
    with a node list, Slurm refuses that for several segments (BadConstraints), and the
    service clears it so that Slurm places the job itself."""
    client = slurm.client()
    hidden = held(client, tmp_path, 4, extra=["--segment=2"])
    plain = held(client, tmp_path, 2)
    rec = service(slurm, tmp_path).run_pass()
    by_id = {e["job_id"]: e for e in rec["jobs"]}
    assert by_id[hidden]["segment"] is None and by_id[hidden]["mechanism"] == "reqnodelist"
    assert by_id[hidden]["outcome"] == "unsteered"
    assert by_id[hidden]["reason"] == (
        "Slurm refused the node set (BadConstraints); ReqNodeList cleared, Slurm places it itself"
    )
    assert by_id[plain]["outcome"] == "placed" and rec["placed"] == 1
    rows = wait_running(client, [hidden, plain])
    assert rows[hidden][3] == ""  # its ReqNodeList is gone
    assert expand_hostlist(rows[plain][2]) == expand_hostlist(by_id[plain]["nodes"])
    no_bad_constraints(client)


@pytest.mark.slurm
def test_a_node_drained_before_the_update_keeps_a_segmented_job_held(slurm, tmp_path):
    client = slurm.client()
    seg = held(client, tmp_path, 4, 2)
    drained = []

    def drain(job, hostlist):
        drained.append(expand_hostlist(hostlist)[0])
        client.drain(drained[0], "tjap-test")

    svc = service(slurm, tmp_path, before_update=drain)
    rec = svc.run_pass()
    (entry,) = rec["jobs"]
    assert entry["outcome"] == "held" and f"{drained[0]} is drain" in entry["reason"]
    time.sleep(1.5)  # a scheduler pass: still held
    state, reason, _, req, exc = jobs_now(client)[seg]
    assert (state, reason, req, exc) == ("PENDING", "JobHeldUser", "", "")
    svc.before_update = None  # the next window: elsewhere
    rec = svc.run_pass()
    assert [(e["job_id"], e["waited"], e["outcome"]) for e in rec["jobs"]] == [(seg, 1, "placed")]
    assert drained[0] not in expand_hostlist(rec["jobs"][0]["nodes"])
    ran_as_logged(client, rec)
    no_bad_constraints(client)


@pytest.mark.slurm
def test_the_service_restarted_with_jobs_held_places_them(slurm, tmp_path):
    client = slurm.client()
    fillers = busy(client, "n1", "n5", "n9", "n13")  # no base block has 4 idle nodes
    seg, four = held(client, tmp_path, 8, 4), held(client, tmp_path, 4)
    log = tmp_path / "first.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from tjap.cli import main; sys.exit(main())",
            "slurm",
            "place",
            "--interval",
            "1",
            "--time-limit",
            "2",
            "--log",
            str(log),
            "--quiet",
        ],
        env=slurm.env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(
            lambda: sum(r["event"] == "window" for r in log_lines(log)) >= 2, 30, "two windows"
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr = proc.stderr.read().decode()
        proc.stderr.close()
    assert "Traceback" not in stderr
    windows = [r for r in log_lines(log) if r["event"] == "window"]
    for rec in windows:  # both wait for a whole block, out of the window
        assert rec["jobs"] == [] and {h["job_id"] for h in rec["held_by_rule"]} == {seg, four}
        assert all(h["reason"].startswith("Slurm's block rule") for h in rec["held_by_rule"])
    rows = jobs_now(client)
    for i in (seg, four):
        assert rows[i][:2] == ("PENDING", "JobHeldUser") and rows[i][3:] == ("", "")
    client.cancel(fillers)
    slurm.wait_idle(20)
    rec = service(slurm, tmp_path).run_pass()  # a new service: no memory
    assert sorted((e["job_id"], e["outcome"]) for e in rec["jobs"]) == sorted(
        [(seg, "placed"), (four, "placed")]
    )
    assert {e["job_id"]: e["mechanism"] for e in rec["jobs"]} == {
        seg: "excnodelist",
        four: "reqnodelist",
    }
    window, nodes = window_of(rec)
    assert oracle.keeps(window, nodes)
    ran_as_logged(client, rec)
    no_bad_constraints(client)
