"""The batch-queue simulator: hand-computed schedules, an independent reference for FCFS and EASY,
reservation guarantees, feasibility, priority, dependencies, snapshots and warm starts."""

from __future__ import annotations

import numpy as np
import pytest
from batch_reference import job_tables, jobs_starts
from hypothesis import given, settings
from hypothesis import strategies as st

from tjap.core.errors import InvalidInputError
from tjap.placement.batch import _kernels as k
from tjap.placement.batch.jobs import Jobs
from tjap.placement.batch.simulator import Priority, SchedulerConfig, Simulator, simulate
from tjap.placement.tree.fat_tree import FatTree

EXACT = dict(bf_interval_s=0, bf_resolution_s=1)


def five_jobs() -> Jobs:
    # (submit, nodes, limit = runtime) on 4 nodes; worked by hand in the comments of the test
    return Jobs.build(
        submit_s=[0, 1, 2, 3, 4],
        nodes=[3, 2, 4, 1, 1],
        limit_s=[10, 10, 10, 20, 5],
        runtime_s=[10, 10, 10, 20, 5],
    )


@pytest.mark.parametrize(
    "backfill, starts",
    [
        # none: strict order. J1 waits for J0 (10); J2 needs all 4 nodes, after J1 (20); J3, J4 after J2.
        ("none", [0, 10, 20, 30, 30]),
        # easy: J1 reserved at 10 (2 nodes spare then). J3 (1 node) backfills at 3: it delays no
        # reservation (J2 has none). At 10 J1 starts, J2 becomes the head, reserved at 23 (when J3
        # ends); J4 fits before 23 and starts at 10.
        ("easy", [0, 10, 23, 3, 10]),
        # conservative: J2 is reserved at 20 on all 4 nodes, so J3 (20 s) cannot start at 3 without
        # delaying it; J3 is reserved at 30 and J4 (5 s) fits at 4.
        ("conservative", [0, 10, 20, 30, 4]),
        # slurm (every tested job reserved, recomputed each pass) agrees with conservative here
        ("slurm", [0, 10, 20, 30, 4]),
    ],
)
def test_hand_computed_schedules(backfill, starts):
    r = simulate(five_jobs(), 4, SchedulerConfig(backfill=backfill, **EXACT))
    assert r.start_s.tolist() == starts
    assert (r.end_s - r.start_s).tolist() == [10, 10, 10, 20, 5]


def test_limits_not_runtimes_drive_reservations():
    # J0 runs 5 s of a 100 s limit; J1 needs all 3 nodes. J1's reservation is at J0's *limit*
    # (100): the scheduler cannot know J0 ends at 5. So J2 (1 node, 30 s) backfills at 2, and
    # J1, which could have started at 5, waits for J2 until 32.
    jobs = Jobs.build(
        submit_s=[0, 1, 2], nodes=[2, 3, 1], limit_s=[100, 10, 30], runtime_s=[5, 10, 30]
    )
    r = simulate(jobs, 3, SchedulerConfig(backfill="easy", **EXACT))
    assert r.start_s.tolist() == [0, 32, 2]
    assert r.first_reservation_s[1] == 100


# -- an independent reference for none and EASY: tests/oracles/batch_reference.py
def reference(jobs: Jobs, n: int, easy: bool) -> list[int]:
    return jobs_starts(jobs, n, easy)


@settings(max_examples=300, deadline=None)
@given(job_tables())
def test_fcfs_and_easy_match_the_textbook_reference(case):
    jobs, n = case
    for backfill, easy in (("none", False), ("easy", True)):
        r = simulate(jobs, n, SchedulerConfig(backfill=backfill, bf_max_job_test=10**6, **EXACT))
        assert r.start_s.tolist() == reference(jobs, n, easy), backfill


def assert_feasible(r, n):
    """Every job ran exactly its runtime, and at no time do two jobs share a node."""
    jobs = r.jobs
    assert (r.start_s >= jobs.submit_s).all()
    assert ((r.end_s - r.start_s) == jobs.runtime_s).all()
    for a in range(len(jobs)):
        nodes_a = r.nodes_of(a)
        assert len(set(nodes_a)) == jobs.nodes[a] and all(0 <= v < n for v in nodes_a)
        for b in range(a + 1, len(jobs)):
            if r.start_s[a] < r.end_s[b] and r.start_s[b] < r.end_s[a]:
                assert not set(nodes_a) & set(r.nodes_of(b)), (a, b)


