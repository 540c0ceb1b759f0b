"""The DCAS search loop (simulated annealing / LNS, Algorithm 1 of seed 002).

The compiled loop must follow the plain-Python twin in tests/oracles/sa_reference.py draw for draw; every
result must be a feasible DCAS solution no worse than where the search started, and bracketed by
the exact optima on tiny windows.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import sa_reference as reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

from tjap import FatTree, InvalidInputError, Result, Window, assignment_cost, solve
from tjap.heuristics.tree import _kernels
from tjap.heuristics.tree.operators import LookaheadRepair
from tjap.placement.tree.cost import convention_code
from tjap.placement.tree.dcas import Arrays, decode, encode, is_dcas
from tjap.placement.tree.stream import generate_windows

CONVENTIONS = ("paper", "published")
REPAIR_CODES = {
    "paper": _kernels.REPAIR_PAPER,
    "uniform": _kernels.REPAIR_UNIFORM,
    "greedy": _kernels.REPAIR_GREEDY,
}
REINSERT_CODES = {
    "largest-first": _kernels.REINSERT_LARGEST_FIRST,
    "window-order": _kernels.REINSERT_WINDOW_ORDER,
}
TOL = 1e-6


@pytest.fixture(scope="module")
def stream_windows() -> list[Window]:
    return generate_windows("paper", 5, seed=0)


def run_reference(
    w: Window,
    *,
    iterations,
    repair="paper",
    reinsert="largest-first",
    seed=0,
    convention="paper",
    order=None,
    starts=None,
    accept=_kernels.ACCEPT_METROPOLIS,
    t_max=2500.0,
    t_min=2.5,
    max_remove=2,
    q=100,
):
    """sa_reference.anneal with the arguments tjap.heuristics.tree.anneal passes to the kernel."""
    a = Arrays(w)
    if order is None:
        order, starts = np.arange(w.num_jobs), np.zeros(w.num_jobs, np.int64)
    if isinstance(repair, LookaheadRepair):
        repair = ("lookahead", repair.k, repair.temperature)
    else:
        repair = REPAIR_CODES[repair]
    return reference.anneal(
        a.switch_q,
        a.pod_q,
        convention_code(convention),
        a.sizes,
        np.asarray(order, np.int64),
        np.asarray(starts, np.int64),
        iterations,
        t_max,
        t_min,
        max_remove,
        repair,
        q,
        REINSERT_CODES[reinsert],
        accept,
        seed,
    )


def assert_same_trajectory(w, r: Result, ref) -> None:
    ref_order, ref_starts, ref_cost = ref
    assert r.info["order"] == ref_order
    assert r.info["starts"] == ref_starts
    assert r.objective == ref_cost
    assert r.assignment == tuple(tuple(nodes) for nodes in decode(w, ref_order, ref_starts))


# -- the compiled loop against its plain-Python twin ----------------------------------------------
@pytest.mark.parametrize("iterations", [300, 600])
@pytest.mark.parametrize("reinsert", list(REINSERT_CODES))
@pytest.mark.parametrize("repair", ["paper", "uniform"])
@pytest.mark.parametrize("seed", range(6))
def test_trajectory_matches_reference_tiny(seed, repair, reinsert, iterations, window_factory):
    w = window_factory(seed, max_jobs=4)
    convention = CONVENTIONS[seed % 2]
    r = solve(
        w,
        "sa",
        preset="paper",
        iterations=iterations,
        repair=repair,
        reinsert=reinsert,
        seed=seed,
        convention=convention,
    )
    assert r.iterations == iterations
    ref = run_reference(
        w, iterations=iterations, repair=repair, reinsert=reinsert, seed=seed, convention=convention
    )
    assert_same_trajectory(w, r, ref)


@pytest.mark.parametrize("reinsert", list(REINSERT_CODES))
@pytest.mark.parametrize("seed", range(4))
def test_trajectory_matches_reference_greedy(seed, reinsert, window_factory):
    w = window_factory(100 + seed, max_jobs=4)
    convention = CONVENTIONS[seed % 2]
    r = solve(
        w,
        "sa",
        preset="paper",
        iterations=300,
        repair="greedy",
        reinsert=reinsert,
        seed=seed,
        convention=convention,
    )
    ref = run_reference(
        w, iterations=300, repair="greedy", reinsert=reinsert, seed=seed, convention=convention
    )
    assert_same_trajectory(w, r, ref)


@pytest.mark.parametrize("reinsert", list(REINSERT_CODES))
@pytest.mark.parametrize("repair", ["paper", "uniform"])
def test_trajectory_matches_reference_stream(stream_windows, repair, reinsert):
    """Windows of the paper's stream (744..1000 idle nodes, 2..5 jobs), 600 iterations."""
    for index, w in enumerate(stream_windows):
        seed = 10 + index
        r = solve(
            w, "sa", preset="paper", iterations=600, repair=repair, reinsert=reinsert, seed=seed
        )
        ref = run_reference(w, iterations=600, repair=repair, reinsert=reinsert, seed=seed)
        assert_same_trajectory(w, r, ref)


