"""The fragmentation term with time (:mod:`tjap.placement.tree.fragmentation`): the prices by
their definition, every method that takes the term against a brute-force optimum on tiny trees,
and the window's ``busy_s`` read, refused and written back."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tjap
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.fragmentation import HORIZON_S, domain_prices
from tjap.placement.tree.result import objective_of

TREE = tjap.Topology.from_slurm(
    "SwitchName=a Nodes=n[1-4]\nSwitchName=b Nodes=n[5-8]\nSwitchName=c Nodes=n[9-12]\n"
    "SwitchName=top Switches=a,b,c"
)
RACK = {f"n{i}": (i - 1) // 4 for i in range(1, 13)}


def by_definition(busy: dict, idle: list, runtime, rack: int, weight: float) -> float:
    """W / HORIZON_S per second the job keeps ``rack`` from being whole: its runtime (a day
    when unknown) less the seconds until the rack's busy nodes are free (a busy node not in
    ``busy``: never)."""
    ends = [busy.get(n, np.inf) for n, r in RACK.items() if r == rack and n not in idle]
    free_in = max(ends, default=0.0)
    r = HORIZON_S if runtime is None else runtime
    return weight * max(0.0, r - free_in) / HORIZON_S


def brute(idle: list, size: int, runtime, busy: dict, weight: float) -> float:
    best = np.inf
    for nodes in itertools.combinations(idle, size):
        ids = [TREE.node_index(n) for n in nodes]
        cost = job_cost(TREE, ids) + sum(
            by_definition(busy, idle, runtime, r, weight) for r in {RACK[n] for n in nodes}
        )
        best = min(best, cost)
    return best


def test_without_time_the_prices_are_one_per_whole_idle_domain():
    w = tjap.Window(TREE, "n[2-4],n[5-12]", [3], fragmentation=700)
    prices = domain_prices(w, w.jobs[0])
    leaf = tjap.placement.tree.jobs.level_domains(TREE, 1)
    assert [prices[leaf[TREE.node_index(n)]] for n in ("n2", "n5", "n9")] == [0.0, 1.0, 1.0]


@pytest.mark.parametrize("seed", range(12))
def test_every_method_that_takes_the_term_prices_by_the_definition_and_the_exact_ones_find_the_optimum(
    seed,
):
    rng = np.random.default_rng(seed)
    names = list(RACK)
    busy_nodes = sorted(rng.choice(names, size=int(rng.integers(1, 5)), replace=False).tolist())
    idle = [n for n in names if n not in busy_nodes]
    busy = {
        n: float(rng.choice([0, 600, 3600, 40000, 200000]))
        for n in busy_nodes
        if rng.random() < 0.8
    }
    size = int(rng.integers(2, 5))
    runtime = None if rng.random() < 0.2 else float(rng.choice([300, 7200, 50000, 90000]))
    weight = float(rng.choice([500, 3000]))
    job = {"nodes": size} | ({} if runtime is None else {"runtime_s": runtime})
    w = tjap.Window(TREE, idle, [job], fragmentation=weight, busy_s=busy)
    optimum = brute(idle, size, runtime, busy, weight)
    for method in ("freeform", "dp", "scip", "guarded", "sa"):
        r = tjap.solve(w, method, time_limit_s=5, seed=0)
        nodes = r.node_names()[0]
        expected = job_cost(TREE, [TREE.node_index(n) for n in nodes]) + sum(
            by_definition(busy, idle, runtime, k, weight) for k in {RACK[n] for n in nodes}
        )
        assert (
            r.objective == pytest.approx(expected) == pytest.approx(objective_of(w, r.assignment))
        )
        assert r.objective >= optimum - 1e-6, method
    assert tjap.solve(w, "freeform", time_limit_s=5).objective == pytest.approx(optimum)


def test_a_segmented_job_pays_each_domain_it_touches_once():
    """Slices of 2 over racks a (2 idle, free in 600 s) and b (whole): the walk's price is the
    kernel's, the same as the node set's."""
    w = tjap.Window(
        TREE, "n[3-8]", [{"nodes": 6, "segment": 2, "runtime_s": 3600}], fragmentation=1000,
        busy_s={"n1": 600, "n2": 600},
    )  # fmt: skip
    r = tjap.solve(w, "dp")
    assert r.objective == pytest.approx(objective_of(w, r.assignment))
    assert r.objective == pytest.approx(
        job_cost(TREE, r.assignment[0]) + 1000 * (3000 + 3600) / HORIZON_S
    )


def test_busy_s_round_trips_through_json_and_bad_entries_are_refused_in_one_line():
    w = tjap.Window(TREE, "n[2-12]", [{"nodes": 3, "runtime_s": 60}], fragmentation=10,
                    busy_s={"n1": 30})  # fmt: skip
    again = tjap.Window.from_json(w.to_json())
    assert again == w and again.to_dict()["busy_s"] == {"n1": 30.0}
    assert again.jobs[0].runtime_s == 60.0
    assert w != tjap.Window(TREE, "n[2-12]", [{"nodes": 3, "runtime_s": 60}], fragmentation=10)
    due = tjap.Window(TREE, "n[2-12]", [3], fragmentation=10, busy_s={"n1": 0})  # free any moment
    assert tjap.Window.from_json(due.to_json()) == due and due.to_dict()["busy_s"] == {"n1": 0.0}
    for busy, fragment in [({"n2": 5}, "idle in this window"), ({"n1": -1}, "busy_s['n1']"),
                           ({"zz": 5}, "busy_s"), ([1, 2], "busy_s must map")]:  # fmt: skip
        with pytest.raises(InvalidInputError, match=fragment.replace("[", r"\[")) as info:
            tjap.Window(TREE, "n[2-12]", [3], fragmentation=10, busy_s=busy)
        assert len(str(info.value).splitlines()) == 1
    with pytest.raises(InvalidInputError, match="runtime_s"):
        tjap.Window(TREE, "n[2-12]", [{"nodes": 3, "runtime_s": -5}])
