"""The placement service's pure parts (no Slurm): squeue parsing of held jobs, which jobs it may
touch, the paper's order and greedy prefix, windows waited across passes, the window record's
JSON, the ``guarded`` method on random irregular trees, and the command line's one-line errors.
The service against a real Slurm is tests/slurm/test_slurm_service_live.py."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_cases import IRREGULAR, random_window

import tjap
from tjap.cli import main
from tjap.cli.slurm import describe
from tjap.core.errors import InvalidInputError, UnknownMethodError
from tjap.heuristics.tree.guarded import solve_guarded
from tjap.placement.slurm.client import (
    PendingJob,
    SlurmClient,
    SlurmError,
    parse_pending,
    parse_test_only,
    transient,
    unreachable,
)
from tjap.placement.slurm.queue import (
    WaitTracker,
    eligible,
    hold_for_locality,
    plan_window,
    priority_key,
)
from tjap.placement.slurm.readers import State
from tjap.placement.tree.cost import assignment_cost, job_cost
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window
from tjap.placement.tree.workload import select_prefix
from tjap.slurm.service import PlacementService, ServiceConfig

TREE = Topology.from_slurm("""
SwitchName=top Switches=m1,m2,c
SwitchName=m1 Switches=a,b
SwitchName=a Nodes=n[01-04]
SwitchName=b Nodes=n[05-06]
SwitchName=m2 Switches=d,e
SwitchName=d Nodes=n[07-09]
SwitchName=e Nodes=n[10-11]
SwitchName=c Nodes=n[12-14]
""")

#: squeue -h -t PENDING,RUNNING -o PENDING_FORMAT (SLURM_TIME_FORMAT=%s) as Slurm 22.05.8 prints
#: it (a pending job's start is N/A, a running job's its Unix start); the users, accounts, array
#: and the UNLIMITED / day-long limits are edited in to cover those cases.
SQUEUE_HELD = """\
2|PENDING|JobHeldUser|1|1795623293|root|(null)|main|0|n01||(null)|N/A|5:00|wrap
1|PENDING|JobHeldUser|3|1795623293|root|(null)|main|0|||(null)|N/A|1:30:00|wrap
7|PENDING|JobHeldAdmin|2|1795623300|bob|physics|main|0|||(null)|N/A|UNLIMITED|sim|a|b
8_[1-4]|PENDING|JobHeldUser|1|1795623301|bob|physics|main|0|||(null)|N/A|3:00|array
9|PENDING|Priority|2|1795623302|eve|(null)|main|4294|||(null)|N/A|1-00:00:00|x
10|RUNNING|None|2|1795623290|root|(null)|main|1|||(null)|1795623291|3:00|run
"""


def job(
    job_id,
    nodes,
    *,
    submit=0,
    reason="JobHeldUser",
    state="PENDING",
    partition="main",
    req="",
    exc="",
    features="",
    text=None,
    user="u",
) -> PendingJob:
    return PendingJob(
        job_id=job_id,
        job_text=text or str(job_id),
        state=state,
        reason=reason,
        nodes=nodes,
        submit_time=submit,
        user=user,
        account="",
        partition=partition,
        priority=0,
        req_nodes=req,
        exc_nodes=exc,
        features=features,
        name="j",
    )


# -- squeue ------------------------------------------------------------------------------------
def test_parse_pending_reads_held_jobs():
    jobs = parse_pending(SQUEUE_HELD)
    assert [j.job_id for j in jobs] == [2, 1, 7, 8, 9, 10]
    assert [j.time_limit_s for j in jobs] == [300, 5400, None, 180, 86400, 180]
    assert [j.start_time for j in jobs] == [None] * 5 + [1795623291]
    assert jobs[5].state == "RUNNING" and not jobs[5].held_by_user
    assert jobs[0].req_nodes == "n01" and jobs[0].features == "" and jobs[0].account == ""
    assert jobs[1].held_by_user and jobs[1].nodes == 3 and jobs[1].submit_time == 1795623293
    assert jobs[2].reason == "JobHeldAdmin" and not jobs[2].held_by_user
    assert jobs[2].name == "sim|a|b" and jobs[2].account == "physics"
    assert not jobs[3].plain and jobs[3].job_text == "8_[1-4]"
    assert not jobs[4].held_by_user and jobs[4].priority == 4294


@pytest.mark.parametrize(
    "line",
    [
        "1|PENDING|JobHeldUser|3",
        "x|PENDING|JobHeldUser|3|0|u|a|p|0|||(null)|N/A|5:00|n",
        "1|PENDING|JobHeldUser|three|0|u|a|p|0|||x|N/A|5:00|n",
        "1|PENDING|JobHeldUser|3|0|u|a|p|0|||x|N/A|five|n",
    ],
)
def test_parse_pending_rejects_bad_lines_in_one_line(line):
    with pytest.raises(SlurmError, match="unexpected squeue line") as err:
        parse_pending(line)
    assert "\n" not in str(err.value)


def test_parse_test_only():
    text = (
        "sbatch: Job 2 to start at 1795623399 using 3 processors on nodes n[01-03] in "
        "partition main"
    )
    assert parse_test_only(text) == ("n[01-03]", "main")
    assert parse_test_only("sbatch: error: Batch job submission failed") is None


def test_fingerprint_sees_what_matters():
    a = job(1, 3)
    assert a.fingerprint == job(1, 3, submit=99).fingerprint
    for other in (
        job(1, 4),
        job(1, 3, req="n01"),
        job(1, 3, reason="JobHeldAdmin"),
        job(1, 3, features="gpu"),
        job(1, 3, partition="x"),
        job(1, 3, user="v"),
    ):
        assert other.fingerprint != a.fingerprint


# -- which jobs -------------------------------------------------------------------------------
def test_eligible_jobs_and_why_not():
    assert eligible(job(1, 3), "main") is None
    cases = {
        "administrator": job(1, 3, reason="JobHeldAdmin"),
        "not held": job(1, 3, reason="Priority"),
        "partition": job(1, 3, partition="debug"),
        "array": job(1, 1, text="1_[1-3]"),
        "nodelist": job(1, 2, req="n[01-02]"),
        "exclude": job(1, 2, exc="n05"),
        "constraint": job(1, 2, features="gpu"),
        "state": job(1, 2, state="RUNNING"),
    }
    for word, j in cases.items():
        assert word in eligible(j, "main"), word
    # a node list this service set and left behind is not the user's own
    assert eligible(job(1, 2, req="n[01-02]"), "main", {1: ("n01", "n02")}) is None
    assert eligible(job(1, 2, req="n[01-02]"), "main", {1: ("n01", "n03")}) is not None


# -- the paper's order and prefix ------------------------------------------------------------
def test_order_more_waited_then_fewer_nodes_then_earlier():
    jobs = [job(1, 4, submit=10), job(2, 2, submit=20), job(3, 2, submit=5), job(4, 8)]
    tracker = WaitTracker()
    window, waiting = plan_window(jobs, 100, tracker, cap=None)
    assert [j.job_id for j in window] == [3, 2, 1, 4] and waiting == []
    tracker.after_window([1, 2, 3, 4], [4])
    window, _ = plan_window(jobs, 100, tracker, cap=None)
    assert [j.job_id for j in window] == [4, 3, 2, 1]


def test_prefix_stops_at_the_first_job_that_does_not_fit_and_at_the_cap():
    jobs = [job(1, 2), job(2, 3), job(3, 10), job(4, 1)]
    window, waiting = plan_window(jobs, 10, WaitTracker(), cap=None)
    assert [j.job_id for j in window] == [4, 1, 2] and [j.job_id for j in waiting] == [3]
    window, waiting = plan_window(jobs, 100, WaitTracker(), cap=1)
    assert [j.job_id for j in window] == [4, 1] and [j.job_id for j in waiting] == [2, 3]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 12), st.integers(0, 3)), min_size=0, max_size=10),
    st.integers(0, 30),
    st.one_of(st.none(), st.integers(1, 4)),
)
def test_plan_is_a_fitting_prefix_of_the_order(specs, idle, cap):
    jobs = [job(i + 1, n, submit=i) for i, (n, _) in enumerate(specs)]
    tracker = WaitTracker()
    tracker.waited = {i + 1: w for i, (_, w) in enumerate(specs) if w}
    window, waiting = plan_window(jobs, idle, tracker, cap)
    order = sorted(jobs, key=lambda j: priority_key(j, tracker.get(j.job_id)))
    assert window + waiting == order
    assert sum(j.nodes for j in window) <= idle
    assert cap is None or sum(j.nodes > 1 for j in window) <= cap
    assert len(window) == select_prefix([j.nodes for j in order], idle, cap)


def test_easy_backfill_fills_behind_the_blocked_job_without_delaying_it():
    # 4 idle; job 1 (6 nodes) waits for 2 more: a running 2-node job ends at t=100
    jobs = [job(1, 6, submit=1), job(2, 2, submit=2), job(3, 3, submit=3), job(4, 2, submit=4)]
    tracker = WaitTracker()
    tracker.waited = {1: 3}  # job 1 leads the order
    limits = {1: 600, 2: 50, 3: 500, 4: 500}
    window, waiting = plan_window(
        jobs, 4, tracker, None, backfill="easy", now=0.0, releases=[(100.0, 2)], limits=limits
    )
    # job 2 ends (t=50) before job 1's reservation (t=100); job 4 (2 nodes, ends at 500) would
    # take nodes job 1 needs then (extra 0); job 3 does not fit the 2 nodes left
    assert [j.job_id for j in window] == [2] and [j.job_id for j in waiting] == [1, 4, 3]
    # with more room at the reservation, long jobs fit in its extra nodes
    window, _ = plan_window(
        jobs, 4, tracker, None, backfill="easy", now=0.0, releases=[(100.0, 5)], limits=limits
    )
    assert [j.job_id for j in window] == [2, 4]
    # the paper's prefix alone takes nothing
    assert (
        plan_window(jobs, 4, tracker, None, now=0.0, releases=[(100.0, 2)], limits=limits)[0] == []
    )
    # a job that can never start (too few nodes even after every release) holds nothing back
    window, _ = plan_window(
        jobs, 4, tracker, None, backfill="easy", now=0.0, releases=[], limits=limits
    )
    assert [j.job_id for j in window] == [2, 4]
    with pytest.raises(InvalidInputError, match="unknown backfill"):
        plan_window(jobs, 4, tracker, None, backfill="conservative")


def _earliest_start(need, free, running):
    """Brute force: the first time (now = 0, or a job end) at which ``need`` nodes are free."""
    for t in sorted({0.0} | {e for e, _ in running}):
        if free + sum(n for e, n in running if e <= t) >= need:
            return t
    return float("inf")


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 8), st.integers(0, 2), st.integers(1, 400)), min_size=1, max_size=8
    ),
    st.lists(st.tuples(st.integers(1, 300), st.integers(1, 6)), max_size=4),
    st.integers(0, 12),
    st.one_of(st.none(), st.integers(1, 3)),
)
def test_easy_backfill_never_delays_the_reservation(specs, running, idle, cap):
    jobs = [job(i + 1, n, submit=i) for i, (n, _, _) in enumerate(specs)]
    tracker = WaitTracker()
    tracker.waited = {i + 1: w for i, (_, w, _) in enumerate(specs) if w}
    limits = {i + 1: lim for i, (_, _, lim) in enumerate(specs)}
    releases = [(float(e), n) for e, n in running]
    window, waiting = plan_window(
        jobs, idle, tracker, cap, backfill="easy", now=0.0, releases=releases, limits=limits
    )
    prefix, _ = plan_window(jobs, idle, tracker, cap)
    order = sorted(jobs, key=lambda j: priority_key(j, tracker.get(j.job_id)))
    assert sorted(j.job_id for j in window + waiting) == sorted(j.job_id for j in jobs)
    assert window[: len(prefix)] == prefix  # the prefix comes first
    assert sum(j.nodes for j in window) <= idle
    assert cap is None or sum(j.nodes > 1 for j in window) <= cap
    if len(prefix) < len(order) and len(window) > len(prefix):
        blocked = order[len(prefix)]
        free_prefix = idle - sum(j.nodes for j in prefix)
        run_prefix = releases + [(float(limits[j.job_id]), j.nodes) for j in prefix]
        before = _earliest_start(blocked.nodes, free_prefix, run_prefix)
        after = _earliest_start(
            blocked.nodes,
            idle - sum(j.nodes for j in window),
            run_prefix + [(float(limits[j.job_id]), j.nodes) for j in window[len(prefix) :]],
        )
        assert blocked not in window
        assert before == float("inf") or after <= before


def test_wait_tracker_counts_windows_and_forgets_gone_jobs():
    t = WaitTracker()
    t.after_window([1, 2, 3], [2, 3])
    t.after_window([1, 2, 3], [3])
    assert (t.get(1), t.get(2), t.get(3)) == (0, 1, 2)
    t.after_window([3], [])  # 1 and 2 left the queue
    assert t.waited == {3: 2}


# -- the window record -----------------------------------------------------------------------
def service(**options) -> PlacementService:
    """A service whose client is never called by decide/apply in dry-run mode."""
    return PlacementService(
        ServiceConfig(**{"time_limit_s": None, **options}),
        client=SlurmClient({"SLURM_CONF": "/nonexistent/slurm.conf"}),
    )


def state(idle, jobs) -> State:
    return State("main", TREE, list(idle), list(jobs), read_at=1795623293.5)


def test_window_record_shape_and_costs():
    svc = service(dry_run=True)
    idle = ["n02", "n03", "n04", "n05", "n07", "n08", "n10", "n11", "n12", "n13"]
    jobs = [job(11, 3), job(12, 2), job(13, 4), job(14, 9), job(15, 1, reason="JobHeldAdmin")]
    rec, failure = svc._finish(svc.apply(svc.decide(state(idle, jobs))))
    assert failure is None
    rec = json.loads(json.dumps(svc.record(rec), allow_nan=False))
    for key in (
        "event",
        "window",
        "time",
        "time_iso",
        "partition",
        "method",
        "dry_run",
        "idle",
        "idle_count",
        "reserved",
        "held",
        "sizes",
        "jobs",
        "waiting",
        "ignored",
        "cost",
        "slurm_tree_cost",
        "scas_optimum",
        "winner",
        "status",
        "solve_s",
        "placed",
    ):
        assert key in rec, key
    assert rec["event"] == "window" and rec["method"] == "guarded" and rec["dry_run"]
    assert expand_hostlist(rec["idle"]) == idle and rec["idle_count"] == 10
    assert rec["sizes"] == [2, 3, 4] and [e["job_id"] for e in rec["jobs"]] == [12, 11, 13]
    assert rec["waiting"] == [{"job_id": 14, "nodes_requested": 9, "waited": 0}]
    assert rec["ignored"] == [{"job_id": 15, "reason": "held by an administrator"}]
    used = []
    for e in rec["jobs"]:
        nodes = expand_hostlist(e["nodes"])
        assert len(nodes) == e["nodes_requested"] and set(nodes) <= set(idle)
        assert e["outcome"] == "dry-run" and e["reason"] is None and e["waited"] == 0
        used += nodes
    assert len(set(used)) == len(used)
    assert rec["cost"] == pytest.approx(sum(e["cost"] for e in rec["jobs"]))
    assert rec["cost"] <= rec["slurm_tree_cost"] + 1e-9
    assert rec["cost"] <= rec["scas_optimum"] + 1e-9
    window = Window(TREE, idle, rec["sizes"])
    ids = [TREE.node_indices(expand_hostlist(e["nodes"])) for e in rec["jobs"]]
    assert assignment_cost(TREE, ids) == pytest.approx(rec["cost"])
    assert rec["slurm_tree_cost"] == pytest.approx(tjap.solve(window, "slurm-tree").objective)
    assert rec["scas_optimum"] == pytest.approx(tjap.solve(window, "dp").objective)


def test_a_tree_window_is_one_solve_of_guarded(monkeypatch):
    import tjap.slurm.service as module

    seen = []

    def counted(window, method, **options):
        seen.append(method)
        return tjap.solve(window, method, **options)

    monkeypatch.setattr(module, "solve", counted)
    rec = service(dry_run=True).decide(state(TREE.node_names, [job(1, 3), job(2, 5)]))
    assert seen == ["guarded"] and rec["winner"] in ("scas", "slurm-tree")
    assert rec["cost"] <= min(rec["slurm_tree_cost"], rec["scas_optimum"]) + 1e-9


def test_other_methods_log_slurms_cost_beside():
    svc = service(dry_run=True, method="seq")
    rec = svc.decide(state(TREE.node_names, [job(1, 3), job(2, 5)]))
    assert rec["method"] == "seq" and rec["slurm_tree_cost"] is not None
    assert rec["scas_optimum"] is not None and rec["scas_optimum"] <= rec["cost"] + 1e-9


def test_window_record_names_the_backfilled_jobs():
    svc = service(dry_run=True)
    jobs = [job(1, 10, submit=1), job(2, 3, submit=2), job(3, 2, submit=3)]
    svc.tracker.waited = {1: 2}
    st_ = State(
        "main",
        TREE,
        TREE.node_names[:6],
        jobs,
        read_at=1000.0,
        releases=[(1100.0, 8)],
        limits={1: 600, 2: 60, 3: 600},
    )
    rec = svc.decide(st_)
    # job 1 waits for t=1100; job 2 ends at 1060 first; job 3 fits the reservation's extra 2
    assert [e["job_id"] for e in rec["jobs"]] == [3, 2] and rec["backfilled"] == [3, 2]
    assert rec["backfill"] == "easy" and [w["job_id"] for w in rec["waiting"]] == [1]
    prefix_only = service(dry_run=True, backfill="none")
    prefix_only.tracker.waited = {1: 2}
    assert prefix_only.decide(st_)["jobs"] == []
    with pytest.raises(InvalidInputError, match="unknown backfill"):
        ServiceConfig(backfill="textbook").validate()


def test_windows_waited_grow_across_passes_until_the_job_fits():
    svc = service(dry_run=True, backfill="none")
    jobs = [job(1, 10, submit=1), job(2, 3, submit=2), job(3, 2, submit=3)]

    def window(idle_count):
        rec, _ = svc._finish(svc.apply(svc.decide(state(TREE.node_names[:idle_count], jobs))))
        return (
            [(e["job_id"], e["waited"]) for e in rec["jobs"]],
            [(e["job_id"], e["waited"]) for e in rec["waiting"]],
        )

    assert window(10) == ([(3, 0), (2, 0)], [(1, 0)])
    assert svc.tracker.waited == {1: 1}
    # the long waiter leads and blocks the prefix while it does not fit
    assert window(4) == ([], [(1, 1), (3, 0), (2, 0)])
    assert svc.tracker.waited == {1: 2, 2: 1, 3: 1}
    assert window(14) == ([(1, 2), (3, 1)], [(2, 1)])
    assert svc.tracker.waited == {2: 2}  # placed jobs are forgotten


def test_empty_window_and_log_file(tmp_path):
    svc = PlacementService(
        ServiceConfig(),
        log_path=tmp_path / "log.jsonl",
        client=SlurmClient({"SLURM_CONF": "/nonexistent"}),
    )
    rec = svc.decide(state(["n01"], [job(1, 3)]))
    assert rec["jobs"] == [] and rec["cost"] is None and len(rec["waiting"]) == 1
    svc.record({"event": "x", "value": 1})
    svc.record({"event": "y"})
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert [json.loads(ln)["event"] for ln in lines] == ["x", "y"]


def test_failure_classification():
    assert unreachable(SlurmError("cannot reach slurmctld: connect failure; is Slurm running?"))
    assert unreachable(SlurmError("squeue timed out after 30 s; is slurmctld responding?"))
    assert transient(SlurmError("cannot reach slurmctld: x"))
    assert not transient(SlurmError("sbatch not found: Slurm's commands are not installed"))
    assert not transient(SlurmError("cannot read the Slurm configuration: /x does not exist"))


# -- the guarded method ----------------------------------------------------------------------
def check_guarded(w: Window, **options):
    r = tjap.solve(w, "guarded", **options)
    assert r.is_feasible() and r.method == "guarded"
    slurm = tjap.solve(w, "slurm-tree")
    dp = tjap.solve(w, "dp")
    assert r.objective <= dp.objective + 1e-9
    if slurm.has_solution:
        assert r.objective <= slurm.objective + 1e-9
        assert r.info["slurm_tree_cost"] == pytest.approx(slurm.objective)
    assert r.info["scas_optimum"] == pytest.approx(dp.objective)
    assert r.info["winner"] in ("scas", "slurm-tree", "freeform")
    assert r.objective == pytest.approx(r.info["candidates"][r.info["winner"]]["cost"])
    return r


@pytest.mark.parametrize("seed", range(40))
def test_guarded_never_above_slurm_nor_scas_on_random_trees(seed):
    w = random_window(seed, max_idle=12, max_jobs=4)
    r = check_guarded(w)
    again = tjap.solve(w, "guarded")
    assert again.assignment == r.assignment and again.info["winner"] == r.info["winner"]
    assert r.info["candidates"]["freeform"]["status"] == "NOT_RUN"


@pytest.mark.parametrize("seed", range(8))
def test_guarded_with_free_form_improvement(seed):
    w = random_window(100 + seed, max_idle=10, max_jobs=3)
    r = check_guarded(w, time_limit_s=20)
    free = tjap.solve(w, "freeform", time_limit_s=20)
    assert r.objective == pytest.approx(free.objective)
    assert r.status.value == "OPTIMAL"


def test_guarded_picks_slurm_when_it_beats_the_contiguous_optimum():
    """A window where Slurm's non-contiguous choice is cheaper than every SCAS placement."""
    found = None
    for seed in itertools.count():
        w = random_window(seed, max_idle=12, max_jobs=4)
        slurm = tjap.solve(w, "slurm-tree")
        if slurm.has_solution and slurm.objective < tjap.solve(w, "dp").objective - 1e-6:
            found = w
            break
        if seed > 400:
            break
    assert found is not None, "no window where slurm-tree beats SCAS in 400 seeds"
    r = tjap.solve(found, "guarded")
    assert r.info["winner"] == "slurm-tree" and r.objective < r.info["scas_optimum"]


