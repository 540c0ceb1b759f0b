"""Online scheduling (tjap.placement.tree.online): per-job placement, the window policy against per-job FCFS and
EASY backfilling, their schedules' validity, metrics, bad input and the ``online`` CLI command."""

from __future__ import annotations

import itertools
import json
import signal
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest
from batch_reference import textbook_starts as reference_starts
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tjap import FatTree, InvalidInputError, job_cost
from tjap.cli import main
from tjap.placement.tree.online import (
    PLACEMENTS,
    POLICIES,
    best_single_job_nodes,
    place_job,
    replay,
    window_ticks,
)
from tjap.placement.tree.workload import Workload

CONVENTIONS = ("paper", "published")

#: Tiny layouts (num_nodes, nodes_per_switch, switches_per_pod); the last ones prune the last pod.
TINY_LAYOUTS = ((16, 2, 2), (16, 3, 2), (18, 2, 3), (20, 5, 4), (12, 4, 2), (14, 3, 3))
#: Layouts with at most 2 nodes per edge switch (see the freeform bug below).
TWO_PER_SWITCH = ((16, 2, 2), (18, 2, 3), (12, 2, 4), (10, 2, 2))


def small_tree() -> FatTree:
    """64 nodes: 4 per edge switch, 4 switches per pod, 4 pods."""
    return FatTree(num_nodes=64, nodes_per_switch=4, switches_per_pod=4)


def small_workload(num_jobs: int = 200, seed: int = 1) -> Workload:
    return Workload.generate(num_jobs, seed, max_nodes=16)


def tree_of(layout) -> FatTree:
    n, per_switch, per_pod = layout
    return FatTree(num_nodes=n, nodes_per_switch=per_switch, switches_per_pod=per_pod)


@st.composite
def idle_sets(draw, layouts=TINY_LAYOUTS, max_idle: int = 12):
    """(tree, sorted idle node ids, job size) on a tiny tree."""
    tree = tree_of(draw(st.sampled_from(layouts)))
    idle = draw(
        st.lists(
            st.integers(0, tree.num_nodes - 1),
            min_size=1,
            max_size=min(max_idle, tree.num_nodes),
            unique=True,
        )
    )
    size = draw(st.integers(1, len(idle)))
    return tree, np.array(sorted(idle), dtype=np.int64), size


def brute_min(tree: FatTree, idle, size: int, convention: str) -> float:
    return min(
        job_cost(tree, list(c), convention)
        for c in itertools.combinations(np.asarray(idle).tolist(), size)
    )


# -- schedule checks ---------------------------------------------------------------------------
def assert_valid_schedule(tree: FatTree, workload: Workload, jobs, schedule) -> None:
    """Every job started once, at or after its arrival, on exactly its requested number of
    distinct valid nodes, and no node runs two jobs at once (half-open [start, end) intervals)."""
    jobs = list(jobs)
    assert set(schedule.start_s) == set(jobs)
    assert set(schedule.nodes) == set(jobs)
    per_node = defaultdict(list)
    for j in jobs:
        start = schedule.start_s[j]
        nodes = schedule.nodes[j]
        assert start >= workload.arrival_s[j], f"job {j} starts at {start} before its arrival"
        assert len(nodes) == workload.requested_nodes[j], f"job {j} got {len(nodes)} nodes"
        assert len(set(nodes)) == len(nodes), f"job {j} got a node twice: {nodes}"
        assert all(0 <= v < tree.num_nodes for v in nodes)
        for v in nodes:
            per_node[v].append((start, start + int(workload.runtime_s[j]), j))
    for v, intervals in per_node.items():
        intervals.sort()
        for (_s1, e1, j1), (s2, _e2, j2) in zip(intervals, intervals[1:]):
            assert s2 >= e1, f"node {v}: job {j2} starts at {s2} while job {j1} runs until {e1}"