@pytest.mark.parametrize("seed", range(3))
def test_trajectory_matches_reference_from_dp_with_published_t_max(seed, window_factory):
    """Starting from the SCAS optimum, with the published code's T_max = 25000 and q = 3."""
    w = window_factory(300 + seed, max_jobs=4)
    r = solve(w, "sa", preset="paper", iterations=400, initial="dp", t_max=25000.0, q=3, seed=seed)
    order, starts = encode(w, solve(w, "dp").assignment)
    ref = run_reference(
        w, iterations=400, seed=seed, order=order, starts=starts, t_max=25000.0, q=3
    )
    assert_same_trajectory(w, r, ref)


@pytest.mark.parametrize("seed", range(4))
def test_lns_trajectory_matches_reference(seed, window_factory):
    """LNS: descent (accept only non-worsening moves) from the dp optimum with the greedy repair."""
    w = window_factory(400 + seed, max_jobs=4)
    r = solve(w, "lns", iterations=300, seed=seed)
    order, starts = encode(w, solve(w, "dp").assignment)
    ref = run_reference(
        w,
        iterations=300,
        repair="greedy",
        seed=seed,
        order=order,
        starts=starts,
        accept=_kernels.ACCEPT_IMPROVING,
        t_max=1.0,
        t_min=1.0,
        q=0,
    )
    assert_same_trajectory(w, r, ref)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    window_seed=st.integers(0, 10_000),
    seed=st.integers(0, 2**31 - 1),
    repair=st.sampled_from(["paper", "uniform", "greedy"]),
    reinsert=st.sampled_from(list(REINSERT_CODES)),
    convention=st.sampled_from(CONVENTIONS),
    iterations=st.sampled_from([0, 1, 255, 256, 257, 513]),
    max_remove=st.integers(1, 4),
    q=st.integers(1, 12),
    t_max=st.sampled_from([2.5, 100.0, 2500.0, 25000.0]),
)
def test_trajectory_matches_reference_property(
    window_factory,
    window_seed,
    seed,
    repair,
    reinsert,
    convention,
    iterations,
    max_remove,
    q,
    t_max,
):
    """Random tiny windows and options, iteration counts around the CHUNK boundaries."""
    w = window_factory(window_seed, max_idle=16, max_jobs=5)
    r = solve(
        w,
        "sa",
        preset="paper",
        iterations=iterations,
        repair=repair,
        reinsert=reinsert,
        seed=seed,
        convention=convention,
        max_remove=max_remove,
        q=q,
        t_max=t_max,
    )
    ref = run_reference(
        w,
        iterations=iterations,
        repair=repair,
        reinsert=reinsert,
        seed=seed,
        convention=convention,
        max_remove=max_remove,
        q=q if repair == "paper" else 0,
        t_max=t_max,
    )
    assert_same_trajectory(w, r, ref)


def test_trajectory_matches_reference_stream_greedy(stream_windows):
    """The greedy repair on a 767-node stream window, over just more than one chunk."""
    w = stream_windows[3]
    r = solve(w, "sa", preset="paper", iterations=_kernels.CHUNK + 20, repair="greedy", seed=5)
    ref = run_reference(w, iterations=_kernels.CHUNK + 20, repair="greedy", seed=5)
    assert_same_trajectory(w, r, ref)


# -- the look-ahead repair -------------------------------------------------------------------------
LOOKAHEADS = [(1, 0.0), (3, 0.0), (4, 500.0), (16, 1000.0)]


