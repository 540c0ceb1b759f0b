"""Seed 002's Table III (Seq, SA, against the exact SCAS and free-form optima), Table IV (SCIP with
and without a time limit, both formulations) and the Numba-vs-Python speed of the SA loop.

Two settings, named in every table:

- ``published``: the authors' code, which produced the paper's tables: 25 pods of 40 nodes, the
  published cost convention, SA with ``preset="published"`` (T_max = 25000, removed jobs
  re-inserted in window order).
- ``paper``: the paper's text: k = 20 (10 pods of 100), Eq. (1) cost, SA with ``preset="paper"``
  (T_max = 2500, re-insertion by descending size).

Every SA run names its preset (see :data:`heuristics.anneal.SA_PRESETS`), so the tables do not move
when the library's defaults do.

Both cap a window at 5 multi-node jobs (the published code's evaluation setting). An epoch is
``windows_per_epoch`` windows from an empty cluster; its "cost" is the mean window cost, as the
paper's per-epoch "sum / 100". The windows come from the paper's generator, or with ``workload``
from any :class:`~placement.tree.workload.Workload` (a job list read by
:meth:`~placement.tree.workload.Workload.from_file`, used as read: nothing rescaled).
"""

from __future__ import annotations


import numpy as np

from placement.tree.stream import generate_windows
from placement.tree.window import Window
from placement.tree.workload import Workload
from tjap.api import solve
from tjap.executor import make_executor
from tjap.report import format_table

#: Layout and cost convention of each setting; its SA (and NSA) runs use the preset of its name.
SETTINGS = {
    "published": {"layout": "published", "convention": "published"},
    "paper": {"layout": "paper", "convention": "paper"},
}

#: "SA best": the best hand-written configuration found here (greedy repair, up to 5 jobs removed,
#: every job of a capped window, re-insertion largest first, T_max 25000), the library's default.
BEST_SA = {"preset": "best"}

#: The setting's LNS-500: descent from the SCAS optimum with the greedy repair, n^D = 2.
LNS = {"repair": "greedy", "max_remove": 2, "initial": "auto"}

#: Table III of the paper (published setting), averages over 10 epochs.
PAPER_TABLE3 = {"seq": 105023.5, "sa500": 91813.2, "sa1000": 90809.7, "nsa500": 89588.7,
                "sa500_s": 0.76, "sa1000_s": 1.55}


def _windows(setting: str, epochs: int, windows_per_epoch: int, seed: int,
             workload: Workload | None = None):
    s = SETTINGS[setting]
    return generate_windows(s["layout"], epochs * windows_per_epoch, seed, cap=5,
                            epoch_windows=windows_per_epoch, convention=s["convention"],
                            workload=workload)


def table3(setting="published", epochs=10, windows_per_epoch=100, seed=0, freeform_time_limit_s=1.0,
           quiet=False, executor=None, workload: Workload | None = None) -> dict:
    conv = SETTINGS[setting]["convention"]
    windows = _windows(setting, epochs, windows_per_epoch, seed, workload)
    solve(windows[0], "sa", preset=setting, iterations=1, convention=conv)          # compile first
    solve(windows[0], "sa", iterations=1, convention=conv, **BEST_SA)
    tasks = [(setting, w.to_dict(), seed, freeform_time_limit_s) for w in windows]
    rows = (executor or make_executor(1)).results(table3_window, tasks, desc=f"table3/{setting}",
                                                  quiet=quiet)
    names = list(_table3_runs(setting)) + ["freeform"]
    return {"setting": setting, "rows": rows, "epochs": _per_epoch(rows, names)}


def _table3_runs(setting: str) -> dict:
    return {
        "seq": dict(method="seq"),
        "sa500": dict(method="sa", preset=setting, iterations=500),
        "sa1000": dict(method="sa", preset=setting, iterations=1000),
        "sa1000_best": dict(method="sa", iterations=1000, **BEST_SA),
        "lns500": dict(method="lns", iterations=500, **LNS),
        "scas_opt": dict(method="dp"),
    }


def table3_window(setting, w, seed, freeform_time_limit_s) -> dict:
    """Table III's methods on one window (a task of the sweep; the window as a dict): one row."""
    w = Window.from_dict(w)
    conv = SETTINGS[setting]["convention"]
    row = {"epoch": w.meta["epoch"], "window": w.meta["index"], "idle": w.num_idle,
           "jobs": w.num_jobs}
    results = {}
    for name, kw in _table3_runs(setting).items():
        kw = dict(kw)
        r = solve(w, kw.pop("method"), convention=conv, seed=seed, **kw)
        results[name] = r
        row[name] = r.objective
        row[f"{name}_s"] = r.runtime_s
    best_known = min(results.values(), key=lambda r: r.objective)
    ff = solve(w, "freeform", convention=conv, seed=seed, time_limit_s=freeform_time_limit_s,
               warm_start=best_known)
    row["freeform"] = ff.objective
    row["freeform_bound"] = ff.bound
    row["freeform_optimal"] = ff.status.value == "OPTIMAL"
    row["freeform_s"] = ff.runtime_s
    return row


def _per_epoch(rows, names):
    out = []
    for e in sorted({r["epoch"] for r in rows}):
        rs = [r for r in rows if r["epoch"] == e]
        row = {"epoch": e + 1}
        for n in names:
            row[n] = float(np.mean([r[n] for r in rs]))
            row[f"{n}_ms"] = 1000 * float(np.mean([r[f"{n}_s"] for r in rs]))
        out.append(row)
    avg = {"epoch": "avg"}
    for key in out[0]:
        if key != "epoch":
            avg[key] = float(np.mean([r[key] for r in out]))
    return out + [avg]


