"""Seed 002's Table III (Seq, SA, against the exact SCAS and free-form optima), Table IV (SCIP with
and without a time limit, both formulations), and NSA against SA at equal iterations and at equal
time (SA given as many iterations as fit in NSA's time on each window).

    python -m benchmarks.sa_tables table3 --setting published|paper [--workload FILE]
    python -m benchmarks.sa_tables table4 --setting published|paper [--limit 30]
    python -m benchmarks.sa_tables nsa --setting published|paper [--weights JSON] [--preset best]

Each writes its rows to ``--out DIR`` (default benchmarks/out) as they arrive
(``table3_<setting>_s<seed>.csv``, ``table4_...``, ``nsa_...csv`` and a summary ``.json``;
``NAME.partial.csv`` until the last row) and prints a table or, with ``--json``, the summary.

Two settings, named in every table:

- ``published``: the authors' code, which produced the paper's tables: 25 pods of 40 nodes, the
  published cost convention, SA with ``preset="published"`` (T_max = 25000, removed jobs
  re-inserted in window order).
- ``paper``: the paper's text: k = 20 (10 pods of 100), Eq. (1) cost, SA with ``preset="paper"``
  (T_max = 2500, re-insertion by descending size).

Every SA run names its preset (see :data:`tjap.heuristics.tree.anneal.SA_PRESETS`), so the tables do not move
when the library's defaults do; the one exception is the NSA table's ``sa_default_same_time``,
which is by design what ``tjap.solve(w, "sa")`` runs.

Both cap a window at 5 multi-node jobs (the published code's evaluation setting). An epoch is
``windows_per_epoch`` windows from an empty cluster; its "cost" is the mean window cost, as the
paper's text defines Table III's "Cost" (the average over 100 instances). The published code
divided instead the sum over the windows of 100 periods by 100, counting the periods with no
window (about 7 % of them) as zeros, which puts every column of the paper's table about 7 %
lower; ``python -m benchmarks.table3_accounting`` replays an epoch that way (see
benchmarks/RESULTS.md). The windows come from the paper's generator, or with ``workload``
from any :class:`~tjap.placement.tree.workload.Workload` (a job list read by
:meth:`~tjap.placement.tree.workload.Workload.from_file`, used as read: nothing rescaled).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, one_line_errors, parser
from tjap.api import solve
from tjap.cli.common import (
    add_common,
    add_executor_arguments,
    check_output,
    count,
    executor_from_args,
    positive,
    print_json,
)
from tjap.cli.tree import add_workload_options, read_workload, workload_fields
from tjap.core.errors import InvalidInputError
from tjap.core.executor import make_executor, sweep_rows
from tjap.core.report import format_table
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.stream import generate_windows
from tjap.placement.tree.window import Window
from tjap.placement.tree.workload import Workload

#: Layout and cost convention of each setting; its SA (and NSA) runs use the preset of its name.
SETTINGS = {
    "published": {"layout": "published", "convention": "published"},
    "paper": {"layout": "paper", "convention": "paper"},
}

#: "SA best": the best hand-written configuration found here (greedy repair, up to 5 jobs removed,
#: every job of a capped window, re-insertion largest first, T_max 25000), the library's default.
BEST_SA = {"preset": "best"}
#: The best loop with the hand-written look-ahead repair (tjap.heuristics.tree.operators.LookaheadRepair)
LOOKAHEAD_SA = {"preset": "best", "repair": "lookahead"}

#: The setting's LNS-500: descent from the SCAS optimum with the greedy repair, n^D = 2.
LNS = {"repair": "greedy", "max_remove": 2, "initial": "auto"}

#: Table III of the paper (published setting), averages over 10 epochs.
PAPER_TABLE3 = {
    "seq": 105023.5,
    "sa500": 91813.2,
    "sa1000": 90809.7,
    "nsa500": 89588.7,
    "sa500_s": 0.76,
    "sa1000_s": 1.55,
}


def _windows(
    setting: str, epochs: int, windows_per_epoch: int, seed: int, workload: Workload | None = None
):
    s = SETTINGS[setting]
    return generate_windows(
        s["layout"],
        epochs * windows_per_epoch,
        seed,
        cap=5,
        epoch_windows=windows_per_epoch,
        convention=s["convention"],
        workload=workload,
    )


def table3(
    setting="published",
    epochs=10,
    windows_per_epoch=100,
    seed=0,
    freeform_time_limit_s=1.0,
    quiet=False,
    executor=None,
    workload: Workload | None = None,
    csv_path=None,
) -> dict:
    """Table III's methods on every window (:func:`table3_window`), one task per window. With
    ``csv_path`` the rows go to disk as they arrive, in NAME.partial.csv until the last one."""
    conv = SETTINGS[setting]["convention"]
    windows = _windows(setting, epochs, windows_per_epoch, seed, workload)
    solve(windows[0], "sa", preset=setting, iterations=1, convention=conv)  # compile first
    solve(windows[0], "sa", iterations=1, convention=conv, **BEST_SA)
    tasks = [(setting, w.to_dict(), seed, freeform_time_limit_s) for w in windows]
    rows = sweep_rows(
        executor or make_executor(1),
        table3_window,
        tasks,
        desc=f"table3/{setting}",
        quiet=quiet,
        csv_path=csv_path,
        lines=True,
    )
    names = list(_table3_runs(setting)) + ["freeform"]
    return {"setting": setting, "rows": rows, "epochs": _per_epoch(rows, names) if rows else []}


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
    row = {
        "epoch": w.meta["epoch"],
        "window": w.meta["index"],
        "idle": w.num_idle,
        "jobs": w.num_jobs,
    }
    results = {}
    for name, kw in _table3_runs(setting).items():
        kw = dict(kw)
        r = solve(w, kw.pop("method"), convention=conv, seed=seed, **kw)
        results[name] = r
        row[name] = r.objective
        row[f"{name}_s"] = r.runtime_s
    best_known = min(results.values(), key=lambda r: r.objective)
    ff = solve(
        w,
        "freeform",
        convention=conv,
        seed=seed,
        time_limit_s=freeform_time_limit_s,
        warm_start=best_known,
    )
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


def table4(
    setting="published",
    epochs=10,
    windows_per_epoch=100,
    seed=0,
    paper_windows=20,
    limit_s=30.0,
    quiet=False,
    executor=None,
    workload: Workload | None = None,
    csv_path=None,
) -> dict:
    """SCIP with no limit and with ``limit_s`` on the set-packing model (all windows) and the
    paper's formulation (the first ``paper_windows`` windows); one task per window. With
    ``csv_path`` the rows go to disk as they arrive, in NAME.partial.csv until the last one."""
    windows = _windows(setting, epochs, windows_per_epoch, seed, workload)
    tasks = [
        (setting, w.to_dict(), seed, limit_s, k < paper_windows) for k, w in enumerate(windows)
    ]
    rows = sweep_rows(
        executor or make_executor(1),
        table4_window,
        tasks,
        desc=f"table4/{setting}",
        quiet=quiet,
        csv_path=csv_path,
        lines=True,
    )
    return {"setting": setting, "rows": rows}


def table4_window(setting, w, seed, limit_s, with_paper) -> dict:
    """Table IV's SCIP runs on one window (a task of the sweep; the window as a dict): one row."""
    w = Window.from_dict(w)
    conv = SETTINGS[setting]["convention"]
    row = {"epoch": w.meta["epoch"], "window": w.meta["index"], "idle": w.num_idle}
    for name, method, limit in (("sp_nolimit", "scip", None), ("sp_limit", "scip", limit_s)):
        r = solve(w, method, convention=conv, time_limit_s=limit, seed=seed)
        row[name], row[f"{name}_s"], row[f"{name}_status"] = (
            r.objective,
            r.runtime_s,
            r.status.value,
        )
    if with_paper:
        r = solve(w, "scip-paper", convention=conv, time_limit_s=limit_s, seed=seed)
        row["paper_limit"], row["paper_limit_s"] = r.objective, r.runtime_s
        row["paper_limit_status"] = r.status.value
    return row


