"""Time limits on very large trees (``python -m benchmarks.large_trees``: 100,000 and 1,000,000
nodes), held here on small windows with the predictions monkeypatched:

- a SCAS or free-form model predicted to take far longer to build than the limit is not started:
  the solver returns its fallback at once, status TIME_LIMIT, ``info["stopped"]`` saying so;
- the comparison with the constructive rules after a limit (:func:`tjap.rules.no_worse_than_rules`)
  runs only the rules predicted to finish in what is left of the limit, and names the others in
  ``info["rules_skipped"]``; ``runtime_s`` counts it;
- the annealing loop runs a chunk predicted to take long in slices of it, the same for the same
  seed;
- the vectorised parts (the free-form idle tree, its greedy, Kueue's best fit) give what the
  loops they replaced gave.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import tjap
from tjap import Status
from tjap.heuristics.tree import _kernels, kueue
from tjap.heuristics.tree import anneal as sa
from tjap.placement.tree import freeform, rules, scas
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.result import Result
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window


def tree_window(nodes=400, jobs=8, seed=0) -> Window:
    """Leaves of 10 nodes, 10 leaves a middle switch, one top; half the nodes idle."""
    leaves = nodes // 10
    lines = [f"SwitchName=top Switches=m[0-{(leaves - 1) // 10}]"]
    lines += [
        f"SwitchName=m{m} Switches=s[{10 * m}-{min(leaves, 10 * m + 10) - 1}]"
        for m in range((leaves + 9) // 10)
    ]
    lines += [f"SwitchName=s{s} Nodes=n[{10 * s + 1}-{10 * s + 10}]" for s in range(leaves)]
    rng = np.random.default_rng(seed)
    topology = Topology.from_slurm("\n".join(lines))
    idle = np.flatnonzero(rng.random(nodes) < 0.5)
    return Window(topology, idle, rng.integers(2, 9, jobs).tolist())


def random_tree(rng) -> Topology:
    """A switch tree of uneven depth (one or two top-level switches)."""
    lines, count = [], [0]

    def build(name, depth):
        if depth == 0 or rng.random() < 0.3:
            k = int(rng.integers(1, 6))
            lines.append(f"SwitchName={name} Nodes=n[{count[0] + 1}-{count[0] + k}]")
            count[0] += k
            return
        kids = [f"{name}x{i}" for i in range(int(rng.integers(1, 4)))]
        lines.append(f"SwitchName={name} Switches={','.join(kids)}")
        for kid in kids:
            build(kid, depth - 1)

    for r in range(int(rng.integers(1, 3))):
        build(f"r{r}", 3)
    return Topology.from_slurm("\n".join(lines))


# -- models that cannot be built in time are not started ---------------------------------------
@pytest.mark.parametrize("method", ["scip", "cpsat", "scip-paper", "cpsat-paper"])
def test_a_scas_model_predicted_too_slow_to_build_is_not_started(method, monkeypatch):
    monkeypatch.setattr(scas, "SCIP_BUILD_S_PER_NONZERO", 1.0)
    monkeypatch.setattr(scas, "CPSAT_BUILD_S_PER_NONZERO", 1.0)
    w = tree_window()
    started = time.perf_counter()
    r = tjap.solve(w, method, time_limit_s=5)
    assert time.perf_counter() - started < 2.0
    assert r.status in (Status.TIME_LIMIT, Status.OPTIMAL) and r.is_feasible()
    assert "predicted" in r.info["stopped"] and "building" in r.info["stopped"]
    assert r.info["fallback"] in ("dp", "seq")
    assert r.objective <= tjap.solve(w, "seq").objective + 1e-6


def test_a_scas_model_predicted_to_fit_is_still_built():
    w = tree_window(nodes=100, jobs=3)
    assert scas.predicted_build_s(w, "scip") < 0.1
    r = tjap.solve(w, "scip", time_limit_s=30)
    assert r.status is Status.OPTIMAL and "stopped" not in r.info


def test_the_paper_formulation_is_predicted_at_twice_the_set_packing_model():
    w = tree_window()
    assert scas.predicted_build_s(w, "scip", "paper") == pytest.approx(
        2 * scas.predicted_build_s(w, "scip")
    )


def test_a_free_form_model_predicted_too_slow_to_build_is_not_started(monkeypatch):
    monkeypatch.setattr(freeform, "BUILD_S_PER_BIT", {"scip": 1.0, "cpsat": 1.0})
    w = tree_window()
    started = time.perf_counter()
    r = tjap.solve(w, "freeform", time_limit_s=5)
    assert time.perf_counter() - started < 2.0
    assert r.status is Status.TIME_LIMIT and r.is_feasible()
    assert "predicted" in r.info["stopped"]
    floor = min(tjap.solve(w, m).objective for m in ("seq", "freeform-greedy"))
    assert r.objective <= floor + 1e-6
    warm = tjap.solve(w, "slurm-tree")  # a warm start is kept
    kept = freeform.solve_freeform(w, time_limit_s=5, warm_start=warm)
    assert kept.info.get("kept_warm_start") or kept.objective < warm.objective


def test_the_free_form_prediction_counts_the_model_bits():
    w = tree_window(nodes=100, jobs=3)
    cap = freeform._Capacity(w)
    bits = freeform.freeform_variables(w)
    by_hand = 0
    uppers = [int(cap.idle[m].sum()) for row in cap.rows for _, m, leaf in row if not leaf]
    for n in w.job_sizes:
        by_hand += sum(min(int(c), n) for c in cap.idle) + sum(min(u, n) for u in uppers)
    assert bits == by_hand
    assert freeform.predicted_build_s(w) > bits * freeform.BUILD_S_PER_BIT["scip"]
    r = tjap.solve(w, "freeform", time_limit_s=30)  # small: built and solved as before
    assert r.status is Status.OPTIMAL


# -- the rules' comparison keeps the limit ---------------------------------------------------
def test_rules_predicted_past_the_time_left_are_skipped(monkeypatch):
    w = tree_window()
    seq = tjap.solve(w, "seq")
    stopped = Result.from_assignment(
        w, seq.assignment, status=Status.TIME_LIMIT, method="sa", convention="paper", runtime_s=1.0
    )
    everything = rules.no_worse_than_rules(stopped, "free")
    assert "rules_skipped" not in everything.info
    monkeypatch.setattr(rules, "RULE_S_PER_IDLE", {"seq": 0.0, "freeform-greedy": 1.0})
    monkeypatch.setattr(rules, "RULE_S_PER_NODE_JOB", {"slurm-tree": 1.0})
    cut = rules.no_worse_than_rules(stopped, "free", time_left_s=0.5)
    assert cut.info["rules_skipped"] == ["slurm-tree", "freeform-greedy"]
    assert cut.objective == pytest.approx(seq.objective) and cut.status is Status.TIME_LIMIT
    assert cut.runtime_s >= stopped.runtime_s
    # nothing to compare against: Seq runs whatever the time left
    empty = Result.from_assignment(
        w, (), status=Status.TIME_LIMIT, method="sa", convention="paper", runtime_s=1.0
    )
    rescued = rules.no_worse_than_rules(empty, "free", time_left_s=0.0)
    assert rescued.has_solution and rescued.info["fallback"] == "seq"
    assert rescued.info["rules_skipped"] == ["slurm-tree", "freeform-greedy"]


def test_solve_gives_the_rules_what_is_left_of_the_limit(monkeypatch):
    monkeypatch.setattr(freeform, "BUILD_S_PER_BIT", {"scip": 1.0, "cpsat": 1.0})  # stops at once
    monkeypatch.setattr(rules, "RULE_S_PER_NODE_JOB", {"slurm-tree": 10.0})
    w = tree_window()
    started = time.perf_counter()
    r = tjap.solve(w, "freeform", time_limit_s=0.3)
    wall = time.perf_counter() - started
    assert r.status is Status.TIME_LIMIT
    assert "slurm-tree" in r.info.get("rules_skipped", [])
    assert r.is_feasible() and wall < 3.0
    assert r.runtime_s <= wall + 1e-6
    assert rules.rules_time_left(None, time.perf_counter()) is None
    left = rules.rules_time_left(1.0, time.perf_counter() - 0.5)
    assert 0.5 + rules.RULES_GRACE_S - 0.1 < left <= 0.5 + rules.RULES_GRACE_S


def test_a_dcas_fallback_keeps_its_steps():
    """An SA result replaced by a rule describes the rule's assignment by its DCAS steps."""
    w = tree_window()
    r = tjap.solve(w, "sa", time_limit_s=1e-6)  # stopped at once: compared with the rules
    seq = tjap.solve(w, "seq")
    assert r.status is Status.TIME_LIMIT
    assert r.objective <= seq.objective + 1e-6
    from tjap.placement.tree.dcas import decode

    assert sorted(map(sorted, decode(w, r.info["order"], r.info["starts"]))) == sorted(
        map(sorted, r.assignment)
    )


