"""Thin helpers shared by the models solved with SCIP and OR-Tools CP-SAT."""

from __future__ import annotations

import math

from tjap.errors import MissingDependencyError
from tjap.result import Status


def require(module: str, extra_hint: str = "pip install -e ."):
    """Import an optional solver package or raise a one-line error naming the fix."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"solver package {module!r} is not installed; install it with `{extra_hint}`") from None


def integer_coefficients(costs_by_job, sizes, limit=2**50):
    """Scale per-job cost arrays to exact integers for CP-SAT, or return None if impossible.

    Published costs are already integers. Paper costs are integers times 1/n_j, so multiplying by
    the lcm of the window's job sizes makes them exact integers; if the products would be too large
    for CP-SAT's exact arithmetic, None tells the caller to fall back to a float objective.
    """
    if all(float(c).is_integer() for costs in costs_by_job for c in costs):
        return 1, [[int(c) for c in costs] for costs in costs_by_job]
    scale = math.lcm(*sizes)
    largest = max(max(abs(c) for c in costs) for costs in costs_by_job) * scale * len(sizes)
    if largest >= limit:
        return None
    return scale, [[int(round(c * scale)) for c in costs] for costs in costs_by_job]


def scip_model(time_limit_s, seed, threads=1):
    pyscipopt = require("pyscipopt")
    model = pyscipopt.Model()
    model.hideOutput()
    if time_limit_s is not None:
        model.setParam("limits/time", float(time_limit_s))
    model.setParam("randomization/randomseedshift", int(seed) % 2**31)
    return model


def scip_status(model) -> Status:
    status = model.getStatus()
    if status == "optimal":
        return Status.OPTIMAL
    if status == "infeasible":
        return Status.INFEASIBLE
    return Status.FEASIBLE if model.getNSols() > 0 else Status.TIME_LIMIT


def cpsat_solver(time_limit_s, seed, workers=1):
    cp_model = require("ortools.sat.python.cp_model")
    solver = cp_model.CpSolver()
    if time_limit_s is not None:
        solver.parameters.max_time_in_seconds = float(time_limit_s)
    solver.parameters.random_seed = int(seed) % 2**31
    solver.parameters.num_workers = int(workers)
    return solver


def cpsat_status(code) -> Status:
    cp_model = require("ortools.sat.python.cp_model")
    if code == cp_model.OPTIMAL:
        return Status.OPTIMAL
    if code == cp_model.FEASIBLE:
        return Status.FEASIBLE
    if code == cp_model.INFEASIBLE:
        return Status.INFEASIBLE
    return Status.TIME_LIMIT
