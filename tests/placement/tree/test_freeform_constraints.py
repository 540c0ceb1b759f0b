"""``freeform`` with job constraints: on tiny block and label trees its optimum equals a brute
force over every assignment of idle nodes to the jobs that keeps the constraints (the
independent checker of tests/oracles/constraint_oracle.py), for each constraint kind, on both solvers and
both conventions; it never exceeds the constrained SCAS optimum (dp); every placement is checked
by the oracle, its objective recomputed from the definitions."""

from __future__ import annotations

import itertools
import math
import random
import time

import constraint_oracle as oracle
import pytest
from constraint_cases import BLOCKS, LABELS, TAIL, random_window
from hypothesis import given, settings
from hypothesis import strategies as st

import tjap
from tjap import Status
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.freeform import solve_freeform
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window

TREES = {"blocks": BLOCKS, "tail": TAIL, "labels": LABELS}
KINDS = ("segment", "within", "prefer", "exclusive", "slurm_rule", "fragmentation")


def brute_force(window, convention="paper"):
    """The cheapest assignment of disjoint idle node sets to the jobs, any sets at all, that
    keeps the constraints: (objective, assignment), or (inf, None)."""
    best, found = math.inf, None

    def rec(j, free, chosen):
        nonlocal best, found
        if j == window.num_jobs:
            if oracle.keeps(window, chosen):
                value = oracle.objective(window, chosen, convention)
                if value < best - 1e-9:
                    best, found = value, list(chosen)
            return
        for nodes in itertools.combinations(sorted(free), window.job_sizes[j]):
            rec(j + 1, free - set(nodes), chosen + [list(nodes)])

    rec(0, frozenset(window.idle_nodes.tolist()), [])
    return best, found


def free_optimum(window, convention="paper"):
    """The unconstrained free-form optimum of the same idle nodes and sizes (brute force)."""
    plain = Window(window.topology, window.idle_nodes.tolist(), window.job_sizes)
    return brute_force(plain, convention)


def constrained_window(rng, tree, kind):
    """A window of two or three small jobs on 7-8 idle nodes, the first with ``kind``."""
    top = int(max(oracle._height(tree, 0, {}), 1))
    idle = sorted(rng.sample(range(tree.num_nodes), rng.randint(7, 8)))
    sizes = [rng.choice([2, 4]), rng.randint(1, 2)] + ([1] if rng.random() < 0.4 else [])
    jobs, frag = list(sizes), None
    job = {"nodes": sizes[0]}
    if kind == "segment":
        job.update(segment=2, segment_level=rng.randint(1, top))
    elif kind == "within":
        job["within"] = rng.randint(1, top)
    elif kind == "prefer":
        job.update(prefer=rng.randint(1, top), prefer_cost=rng.choice([300, 1000, 5000]))
    elif kind == "exclusive":
        job["exclusive"] = rng.randint(1, top)
    elif kind == "slurm_rule":
        job["slurm_rule"] = True
        if rng.random() < 0.5:
            job["segment"] = 2
    else:
        frag = (rng.choice([700, 5000]), rng.randint(1, top))
    if kind != "fragmentation":
        jobs[0] = job
    return Window(tree, idle, jobs, fragmentation=frag)


def check(result, window, convention="paper"):
    assert result.is_feasible(), result.violations()
    assert oracle.keeps(window, result.assignment)
    assert result.objective == pytest.approx(
        oracle.objective(window, result.assignment, convention)
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(TREES))
def test_each_constraint_equals_the_brute_force(kind, name):
    rng = random.Random(f"{kind}-{name}")
    if kind == "slurm_rule" and not TREES[name].is_block:  # Slurm's block rule: blocks alone
        with pytest.raises(InvalidInputError, match="topology/block rule"):
            constrained_window(rng, TREES[name], kind)
        return
    binding = 0
    for trial in range(8):
        window = constrained_window(rng, TREES[name], kind)
        convention = ("paper", "published")[trial % 2]
        best, _ = brute_force(window, convention)
        plain, placement = free_optimum(window, convention)
        binding += (
            not oracle.keeps(window, placement) or best > plain + 1e-6 or kind == "fragmentation"
        )
        for solver in ("scip", "cpsat"):
            result = solve_freeform(window, solver=solver, convention=convention)
            if math.isinf(best):
                assert result.status is Status.INFEASIBLE and not result.has_solution, solver
                continue
            assert result.status is Status.OPTIMAL, solver
            assert result.objective == pytest.approx(best), (solver, window.to_dict()["jobs"])
            assert result.bound == pytest.approx(best, rel=1e-6), solver
            check(result, window, convention)
    assert binding > 0  # the constraint changed the free-form optimum somewhere


