"""The paper's workload and its window stream (tjap.placement.tree.stream): ranges, determinism, validation, the
greedy prefix selection, queue order and the windows themselves."""

from __future__ import annotations

import numpy as np
import pytest

from tjap import FatTree, InvalidInputError, Window, solve
from tjap.placement.tree.stream import generate_windows, window_stream
from tjap.placement.tree.workload import (
    INTER_ARRIVAL_S,
    REQUESTED_NODES,
    RUNTIME_S,
    Workload,
    priority_order,
    select_prefix,
)

LAYOUTS = ("paper", "published")


# -- Workload.generate -----------------------------------------------------------------------------
def test_workload_constants_are_the_papers():
    assert INTER_ARRIVAL_S == (5, 30)
    assert RUNTIME_S == (10, 1800)
    assert REQUESTED_NODES == (1, 40)


def test_generate_ranges():
    w = Workload.generate(20_000, seed=7)
    assert w.num_jobs == 20_000
    for a in (w.arrival_s, w.runtime_s, w.requested_nodes):
        assert a.dtype == np.int64
        assert a.shape == (20_000,)
    assert w.arrival_s[0] == 0
    gaps = np.diff(w.arrival_s)
    # inclusive integer ranges, and with 20,000 draws both ends are reached
    assert gaps.min() == 5 and gaps.max() == 30
    assert w.runtime_s.min() == 10 and w.runtime_s.max() == 1800
    assert w.requested_nodes.min() == 1 and w.requested_nodes.max() == 40
    # uniform: means near the middle of each range
    assert abs(gaps.mean() - 17.5) < 0.5
    assert abs(w.runtime_s.mean() - 905) < 30
    assert abs(w.requested_nodes.mean() - 20.5) < 0.5


def test_generate_max_nodes():
    w = Workload.generate(5_000, seed=1, max_nodes=4)
    assert set(np.unique(w.requested_nodes).tolist()) == {1, 2, 3, 4}


def test_generate_same_seed_same_arrays():
    a, b = Workload.generate(500, seed=3), Workload.generate(500, seed=3)
    np.testing.assert_array_equal(a.arrival_s, b.arrival_s)
    np.testing.assert_array_equal(a.runtime_s, b.runtime_s)
    np.testing.assert_array_equal(a.requested_nodes, b.requested_nodes)


def test_generate_different_seed_differs():
    a, b = Workload.generate(500, seed=3), Workload.generate(500, seed=4)
    assert not np.array_equal(a.arrival_s, b.arrival_s)
    assert not np.array_equal(a.runtime_s, b.runtime_s)
    assert not np.array_equal(a.requested_nodes, b.requested_nodes)


@pytest.mark.parametrize("num_jobs", [0, -5])
def test_generate_needs_a_job(num_jobs):
    with pytest.raises(InvalidInputError, match="num_jobs must be at least 1"):
        Workload.generate(num_jobs)


# -- Workload validation ---------------------------------------------------------------------------
def _arr(*values):
    return np.array(values, dtype=np.int64)


@pytest.mark.parametrize(
    "arrival,runtime,nodes,match",
    [
        (_arr(0, 5), _arr(10), _arr(1, 2), "differ in length"),
        (_arr(), _arr(), _arr(), "at least one job"),
        (_arr(0, 10, 9), _arr(10, 10, 10), _arr(1, 1, 1), "non-decreasing"),
        (_arr(0, 5), _arr(10, 10), _arr(1, 0), "requested_nodes >= 1"),
        (_arr(0, 5), _arr(10, -1), _arr(1, 2), "runtime_s >= 0"),
    ],
)
def test_workload_validation(arrival, runtime, nodes, match):
    with pytest.raises(InvalidInputError, match=match):
        Workload(arrival, runtime, nodes)


def test_workload_accepts_equal_arrivals():
    w = Workload(_arr(0, 0, 3), _arr(0, 10, 10), _arr(1, 2, 3))
    assert w.num_jobs == 3


# -- select_prefix ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "requested,idle,cap,expected",
    [
        ([], 10, 5, 0),
        ([11], 10, 5, 0),  # the first job does not fit: nothing is taken
        ([3, 4], 7, None, 2),  # exactly the idle count fits
        ([3, 5, 2], 7, None, 1),  # stops at 5 although the later 2 would fit
        ([3, 5, 1, 1], 7, 5, 1),  # ... and so do later one-node jobs
        ([2] * 10, 100, None, 10),  # no cap
        ([2] * 10, 100, 3, 3),  # cap of multi-node jobs
        ([1] * 10, 100, 1, 10),  # one-node jobs never count against the cap
        ([1, 1, 2, 1, 3, 4], 100, 2, 5),  # 1,1,2,1,3 taken; 4 would be the third multi-node job
        ([5, 1, 2], 100, 1, 2),
        ([30, 30, 30, 30], 100, None, 3),
    ],
)
def test_select_prefix(requested, idle, cap, expected):
    assert select_prefix(requested, idle, cap) == expected