def print_table3(result: dict) -> str:
    cols = [
        ("epoch", ""),
        ("seq", ".1f"),
        ("sa500", ".1f"),
        ("sa500_ms", ".2f"),
        ("sa1000", ".1f"),
        ("sa1000_ms", ".2f"),
        ("sa1000_best", ".1f"),
        ("sa1000_best_ms", ".2f"),
        ("lns500", ".1f"),
        ("scas_opt", ".1f"),
        ("scas_opt_ms", ".2f"),
        ("freeform", ".1f"),
    ]
    return format_table(result["epochs"], cols)


def _nsa_equal_iteration_runs(setting: str) -> dict:
    """The NSA table's runs of fixed iterations beside NSA-500: Seq, SA-500 and SA-1000 with
    the paper's repair in the setting's loop, the best SA and the look-ahead SA with 500, and
    the SCAS optimum."""
    paper_sa = {"preset": setting}  # the paper's repair, in the setting's loop
    return {
        "seq": dict(method="seq"),
        "sa500": dict(method="sa", iterations=500, **paper_sa),
        "sa1000": dict(method="sa", iterations=1000, **paper_sa),
        "sa500_best": dict(method="sa", iterations=500, **BEST_SA),
        "sa500_lookahead": dict(method="sa", iterations=500, **LOOKAHEAD_SA),
        "scas_opt": dict(method="dp"),
    }


