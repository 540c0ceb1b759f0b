"""The DCAS searches (sa, lns) on windows whose jobs carry constraints: the constrained DCAS rule
of the kernels against a plain-Python statement of it (tests/oracles/constraint_oracle.py's domains and
walk, on the free sequence of each step), every returned placement kept feasible (the library's
check and the independent oracle), never worse than the feasible start, never below the
constrained DCAS optimum found by enumeration, deterministic by seed, within its time limit; the
repairs and methods that take no constraints refuse in one line."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import constraint_oracle as oracle
import numpy as np
import pytest
from constraint_cases import BLOCKS, LABELS, TAIL, random_window

import tjap
from tjap import InvalidInputError
from tjap.placement.tree.dcas import decode, encode
from tjap.placement.tree.stream import generate_windows
from tjap.placement.tree.window import Window

TREES = {"blocks": BLOCKS, "tail": TAIL, "labels": LABELS}
TOL = 1e-6
_domain = oracle.domain


@pytest.fixture(autouse=True)
def remembered_domains(monkeypatch):
    """The oracle's domains, each looked up once (the enumerations below ask for them often)."""
    seen = {}

    def domain(tree, node, level, memo=None):
        key = (id(tree), int(node), level)
        if key not in seen:
            seen[key] = _domain(tree, node, level)
        return seen[key]

    monkeypatch.setattr(oracle, "domain", domain)


# -- the rule, from its definition (placement/tree/dcas.py) -----------------------------------
def reference_place(window, order, starts):
    """The nodes of each job (window order) for the steps (order, starts) under the constrained
    DCAS rule, or None when a step's start is not allowed: each job takes its walk
    (:func:`constraint_oracle.walk`) on the free sequence of its step; ``within`` and
    ``slurm_rule`` need one domain; an exclusive job needs domains without an earlier job's
    node and takes their idle nodes out of the free sequence."""
    tree = window.topology
    free = [int(v) for v in window.idle_nodes]
    placed = {}
    for j, s in zip(order, starts):
        job = window.jobs[j]
        if not 0 <= s < len(free) or job.nodes > len(free):
            return None
        step = SimpleNamespace(num_idle=len(free), idle_nodes=np.array(free), topology=tree)
        walk = oracle.walk(step, job, s)
        if walk is None:
            return None
        nodes = walk[0]
        within = [job.within] if job.within is not None else []
        if job.slurm_rule and job.segment is None:
            within.append(oracle.slurm_level(tree, job.nodes))
        if any(len({oracle.domain(tree, v, level) for v in nodes}) > 1 for level in within):
            return None
        gone = set(nodes)
        if job.exclusive is not None:
            mine = {oracle.domain(tree, v, job.exclusive) for v in nodes}
            if any(
                oracle.domain(tree, v, job.exclusive) in mine
                for other in placed.values()
                for v in other
            ):
                return None
            gone |= {v for v in free if oracle.domain(tree, v, job.exclusive) in mine}
        placed[j] = nodes
        free = [v for v in free if v not in gone]
    return [sorted(placed[j]) for j in sorted(placed)]  # window order once all are placed


def dcas_optimum(window) -> float:
    """The cheapest constrained DCAS solution, by trying every order and start step by step."""
    best = math.inf

    def extend(order, starts):
        nonlocal best
        placed = reference_place(window, order, starts)
        if placed is None and order:
            return
        if len(order) == window.num_jobs:
            best = min(best, oracle.objective(window, placed))
            return
        left = window.num_idle - sum(window.job_sizes[j] for j in order)
        for j in set(range(window.num_jobs)) - set(order):
            for s in range(left):
                extend(order + [j], starts + [s])

    extend([], [])
    return best


def windows(tree, count, seed):
    rng = random.Random(seed)
    return [random_window(rng, tree) for _ in range(count)]


def check(result, window):
    assert result.is_feasible(), result.violations()
    assert oracle.keeps(window, result.assignment)
    assert result.objective == pytest.approx(oracle.objective(window, result.assignment))


def as_sets(assignment):
    return [sorted(nodes) for nodes in assignment]


# -- the rule ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", TREES)
def test_decode_follows_the_rule(name):
    rng = random.Random(name)
    allowed = 0
    for window in windows(TREES[name], 30, name):
        for _ in range(30):
            order = rng.sample(range(window.num_jobs), window.num_jobs)
            starts = [rng.randrange(window.num_idle) for _ in order]
            want = reference_place(window, order, starts)
            if want is None:
                with pytest.raises(InvalidInputError, match="not allowed"):
                    decode(window, order, starts)
                continue
            allowed += 1
            got = decode(window, order, starts)
            assert as_sets(got) == want, (window.to_dict(), order, starts)
            assert oracle.keeps(window, got)
            assert as_sets(decode(window, *encode(window, got))) == want
    assert allowed > 100  # the comparison covered placed solutions, not only refusals


@pytest.mark.parametrize("name", TREES)
def test_exact_and_seq_placements_are_constrained_dcas_solutions(name):
    for window in windows(TREES[name], 25, name + "scas"):
        for method in ("dp", "seq"):
            result = tjap.solve(window, method)
            if result.has_solution:
                order, starts = encode(window, result.assignment)
                assert as_sets(decode(window, order, starts)) == as_sets(result.assignment)