@pytest.mark.parametrize("k,temperature", LOOKAHEADS)
@pytest.mark.parametrize("seed", range(4))
def test_lookahead_trajectory_matches_reference(seed, k, temperature, window_factory):
    """The look-ahead repair in the best loop (n^D = 5, T_max 25000) against the twin's plain
    version: candidates by cost or by systematic sampling, each scored by greedy completion."""
    w = window_factory(500 + seed, max_jobs=5)
    convention = CONVENTIONS[seed % 2]
    repair = LookaheadRepair(k=k, temperature=temperature)
    r = solve(w, "sa", iterations=300, repair=repair, seed=seed, convention=convention)
    ref = run_reference(
        w,
        iterations=300,
        repair=repair,
        seed=seed,
        convention=convention,
        max_remove=5,
        t_max=25000.0,
    )
    assert_same_trajectory(w, r, ref)


def test_lookahead_on_a_stream_window_matches_reference(stream_windows):
    w = stream_windows[1]
    repair = LookaheadRepair(k=4, temperature=1000.0)
    r = solve(w, "sa", iterations=40, repair=repair, seed=3)
    assert_same_trajectory(
        w, r, run_reference(w, iterations=40, repair=repair, seed=3, max_remove=5, t_max=25000.0)
    )


def test_lookahead_of_one_cheapest_block_is_the_greedy_repair(stream_windows):
    for seed, w in enumerate(stream_windows[:3]):
        r = solve(w, "sa", iterations=300, repair=LookaheadRepair(k=1, temperature=0.0), seed=seed)
        g = solve(w, "sa", iterations=300, repair="greedy", seed=seed)
        assert r.info["order"] == g.info["order"] and r.info["starts"] == g.info["starts"]


@pytest.mark.parametrize(
    "bad",
    [
        dict(k=0),
        dict(k=2.5),
        dict(k=True),
        dict(temperature=-1.0),
        dict(temperature=float("inf")),
        dict(temperature="hot"),
    ],
)
def test_lookahead_options_are_checked(bad):
    with pytest.raises(InvalidInputError, match="look-ahead"):
        LookaheadRepair(**bad)


def test_lookahead_options_are_taken_by_keyword_only():
    with pytest.raises(InvalidInputError, match="by keyword"):
        LookaheadRepair(8, 0.0)


def test_top_k_and_candidate_starts_follow_the_plain_versions():
    from tjap.heuristics.tree._mlp_kernels import candidate_starts, top_k

    rng = np.random.default_rng(3)
    for _trial in range(300):
        n = int(rng.integers(1, 40))
        k = int(rng.integers(1, 12))
        logits = rng.normal(0, 3, n).round(int(rng.integers(0, 3)))  # rounding makes ties
        out = np.empty(k, np.int64)
        count = top_k(logits, n, k, 1.0, out)
        assert list(out[:count]) == reference.candidates(logits, k)
        count = top_k(logits, n, k, -1.0, out)
        assert list(out[:count]) == reference.candidates(-logits, k)
        for u in (0.0, 1 - 1e-12, float(rng.random())):
            count = candidate_starts(logits, n, True, u, out)
            assert list(out[:count]) == reference.candidates(logits, k, u)
            assert 1 <= count <= min(k, n) and list(out[:count]) == sorted(set(out[:count]))


# -- invariants of every result -------------------------------------------------------------------
def check_sa_result(w: Window, r: Result, convention: str) -> None:
    assert r.has_solution and r.is_feasible()
    assert r.objective <= r.info["initial_cost"] + TOL
    assert r.objective == pytest.approx(
        assignment_cost(w.topology, r.assignment, convention), abs=TOL
    )
    assert is_dcas(w, r.assignment)
    # the reported steps decode to the assignment, and encode finds them again
    assert r.assignment == tuple(tuple(n) for n in decode(w, r.info["order"], r.info["starts"]))
    order, starts = encode(w, r.assignment, order=r.info["order"])
    assert order == r.info["order"]
    assert [set(n) for n in decode(w, order, starts)] == [set(n) for n in r.assignment]


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    window_seed=st.integers(0, 10_000),
    seed=st.integers(0, 2**31 - 1),
    repair=st.sampled_from(["paper", "uniform", "greedy"]),
    reinsert=st.sampled_from(list(REINSERT_CODES)),
    convention=st.sampled_from(CONVENTIONS),
    iterations=st.integers(0, 700),
    max_remove=st.integers(1, 4),
    q=st.integers(1, 12),
)
def test_sa_results_are_feasible_dcas_and_never_worse_than_start(
    window_factory, window_seed, seed, repair, reinsert, convention, iterations, max_remove, q
):
    w = window_factory(window_seed, max_idle=16, max_jobs=5)
    r = solve(
        w,
        "sa",
        preset="paper",
        iterations=iterations,
        repair=repair,
        reinsert=reinsert,
        seed=seed,
        convention=convention,
        max_remove=max_remove,
        q=q,
    )
    check_sa_result(w, r, convention)
    assert r.iterations == iterations
    assert r.info["initial"] == "seq"
    assert r.info["initial_cost"] == pytest.approx(
        solve(w, "seq", convention=convention).objective, abs=TOL
    )


