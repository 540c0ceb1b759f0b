"""The live (real-Slurm) mode of the chained-job provisioner, without Slurm: Slurm's records
(squeue / jobcomp text) mapped onto the simulator's state, and the live feature vector against the
simulator's for the same state. The end-to-end runs on a local Slurm are in
tests/placement/slurm/test_provision_live_slurm.py (marked ``slurm``)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tjap.core.errors import InvalidInputError
from tjap.heuristics.batch.rules import Average
from tjap.placement.batch import Jobs, SchedulerConfig
from tjap.placement.batch.chained import FEATURES, ChainedEpisode, Pair, snapshot_features
from tjap.placement.slurm.chained import (
    LiveEpisode,
    LiveResult,
    decide,
    format_decisions,
    live_state,
    slurm_limit_min,
)
from tjap.placement.slurm.client import parse_jobcomp, parse_squeue

H = 3600
EXACT = SchedulerConfig(backfill="easy", bf_interval_s=0, bf_resolution_s=1)

# -- hand-made text in the format Slurm 22.05.8 prints (SLURM_TIME_FORMAT=%s) --------------------
# T0 = 10:00:00 wall. Job 41 (4 CPUs) and 42 (the predecessor, 1 CPU) run; 43 (8 CPUs) and 44
# (2 CPUs) queue; 40 ended 30 s ago; 39 was cancelled before it started.
T0 = 1795333200
SQUEUE = (
    f"41|RUNNING|{T0 - 120}|{T0 - 90}|5:00|4|1|1|root|main|(null)|None|replay-7\n"
    f"42|RUNNING|{T0 - 60}|{T0 - 60}|4:00|1|1|1|root|main|(null)|None|tjap-predecessor\n"
    f"43|PENDING|{T0 - 30}|N/A|2:00|8|1|1|root|main|(null)|Resources|replay-8\n"
    f"44|PENDING|{T0 - 15}|N/A|1:00|2|1|1|root|main|(null)|Priority|replay-9\n"
)


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


JOBCOMP = (
    f"JobId=40 UserId=root(0) GroupId=root(0) Name=replay-6 JobState=COMPLETED "
    f"Partition=main TimeLimit=3 StartTime={_iso(T0 - 100)} EndTime={_iso(T0 - 30)} "
    f"NodeList=localhost NodeCnt=1 ProcCnt=3 WorkDir=/tmp SubmitTime={_iso(T0 - 160)} "
    f"EligibleTime={_iso(T0 - 160)} ExitCode=0:0\n"
    f"JobId=39 UserId=root(0) GroupId=root(0) Name=replay-5 JobState=CANCELLED "
    f"Partition=main TimeLimit=3 StartTime=Unknown EndTime={_iso(T0 - 50)} "
    f"NodeList=(null) NodeCnt=0 ProcCnt=0 WorkDir=/tmp SubmitTime={_iso(T0 - 170)} "
    f"EligibleTime=Unknown ExitCode=0:0\n"
)


def test_records_map_onto_the_feature_state():
    c = 720  # 1 wall s = 12 trace min; the pair: 48 h = 4 wall min
    pair = Pair(nodes=1)
    st = live_state(
        parse_squeue(SQUEUE),
        parse_jobcomp(JOBCOMP),
        T0,
        compress=c,
        cluster_nodes=76,
        pair=pair,
        pred_job_id=42,
    )
    assert st.pred_status == "running" and st.sim.state(st.succ) == "held"
    ep = LiveEpisode()
    ep.update(st)
    f = dict(zip(FEATURES, ep.features()))
    assert f["queue_jobs"] == 2  # 43, 44 (not the successor)
    assert (f["queue_size_p0"], f["queue_size_p100"]) == (2, 8)
    assert f["queue_age_h_p0"] == pytest.approx(15 * c / H)  # 3 h
    assert f["queue_age_h_p100"] == pytest.approx(30 * c / H)  # 6 h
    assert (f["queue_limit_h_p0"], f["queue_limit_h_p100"]) == (12, 24)  # 1 and 2 min x 720
    assert f["running_jobs"] == 1 and f["running_size_p50"] == 4  # 41; the predecessor apart
    assert (f["busy_nodes"], f["free_nodes"]) == (5, 71)  # 41 and the predecessor
    assert f["running_elapsed_h_p50"] == pytest.approx(90 * c / H)  # 18 h
    assert f["running_limit_h_p50"] == 60  # 5 min x 720
    assert (f["pred_size"], f["pred_limit_h"], f["pred_queue_h"]) == (1, 48, 0)
    assert f["pred_elapsed_h"] == pytest.approx(12)  # 60 s x 720
    assert (f["succ_size"], f["succ_limit_h"]) == (1, 48)
    pred = ep.predecessor()
    assert pred["start_s"] == (T0 - 60) * c and pred["expected_end_s"] == (T0 - 60 + 240) * c
    # recent waits: 40 waited 60 s, 41 30 s, the predecessor is left out: mean 45 s = 9 trace h
    assert ep.recent_mean_wait_s() == pytest.approx(45 * c)
    # the avg rule: 180 s = 36 h to the expected end > 9 h of mean wait: wait
    assert decide(Average(), ep) == (False, None)


# -- recorded text: lines of squeue and of the jobcomp log captured during the demo run of
# benchmarks/RESULTS.md (76-CPU localhost Slurm 22.05.8, x720, TZ=UTC) at 1795350435 = 12:27:15.
# Job 282 ended in the same second: squeue still lists it running, the jobcomp log has its end.
CAPTURED_AT = 1795350435
CAPTURED_SQUEUE = """\
280|RUNNING|1795350260|1795350432|4:00|1|1|1|root|main|(null)|None|tjap-predecessor
288|RUNNING|1795350263|1795350435|1:00|1|1|1|root|main|(null)|None|trace-732632
291|RUNNING|1795350264|1795350435|1:00|1|1|1|root|main|(null)|None|trace-732658
282|RUNNING|1795350261|1795350434|1:00|4|1|1|root|main|(null)|None|trace-732567
285|RUNNING|1795350262|1795350433|1:00|1|1|1|root|main|(null)|None|trace-732603
287|PENDING|1795350263|1795350808|1:00|4|1|1|root|main|(null)|Priority|trace-732616
286|PENDING|1795350262|1795350568|4:00|1|1|1|root|main|(null)|Priority|trace-732606
283|PENDING|1795350262|1795350508|1:00|4|1|1|root|main|(null)|Resources|trace-732582
"""
CAPTURED_JOBCOMP = """\
JobId=284 UserId=root(0) GroupId=root(0) Name=trace-732602 JobState=COMPLETED Partition=main TimeLimit=1 StartTime=2026-11-22T12:27:13 EndTime=2026-11-22T12:27:14 NodeList=localhost NodeCnt=1 ProcCnt=1 WorkDir=/tmp/tjap-slurm-hij2v2zm ReservationName= Tres=cpu=1,mem=1M,node=1,billing=1 Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-22T12:24:22 EligibleTime=2026-11-22T12:24:22 DerivedExitCode=0:0 ExitCode=0:0
JobId=281 UserId=root(0) GroupId=root(0) Name=trace-732566 JobState=COMPLETED Partition=main TimeLimit=1 StartTime=2026-11-22T12:27:12 EndTime=2026-11-22T12:27:14 NodeList=localhost NodeCnt=1 ProcCnt=1 WorkDir=/tmp/tjap-slurm-hij2v2zm ReservationName= Tres=cpu=1,mem=1M,node=1,billing=1 Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-22T12:24:21 EligibleTime=2026-11-22T12:24:21 DerivedExitCode=0:0 ExitCode=0:0
JobId=282 UserId=root(0) GroupId=root(0) Name=trace-732567 JobState=COMPLETED Partition=main TimeLimit=1 StartTime=2026-11-22T12:27:14 EndTime=2026-11-22T12:27:15 NodeList=localhost NodeCnt=1 ProcCnt=4 WorkDir=/tmp/tjap-slurm-hij2v2zm ReservationName= Tres=cpu=4,mem=1M,node=1,billing=4 Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-22T12:24:21 EligibleTime=2026-11-22T12:24:21 DerivedExitCode=0:0 ExitCode=0:0
"""


@pytest.fixture
def utc(monkeypatch):
    """The jobcomp log prints local times; the captured lines are UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_captured_records_map_onto_the_feature_state(utc):
    c = 720
    st = live_state(
        parse_squeue(CAPTURED_SQUEUE),
        parse_jobcomp(CAPTURED_JOBCOMP),
        CAPTURED_AT,
        compress=c,
        cluster_nodes=76,
        pair=Pair(nodes=1),
        pred_job_id=280,
    )
    ep = LiveEpisode()
    ep.update(st)
    f = dict(zip(FEATURES, ep.features()))
    # queue: 287 (4 CPUs, 172 s old), 286 (1 CPU, 173 s, 4 min limit), 283 (4 CPUs, 173 s)
    assert (f["queue_jobs"], f["queue_size_p0"], f["queue_size_p50"]) == (3, 1, 4)
    assert f["queue_age_h_p0"] == pytest.approx(172 * 0.2) and f[
        "queue_age_h_p100"
    ] == pytest.approx(173 * 0.2)  # 1 wall s = 0.2 trace h
    assert (f["queue_limit_h_p0"], f["queue_limit_h_p100"]) == (12, 48)
    # running: 288, 291 (just started), 285 (2 s); 282 has ended (jobcomp wins over squeue)
    assert (f["running_jobs"], f["running_size_p100"], f["busy_nodes"], f["free_nodes"]) == (
        3,
        1,
        4,
        72,
    )
    assert f["running_elapsed_h_p100"] == pytest.approx(0.4) and f["running_limit_h_p50"] == 12
    assert f["pred_queue_h"] == pytest.approx(172 * 0.2) and f["pred_elapsed_h"] == pytest.approx(
        0.6
    )
    assert (f["pred_limit_h"], f["succ_limit_h"]) == (48, 48)
    # waits of the jobs started in the last trace day (120 wall s), the predecessor apart:
    # 284 171 s, 281 171, 282 173, 288 172, 291 171, 285 171 -> 171.5 s = 34.3 trace h
    assert ep.recent_mean_wait_s() == pytest.approx(171.5 * c)