@settings(max_examples=200, deadline=None)
@given(
    job_tables(), st.sampled_from(["easy", "conservative"]), st.integers(0, 20), st.integers(1, 7)
)
def test_reservations_are_never_delayed(case, backfill, interval, resolution):
    """EASY: the head's reservation holds; conservative: every job's first reservation holds
    (priorities equal, so the order is first come, first served)."""
    jobs, n = case
    r = simulate(
        jobs,
        n,
        SchedulerConfig(backfill=backfill, bf_interval_s=interval, bf_resolution_s=resolution),
    )
    held = r.first_reservation_s >= 0
    assert (r.start_s[held] <= r.first_reservation_s[held]).all()
    assert_feasible(r, n)


@settings(max_examples=100, deadline=None)
@given(job_tables(), st.sampled_from(["none", "easy", 2, "slurm", "conservative"]))
def test_every_schedule_is_feasible_and_fcfs_keeps_order(case, backfill):
    jobs, n = case
    r = simulate(jobs, n, SchedulerConfig(backfill=backfill, bf_interval_s=5))
    assert_feasible(r, n)
    if backfill == "none":
        assert (np.diff(r.start_s) >= 0).all()


# -- priority ----------------------------------------------------------------------------------
def _priority(now, eligible, nodes=1, **weights):
    p = Priority(**weights)
    sim = Simulator(
        Jobs.build(submit_s=[0], nodes=[nodes], limit_s=[10], runtime_s=[10]),
        10,
        SchedulerConfig(priority=p),
    )
    return k.priority(
        0,
        now,
        np.array([nodes]),
        np.zeros(1, np.int64),
        np.array([eligible]),
        np.zeros(1),
        0.0,
        1,
        sim._iconf,
        sim._fconf,
    )


def test_aging_stops_at_the_cap():
    day = 86400
    assert _priority(day, 0, age=1000, max_age_s=7 * day) == np.floor(1000 / 7)
    assert _priority(7 * day, 0, age=1000, max_age_s=7 * day) == 1000
    assert _priority(70 * day, 0, age=1000, max_age_s=7 * day) == 1000


def test_size_factor_and_favor_small():
    assert _priority(0, 0, nodes=5, job_size=100) == 50
    assert _priority(0, 0, nodes=1, job_size=100, favor_small=True) == 100
    assert _priority(0, 0, nodes=10, job_size=100, favor_small=True) == 10


def test_capped_aging_lets_size_decide():
    # A (1 node) is older than B (2 nodes). Uncapped, A's age wins; once both ages are capped,
    # B's larger size factor wins. A 4-node blocker holds the cluster until t = 3 days.
    day = 86400
    jobs = Jobs.build(
        submit_s=[0, 1, 2 * day],
        nodes=[4, 1, 2],
        limit_s=[3 * day, 10, 10],
        runtime_s=[3 * day, 10, 10],
    )
    cfg = dict(backfill="none", **EXACT)
    capped = Priority(age=1000, job_size=10, max_age_s=600, calc_period_s=60)
    uncapped = Priority(age=1000, job_size=10, max_age_s=10 * day, calc_period_s=60)
    r_capped = simulate(jobs, 4, SchedulerConfig(priority=capped, **cfg))
    r_uncapped = simulate(jobs, 4, SchedulerConfig(priority=uncapped, **cfg))
    assert r_capped.start_s[2] <= r_capped.start_s[1]  # B first (or together)
    assert r_uncapped.start_s[1] <= r_uncapped.start_s[2]  # A first
    assert r_capped.start_s[2] == 3 * day


def test_fairshare_prefers_the_light_user():
    # user 0 has used the cluster heavily; at t = 1000 both users submit a 2-node job on 2 nodes
    jobs = Jobs.build(
        submit_s=[0, 1000, 1000, 1000],
        nodes=[2, 2, 2, 2],
        limit_s=[1000, 100, 100, 100],
        runtime_s=[999, 100, 100, 100],
        user=[0, 0, 0, 1],
        job_id=[1, 2, 3, 4],
    )
    prio = Priority(fairshare=1000, calc_period_s=10)
    r = simulate(jobs, 2, SchedulerConfig(backfill="none", priority=prio, **EXACT))
    assert r.start_s[3] < r.start_s[1] and r.start_s[3] < r.start_s[2]
    plain = simulate(jobs, 2, SchedulerConfig(backfill="none", **EXACT))
    assert plain.start_s[3] > plain.start_s[2]


# -- dependencies ------------------------------------------------------------------------------
def test_dependent_job_waits_for_its_parent_and_blocks_nobody():
    jobs = Jobs.build(
        submit_s=[0, 1, 2],
        nodes=[1, 1, 1],
        limit_s=[50, 10, 10],
        runtime_s=[40, 10, 10],
        job_id=[10, 11, 12],
        depends_on_id=[-1, 10, -1],
    )
    r = simulate(jobs, 4, SchedulerConfig(backfill="none", **EXACT))
    assert r.start_s.tolist() == [0, 40, 2]


