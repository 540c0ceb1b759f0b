"""``tjap slurm place`` against a real multi-node Slurm 22.05 (``-m slurm``; skipped without Slurm
or root).

One cluster of 18 nodes on a 3-level irregular tree (topology/tree): a window placed exactly as
logged; a held job that does not fit waits and is placed in a later window; jobs cancelled,
released and modified between reading and updating are skipped; a node drained between reading
and updating keeps that job held; slurmctld stopped and restarted under a running service;
``--dry-run``, ``advise`` and Ctrl-C change nothing; an account with no Slurm rights places its
own jobs and is refused another user's; a job held for locality runs on a whole leaf once one
frees up, or where it can once its wait is over; on windows with scattered busy nodes the
placement Slurm runs costs no more than Slurm's own choice nor than the SCAS optimum.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import slurm_waits

import tjap
from tjap.cli import main
from tjap.placement.slurm.client import SlurmClient
from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig, slurm_available
from tjap.placement.tree.cost import assignment_cost
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window
from tjap.slurm.service import PlacementService, ServiceConfig

_REASON = slurm_available()
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(_REASON is not None, reason=f"no local Slurm: {_REASON}"),
]

ROOT = Path(__file__).resolve().parents[2]
TREE = Topology.from_slurm("""
SwitchName=top Switches=s1,s2,s3
SwitchName=s1 Switches=l1,l2
SwitchName=l1 Nodes=n[01-04]
SwitchName=l2 Nodes=n[05-07]
SwitchName=s2 Switches=l3,l4,l5
SwitchName=l3 Nodes=n[08-09]
SwitchName=l4 Nodes=n[10-13]
SwitchName=l5 Nodes=n14
SwitchName=s3 Nodes=n[15-18]
""")
TIME_LIMIT_S = 5


@pytest.fixture(scope="module")
def cluster():
    # MessageTimeout=2: a command against a stopped controller fails in about 1 s, not 9
    config = LocalSlurmConfig.for_topology(TREE, extra={"MessageTimeout": "2"})
    with LocalSlurm(config) as slurm:
        yield slurm


@pytest.fixture
def slurm(cluster):
    yield cluster
    client = cluster.client()
    if not cluster.running:
        if cluster._procs.get("slurmctld") is not None:
            cluster.start_controller()
    client.cancel([j.job_id for j in client.queue()])
    for node in client.partition_nodes():
        if node.state.startswith("drain"):
            client.resume(node.name)
    cluster.wait_idle(30)


def submit_held(client, n: int, name: str = "held") -> int:
    return client.submit(
        nodes_or_tasks=n,
        time_limit_min=3,
        command="sleep 120",
        name=name,
        output="/dev/null",
        extra_args=["--hold", "-N", str(n)],
    )


def jobs_now(client) -> dict:
    """job id -> (state, reason, allocated nodes, requested nodes), every state."""
    out = client.run(["squeue", "-h", "-t", "all", "-o", "%i|%T|%r|%N|%n"]).stdout
    rows = {}
    for line in out.splitlines():
        i, state, reason, nodes, req = line.split("|")
        rows[int(i)] = (state, reason, nodes, req)
    return rows


def wait_for(predicate, timeout_s: float, what: str):
    return slurm_waits.wait_for(predicate, timeout_s, what, poll_s=0.3)


def wait_running(client, ids, timeout_s: float = 20) -> dict:
    return slurm_waits.wait_running(client, ids, jobs_now, timeout_s)


def service(slurm, tmp_path=None, **options) -> PlacementService:
    hook = options.pop("before_update", None)
    config = ServiceConfig(**{"time_limit_s": TIME_LIMIT_S, **options})
    return PlacementService(
        config,
        env=slurm.env,
        before_update=hook,
        log_path=tmp_path / "log.jsonl" if tmp_path else None,
    )


def log_lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() else []


# -- (a) a window placed as logged -------------------------------------------------------------
def test_window_runs_exactly_where_it_was_logged(slurm, tmp_path):
    client = slurm.client()
    ids = [submit_held(client, n) for n in (3, 2, 4, 1)]
    rec = service(slurm, tmp_path, test_only=True).run_pass()
    logged = [r for r in log_lines(tmp_path / "log.jsonl") if r["event"] == "window"]
    assert logged == [rec] and rec["placed"] == 4
    assert sorted(e["job_id"] for e in rec["jobs"]) == sorted(ids)
    assert (
        rec["cost"] <= rec["slurm_tree_cost"] + 1e-9 and rec["cost"] <= rec["scas_optimum"] + 1e-9
    )
    seen = rec["slurm_test_only"]  # Slurm's own choice for the first job, beside
    assert seen["job_id"] == rec["jobs"][0]["job_id"]
    assert len(expand_hostlist(seen["nodes"])) == rec["jobs"][0]["nodes_requested"]
    rows = wait_running(client, ids)
    for e in rec["jobs"]:
        assert e["outcome"] == "placed"
        assert expand_hostlist(rows[e["job_id"]][2]) == expand_hostlist(e["nodes"]), e


# -- (b) a job that does not fit waits ----------------------------------------------------------
def test_job_that_does_not_fit_stays_held_and_runs_later(slurm, tmp_path):
    client = slurm.client()
    big, small = submit_held(client, 12, "big"), submit_held(client, 8, "small")
    svc = service(slurm, tmp_path)
    rec = svc.run_pass()
    assert [e["job_id"] for e in rec["jobs"]] == [small]
    assert rec["waiting"] == [{"job_id": big, "nodes_requested": 12, "waited": 0}]
    wait_running(client, [small])
    assert jobs_now(client)[big][:2] == ("PENDING", "JobHeldUser")
    rec = svc.run_pass()  # 10 idle nodes: still no room
    assert rec["jobs"] == [] and rec["waiting"][0]["waited"] == 1
    client.cancel([small])
    slurm.wait_idle(20)
    rec = svc.run_pass()
    assert [(e["job_id"], e["waited"], e["outcome"]) for e in rec["jobs"]] == [(big, 2, "placed")]
    rows = wait_running(client, [big])
    assert expand_hostlist(rows[big][2]) == expand_hostlist(rec["jobs"][0]["nodes"])


# -- (c) jobs changed by someone else in between -------------------------------------------------
def test_cancelled_released_or_modified_jobs_are_skipped(slurm, tmp_path):
    client = slurm.client()
    cancelled, released, modified, kept = (submit_held(client, n) for n in (2, 3, 4, 5))

    def meddle(job, hostlist):
        if job.job_id == cancelled:
            client.cancel([cancelled])
        elif job.job_id == released:
            client.release(released)
        elif job.job_id == modified:
            client.update_job(modified, ExcNodeList="n18")

    rec = service(slurm, tmp_path, before_update=meddle).run_pass()
    outcome = {e["job_id"]: (e["outcome"], e["reason"]) for e in rec["jobs"]}
    assert outcome[kept] == ("placed", None)
    assert outcome[cancelled][0] == "skipped"
    assert outcome[released][0] == "skipped" and "no longer" in outcome[released][1]
    assert outcome[modified] == ("skipped", "modified since it was read")
    rows = wait_running(client, [kept])
    assert rows[modified][:2] == ("PENDING", "JobHeldUser") and rows[modified][3] == ""
    assert (
        rows[released][0] in ("PENDING", "RUNNING")
        and cancelled not in rows
        or rows[cancelled][0] == "CANCELLED"
    )
    assert expand_hostlist(rows[kept][2]) == expand_hostlist(
        next(e["nodes"] for e in rec["jobs"] if e["job_id"] == kept)
    )


# -- (d) a node drained in between ------------------------------------------------------------
def test_node_drained_between_read_and_update_keeps_the_job_held(slurm, tmp_path):
    client = slurm.client()
    victim, other = submit_held(client, 3), submit_held(client, 2)
    drained = []

    def drain(job, hostlist):
        if job.job_id == victim:
            drained.append(expand_hostlist(hostlist)[0])
            client.drain(drained[0], "tjap-test")

    svc = service(slurm, tmp_path, before_update=drain)
    rec = svc.run_pass()
    outcome = {e["job_id"]: (e["outcome"], e["reason"]) for e in rec["jobs"]}
    assert outcome[other] == ("placed", None)
    assert outcome[victim][0] == "held" and drained[0] in outcome[victim][1]
    assert "drain" in outcome[victim][1]
    wait_running(client, [other])
    time.sleep(1.5)  # a scheduler pass: still held
    state, reason, _, req = jobs_now(client)[victim]
    assert (state, reason, req) == ("PENDING", "JobHeldUser", "")  # ReqNodeList cleared
    client.resume(drained[0])
    svc.before_update = None
    rec = svc.run_pass()
    assert [(e["job_id"], e["waited"], e["outcome"]) for e in rec["jobs"]] == [
        (victim, 1, "placed")
    ]
    wait_running(client, [victim])


# -- (e) the controller goes away and comes back -----------------------------------------------
def placed(log: Path, job_id: int):
    for rec in log_lines(log):
        for e in rec.get("jobs", []):
            if e["job_id"] == job_id and e["outcome"] == "placed":
                return e
    return None


def test_service_survives_a_controller_restart_and_stops_on_sigterm(slurm, tmp_path):
    client = slurm.client()
    log = tmp_path / "log.jsonl"
    out, err = open(tmp_path / "out", "w"), open(tmp_path / "err", "w")
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
            "--json",
        ],
        env=slurm.env,
        cwd=ROOT,
        stdout=out,
        stderr=err,
        stdin=subprocess.DEVNULL,
    )
    try:
        first = submit_held(client, 2)
        wait_for(lambda: placed(log, first), 30, "the first job to be placed")
        slurm.stop_controller()
        wait_for(
            lambda: sum(r["event"] == "error" for r in log_lines(log)) >= 2, 30, "two failed passes"
        )
        slurm.start_controller()
        second = submit_held(client, 3)
        entry = wait_for(lambda: placed(log, second), 60, "the second job after the restart")
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        out.close()
        err.close()
    records = log_lines(log)
    assert records[0]["event"] == "start"
    assert records[-1]["event"] == "stop" and records[-1]["signal"] == "SIGTERM"
    errors = [r for r in records if r["event"] == "error"]
    assert all("cannot reach slurmctld" in r["error"] for r in errors)
    assert [r["retry_in_s"] for r in errors[:2]] == [1.0, 1.0]  # capped at the interval
    stderr = (tmp_path / "err").read_text()
    assert "Traceback" not in stderr
    assert stderr.count("retrying in") == len(errors)
    assert all(ln.startswith("tjap: ") for ln in stderr.splitlines())
    stdout = [json.loads(ln) for ln in (tmp_path / "out").read_text().splitlines()]
    assert stdout == records
    rows = wait_running(client, [first, second])
    assert expand_hostlist(rows[second][2]) == expand_hostlist(entry["nodes"])


# -- (f) dry run, advise and Ctrl-C change nothing ----------------------------------------------
def test_dry_run_advise_and_ctrl_c_change_nothing(slurm, tmp_path, monkeypatch, capsys):
    client = slurm.client()
    ids = [submit_held(client, n) for n in (2, 5)]
    before = jobs_now(client)
    rec = service(slurm, tmp_path, dry_run=True).run_pass()
    assert [e["outcome"] for e in rec["jobs"]] == ["dry-run", "dry-run"] and rec["placed"] == 0
    monkeypatch.setenv("SLURM_CONF", slurm.env["SLURM_CONF"])
    monkeypatch.setenv("PATH", slurm.env["PATH"])  # that Slurm's client tools
    assert main(["slurm", "advise", "--json", "--time-limit", "2"]) == 0
    advice = json.loads(capsys.readouterr().out)
    assert advice["event"] == "advice" and [e["outcome"] for e in advice["jobs"]] == ["advice"] * 2
    assert [e["nodes"] for e in advice["jobs"]] == [e["nodes"] for e in rec["jobs"]]
    log = tmp_path / "ctrl-c.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from tjap.cli import main; sys.exit(main())",
            "slurm",
            "place",
            "--dry-run",
            "--interval",
            "1",
            "--log",
            str(log),
            "--quiet",
        ],
        env=slurm.env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for(lambda: any(r["event"] == "window" for r in log_lines(log)), 30, "a dry window")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    assert b"Traceback" not in proc.stderr.read()
    proc.stderr.close()
    assert log_lines(log)[-1]["signal"] == "SIGINT"
    time.sleep(1.2)
    after = jobs_now(client)
    assert {i: after[i] for i in ids} == {i: before[i] for i in ids}
    assert all(before[i][:2] == ("PENDING", "JobHeldUser") and before[i][3] == "" for i in ids)


# -- (g) never above Slurm's own choice nor the SCAS optimum -----------------------------------
def test_never_above_slurm_nor_scas_on_windows_with_busy_nodes(slurm, tmp_path):
    client = slurm.client()
    rng = np.random.default_rng(19)
    svc = service(slurm, tmp_path)
    rows_out = []
    for k in range(6):
        busy = sorted(rng.choice(TREE.num_nodes, size=int(rng.integers(3, 7)), replace=False))
        blockers = [
            client.submit(
                nodes_or_tasks=1,
                time_limit_min=3,
                command="sleep 120",
                output="/dev/null",
                name="busy",
                extra_args=["-N", "1", "-w", TREE.node_names[v]],
            )
            for v in busy
        ]
        wait_running(client, blockers)
        free = TREE.num_nodes - len(busy)
        sizes, left = [], free
        while left >= 1 and len(sizes) < 4:
            n = int(rng.integers(1, min(left, 6) + 1))
            sizes.append(n)
            left -= n
        ids = [submit_held(client, n) for n in sizes]
        rec = svc.run_pass()
        assert sorted(e["job_id"] for e in rec["jobs"]) == sorted(ids), rec
        assert all(e["outcome"] == "placed" for e in rec["jobs"]), rec
        rows = wait_running(client, ids)
        window = Window(TREE, expand_hostlist(rec["idle"]), rec["sizes"])
        ran = [TREE.node_indices(expand_hostlist(rows[e["job_id"]][2])) for e in rec["jobs"]]
        cost = assignment_cost(TREE, ran)
        slurm_cost = tjap.solve(window, "slurm-tree").objective
        scas = tjap.solve(window, "dp").objective
        rows_out.append((k, rec["sizes"], cost, slurm_cost, scas, rec["winner"]))
        assert cost == pytest.approx(rec["cost"])
        assert cost <= slurm_cost + 1e-6 and cost <= scas + 1e-6, rows_out[-1]
        client.cancel(blockers + ids)
        slurm.wait_idle(30)
    print("\nwindow sizes cost slurm-tree scas winner")
    for row in rows_out:
        print(*row)


# -- holding a job for locality ------------------------------------------------------------------
def test_a_job_held_for_locality_waits_for_good_nodes_or_its_wait(slurm, tmp_path):
    client = slurm.client()
    # one busy node in each leaf of four: a 4-node job's best is now 3 + 1 nodes under one
    # spine (cost 9000), against one whole leaf (6000) on the empty partition
    blockers = {
        v: client.submit(
            nodes_or_tasks=1,
            time_limit_min=3,
            command="sleep 120",
            output="/dev/null",
            name="busy",
            extra_args=["-N", "1", "-w", v],
        )
        for v in ("n01", "n10", "n15")
    }
    wait_running(client, blockers.values())
    svc = service(slurm, tmp_path, locality_slack=0.25, locality_wait_s=4.0)
    first = submit_held(client, 4, "first")
    rec = svc.run_pass()
    assert rec["jobs"] == [] and [w["job_id"] for w in rec["waiting"]] == [first]
    (held,) = rec["held_for_locality"]
    assert (held["job_id"], held["cost_now"], held["best"]) == (first, 9000.0, 6000.0)
    assert jobs_now(client)[first][:2] == ("PENDING", "JobHeldUser")
    client.cancel([blockers["n01"]])  # a whole leaf frees up: placed there at once
    wait_for(
        lambda: any(n.name == "n01" and n.state == "idle" for n in client.partition_nodes()),
        20,
        "n01 to be idle",
    )
    rec = svc.run_pass()
    assert [(e["job_id"], e["cost"], e["outcome"]) for e in rec["jobs"]] == [
        (first, 6000.0, "placed")
    ]
    rows = wait_running(client, [first])
    assert expand_hostlist(rows[first][2]) == ["n01", "n02", "n03", "n04"]
    second = submit_held(client, 4, "second")  # no whole leaf left: held until its wait is over
    rec = svc.run_pass()
    assert [h["job_id"] for h in rec["held_for_locality"]] == [second]
    submitted = client.pending(job_id=second)[0].submit_time
    time.sleep(max(0.0, submitted + 4.0 - time.time()) + 0.1)
    rec = svc.run_pass()
    assert rec["held_for_locality"] == []
    assert [(e["job_id"], e["cost"], e["outcome"]) for e in rec["jobs"]] == [
        (second, 9000.0, "placed")
    ]
    wait_running(client, [second])


# -- least privilege ------------------------------------------------------------------------------
class AsUser(SlurmClient):
    """Every Slurm command run as ``user`` (``runuser``): Slurm sees that account, whatever
    account runs the Python process."""

    def __init__(self, user: str, env: dict):
        super().__init__(env)
        self.user = user

    def run(self, argv, *, check=True):
        return super().run(["runuser", "-u", self.user, "--", *argv], check=check)


@pytest.mark.skipif(shutil.which("runuser") is None, reason="needs runuser (util-linux)")
def test_an_unprivileged_account_places_its_own_jobs_and_no_one_elses(slurm, tmp_path):
    """An account with no Slurm rights (``nobody``) places and releases its own held jobs; Slurm
    refuses it another user's job, which stays held, untouched, with one line saying why (the
    README's least privilege: other users' jobs need an operator account or the SlurmUser)."""
    for path in (slurm.workdir, slurm.conf_path, slurm.topology_path):
        path.chmod(path.stat().st_mode | (0o055 if path.is_dir() else 0o044))
    client, nobody = slurm.client(), AsUser("nobody", slurm.env)
    mine = nobody.submit(
        nodes_or_tasks=2,
        time_limit_min=3,
        command="sleep 120",
        name="mine",
        output="/dev/null",
        extra_args=["--hold", "-N", "2", "--chdir", "/tmp"],
    )
    theirs = submit_held(client, 1, "theirs")
    config = ServiceConfig(time_limit_s=TIME_LIMIT_S)
    rec = PlacementService(config, client=nobody, log_path=tmp_path / "log.jsonl").run_pass()
    outcome = {e["job_id"]: e for e in rec["jobs"]}
    assert outcome[mine]["outcome"] == "placed"
    assert outcome[theirs]["outcome"] == "held"
    reason = outcome[theirs]["reason"]
    assert "this account may not change that job" in reason and "\n" not in reason
    rows = wait_running(client, [mine])
    assert expand_hostlist(rows[mine][2]) == expand_hostlist(outcome[mine]["nodes"])
    state, why, _, requested = jobs_now(client)[theirs]
    assert (state, why, requested) == ("PENDING", "JobHeldUser", "")
