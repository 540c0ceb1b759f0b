"""Allocation with no contiguity rule: the true minimum CH cost of a window.

On a fat-tree a job's cost depends only on how many of its nodes sit in each edge switch (sum of
squares A) and each pod (sum of squares B), see :mod:`placement.tree.cost`. So the quadratic assignment
problem collapses to an integer model over per-switch counts u[j, e], with each square written
exactly as u^2 = sum_k (2k - 1) * [u >= k] over ordered binaries. Solved by SCIP (default) or
CP-SAT; every contiguity strategy (SCAS, DCAS) is measured against its optimum.

The model is exact, but its LP relaxation is weak (it lets every node count as if its job filled
the fullest switch and pod), so proving optimality on windows with hundreds of idle nodes can take
long: give ``time_limit_s`` and a ``warm_start`` (the SCAS optimum), and read ``status`` and
``bound``.

:func:`solve_freeform_greedy` is a fast best-fit heuristic over the same counts.
"""

from __future__ import annotations

import math
import time

import numpy as np

from tjap import _backends
from placement.tree.cost import HOP_UNIT_COST, convention_code
from tjap.errors import InvalidInputError
from placement.tree.result import Result, Status
from placement.tree.fat_tree import FatTree
from placement.tree.window import Window

SOLVERS = ("cpsat", "scip")


class _Capacity:
    """Idle nodes of a window grouped by edge switch (only switches with an idle node)."""

    def __init__(self, window: Window):
        t = window.topology
        switch_q = t.switch_of[window.idle_nodes]
        self.switches, self.idle = np.unique(switch_q, return_counts=True)
        self.pod_of_switch = t.pod_of[self.switches * t.nodes_per_switch]
        self.pods = np.unique(self.pod_of_switch)
        self.nodes = [window.idle_nodes[switch_q == s] for s in self.switches]

    def assignment(self, counts) -> list[list[int]]:
        """Concrete node ids for per-job, per-switch counts (lowest idle ids of each switch)."""
        taken = np.zeros(len(self.switches), dtype=np.int64)
        out = []
        for row in counts:
            nodes = []
            for e, c in enumerate(row):
                c = int(c)
                nodes.extend(self.nodes[e][taken[e]:taken[e] + c].tolist())
                taken[e] += c
            out.append(nodes)
        return out


class _Builder:
    """The few model operations both back ends need, so the model is written once."""

    def __init__(self, solver: str, time_limit_s, seed):
        self.kind = solver
        if solver == "cpsat":
            self.cp = _backends.require("ortools.sat.python.cp_model")
            self.model = self.cp.CpModel()
        else:
            self.model = _backends.scip_model(time_limit_s, seed)
        self.time_limit_s, self.seed = time_limit_s, seed

    def bool(self):
        return self.model.new_bool_var("") if self.kind == "cpsat" else self.model.addVar(vtype="B")

    def int(self, lo, hi):
        if self.kind == "cpsat":
            return self.model.new_int_var(lo, hi, "")
        return self.model.addVar(vtype="I", lb=lo, ub=hi)

    def add(self, constraint):
        if self.kind == "cpsat":
            self.model.add(constraint)
        else:
            self.model.addCons(constraint)

    @staticmethod
    def sum(terms):
        terms = list(terms)
        return sum(terms[1:], terms[0]) if terms else 0


def _ordered_bits(b: _Builder, cap: int):
    bits = [b.bool() for _ in range(cap)]
    for lo, hi in zip(bits, bits[1:]):
        b.add(hi <= lo)
    return bits


def _break_symmetry(b: _Builder, cap: _Capacity, count_vars, sizes) -> None:
    """Interchangeable switches (same pod, same idle count) and pods (same idle profile) may be
    taken in any order: require the largest job's count to be non-increasing along each group."""
    lead = max(range(len(sizes)), key=lambda j: (sizes[j], -j))

    def count(e):
        return b.sum(count_vars[lead][e])

    groups: dict = {}
    for e, (pod, idle) in enumerate(zip(cap.pod_of_switch, cap.idle)):
        groups.setdefault((int(pod), int(idle)), []).append(e)
    for members in groups.values():
        for e, f in zip(members, members[1:]):
            b.add(count(e) >= count(f))
    profiles: dict = {}
    for pod in cap.pods:
        members = np.flatnonzero(cap.pod_of_switch == pod)
        profiles.setdefault(tuple(sorted(cap.idle[members].tolist())), []).append(members)
    for pods in profiles.values():
        for p, q in zip(pods, pods[1:]):
            b.add(b.sum(count(e) for e in p) >= b.sum(count(e) for e in q))


