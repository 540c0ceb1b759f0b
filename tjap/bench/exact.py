"""Exact SCAS solvers on the paper's window stream: dp against SCIP and CP-SAT, the paper's weak
formulation, and the free-form optimum as the bound on every contiguity strategy.

    tjap bench exact --num-windows 200 --seed 0 --layout paper

Prints one row per method, writes per-window CSV and a summary CSV, and a PNG of time against the
number of idle nodes. All methods run on the same windows in one run; speed is reported as the
median over windows of (SCIP time / method time), so the machine's noise cancels.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from placement.tree.stream import generate_windows
from placement.tree.window import Window
from tjap.api import solve
from tjap.executor import CsvRows, make_executor
from tjap.report import format_table, pyplot, save_figure, write_csv

EXACT_METHODS = ("scip", "cpsat", "dp")


def solve_window(w, seed, convention, freeform_time_limit_s, paper_time_limit_s) -> list[dict]:
    """Every exact method on one window (a task of the sweep; the window as a dict);
    ``paper_time_limit_s`` None skips the paper's formulation. One row per method."""
    w = Window.from_dict(w)
    base = {"epoch": w.meta["epoch"], "window": w.meta["index"], "idle_nodes": w.num_idle,
            "jobs": w.num_jobs}
    by_method = {}
    for method in EXACT_METHODS:
        by_method[method] = solve(w, method, seed=seed, convention=convention)
    by_method["freeform"] = solve(w, "freeform", seed=seed, convention=convention,
                                  time_limit_s=freeform_time_limit_s, warm_start=by_method["dp"])
    if paper_time_limit_s is not None:
        by_method["scip-paper"] = solve(w, "scip-paper", seed=seed, convention=convention,
                                        time_limit_s=paper_time_limit_s)
    return [{**base, "method": method, "status": r.status.value, "objective": r.objective,
             "bound": r.bound, "runtime_s": r.runtime_s,
             "scip_runtime_s": by_method["scip"].runtime_s,
             "scip_objective": by_method["scip"].objective,
             "scip_optimal": by_method["scip"].status.value == "OPTIMAL",
             "scas_optimum": by_method["dp"].objective} for method, r in by_method.items()]


def run(layout="paper", num_windows=200, seed=0, *, convention="paper", cap=5,
        freeform_time_limit_s=2.0, paper_windows=20, paper_time_limit_s=10.0,
        quiet=False, executor=None, csv_path=None) -> dict:
    """Solve the stream's windows with every exact method (one task per window on ``executor``,
    default serial; the paper's formulation on the first ``paper_windows``); return per-window
    rows and summary (with ``csv_path``, the rows are appended there as they arrive). Times are
    per task, so on a pool each method of a window shares a core's
    conditions with the SCIP run it is compared to."""
    windows = generate_windows(layout, num_windows, seed, cap=cap, convention=convention)
    solve(windows[0], "dp", convention=convention)  # compile (or load) the Numba kernels first
    tasks = [(w.to_dict(), seed, convention, freeform_time_limit_s,
              paper_time_limit_s if k < paper_windows else None) for k, w in enumerate(windows)]
    rows = []
    partial = CsvRows(csv_path) if csv_path else None   # rows on disk as they arrive
    try:
        for out in (executor or make_executor(1)).results(solve_window, tasks,
                                                          desc=f"exact/{layout}", quiet=quiet):
            rows += out
            for row in out if partial else ():
                partial.write(row)
    finally:
        if partial:
            partial.close()
    return {"rows": rows, "summary": summarize(rows), "layout": layout, "seed": seed,
            "convention": convention, "num_windows": len(windows), "cap": cap}