# -- topology-aware placement --------------------------------------------------------------------
def test_contiguous_placement_takes_a_cheap_block():
    topo = FatTree(num_nodes=40, nodes_per_switch=4, switches_per_pod=5)
    jobs = Jobs.build(submit_s=[0, 0, 0], nodes=[3, 4, 2], limit_s=[10] * 3, runtime_s=[10] * 3)
    r = simulate(jobs, topology=topo, config=SchedulerConfig(placement="contiguous"))
    assert_feasible(r, 40)
    for row in range(3):  # each job fits on one switch, and takes one
        assert len({int(topo.switch_of[v]) for v in r.nodes_of(row)}) == 1


# -- snapshots, warm starts, determinism ---------------------------------------------------------
def random_jobs(seed, count=400, n=32):
    rng = np.random.default_rng(seed)
    limit = rng.integers(60, 5000, count)
    return Jobs.build(
        submit_s=np.cumsum(rng.integers(0, 120, count)),
        nodes=rng.integers(1, n, count),
        limit_s=limit,
        runtime_s=(limit * rng.random(count)).astype(int),
        user=rng.integers(0, 5, count),
    ), n


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_snapshot_restore_replays_identically(backfill):
    jobs, n = random_jobs(1)
    cfg = SchedulerConfig(backfill=backfill, priority=Priority(age=100, fairshare=100))
    full = simulate(jobs, n, cfg)
    sim = Simulator(jobs, n, cfg)
    sim.advance(int(jobs.submit_s[200]))
    snap = sim.snapshot()
    first = sim.run()
    sim.restore(snap)
    assert sim.now == snap.now_s
    second = sim.run()
    for r in (first, second):
        assert r.start_s.tolist() == full.start_s.tolist()


class _TinySlices:
    """Slices of 1-700 simulated seconds, at random: many kernel calls per run."""

    def __init__(self, unit, first=1, target_s=0.1):
        self.rng = np.random.default_rng(first)
        self.size = int(self.rng.integers(1, 700))

    def took(self, seconds):
        self.size = int(self.rng.integers(1, 700))


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative", "slurm"])
def test_slicing_a_run_changes_nothing(monkeypatch, backfill):
    """The simulator runs its kernel in slices of simulated time (so that Ctrl-C is seen between
    them); cut into hundreds of random slices, a run is the same as in one call."""
    import tjap.placement.batch.simulator as simulator

    jobs, n = random_jobs(3)
    cfg = SchedulerConfig(backfill=backfill, priority=Priority(age=100, fairshare=100))
    whole = simulate(jobs, n, cfg)
    monkeypatch.setattr(simulator, "Slices", _TinySlices)
    sliced = simulate(jobs, n, cfg)
    for name in ("start_s", "end_s", "start_seq"):
        assert getattr(sliced, name).tolist() == getattr(whole, name).tolist(), name


def test_runs_are_deterministic():
    jobs, n = random_jobs(2)
    cfg = SchedulerConfig(priority=Priority(age=10, job_size=5, fairshare=20))
    a, b = simulate(jobs, n, cfg), simulate(jobs, n, cfg)
    assert a.start_s.tolist() == b.start_s.tolist() and a.node_of.tolist() == b.node_of.tolist()


def test_warm_start_from_the_trace_state():
    jobs, n = random_jobs(3)
    recorded = simulate(jobs, n, SchedulerConfig(backfill="none"))
    traced = Jobs.build(
        submit_s=jobs.submit_s,
        nodes=jobs.nodes,
        limit_s=jobs.limit_s,
        runtime_s=jobs.runtime_s,
        recorded_start_s=recorded.start_s,
        recorded_end_s=recorded.end_s,
    )
    at = int(traced.submit_s[150])
    sim = Simulator.from_trace_state(traced, at, n, SchedulerConfig(backfill="none"))
    r = sim.run()
    # the same policy from the same state reproduces the recorded schedule
    assert r.start_s.tolist() == recorded.start_s.tolist()
    assert not r.simulated[(recorded.start_s <= at)].any()


def test_summary_fields():
    r = simulate(five_jobs(), 4, SchedulerConfig(backfill="easy", **EXACT))
    s = r.summary()
    assert s["jobs"] == 5 and s["makespan_s"] == 33 and s["mean_wait_s"] == (0 + 9 + 21 + 0 + 6) / 5
    assert s["utilization"] == pytest.approx((30 + 20 + 40 + 20 + 5) / (4 * 33))
    busy_t, busy = r.series()["busy"]
    assert busy.max() <= 4 and busy[-1] == 0


