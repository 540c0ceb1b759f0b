"""Job constraints in a window (segment, within, prefer, exclusive, slurm_rule, fragmentation):
every exact method against a brute force over SCAS placements on tiny block and label trees,
every returned placement checked by an independent checker (tests/oracles/constraint_oracle.py), dp
against SCIP on random constraints, and the one-line refusals and errors."""

from __future__ import annotations

import json
import math
import random

import constraint_oracle as oracle
import numpy as np
import pytest
from constraint_cases import BLOCKS, LABELS, TAIL, random_window
from hypothesis import given, settings
from hypothesis import strategies as st

import tjap
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.arcs import arc_nodes, job_arcs
from tjap.placement.tree.jobs import Job, level_domains, slurm_level, switch_levels
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window

EXACT = ["dp", "scip", "cpsat"]


def check(result, window):
    """Every returned placement: feasible by the library and by the oracle, its objective
    recomputed from the definitions."""
    assert result.is_feasible(), result.violations()
    assert oracle.keeps(window, result.assignment)
    assert result.objective == pytest.approx(oracle.objective(window, result.assignment))


# -- levels and domains ---------------------------------------------------------------------------
@pytest.mark.parametrize("tree", [BLOCKS, TAIL, LABELS], ids=["blocks", "tail", "labels"])
def test_level_domains_match_the_definition(tree):
    for level in range(1, int(switch_levels(tree)[0]) + 1):
        got = level_domains(tree, level)
        for node in range(tree.num_nodes):
            assert tree.switch_names[got[node]] == oracle.domain(tree, node, level)


def test_the_tail_block_is_its_own_level_two_domain():
    domains = level_domains(TAIL, 2)
    assert TAIL.switch_names[domains[TAIL.node_index("n9")]] == "b4"
    assert TAIL.switch_names[domains[TAIL.node_index("n1")]] == "b0..b1"


@pytest.mark.parametrize("count", range(1, 13))
def test_slurm_level_matches_the_definition(count):
    assert slurm_level(BLOCKS, count) == oracle.slurm_level(BLOCKS, count)


# -- arcs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tree", [BLOCKS, TAIL, LABELS], ids=["blocks", "tail", "labels"])
def test_every_arc_is_priced_and_walked_as_defined(tree):
    """Each arc's nodes are the oracle's walk from its start, and its cost the oracle's
    objective of those nodes (runs that wrap back into their first domain included)."""
    rng = random.Random(7)
    for _ in range(40):
        window = random_window(rng, tree)
        for job in window.jobs:
            arcs = job_arcs(window, job)
            allowed = set(arcs.start.tolist())
            for p in range(window.num_idle):
                walk = oracle.walk(window, job, p)
                if p not in allowed:
                    continue
                k = int(np.flatnonzero(arcs.start == p)[0])
                assert walk is not None
                assert sorted(arc_nodes(window, job, p)) == sorted(walk[0])
                assert arcs.cost[k] == pytest.approx(
                    oracle.objective(window, [walk[0]], jobs=[job])
                )


def test_a_run_that_wraps_back_into_its_first_block_counts_it_once():
    window = Window(BLOCKS, ["n1", "n2", "n3", "n4"], [{"nodes": 3, "prefer": 1}])
    arcs = job_arcs(window, window.jobs[0])
    wrapped = int(np.flatnonzero(arcs.start == 2)[0])  # n3, n4, n1
    assert arcs.cost[wrapped] == pytest.approx(oracle.objective(window, [[2, 3, 0]]))


# -- exact methods against the brute force --------------------------------------------------------
@pytest.mark.parametrize("tree", [BLOCKS, TAIL, LABELS], ids=["blocks", "tail", "labels"])
def test_exact_methods_equal_brute_force(tree):
    rng = random.Random(hash(tree.switch_names) % 1000)
    for _ in range(25):
        window = random_window(rng, tree)
        best, _ = oracle.brute_force(window)
        for method in EXACT:
            result = tjap.solve(window, method)
            if math.isinf(best):
                assert result.status.value == "INFEASIBLE" and not result.has_solution, method
                continue
            assert result.status.value == "OPTIMAL", method
            assert result.objective == pytest.approx(best), (method, window.to_dict()["jobs"])
            assert oracle.is_walk(window, result.assignment)
            check(result, window)