def test_before_the_predecessor_exists_and_errors():
    queue = parse_squeue(SQUEUE)
    st = live_state(
        [q for q in queue if q.job_id != 42],
        [],
        T0,
        compress=720,
        cluster_nodes=76,
        pair=Pair(nodes=8),
        pred_submit_wall=T0 + 60,
        pred_job_id=None,
    )
    assert st.pred_status == "future"
    f = dict(zip(FEATURES, snapshot_features(st.sim, st.pred, st.succ)))
    assert (f["pred_size"], f["pred_queue_h"], f["pred_elapsed_h"], f["queue_jobs"]) == (8, 0, 0, 2)
    with pytest.raises(InvalidInputError, match="predecessor job 99 is neither in squeue"):
        live_state(queue, [], T0, compress=720, cluster_nodes=76, pair=Pair(), pred_job_id=99)
    with pytest.raises(InvalidInputError, match="more than cluster_nodes=4"):
        live_state(queue, [], T0, compress=720, cluster_nodes=4, pair=Pair(), pred_job_id=42)
    with pytest.raises(InvalidInputError, match="compress must be > 0"):
        live_state(queue, [], T0, compress=0, cluster_nodes=76, pair=Pair(), pred_job_id=42)
    assert slurm_limit_min(48 * H, 720) == 4 and slurm_limit_min(48 * H, 600) == 5
    assert slurm_limit_min(60, 7200) == 1


