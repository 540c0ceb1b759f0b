"""The exact SCAS models (and the paper's Seq rule) by name, for the floors that move a cluster on
with a window solver: the window stream, the online replay and the annealing loops' start.

Search loops and learned methods live above this floor; to use one of them in the online replay,
pass a solver callable instead of a name, e.g. ``functools.partial(tjap.solve, method="sa")``.
"""

from __future__ import annotations

from collections.abc import Callable

from placement.tree import csp
from placement.tree.freeform import solve_freeform, solve_freeform_greedy
from placement.tree.result import Result
from placement.tree.scas import (solve_cpsat, solve_cpsat_paper, solve_scip, solve_scip_paper,
                                 solve_seq)
from placement.tree.window import Window
from tjap.errors import UnknownMethodError


def solve_auto(window: Window, *, convention="paper", time_limit_s=None, seed=0) -> Result:
    """Exact SCAS: ``dp`` when its table is small (at most ``csp.AUTO_DP_CELLS`` cells), else
    ``scip`` within ``time_limit_s``."""
    if csp.dp_table_cells(window) <= csp.AUTO_DP_CELLS:
        return csp.solve_dp(window, convention=convention, seed=seed)
    return solve_scip(window, convention=convention, time_limit_s=time_limit_s, seed=seed)


#: The window solvers of this floor, by the names tjap.solve gives them.
SOLVERS: dict[str, Callable[..., Result]] = {
    "auto": solve_auto, "dp": csp.solve_dp, "scip": solve_scip, "cpsat": solve_cpsat,
    "scip-paper": solve_scip_paper, "cpsat-paper": solve_cpsat_paper, "freeform": solve_freeform,
    "freeform-greedy": solve_freeform_greedy, "seq": solve_seq,
}


def window_solver(method) -> Callable[..., Result]:
    """A callable ``solver(window, *, seed, convention, **options) -> Result`` for ``method``: one
    of :data:`SOLVERS` by name, or a callable returned as it is."""
    if callable(method):
        return method
    if method not in SOLVERS:
        raise UnknownMethodError(
            f"unknown window method {method!r} here; choose one of {', '.join(SOLVERS)}, or pass a "
            f"solver callable such as functools.partial(tjap.solve, method={method!r})")
    return SOLVERS[method]


def solve_named(window: Window, method: str = "auto", **options) -> Result:
    """Solve ``window`` with the exact model or rule ``method`` of :data:`SOLVERS`."""
    return window_solver(method)(window, **options)


__all__ = ["SOLVERS", "solve_auto", "solve_named", "window_solver"]