def test_guarded_on_the_irregular_tree_and_bad_input():
    w = Window(IRREGULAR, IRREGULAR.node_names, [2, 3, 4])
    check_guarded(w)
    with pytest.raises(InvalidInputError, match="Window"):
        solve_guarded("not a window")
    assert "guarded" in tjap.methods()


# -- arguments -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, words",
    [
        (["slurm", "place", "--interval", "abc"], "--interval must be a number"),
        (
            ["slurm", "place", "--interval", "0"],
            "interval must be more than 0 and at most 86400 s, got 0.0",
        ),
        (["slurm", "place", "--interval", "86401"], "interval must be more than 0 and at most"),
        (["slurm", "place", "--interval", "nan"], "finite"),
        (["slurm", "place", "--time-limit", "-1"], "time limit must be positive"),
        (["slurm", "place", "--cap", "0"], "cap must be"),
        (["slurm", "place", "--cap", "two"], "--cap must be a whole number"),
        (["slurm", "place", "--retries", "-2"], "retries"),
        (["slurm", "place", "--method", "nope"], "unknown method 'nope'"),
        (["slurm", "place", "--users", "alice,b ob"], "bad user name"),
        (["slurm", "advise", "--partition", "a=b"], "bad partition name"),
        (["slurm", "advise", "--method", "nope"], "choose one of"),
        (["slurm", "place", "--locality-wait", "60"], "--locality-wait needs --locality-slack"),
        (["slurm", "place", "--locality-slack", "half"], "--locality-slack must be a number"),
        (["slurm", "place", "--locality-slack", "-0.1"], "locality slack must be a number >= 0"),
        (
            ["slurm", "advise", "--locality-slack", "0.5", "--locality-wait", "0"],
            "locality wait must be more than 0 and at most 604800 s",
        ),
    ],
)
def test_bad_arguments_are_one_line_errors(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("tjap: error:") and words in err and err.count("\n") == 1


def test_missing_slurm_conf_is_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "missing.conf"))
    assert main(["slurm", "advise"]) == 3  # Slurm cannot be reached
    err = capsys.readouterr().err
    assert "does not exist" in err and err.count("\n") == 1
    assert main(["slurm", "place", "--once", "--log", str(tmp_path / "log")]) == 3
    events = [json.loads(ln)["event"] for ln in (tmp_path / "log").read_text().splitlines()]
    assert events == ["start", "stop"]


