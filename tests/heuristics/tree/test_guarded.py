"""``guarded`` on every cluster: with the jobs' constraints, never above the window's optimum
(``dp``) nor the cluster's scheduler (``slurm-block`` on a block cluster, ``slurm-tree`` on a
tree, Kueue when asked), never below the least cost of any placement (a brute force over every
node set on tiny block trees), every placement checked by the independent constraint oracle."""

from __future__ import annotations

import itertools
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import constraint_oracle as oracle
import pytest
from constraint_cases import BLOCKS, TAIL

import tjap
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window


def least_cost(window) -> float:
    """The least objective of any assignment that keeps the jobs' constraints (no contiguity
    rule): every node set of every job, tried."""
    idle = [int(v) for v in window.idle_nodes]
    best = math.inf

    def place(j, free, chosen):
        nonlocal best
        if j == window.num_jobs:
            if oracle.keeps(window, chosen):
                best = min(best, oracle.objective(window, chosen))
            return
        for nodes in itertools.combinations(free, window.job_sizes[j]):
            rest = [v for v in free if v not in nodes]
            place(j + 1, rest, [*chosen, list(nodes)])

    place(0, idle, [])
    return best


def segmented_window(rng, tree, slurm_rule: bool) -> Window:
    """Two or three jobs on a few idle nodes of ``tree``, at least one with segments of 2."""
    idle = sorted(rng.sample(range(tree.num_nodes), rng.randint(5, min(9, tree.num_nodes))))
    jobs, left = [], len(idle)
    for k in range(rng.randint(2, 3)):
        if left < 1:
            break
        n = rng.choice([v for v in (2, 4) if v <= left] or [1])
        job = {"nodes": n}
        if n % 2 == 0 and (k == 0 or rng.random() < 0.5):
            job["segment"] = 2
        if slurm_rule:
            job["slurm_rule"] = True
        jobs.append(job)
        left -= n
    return Window(tree, idle, jobs)


@pytest.mark.parametrize("slurm_rule", [False, True], ids=["given", "slurm_rule"])
@pytest.mark.parametrize("tree", [BLOCKS, TAIL], ids=["blocks", "tail"])
def test_guarded_on_block_windows_with_segments(tree, slurm_rule):
    rng = random.Random(f"{tree.num_nodes}-{slurm_rule}")
    compared = 0
    for _ in range(16):
        window = segmented_window(rng, tree, slurm_rule)
        r = tjap.solve(window, "guarded")
        dp = tjap.solve(window, "dp")
        slurm = tjap.solve(window, "slurm-block")
        floor = least_cost(window)
        assert r.info["scheduler"] == "slurm-block"
        if not r.has_solution:  # no candidate placed the window: neither did dp nor Slurm
            assert not dp.has_solution and not slurm.has_solution
            continue
        assert r.is_feasible(), r.violations()
        assert oracle.keeps(window, r.assignment)
        assert r.objective == pytest.approx(oracle.objective(window, r.assignment))
        ceiling = min(x.objective for x in (dp, slurm) if x.has_solution)
        assert floor - 1e-6 <= r.objective <= ceiling + 1e-9
        assert r.info["slurm_block_cost"] == (slurm.objective if slurm.has_solution else None)
        compared += 1
    assert compared >= 5  # enough windows are placed that the bounds were tested


def test_guarded_with_a_time_limit_keeps_the_bounds_and_may_improve_free_form():
    rng = random.Random(3)
    for _ in range(6):
        window = segmented_window(rng, BLOCKS, slurm_rule=False)
        r = tjap.solve(window, "guarded", time_limit_s=2)
        dp, slurm = tjap.solve(window, "dp"), tjap.solve(window, "slurm-block")
        if not r.has_solution:
            continue
        assert oracle.keeps(window, r.assignment)
        assert r.objective <= min(x.objective for x in (dp, slurm) if x.has_solution) + 1e-9
        assert r.info["candidates"]["freeform"]["status"] in ("OPTIMAL", "FEASIBLE", "TIME_LIMIT")
        assert r.objective >= least_cost(window) - 1e-6


TREE = Topology.from_slurm(
    "SwitchName=a Nodes=n[1-4]\nSwitchName=b Nodes=n[5-8]\nSwitchName=top Switches=a,b"
)


def test_guarded_on_a_switch_tree_guards_slurm_tree_and_on_request_kueue():
    window = Window(TREE, "n[2-3],n[5-8]", [2, 3])
    r = tjap.solve(window, "guarded")
    assert r.info["scheduler"] == "slurm-tree" and r.info["winner"] in ("scas", "slurm-tree")
    assert r.objective <= tjap.solve(window, "slurm-tree").objective + 1e-9
    for kueue in ("kueue-bestfit", "kueue-leastfree"):
        k = tjap.solve(window, "guarded", scheduler=kueue)
        assert k.info["scheduler"] == kueue and kueue in k.info["candidates"]
        assert k.objective <= tjap.solve(window, kueue).objective + 1e-9
        assert k.objective <= tjap.solve(window, "dp").objective + 1e-9


def test_slurm_tree_cannot_express_constraints_and_says_so():
    window = Window(TREE, "n[1-8]", [{"nodes": 4, "within": 1}, 2])
    r = tjap.solve(window, "guarded")
    entry = r.info["candidates"]["slurm-tree"]
    assert entry["status"] == "NOT_RUN" and "no job constraints" in entry["error"]
    assert r.info["winner"] == "scas" and r.is_feasible()
    assert r.objective == pytest.approx(tjap.solve(window, "dp").objective)


def test_bad_scheduler_is_one_line():
    window = Window(TREE, "n[1-8]", [2])
    with pytest.raises(InvalidInputError, match="scheduler must be one of 'slurm-tree'"):
        tjap.solve(window, "guarded", scheduler="volcano")
    with pytest.raises(InvalidInputError, match="needs a block cluster"):
        tjap.solve(window, "guarded", scheduler="slurm-block")


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.parametrize("slurm_rule", [False, True], ids=["given", "slurm_rule"])
def test_tjap_solve_method_guarded_on_the_block_example(tmp_path, slurm_rule):
    given = json.loads((EXAMPLES / "blocks-window.json").read_text())
    given["topology"] = {"slurm": str(EXAMPLES / "blocks.conf")}
    if slurm_rule:
        given["jobs"] = [
            {**(job if isinstance(job, dict) else {"nodes": job}), "slurm_rule": True}
            for job in given["jobs"]
        ]
    path = tmp_path / "w.json"
    path.write_text(json.dumps(given))
    out = subprocess.run(
        [sys.executable, "-m", "tjap", "solve", str(path), "--method", "guarded", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    window = tjap.load_windows(path)[0]
    assert result["method"] == "guarded" and result["status"] in ("OPTIMAL", "FEASIBLE")
    assert oracle.keeps(window, result["assignment"])
    dp, slurm = tjap.solve(window, "dp"), tjap.solve(window, "slurm-block")
    assert result["objective"] <= min(dp.objective, slurm.objective) + 1e-9