# -- the annealing loop in slices --------------------------------------------------------------
def test_a_normal_window_runs_whole_chunks():
    w = tjap.Window(FatTree.from_layout("paper"), range(1000), [8, 6, 4, 12, 3])
    for repair in ("greedy", "paper", "lookahead"):
        unit = sa.slice_unit(w, sa.make_repair(repair), 5, _kernels.CHUNK)
        assert unit == _kernels.CHUNK


def test_a_slow_chunk_runs_in_slices_with_the_same_result_for_the_same_seed(monkeypatch):
    w = tree_window(nodes=200, jobs=6)
    whole = tjap.solve(w, "sa", iterations=300, seed=3)
    monkeypatch.setattr(sa, "MOVE_S_PER_IDLE_JOB", {_kernels.REPAIR_GREEDY: 1.0})
    assert sa.slice_unit(w, sa.make_repair("greedy"), 5, _kernels.CHUNK) == 1
    calls = []
    real = _kernels.anneal

    def counted(*args):
        calls.append(args[13] - args[12])  # it_end - it_begin
        return real(*args)

    monkeypatch.setattr(_kernels, "anneal", counted)
    a = tjap.solve(w, "sa", iterations=300, seed=3)
    b = tjap.solve(w, "sa", iterations=300, seed=3)
    assert set(calls) == {1} and len(calls) == 600
    assert a.assignment == b.assignment and a.is_feasible() and a.iterations == 300
    assert a.objective <= whole.info["initial_cost"] + 1e-6
    assert sa._slice_seed(3, 256, 256) == 3 and sa._slice_seed(3, 257, 256) != 3


