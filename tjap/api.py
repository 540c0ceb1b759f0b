"""``tjap.solve(window, method=...)``: one entry point over a registry of methods.

A method is a callable ``fn(window, *, convention, time_limit_s, seed, **options) -> Result``.
Register more with :func:`register`; heuristic and learned methods register here lazily, so
``import tjap`` stays light.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from placement.tree.cost import convention_code
from tjap.errors import InvalidInputError, UnknownMethodError
from placement.tree.result import Result
from placement.tree.window import Window

#: Longest time limit accepted (SCIP refuses more than 1e20 s); None means no limit.
MAX_TIME_LIMIT_S = 1e9

# name -> "module:function" (imported on first use) or a callable
_REGISTRY: dict[str, str | Callable] = {
    "dp": "placement.tree.csp:solve_dp",
    "scip": "placement.tree.scas:solve_scip",
    "cpsat": "placement.tree.scas:solve_cpsat",
    "scip-paper": "placement.tree.scas:solve_scip_paper",
    "cpsat-paper": "placement.tree.scas:solve_cpsat_paper",
    "freeform": "placement.tree.freeform:solve_freeform",
    "freeform-greedy": "placement.tree.freeform:solve_freeform_greedy",
    "seq": "placement.tree.scas:solve_seq",
    "sa": "heuristics.anneal:solve_sa",
    "lns": "heuristics.anneal:solve_lns",
    "nsa": "learned.nsa:solve_nsa",
}

#: What each method computes, shown by ``tjap solve --help`` and the README.
DESCRIPTIONS = {
    "auto": "exact SCAS: dp when its table is small, else SCIP",
    "dp": "exact SCAS by dynamic programming over (position in Q, job multiset), Numba",
    "scip": "exact SCAS, set-packing 0-1 model on SCIP",
    "cpsat": "exact SCAS, set-packing 0-1 model on OR-Tools CP-SAT",
    "scip-paper": "exact SCAS, the paper's x/y formulation on SCIP (weak; for comparison)",
    "cpsat-paper": "exact SCAS, the paper's x/y formulation on CP-SAT (for comparison)",
    "freeform": "exact minimum cost with no contiguity rule (SCIP, or solver='cpsat')",
    "freeform-greedy": "fast best-fit heuristic with no contiguity rule",
    "seq": "the paper's sequential assignment (each job takes the next idle nodes)",
    "sa": "DCAS simulated annealing in Numba (paper's Table I; repair=paper|uniform|greedy)",
    "lns": "DCAS descent from the exact SCAS optimum with the greedy repair (Numba)",
    "nsa": "neural SA: the sa loop with a PPO-trained repair operator (weights=..., needs torch)",
}


def register(name: str, fn: Callable | str, description: str = "") -> None:
    """Add (or replace) a method: a callable or a ``"module:function"`` string."""
    _REGISTRY[name] = fn
    if description:
        DESCRIPTIONS[name] = description


def methods() -> list[str]:
    """Names accepted by :func:`solve`."""
    return ["auto", *_REGISTRY]


def get_method(name: str) -> Callable:
    if name == "auto":
        return _solve_auto
    entry = _REGISTRY.get(name)
    if entry is None:
        raise UnknownMethodError(f"unknown method {name!r}; choose one of {', '.join(methods())}")
    if isinstance(entry, str):
        module, attr = entry.split(":")
        entry = getattr(importlib.import_module(module), attr)
    return entry


def _solve_auto(window: Window, **kwargs) -> Result:
    from placement.tree import csp

    method = "dp" if csp.dp_table_cells(window) <= csp.AUTO_DP_CELLS else "scip"
    return get_method(method)(window, **kwargs)


def solve(window: Window, method: str = "auto", *, time_limit_s: float | None = None, seed: int = 0,
          convention: str = "paper", **options) -> Result:
    """Solve one window.

    Parameters
    ----------
    window : Window
    method : str
        One of :func:`methods` (``"auto"``: exact SCAS by dp when small, else SCIP).
    time_limit_s : float, optional
        Wall-clock limit for solvers that honour one (SCIP, CP-SAT, free-form).
    seed : int
        Random seed; the same seed gives the same Result.
    convention : {"paper", "published"}
        Cost convention, see :mod:`placement.tree.cost`.
    **options
        Method-specific options (``formulation=``, ``solver=``, ``warm_start=`` ...).
    """
    if not isinstance(window, Window):
        raise InvalidInputError(f"solve() needs a tjap.Window, got {type(window).__name__}")
    convention_code(convention)
    if time_limit_s is not None and not 0 < time_limit_s <= MAX_TIME_LIMIT_S:
        raise InvalidInputError(
            f"time_limit_s must be positive and at most {MAX_TIME_LIMIT_S:g} s (None for no limit), "
            f"got {time_limit_s!r}")
    fn = get_method(method)
    return fn(window, convention=convention, time_limit_s=time_limit_s, seed=seed, **options)