def test_select_prefix_cap_and_fit_interact():
    # the size limit stops first here even though the cap is not reached
    assert select_prefix([2, 2, 50, 2], 50, 3) == 2
    # the cap stops first here even though more would fit
    assert select_prefix([2, 2, 2, 2], 60, 3) == 3


# -- priority_order --------------------------------------------------------------------------------
def test_priority_order():
    requested = np.array([5, 3, 3, 7, 1, 2])
    queue = [0, 1, 2, 3, 4, 5]
    nwp = {0: 0, 1: 0, 2: 1, 3: 2, 4: 0, 5: 1}
    # NWP 2: job 3; NWP 1: jobs 5 (2 nodes), 2 (3 nodes); NWP 0: 4 (1), 1 (3), 0 (5)
    assert priority_order(queue, nwp, requested) == [3, 5, 2, 4, 1, 0]


def test_priority_order_ties_by_arrival():
    requested = np.array([4, 4, 4, 4])
    queue = [3, 1, 2, 0]
    assert priority_order(queue, {j: 0 for j in queue}, requested) == [0, 1, 2, 3]
    assert priority_order(queue, {0: 0, 1: 0, 2: 0, 3: 1}, requested) == [3, 0, 1, 2]


def test_priority_order_subset_of_jobs():
    requested = np.array([9, 9, 1, 9, 2])
    assert priority_order([4, 2], {4: 0, 2: 0}, requested) == [2, 4]


# -- window_stream / generate_windows ----------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
def test_same_seed_same_windows(layout):
    a = generate_windows(layout, 12, seed=5, num_jobs=3_000, epoch_windows=5)
    b = generate_windows(layout, 12, seed=5, num_jobs=3_000, epoch_windows=5)
    assert len(a) == len(b) == 12
    assert [w.to_dict() for w in a] == [w.to_dict() for w in b]


def test_different_seed_different_windows():
    a = generate_windows("paper", 5, seed=1, num_jobs=2_000)
    b = generate_windows("paper", 5, seed=2, num_jobs=2_000)
    assert [w.to_dict() for w in a] != [w.to_dict() for w in b]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_windows_are_valid(layout):
    windows = generate_windows(layout, 30, seed=0, num_jobs=5_000, epoch_windows=12)
    topology = FatTree.from_layout(layout)
    assert len(windows) == 30
    for w in windows:
        assert isinstance(w, Window)
        assert w.topology == topology
        # it revalidates from its own JSON and stays the same window
        again = Window.from_json(w.to_json())
        assert again == w and dict(again.meta) == dict(w.meta)
        assert w.num_jobs >= 1
        assert all(n >= 2 for n in w.job_sizes)
        assert sum(w.job_sizes) <= w.num_idle
        assert set(w.meta) >= {"epoch", "index", "time_s", "jobs"}
        assert len(w.meta["jobs"]) == w.num_jobs


@pytest.mark.parametrize("layout", LAYOUTS)
def test_windows_match_the_workload(layout):
    """meta['jobs'] names workload jobs: their sizes are the window's, they have arrived, and no job
    is scheduled twice in an epoch."""
    seed, num_jobs = 4, 3_000
    windows = generate_windows(layout, 20, seed=seed, num_jobs=num_jobs, epoch_windows=10)
    workload = Workload.generate(num_jobs, seed)
    seen: dict[int, set] = {}
    for w in windows:
        jobs = w.meta["jobs"]
        assert list(w.job_sizes) == [int(workload.requested_nodes[j]) for j in jobs]
        assert all(workload.arrival_s[j] < w.meta["time_s"] for j in jobs)
        done = seen.setdefault(w.meta["epoch"], set())
        assert not done & set(jobs)
        done |= set(jobs)