@pytest.mark.parametrize(
    "kind", ["segment", "within", "prefer", "exclusive", "slurm_rule", "fragmentation"]
)
def test_each_constraint_alone_against_brute_force(kind):
    rng = random.Random(kind)
    seen_binding = 0
    for _ in range(20):
        idle = sorted(rng.sample(range(12), rng.randint(7, 12)))
        sizes = [rng.choice([2, 4]), rng.randint(1, 3)]
        jobs = list(sizes)
        frag = None
        if kind == "segment":
            jobs[0] = {"nodes": sizes[0], "segment": 2}
        elif kind == "fragmentation":
            frag = {"weight": 5000, "level": 1}
        else:
            value = {"segment": None, "within": 1, "prefer": 1, "exclusive": 2, "slurm_rule": True}[
                kind
            ]
            jobs[0] = {"nodes": sizes[0], kind: value}
        window = Window(BLOCKS, idle, jobs, fragmentation=frag)
        best, _ = oracle.brute_force(window)
        _, plain = oracle.brute_force(Window(BLOCKS, idle, sizes))
        seen_binding += (
            not oracle.keeps(window, plain) or best < oracle.objective(window, plain) - 1e-6
        )
        result = tjap.solve(window, "dp")
        if math.isinf(best):
            assert result.status.value == "INFEASIBLE"
        else:
            assert result.objective == pytest.approx(best)
            check(result, window)
    if kind != "prefer":  # binding prefer cases are built in the next test
        assert seen_binding > 0  # somewhere the plain optimum broke the constraint or paid for it


@pytest.mark.parametrize("which", [0, 1])
def test_prefer_moves_the_crossing_to_the_other_job(which):
    """Four idle nodes, three in one block: one of two 2-node jobs must cross blocks, and it is
    the one without the preference."""
    jobs = [2, 2]
    jobs[which] = {"nodes": 2, "prefer": "block", "prefer_cost": 500}
    window = Window(BLOCKS, ["n1", "n2", "n3", "n4"], jobs)
    for method in EXACT:
        result = tjap.solve(window, method)
        blocks = [len(set(BLOCKS.node_leaf[list(nodes)])) for nodes in result.assignment]
        assert blocks[which] == 1 and blocks[1 - which] == 2, method
        assert result.objective == pytest.approx(2000 + 4000)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6))
def test_dp_equals_scip_with_random_constraints(seed):
    rng = random.Random(seed)
    tree = rng.choice([BLOCKS, TAIL, LABELS])
    window = random_window(rng, tree)
    dp, scip = tjap.solve(window, "dp"), tjap.solve(window, "scip")
    assert dp.status == scip.status
    if dp.has_solution:
        assert dp.objective == pytest.approx(scip.objective)
        check(dp, window)
        check(scip, window)


def test_seq_keeps_constraints_and_auto_takes_them():
    rng = random.Random(3)
    for _ in range(30):
        window = random_window(rng, BLOCKS)
        seq = tjap.solve(window, "seq")
        if seq.has_solution:
            check(seq, window)
            assert oracle.is_walk(window, seq.assignment)
        auto = tjap.solve(window, "auto")
        dp = tjap.solve(window, "dp")
        assert auto.status == dp.status
        if dp.has_solution:
            assert auto.objective == pytest.approx(dp.objective)


def test_dp_is_deterministic_and_round_trips():
    window = Window(
        BLOCKS,
        list(range(12)),
        [
            {"nodes": 4, "segment": 2},
            {"nodes": 3, "exclusive": True},
            {"nodes": 2, "within": "block"},
        ],
        levels=["block", "pair"],
        fragmentation={"weight": 10, "level": "pair"},
    )
    again = Window.from_json(window.to_json())
    assert again == window
    assert again.to_dict()["jobs"] == [
        {"nodes": 4, "segment": 2},
        {"nodes": 3, "exclusive": 1},
        {"nodes": 2, "within": 1},
    ]
    a, b = tjap.solve(window, "dp", seed=1), tjap.solve(again, "dp", seed=2)
    assert a.assignment == b.assignment


