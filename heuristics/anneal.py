"""Simulated annealing and large-neighbourhood search over DCAS solutions of a window.

:func:`anneal` is the one loop (Algorithm 1 of seed 002): start from an initial solution (Seq by
default, or any Result), remove 1..n^D random jobs, re-insert them one by one with a repair operator
in the sequence updated after the kept jobs, accept by the Metropolis rule (or only improvements),
cool exponentially. The loop runs compiled in Numba; operators are chosen by
:mod:`heuristics.operators`.

Registered in :func:`tjap.solve` as:

- ``"sa"``: the paper's SA (Table I: T_max 2500, T_min 2.5, 500 iterations, n^D = 2, q = 100,
  ``repair="paper"``; ``t_max=25000`` is the published code's setting).
- ``"lns"``: the strong default: start from the exact SCAS optimum and search with the greedy repair.
"""

from __future__ import annotations

import time

import numpy as np

from heuristics import _kernels
from heuristics.operators import (ImprovingOnly, Metropolis, RandomDestroy, Repair, REINSERT,
                                  make_repair)
from placement.tree.cost import convention_code
from placement.tree.dcas import Arrays, decode, encode
from tjap.errors import InvalidInputError
from placement.tree.result import Result, Status
from placement.tree.window import Window


def initial_solution(window: Window, initial, convention: str, seed: int):
    """(order, starts, label) for ``initial``: "seq", a method name, a Result or an assignment."""
    if initial is None or initial == "seq":
        return np.arange(window.num_jobs), np.zeros(window.num_jobs, np.int64), "seq"
    if isinstance(initial, str):
        from tjap.api import solve

        initial = solve(window, initial, seed=seed, convention=convention)
    assignment = initial.assignment if isinstance(initial, Result) else initial
    label = initial.method if isinstance(initial, Result) else "given"
    order, starts = encode(window, assignment)
    return np.array(order, np.int64), np.array(starts, np.int64), label


def anneal(window: Window, *, iterations: int = 500, repair: Repair | str = "paper",
           destroy: RandomDestroy | None = None, accept=None, reinsert: str = "largest-first",
           initial=None, convention: str = "paper", time_limit_s: float | None = None,
           seed: int = 0, method: str = "sa") -> Result:
    """Run the DCAS search loop on one window and return the best solution found.

    Parameters
    ----------
    iterations : int
        Moves (t_max in the paper); the cooling schedule spans them.
    repair : Repair or {"paper", "uniform", "greedy"}
    destroy : RandomDestroy, default RandomDestroy(max_remove=2)
    accept : Metropolis or ImprovingOnly, default Metropolis(2500, 2.5)
    reinsert : {"largest-first", "window-order"}
        Order of re-insertion: descending size (the paper) or window order (its code).
    initial : "seq", a method name, a Result or an assignment
    time_limit_s : float, optional
        Stop early (between chunks of iterations) once exceeded.
    """
    started = time.perf_counter()
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 0:
        raise InvalidInputError(f"iterations must be a non-negative integer, got {iterations!r}")
    if reinsert not in REINSERT:
        raise InvalidInputError(f"reinsert must be one of {', '.join(REINSERT)}, got {reinsert!r}")
    repair = make_repair(repair)
    destroy = destroy or RandomDestroy()
    accept = accept or Metropolis()
    code = convention_code(convention)
    a = Arrays(window)
    cur_order, cur_starts, label = initial_solution(window, initial, convention, seed)
    args = (a.switch_q, a.pod_q, a.num_switches, a.num_pods, code, a.sizes)
    cur = _kernels.solution_cost(*args, cur_order, cur_starts)
    initial_cost = cur
    best, best_order, best_starts = cur, cur_order.copy(), cur_starts.copy()
    accepted = improved = done = 0
    loop_s = 0.0
    repair_arg = _kernels.repair_argument(repair.code)  # its kind is chosen by type
    with repair.active(window, seed):
        while done < iterations:
            if time_limit_s is not None and time.perf_counter() - started >= time_limit_s:
                break
            # without a time limit one kernel call runs all the chunks (the RNG is re-seeded per
            # chunk inside it, so the trajectory is the same either way)
            step = _kernels.CHUNK if time_limit_s is not None else iterations
            end = min(done + step, iterations)
            tick = time.perf_counter()
            cur, best, acc, imp = _kernels.anneal(
                *args, cur_order, cur_starts, cur, best_order, best_starts, best, done, end,
                iterations, float(accept.t_max), float(accept.t_min), destroy.max_remove,
                repair_arg, repair.q, REINSERT[reinsert], accept.code, seed)
            loop_s += time.perf_counter() - tick
            accepted, improved, done = accepted + acc, improved + imp, end
    assignment = decode(window, best_order, best_starts)
    return Result.from_assignment(
        window, assignment, status=Status.FEASIBLE, method=method, convention=convention,
        runtime_s=time.perf_counter() - started, seed=seed, iterations=done,
        info={"initial": label, "initial_cost": float(initial_cost), "accepted": int(accepted),
              "improved": int(improved), "repair": repair.name, "order": best_order.tolist(),
              "starts": best_starts.tolist(),
              "iterations_per_s": done / loop_s if loop_s > 0 else None})


def solve_sa(window: Window, *, convention="paper", time_limit_s=None, seed=0, iterations=500,
             repair="paper", q=100, max_remove=2, t_max=2500.0, t_min=2.5,
             reinsert="largest-first", initial="seq") -> Result:
    """The paper's simulated annealing (Table I defaults)."""
    return anneal(window, iterations=iterations, repair=make_repair(repair, q),
                  destroy=RandomDestroy(max_remove), accept=Metropolis(t_max, t_min),
                  reinsert=reinsert, initial=initial, convention=convention,
                  time_limit_s=time_limit_s, seed=seed, method="sa")


def solve_lns(window: Window, *, convention="paper", time_limit_s=None, seed=0, iterations=500,
              repair="greedy", max_remove=2, initial="auto") -> Result:
    """Strong default: the exact SCAS optimum improved by descent with the greedy repair."""
    return anneal(window, iterations=iterations, repair=make_repair(repair),
                  destroy=RandomDestroy(max_remove), accept=ImprovingOnly(),
                  reinsert="largest-first", initial=initial, convention=convention,
                  time_limit_s=time_limit_s, seed=seed, method="lns")