def make_workload(arrival, runtime, nodes) -> Workload:
    return Workload(
        np.array(arrival, dtype=np.int64),
        np.array(runtime, dtype=np.int64),
        np.array(nodes, dtype=np.int64),
    )


@st.composite
def random_workloads(draw, num_nodes: int = 16):
    n = draw(st.integers(5, 40))
    gaps = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))
    arrival = np.cumsum(gaps) - gaps[0]
    runtime = draw(st.lists(st.integers(1, 100), min_size=n, max_size=n))
    nodes = draw(st.lists(st.integers(1, num_nodes), min_size=n, max_size=n))
    return make_workload(arrival, runtime, nodes)


# -- place_job: first fit ------------------------------------------------------------------------
@given(idle_sets())
@settings(max_examples=50, deadline=None)
def test_firstfit_takes_lowest_idle_ids(case):
    tree, idle, size = case
    assert place_job(tree, idle, size, "firstfit") == idle[:size].tolist()


def test_firstfit_example():
    tree = small_tree()
    idle = np.array([3, 7, 8, 20, 40])
    assert place_job(tree, idle, 3) == [3, 7, 8]  # firstfit is the default


# -- place_job: contiguous -----------------------------------------------------------------------
@pytest.mark.parametrize("convention", CONVENTIONS)
@given(case=idle_sets(max_idle=16))
@settings(max_examples=60, deadline=None)
def test_contiguous_is_cheapest_block(convention, case):
    tree, idle, size = case
    m = idle.size
    got = place_job(tree, idle, size, "contiguous", convention)
    blocks = [[int(idle[(p + i) % m]) for i in range(size)] for p in range(m)]
    # a block of consecutive idle-sequence positions (possibly wrapping)
    assert any(sorted(got) == sorted(b) for b in blocks), f"{got} is no block of {idle.tolist()}"
    best = min(job_cost(tree, b, convention) for b in blocks)
    assert job_cost(tree, got, convention) == pytest.approx(best)


def test_contiguous_can_wrap():
    """The unique cheapest block wraps: D(4, 4) = [14, 15, 0, 1] takes two same-switch pairs."""
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    idle = np.array([0, 1, 4, 8, 14, 15])
    for conv in CONVENTIONS:
        got = place_job(tree, idle, 4, "contiguous", conv)
        assert sorted(got) == [0, 1, 14, 15]
    assert job_cost(tree, [0, 1, 14, 15]) == 14000.0


# -- place_job: free form ------------------------------------------------------------------------
@given(case=idle_sets(layouts=TWO_PER_SWITCH))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_freeform_is_brute_force_minimum_two_per_switch(case):
    """With at most two nodes per edge switch the per-pod fill cannot go wrong; both conventions."""
    tree, idle, size = case
    got = best_single_job_nodes(tree, idle, size)
    assert len(got) == size and len(set(got)) == size and set(got) <= set(idle.tolist())
    for conv in CONVENTIONS:
        assert job_cost(tree, got, conv) == pytest.approx(brute_min(tree, idle, size, conv))
    assert place_job(tree, idle, size, "freeform") == got


@given(case=idle_sets())
@example(case=(tree_of((16, 3, 2)), np.array([0, 1, 2, 3]), 2))
@example(case=(tree_of((20, 5, 4)), np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 15]), 8))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_freeform_is_brute_force_minimum(case):
    tree, idle, size = case
    got = best_single_job_nodes(tree, idle, size)
    assert len(got) == size and len(set(got)) == size and set(got) <= set(idle.tolist())
    for conv in CONVENTIONS:
        assert job_cost(tree, got, conv) == pytest.approx(brute_min(tree, idle, size, conv)), (
            f"{conv}: best_single_job_nodes({tree!r}, {idle.tolist()}, {size}) = {got}"
        )