def test_the_segment_case_users_report():
    """36 nodes in segments of 12 on blocks of 18 whose idle nodes invite a 17 + 17 + 2 split:
    the exact methods keep whole segments."""
    tree = Topology.from_slurm(
        "\n".join(
            [f"BlockName=b{i} Nodes=n[{18 * i + 1}-{18 * i + 18}]" for i in range(4)]
            + ["BlockSizes=18,36,72"]
        )
    )
    idle = (
        [f"n{i}" for i in range(2, 19)]
        + [f"n{i}" for i in range(20, 37)]
        + [f"n{i}" for i in range(37, 49)]
        + ["n55", "n56"]
    )
    window = Window(tree, idle, [{"nodes": 36, "segment": 12}])
    result = tjap.solve(window, "dp")
    check(result, window)
    per_block = np.bincount(tree.node_leaf[list(result.assignment[0])])
    assert sorted(c for c in per_block if c) == [12, 12, 12]


# -- refusals and errors --------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["slurm-tree", "freeform-greedy", "scip-paper", "nsa"])
def test_methods_without_constraints_refuse_in_one_line(method):
    window = Window(BLOCKS, list(range(12)), [{"nodes": 4, "segment": 2}])
    with pytest.raises(InvalidInputError, match="does not take job constraints") as info:
        tjap.solve(window, method)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "job, match",
    [
        ({"nodes": 5, "segment": 2}, "segments of 2"),
        ({"nodes": 4, "within": "rack"}, "unknown level 'rack'"),
        ({"nodes": 4, "within": 9}, "above the tree's top level 3"),
        ({"nodes": 4, "prefer": 1, "prefer_cost": -1}, "prefer_cost"),
        ({"nodes": 4, "colour": "red"}, "unknown key"),
        ({"segment": 2}, "needs 'nodes'"),
        ({"nodes": 4, "slurm_rule": "yes"}, "slurm_rule must be true or false"),
        ({"nodes": 4, "exclusive": 0}, "exclusive"),
    ],
)
def test_bad_jobs_are_one_line_errors(job, match):
    with pytest.raises(InvalidInputError, match=match) as info:
        Window(BLOCKS, list(range(12)), [2, job])
    assert "jobs[1]" in str(info.value) and "\n" not in str(info.value)


def test_window_json_errors():
    base = Window(BLOCKS, list(range(12)), [2]).to_dict()
    with pytest.raises(InvalidInputError, match="not both"):
        Window.from_dict({**base, "jobs": [2]})
    with pytest.raises(InvalidInputError, match="missing field job_sizes"):
        Window.from_dict({k: v for k, v in base.items() if k != "job_sizes"})
    with pytest.raises(InvalidInputError, match="fragmentation weight"):
        Window.from_dict({**base, "fragmentation": -1})
    with pytest.raises(InvalidInputError, match="levels must list distinct"):
        Window.from_dict({**base, "levels": ["a", "a"]})


def test_slurm_rule_needs_a_block_that_holds_the_job():
    with pytest.raises(InvalidInputError, match="no block of this tree holds 13"):
        Window(BLOCKS, list(range(12)), [Job(13, slurm_rule=True)])


def test_a_job_that_no_run_allows_is_infeasible_for_every_exact_method():
    idle = [0, 3, 6, 9]  # one idle node per block
    window = Window(BLOCKS, idle, [{"nodes": 2, "within": 1}])
    for method in [*EXACT, "seq"]:
        result = tjap.solve(window, method)
        assert result.status.value == "INFEASIBLE" and not result.has_solution
    assert json.loads(json.dumps(tjap.solve(window, "dp").to_dict()))["objective"] is None