# -- bad input ---------------------------------------------------------------------------------
def test_bad_input_is_named():
    jobs = five_jobs()
    with pytest.raises(InvalidInputError, match="request more than the cluster's 3 nodes"):
        Simulator(jobs, 3)
    with pytest.raises(InvalidInputError, match="backfill must be one of"):
        SchedulerConfig(backfill="aggressive")
    with pytest.raises(InvalidInputError, match="needs a topology"):
        Simulator(jobs, 4, SchedulerConfig(placement="contiguous"))
    with pytest.raises(InvalidInputError, match="pass nodes=N"):
        Simulator(jobs)
    with pytest.raises(InvalidInputError, match="bf_interval_s"):
        SchedulerConfig(bf_interval_s=-1)
    with pytest.raises(InvalidInputError, match="weight age"):
        Priority(age=-1)
    with pytest.raises(InvalidInputError, match="recorded start"):
        Simulator.from_trace_state(jobs, 2, 4)


def test_release_delay_holds_nodes_after_the_end():
    jobs = Jobs.build(
        submit_s=[0, 0, 0],
        nodes=[2, 2, 1],
        limit_s=[10, 10, 10],
        runtime_s=[5, 5, 5],
        job_id=[1, 2, 3],
        depends_on_id=[-1, -1, 1],
    )
    r = simulate(jobs, 2, SchedulerConfig(backfill="none", release_delay_s=1, **EXACT))
    assert r.start_s.tolist() == [0, 6, 12]  # nodes back 1 s after each end; the child waits too
    assert r.end_s.tolist() == [5, 11, 17]


def test_hold_and_release():
    # the held job (row 1) is submitted at 0 but starts only once released, at 30
    jobs = Jobs.build(submit_s=[0, 0, 5], nodes=[1, 1, 1], limit_s=[100] * 3, runtime_s=[10] * 3)
    sim = Simulator(jobs, 4, SchedulerConfig(backfill="easy", **EXACT))
    sim.hold(1)
    sim.advance(20)
    assert sim.state(1) == "held" and sim.state(0) == "done" and sim.state(2) == "done"
    snap = sim.snapshot()
    sim.advance(30)
    sim.release(1)
    r = sim.run()
    assert r.start_s.tolist() == [0, 30, 5]
    sim.restore(snap)
    assert sim.state(1) == "held"
    sim.release(1)  # released at 20 this time
    assert sim.run().start_s[1] == 20
    with pytest.raises(InvalidInputError, match="not started"):
        sim.hold(0)


def test_a_change_made_between_events_is_scheduled_at_once():
    # regression: a release (or a warm start) while a job runs must schedule at that moment, not
    # at the running job's end
    jobs = Jobs.build(submit_s=[0, 0], nodes=[1, 1], limit_s=[100, 100], runtime_s=[100, 10])
    sim = Simulator(jobs, 4, SchedulerConfig(**EXACT))
    sim.hold(1)
    sim.advance(20)
    sim.release(1)
    assert sim.run().start_s.tolist() == [0, 20]
    traced = Jobs.build(
        submit_s=[0, 5],
        nodes=[3, 1],
        limit_s=[100, 100],
        runtime_s=[100, 10],
        recorded_start_s=[0, 50],
        recorded_end_s=[100, 60],
    )
    warm = Simulator.from_trace_state(traced, 10, 4, SchedulerConfig(**EXACT)).run()
    assert warm.start_s.tolist() == [0, 10]  # queued at 10 with a free node: starts at 10


@pytest.mark.parametrize(
    "whole, j2_limit, j2_start",
    [
        # J1 (3 of 4 nodes) is reserved at 10, when J0 ends; one node is spare from then on.
        (False, 20, 2),  # per-node reservation: J2 (1 node, 20 s) runs on the spare node
        (True, 20, 10),  # whole-node reservation: J2 would overlap it, so it waits for J1 to start
        (True, 7, 2),  # J2 ends at 9, strictly before the reservation: backfilled
        (
            True,
            8,
            10,
        ),  # J2 would end at 10, when the reservation begins: Slurm does not backfill it
    ],
)
def test_whole_node_reservations_and_the_strict_end_rule(whole, j2_limit, j2_start):
    jobs = Jobs.build(
        submit_s=[0, 1, 2],
        nodes=[2, 3, 1],
        limit_s=[10, 10, j2_limit],
        runtime_s=[10, 10, j2_limit],
    )
    r = simulate(jobs, 4, SchedulerConfig(backfill="easy", reserve_whole_node=whole, **EXACT))
    assert r.start_s.tolist() == [0, 10, j2_start]


def test_reserve_whole_node_must_be_a_bool():
    with pytest.raises(InvalidInputError, match="reserve_whole_node"):
        SchedulerConfig(reserve_whole_node="yes")