def test_sa_results_on_stream_windows(stream_windows):
    for index, w in enumerate(stream_windows):
        for repair in ("paper", "uniform", "greedy"):
            r = solve(w, "sa", preset="paper", iterations=300, repair=repair, seed=index)
            check_sa_result(w, r, "paper")


def test_sa_result_is_dcas_with_ten_jobs():
    rng = random.Random(8)
    t = FatTree(num_nodes=64, nodes_per_switch=4, switches_per_pod=2)
    w = Window(t, sorted(rng.sample(range(64), 40)), [rng.randint(1, 4) for _ in range(10)])
    r = solve(w, "sa", preset="paper", iterations=50, seed=8, repair="uniform")
    assert r.is_feasible()
    # the result is a DCAS solution by construction: its own steps decode to it
    assert r.assignment == tuple(tuple(n) for n in decode(w, r.info["order"], r.info["starts"]))
    assert encode(w, r.assignment, order=r.info["order"])[0] == r.info["order"]
    assert r.info["order"] != list(range(10))
    assert is_dcas(w, r.assignment)


def test_sa_result_as_initial_with_ten_jobs():
    rng = random.Random(8)
    t = FatTree(num_nodes=64, nodes_per_switch=4, switches_per_pod=2)
    w = Window(t, sorted(rng.sample(range(64), 40)), [rng.randint(1, 4) for _ in range(10)])
    first = solve(w, "sa", preset="paper", iterations=50, seed=8, repair="uniform")
    again = solve(w, "sa", preset="paper", iterations=50, seed=9, repair="uniform", initial=first)
    assert again.info["initial_cost"] == pytest.approx(first.objective, abs=TOL)


# -- bounds from the exact optima on tiny windows -------------------------------------------------
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(10))
def test_bounds_against_exact_optima(seed, convention, window_factory):
    w = window_factory(500 + seed, max_idle=12, max_jobs=4)
    dp = solve(w, "dp", convention=convention)
    free = solve(w, "freeform", convention=convention).objective
    assert free <= dp.objective + TOL

    sa_dp = solve(
        w, "sa", preset="paper", initial="dp", iterations=300, seed=seed, convention=convention
    )
    assert sa_dp.info["initial"] == "dp"
    assert sa_dp.info["initial_cost"] == pytest.approx(dp.objective, abs=TOL)
    assert sa_dp.objective <= dp.objective + TOL

    lns = solve(w, "lns", iterations=200, seed=seed, convention=convention)
    assert lns.objective <= dp.objective + TOL
    check_sa_result(w, lns, convention)

    results = [dp, sa_dp, lns, solve(w, "seq", convention=convention)]
    for repair in ("paper", "uniform", "greedy"):
        results.append(
            solve(
                w,
                "sa",
                preset="paper",
                iterations=300,
                repair=repair,
                seed=seed,
                convention=convention,
            )
        )
    for r in results:
        assert r.objective >= free - TOL, (r.method, r.info)


# -- defaults and presets -------------------------------------------------------------------------
#: The documented settings, written out: the default is Table III's "SA-1000 best" and
#: preset="paper" the options solve_sa took by default before it had presets (Table I).
BEST = dict(
    iterations=1000,
    repair="greedy",
    q=100,
    max_remove=5,
    t_max=25000.0,
    t_min=2.5,
    reinsert="largest-first",
    initial="seq",
)
PAPER = dict(
    iterations=500,
    repair="paper",
    q=100,
    max_remove=2,
    t_max=2500.0,
    t_min=2.5,
    reinsert="largest-first",
    initial="seq",
)
PUBLISHED = {**PAPER, "t_max": 25000.0, "reinsert": "window-order"}


def assert_same_result(a: Result, b: Result) -> None:
    assert a.assignment == b.assignment
    assert a.objective == b.objective
    assert a.iterations == b.iterations
    assert {k: v for k, v in a.info.items() if k != "iterations_per_s"} == {
        k: v for k, v in b.info.items() if k != "iterations_per_s"
    }