def _max_sum_of_squares(capacities, n: int) -> int:
    """Largest sum of squares of n nodes spread over bins of the given capacities: fill the largest
    bins first (that vector majorizes every other feasible one)."""
    total, left = 0, n
    for c in sorted((int(c) for c in capacities), reverse=True):
        take = min(c, left)
        total += take * take
        left -= take
    return total


def _max_job_squares(window: Window, n: int) -> int:
    """Largest A + B (switch plus pod sums of squares) of one n-node job alone on the idle nodes."""
    t = window.topology
    nodes = np.array(best_single_job_nodes(t, window.idle_nodes, n), dtype=np.int64)
    return int((np.bincount(t.switch_of[nodes]) ** 2).sum() + (np.bincount(t.pod_of[nodes]) ** 2).sum())


def best_single_job_nodes(topology: FatTree, idle_nodes: np.ndarray, size: int) -> list[int]:
    """The cheapest node set of ``size`` nodes for one job alone, in both conventions.

    Cost falls as A + B (sums of squared per-switch and per-pod counts) grows, so: inside a pod
    fill the fullest switches first (optimal for a given pod count), and choose the pod counts by
    a knapsack DP over pods.
    """
    switch_q = topology.switch_of[idle_nodes]
    pod_q = topology.pod_of[idle_nodes]
    gains, fills = [], []
    pods, pod_idle = np.unique(pod_q, return_counts=True)
    for p in pods[np.argsort(pod_idle, kind="stable")]:  # ties go to the tightest pod
        switches, counts = np.unique(switch_q[pod_q == p], return_counts=True)
        nodes_of = {int(s): idle_nodes[switch_q == s] for s in switches}
        gain = [0]
        fill_for = [[]]
        for v in range(1, min(int(counts.sum()), size) + 1):
            chosen, squares = _fill_pod(switches, counts, v)
            gain.append(squares + v * v)
            fill_for.append([u for s, c in chosen for u in nodes_of[s][:c].tolist()])
        gains.append(np.array(gain, dtype=np.int64))
        fills.append(fill_for)
    best = np.full(size + 1, -1, dtype=np.int64)
    best[0] = 0
    choice = np.zeros((len(gains), size + 1), dtype=np.int64)
    for k, gain in enumerate(gains):
        new = best.copy()
        for used in np.flatnonzero(best >= 0):
            for v in range(1, min(gain.size - 1, size - used) + 1):
                if best[used] + gain[v] > new[used + v]:
                    new[used + v] = best[used] + gain[v]
                    choice[k, used + v] = v
        best = new
    nodes, left = [], size
    for k in range(len(gains) - 1, -1, -1):
        v = int(choice[k, left])
        nodes.extend(fills[k][v])
        left -= v
    return sorted(nodes)


def _fill_pod(switches, counts, v):
    """Place v nodes in one pod maximising the sum of squared per-switch counts: fill the fullest
    switches whole, and put the remainder in the tightest switch that holds it (best fit)."""
    order = np.argsort(-counts, kind="stable")
    chosen, squares, left = [], 0, v
    used = set()
    for k in order:
        if left < counts[k]:
            break
        chosen.append((int(switches[k]), int(counts[k])))
        squares += int(counts[k]) ** 2
        left -= int(counts[k])
        used.add(int(k))
    if left:
        fits = [k for k in range(len(counts)) if k not in used and counts[k] >= left]
        k = min(fits, key=lambda k: (counts[k], k))
        chosen.append((int(switches[k]), left))
        squares += left * left
    return chosen, squares


def _square_terms(bits):
    return [(2 * k + 1, v) for k, v in enumerate(bits)]