def test_a_call_that_would_overrun_the_limit_is_not_started(monkeypatch):
    w = tree_window(nodes=200, jobs=6)
    monkeypatch.setattr(sa, "MOVE_S_PER_IDLE_JOB", {_kernels.REPAIR_GREEDY: 1.0})
    real = _kernels.anneal

    calls = []

    def slow(*args):
        calls.append(1)
        time.sleep(0.2)
        return real(*args)

    monkeypatch.setattr(_kernels, "anneal", slow)
    r = tjap.solve(w, "sa", iterations=10_000, time_limit_s=0.5)
    # two calls of 0.2 s, then 0.1 s left: a third would end past the limit, so none starts
    assert len(calls) == 2 and r.iterations == 2
    assert r.status is Status.TIME_LIMIT and r.info["stopped"] == "time limit"


# -- the vectorised parts give what the loops gave -------------------------------------------
def _idle_tree_by_loop(topology, leaves):
    parent = topology.switch_parent
    under, children = {}, {}
    for e, s in enumerate(leaves.tolist()):
        under[s] = [e]
        while parent[s] >= 0:
            p = int(parent[s])
            under.setdefault(p, [])
            children.setdefault(p, [])
            if not under[p] or under[p][-1] != e:
                under[p].append(e)
            if not children[p] or children[p][-1] != s:
                children[p].append(s)
            s = p
    return under, children


def _greedy_by_loop(window):
    """The best-fit greedy as it was written: one sum per switch and job."""
    cap = freeform._Capacity(window)
    free = cap.idle.astype(np.int64).copy()
    counts = np.zeros((window.num_jobs, len(free)), dtype=np.int64)
    height = {}
    for s in reversed(cap.switches):
        height[s] = 1 if cap.is_leaf(s) else 1 + max(height[c] for c in cap.children[s])
    by_height: dict = {}
    for s in cap.switches:
        by_height.setdefault(height[s], []).append(s)

    def below(s):
        return int(free[cap.under[s]].sum())

    def fill(j, s, need):
        if cap.is_leaf(s):
            counts[j, cap.leaf_position[s]] += need
            free[cap.leaf_position[s]] -= need
            return
        kids = cap.children[s]
        room = [below(c) for c in kids]
        for k in np.argsort(-np.array(room), kind="stable"):
            take = min(need, room[k])
            if take:
                fill(j, kids[k], take)
                need -= take
            if need == 0:
                break

    for j in sorted(range(window.num_jobs), key=lambda j: (-window.job_sizes[j], j)):
        need = window.job_sizes[j]
        for h in sorted(by_height):
            room = np.array([below(s) for s in by_height[h]])
            fits = np.flatnonzero(room >= need)
            if fits.size:
                fill(j, by_height[h][fits[np.argmin(room[fits])]], need)
                break
    return cap.assignment(counts)


@pytest.mark.parametrize("seed", range(6))
def test_the_idle_tree_and_the_greedy_match_their_loops(seed):
    rng = np.random.default_rng(seed)
    trees = [random_tree(rng) for _ in range(5)] + [FatTree(k=4), FatTree.from_layout("paper")]
    for t in trees:
        idle = np.sort(rng.choice(t.num_nodes, int(rng.integers(1, t.num_nodes + 1)), False))
        idle_tree = freeform._IdleTree(t, idle)
        under, children = _idle_tree_by_loop(t, idle_tree.leaves)
        assert idle_tree.under == under and idle_tree.children == children
        leaf_q = t.node_leaf[idle]
        for e, s in enumerate(idle_tree.leaves):
            assert idle_tree.nodes[e].tolist() == idle[leaf_q == s].tolist()
        sizes = rng.integers(1, 4, int(rng.integers(1, 5))).tolist()
        if sum(sizes) <= idle.size:
            w = Window(t, idle, sizes)
            got = tjap.solve(w, "freeform-greedy").assignment
            assert [sorted(a) for a in got] == [sorted(a) for a in _greedy_by_loop(w)]