def default_sa_preset() -> str:
    """The preset ``tjap.solve(window, "sa")`` runs when none is given."""
    import inspect

    from tjap.heuristics.tree.anneal import solve_sa

    return inspect.signature(solve_sa).parameters["preset"].default


def _nsa_same_time_runs(setting: str) -> dict:
    """The SA configurations given NSA's time: the library's default SA (``tjap.solve(w,
    "sa")``, no preset), the best hand-written SA where that is not the default, the best
    loop with the hand-written look-ahead repair, and SA with the paper's repair in the
    setting's loop."""
    runs = {"sa_default_same_time": {}}
    if default_sa_preset() != BEST_SA["preset"]:
        runs["sa_best_same_time"] = dict(BEST_SA)
    runs["sa_lookahead_same_time"] = dict(LOOKAHEAD_SA)
    runs["sa_paper_same_time"] = {"preset": setting}
    return runs


def nsa_columns(setting: str = "published") -> list[str]:
    """The cost columns of :func:`nsa_table`'s rows, NSA's first."""
    return ["nsa500", *_nsa_equal_iteration_runs(setting), *_nsa_same_time_runs(setting)]


#: Clocks an equal-time budget can be measured on: ``cpu``, the CPU time of this thread over the
#: whole solve call (on a dedicated core the same as its wall time, and not inflated when other
#: processes share the cores); ``wall``, the solver's own wall time (``Result.runtime_s``).
CLOCKS = ("cpu", "wall")
#: Equal time: a pilot run of this many iterations...
PILOT_ITERATIONS = 500
#: ...sizes a calibration run to about this share of NSA's time; the two give SA's time per
#: iteration and its fixed time (set-up, initial solution, result) on the window.
CALIBRATION_SHARE = 0.25


def same_time_iterations(budget_s: float, per_iteration_s: float, fixed_s: float = 0.0) -> int:
    """The iterations that fit ``budget_s`` at ``per_iteration_s`` each after ``fixed_s``:
    max(1, floor((budget - fixed) / per iteration))."""
    return max(1, math.floor((budget_s - fixed_s) / max(per_iteration_s, 1e-12)))


def iteration_cost(short: tuple[int, float], long: tuple[int, float]) -> tuple[float, float]:
    """(seconds per iteration, fixed seconds) of a run, from two timed runs (iterations,
    seconds): the slope and intercept through them when the longer one has at least twice the
    iterations and took longer; otherwise the longer one's time per iteration and no fixed
    time (which errs on the side of fewer iterations)."""
    (n0, t0), (n1, t1) = sorted((short, long))
    if n1 >= 2 * n0 and t1 > t0:
        per_iteration = (t1 - t0) / (n1 - n0)
        return per_iteration, max(0.0, t0 - n0 * per_iteration)
    return t1 / n1, 0.0