def solve_freeform(window: Window, *, convention="paper", time_limit_s=None, seed=0,
                   solver="scip", warm_start=None, workers=1) -> Result:
    """Exact minimum CH cost with no contiguity rule.

    ``warm_start``: a Result (or assignment) of the same window, used as a CP-SAT hint and kept if
    the solver stops with a worse solution, so the returned cost never exceeds it.
    """
    window.require_fat_tree("freeform")
    if solver not in SOLVERS:
        raise InvalidInputError(f"freeform solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    code = convention_code(convention)
    started = time.perf_counter()
    cap = _Capacity(window)
    b = _Builder(solver, time_limit_s, seed)
    sizes = window.job_sizes
    pod_members = [np.flatnonzero(cap.pod_of_switch == p) for p in cap.pods]
    pod_idle = [int(cap.idle[m].sum()) for m in pod_members]
    count_vars, pod_vars, squares = [], [], []
    for n in sizes:
        switch_bits = [_ordered_bits(b, min(int(c), n)) for c in cap.idle]
        u = [b.sum(bits) for bits in switch_bits]
        b.add(b.sum(u) == n)
        terms = [t for bits in switch_bits for t in _square_terms(bits)]
        for members, idle in zip(pod_members, pod_idle):
            pod_bits = _ordered_bits(b, min(idle, n))
            pod_vars.append((len(count_vars), members, pod_bits))
            b.add(b.sum(pod_bits) == b.sum(switch_bits[e][k] for e in members
                                            for k in range(len(switch_bits[e]))))
            terms += _square_terms(pod_bits)
        # A single job can do no better than filling the fullest switches (pods) first, which
        # caps its sums of squares; these cuts close most of the LP's gap.
        switch_terms = [t for bits in switch_bits for t in _square_terms(bits)]
        b.add(b.sum(c * v for c, v in switch_terms) <= _max_sum_of_squares(cap.idle, n))
        pod_terms = terms[len(switch_terms):]
        b.add(b.sum(c * v for c, v in pod_terms) <= _max_sum_of_squares(pod_idle, n))
        b.add(b.sum(c * v for c, v in terms) <= _max_job_squares(window, n))
        count_vars.append(switch_bits)
        squares.append(terms)
    for e, idle in enumerate(cap.idle):
        b.add(b.sum(count_vars[j][e][k] for j in range(len(sizes))
                    for k in range(len(count_vars[j][e]))) <= int(idle))
    _break_symmetry(b, cap, count_vars, sizes)

    # Objective. paper: sum_j c (6n^2 - 2n)/n - (2c/n) (A_j + B_j)
    #            published: sum_j cost_j, cost_j >= 1, n cost_j >= c (5n^2 - n)/2 - c (A_j + B_j) - n + 1
    if code == 0:
        constant = sum(HOP_UNIT_COST * (6.0 * n * n - 2.0 * n) / n for n in sizes)
        scale = math.lcm(*sizes) if solver == "cpsat" else 1
        weights = [2 * HOP_UNIT_COST * scale // n if solver == "cpsat" else 2.0 * HOP_UNIT_COST / n
                   for n in sizes]
        if solver == "cpsat" and max(weights) * 160 * len(sizes) * window.num_idle >= 2**62:
            raise InvalidInputError("job sizes too diverse for an exact CP-SAT objective; use solver='scip'")
        objective = b.sum(-w * c * v for w, terms in zip(weights, squares) for c, v in terms)
    else:
        constant, scale = 0.0, 1
        job_costs = []
        for n, terms in zip(sizes, squares):
            cost = b.int(1, HOP_UNIT_COST * 5 * n * n)
            b.add(n * cost >= HOP_UNIT_COST * (5 * n * n - n) // 2
                  - HOP_UNIT_COST * b.sum(c * v for c, v in terms) - n + 1)
            job_costs.append(cost)
        objective = b.sum(job_costs)

    hint = None
    if warm_start is not None:
        assignment = warm_start.assignment if isinstance(warm_start, Result) else warm_start
        hint = _counts(window, cap, assignment)
    if solver == "cpsat":
        b.model.minimize(objective)
        if hint is not None:
            for j, row in enumerate(hint):
                for e, c in enumerate(row):
                    for k, v in enumerate(count_vars[j][e]):
                        b.model.add_hint(v, k < c)
        cp_solver = _backends.cpsat_solver(time_limit_s, seed, workers)
        status = _backends.cpsat_status(cp_solver.solve(b.model))
        found = status in (Status.OPTIMAL, Status.FEASIBLE)
        value = cp_solver.boolean_value
        bound = cp_solver.best_objective_bound / scale + constant if found else None
    else:
        b.model.setObjective(objective, "minimize")
        if hint is not None:
            _scip_start(b.model, window, hint, count_vars, pod_vars,
                        job_costs if code == 1 else None, convention)
        b.model.optimize()
        status = _backends.scip_status(b.model)
        found = status in (Status.OPTIMAL, Status.FEASIBLE)
        sol = b.model.getBestSol() if found else None
        value = (lambda v: b.model.getSolVal(sol, v) > 0.5)
        bound = b.model.getDualbound() + constant if found else None
    counts = None
    if found:
        counts = [[sum(value(v) for v in bits) for bits in row] for row in count_vars]
    result = Result.from_assignment(
        window, cap.assignment(counts) if counts else (), status=status, method="freeform",
        convention=convention, runtime_s=time.perf_counter() - started, bound=bound, seed=seed,
        info={"solver": solver})
    if hint is not None:
        warm = Result.from_assignment(window, cap.assignment(hint), status=Status.FEASIBLE,
                                      method="freeform", convention=convention, runtime_s=0.0)
        if not result.has_solution or warm.objective < result.objective - 1e-9:
            result = Result(window, warm.assignment, warm.objective, Status.FEASIBLE, "freeform",
                            convention, time.perf_counter() - started, bound, seed,
                            info={"solver": solver, "kept_warm_start": True})
    return result


def _scip_start(model, window, hint, count_vars, pod_vars, job_costs, convention) -> bool:
    """Hand SCIP the warm start as a complete solution, so it prunes with it from the start."""
    from placement.tree.cost import cost_from_counts

    sol = model.createSol()
    for j, row in enumerate(hint):
        for e, c in enumerate(row):
            for k, v in enumerate(count_vars[j][e]):
                model.setSolVal(sol, v, float(k < c))
    pod_counts = {}
    for j, members, bits in pod_vars:
        total = int(sum(hint[j][e] for e in members))
        pod_counts.setdefault(j, []).append(total)
        for k, v in enumerate(bits):
            model.setSolVal(sol, v, float(k < total))
    if job_costs is not None:
        for j, cost in enumerate(job_costs):
            model.setSolVal(sol, cost, cost_from_counts(hint[j], pod_counts[j], convention))
    return model.addSol(sol, free=True)


def _counts(window: Window, cap: _Capacity, assignment) -> np.ndarray:
    index = {int(s): e for e, s in enumerate(cap.switches)}
    switch_of = window.topology.switch_of
    counts = np.zeros((len(assignment), len(cap.switches)), dtype=np.int64)
    for j, nodes in enumerate(assignment):
        for v in nodes:
            counts[j, index[int(switch_of[int(v)])]] += 1
    return counts


def solve_freeform_greedy(window: Window, *, convention="paper", time_limit_s=None,
                          seed=0) -> Result:
    """Best-fit greedy: largest job first; the fullest single switch that fits it, else the
    fullest-fitting single pod, else the pods with the most idle nodes; inside a pod, switches with
    the most idle nodes first."""
    window.require_fat_tree("freeform-greedy")
    started = time.perf_counter()
    cap = _Capacity(window)
    free = cap.idle.astype(np.int64).copy()
    counts = np.zeros((window.num_jobs, len(free)), dtype=np.int64)
    order = sorted(range(window.num_jobs), key=lambda j: (-window.job_sizes[j], j))
    for j in order:
        need = window.job_sizes[j]
        fits = np.flatnonzero(free >= need)
        if fits.size:
            e = fits[np.argmin(free[fits])]
            counts[j, e] += need
            free[e] -= need
            continue
        pod_free = np.array([free[cap.pod_of_switch == p].sum() for p in cap.pods])
        pod_fits = np.flatnonzero(pod_free >= need)
        if pod_fits.size:
            pod_order = [pod_fits[np.argmin(pod_free[pod_fits])]]
        else:
            pod_order = list(np.argsort(-pod_free, kind="stable"))
        for pi in pod_order:
            members = np.flatnonzero(cap.pod_of_switch == cap.pods[pi])
            for e in members[np.argsort(-free[members], kind="stable")]:
                take = min(need, int(free[e]))
                counts[j, e] += take
                free[e] -= take
                need -= take
                if need == 0:
                    break
            if need == 0:
                break
    return Result.from_assignment(window, cap.assignment(counts), status=Status.FEASIBLE,
                                  method="freeform-greedy", convention=convention,
                                  runtime_s=time.perf_counter() - started, seed=seed)