def test_freeform_known_counterexample():
    tree = FatTree(num_nodes=20, nodes_per_switch=5, switches_per_pod=4)
    idle = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 15])
    got = place_job(tree, idle, 8, "freeform")
    assert job_cost(tree, got) == brute_min(tree, idle, 8, "paper") == 21500.0


def test_freeform_prefers_one_switch_then_one_pod():
    tree = small_tree()  # 4 nodes per switch, 16 per pod
    idle = np.array([0, 5, 6, 7, 9, 16, 17, 18, 19, 33])
    assert place_job(tree, idle, 4, "freeform") == [16, 17, 18, 19]
    assert place_job(tree, idle, 3, "freeform") in (
        [5, 6, 7],
        [16, 17, 18],
        [16, 17, 19],
        [16, 18, 19],
        [17, 18, 19],
    )


# -- place_job: errors ---------------------------------------------------------------------------
@pytest.mark.parametrize("placement", PLACEMENTS)
def test_place_job_too_large(placement):
    tree = small_tree()
    with pytest.raises(InvalidInputError, match="does not fit 3 idle nodes"):
        place_job(tree, np.array([0, 1, 2]), 4, placement)


def test_place_job_unknown_placement():
    with pytest.raises(InvalidInputError, match="placement"):
        place_job(small_tree(), np.array([0, 1, 2]), 2, "random")


# -- replay: every policy x placement ------------------------------------------------------------
CASES = [(p, q) for p in POLICIES for q in PLACEMENTS if p != "window" or q == "firstfit"]


@pytest.mark.parametrize("placement", ["contiguous", "freeform"])
def test_the_window_policy_refuses_a_per_job_placement(placement):
    """It used to ignore it (the same schedule as firstfit); it places with its method."""
    with pytest.raises(InvalidInputError, match="method='freeform'"):
        replay(small_tree(), small_workload(), policy="window", placement=placement)


@pytest.mark.parametrize("policy,placement", CASES)
def test_replay_valid_and_deterministic(policy, placement):
    tree, workload, jobs = small_tree(), small_workload(), range(10, 90)
    a = replay(tree, workload, policy=policy, placement=placement, jobs=jobs, seed=3)
    assert_valid_schedule(tree, workload, jobs, a)
    b = replay(tree, workload, policy=policy, placement=placement, jobs=jobs, seed=3)
    assert a.start_s == b.start_s
    assert a.nodes == b.nodes
    assert a.metrics() == b.metrics()


@pytest.mark.parametrize("policy,placement", CASES)
def test_replay_metrics(policy, placement):
    tree, workload, jobs = small_tree(), small_workload(), range(60)
    schedule = replay(tree, workload, policy=policy, placement=placement, jobs=jobs)
    m = schedule.metrics()
    assert set(m) == {
        "jobs",
        "multi_node_jobs",
        "mean_wait_s",
        "p95_wait_s",
        "makespan_s",
        "utilization",
        "mean_cost_paper",
        "mean_cost_published",
    }
    sizes = workload.requested_nodes[list(jobs)]
    runtimes = workload.runtime_s[list(jobs)]
    assert m["jobs"] == 60
    assert m["multi_node_jobs"] == int((sizes > 1).sum()) > 0
    waits = [schedule.start_s[j] - workload.arrival_s[j] for j in jobs]
    assert m["mean_wait_s"] == pytest.approx(np.mean(waits))
    assert 0 <= m["mean_wait_s"] <= m["p95_wait_s"] <= max(waits)
    assert m["makespan_s"] >= runtimes.max()
    assert 0 < m["utilization"] <= 1
    assert m["mean_cost_paper"] > 0 and m["mean_cost_published"] > 0
    multi = [j for j in jobs if workload.requested_nodes[j] > 1]
    for conv in CONVENTIONS:
        expected = np.mean([job_cost(tree, schedule.nodes[j], conv) for j in multi])
        assert m[f"mean_cost_{conv}"] == pytest.approx(expected)