def timed_solve(w: Window, method: str, **options):
    """``tjap.solve(w, method, **options)`` and its times: {"cpu": this thread's CPU time over
    the call, "wall": the solver's ``runtime_s``} (see :data:`CLOCKS`)."""
    start = time.thread_time()
    r = solve(w, method, **options)
    return r, {"cpu": time.thread_time() - start, "wall": r.runtime_s}


def sa_for_time(w: Window, budget_s: float, options: dict, common: dict, clock: str = "cpu"):
    """SA with ``options`` given as many iterations as fit in ``budget_s`` (on ``clock``) on
    window ``w``.

    Its cost is measured on this window: a pilot run of :data:`PILOT_ITERATIONS`, then (when
    the budget allows at least twice as many) a run sized to :data:`CALIBRATION_SHARE` of the
    budget at the pilot's rate; :func:`iteration_cost` of the two gives the time per iteration
    and the fixed time, and the final run gets :func:`same_time_iterations` of the budget and
    no time limit, so its cooling schedule spans all its iterations. Returns (result, its
    times, seconds per iteration, fixed seconds, the calibration's iterations)."""
    if clock not in CLOCKS:
        raise InvalidInputError(f"clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    pilot = (
        PILOT_ITERATIONS,
        timed_solve(w, "sa", iterations=PILOT_ITERATIONS, **options, **common)[1][clock],
    )
    calibration = pilot
    n = same_time_iterations(CALIBRATION_SHARE * budget_s, pilot[1] / PILOT_ITERATIONS)
    if n >= 2 * PILOT_ITERATIONS:
        calibration = (n, timed_solve(w, "sa", iterations=n, **options, **common)[1][clock])
    per_iteration, fixed = iteration_cost(pilot, calibration)
    r, times = timed_solve(
        w,
        "sa",
        iterations=same_time_iterations(budget_s, per_iteration, fixed),
        **options,
        **common,
    )
    return r, times, per_iteration, fixed, calibration[0]