def test_presets_are_the_documented_settings():
    from tjap.heuristics.tree.anneal import SA_PRESETS

    assert SA_PRESETS == {"best": BEST, "paper": PAPER, "published": PUBLISHED}
    assert list(SA_PRESETS) == ["best", "paper", "published"]  # the default first


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(3))
def test_default_is_the_best_configuration(seed, convention, window_factory):
    w = window_factory(900 + seed, max_jobs=5)
    r = solve(w, "sa", seed=seed, convention=convention)
    assert_same_result(r, solve(w, "sa", seed=seed, convention=convention, **BEST))
    assert_same_result(r, solve(w, "sa", preset="best", seed=seed, convention=convention))
    assert r.iterations == 1000 and r.info["repair"] == "greedy" and r.info["initial"] == "seq"
    ref = run_reference(
        w,
        iterations=1000,
        repair="greedy",
        max_remove=5,
        t_max=25000.0,
        q=0,
        seed=seed,
        convention=convention,
    )
    assert_same_trajectory(w, r, ref)


def test_default_on_stream_windows_beats_the_paper_preset(stream_windows):
    """On the paper's stream the default ends within 1 % of the SCAS optimum on average, below
    the paper's SA at the same 1000 iterations."""
    best, paper = [], []
    for index, w in enumerate(stream_windows):
        opt = solve(w, "dp").objective
        r = solve(w, "sa", seed=index)
        check_sa_result(w, r, "paper")
        best.append((r.objective - opt) / opt)
        paper.append(
            (solve(w, "sa", preset="paper", iterations=1000, seed=index).objective - opt) / opt
        )
    assert np.mean(best) < 0.01
    assert np.mean(best) < np.mean(paper)


@pytest.mark.parametrize("preset, options", [("paper", PAPER), ("published", PUBLISHED)])
@pytest.mark.parametrize("seed", range(4))
def test_preset_equals_its_explicit_options(seed, preset, options, window_factory):
    """preset="paper" is the old default draw for draw (and preset="published" the published
    code's options); both follow the plain-Python twin."""
    w = window_factory(950 + seed, max_jobs=4)
    convention = CONVENTIONS[seed % 2]
    r = solve(w, "sa", preset=preset, seed=seed, convention=convention)
    assert_same_result(r, solve(w, "sa", seed=seed, convention=convention, **options))
    assert r.iterations == 500 and r.info["repair"] == "paper"
    ref = run_reference(
        w,
        iterations=500,
        reinsert=options["reinsert"],
        t_max=options["t_max"],
        seed=seed,
        convention=convention,
    )
    assert_same_trajectory(w, r, ref)


def test_preset_paper_on_stream_windows_follows_the_twin(stream_windows):
    for index, w in enumerate(stream_windows[:3]):
        r = solve(w, "sa", preset="paper", seed=20 + index)
        assert_same_trajectory(w, r, run_reference(w, iterations=500, seed=20 + index))


def test_explicit_options_override_the_preset(window_factory):
    w = window_factory(990, max_jobs=4)
    # the published code's two differences, given to the paper preset
    assert_same_result(
        solve(w, "sa", preset="paper", t_max=25000.0, reinsert="window-order", seed=2),
        solve(w, "sa", preset="published", seed=2),
    )
    # every option that differs, given to the default preset
    assert_same_result(
        solve(w, "sa", iterations=500, repair="paper", max_remove=2, t_max=2500.0, seed=2),
        solve(w, "sa", preset="paper", seed=2),
    )
    # one option: the rest stays the preset's
    r = solve(w, "sa", iterations=300, seed=2)
    assert r.iterations == 300 and r.info["repair"] == "greedy"
    assert_same_result(r, solve(w, "sa", seed=2, **{**BEST, "iterations": 300}))
    r = solve(w, "sa", preset="paper", repair="greedy", initial="dp", seed=2)
    assert r.iterations == 500 and r.info["repair"] == "greedy" and r.info["initial"] == "dp"


@pytest.mark.parametrize("preset", ["best", "paper", "published"])
def test_same_seed_same_result_for_each_preset(preset, stream_windows):
    w = stream_windows[2]
    for s in (0, 7):
        a = solve(w, "sa", preset=preset, seed=s)
        assert_same_result(a, solve(w, "sa", preset=preset, seed=s))
        assert a.seed == s


