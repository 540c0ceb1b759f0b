"""The static contiguity assignment strategy (SCAS) as a 0-1 model, built once and solved by SCIP or
OR-Tools CP-SAT.

``formulation="set-packing"`` (default): one binary per (job, start position p of Q); each job takes
exactly one start; each idle node is covered by at most one chosen block D(p, n_j), which wraps to
the head of Q. Its LP relaxation is tight on these windows.

``formulation="paper"``: the paper's M_SCAS with binaries x[j, k] (job j uses node k) and y[j, i]
(job j starts at i), linking y[j, i] <= x[j, k] for every k in D(i, n_j), plus the node-disjointness
constraint sum_j x[j, k] <= 1 that the paper's text omits (its code had it). Kept to show its weakness.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tjap.core import backends as _backends
from tjap.core.backends import BUILD_MARGIN, Deadline
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.arcs import arc_nodes, job_arcs
from tjap.placement.tree.csp import fallback_assignment, solve_dp
from tjap.placement.tree.result import Result, Status
from tjap.placement.tree.window import Window

FORMULATIONS = ("set-packing", "paper")


@dataclass(frozen=True)
class ScasModel:
    """The data of M_SCAS: for each job, its arcs (:mod:`tjap.placement.tree.arcs`): the starts
    its constraints allow, their costs and the regions of Q they hold. Without constraints a
    job's arcs are every start p of Q with the cost of D(p, n_j) and the run as its region."""

    window: Window
    convention: str
    arcs: tuple  # arcs[j]: the Arcs of job j

    @classmethod
    def build(cls, window: Window, convention: str = "paper") -> "ScasModel":
        return cls(
            window, convention, tuple(job_arcs(window, job, convention) for job in window.jobs)
        )

    @property
    def costs(self) -> tuple:
        """``costs[j][k]``: the cost of job j's k-th arc."""
        return tuple(a.cost for a in self.arcs)

    def covering(self) -> list[list[tuple[int, int]]]:
        """For each position of Q, the (job, arc) pairs whose region holds it, jobs in window
        order and each job's arcs in order (built by one sort, not a Python loop per node)."""
        m = self.window.num_idle
        rows: list[list[tuple[int, int]]] = [[] for _ in range(m)]
        jobs, arcs, where = [], [], []
        for j, a in enumerate(self.arcs):
            if not a.count:
                continue
            length = a.length.astype(np.int64)
            k = np.repeat(np.arange(a.count, dtype=np.int64), length)
            ends = np.cumsum(length)
            offset = np.arange(int(ends[-1]), dtype=np.int64) - np.repeat(ends - length, length)
            jobs.append(np.full(k.size, j, dtype=np.int64))
            arcs.append(k)
            where.append((a.first.astype(np.int64)[k] + offset) % m)
        if not jobs:
            return rows
        q = np.concatenate(where)
        order = np.argsort(q, kind="stable")  # stable: (job, arc) order inside each row
        flat = list(zip(np.concatenate(jobs)[order].tolist(), np.concatenate(arcs)[order].tolist()))
        bounds = np.searchsorted(q[order], np.arange(m + 1)).tolist()
        for p in range(m):
            rows[p] = flat[bounds[p] : bounds[p + 1]]
        return rows

    def assignment(self, chosen) -> list[list[int]]:
        """The node sets of the chosen arc of each job."""
        return [
            arc_nodes(self.window, job, int(a.start[k]))
            for a, k, job in zip(self.arcs, chosen, self.window.jobs)
        ]


def _paper_plain(window: Window, formulation: str) -> None:
    if formulation == "paper" and window.constrained:
        raise InvalidInputError(
            "the paper's x/y formulation takes no job constraints; use "
            "formulation='set-packing' (method scip or cpsat) or dp"
        )


def _check_formulation(formulation: str) -> None:
    if formulation not in FORMULATIONS:
        raise InvalidInputError(
            f"formulation must be one of {', '.join(FORMULATIONS)}, got {formulation!r}"
        )


#: Seconds per nonzero of the set-packing model to build it in pyscipopt / CP-SAT's Python API,
#: measured on one core (benchmarks/time_limits.py); ``auto`` reads them to predict a build.
SCIP_BUILD_S_PER_NONZERO = 3.5e-6
CPSAT_BUILD_S_PER_NONZERO = 2.5e-6


def set_packing_nonzeros(window: Window) -> int:
    """Nonzeros of the set-packing model: each start variable appears in its job's row and in
    the n_j node rows its block covers (without constraints; with them, fewer starts or, for an
    exclusive job, longer regions)."""
    return window.num_idle * sum(n + 1 for n in window.job_sizes)