def nsa_table(
    setting="published",
    weights=None,
    epochs=10,
    windows_per_epoch=100,
    seed=0,
    quiet=False,
    executor=None,
    workload: Workload | None = None,
    preset=None,
    clock="cpu",
    csv_path=None,
    lookahead=None,
) -> dict:
    """NSA-500 against SA at equal iterations and at equal time, window by window, with the
    SCAS optimum beside them.

    One task per window (so the equal-time budgets are measured on the core, and under the
    load, of the runs they bound). Columns (:func:`nsa_columns`), each with its ``_s`` (the
    solver's wall time), ``_cpu_s`` (CPU time of the call) and ``_iterations``:

    - ``nsa500``: NSA, 500 iterations, ``weights``, the loop of ``preset`` (default: the
      setting's) and its ``lookahead`` (default: the preset's, :data:`tjap.learned.tree.policy.NSA_LOOKAHEAD`);
    - ``seq``, ``scas_opt`` (dp);
    - ``sa500``, ``sa1000``: SA with the paper's repair in the setting's loop (the paper's
      comparison); ``sa500_best``: the best hand-written SA (:data:`BEST_SA`), 500 iterations;
      ``sa500_lookahead``: its loop with the look-ahead repair (:data:`LOOKAHEAD_SA`);
    - ``sa_default_same_time`` (``tjap.solve(w, "sa")``'s defaults), ``sa_best_same_time``
      (only where the default is not the best), ``sa_lookahead_same_time``,
      ``sa_paper_same_time``: SA given as many
      iterations as fit in NSA's time on ``clock`` on that window (:func:`sa_for_time`), each
      with ``_per_iteration_us``, ``_fixed_ms``, ``_calibration_iterations`` and its time over
      NSA's on each clock, ``_cpu_ratio`` and ``_wall_ratio`` (about 1 when the budget was met).

    With ``csv_path`` the rows go to disk as they arrive, in NAME.partial.csv until the last
    one (an interrupted run leaves that file, every row in it complete). Returns the rows, the
    per-epoch means and :func:`nsa_summary`."""
    if clock not in CLOCKS:
        raise InvalidInputError(f"clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    conv = SETTINGS[setting]["convention"]
    preset = preset or setting
    windows = _windows(setting, epochs, windows_per_epoch, seed, workload)
    # compile first (and fail here, in one line, on bad weights or preset)
    solve(
        windows[0],
        "nsa",
        preset=preset,
        iterations=1,
        weights=weights,
        convention=conv,
        seed=seed,
        lookahead=lookahead,
    )
    for options in (*_nsa_same_time_runs(setting).values(), BEST_SA):
        solve(windows[0], "sa", iterations=1, convention=conv, **options)
    tasks = [(setting, w.to_dict(), seed, weights, preset, clock, lookahead) for w in windows]
    rows = sweep_rows(
        executor or make_executor(1),
        nsa_window,
        tasks,
        desc=f"nsa/{setting}",
        quiet=quiet,
        csv_path=csv_path,
        lines=True,
    )
    names = nsa_columns(setting)
    return {
        "setting": setting,
        "preset": preset,
        "weights": weights,
        "seed": seed,
        "clock": clock,
        "rows": rows,
        "epochs": _per_epoch(rows, names) if rows else [],
        "summary": nsa_summary(rows, names),
    }


def nsa_window(setting, w, seed, weights, preset=None, clock="cpu", lookahead=None) -> dict:
    """NSA-500 and its comparisons on one window (a task of the sweep; the window as a dict):
    one row (see :func:`nsa_table`)."""
    w = Window.from_dict(w)
    common = {"convention": SETTINGS[setting]["convention"], "seed": seed}
    row = {
        "epoch": w.meta["epoch"],
        "window": w.meta["index"],
        "idle": w.num_idle,
        "jobs": w.num_jobs,
        "seed": seed,
    }

    def record(name, r, times):
        row[name], row[f"{name}_iterations"] = r.objective, r.iterations
        row[f"{name}_s"], row[f"{name}_cpu_s"] = times["wall"], times["cpu"]

    nsa, nsa_times = timed_solve(
        w,
        "nsa",
        iterations=500,
        weights=weights,
        preset=preset or setting,
        lookahead=lookahead,
        **common,
    )
    record("nsa500", nsa, nsa_times)
    for name, kw in _nsa_equal_iteration_runs(setting).items():
        kw = dict(kw)
        record(name, *timed_solve(w, kw.pop("method"), **kw, **common))
    for name, options in _nsa_same_time_runs(setting).items():
        r, times, per_iteration, fixed, calibration = sa_for_time(
            w, nsa_times[clock], options, common, clock
        )
        record(name, r, times)
        row[f"{name}_per_iteration_us"] = 1e6 * per_iteration
        row[f"{name}_fixed_ms"] = 1e3 * fixed
        row[f"{name}_calibration_iterations"] = calibration
        for c in CLOCKS:
            row[f"{name}_{c}_ratio"] = times[c] / nsa_times[c]
    return row


def gain_interval(cost, nsa, z=1.96) -> tuple[float, float, float]:
    """(mean, low, high): the mean over windows of (cost - nsa) / cost in %, with a normal
    interval of ``z`` standard errors of the per-window differences (NaN wide for one window)."""
    cost, nsa = np.asarray(cost, float), np.asarray(nsa, float)
    d = 100 * (cost - nsa) / cost
    half = z * float(d.std(ddof=1)) / math.sqrt(len(d)) if len(d) > 1 else math.nan
    return float(d.mean()), float(d.mean()) - half, float(d.mean()) + half


def nsa_summary(rows: list[dict], names: list[str], reference="scas_opt", z=1.96) -> list[dict]:
    """Per column: mean cost, mean gap to ``reference`` (%), mean wall and CPU ms and mean
    iterations per window; for the equal-time columns their mean time over NSA's on each clock
    (``cpu_ratio``, ``wall_ratio``: ratios of the means); and NSA's gain over the column: the
    mean over windows of (column - nsa) / column in %, with a normal 95 % interval of that mean
    (``z`` standard errors of the per-window differences), and the shares of windows where NSA
    is better and worse."""
    if not rows:
        return []
    gap = gaps(rows, names, reference)
    nsa = np.array([r["nsa500"] for r in rows], float)

    def mean(key):
        return float(np.mean([r[key] for r in rows]))

    out = []
    for name in names:
        cost = np.array([r[name] for r in rows], float)
        iterations = [r[f"{name}_iterations"] for r in rows]
        entry = {
            "column": name,
            "mean_cost": float(cost.mean()),
            "gap_to_scas_pct": gap[name],
            "mean_ms": 1000 * mean(f"{name}_s"),
            "mean_cpu_ms": 1000 * mean(f"{name}_cpu_s"),
            "mean_iterations": None if None in iterations else float(np.mean(iterations)),
        }
        if f"{name}_cpu_ratio" in rows[0]:
            entry["cpu_ratio"] = mean(f"{name}_cpu_s") / mean("nsa500_cpu_s")
            entry["wall_ratio"] = mean(f"{name}_s") / mean("nsa500_s")
        if name != "nsa500":
            gain, low, high = gain_interval(cost, nsa, z)
            entry |= {
                "nsa_gain_pct": gain,
                "ci95_low": low,
                "ci95_high": high,
                "nsa_better_pct": 100 * float(np.mean(nsa < cost)),
                "nsa_worse_pct": 100 * float(np.mean(nsa > cost)),
            }
        out.append(entry)
    return out


def print_nsa_summary(summary: list[dict]) -> str:
    """:func:`nsa_summary` as a plain-text table, one line per column."""
    return format_table(
        summary,
        [
            ("column", ""),
            ("mean_cost", ".1f"),
            ("gap_to_scas_pct", "+.3f"),
            ("mean_ms", ".2f"),
            ("mean_cpu_ms", ".2f"),
            ("mean_iterations", ".0f"),
            ("cpu_ratio", ".3f"),
            ("wall_ratio", ".3f"),
            ("nsa_gain_pct", "+.3f"),
            ("ci95_low", "+.3f"),
            ("ci95_high", "+.3f"),
            ("nsa_better_pct", ".1f"),
            ("nsa_worse_pct", ".1f"),
        ],
    )


# -- the command line: python -m benchmarks.sa_tables table3|table4|nsa ----------------------------
def build_parser() -> argparse.ArgumentParser:
    """``table3``, ``table4`` and ``nsa``, each with its options."""
    p = parser("sa_tables", __doc__)
    tables = p.add_subparsers(dest="what", required=True, metavar="TABLE")
    for name, helptext in (
        ("table3", "seed 002 Table III: Seq and SA against the SCAS and free-form optima"),
        ("table4", "seed 002 Table IV: SCIP with and without a time limit, both formulations"),
        ("nsa", "NSA-500 against SA at equal iterations and at equal wall time"),
    ):
        b = tables.add_parser(name, help=helptext, description=helptext)
        b.add_argument(
            "--setting",
            choices=("published", "paper"),
            default="published",
            help="published: the authors' code (25x40 layout, published cost, T_max "
            "25000); paper: the paper's text (k=20, Eq. 1 cost, T_max 2500)",
        )
        b.add_argument(
            "--epochs",
            type=positive(int),
            default=10,
            help="epochs of the stream, each from an empty cluster at a random job (default 10)",
        )
        b.add_argument(
            "--windows-per-epoch",
            type=positive(int),
            default=100,
            metavar="N",
            help="windows per epoch (default 100)",
        )
        if name == "table3":
            b.add_argument(
                "--freeform-time-limit",
                type=positive(float),
                default=1.0,
                metavar="S",
                help="time limit of the free-form model per window, in seconds (default 1)",
            )
        if name == "nsa":
            b.add_argument(
                "--weights",
                default=None,
                metavar="JSON",
                help="NSA's policy (default: the shipped learned/weights/nsa_cnn3.json, "
                "trained in the published setting; with --preset best the "
                "setting's nsa_cnn3_best_<setting>.json)",
            )
            b.add_argument(
                "--preset",
                default=None,
                metavar="NAME",
                help="NSA's loop, a preset of tjap.learned.tree.policy.NSA_PRESETS (default: the "
                "setting's); the SA columns keep the setting's",
            )
            b.add_argument(
                "--lookahead",
                type=count,
                default=None,
                metavar="K",
                help="NSA scores its policy's K proposed starts with the later jobs "
                "placed greedily (default: the preset's: paper and published 0 "
                "= off, best 32)",
            )
            b.add_argument(
                "--clock",
                choices=CLOCKS,
                default="cpu",
                help="the clock NSA's time is measured on for the equal-time SA "
                "budgets: cpu (default), the CPU time of each solve call (on a "
                "dedicated core its wall time, and not inflated by other "
                "processes on the cores), or wall, the solver's wall time; "
                "both are recorded",
            )
        if name == "table4":
            b.add_argument(
                "--paper-windows",
                type=int,
                default=20,
                help="windows (the first ones) also solved with the paper's "
                "formulation (default 20)",
            )
            b.add_argument(
                "--limit",
                type=positive(float),
                default=30.0,
                metavar="S",
                help="the time limit of the limited SCIP runs, in seconds (default 30)",
            )
        add_workload_options(b)
        add_out(b, "CSV")
        add_common(b)
        add_executor_arguments(b, default_workers=1)  # rows carry solver times
    return p


@one_line_errors
def main(argv=None) -> int:
    """Run one table; print it (or its summary as JSON with ``--json``); returns the exit code."""
    args = build_parser().parse_args(argv)
    check_output(args.out, "--out", folder=True)  # before the work: a bad folder fails now
    out_dir = Path(args.out)
    layout = SETTINGS[args.setting]["layout"]
    workload, report = read_workload(args, FatTree.from_layout(layout).num_nodes)
    # a file workload's results are named after it, beside (never over) the generator's
    tag = f"_{Path(args.workload).stem}" if report is not None else ""
    run = {"table3": _run_table3, "table4": _run_table4, "nsa": _run_nsa}[args.what]
    text, summary = run(args, out_dir, tag, workload)
    summary |= workload_fields(args, report)
    if args.json:
        print_json(summary)
    else:
        where = report.summary() if report is not None else "the paper's generator"
        print(f"workload: {where}\n{text}")
    return 0


def _run_table3(args, out_dir: Path, tag: str, workload) -> tuple[str, dict]:
    csv_path = out_dir / f"table3_{args.setting}{tag}_s{args.seed}.csv"
    res = table3(
        args.setting,
        args.epochs,
        args.windows_per_epoch,
        args.seed,
        args.freeform_time_limit,
        quiet=args.quiet,
        executor=executor_from_args(args),
        workload=workload,
        csv_path=csv_path,
    )
    names = ["seq", "sa500", "sa1000", "sa1000_best", "lns500", "freeform"]
    summary = {
        "setting": args.setting,
        "epochs": res["epochs"],
        "gap_to_scas_pct": gaps(res["rows"], names),
        "freeform_optimal_pct": 100 * float(np.mean([r["freeform_optimal"] for r in res["rows"]])),
        "csv": str(csv_path),
    }
    text = (
        print_table3(res)
        + "\ngap to the SCAS optimum (%): "
        + ", ".join(f"{k} {v:+.3f}" for k, v in summary["gap_to_scas_pct"].items())
    )
    text += f"\nfree-form proven optimal on {summary['freeform_optimal_pct']:.1f}% of windows"
    return text, summary


def _run_table4(args, out_dir: Path, tag: str, workload) -> tuple[str, dict]:
    csv_path = out_dir / f"table4_{args.setting}{tag}_s{args.seed}.csv"
    res = table4(
        args.setting,
        args.epochs,
        args.windows_per_epoch,
        args.seed,
        args.paper_windows,
        args.limit,
        quiet=args.quiet,
        executor=executor_from_args(args),
        workload=workload,
        csv_path=csv_path,
    )
    rows = res["rows"]
    paper = [r for r in rows if "paper_limit" in r]
    ratio = [r["paper_limit_s"] / r["sp_nolimit_s"] for r in paper]
    summary = {
        "setting": args.setting,
        "windows": len(rows),
        "set_packing_mean_s": float(np.mean([r["sp_nolimit_s"] for r in rows])),
        "set_packing_median_s": float(np.median([r["sp_nolimit_s"] for r in rows])),
        "set_packing_max_s": float(np.max([r["sp_nolimit_s"] for r in rows])),
        "set_packing_optimal_pct": 100
        * float(np.mean([r["sp_nolimit_status"] == "OPTIMAL" for r in rows])),
        "paper_windows": len(paper),
        "paper_mean_s": float(np.mean([r["paper_limit_s"] for r in paper])) if paper else None,
        "paper_timeouts": sum(r["paper_limit_status"] != "OPTIMAL" for r in paper),
        "paper_over_set_packing_median": float(np.median(ratio)) if ratio else None,
        "csv": str(csv_path),
    }
    return "\n".join(f"{k}: {v}" for k, v in summary.items()), summary


def _run_nsa(args, out_dir: Path, tag: str, workload) -> tuple[str, dict]:
    """Rows to NAME.csv as they arrive (NAME.partial.csv until the last), the summary to
    NAME.json; returns the printed text and the summary."""
    from tjap.core.result import plain
    from tjap.learned.tree.policy import default_weights, preset_lookahead

    preset = args.preset or args.setting
    name = f"nsa_{args.setting}{tag}"
    if args.weights:
        name += f"_{Path(args.weights).stem}"
    if preset != args.setting:
        name += f"_{preset}-loop"
    if args.lookahead is not None:
        name += f"_la{args.lookahead}"
    if args.clock != "cpu":
        name += f"_{args.clock}-clock"
    name += f"_s{args.seed}"
    res = nsa_table(
        args.setting,
        args.weights,
        args.epochs,
        args.windows_per_epoch,
        args.seed,
        quiet=args.quiet,
        executor=executor_from_args(args),
        workload=workload,
        preset=preset,
        clock=args.clock,
        csv_path=out_dir / f"{name}.csv",
        lookahead=args.lookahead,
    )
    default = default_sa_preset()
    conv = SETTINGS[args.setting]["convention"]
    weights = args.weights or f"learned/weights/{default_weights(preset, conv).name}"
    summary = {
        "setting": args.setting,
        "nsa_preset": preset,
        "nsa_lookahead": preset_lookahead(preset, args.lookahead),
        "clock": args.clock,
        "weights": weights,
        "seed": args.seed,
        "windows": len(res["rows"]),
        "default_sa_preset": default,
        "summary": res["summary"],
        "epochs": res["epochs"],
        "csv": str(out_dir / f"{name}.csv"),
        "json": str(out_dir / f"{name}.json"),
    }
    Path(summary["json"]).write_text(json.dumps(plain(summary), indent=2, allow_nan=False) + "\n")
    text = (
        print_nsa_summary(res["summary"])
        + f"\nnsa_gain_pct: mean over windows of (column - nsa500) / column, with its 95 % "
        f"interval; the *_same_time columns ran as many iterations as fit in NSA's time "
        f"({args.clock} clock) on each window (cpu_ratio, wall_ratio: their mean time over "
        f"NSA's); sa_default is preset {default!r}\nfiles: {summary['csv']}, {summary['json']}"
    )
    return text, summary


if __name__ == "__main__":
    raise SystemExit(main())