@pytest.mark.parametrize("name", list(TREES))
def test_mixed_constraints_equal_the_brute_force(name):
    rng = random.Random(name)
    for _ in range(12):
        window = random_window(rng, TREES[name])
        if window.num_idle > 8:  # keep the brute force small
            continue
        best, _ = brute_force(window)
        result = tjap.solve(window, "freeform")
        if math.isinf(best):
            assert result.status is Status.INFEASIBLE
            continue
        assert result.objective == pytest.approx(best), window.to_dict()["jobs"]
        check(result, window)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6))
def test_freeform_bounds_the_constrained_scas_optimum(seed):
    rng = random.Random(seed)
    window = random_window(rng, rng.choice(list(TREES.values())))
    dp = tjap.solve(window, "dp")
    free = tjap.solve(window, "freeform", solver=rng.choice(["scip", "cpsat"]))
    if dp.has_solution:
        assert free.status is Status.OPTIMAL
        assert free.objective <= dp.objective + 1e-6
        check(free, window)
        warm = tjap.solve(window, "freeform", warm_start=dp)
        assert warm.objective == pytest.approx(free.objective)
        check(warm, window)
    elif free.has_solution:  # no SCAS placement, but a free-form one
        check(free, window)
    else:
        assert free.status is Status.INFEASIBLE


def test_exclusive_on_a_one_switch_tree():
    tree = Topology.from_slurm("SwitchName=s Nodes=n[1-4]")
    alone = Window(tree, list(range(4)), [{"nodes": 2, "exclusive": 1}])
    check(tjap.solve(alone, "freeform"), alone)
    shared = Window(tree, list(range(4)), [{"nodes": 2, "exclusive": 1}, 1])
    result = tjap.solve(shared, "freeform")
    assert result.status is Status.INFEASIBLE and not result.has_solution
    assert brute_force(shared)[0] == math.inf


def test_a_warm_start_that_breaks_the_constraints_is_a_one_line_error():
    window = Window(BLOCKS, list(range(12)), [{"nodes": 2, "within": 1}])
    with pytest.raises(InvalidInputError, match="warm_start breaks") as info:
        tjap.solve(window, "freeform", warm_start=[[2, 3]])
    assert "\n" not in str(info.value)


def test_the_greedy_still_refuses_constraints():
    window = Window(BLOCKS, list(range(12)), [{"nodes": 2, "within": 1}])
    with pytest.raises(InvalidInputError, match="does not take job constraints"):
        tjap.solve(window, "freeform-greedy")


def test_a_constrained_window_keeps_the_limit():
    """Many segmented and exclusive jobs on a large block cluster: the limit holds and the
    placement keeps the constraints (Seq's, when the solver found nothing better)."""
    tree = Topology.from_slurm(
        "\n".join(
            [f"BlockName=b{i} Nodes=n[{16 * i + 1}-{16 * i + 16}]" for i in range(40)]
            + ["BlockSizes=16,64,256"]
        )
    )
    rng = random.Random(0)
    idle = sorted(rng.sample(range(tree.num_nodes), 560))
    jobs = [
        {"nodes": 8, "segment": 4}
        if j % 3 == 0
        else {"nodes": 6, "exclusive": 1}
        if j % 3 == 1
        else rng.randint(2, 12)
        for j in range(45)
    ]
    window = Window(tree, idle, jobs, fragmentation=500)
    started = time.perf_counter()
    result = tjap.solve(window, "freeform", time_limit_s=1.0)
    assert time.perf_counter() - started < 5.0
    assert result.status is Status.TIME_LIMIT and result.has_solution
    assert result.is_feasible(), result.violations()
    assert result.objective <= tjap.solve(window, "seq").objective + 1e-6


def test_siblings_alike_but_for_busy_nodes_are_not_interchanged():
    """Two leaf switches with three idle nodes each, one of them whole: the fragmentation term
    tells them apart, so the model may not order them as interchangeable."""
    tree = Topology.from_slurm(
        "SwitchName=a Nodes=n[1-3]\nSwitchName=b Nodes=n[4-7]\nSwitchName=top Switches=a,b"
    )
    window = Window(tree, ["n1", "n2", "n3", "n4", "n5", "n6"], [3], fragmentation=5000)
    best, _ = brute_force(window)
    for solver in ("scip", "cpsat"):
        result = solve_freeform(window, solver=solver)
        assert result.objective == pytest.approx(best) == pytest.approx(4000)
        assert set(result.assignment[0]) == {3, 4, 5}