def predicted_build_s(
    window: Window, solver: str = "scip", formulation: str = "set-packing"
) -> float:
    """Predicted seconds to build the set-packing model of ``window`` for ``solver`` (the
    paper's x/y formulation: twice that, one linking row of two nonzeros per node of each
    block)."""
    rate = SCIP_BUILD_S_PER_NONZERO if solver == "scip" else CPSAT_BUILD_S_PER_NONZERO
    return set_packing_nonzeros(window) * rate * (2.0 if formulation == "paper" else 1.0)


def stopped_before_building(
    window: Window, method: str, solver: str, formulation: str, convention: str, seed: int,
    deadline: Deadline,
) -> "Result | None":  # fmt: skip
    """The result of a solver that does not start its model (:func:`stopped_early`) when its
    predicted build time is over :data:`~tjap.core.backends.BUILD_MARGIN` times the time left, else None: a window
    of a million idle nodes would take minutes to build, so the solver stops at once rather
    than at the limit."""
    left = deadline.left()
    if left is None:
        return None
    predicted = predicted_build_s(window, solver, formulation)
    if predicted <= BUILD_MARGIN * left:
        return None
    why = (
        f"time limit: building the model ({set_packing_nonzeros(window):,} nonzeros) is "
        f"predicted to take {predicted:.3g} s, more than the {left:.3g} s left"
    )
    return stopped_early(
        window, method, convention, seed, deadline, why=why, info={"formulation": formulation}
    )


def stopped_early(
    window: Window,
    method: str,
    convention: str,
    seed: int,
    deadline: Deadline,
    *,
    solution=None,
    bound=None,
    why: str = "time limit",
    info=None,
) -> Result:
    """What a SCAS solver returns when the time limit stops it: the better of its own solution
    (``solution``, an assignment, may be None) and the fallback (the DP when it is predicted to
    finish in the time left, else Seq), with status TIME_LIMIT, the proven ``bound`` when there is
    one, ``info["stopped"] = why`` and ``info["fallback"]`` when the fallback's solution is the
    one returned. So a stopped solver never returns less than Seq."""
    info = dict(info or {})
    info["stopped"] = why
    left = deadline.left()
    fallback = solve_dp(
        window, convention=convention, seed=seed, time_limit_s=max(left or 0.0, 1e-6)
    )
    name = "seq" if fallback.info.get("fallback") == "seq" else "dp"
    chosen = fallback.assignment
    if solution:
        own = Result.from_assignment(
            window,
            solution,
            status=Status.TIME_LIMIT,
            method=method,
            convention=convention,
            runtime_s=0.0,
        )
        if own.objective <= fallback.objective + 1e-9:
            chosen, name = own.assignment, None
    if name is not None:
        info["fallback"] = name
    if fallback.status is Status.OPTIMAL:  # the DP finished: the SCAS optimum
        return Result.from_assignment(
            window,
            fallback.assignment,
            status=Status.OPTIMAL,
            method=method,
            convention=convention,
            runtime_s=deadline.elapsed(),
            bound=fallback.bound,
            seed=seed,
            info={**info, "fallback": "dp"},
        )
    return Result.from_assignment(
        window,
        chosen,
        status=Status.TIME_LIMIT,
        method=method,
        convention=convention,
        runtime_s=deadline.elapsed(),
        bound=bound,
        seed=seed,
        info=info,
    )


def _no_place(
    window: Window, method: str, convention: str, seed: int, deadline: Deadline, data: ScasModel
) -> Result:
    """INFEASIBLE: some job's constraints allow it no run of Q at all."""
    j = next(j for j, arcs in enumerate(data.arcs) if arcs.count == 0)
    return Result.from_assignment(
        window,
        (),
        status=Status.INFEASIBLE,
        method=method,
        convention=convention,
        runtime_s=deadline.elapsed(),
        seed=seed,
        info={"infeasible": f"job {j} has no run of the idle nodes that its constraints allow"},
    )