# -- the live features equal the simulator's for the same state ----------------------------------


def _render(sim, pred: int, succ: int, c: int, base: int) -> tuple[str, str]:
    """The simulator's state as Slurm would print it: squeue lines (pending, running) and jobcomp
    lines (done), wall time = base + trace time / c."""
    s, j = sim._state, sim.jobs
    squeue, jobcomp = [], []

    def wall(t):
        assert t % c == 0
        return base + int(t) // c

    def limit_text(limit_s):
        sec = int(limit_s) // c
        return f"{sec // 86400}-{sec % 86400 // 3600:02d}:{sec % 3600 // 60:02d}:{sec % 60:02d}"

    for row in range(len(j)):
        state = sim.state(row)
        if row == succ or state == "future":
            continue
        jid, n = int(j.job_id[row]), int(j.nodes[row])
        if state in ("pending", "running"):
            start = wall(s["start"][row]) if state == "running" else "N/A"
            squeue.append(
                f"{jid}|{state.upper()}|{wall(j.submit_s[row])}|{start}|"
                f"{limit_text(j.limit_s[row])}|{n}|1|1|root|main|(null)|None|job {jid}"
            )
        else:
            jobcomp.append(
                f"JobId={jid} UserId=root(0) Name=job JobState=COMPLETED "
                f"Partition=main TimeLimit={int(j.limit_s[row]) // c // 60} "
                f"StartTime={_iso(wall(s['start'][row]))} "
                f"EndTime={_iso(wall(s['end'][row]))} NodeCnt=1 ProcCnt={n} "
                f"SubmitTime={_iso(wall(j.submit_s[row]))} ExitCode=0:0"
            )
    return "\n".join(squeue) + "\n", "\n".join(jobcomp) + "\n"