def test_unwritable_log_is_one_line(tmp_path):
    with pytest.raises(InvalidInputError, match="cannot write the log"):
        PlacementService(ServiceConfig(), log_path=tmp_path / "no" / "such" / "dir.jsonl")


def test_service_config_validation():
    assert ServiceConfig().validate().method == "guarded"
    with pytest.raises(UnknownMethodError):
        ServiceConfig(method="x").validate()
    with pytest.raises(InvalidInputError, match="interval"):
        ServiceConfig(interval_s=float("inf")).validate()
    with pytest.raises(InvalidInputError, match="account"):
        ServiceConfig(accounts=("a b",)).validate()


# -- holding jobs for locality ---------------------------------------------------------------
def _cheapest(names, size):
    """Brute force: the least CH cost of ``size`` of the node ``names`` on TREE."""
    return min(
        job_cost(TREE, TREE.node_indices(list(c))) for c in itertools.combinations(names, size)
    )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.booleans(), min_size=14, max_size=14),
    st.lists(st.tuples(st.integers(1, 6), st.integers(0, 400)), min_size=1, max_size=4),
    st.sampled_from([0.0, 0.25, 1.0]),
)
def test_hold_for_locality_against_brute_force(idle_mask, specs, slack):
    idle = [n for n, keep in zip(TREE.node_names, idle_mask) if keep]
    jobs = [job(i + 1, n, submit=1000 - waited) for i, (n, waited) in enumerate(specs)]
    floors = {}
    held = hold_for_locality(jobs, TREE, idle, TREE.node_names, 1000.0, slack, 300.0, floors=floors)
    by_id = {h["job_id"]: h for h in held}
    for j, (n, waited) in zip(jobs, specs):
        fits = n <= len(idle)
        expect = (
            n > 1
            and fits
            and waited < 300
            and _cheapest(idle, n) > (1 + slack) * _cheapest(TREE.node_names, n) + 1e-9
        )
        assert (j.job_id in by_id) == expect
        if expect:
            h = by_id[j.job_id]
            assert h["cost_now"] == pytest.approx(_cheapest(idle, n))
            assert h["best"] == pytest.approx(_cheapest(TREE.node_names, n))
            assert h["waited_s"] == waited and h["nodes_requested"] == n
            assert h["wait_left_s"] == 300 - waited
    assert all(floors[n] == pytest.approx(_cheapest(TREE.node_names, n)) for n in floors)