# -- the searches -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", TREES)
def test_results_keep_the_constraints_and_improve_on_the_start(name):
    found = 0
    for window in windows(TREES[name], 30, name + "search"):
        dp, seq = tjap.solve(window, "dp"), tjap.solve(window, "seq")
        best = dcas_optimum(window)
        for method, repair in [
            ("sa", "greedy"),
            ("sa", "paper"),
            ("sa", "uniform"),
            ("lns", "greedy"),
        ]:
            result = tjap.solve(window, method, seed=1, iterations=300, repair=repair)
            if not dp.has_solution:
                assert not result.has_solution and result.status.value == "INFEASIBLE"
                continue
            found += 1
            check(result, window)
            start = seq if method == "sa" and seq.has_solution else dp
            assert result.info["initial"] == start.method
            assert result.info["initial_cost"] == pytest.approx(start.objective)
            assert result.objective <= start.objective + TOL
            assert result.objective >= best - TOL
            order, starts = result.info["order"], result.info["starts"]
            assert as_sets(reference_place(window, order, starts)) == as_sets(result.assignment)
    assert found >= 20


def test_the_search_finds_the_constrained_dcas_optimum_below_scas():
    """Blocks n1-n3 | n4-n6 | n7-n9 | n10-n12 with n2 and n11 busy: the 2-node job must stay in
    one block (n1 n3), and SCAS splits the other eight idle nodes into two runs of four (n4-n7,
    n8-n12). DCAS places one 4-node job on n7-n10 first; the other then takes n4 n5 n6 n12, a
    run of what is left, which is cheaper."""
    window = Window(
        BLOCKS,
        ["n1", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "n12"],
        [4, 4, {"nodes": 2, "within": 1}],
    )
    dp = tjap.solve(window, "dp")
    best = dcas_optimum(window)
    assert best < dp.objective - TOL
    for method in ("sa", "lns"):
        result = tjap.solve(window, method, seed=0)
        check(result, window)
        assert result.objective == pytest.approx(best)


def test_a_start_that_seq_cannot_find_comes_from_the_exact_optimum():
    """The 1-node job takes n1 first under Seq, and the 3-node job then finds no whole block."""
    window = Window(BLOCKS, ["n1", "n2", "n3", "n4", "n5"], [1, {"nodes": 3, "within": 1}])
    assert not tjap.solve(window, "seq").has_solution
    result = tjap.solve(window, "sa", seed=0)
    check(result, window)
    assert result.info["initial"] == "dp"


def test_no_placement_is_infeasible_in_one_result():
    window = Window(BLOCKS, [0, 3, 6, 9], [{"nodes": 2, "within": 1}])
    for method in ("sa", "lns"):
        result = tjap.solve(window, method)
        assert result.status.value == "INFEASIBLE" and not result.has_solution
        assert "no_start" in result.info


def test_no_iterations_return_the_start():
    for window in windows(BLOCKS, 10, "start"):
        seq = tjap.solve(window, "seq")
        if seq.has_solution:
            result = tjap.solve(window, "sa", iterations=0)
            assert as_sets(result.assignment) == as_sets(seq.assignment)


@pytest.mark.parametrize("method", ["sa", "lns"])
def test_same_seed_same_result(method):
    for window in windows(LABELS, 8, "seed"):
        if not tjap.solve(window, "dp").has_solution:
            continue
        a = tjap.solve(window, method, seed=5, iterations=200, repair="uniform")
        b = tjap.solve(window, method, seed=5, iterations=200, repair="uniform")
        assert a.assignment == b.assignment and a.info["order"] == b.info["order"]
        assert a.info["starts"] == b.info["starts"] and a.objective == b.objective


def paper_window_with_constraints() -> Window:
    """A window of the paper's stream (1000 nodes) with a constraint on every job."""
    w = generate_windows("paper", 1, seed=0)[0]
    kinds = [{"segment": 2}, {"within": 2}, {"prefer": 1, "prefer_cost": 700}, {"exclusive": 1}]
    jobs = [
        {"nodes": n, **kinds[i % 4]} if (i % 4 or n % 2 == 0) else n
        for i, n in enumerate(w.job_sizes)
    ]
    return Window(w.topology, w.idle_nodes, jobs, fragmentation=(300, 1))


@pytest.mark.parametrize("method", ["sa", "lns"])
def test_time_limit_on_a_paper_window(method):
    window = paper_window_with_constraints()
    limit = 0.4
    result = tjap.solve(window, method, iterations=10**7, time_limit_s=limit, seed=2)
    assert result.status.value == "TIME_LIMIT" and result.info["stopped"] == "time limit"
    assert result.runtime_s <= 1.1 * limit + 0.5
    check(result, window)
    assert result.objective <= result.info["initial_cost"] + TOL


# -- what takes no constraints ----------------------------------------------------------------
def test_lookahead_repair_refuses_constraints_in_one_line():
    window = Window(BLOCKS, list(range(12)), [{"nodes": 4, "segment": 2}, 3])
    with pytest.raises(InvalidInputError, match="does not take job constraints") as info:
        tjap.solve(window, "sa", repair="lookahead")
    assert "\n" not in str(info.value)


def test_nsa_refuses_constraints_in_one_line():
    w = generate_windows("paper", 1, seed=0)[0]
    window = Window(w.topology, w.idle_nodes, [{"nodes": 4, "within": 2}, *w.job_sizes[1:]])
    with pytest.raises(InvalidInputError, match="does not take job constraints") as info:
        tjap.solve(window, "nsa")
    assert "\n" not in str(info.value)