def test_replay_paper_layout():
    tree = FatTree.from_layout("published")
    workload = Workload.generate(300, seed=5)
    jobs = range(100, 220)
    for policy, placement in (("window", "firstfit"), ("fcfs", "contiguous"), ("easy", "freeform")):
        schedule = replay(
            tree, workload, policy=policy, placement=placement, jobs=jobs, convention="published"
        )
        assert_valid_schedule(tree, workload, jobs, schedule)


@pytest.mark.parametrize("policy", ["fcfs", "easy"])
def test_placement_does_not_change_per_job_timing(policy):
    """FCFS and EASY decide on node counts only, so the placement changes nodes, not times."""
    tree, workload, jobs = small_tree(), small_workload(), range(80)
    runs = {q: replay(tree, workload, policy=policy, placement=q, jobs=jobs) for q in PLACEMENTS}
    assert runs["firstfit"].start_s == runs["contiguous"].start_s == runs["freeform"].start_s
    assert runs["firstfit"].reservations == runs["freeform"].reservations


def test_one_node_only_workload_has_zero_cost():
    tree = small_tree()
    w = make_workload([0, 0, 5, 9], [10, 20, 30, 40], [1, 1, 1, 1])
    for policy in POLICIES:
        m = replay(tree, w, policy=policy).metrics()
        assert m["multi_node_jobs"] == 0
        assert m["mean_cost_paper"] == m["mean_cost_published"] == 0.0


# -- FCFS --------------------------------------------------------------------------------------
@pytest.mark.parametrize("placement", PLACEMENTS)
def test_fcfs_starts_in_arrival_order(placement):
    tree, workload, jobs = small_tree(), small_workload(), range(150)
    schedule = replay(tree, workload, policy="fcfs", placement=placement, jobs=jobs)
    starts = [schedule.start_s[j] for j in jobs]
    assert starts == sorted(starts)
    assert any(s > workload.arrival_s[j] for j, s in zip(jobs, starts))  # the queue did build up


def test_fcfs_head_blocks_later_jobs():
    tree = FatTree(num_nodes=8, nodes_per_switch=2, switches_per_pod=2)
    # job 0 holds 6 nodes until 100; job 1 needs 4 (waits); job 2 needs 1 and would fit now
    w = make_workload([0, 1, 2], [100, 10, 10], [6, 4, 1])
    s = replay(tree, w, policy="fcfs")
    assert s.start_s == {0: 0, 1: 100, 2: 100}
    e = replay(tree, w, policy="easy")
    assert e.start_s == {0: 0, 1: 100, 2: 2}  # EASY backfills job 2 (ends at 12 <= shadow 100)
    assert e.reservations == {1: 100}


def test_easy_backfills_long_job_on_extra_nodes():
    tree = FatTree(num_nodes=8, nodes_per_switch=2, switches_per_pod=2)
    # job 0: 5 nodes until 100; head job 1 needs 6 -> shadow 100 with 8 - 6 = 2 extra nodes.
    # job 2 (2 nodes, 500 s) runs past the shadow but fits the extra nodes; job 3 (1 node, 500 s)
    # then finds no extra left and must wait.
    w = make_workload([0, 1, 2, 3], [100, 10, 500, 500], [5, 6, 2, 1])
    e = replay(tree, w, policy="easy")
    assert_valid_schedule(tree, w, range(4), e)
    assert e.start_s[2] == 2
    assert e.start_s[1] == 100 == e.reservations[1]
    assert e.start_s[3] >= 100