def _solved(
    window: Window,
    method: str,
    convention: str,
    seed: int,
    deadline: Deadline,
    data: ScasModel,
    starts: list,
    status: Status,
    bound: float,
    info: dict,
) -> Result:
    """The result of a SCIP or CP-SAT run that found the start of each job in ``starts`` (empty:
    none found) with the solver's ``status`` and dual ``bound``: stopped by the time limit, the
    best of its incumbent, the DP and Seq (:func:`stopped_early`, with the bound when it is
    known); otherwise its solution, and the bound only when it found one. ``bound`` is None or
    infinite when the solver has none."""
    solution = data.assignment(starts) if starts else None
    if bound is not None and not np.isfinite(bound):
        bound = None
    if status is Status.TIME_LIMIT:
        return stopped_early(
            window, method, convention, seed, deadline, solution=solution, bound=bound, info=info
        )
    return Result.from_assignment(
        window,
        solution if solution is not None else (),
        status=status,
        method=method,
        convention=convention,
        runtime_s=deadline.elapsed(),
        bound=bound if starts else None,
        seed=seed,
        info=info,
    )


def solve_scip(
    window: Window, *, convention="paper", time_limit_s=None, seed=0, formulation="set-packing"
) -> Result:
    """Solve M_SCAS with SCIP (pyscipopt).

    ``time_limit_s`` covers building the model too: out of time while building, or stopped by
    the limit while solving, it returns the best of its incumbent, the DP (when it fits in the
    time left) and Seq, with status TIME_LIMIT (see :func:`stopped_early`)."""
    _check_formulation(formulation)
    method = "scip" if formulation == "set-packing" else "scip-paper"
    started = time.perf_counter()  # the limit counts importing pyscipopt too
    deadline = Deadline(time_limit_s, started)
    _backends.require("pyscipopt")  # imported even when the model is not built (the start-up)
    _paper_plain(window, formulation)
    stopped = stopped_before_building(
        window, method, "scip", formulation, convention, seed, deadline
    )
    if stopped is not None:
        return stopped
    try:
        data = ScasModel.build(window, convention)
        if any(arcs.count == 0 for arcs in data.arcs):
            return _no_place(window, method, convention, seed, deadline, data)
        model = _backends.scip_model(time_limit_s, seed)
        quicksum = _backends.require("pyscipopt").quicksum
        m = window.num_idle
        y = []
        for costs in data.costs:
            y.append([model.addVar(vtype="B", obj=float(c)) for c in costs])
            deadline.check()
        for j in range(window.num_jobs):
            model.addCons(quicksum(y[j]) == 1)
        if formulation == "set-packing":
            for k, row in enumerate(data.covering()):
                if len(row) > 1:
                    model.addCons(quicksum(y[j][a] for j, a in row) <= 1)
                if k % 16 == 0:
                    deadline.check()
        else:
            x = []
            for _ in window.job_sizes:
                x.append([model.addVar(vtype="B") for _ in range(m)])
                deadline.check()
            for j, n in enumerate(window.job_sizes):
                for i in range(m):
                    for k in range(i, i + n):
                        model.addCons(y[j][i] <= x[j][k % m])
                    deadline.check()
            for k in range(m):
                model.addCons(quicksum(x[j][k] for j in range(window.num_jobs)) <= 1)
        deadline.check()
    except _backends.OutOfTime:
        return stopped_early(
            window,
            method,
            convention,
            seed,
            deadline,
            why="time limit reached while building the model",
            info={"formulation": formulation},
        )
    built = time.perf_counter()
    _backends.scip_optimize(model, deadline.left())
    status = _backends.scip_status(model)
    starts, sol = [], None
    if model.getNSols() > 0 and status is not Status.INFEASIBLE:
        sol = model.getBestSol()
        starts = [int(np.argmax([model.getSolVal(sol, v) for v in row])) for row in y]
    info = {"formulation": formulation, "build_s": built - started, "nodes": int(model.getNNodes())}
    bound = _backends.scip_dual_bound(model)
    del y, sol
    _backends.scip_free(model)  # within the limit, not after the return
    return _solved(window, method, convention, seed, deadline, data, starts, status, bound, info)


