"""``guarded``: a window method that is never worse than Slurm's own choice nor than the SCAS
optimum on the window it is given.

It solves the window three ways and keeps the cheapest feasible placement:

1. ``scas``: the exact SCAS optimum (contiguous blocks of the idle sequence), by ``dp`` when its
   table is small, else SCIP within the time limit (:func:`tjap.placement.tree.exact.solve_auto`);
2. ``slurm-tree``: what Slurm 22.05's ``topology/tree`` selection would do, job by job in window
   order (:func:`tjap.heuristics.slurm.tree.solve_slurm_tree`);
3. ``freeform`` (only with a time limit, and only with time left after the first two): the
   free-form model (no contiguity), warm-started from the better of the two, within the time
   left; it keeps its warm start unless it finds something strictly cheaper.

So by construction its cost is at most ``slurm-tree``'s and at most the SCAS optimum (when that
was proven). Ties go to ``scas``, then ``slurm-tree``; ``freeform`` wins only when strictly
cheaper. ``Result.info`` records the ``winner`` and every candidate's ``cost``, ``status`` and
``runtime_s`` (a candidate that could not run says why in ``error``), plus ``slurm_tree_cost`` and
``scas_optimum`` (None when not proven). The status is ``TIME_LIMIT`` when the limit cut a
candidate short (the cheapest found is still returned), and ``OPTIMAL`` only when ``freeform`` proved
the free-form optimum, else ``FEASIBLE``.
"""

from __future__ import annotations

import time

from tjap.core.backends import require
from tjap.core.errors import InvalidInputError, TjapError
from tjap.core.result import Status
from tjap.heuristics.slurm.tree import RELEASES, solve_slurm_tree
from tjap.placement.tree.exact import solve_auto
from tjap.placement.tree.freeform import SOLVER_PACKAGES, solve_freeform
from tjap.placement.tree.jobs import refuse_constraints
from tjap.placement.tree.result import Result
from tjap.placement.tree.window import Window

#: Seconds of time limit that must be left for the free-form improvement to start.
MIN_IMPROVE_S = 0.05
#: Candidate names in tie-breaking order.
CANDIDATES = ("scas", "slurm-tree", "freeform")


def _entry(result: Result | None, error: str | None = None, runtime_s: float = 0.0) -> dict:
    if result is None or not result.has_solution:
        return {
            "cost": None,
            "status": result.status.value if result is not None else "ERROR",
            "runtime_s": result.runtime_s if result is not None else runtime_s,
            "error": error or (result.info.get("reason") if result is not None else None),
        }
    return {
        "cost": float(result.objective),
        "status": result.status.value,
        "runtime_s": float(result.runtime_s),
    }


def _run(fn, *args, **kwargs):
    """``(result, error)``: a solver's Result, or None and why it could not run."""
    started = time.perf_counter()
    try:
        return fn(*args, **kwargs), None, time.perf_counter() - started
    except ImportError as exc:
        return None, f"not installed: {exc}", time.perf_counter() - started
    except TjapError as exc:  # too large a dp table, a missing solver, ...
        return None, str(exc), time.perf_counter() - started


