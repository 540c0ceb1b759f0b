"""``tjap.solve(window, method=...)``: one entry point over every seed-002 window solver.

Methods are the ``"tree"`` entries of :mod:`tjap.registry`; add more with
:func:`tjap.registry.register`. Solvers are imported when first used, so ``import tjap`` stays
light.
"""

from __future__ import annotations

from tjap.errors import InvalidInputError
from tjap.registry import get, methods, register  # noqa: F401  (re-exported by tjap)

#: Longest time limit accepted (SCIP refuses more than 1e20 s); None means no limit.
MAX_TIME_LIMIT_S = 1e9


def solve(window, method: str = "auto", *, time_limit_s: float | None = None, seed: int = 0,
          convention: str = "paper", **options):
    """Solve one window.

    Parameters
    ----------
    window : Window
        The idle nodes and the jobs to place (:class:`placement.tree.window.Window`).
    method : str
        One of ``tjap.methods()``; ``tjap methods`` lists them with what they compute.

        - ``auto`` (default): exact SCAS, ``dp`` when its table is small, else ``scip``.
        - ``dp``: exact SCAS by dynamic programming (``max_cells=``).
        - ``scip``, ``cpsat``: exact SCAS set packing (``formulation="set-packing" | "paper"``;
          cpsat also ``workers=``); ``scip-paper``, ``cpsat-paper``: the paper's formulation.
        - ``freeform``: exact minimum cost without contiguity (``solver="scip" | "cpsat"``,
          ``warm_start=`` a Result or assignment, ``workers=``).
        - ``freeform-greedy``, ``seq``: fast heuristics without options.
        - ``sa``: DCAS simulated annealing, by default the best configuration measured
          (``preset="best"``: greedy repair, n^D = 5, T_max 25000, 1000 iterations);
          ``preset="paper"`` is the paper's Table I, ``preset="published"`` its published code.
          Options (each overrides the preset's): ``iterations=``, ``repair=``, ``q=``,
          ``max_remove=``, ``t_max=``, ``t_min=``, ``reinsert=``, ``initial=``; see
          :func:`heuristics.anneal.solve_sa`.
        - ``lns``: DCAS descent from the SCAS optimum with the greedy repair (``iterations=``,
          ``repair=``, ``max_remove=``, ``initial=``); see :func:`heuristics.anneal.solve_lns`.
        - ``nsa``: neural SA, the paper's SA loop with a trained repair (``weights=``,
          ``preset="paper" | "published"``, ``iterations=``, ``max_remove=``, ``t_max=``,
          ``t_min=``, ``reinsert=``, ``initial=``, ``sample=``); see
          :func:`learned.nsa.solve_nsa`.
    time_limit_s : float, optional
        Wall-clock limit for the methods that honour one (SCIP, CP-SAT, free-form, the
        annealing loops).
    seed : int
        Random seed; the same seed gives the same Result.
    convention : {"paper", "published"}
        Cost convention, see :mod:`placement.tree.cost`.
    **options
        Method-specific options, listed above. An option the method does not take raises
        :class:`~tjap.errors.InvalidInputError` naming it and the valid ones.

    Returns
    -------
    Result
        The assignment, its objective, a bound where known, the status and the runtime.

    Examples
    --------
    >>> import tjap
    >>> window = tjap.Window(tjap.FatTree(k=4), idle_nodes=range(16), job_sizes=[3, 2])
    >>> result = tjap.solve(window, "dp")
    >>> result.status.value, result.is_feasible()
    ('OPTIMAL', True)
    """
    from placement.tree.cost import convention_code
    from placement.tree.window import Window

    if not isinstance(window, Window):
        raise InvalidInputError(f"solve() needs a tjap.Window, got {type(window).__name__}")
    convention_code(convention)
    if time_limit_s is not None and not (isinstance(time_limit_s, (int, float))
                                         and 0 < time_limit_s <= MAX_TIME_LIMIT_S):
        raise InvalidInputError(
            f"time_limit_s must be positive and at most {MAX_TIME_LIMIT_S:g} s (None for no limit), "
            f"got {time_limit_s!r}")
    if not isinstance(seed, (int,)) or isinstance(seed, bool):
        raise InvalidInputError(f"seed must be an integer, got {seed!r}")
    entry = get("tree", method)
    entry.check_options(options, fixed=("convention", "time_limit_s", "seed"))
    return entry.load()(window, convention=convention, time_limit_s=time_limit_s, seed=seed,
                        **options)