def gaps(rows, names, reference="scas_opt") -> dict:
    """Mean relative gap (%) of each column to the reference column, window by window."""
    ref = np.array([r[reference] for r in rows])
    return {n: 100 * float(np.mean((np.array([r[n] for r in rows]) - ref) / ref)) for n in names}


def table4(setting="published", epochs=10, windows_per_epoch=100, seed=0, paper_windows=20,
           limit_s=30.0, quiet=False, executor=None, workload: Workload | None = None) -> dict:
    """SCIP with no limit and with ``limit_s`` on the set-packing model (all windows) and the
    paper's formulation (the first ``paper_windows`` windows); one task per window."""
    windows = _windows(setting, epochs, windows_per_epoch, seed, workload)
    tasks = [(setting, w.to_dict(), seed, limit_s, k < paper_windows)
             for k, w in enumerate(windows)]
    rows = (executor or make_executor(1)).results(table4_window, tasks, desc=f"table4/{setting}",
                                                  quiet=quiet)
    return {"setting": setting, "rows": rows}


def table4_window(setting, w, seed, limit_s, with_paper) -> dict:
    """Table IV's SCIP runs on one window (a task of the sweep; the window as a dict): one row."""
    w = Window.from_dict(w)
    conv = SETTINGS[setting]["convention"]
    row = {"epoch": w.meta["epoch"], "window": w.meta["index"], "idle": w.num_idle}
    for name, method, limit in (("sp_nolimit", "scip", None), ("sp_limit", "scip", limit_s)):
        r = solve(w, method, convention=conv, time_limit_s=limit, seed=seed)
        row[name], row[f"{name}_s"], row[f"{name}_status"] = r.objective, r.runtime_s, r.status.value
    if with_paper:
        r = solve(w, "scip-paper", convention=conv, time_limit_s=limit_s, seed=seed)
        row["paper_limit"], row["paper_limit_s"] = r.objective, r.runtime_s
        row["paper_limit_status"] = r.status.value
    return row


def print_table3(result: dict) -> str:
    cols = [("epoch", ""), ("seq", ".1f"), ("sa500", ".1f"), ("sa500_ms", ".2f"), ("sa1000", ".1f"),
            ("sa1000_ms", ".2f"), ("sa1000_best", ".1f"), ("sa1000_best_ms", ".2f"),
            ("lns500", ".1f"), ("scas_opt", ".1f"), ("scas_opt_ms", ".2f"), ("freeform", ".1f")]
    return format_table(result["epochs"], cols)


def nsa_table(setting="published", weights=None, epochs=10, windows_per_epoch=100, seed=0,
              quiet=False, executor=None, workload: Workload | None = None) -> dict:
    """NSA-500 against SA-500 / SA-1000 with the paper's repair at equal iterations, and against
    SA with the paper's and our best repair at NSA's wall time, window by window (one task per
    window: the equal-time budgets are measured on the same core as the runs they bound)."""
    windows = _windows(setting, epochs, windows_per_epoch, seed, workload)
    solve(windows[0], "nsa", preset=setting, iterations=1, weights=weights,
          convention=SETTINGS[setting]["convention"], seed=seed)
    tasks = [(setting, w.to_dict(), seed, weights) for w in windows]
    rows = (executor or make_executor(1)).results(nsa_window, tasks, desc=f"nsa/{setting}",
                                                  quiet=quiet)
    names = ["nsa500", "sa500", "sa1000", "sa_paper_same_time", "sa_best_same_time", "scas_opt"]
    per_epoch = _per_epoch(rows, names)
    nsa = np.array([r["nsa500"] for r in rows])
    impr = {n: 100 * float(np.mean((np.array([r[n] for r in rows]) - nsa) / np.array([r[n] for r in rows])))
            for n in names if n != "nsa500"}
    return {"setting": setting, "rows": rows, "epochs": per_epoch,
            "nsa_improvement_pct": impr, "gap_to_scas_pct": gaps(rows, names)}


def nsa_window(setting, w, seed, weights) -> dict:
    """NSA-500 and its SA comparisons on one window (a task of the sweep; the window as a dict):
    one row."""
    w = Window.from_dict(w)
    s = SETTINGS[setting]
    common = {"convention": s["convention"], "seed": seed}
    paper_sa = {"preset": setting}   # the paper's repair, in the setting's loop
    nsa = solve(w, "nsa", iterations=500, weights=weights, **paper_sa, **common)
    budget = nsa.runtime_s
    runs = {
        "nsa500": nsa,
        "sa500": solve(w, "sa", iterations=500, **paper_sa, **common),
        "sa1000": solve(w, "sa", iterations=1000, **paper_sa, **common),
        "sa_paper_same_time": solve(w, "sa", iterations=10**7, time_limit_s=budget,
                                    **paper_sa, **common),
        "sa_best_same_time": solve(w, "sa", iterations=10**7, time_limit_s=budget,
                                   **BEST_SA, **common),
        "scas_opt": solve(w, "dp", **common),
    }
    row = {"epoch": w.meta["epoch"], "window": w.meta["index"]}
    for name, r in runs.items():
        row[name] = r.objective
        row[f"{name}_s"] = r.runtime_s
        row[f"{name}_iterations"] = r.iterations
    return row
