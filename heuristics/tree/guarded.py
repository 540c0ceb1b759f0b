"""``guarded``: a window method that is never worse than the cluster's scheduler nor than the
optimum of the window it is given, on every cluster and with the jobs' constraints.

It is one portfolio (:func:`tjap.core.portfolio.best_of`) of three candidates, and keeps the
cheapest feasible placement:

1. ``scas``: the exact optimum of the window as given (contiguous blocks of the idle sequence,
   the jobs' constraints kept, Slurm's block rule where the jobs carry ``slurm_rule``), by
   ``dp`` when its table is small, else SCIP within the time limit (``auto``);
2. the scheduler's own choice for that cluster, job by job in window order: ``slurm-block`` on a
   block cluster (Slurm 24.11's ``topology/block``), ``slurm-tree`` on a switch tree (Slurm
   22.05's ``topology/tree``, or 24.11's with ``slurm="24.11"``), or Kueue's topology-aware
   scheduling when asked (``scheduler="kueue-bestfit"`` or ``"kueue-leastfree"``). A scheduler
   that cannot express the window's constraints (``slurm-tree`` has no segments, Kueue no
   ``slurm_rule``) says so in its entry and the guard holds for the others;
3. ``freeform`` (only with a time limit, and only with time left after the first two): the
   free-form model (no contiguity, the constraints kept), warm-started from the better of the
   two, within the time left; it keeps its warm start unless it finds something strictly
   cheaper.

So by construction its cost is at most the scheduler's and at most the optimum of the window
(when that was proven). Ties go to ``scas``, then the scheduler; ``freeform`` wins only when
strictly cheaper. ``Result.info`` records the ``winner``, the ``scheduler`` and every
candidate's ``cost``, ``status`` and ``runtime_s`` (a candidate that could not run says why in
``error``), plus ``scheduler_cost`` (also under ``slurm_tree_cost`` or ``slurm_block_cost``, by
the scheduler's name) and ``scas_optimum`` (None when not proven). The status is ``TIME_LIMIT``
when the limit cut a candidate short (the cheapest found is still returned), and ``OPTIMAL``
only when ``freeform`` proved the free-form optimum, else ``FEASIBLE``.
"""

from __future__ import annotations

import time

from tjap.core.backends import require
from tjap.core.errors import InvalidInputError, TjapError
from tjap.core.portfolio import Candidate, NotRun, best_of
from tjap.core.registry import solver as method
from tjap.core.result import Status
from tjap.heuristics.slurm.tree import RELEASES
from tjap.placement.tree.freeform import SOLVER_PACKAGES
from tjap.placement.tree.result import Result
from tjap.placement.tree.window import Window

#: Seconds of time limit that must be left for the free-form improvement to start.
MIN_IMPROVE_S = 0.05
#: The schedulers whose choice ``guarded`` can guard against.
SCHEDULERS = ("slurm-tree", "slurm-block", "kueue-bestfit", "kueue-leastfree")


def default_scheduler(window: Window) -> str:
    """The scheduler of ``window``'s cluster: ``slurm-block`` on a block cluster
    (:attr:`~tjap.placement.tree.topology.Topology.is_block`), else ``slurm-tree``."""
    return "slurm-block" if window.topology.is_block else "slurm-tree"


def solve_guarded(
    window: Window,
    *,
    convention="paper",
    time_limit_s=None,
    seed=0,
    improve: bool = True,
    solver: str = "scip",
    slurm: str = "22.05",
    scheduler: str | None = None,
) -> Result:
    """The cheapest of the window's optimum, the scheduler's choice and (with a time limit) a
    warm-started free-form improvement; see the module docstring.

    Parameters
    ----------
    window : Window
        The window, jobs in priority order (the scheduler places them in that order), with
        their constraints.
    time_limit_s : float, optional
        Wall-clock budget for the whole method. SCIP's model (used only when the ``dp`` table is
        too large) gets all of it; ``freeform`` gets what is left. Without a limit ``freeform``
        does not run.
    improve : bool
        Try the free-form improvement (default True).
    solver : {"scip", "cpsat"}
        The free-form model's solver.
    slurm : {"22.05", "24.11"}
        Which Slurm's ``topology/tree`` rule ``slurm-tree`` follows (they differ on some jobs).
    scheduler : str, optional
        The scheduler to guard against, one of :data:`SCHEDULERS`; by default the cluster's
        (:func:`default_scheduler`).

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
    if not isinstance(window, Window):
        raise InvalidInputError(f"window must be a Window, got {type(window).__name__}")
    if slurm not in RELEASES:
        raise InvalidInputError(
            f"slurm must be one of {', '.join(map(repr, RELEASES))} (the "
            f"Slurm whose topology/tree rule to follow), got {slurm!r}"
        )
    scheduler = default_scheduler(window) if scheduler is None else scheduler
    if scheduler not in SCHEDULERS:
        raise InvalidInputError(
            f"scheduler must be one of {', '.join(map(repr, SCHEDULERS))} (the scheduler whose "
            f"choice guarded is never worse than), got {scheduler!r:.40}"
        )
    if scheduler == "slurm-block" and not window.topology.is_block:
        raise InvalidInputError(
            "scheduler 'slurm-block' needs a block cluster (a topology.conf of BlockName lines); "
            "this tree is a switch tree: use scheduler='slurm-tree'"
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
    common = {"convention": convention, "seed": seed}
    found: dict[str, Result] = {}  # the free-form improvement's result (its bound)

    def optimum(left, best):
        return method("auto")(window, time_limit_s=time_limit_s, **common)

    def rule(left, best):
        if window.constrained and scheduler == "slurm-tree":
            raise NotRun(
                "Slurm's topology/tree has no job constraints (segments, within, prefer, "
                "exclusive, slurm_rule)"
            )
        options = {"slurm": slurm} if scheduler == "slurm-tree" else {}
        return method(scheduler)(window, **common, **options)

    def improvement(left, best):
        if time_limit_s is None:
            raise NotRun("no time limit")
        if best is None:
            raise NotRun("nothing to improve")
        if left < MIN_IMPROVE_S:
            raise NotRun("no time left")
        found["freeform"] = method("freeform")(
            window, time_limit_s=left, solver=solver, warm_start=best, **common
        )
        return found["freeform"]

    candidates = [Candidate("scas", optimum), Candidate(scheduler, rule)]
    if improve:
        candidates.append(Candidate("freeform", improvement))
    left = None if time_limit_s is None else time_limit_s - (time.perf_counter() - started)
    pick = best_of(candidates, time_left_s=left)
    runtime = time.perf_counter() - started
    entries = pick.candidates
    scas = entries["scas"]
    info = {
        "winner": pick.winner,
        "scheduler": scheduler,
        "candidates": entries,
        "scheduler_cost": entries[scheduler]["cost"],
        f"{scheduler.replace('-', '_')}_cost": entries[scheduler]["cost"],
        "scas_optimum": scas["cost"] if scas["status"] == Status.OPTIMAL.value else None,
    }
    if pick.best is None:
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
    best = pick.best
    free = found.get("freeform")
    # the free-form optimum is the least cost of any placement, so proving it proves the best
    proven = free is not None and free.status == Status.OPTIMAL
    # a candidate cut short by the limit makes the whole answer "cut short" (tjap.solve's contract)
    cut = [name for name, e in entries.items() if e.get("status") == Status.TIME_LIMIT.value]
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


__all__ = ["MIN_IMPROVE_S", "SCHEDULERS", "default_scheduler", "solve_guarded"]
