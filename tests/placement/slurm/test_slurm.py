"""The Slurm adapter (tjap.placement.slurm.client), the local cluster (tjap.placement.slurm.harness) and
the trace replay on it (benchmarks.slurm_replay).

Tests marked ``slurm`` start a real slurmctld/slurmd on this machine (``-m slurm``; they skip with
the reason when Slurm is not installed or we are not root). The others parse captured output and
need no Slurm.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from tjap.core.errors import TjapError
from tjap.placement.slurm.client import (
    CompletedJob,
    SlurmClient,
    SlurmError,
    classify_error,
    dependency_ids,
    parse_duration,
    parse_jobcomp,
    parse_sinfo,
    parse_squeue,
)
from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig, slurm_available

# -- captured output (Slurm 22.05.8) -----------------------------------------------------------

SQUEUE_SAMPLE = """\
7|RUNNING|1795333229|1795333230|1:00|4|1|1|root|main|(null)|None|wrap
8|PENDING|1795333229|N/A|1-02:03:04|2|1|1|alice|main|afterany:7(unfulfilled)|Dependency|dep x|y
9|PENDING|1795333231|1795333290|UNLIMITED|300|2|0|bob|main|(null)|PartitionConfig|big
"""

SINFO_SAMPLE = """\
localhost|mixed|4/252/0/256|main*
localhost|mixed|4/252/0/256|debug
n2|down*|0/0/8/8|main*
"""

JOBCOMP_SAMPLE = (
    "JobId=1 UserId=root(0) GroupId=root(0) Name=wrap JobState=COMPLETED Partition=main "
    "TimeLimit=1 StartTime=2026-11-22T07:40:30 EndTime=2026-11-22T07:40:33 NodeList=localhost "
    "NodeCnt=1 ProcCnt=4 WorkDir=/tmp/x ReservationName= Tres=cpu=4,mem=1M,node=1,billing=4 "
    "Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-22T07:40:29 "
    "EligibleTime=2026-11-22T07:40:29 DerivedExitCode=0:0 ExitCode=0:0 \n"
    "JobId=2 UserId=alice(1000) GroupId=alice(1000) Name=my job JobState=TIMEOUT Partition=main "
    "TimeLimit=UNLIMITED StartTime=2026-11-22T07:40:33 EndTime=2026-11-22T07:40:34 "
    "NodeList=localhost NodeCnt=1 ProcCnt=2 WorkDir=/tmp/a b ReservationName= Tres=cpu=2 "
    "Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-22T07:40:29 "
    "EligibleTime=2026-11-22T07:40:33 DerivedExitCode=0:0 ExitCode=0:15\n"
    "JobId=3 UserId=root(0) GroupId=root(0) Name=wrap JobState=CANCELLED Partition=main "
    "TimeLimit=5 StartTime=Unknown EndTime=2026-11-22T07:40:35 NodeList=(null) NodeCnt=0 "
    "ProcCnt=0 WorkDir=/tmp SubmitTime=2026-11-22T07:40:29 EligibleTime=Unknown ExitCode=0:0\n"
)


def test_parse_squeue():
    jobs = parse_squeue(SQUEUE_SAMPLE)
    assert [j.job_id for j in jobs] == [7, 8, 9]
    run, dep, big = jobs
    assert run.running and not run.pending
    assert (run.start_time, run.time_limit_s, run.cpus, run.dependency) == (1795333230, 60, 4, "")
    assert dep.pending and dep.start_time is None and dep.name == "dep x|y"
    assert dep.time_limit_s == ((24 + 2) * 60 + 3) * 60 + 4
    assert dep.depends_on == [7] and dep.reason == "Dependency" and dep.user == "alice"
    assert big.time_limit_s is None and big.nodes == 2 and big.priority == 0
    assert big.start_time == 1795333290  # backfill's expected start


def test_parse_squeue_rejects_garbage():
    with pytest.raises(SlurmError, match="unexpected squeue line"):
        parse_squeue("1|RUNNING|x\n")
    with pytest.raises(SlurmError, match="unexpected squeue line"):
        parse_squeue("x|RUNNING|1|2|1:00|4|1|1|root|main|(null)|None|wrap\n")


def test_parse_sinfo_merges_partitions():
    nodes = parse_sinfo(SINFO_SAMPLE)
    assert [n.name for n in nodes] == ["localhost", "n2"]
    local = nodes[0]
    assert (local.state, local.cpus_alloc, local.cpus_idle, local.cpus_total) == (
        "mixed",
        4,
        252,
        256,
    )
    assert local.partitions == ("main", "debug")
    assert nodes[1].state == "down*" and nodes[1].cpus_other == 8
    with pytest.raises(SlurmError, match="sinfo"):
        parse_sinfo("localhost|idle|4/252/256|main\n")


def test_parse_jobcomp():
    jobs = parse_jobcomp(JOBCOMP_SAMPLE)
    assert [j.job_id for j in jobs] == [1, 2, 3]
    a, b, c = jobs
    assert isinstance(a, CompletedJob) and a.user == "root" and a.cpus == 4
    assert a.end_time - a.start_time == 3 and a.start_time - a.submit_time == 1
    assert a.time_limit_s == 60 and a.state == "COMPLETED"
    local = time.mktime(time.strptime("2026-11-22T07:40:30", "%Y-%m-%dT%H:%M:%S"))
    assert a.start_time == int(local)
    assert b.name == "my job" and b.user == "alice" and b.time_limit_s is None
    assert b.fields["WorkDir"] == "/tmp/a b" and b.exit_code == "0:15"
    assert c.start_time is None and c.eligible_time is None and c.state == "CANCELLED"
    with pytest.raises(SlurmError, match="jobcomp line 1"):
        parse_jobcomp("Name=x JobState=COMPLETED\n")


def test_parse_duration_and_dependencies():
    assert parse_duration("1:00") == 60
    assert parse_duration("0:30") == 30
    assert parse_duration("2:00:00") == 7200
    assert parse_duration("3-00:00:00") == 3 * 86400
    assert parse_duration("1-2") == 86400 + 7200
    assert parse_duration("15") == 900
    assert parse_duration("UNLIMITED") is None
    with pytest.raises(SlurmError):
        parse_duration("soon")
    assert dependency_ids("(null)") == []
    assert dependency_ids("afterany:12(unfulfilled),afterok:13_2(failed)") == [12, 13]
    assert dependency_ids("afterany:4:5") == [4, 5]


def test_to_jobs_mapping():
    client = SlurmClient({"SLURM_CONF": "/nonexistent"})
    jobs = client.to_jobs(parse_squeue(SQUEUE_SAMPLE), unlimited_limit_s=1000)
    assert list(jobs.job_id) == [7, 8, 9]
    assert list(jobs.nodes) == [4, 2, 300]
    assert list(jobs.limit_s) == [60, 93784, 1000]
    assert (jobs.runtime_s == jobs.limit_s).all()
    assert list(jobs.recorded_start_s) == [1795333230, -1, -1]
    assert list(jobs.depends_on) == [-1, 0, -1]
    assert jobs.num_users == 3 and jobs.epoch == 0
    by_nodes = client.to_jobs(parse_squeue(SQUEUE_SAMPLE), size="nodes")
    assert list(by_nodes.nodes) == [1, 1, 2]
    assert len(client.to_jobs([])) == 0


def test_error_mapping():
    conf = "/tmp/x/slurm.conf"
    err = classify_error(
        ["squeue"], 1, "squeue: error: Unable to contact slurm controller (connect failure)\n", conf
    )
    assert isinstance(err, TjapError)
    assert str(err).startswith("cannot reach slurmctld: squeue: error: Unable to contact")
    assert "is Slurm running?" in str(err) and conf in str(err)
    err = classify_error(
        ["sinfo"],
        1,
        "sinfo: error: s_p_parse_file: unable to read "
        '"/x/slurm.conf": No such file or directory\n'
        "sinfo: fatal: Unable to process configuration file\n",
        conf,
    )
    assert "cannot read the Slurm configuration" in str(err)
    err = classify_error(
        ["sbatch"],
        1,
        'sbatch: error: Munge encode failed: Failed to access "/run/munge/munge.socket.2"\n',
        conf,
    )
    assert "munge" in str(err) and "munged running" in str(err)
    err = classify_error(
        ["sbatch"],
        1,
        "sbatch: error: Batch job submission failed: More processors requested than permitted\n",
        conf,
    )
    assert str(err) == (
        "sbatch failed (exit 1): sbatch: error: Batch job submission failed: "
        "More processors requested than permitted"
    )
    assert "exit status 3" in str(classify_error(["scancel"], 3, "", conf))
    err = classify_error(["scontrol"], 1, "Invalid user id for job 7\n", conf)
    assert str(err).startswith(
        "scontrol refused (exit 1): Invalid user id for job 7: this account may not change that job"
    )
    assert "Slurm operator" in str(err)


def test_missing_binary_and_bad_arguments():
    client = SlurmClient({"PATH": "/nonexistent"})
    with pytest.raises(SlurmError, match=r"squeue not found.*apt-get install slurm-wlm"):
        client.queue()
    with pytest.raises(SlurmError, match="nodes_or_tasks"):
        client.submit(nodes_or_tasks=0, time_limit_min=1, command="true")
    with pytest.raises(SlurmError, match="time_limit_min"):
        client.submit(nodes_or_tasks=1, time_limit_min=0, command="true")
    with pytest.raises(SlurmError, match="does not exist"):
        client.completed("/nonexistent/jobcomp.txt")


def test_config_lines():
    slurm = LocalSlurm(
        LocalSlurmConfig(
            cpus=64, scheduler="builtin", extra={"MinJobAge": "5", "PriorityFlags": "NO_FAIR_TREE"}
        )
    )
    try:
        lines = slurm.conf_lines()
        conf = dict(line.split("=", 1) for line in lines if not line.startswith(("Node", "Part")))
        assert conf["SchedulerType"] == "sched/builtin"
        assert conf["MinJobAge"] == "5" and conf["PriorityFlags"] == "NO_FAIR_TREE"
        assert conf["SlurmdParameters"] == "config_overrides"
        assert "sched_interval=1" in conf["SchedulerParameters"]
        assert conf["JobCompLoc"] == str(slurm.jobcomp_path)
        assert any(line.startswith("NodeName=localhost") and "CPUs=64" in line for line in lines)
        assert slurm.env["SLURM_CONF"] == str(slurm.conf_path)
    finally:
        slurm.stop()
    assert not slurm.workdir.exists()
    with pytest.raises(SlurmError, match="scheduler must be"):
        LocalSlurm(LocalSlurmConfig(scheduler="fifo"))
    backfill = LocalSlurmConfig(bf_job_part_count_reserve=1).scheduler_parameter_list()
    assert "bf_job_part_count_reserve=1" in backfill and "bf_interval=1" in backfill


def test_replay_validates_rows_before_touching_slurm():
    from benchmarks.slurm_replay import replay_on_slurm
    from tjap.placement.slurm.background import sleep_command as _sleep_command

    slurm = LocalSlurm(LocalSlurmConfig(cpus=8))  # never started
    good = {"id": "a", "submit_s": 0, "cpus": np.int64(2), "limit_min": 1, "runtime_s": 1.5}
    cases = [
        ({"cpus": 9}, "cpus must be an integer in 1..8"),
        ({"cpus": 1.5}, "cpus must be"),
        ({"limit_min": 0}, "limit_min must be an integer >= 1"),
        ({"runtime_s": 61}, r"runtime_s must lie in \[0, 60\*limit_min\]"),
        ({"submit_s": -1}, "submit_s must be >= 0"),
    ]
    try:
        for change, message in cases:
            with pytest.raises(SlurmError, match=f"replay job a: {message}"):
                replay_on_slurm([good, dict(good, **change)], slurm)
        with pytest.raises(SlurmError, match="missing runtime_s"):
            replay_on_slurm([{"id": 1, "submit_s": 0, "cpus": 1, "limit_min": 1}], slurm)
    finally:
        slurm.stop()
    assert _sleep_command(3) == "sleep 3" and _sleep_command(1.25) == "sleep 1.250"


# -- against a real local Slurm ----------------------------------------------------------------

_REASON = slurm_available()
needs_slurm = pytest.mark.skipif(_REASON is not None, reason=f"no local Slurm: {_REASON}")


@pytest.fixture(scope="module")
def cluster():
    with LocalSlurm(LocalSlurmConfig(cpus=8)) as slurm:
        yield slurm


def _wait_done(slurm: LocalSlurm, ids, timeout_s=30.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        done = {j.job_id: j for j in slurm.completed() if j.job_id in set(ids)}
        if len(done) == len(ids):
            return done
        time.sleep(0.2)
    raise AssertionError(f"jobs {ids} did not complete within {timeout_s} s")


@pytest.mark.slurm
@needs_slurm
def test_cluster_starts(cluster):
    client = cluster.client()
    nodes = client.nodes()
    assert [(n.name, n.state, n.cpus_total) for n in nodes] == [("localhost", "idle", 8)]
    assert client.queue() == []
    assert cluster.running and os.path.exists(cluster.conf_path)


@pytest.mark.slurm
@needs_slurm
def test_submit_dependency_queue_completed(cluster):
    client = cluster.client()
    kw = dict(time_limit_min=1, output="/dev/null", chdir=str(cluster.workdir))
    a = client.submit(nodes_or_tasks=4, command="sleep 2", name="first", **kw)
    b = client.submit(nodes_or_tasks=2, command="sleep 1", name="second", after=[a], **kw)
    c = client.submit(nodes_or_tasks=2, command="sleep 1", **kw)
    queue = {j.job_id: j for j in client.queue()}
    assert set(queue) == {a, b, c}
    assert queue[b].pending and queue[b].depends_on == [a] and queue[b].reason == "Dependency"
    assert queue[a].cpus == 4 and queue[a].time_limit_s == 60 and queue[a].name == "first"
    jobs = client.to_jobs()
    row = {int(j): r for r, j in enumerate(jobs.job_id)}
    assert jobs.depends_on[row[b]] == row[a] and jobs.nodes[row[a]] == 4
    done = _wait_done(cluster, [a, b, c])
    assert all(j.state == "COMPLETED" for j in done.values())
    assert done[b].start_time >= done[a].end_time  # afterany
    assert done[a].end_time - done[a].start_time in (1, 2, 3)
    assert done[b].name == "second" and done[a].cpus == 4


@pytest.mark.slurm
@needs_slurm
def test_too_large_job_is_rejected(cluster):
    with pytest.raises(SlurmError, match="sbatch rejected the job.*(processors|configuration)"):
        cluster.client().submit(
            nodes_or_tasks=9, time_limit_min=1, command="true", output="/dev/null"
        )


@pytest.mark.slurm
@needs_slurm
def test_cancel(cluster):
    client = cluster.client()
    jid = client.submit(nodes_or_tasks=1, time_limit_min=5, command="sleep 60", output="/dev/null")
    client.cancel([jid])
    done = _wait_done(cluster, [jid])
    assert done[jid].state == "CANCELLED"
    client.cancel([jid])  # already gone: no error by default


@pytest.mark.slurm
@needs_slurm
def test_unreachable_controller(tmp_path):
    # a valid slurm.conf that points at a port nobody listens on
    slurm = LocalSlurm(LocalSlurmConfig(slurmctld_port=1, slurmd_port=2), workdir=tmp_path)
    slurm.conf_path.write_text("\n".join(slurm.conf_lines()) + "\n")
    client = SlurmClient(slurm.env, timeout_s=30)
    t = time.monotonic()
    with pytest.raises(
        SlurmError,
        match=r"cannot reach slurmctld: .*is Slurm running\? "
        r"\(SLURM_CONF=.*slurm.conf\)",
    ):
        client.queue()
    assert time.monotonic() - t < 30
    with pytest.raises(SlurmError, match="cannot read the Slurm configuration"):
        SlurmClient({"SLURM_CONF": str(tmp_path / "missing.conf")}).nodes()


#: (cpus, runtime_s, limit_min) of five jobs on 8 CPUs, submitted together in this order: job 1
#: runs, job 2 (all 8 CPUs) waits for it, jobs 3 and 4 fit beside job 1 and end long before its
#: limit, job 5 fits beside nothing until job 2 is done.
FCFS_JOBS = [(6, 4, 3), (8, 1, 1), (1, 1, 1), (1, 1, 1), (4, 1, 1)]


def _run_scenario(scheduler: str):
    from benchmarks.slurm_replay import replay_on_slurm

    rows = [
        {"id": i + 1, "submit_s": 0, "cpus": c, "runtime_s": r, "limit_min": m}
        for i, (c, r, m) in enumerate(FCFS_JOBS)
    ]
    with LocalSlurm(LocalSlurmConfig(cpus=8, scheduler=scheduler)) as slurm:
        out = replay_on_slurm(rows, slurm, timeout_s=60)
    return {r["id"]: r for r in out}


@pytest.mark.slurm
@needs_slurm
def test_builtin_is_strict_fcfs():
    r = _run_scenario("builtin")
    assert all(row["state"] == "COMPLETED" for row in r.values())
    assert r[2]["start"] >= r[1]["end"]
    # the small jobs wait behind the blocked big one, although they fit beside job 1
    for small in (3, 4, 5):
        assert r[small]["start"] >= r[2]["end"], r
    starts = [r[i]["start"] for i in range(1, 6)]
    assert starts == sorted(starts)


@pytest.mark.slurm
@needs_slurm
def test_backfill_lets_small_jobs_pass():
    r = _run_scenario("backfill")
    assert all(row["state"] == "COMPLETED" for row in r.values())
    assert r[2]["start"] >= r[1]["end"]
    for small in (3, 4):
        assert r[small]["start"] < r[1]["end"], r  # backfilled beside job 1
        assert r[small]["start"] < r[2]["start"]
    assert r[5]["start"] >= r[2]["end"]
    for row in r.values():
        assert row["slurm_submit"] == 0 and row["submit"] < 1
        assert row["observed_start"] is None or row["observed_start"] >= row["start"]
        assert row["end"] - row["start"] >= np.floor(row["runtime_s"]) - 1