def solve_guarded(
    window: Window,
    *,
    convention="paper",
    time_limit_s=None,
    seed=0,
    improve: bool = True,
    solver: str = "scip",
    slurm: str = "22.05",
) -> Result:
    """The cheapest of the SCAS optimum, ``slurm-tree`` and (with a time limit) a warm-started
    free-form improvement; see the module docstring.

    Parameters
    ----------
    window : Window
        The window, jobs in priority order (``slurm-tree`` places them in that order).
    time_limit_s : float, optional
        Wall-clock budget for the whole method. SCIP's SCAS model (used only when the ``dp``
        table is too large) gets all of it; ``freeform`` gets what is left. Without a limit
        ``freeform`` does not run.
    improve : bool
        Try the free-form improvement (default True).
    solver : {"scip", "cpsat"}
        The free-form model's solver.
    slurm : {"22.05", "24.11"}
        Which Slurm's ``topology/tree`` rule ``slurm-tree`` follows (they differ on some jobs).

    Returns
    -------
    Result
        Method ``"guarded"``; ``INFEASIBLE`` with no assignment only when no candidate found a
        placement.

    Examples
    --------
    >>> from tjap.placement.tree.topology import Topology
    >>> t = Topology.from_slurm('''
    ... SwitchName=a Nodes=n[1-4]
    ... SwitchName=b Nodes=n[5-8]
    ... SwitchName=top Switches=a,b''')
    >>> r = solve_guarded(Window(t, "n[2-3],n[5-8]", [2, 3]))
    >>> r.objective <= r.info["slurm_tree_cost"] and r.objective <= r.info["scas_optimum"]
    True
    """
    refuse_constraints(window, "guarded")
    if not isinstance(window, Window):
        raise InvalidInputError(f"window must be a Window, got {type(window).__name__}")
    if slurm not in RELEASES:
        raise InvalidInputError(
            f"slurm must be one of {', '.join(map(repr, RELEASES))} (the "
            f"Slurm whose topology/tree rule to follow), got {slurm!r}"
        )
    started = time.perf_counter()
    if improve and time_limit_s is not None and solver in SOLVER_PACKAGES:
        # the free-form solver's package at once, so that tjap solve's start-up solve (which
        # leaves no time for the improvement) imports it: a signal inside a Cython module's
        # import can be lost, and the improvement would import it in the timed solve
        try:
            require(SOLVER_PACKAGES[solver])
        except (ImportError, TjapError):  # not installed: the improvement says so below
            pass
    entries: dict[str, dict] = {}
    found: dict[str, Result] = {}

    scas, error, spent = _run(
        solve_auto, window, convention=convention, time_limit_s=time_limit_s, seed=seed
    )
    entries["scas"] = _entry(scas, error, spent)
    if scas is not None and scas.has_solution:
        found["scas"] = scas
    slurm, error, spent = _run(
        solve_slurm_tree, window, convention=convention, seed=seed, slurm=slurm
    )
    entries["slurm-tree"] = _entry(slurm, error, spent)
    if slurm is not None and slurm.has_solution:
        found["slurm-tree"] = slurm

    best_name = min(found, key=lambda k: (found[k].objective, CANDIDATES.index(k)), default=None)
    left = None if time_limit_s is None else time_limit_s - (time.perf_counter() - started)
    if improve and left is not None and left >= MIN_IMPROVE_S and best_name is not None:
        free, error, spent = _run(
            solve_freeform,
            window,
            convention=convention,
            time_limit_s=left,
            seed=seed,
            solver=solver,
            warm_start=found[best_name],
        )
        entries["freeform"] = _entry(free, error, spent)
        if free is not None and free.has_solution:
            found["freeform"] = free
            if free.objective < found[best_name].objective - 1e-9:
                best_name = "freeform"
    elif improve:
        entries["freeform"] = {
            "cost": None,
            "status": "NOT_RUN",
            "runtime_s": 0.0,
            "error": "no time limit"
            if time_limit_s is None
            else "no time left"
            if best_name is not None
            else "nothing to improve",
        }

    runtime = time.perf_counter() - started
    scas_optimum = (
        float(scas.objective)
        if scas is not None and scas.has_solution and scas.status == Status.OPTIMAL
        else None
    )
    info = {
        "winner": best_name,
        "candidates": entries,
        "slurm_tree_cost": entries["slurm-tree"]["cost"],
        "scas_optimum": scas_optimum,
    }
    if best_name is None:
        return Result.from_assignment(
            window,
            (),
            status=Status.INFEASIBLE,
            method="guarded",
            convention=convention,
            runtime_s=runtime,
            seed=seed,
            info=info,
        )
    best = found[best_name]
    free = found.get("freeform")
    # the free-form optimum is the least cost of any placement, so proving it proves the best
    proven = free is not None and free.status == Status.OPTIMAL
    # a candidate cut short by the limit makes the whole answer "cut short" (tjap.solve's contract)
    cut = [
        name for name, entry in entries.items() if entry.get("status") == Status.TIME_LIMIT.value
    ]
    status = Status.OPTIMAL if proven else Status.TIME_LIMIT if cut else Status.FEASIBLE
    if status is Status.TIME_LIMIT:
        info["stopped"] = f"time limit ({', '.join(cut)} cut short)"
    return Result(
        window,
        best.assignment,
        float(best.objective),
        status,
        "guarded",
        convention,
        runtime,
        bound=free.bound if free is not None else None,
        seed=seed,
        info=info,
    )


__all__ = ["CANDIDATES", "MIN_IMPROVE_S", "solve_guarded"]