def _workload(seed: int) -> Jobs:
    """Jobs on whole minutes with whole-hour limits (what a 60x compressed Slurm can hold)."""
    rng = np.random.default_rng(seed)
    n = 80
    runtime = 60 * rng.integers(10, 600, n)
    return Jobs.build(
        submit_s=60 * np.sort(rng.integers(0, 60 * 60, n)),
        nodes=rng.integers(1, 5, n),
        runtime_s=runtime,
        limit_s=H * (runtime // H + rng.integers(1, 4, n)),
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_live_features_equal_the_simulators(seed):
    c, base = 60, 1_795_000_000
    pair = Pair(nodes=2, runtime_s=6 * H, limit_s=8 * H)
    ep = ChainedEpisode(_workload(seed), 8, 30 * H, pair, config=EXACT)
    live = LiveEpisode()
    states = set()
    while True:
        queue, done = _render(ep.sim, ep.pred, ep.succ, c, base)
        st = live_state(
            parse_squeue(queue),
            parse_jobcomp(done),
            base + ep.now / c,
            compress=c,
            cluster_nodes=8,
            pair=pair,
            pred_job_id=int(ep.sim.jobs.job_id[ep.pred]),
        )
        live.update(st)
        states.add(st.pred_status)
        assert st.pred_status == ep.sim.state(ep.pred)
        np.testing.assert_allclose(
            live.features(), snapshot_features(ep.sim, ep.pred, ep.succ), rtol=1e-6, atol=1e-5
        )
        mine, theirs = live.predecessor(), ep.predecessor()
        shift = base * c
        assert mine["submit_s"] - shift == theirs["submit_s"]
        assert (mine["start_s"] is None) == (theirs["start_s"] is None)
        if theirs["start_s"] is not None:
            assert mine["expected_end_s"] - shift == theirs["expected_end_s"]
        assert live.recent_mean_wait_s() == pytest.approx(ep.recent_mean_wait_s())
        if ep.step(False):
            break
    assert "running" in states


def test_decision_log_with_learned_provisioners():
    """The live episode feeds learned provisioners (shipped weights) and logs their predictions."""
    pytest.importorskip("torch")
    from tjap.registry import make as make_policy

    st = live_state(
        parse_squeue(SQUEUE),
        parse_jobcomp(JOBCOMP),
        T0,
        compress=720,
        cluster_nodes=76,
        pair=Pair(nodes=1),
        pred_job_id=42,
    )
    ep = LiveEpisode()
    ep.update(st)
    for _ in range(3):
        ep.record()
    assert (ep.observation()[-3:] == ep.features()).all() and (ep.observation()[:-3] == 0).all()
    for name in ("moe", "rf", "moe_dqn"):
        provisioner = make_policy("provision", name)
        submit, predicted = decide(provisioner, ep)
        assert isinstance(submit, bool) and predicted is not None and np.isfinite(predicted)
        assert submit == provisioner.decide(ep)  # deterministic for these rules
    result = LiveResult("moe", 720, {"nodes": 1}, 42, 45, pred_end=T0 + 180, succ_start=T0 + 181)
    assert result.outcome_wall_s == 1 and result.outcome_h == pytest.approx(0.2)
    d = result.to_dict()
    assert d["interruption_h"] == pytest.approx(0.2) and d["overlap_h"] == 0
    assert "+0.20 h trace (interruption)" in format_decisions(result)


def test_cli_names_how_to_start_slurm_when_it_is_unreachable(tmp_path, capsys):
    from tjap.cli import main

    code = main(
        [
            "provision",
            "live",
            "--policy",
            "reactive",
            "--slurm-conf",
            str(tmp_path / "missing.conf"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 3 and len(err.splitlines()) == 1  # 3: Slurm cannot be reached
    assert err.startswith("tjap: error: cannot read the Slurm configuration")
    assert "tjap provision live --local" in err and "bash .ci/install-slurm" in err
    assert main(["provision", "live", "--local", "--slurm-conf", "x.conf"]) == 2
    assert "drop --slurm-conf" in capsys.readouterr().err