def summarize(rows: list[dict]) -> list[dict]:
    out = []
    for method in dict.fromkeys(r["method"] for r in rows):
        rs = [r for r in rows if r["method"] == method]
        t = np.array([r["runtime_s"] for r in rs])
        speedup = np.array([r["scip_runtime_s"] / max(r["runtime_s"], 1e-9) for r in rs])
        solved = [r for r in rs if r["status"] in ("OPTIMAL", "FEASIBLE")]
        agree = [r for r in solved if r["scip_optimal"]]
        same = sum(abs(r["objective"] - r["scip_objective"]) <= 1e-6 * max(1.0, abs(r["scip_objective"]))
                   for r in agree)
        gap = [(r["scas_optimum"] - r["objective"]) / r["scas_optimum"] for r in solved]
        bound_gap = [(r["objective"] - r["bound"]) / r["objective"] for r in solved
                     if r["bound"] is not None]
        out.append({
            "method": method, "windows": len(rs),
            "mean_s": float(t.mean()), "median_s": float(np.median(t)), "max_s": float(t.max()),
            "scip_over_method": float(np.median(speedup)),
            "method_over_scip": float(np.median(1.0 / speedup)),
            "optimal_pct": 100.0 * sum(r["status"] == "OPTIMAL" for r in rs) / len(rs),
            "same_as_scip_pct": 100.0 * same / len(agree) if agree else None,
            "mean_objective": float(np.mean([r["objective"] for r in solved])) if solved else None,
            "below_scas_pct": 100.0 * float(np.mean(gap)) if gap else None,
            "max_bound_gap_pct": 100.0 * float(max(bound_gap)) if bound_gap else None,
        })
    return out


COLUMNS = [("method", ""), ("windows", "d"), ("mean_s", ".4f"), ("median_s", ".4f"),
           ("max_s", ".4f"), ("scip_over_method", ".1f"), ("method_over_scip", ".1f"), ("optimal_pct", ".1f"),
           ("same_as_scip_pct", ".1f"), ("mean_objective", ".1f"), ("below_scas_pct", ".3f"),
           ("max_bound_gap_pct", ".3f")]


def _stem(layout, convention, seed) -> str:
    return f"exact_{layout}_{convention}_s{seed}"


def report(result: dict, out_dir: Path) -> dict:
    """Write CSVs and the PNG; return their paths and the printed table."""
    stem = _stem(result["layout"], result["convention"], result["seed"])
    paths = {"rows_csv": write_csv(out_dir / f"{stem}.csv", result["rows"]),
             "summary_csv": write_csv(out_dir / f"{stem}_summary.csv", result["summary"]),
             "plot_png": plot(result, out_dir / f"{stem}.png")}
    return {k: str(v) for k, v in paths.items()}


def plot(result: dict, path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for method in dict.fromkeys(r["method"] for r in result["rows"]):
        rs = [r for r in result["rows"] if r["method"] == method]
        ax.scatter([r["idle_nodes"] for r in rs], [r["runtime_s"] for r in rs], s=10, label=method,
                   alpha=0.7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("idle nodes in the window")
    ax.set_ylabel("time per window (s)")
    ax.set_title(f"Exact SCAS on the paper's stream ({result['layout']} layout, "
                 f"{result['convention']} cost, {result['num_windows']} windows)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return save_figure(fig, path)


def main(args) -> dict:
    from tjap.errors import InvalidInputError
    from tjap.executor import executor_from_args

    started = time.perf_counter()
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise InvalidInputError(f"--out {args.out} is a file; give a folder for the CSV and PNG")
    result = run(args.layout, args.num_windows, args.seed, convention=args.convention,
                 cap=args.cap, freeform_time_limit_s=args.freeform_time_limit,
                 paper_windows=args.paper_windows, paper_time_limit_s=args.paper_time_limit,
                 quiet=args.quiet, executor=executor_from_args(args),
                 csv_path=Path(args.out) / f"{_stem(args.layout, args.convention, args.seed)}.csv")
    files = report(result, Path(args.out))
    return {"summary": result["summary"], "files": files, "layout": result["layout"],
            "convention": result["convention"], "seed": result["seed"],
            "num_windows": result["num_windows"], "cap": result["cap"],
            "table": format_table(result["summary"], COLUMNS),
            "wall_s": time.perf_counter() - started}