def test_epochs():
    tau = 60
    windows = generate_windows("paper", 25, seed=2, num_jobs=5_000, epoch_windows=10, tau_s=tau)
    assert [w.meta["epoch"] for w in windows] == [0] * 10 + [1] * 10 + [2] * 5
    assert [w.meta["index"] for w in windows] == [*range(10), *range(10), *range(5)]
    for k, w in enumerate(windows):
        if w.meta["index"] == 0:
            # the cluster is emptied at each epoch start
            assert w.num_idle == 1000
            np.testing.assert_array_equal(w.idle_nodes, np.arange(1000))
        else:
            prev = windows[k - 1]
            step = w.meta["time_s"] - prev.meta["time_s"]
            assert step > 0 and step % tau == 0


def test_first_window_of_each_epoch_is_all_idle_across_seeds():
    for seed in range(5):
        for w in generate_windows("published", 6, seed=seed, num_jobs=2_000, epoch_windows=2):
            if w.meta["index"] == 0:
                assert w.num_idle == 1000


def test_busy_nodes_are_not_idle():
    """Nodes the stream gave a multi-node job stay out of later windows until the job ends."""
    seed, num_jobs = 6, 3_000
    windows = generate_windows(
        "paper", 20, seed=seed, num_jobs=num_jobs, epoch_windows=10, method="dp"
    )
    workload = Workload.generate(num_jobs, seed)
    busy_until = {}
    for w in windows:
        t = w.meta["time_s"]
        if w.meta["index"] == 0:
            busy_until = {}
        idle = set(w.idle_nodes.tolist())
        still_busy = {v for v, end in busy_until.items() if end > t}
        assert not idle & still_busy
        result = solve(w, "dp", seed=seed)  # the same (deterministic) allocation the stream used
        for j, nodes in zip(w.meta["jobs"], result.assignment):
            for v in nodes:
                busy_until[v] = t + int(workload.runtime_s[j])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("cap", [2, 5])
def test_cap_respected(layout, cap):
    # tau = 150 s lets several jobs queue per window, so the cap binds
    windows = generate_windows(
        layout, 6, seed=3, num_jobs=2_000, cap=cap, tau_s=150, epoch_windows=3
    )
    sizes = [w.num_jobs for w in windows]
    assert max(sizes) <= cap
    assert cap in sizes


@pytest.mark.parametrize(
    "layout,method", [("paper", "auto"), ("published", "auto"), ("paper", "scip")]
)
def test_no_cap(layout, method):
    num_windows = 3 if method == "auto" else 2
    windows = generate_windows(
        layout, num_windows, seed=3, num_jobs=2_000, cap=None, tau_s=150, method=method
    )
    assert len(windows) == num_windows
    for w in windows:
        assert all(n >= 2 for n in w.job_sizes)
        assert sum(w.job_sizes) <= w.num_idle
    assert max(w.num_jobs for w in windows) > 5  # more than the default cap


def test_window_stream_direct():
    topology = FatTree.from_layout("published")
    workload = Workload.generate(2_000, 0)
    stream = window_stream(topology, workload, num_windows=4, seed=0)
    first = next(stream)
    assert isinstance(first, Window) and first.meta["epoch"] == 0 and first.meta["index"] == 0
    rest = list(stream)
    assert len(rest) == 3
    direct = [first, *rest]
    assert [w.to_dict() for w in direct] == [
        w.to_dict() for w in generate_windows("published", 4, 0, num_jobs=2_000)
    ]


def test_workload_too_short():
    topology = FatTree.from_layout("paper")
    with pytest.raises(InvalidInputError, match="ran out of jobs"):
        list(window_stream(topology, Workload.generate(20, 0), num_windows=30))
    with pytest.raises(InvalidInputError, match="ran out of jobs"):
        generate_windows("paper", 30, seed=0, num_jobs=20)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"num_windows": 0}, "must be positive"),
        ({"num_windows": 3, "epoch_windows": 0}, "must be positive"),
        ({"num_windows": 3, "tau_s": 0}, "must be positive"),
        ({"num_windows": 3, "cap": 0}, "cap must be"),
    ],
)
def test_window_stream_validation(kwargs, match):
    stream = window_stream(FatTree.from_layout("paper"), Workload.generate(100, 0), **kwargs)
    with pytest.raises(InvalidInputError, match=match):
        next(stream)


def test_job_larger_than_cluster():
    tree = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    workload = Workload(_arr(0, 10), _arr(100, 100), _arr(4, 17))
    with pytest.raises(InvalidInputError, match="more nodes than the cluster"):
        next(window_stream(tree, workload, num_windows=1))


def test_unknown_layout():
    with pytest.raises(InvalidInputError, match="layout must be one of"):
        generate_windows("torus", 1, num_jobs=100)