def test_easy_backfills_a_job_ending_exactly_at_the_shadow_time():
    """The paper's EASY rule: a job ending at the shadow time delays nobody, so it backfills even
    with no extra nodes (Slurm's strict rule, the batch simulator's default, would not)."""
    tree = FatTree(num_nodes=8, nodes_per_switch=2, switches_per_pod=2)
    # job 0: 6 nodes until 100; head job 1 needs all 8 (shadow 100, no extra node); job 2 (1 node,
    # 98 s) arrives at 2 and ends at 100 exactly
    w = make_workload([0, 1, 2], [100, 10, 98], [6, 8, 1])
    e = replay(tree, w, policy="easy")
    assert e.start_s == {0: 0, 1: 100, 2: 2} and e.reservations == {1: 100}
    from tjap.placement.batch.simulator import simulate
    from tjap.placement.tree.online import per_job_config, workload_jobs

    strict = simulate(
        workload_jobs(w, range(3)), 8, replace(per_job_config("easy"), bf_end_at_reservation=False)
    )
    assert strict.start_s.tolist() == [0, 100, 110]


def test_easy_counts_every_job_ending_at_the_shadow_time():
    """Jobs 0 and 1 both end at 100: the head (5 nodes) starts then with 3 nodes to spare, so the
    long one-node job 3 backfills at once. (The old per-job loop stopped counting at the first job
    that made the head fit, saw no spare node, and kept job 3 waiting until 100.)"""
    tree = FatTree(num_nodes=8, nodes_per_switch=2, switches_per_pod=2)
    w = make_workload([0, 0, 1, 2], [100, 100, 10, 500], [4, 3, 5, 1])
    e = replay(tree, w, policy="easy")
    assert_valid_schedule(tree, w, range(4), e)
    assert e.start_s == {0: 0, 1: 0, 2: 100, 3: 2} and e.reservations == {2: 100}


def textbook_starts(workload: Workload, num_nodes: int, policy: str) -> list[int]:
    """The paper's baselines in plain Python (tests/oracles/batch_reference.py): EASY predicts from the
    exact runtimes and a backfilled job may end by the shadow time."""
    runtime = workload.runtime_s
    return reference_starts(
        workload.arrival_s,
        workload.requested_nodes,
        runtime,
        runtime,
        num_nodes,
        policy == "easy",
        end_at_reservation=True,
    )


@given(workload=random_workloads(), policy=st.sampled_from(["fcfs", "easy"]))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_per_job_policies_match_the_textbook_reference(workload, policy):
    """The per-job policies run on the batch simulator; their start times are the textbook
    algorithm's."""
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    schedule = replay(tree, workload, policy=policy)
    got = [schedule.start_s[j] for j in range(workload.num_jobs)]
    assert got == textbook_starts(workload, tree.num_nodes, policy)


@given(
    workload=random_workloads(),
    policy=st.sampled_from(["fcfs", "easy"]),
    placement=st.sampled_from(PLACEMENTS),
    convention=st.sampled_from(CONVENTIONS),
)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_per_job_nodes_are_place_job_on_the_idle_nodes_at_each_start(
    workload, policy, placement, convention
):
    """Replaying the schedule in start order (jobs starting together in arrival order, ends
    before starts), every job got place_job's nodes for the nodes idle at its start."""
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    schedule = replay(tree, workload, policy=policy, placement=placement, convention=convention)
    busy_until = np.zeros(tree.num_nodes, dtype=np.int64)
    for j in sorted(range(workload.num_jobs), key=lambda j: (schedule.start_s[j], j)):
        t = schedule.start_s[j]
        idle = np.flatnonzero(busy_until <= t)
        expected = place_job(tree, idle, int(workload.requested_nodes[j]), placement, convention)
        assert sorted(schedule.nodes[j]) == sorted(expected), (j, t, idle.tolist())
        busy_until[schedule.nodes[j]] = t + workload.runtime_s[j]


# -- EASY property -----------------------------------------------------------------------------
@given(workload=random_workloads(), placement=st.sampled_from(PLACEMENTS))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_easy_never_delays_the_heads_reservation(workload, placement):
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    jobs = range(workload.num_jobs)
    schedule = replay(tree, workload, policy="easy", placement=placement)
    assert_valid_schedule(tree, workload, jobs, schedule)
    for j, reservation in schedule.reservations.items():
        assert reservation is not None
        assert reservation >= workload.arrival_s[j]
        assert schedule.start_s[j] <= reservation, (
            f"head job {j} reserved for t={reservation} but started at {schedule.start_s[j]}"
        )


