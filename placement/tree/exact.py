"""``auto``: exact SCAS by the method predicted to finish (dp, SCIP) or, when none is, the
constructive rules.

Every method is asked for by name through :func:`tjap.core.registry.solver` (the online replay,
the annealing loops' start); this module holds ``auto``'s choice alone.
"""

from __future__ import annotations

import time
from dataclasses import replace

from tjap.placement.tree import csp
from tjap.placement.tree.result import Result, Status
from tjap.placement.tree.scas import (
    predicted_build_s,
    set_packing_nonzeros,
    solve_scip,
    solve_seq,
)
from tjap.placement.tree.window import Window

#: Without a time limit, ``auto`` runs SCIP only on windows whose set-packing model has at most
#: :data:`AUTO_SCIP_SMALL` nonzeros, or at most :data:`AUTO_SCIP_NONZEROS` with jobs asking for
#: at most :data:`AUTO_SCIP_FILL` of the idle nodes: every such window measured was proven
#: optimal within 5 s (``python -m benchmarks.auto_rules``); fuller or larger windows took 8 s to
#: over 20 s.
AUTO_SCIP_SMALL = 20_000
AUTO_SCIP_NONZEROS = 150_000
AUTO_SCIP_FILL = 0.9
#: Without a time limit, SCIP still stops after this many seconds (a window the size rules let
#: through that turns out hard): the best of its incumbent, the DP and Seq, status TIME_LIMIT.
AUTO_SCIP_CAP_S = 60.0


def auto_choice(window: Window, time_limit_s=None) -> dict:
    """Which method ``auto`` runs on ``window`` and why, from predicted costs (no solving).

    Without a limit: ``dp`` when its table has at most ``csp.AUTO_DP_CELLS`` cells; else
    ``scip`` when the model is within the measured size rules (:data:`AUTO_SCIP_SMALL`,
    :data:`AUTO_SCIP_NONZEROS`, :data:`AUTO_SCIP_FILL`), capped at :data:`AUTO_SCIP_CAP_S`; else ``seq`` (no exact method is
    predicted to finish soon). With a limit: ``dp`` when its table fits (``csp.MAX_DP_CELLS``)
    and one pass is predicted to take at most half the limit (or the table is small anyway);
    else ``scip`` when building its model is predicted to take at most 60 % of the limit; else
    ``seq`` (the first fit, instant: there is no time to prove anything better).

    Returns a dict: ``chose``, ``reason``, ``dp_cells``, ``predicted_dp_s`` (one pass),
    ``predicted_scip_build_s``, ``scip_nonzeros``."""
    cells = csp.dp_table_cells(window)
    dp_s = csp.predicted_dp_s(window)
    build_s = predicted_build_s(window, "scip")
    nonzeros = set_packing_nonzeros(window)
    out = {
        "dp_cells": cells,
        "predicted_dp_s": dp_s,
        "predicted_scip_build_s": build_s,
        "scip_nonzeros": nonzeros,
    }
    if cells <= csp.AUTO_DP_CELLS and (time_limit_s is None or dp_s <= time_limit_s):
        return {"chose": "dp", "reason": f"small DP table ({cells:,} cells)", **out}
    if time_limit_s is None:
        fill = sum(window.job_sizes) / max(window.num_idle, 1)
        if nonzeros <= AUTO_SCIP_SMALL or (
            nonzeros <= AUTO_SCIP_NONZEROS and fill <= AUTO_SCIP_FILL
        ):
            return {
                "chose": "scip",
                "reason": f"DP table of {cells:,} cells is large; SCIP's "
                f"model ({nonzeros:,} nonzeros, jobs fill {fill:.0%} of the idle nodes) is "
                f"within the sizes measured to solve in seconds (stops at "
                f"{AUTO_SCIP_CAP_S:g} s)",
                **out,
            }
        return {
            "chose": "seq",
            "reason": f"no time limit and no exact method measured to finish "
            f"soon (DP table of {cells:,} cells; SCIP model of {nonzeros:,} nonzeros with "
            f"jobs filling {fill:.0%} of the idle nodes: beyond {AUTO_SCIP_SMALL:,}, or "
            f"{AUTO_SCIP_NONZEROS:,} at {AUTO_SCIP_FILL:.0%}); give a time limit to search",
            **out,
        }
    if cells <= csp.MAX_DP_CELLS and dp_s <= 0.5 * time_limit_s:
        return {"chose": "dp", "reason": f"DP predicted {dp_s:.3g} s within the limit", **out}
    if build_s <= 0.6 * time_limit_s:
        return {
            "chose": "scip",
            "reason": f"DP too large ({cells:,} cells); SCIP model predicted "
            f"to build in {build_s:.3g} s",
            **out,
        }
    return {
        "chose": "seq",
        "reason": f"neither the DP ({cells:,} cells) nor SCIP's model "
        f"(predicted {build_s:.3g} s to build) fits the limit",
        **out,
    }


def solve_auto(window: Window, *, convention="paper", time_limit_s=None, seed=0) -> Result:
    """Exact SCAS by the method predicted to finish (see :func:`auto_choice`): ``dp`` when its
    table is small, else ``scip`` within ``time_limit_s`` (without one: when the window is within
    the measured size rules, stopped at :data:`AUTO_SCIP_CAP_S`), else ``seq`` (status
    TIME_LIMIT with a limit, FEASIBLE without: a SCAS placement, from which an annealing loop
    may start). It never runs unbounded. ``info["auto"]`` says which method ran and why; the
    Result's ``method`` is that method. :func:`tjap.solve` compares a result of ``auto`` that is
    not proven with the other constructive rules (the portfolio of
    :func:`tjap.placement.tree.rules.no_worse_than_rules`)."""
    started = time.perf_counter()
    choice = auto_choice(window, time_limit_s)
    if choice["chose"] == "dp":
        result = csp.solve_dp(window, convention=convention, seed=seed, time_limit_s=time_limit_s)
    elif choice["chose"] == "scip":
        left = (
            AUTO_SCIP_CAP_S
            if time_limit_s is None
            else time_limit_s - (time.perf_counter() - started)
        )
        result = solve_scip(window, convention=convention, time_limit_s=max(left, 1e-3), seed=seed)
    else:  # no exact method fits: Seq, a SCAS placement (an annealing loop may start from it)
        seq = solve_seq(window, convention=convention, seed=seed)
        if time_limit_s is None:
            result = replace(seq, info={"fallback": "seq"})
        else:
            result = replace(
                seq,
                status=Status.TIME_LIMIT,
                info={"stopped": "time limit: no exact method fits", "fallback": "seq"},
            )
    return replace(
        result, runtime_s=time.perf_counter() - started, info={**result.info, "auto": choice}
    )


__all__ = ["auto_choice", "solve_auto"]