def test_hold_for_locality_rejects_negative_settings():
    with pytest.raises(InvalidInputError, match="slack and wait"):
        hold_for_locality([], TREE, [], TREE.node_names, 0.0, -1.0, 10.0)


def test_service_holds_a_scattered_job_until_its_wait_is_over():
    # a 4-node job on one node of each of four leaves: far above its best (one leaf of 4)
    idle = ["n01", "n05", "n07", "n10", "n12"]
    nodes = TREE.node_names
    old = service(dry_run=True, locality_slack=0.5, locality_wait_s=60.0)
    st_ = State(
        "main",
        TREE,
        idle,
        [job(1, 4, submit=1000), job(2, 1, submit=1001)],
        read_at=1030.0,
        nodes=nodes,
    )
    rec = old.decide(st_)
    assert [w["job_id"] for w in rec["waiting"]] == [1]
    (h,) = rec["held_for_locality"]
    assert h["job_id"] == 1 and h["waited_s"] == 30.0 and h["wait_left_s"] == 30.0
    assert h["cost_now"] == pytest.approx(_cheapest(idle, 4))
    assert h["best"] == pytest.approx(_cheapest(nodes, 4)) and h["cost_now"] > 1.5 * h["best"]
    assert rec["sizes"] == [1]  # the one-node job is placed all the same
    assert any("held for locality" in line for line in describe(rec.record))
    # past the wait it takes the best nodes there are
    late = State("main", TREE, idle, [job(1, 4, submit=1000)], read_at=1060.0, nodes=nodes)
    rec = old.decide(late)
    assert rec["held_for_locality"] == [] and rec["sizes"] == [4]
    # without a slack nothing is held, nor with a slack this scatter stays within
    assert service(dry_run=True).decide(st_)["held_for_locality"] == []
    assert service(dry_run=True, locality_slack=3.0).decide(st_)["held_for_locality"] == []


def test_locality_settings_are_validated():
    with pytest.raises(InvalidInputError, match="locality slack"):
        ServiceConfig(locality_slack=float("nan")).validate()
    with pytest.raises(InvalidInputError, match="locality wait"):
        ServiceConfig(locality_slack=0.5, locality_wait_s=-1).validate()
    assert ServiceConfig(locality_slack=0, locality_wait_s=1).validate().locality_slack == 0