@given(workload=random_workloads())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fcfs_property(workload):
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    jobs = range(workload.num_jobs)
    schedule = replay(tree, workload, policy="fcfs")
    assert_valid_schedule(tree, workload, jobs, schedule)
    starts = [schedule.start_s[j] for j in jobs]
    assert starts == sorted(starts)
    assert schedule.reservations == {}


@given(workload=random_workloads(), tau=st.integers(1, 40), cap=st.sampled_from([None, 1, 2, 5]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_window_property(workload, tau, cap):
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    jobs = range(workload.num_jobs)
    schedule = replay(tree, workload, policy="window", tau_s=tau, cap=cap, method="dp")
    assert_valid_schedule(tree, workload, jobs, schedule)
    first = int(workload.arrival_s[0])
    for j in jobs:
        assert (schedule.start_s[j] - first) % tau == 0
        assert schedule.start_s[j] > workload.arrival_s[j]  # arrivals of [t - tau, t) join at t


# -- window policy -----------------------------------------------------------------------------
@pytest.mark.parametrize("tau", [10, 60])
@pytest.mark.parametrize("method", ["seq", "dp"])
def test_window_starts_on_ticks(tau, method):
    tree, workload, jobs = small_tree(), small_workload(), range(20, 100)
    schedule = replay(tree, workload, policy="window", tau_s=tau, method=method, jobs=jobs)
    assert_valid_schedule(tree, workload, jobs, schedule)
    first = int(workload.arrival_s[jobs.start])
    for j in jobs:
        offset = schedule.start_s[j] - first
        assert offset > 0 and offset % tau == 0, (j, schedule.start_s[j], first)


@pytest.mark.parametrize("cap", [1, 2, 5, None])
@pytest.mark.parametrize("method", ["seq", "dp"])
def test_window_ticks_cap_and_first_fit_singles(cap, method):
    tree, workload = small_tree(), small_workload()
    first_job, last_job, tau = 0, 120, 60
    free_at = np.zeros(tree.num_nodes, dtype=np.int64)
    expected_t = int(workload.arrival_s[first_job])
    started_jobs = []
    for tick in window_ticks(
        tree,
        workload,
        first_job,
        last_job,
        tau_s=tau,
        cap=cap,
        method=method,
        convention="paper",
        seed=0,
    ):
        expected_t += tau
        assert tick.time_s == expected_t
        multi = [(j, n) for j, n in tick.started if workload.requested_nodes[j] > 1]
        singles = [(j, n) for j, n in tick.started if workload.requested_nodes[j] == 1]
        # multi-node jobs come first, then one-node jobs
        assert tick.started == multi + singles
        if tick.window is None:
            assert not multi
        else:
            assert cap is None or tick.window.num_jobs <= cap
            assert all(n > 1 for n in tick.window.job_sizes)
            assert list(tick.window.meta["jobs"]) == [j for j, _ in multi]
            assert (
                tick.window.idle_nodes.tolist() == np.flatnonzero(free_at <= tick.time_s).tolist()
            )
            assert [list(a) for a in tick.result.assignment] == [list(n) for _, n in multi]
        for j, nodes in tick.started:
            assert workload.arrival_s[j] < tick.time_s
            assert np.all(free_at[list(nodes)] <= tick.time_s), f"job {j} on a busy node"
        for j, nodes in multi:
            free_at[list(nodes)] = tick.time_s + workload.runtime_s[j]
        # one-node jobs take the lowest idle ids left after the window, in selection order
        idle_left = np.flatnonzero(free_at <= tick.time_s)
        assert [n[0] for _, n in singles] == idle_left[: len(singles)].tolist()
        for j, nodes in singles:
            assert len(nodes) == 1
            free_at[nodes[0]] = tick.time_s + workload.runtime_s[j]
        started_jobs += [j for j, _ in tick.started]
    assert sorted(started_jobs) == list(range(first_job, last_job))


@pytest.mark.parametrize("method", ["seq", "dp"])
def test_window_methods_valid_on_tiny_tree(method):
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    workload = Workload.generate(100, seed=2, max_nodes=8)
    jobs = range(0, 60)
    for convention in CONVENTIONS:
        schedule = replay(
            tree,
            workload,
            policy="window",
            method=method,
            convention=convention,
            cap=None,
            jobs=jobs,
        )
        assert_valid_schedule(tree, workload, jobs, schedule)


def test_window_dp_not_costlier_than_seq_per_first_window():
    """On the first tick both methods see the same window; the exact DP is never costlier."""
    tree, workload = small_tree(), small_workload()
    ticks = {}
    for method in ("seq", "dp"):
        for tick in window_ticks(
            tree, workload, 0, 100, tau_s=60, cap=5, method=method, convention="paper", seed=0
        ):
            if tick.window is not None:
                ticks[method] = tick
                break
    assert ticks["seq"].window == ticks["dp"].window
    assert ticks["dp"].result.objective <= ticks["seq"].result.objective + 1e-9


# -- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"policy": "lifo"}, "policy"),
        ({"placement": "random"}, "placement"),
        ({"tau_s": 0}, "tau_s"),
        ({"tau_s": -60}, "tau_s"),
        ({"jobs": range(0)}, "jobs"),
        ({"jobs": range(5, 5)}, "jobs"),
        ({"policy": "easy", "convention": "hops"}, "convention must be one of paper, published"),
    ],
)
def test_replay_bad_input(kwargs, field):
    with pytest.raises(InvalidInputError, match=field):
        replay(small_tree(), small_workload(), **kwargs)


