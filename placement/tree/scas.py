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

from tjap import _backends
from tjap.errors import InvalidInputError
from placement.tree.result import Result, Status
from placement.tree.window import Window

FORMULATIONS = ("set-packing", "paper")


@dataclass(frozen=True)
class ScasModel:
    """The data of M_SCAS: for each job, the cost of starting at each position of Q."""

    window: Window
    convention: str
    costs: tuple  # costs[j][p]: cost of job j on D(p, n_j)

    @classmethod
    def build(cls, window: Window, convention: str = "paper") -> "ScasModel":
        return cls(window, convention,
                   tuple(window.block_costs(n, convention) for n in window.job_sizes))

    def covering_starts(self, size: int, position: int) -> np.ndarray:
        """Start positions p whose block D(p, size) covers ``position``."""
        return (position - np.arange(size)) % self.window.num_idle

    def assignment(self, starts) -> list[list[int]]:
        return [self.window.block(p, n).tolist() for p, n in zip(starts, self.window.job_sizes)]


def _check_formulation(formulation: str) -> None:
    if formulation not in FORMULATIONS:
        raise InvalidInputError(
            f"formulation must be one of {', '.join(FORMULATIONS)}, got {formulation!r}")


def solve_scip(window: Window, *, convention="paper", time_limit_s=None, seed=0,
               formulation="set-packing") -> Result:
    """Solve M_SCAS with SCIP (pyscipopt)."""
    _check_formulation(formulation)
    started = time.perf_counter()
    data = ScasModel.build(window, convention)
    model = _backends.scip_model(time_limit_s, seed)
    quicksum = _backends.require("pyscipopt").quicksum
    m = window.num_idle
    y = [[model.addVar(vtype="B", obj=float(c)) for c in costs] for costs in data.costs]
    for j in range(window.num_jobs):
        model.addCons(quicksum(y[j]) == 1)
    if formulation == "set-packing":
        for k in range(m):
            model.addCons(quicksum(y[j][p] for j, n in enumerate(window.job_sizes)
                                   for p in data.covering_starts(n, k)) <= 1)
    else:
        x = [[model.addVar(vtype="B") for _ in range(m)] for _ in window.job_sizes]
        for j, n in enumerate(window.job_sizes):
            for i in range(m):
                for k in range(i, i + n):
                    model.addCons(y[j][i] <= x[j][k % m])
        for k in range(m):
            model.addCons(quicksum(x[j][k] for j in range(window.num_jobs)) <= 1)
    built = time.perf_counter()
    model.optimize()
    status = _backends.scip_status(model)
    starts = []
    if status in (Status.OPTIMAL, Status.FEASIBLE):
        sol = model.getBestSol()
        starts = [int(np.argmax([model.getSolVal(sol, v) for v in row])) for row in y]
    bound = model.getDualbound() if status in (Status.OPTIMAL, Status.FEASIBLE) else None
    return Result.from_assignment(
        window, data.assignment(starts) if starts else (), status=status,
        method="scip" if formulation == "set-packing" else "scip-paper", convention=convention,
        runtime_s=time.perf_counter() - started, bound=bound, seed=seed,
        info={"formulation": formulation, "build_s": built - started,
              "nodes": int(model.getNNodes())})


def solve_cpsat(window: Window, *, convention="paper", time_limit_s=None, seed=0,
                formulation="set-packing", workers=1) -> Result:
    """Solve M_SCAS with OR-Tools CP-SAT (one worker by default, so a seed fixes the result)."""
    _check_formulation(formulation)
    cp_model = _backends.require("ortools.sat.python.cp_model")
    started = time.perf_counter()
    data = ScasModel.build(window, convention)
    model = cp_model.CpModel()
    m = window.num_idle
    y = [[model.new_bool_var(f"y{j}_{p}") for p in range(m)] for j in range(window.num_jobs)]
    for row in y:
        model.add_exactly_one(row)
    if formulation == "set-packing":
        for k in range(m):
            model.add_at_most_one(y[j][p] for j, n in enumerate(window.job_sizes)
                                  for p in data.covering_starts(n, k))
    else:
        x = [[model.new_bool_var(f"x{j}_{k}") for k in range(m)] for j in range(window.num_jobs)]
        for j, n in enumerate(window.job_sizes):
            for i in range(m):
                for k in range(i, i + n):
                    model.add_implication(y[j][i], x[j][k % m])
        for k in range(m):
            model.add_at_most_one(x[j][k] for j in range(window.num_jobs))
    scaled = _backends.integer_coefficients(data.costs, window.job_sizes)
    if scaled is None:
        scale = 1.0
        model.minimize(sum(float(c) * v for costs, row in zip(data.costs, y) for c, v in zip(costs, row)))
    else:
        scale, coefs = scaled
        model.minimize(sum(c * v for cs, row in zip(coefs, y) for c, v in zip(cs, row)))
    built = time.perf_counter()
    solver = _backends.cpsat_solver(time_limit_s, seed, workers)
    status = _backends.cpsat_status(solver.solve(model))
    starts = []
    if status in (Status.OPTIMAL, Status.FEASIBLE):
        starts = [next(p for p, v in enumerate(row) if solver.boolean_value(v)) for row in y]
    bound = solver.best_objective_bound / scale if starts else None
    return Result.from_assignment(
        window, data.assignment(starts) if starts else (), status=status,
        method="cpsat" if formulation == "set-packing" else "cpsat-paper", convention=convention,
        runtime_s=time.perf_counter() - started, bound=bound, seed=seed,
        info={"formulation": formulation, "build_s": built - started, "objective_scale": scale})


def solve_seq(window: Window, *, convention="paper", time_limit_s=None, seed=0) -> Result:
    """The paper's sequential assignment: each job, in window order, takes the next n_j idle nodes."""
    started = time.perf_counter()
    offsets = np.concatenate([[0], np.cumsum(window.job_sizes)[:-1]])
    assignment = [window.idle_nodes[o:o + n].tolist() for o, n in zip(offsets, window.job_sizes)]
    return Result.from_assignment(window, assignment, status=Status.FEASIBLE, method="seq",
                                  convention=convention, runtime_s=time.perf_counter() - started,
                                  seed=seed)


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
    return solve_scip(window, convention=convention, time_limit_s=time_limit_s, seed=seed,
                      formulation="paper")


def solve_cpsat_paper(window: Window, *, convention="paper", time_limit_s=None, seed=0,
                      workers=1) -> Result:
    """M_SCAS in the paper's x/y formulation on CP-SAT."""
    return solve_cpsat(window, convention=convention, time_limit_s=time_limit_s, seed=seed,
                       formulation="paper", workers=workers)