def test_lns_defaults_are_table3s_lns500(window_factory):
    w = window_factory(995, max_jobs=4)
    r = solve(w, "lns", seed=1)
    assert_same_result(
        r, solve(w, "lns", iterations=500, repair="greedy", max_remove=2, initial="auto", seed=1)
    )
    assert r.iterations == 500 and r.info["repair"] == "greedy"


@pytest.mark.parametrize("preset", ["fast", "Paper", "", None, 1, ("paper",)])
def test_unknown_preset_is_a_one_line_error(preset, window_factory):
    w = window_factory(1)
    with pytest.raises(InvalidInputError) as info:
        solve(w, "sa", preset=preset)
    message = str(info.value)
    assert "\n" not in message
    assert "preset" in message and "best, paper, published" in message and repr(preset) in message


@pytest.mark.parametrize("method", ["sa", "lns"])
def test_every_option_is_documented(method):
    """help(solve_sa) / help(solve_lns) list every option in their numpydoc Parameters."""
    import inspect

    from tjap.heuristics.tree.anneal import solve_lns, solve_sa

    fn = {"sa": solve_sa, "lns": solve_lns}[method]
    doc = inspect.getdoc(fn)
    params = doc.split("Parameters\n----------\n")[1].split("\n\n")[0]
    documented = {
        name.strip()
        for line in params.splitlines()
        if " : " in line and not line.startswith(" ")
        for name in line.split(" : ")[0].split(",")
    }
    assert documented == set(inspect.signature(fn).parameters)


# -- determinism ----------------------------------------------------------------------------------
@pytest.mark.parametrize("repair", ["paper", "uniform", "greedy"])
def test_same_seed_same_result(window_factory, repair):
    for s in range(5):
        w = window_factory(600 + s, max_jobs=4)
        a = solve(w, "sa", preset="paper", iterations=400, repair=repair, seed=s)
        b = solve(w, "sa", preset="paper", iterations=400, repair=repair, seed=s)
        assert a.assignment == b.assignment
        assert a.objective == b.objective
        assert (a.info["order"], a.info["starts"]) == (b.info["order"], b.info["starts"])


def test_seeds_on_stream_windows(stream_windows):
    distinct_windows = 0
    for w in stream_windows:
        runs = {s: solve(w, "sa", preset="paper", seed=s) for s in range(5)}
        again = solve(w, "sa", preset="paper", seed=3)
        assert again.assignment == runs[3].assignment
        assert again.info["starts"] == runs[3].info["starts"]
        if len({r.assignment for r in runs.values()}) > 1:
            distinct_windows += 1
    assert distinct_windows >= 3


# -- time limit -----------------------------------------------------------------------------------
@pytest.mark.parametrize("time_limit_s", [1e-9, 0.005, 0.02])
def test_time_limit_stops_between_chunks(stream_windows, time_limit_s):
    w = stream_windows[0]
    huge = 10**9
    r = solve(w, "sa", preset="paper", iterations=huge, time_limit_s=time_limit_s, seed=1)
    assert 0 <= r.iterations < huge
    assert r.iterations % _kernels.CHUNK == 0
    check_sa_result(w, r, "paper")


def test_time_limit_not_reached_runs_every_iteration(stream_windows):
    w = stream_windows[1]
    r = solve(w, "sa", preset="paper", iterations=1000, time_limit_s=100.0, seed=1)
    assert r.iterations == 1000  # not a multiple of CHUNK: the last chunk is partial
    assert r.assignment == solve(w, "sa", preset="paper", iterations=1000, seed=1).assignment


# -- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "options",
    [
        {"repair": "nope"},
        {"repair": "Paper"},
        {"iterations": -1},
        {"iterations": 1.5},
        {"iterations": True},
        {"reinsert": "smallest-first"},
        {"t_min": 10.0, "t_max": 5.0},
        {"t_min": 0.0},
        {"t_min": -1.0},
        {"max_remove": 0},
        {"max_remove": -2},
        {"q": 0},
        {"q": -5},
        {"q": 1.5},
        {"q": 0, "repair": "greedy"},
        {"preset": "fast"},
        {"preset": "paper", "t_min": 0.0},
    ],
    ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()),
)
def test_sa_rejects_bad_options(window_factory, options):
    w = window_factory(1)
    with pytest.raises(InvalidInputError):
        solve(w, method="sa", **options)