def _best_fit_by_loop(domains, needed, capacity):
    best = int(domains[0])
    for d in domains:
        if needed <= capacity[d] < capacity[best]:
            best = int(d)
    return best


def test_kueue_best_fit_matches_its_loop():
    rng = np.random.default_rng(0)
    for _ in range(500):
        capacity = rng.integers(0, 6, int(rng.integers(1, 30)))
        domains = rng.permutation(capacity.size)[: int(rng.integers(1, capacity.size + 1))]
        needed = int(rng.integers(0, 7))
        assert kueue._Placement.best_fit(domains, needed, capacity) == _best_fit_by_loop(
            domains, needed, capacity
        )
    assert kueue._holding(np.array([3, 1, 2]), np.array([0, 5, 0, 1]), 2).tolist() == [3, 1]
    assert kueue._holding(np.array([3, 1, 2]), np.array([0, 5, 0, 1]), 0).tolist() == [3, 1, 2]


def _covering_by_loop(data):
    m = data.window.num_idle
    rows = [[] for _ in range(m)]
    for j, a in enumerate(data.arcs):
        for k in range(a.count):
            for q in range(int(a.first[k]), int(a.first[k]) + int(a.length[k])):
                rows[q % m].append((j, k))
    return rows


def test_the_set_packing_rows_match_their_loop():
    import random

    from constraint_cases import BLOCKS, LABELS, TAIL, random_window

    rng = random.Random(0)
    windows = [tree_window(nodes=60, jobs=4, seed=s) for s in range(3)]
    windows += [random_window(rng, tree) for tree in (BLOCKS, TAIL, LABELS) for _ in range(20)]
    for w in windows:
        data = scas.ScasModel.build(w)
        assert data.covering() == _covering_by_loop(data)


@pytest.mark.parametrize("method", ["scip", "freeform", "guarded"])
def test_the_solver_package_is_imported_even_when_no_model_is_built(method, monkeypatch):
    """tjap solve's start-up solve (a 1 ms limit) imports what the timed solve needs: a signal
    that lands inside a Cython package's import can be lost (its ABC registration swallows
    the exception), so the import must not wait for the timed solve."""
    from tjap.core import backends

    monkeypatch.setattr(scas, "SCIP_BUILD_S_PER_NONZERO", 1.0)
    monkeypatch.setattr(freeform, "BUILD_S_PER_BIT", {"scip": 1.0, "cpsat": 1.0})
    asked = []
    real = backends.require

    def require(module, *args, **kwargs):
        asked.append(module)
        return real(module, *args, **kwargs)

    monkeypatch.setattr(backends, "require", require)
    import tjap.heuristics.tree.guarded as guarded

    monkeypatch.setattr(guarded, "require", require)
    r = tjap.solve(tree_window(), method, time_limit_s=1e-3)
    assert r.is_feasible() and "pyscipopt" in asked


def test_a_rule_slower_than_predicted_makes_the_next_ones_predicted_slower(monkeypatch):
    w = tree_window()
    seq = tjap.solve(w, "seq")
    stopped = Result.from_assignment(
        w, seq.assignment, status=Status.TIME_LIMIT, method="sa", convention="paper", runtime_s=0.0
    )
    monkeypatch.setattr(rules, "_SLOWDOWN", {"factor": 1.0})
    monkeypatch.setattr(
        rules, "RULE_S_PER_NODE_JOB", {"slurm-tree": 0.1 / (w.topology.num_nodes * w.num_jobs)}
    )
    monkeypatch.setattr(rules, "RULE_S_PER_IDLE", {"seq": 0.0, "freeform-greedy": 0.3 / w.num_idle})
    monkeypatch.setattr(rules, "RULE_FIRST_RUN_S", 0.0)
    from tjap.heuristics.slurm import tree as slurm_tree

    real = slurm_tree.solve_slurm_tree

    def slow(*args, **kwargs):  # 0.1 s predicted, 0.4 s taken: the machine is 4x slower
        time.sleep(0.4)
        return real(*args, **kwargs)

    monkeypatch.setattr(slurm_tree, "solve_slurm_tree", slow)
    r = rules.no_worse_than_rules(stopped, "free", time_left_s=1.2)
    # freeform-greedy: 0.3 s x 1.5 fitted the 0.8 s left, but not 4 times that
    assert r.info["rules_skipped"] == ["freeform-greedy"]
    assert rules._SLOWDOWN["factor"] == pytest.approx(4.0, rel=0.3)
    assert rules.predicted_rule_s("freeform-greedy", w, "free") == pytest.approx(
        1.5 * rules._SLOWDOWN["factor"] * 0.3
    )