@pytest.mark.parametrize("policy", POLICIES)
def test_replay_job_larger_than_cluster(policy):
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    w = make_workload([0, 5, 10], [10, 10, 10], [2, 17, 3])
    with pytest.raises(InvalidInputError, match="more nodes than the cluster"):
        replay(tree, w, policy=policy)
    # the check only looks at the replayed jobs
    replay(tree, w, policy=policy, jobs=range(0, 1))


class _Hang(Exception):
    pass


def test_replay_cap_zero_rejected():
    """Once a hang (cap 0 selected nothing, for ever); the alarm keeps a regression from hanging."""
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    w = make_workload([0, 5], [10, 10], [2, 1])

    def on_alarm(*_):
        raise _Hang("replay did not return within 2 s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    try:
        with pytest.raises(InvalidInputError, match="cap"):
            replay(tree, w, policy="window", cap=0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- CLI ---------------------------------------------------------------------------------------
def test_cli_online_json(capsys):
    code = main(
        ["online", "--num-jobs", "50", "--policy", "easy", "--placement", "freeform", "--json"]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["jobs"] == 50
    assert data["mean_wait_s"] >= 0
    assert 0 < data["utilization"] <= 1
    assert data["mean_cost_paper"] > 0


def test_cli_online_text(capsys):
    assert main(["online", "--num-jobs", "30", "--policy", "window", "--layout", "published"]) == 0
    out = capsys.readouterr().out
    assert "mean_wait_s" in out and "makespan_s" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["online", "--policy", "lifo"],
        ["online", "--placement", "random"],
        ["online", "--num-jobs", "0"],
        ["online", "--tau", "0"],
        ["online", "--cap", "0"],
    ],
)
def test_cli_online_bad_args_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_replay_rejects_a_strided_range():
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    w = make_workload([0, 5, 6], [10, 10, 10], [2, 1, 1])
    with pytest.raises(InvalidInputError, match="step 1"):
        replay(tree, w, policy="window", jobs=range(0, 3, 2))