def test_lns_rejects_bad_options(window_factory):
    w = window_factory(1)
    for options in ({"repair": "nope"}, {"iterations": -3}, {"max_remove": 0}):
        with pytest.raises(InvalidInputError):
            solve(w, method="lns", **options)


# -- zero iterations ------------------------------------------------------------------------------
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(6))
def test_zero_iterations_returns_seq(seed, convention, window_factory):
    w = window_factory(700 + seed, max_jobs=4)
    r = solve(w, "sa", preset="paper", iterations=0, seed=seed, convention=convention)
    seq = solve(w, "seq", convention=convention)
    assert r.assignment == seq.assignment
    assert r.objective == pytest.approx(seq.objective, abs=TOL)
    assert r.info["initial_cost"] == pytest.approx(seq.objective, abs=TOL)
    assert r.iterations == 0
    assert r.info["order"] == list(range(w.num_jobs))
    assert r.info["starts"] == [0] * w.num_jobs
    assert r.info["accepted"] == 0 and r.info["improved"] == 0


def test_zero_iterations_from_dp_returns_dp(window_factory):
    w = window_factory(800, max_jobs=4)
    dp = solve(w, "dp")
    r = solve(w, "sa", preset="paper", iterations=0, initial="dp")
    assert [set(n) for n in r.assignment] == [set(n) for n in dp.assignment]
    assert r.objective == pytest.approx(dp.objective, abs=TOL)


# -- the loop's random generator and destroy ------------------------------------------------------
@njit
def _buffered_draws(seed, reserves):
    """Draws of the loop's generator, reserving ``reserves[i]`` draws before the i-th batch."""
    state = _kernels.rng_state(reserves.max())
    _kernels.rng_seed(state, seed)
    out = np.empty(reserves.sum())
    i = 0
    for count in reserves:
        _kernels.rng_reserve(state, count)
        for _ in range(count):
            out[i] = _kernels.draw(state)
            i += 1
    return out


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), reserves=st.lists(st.integers(1, 40), min_size=1, max_size=80)
)
def test_loop_generator_draws_as_random_state(seed, reserves):
    """Same doubles as np.random.RandomState(seed).random_sample, across refills and twists."""
    reserves = np.array(reserves + [300, 300, 7], dtype=np.int64)  # past the first 624 words
    expected = np.random.RandomState(seed).random_sample(int(reserves.sum()))
    assert _buffered_draws(seed, reserves).tolist() == expected.tolist()


@pytest.mark.parametrize("reinsert", list(REINSERT_CODES))
@pytest.mark.parametrize("seed", range(20))
def test_destroy_with_numba_generator(seed, reinsert):
    """destroy as the NSA environment calls it (Numba's global generator): kept steps in order with
    their starts, then the removed jobs in re-insertion order, as the plain-Python twin removes."""
    rng = random.Random(seed)
    num_jobs = rng.randint(1, 7)
    sizes = np.array([rng.randint(1, 5) for _ in range(num_jobs)], dtype=np.int64)
    order = np.array(rng.sample(range(num_jobs), num_jobs), dtype=np.int64)
    starts = np.array([rng.randint(0, 9) for _ in range(num_jobs)], dtype=np.int64)
    max_remove = rng.randint(1, 4)
    new_order = np.empty(num_jobs, np.int64)
    new_starts = np.empty(num_jobs, np.int64)
    _kernels.seed_rng(seed)
    kept = _kernels.destroy(
        sizes,
        order,
        starts,
        new_order,
        new_starts,
        np.empty(num_jobs, np.int64),
        max_remove,
        REINSERT_CODES[reinsert],
    )
    draws = np.random.RandomState(seed)
    count = 1 + int(draws.random_sample() * min(max_remove, num_jobs))
    picks = list(range(num_jobs))
    for i in range(count):
        r = i + int(draws.random_sample() * (num_jobs - i))
        picks[i], picks[r] = picks[r], picks[i]
    removed = set(picks[:count])
    out = sorted(
        (order[s] for s in removed),
        key=(lambda j: (-sizes[j], j)) if reinsert == "largest-first" else None,
    )
    assert kept == num_jobs - count
    assert new_order[:kept].tolist() == [order[s] for s in range(num_jobs) if s not in removed]
    assert new_starts[:kept].tolist() == [starts[s] for s in range(num_jobs) if s not in removed]
    assert new_order[kept:].tolist() == out