def solve_cpsat(
    window: Window,
    *,
    convention="paper",
    time_limit_s=None,
    seed=0,
    formulation="set-packing",
    workers=1,
) -> Result:
    """Solve M_SCAS with OR-Tools CP-SAT (one worker by default, so a seed fixes the result).

    ``time_limit_s`` covers building the model too; stopped by it, the result is the best of
    CP-SAT's incumbent, the DP (when it fits in the time left) and Seq, with status TIME_LIMIT."""
    _check_formulation(formulation)
    method = "cpsat" if formulation == "set-packing" else "cpsat-paper"
    started = time.perf_counter()  # the limit counts importing OR-Tools (0.3-0.6 s) too
    deadline = Deadline(time_limit_s, started)
    cp_model = _backends.require("ortools.sat.python.cp_model")
    _paper_plain(window, formulation)
    stopped = stopped_before_building(
        window, method, "cpsat", formulation, convention, seed, deadline
    )
    if stopped is not None:
        return stopped
    try:
        data = ScasModel.build(window, convention)
        if any(arcs.count == 0 for arcs in data.arcs):
            return _no_place(window, method, convention, seed, deadline, data)
        model = cp_model.CpModel()
        m = window.num_idle
        y = []
        for j, arcs in enumerate(data.arcs):
            y.append([model.new_bool_var(f"y{j}_{p}") for p in arcs.start])
            deadline.check()
        for row in y:
            model.add_exactly_one(row)
        if formulation == "set-packing":
            for k, row in enumerate(data.covering()):
                if len(row) > 1:
                    model.add_at_most_one(y[j][a] for j, a in row)
                if k % 16 == 0:
                    deadline.check()
        else:
            x = []
            for j in range(window.num_jobs):
                x.append([model.new_bool_var(f"x{j}_{k}") for k in range(m)])
                deadline.check()
            for j, n in enumerate(window.job_sizes):
                for i in range(m):
                    for k in range(i, i + n):
                        model.add_implication(y[j][i], x[j][k % m])
                    deadline.check()
            for k in range(m):
                model.add_at_most_one(x[j][k] for j in range(window.num_jobs))
        deadline.check()
        scaled = _backends.integer_coefficients(data.costs, window.job_sizes)
        flat = [v for row in y for v in row]
        if scaled is None:
            scale = 1.0
            model.minimize(
                cp_model.LinearExpr.weighted_sum(
                    flat, [float(c) for costs in data.costs for c in costs]
                )
            )
        else:
            scale, coefs = scaled
            model.minimize(cp_model.LinearExpr.weighted_sum(flat, [c for cs in coefs for c in cs]))
        deadline.check()
    except _backends.OutOfTime:
        return stopped_early(
            window,
            method,
            convention,
            seed,
            deadline,
            why="time limit reached while building the model",
            info={"formulation": formulation},
        )
    built = time.perf_counter()
    solver = _backends.cpsat_solver(deadline.left(), seed, workers)
    status, found = _backends.cpsat_solve(solver, model)
    starts = []
    if found:
        starts = [next(p for p, v in enumerate(row) if solver.boolean_value(v)) for row in y]
    info = {"formulation": formulation, "build_s": built - started, "objective_scale": scale}
    return _solved(
        window,
        method,
        convention,
        seed,
        deadline,
        data,
        starts,
        status,
        solver.best_objective_bound / scale,
        info,
    )


def solve_seq(window: Window, *, convention="paper", time_limit_s=None, seed=0) -> Result:
    """The paper's sequential assignment: each job, in window order, takes the next n_j idle
    nodes; on a window with constraints, the first run its constraints allow that no earlier
    job holds (:func:`~tjap.placement.tree.arcs.first_fit`; status INFEASIBLE, no solution, when
    some job finds none)."""
    started = time.perf_counter()
    assignment = fallback_assignment(window, convention)
    return Result.from_assignment(
        window,
        assignment or (),
        status=Status.FEASIBLE if assignment else Status.INFEASIBLE,
        method="seq",
        convention=convention,
        runtime_s=time.perf_counter() - started,
        seed=seed,
    )


def is_scas(window: Window, assignment) -> bool:
    """True if every job's node set is a block D(p, n_j) of the window's idle sequence Q."""
    position = {int(v): i for i, v in enumerate(window.idle_nodes)}
    m = window.num_idle
    for nodes in assignment:
        if any(int(v) not in position for v in nodes):
            return False
        held = {position[int(v)] for v in nodes}
        if len(held) != len(nodes):
            return False
        if len(held) == m:
            continue
        firsts = [p for p in held if (p - 1) % m not in held]
        if len(firsts) != 1 or held != {(firsts[0] + i) % m for i in range(len(held))}:
            return False
    return True


def solve_scip_paper(window: Window, *, convention="paper", time_limit_s=None, seed=0) -> Result:
    """M_SCAS in the paper's x/y formulation on SCIP."""
    return solve_scip(
        window, convention=convention, time_limit_s=time_limit_s, seed=seed, formulation="paper"
    )


def solve_cpsat_paper(
    window: Window, *, convention="paper", time_limit_s=None, seed=0, workers=1
) -> Result:
    """M_SCAS in the paper's x/y formulation on CP-SAT."""
    return solve_cpsat(
        window,
        convention=convention,
        time_limit_s=time_limit_s,
        seed=seed,
        formulation="paper",
        workers=workers,
    )
