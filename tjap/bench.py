"""``tjap bench exact``: the exact SCAS solvers on the paper's window stream, or on a user's own
cluster: dp against SCIP and CP-SAT, the paper's weak formulation, and the free-form optimum as
the bound on every contiguity strategy.

    tjap bench exact --num-windows 200 --seed 0 --layout paper
    tjap bench exact --topology benchmarks/topologies/irregular_2000.conf --num-windows 100
    tjap bench exact --topology blocks.conf --constraints mix --num-windows 50 --time-limit 30

The paper reproductions and the project's studies are no ``tjap`` command: they live in the
repository's ``benchmarks/`` folder, each run as ``python -m benchmarks.NAME`` from a clone.

With ``--topology FILE`` (a Slurm topology.conf or JSON tree) the windows are the paper's stream on
that cluster (:func:`tjap.placement.tree.stream.generate_windows`), and the methods are dp, SCIP set
packing, Slurm's own choice (``slurm-tree``) and a lower bound (the free-form model's, or with
``--bound per-job`` each job's best node set alone, which is all a 27,648-node tree affords;
``above_bound_pct`` is each method's mean distance above it); dp's peak memory per window
(tracemalloc, measured in a separate untimed call) and the process's peak RSS are reported.

With ``--topology FILE --constraints MIX`` the windows carry job constraints (segment, within,
exclusive) on a loaded, fragmented cluster
(:func:`tjap.placement.tree.block_windows.constrained_windows`); the methods are dp, SCIP,
CP-SAT, the free-form bound and the schedulers' own rules (:data:`ANCHORS`), each where it is
registered for constraints (:func:`run_constrained`), with the whole idle base blocks each leaves,
the windows where it left a job unplaced and the jobs whose constraints it broke.

Prints one row per method, writes per-window CSV and a summary CSV, and a PNG of time against the
number of idle nodes. All methods run on the same windows in one run; speed is reported as the
median over windows of (SCIP time / method time), so the machine's noise cancels.
"""

from __future__ import annotations

import re
import resource
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from tjap.api import solve
from tjap.core.errors import InvalidInputError
from tjap.core.executor import make_executor, sweep_rows
from tjap.core.report import format_table, pyplot, save_figure, write_csv
from tjap.placement.tree.arcs import violations
from tjap.placement.tree.block_windows import ConstraintMix, constrained_windows, job_kind
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.freeform import best_single_job_nodes
from tjap.placement.tree.result import objective_of
from tjap.placement.tree.stream import generate_windows
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window
from tjap.placement.tree.workload import Workload
from tjap.registry import get as get_method
from tjap.registry import methods as registered_methods

EXACT_METHODS = ("scip", "cpsat", "dp")


def solve_window(w, seed, convention, freeform_time_limit_s, paper_time_limit_s) -> list[dict]:
    """Every exact method on one window (a task of the sweep; the window as a dict);
    ``paper_time_limit_s`` None skips the paper's formulation. One row per method."""
    w = Window.from_dict(w)
    base = {
        "epoch": w.meta["epoch"],
        "window": w.meta["index"],
        "idle_nodes": w.num_idle,
        "jobs": w.num_jobs,
    }
    by_method = {}
    for method in EXACT_METHODS:
        by_method[method] = solve(w, method, seed=seed, convention=convention)
    by_method["freeform"] = solve(
        w,
        "freeform",
        seed=seed,
        convention=convention,
        time_limit_s=freeform_time_limit_s,
        warm_start=by_method["dp"],
    )
    if paper_time_limit_s is not None:
        by_method["scip-paper"] = solve(
            w, "scip-paper", seed=seed, convention=convention, time_limit_s=paper_time_limit_s
        )
    return [
        {
            **base,
            "method": method,
            "status": r.status.value,
            "objective": r.objective,
            "bound": r.bound,
            "runtime_s": r.runtime_s,
            "scip_runtime_s": by_method["scip"].runtime_s,
            "scip_objective": by_method["scip"].objective,
            "scip_optimal": by_method["scip"].status.value == "OPTIMAL",
            "scas_optimum": by_method["dp"].objective,
        }
        for method, r in by_method.items()
    ]


TOPOLOGY_METHODS = ("scip", "dp", "slurm-tree")


def solve_tree_window(
    w, topology_path, seed, convention, freeform_time_limit_s, bound="freeform"
) -> list[dict]:
    """dp, SCIP, slurm-tree and a lower bound on one window of a user's tree (a task of the
    sweep: the window's idle nodes and jobs, the tree read once per process from its file).

    The lower bound is the larger of the per-job bound (each job's best node set with the others
    ignored: :func:`~tjap.placement.tree.freeform.best_single_job_nodes`, milliseconds) and, with
    ``bound="freeform"``, the free-form model's bound (whose model grows with the idle leaves:
    minutes to build on a 27,648-node tree)."""
    w = _tree_window(w, topology_path)
    base = {
        "epoch": w.meta["epoch"],
        "window": w.meta["index"],
        "idle_nodes": w.num_idle,
        "jobs": w.num_jobs,
    }
    by_method = {m: solve(w, m, seed=seed, convention=convention) for m in TOPOLOGY_METHODS}
    lower = sum(
        job_cost(w.topology, best_single_job_nodes(w.topology, w.idle_nodes, n), convention)
        for n in w.job_sizes
    )
    if bound == "freeform":
        free = by_method["freeform"] = solve(
            w,
            "freeform",
            seed=seed,
            convention=convention,
            time_limit_s=freeform_time_limit_s,
            warm_start=by_method["dp"],
        )
        lower = max(lower, free.bound if free.bound is not None else free.objective)
    tracemalloc.start()
    solve(w, "dp", seed=seed, convention=convention)
    dp_peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return [
        {
            **base,
            "method": method,
            "status": r.status.value,
            "objective": r.objective,
            "bound": r.bound,
            "runtime_s": r.runtime_s,
            "scip_runtime_s": by_method["scip"].runtime_s,
            "scip_objective": by_method["scip"].objective,
            "scip_optimal": by_method["scip"].status.value == "OPTIMAL",
            "scas_optimum": by_method["dp"].objective,
            "lower_bound": lower,
            "peak_mb": dp_peak_mb if method == "dp" else None,
        }
        for method, r in by_method.items()
    ]


#: The methods ``tjap bench exact --constraints`` compares, in this order (dp first: the others
#: are measured against it; freeform is warm-started from it), each when it is registered and
#: takes job constraints.
CONSTRAINED_METHODS = ("dp", "scip", "cpsat", "freeform")
#: What schedulers themselves would do: Slurm's topology/block selection and Kueue's
#: topology-aware placements, compared when registered.
ANCHORS = ("slurm-block", "kueue-bestfit", "kueue-leastfree")


def constrained_methods(names) -> tuple[list[str], list[str]]:
    """The methods of ``names`` that can run on windows with job constraints (registered,
    taking constraints, installed), and one note for each that cannot, saying why."""
    registered = set(registered_methods("tree"))
    run, notes = [], []
    for name in names:
        entry = get_method("tree", name) if name in registered else None
        if entry is None:
            notes.append(f"{name}: not compared (no such method in this version)")
        elif not entry.constraints:
            notes.append(f"{name}: not compared (it does not take job constraints yet)")
        elif not entry.is_available():
            notes.append(f"{name}: not compared (needs {', '.join(entry.missing())})")
        else:
            run.append(name)
    if run[:2] != ["dp", "scip"]:
        raise InvalidInputError(
            "the constrained benchmark needs dp and SCIP (pip install "
            "pyscipopt); every other method is measured against them"
        )
    return run, notes


#: Constraints a method may refuse as beyond what its scheduler can express, and their values
#: when dropped (:func:`solve_as_asked`).
DROPPABLE: dict[str, Any] = {"within": None, "prefer": None, "exclusive": None, "slurm_rule": False}


def solve_as_asked(window: Window, method: str, **options):
    """``method`` on ``window``; where it refuses a job's constraint that its scheduler cannot
    express (``within`` for Slurm's block plugin, ``exclusive`` for Kueue: its one-line error
    names the job and the constraint), the job is asked without it, as that scheduler's user
    would have to, and the window solved again. Returns the Result (of the window as asked:
    judge its placement against ``window``) and the constraints dropped (``"jobs[J].KEY"``)."""
    jobs = list(window.jobs)
    dropped: list[str] = []
    while True:
        asked = (
            window
            if not dropped
            else Window(window.topology, window.idle_nodes, jobs, dict(window.meta))
        )
        try:
            return solve(asked, method, **options), dropped
        except InvalidInputError as exc:
            found = re.match(r"jobs\[(\d+)\]: ", str(exc))
            if found is None:
                raise
            job = jobs[int(found.group(1))]
            key = next(
                (k for k in DROPPABLE if f"'{k}'" in str(exc) and getattr(job, k) != DROPPABLE[k]),
                None,
            )
            if key is None:
                raise
            jobs[int(found.group(1))] = replace(job, **{key: DROPPABLE[key]})
            dropped.append(f"jobs[{found.group(1)}].{key}")


def _broken_jobs(window: Window, assignment) -> int:
    """How many jobs of ``assignment`` (possibly partial: the jobs placed) break one of their
    constraints."""
    lines = violations(window, assignment)
    return len({line.split(":", 1)[0] for line in lines})


def solve_constrained_window(
    w, topology_path, seed, convention, names, time_limit_s, freeform_time_limit_s
) -> list[dict]:
    """Every method of ``names`` (dp and scip first) on one window with job constraints (a task
    of the sweep), each through :func:`solve_as_asked`. Besides cost (``objective``, of the
    window's own constraints) and time, each row says whether the method placed every job
    (``placed``; else ``unplaced_jobs``), the constraints it was asked without
    (``asked_without``), how many jobs break a constraint of the window (``broken_jobs``; dp's
    never do) and the whole idle base blocks left after it (``free_blocks``:
    :meth:`Result.free_blocks`)."""
    w = _tree_window(w, topology_path)
    base = {
        "epoch": w.meta.get("epoch", 0),
        "window": w.meta["index"],
        "idle_nodes": w.num_idle,
        "jobs": w.num_jobs,
        "kinds": "+".join(job_kind(job) for job in w.jobs),
    }
    by_method: dict[str, Any] = {}
    dropped: dict[str, list[str]] = {}
    for name in names:
        options = {}
        if name in ("scip", "cpsat"):
            options["time_limit_s"] = time_limit_s
        elif name == "freeform":
            options["time_limit_s"] = freeform_time_limit_s
            if by_method["dp"].has_solution:
                options["warm_start"] = by_method["dp"]
        by_method[name], dropped[name] = solve_as_asked(
            w, name, seed=seed, convention=convention, **options
        )
    tracemalloc.start()
    solve(w, "dp", seed=seed, convention=convention)
    dp_peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    scip, dp = by_method["scip"], by_method["dp"]
    rows = []
    for method, r in by_method.items():
        unplaced = r.info.get("unplaced", range(w.num_jobs)) if not r.has_solution else ()
        rows.append(
            {
                **base,
                "method": method,
                "status": r.status.value,
                "objective": objective_of(w, r.assignment, convention)
                if r.has_solution
                else float("nan"),
                "bound": r.bound,
                "runtime_s": r.runtime_s,
                "placed": r.has_solution,
                "unplaced_jobs": len(unplaced),
                "asked_without": " ".join(dropped[method]),
                "broken_jobs": _broken_jobs(w, r.assignment),
                "free_blocks": r.free_blocks(1) if r.has_solution else None,
                "scip_runtime_s": scip.runtime_s,
                "scip_objective": scip.objective,
                "scip_optimal": scip.status.value == "OPTIMAL",
                "scas_optimum": dp.objective,
                "peak_mb": dp_peak_mb if method == "dp" else None,
            }
        )
    return rows


_TREES: dict = {}


def _tree_window(w: dict, topology_path: str) -> Window:
    tree = _TREES.get(topology_path)
    if tree is None:
        tree = _TREES[topology_path] = Topology.from_file(topology_path)
    jobs: Any = w.get("jobs", w.get("job_sizes"))  # JSON as read: Window checks it
    return Window(tree, w["idle_nodes"], jobs, w.get("meta"))


def run_constrained(
    path,
    num_windows=100,
    seed=0,
    *,
    convention="paper",
    cap=5,
    mix=None,
    methods=None,
    time_limit_s=None,
    freeform_time_limit_s=2.0,
    quiet=False,
    executor=None,
    csv_path=None,
) -> dict:
    """Windows with job constraints on the tree in ``path``
    (:func:`~tjap.placement.tree.block_windows.constrained_windows`, the kinds of ``mix``): the
    ``methods`` that take constraints (default :data:`CONSTRAINED_METHODS` and
    :data:`ANCHORS`; see :func:`constrained_methods`) on every window, one task per window.
    ``time_limit_s`` limits SCIP and CP-SAT, ``freeform_time_limit_s`` the free-form bound.
    Returns the per-window rows, the summary and ``notes`` on the methods not compared."""
    path = str(Path(path).resolve())
    tree = _TREES[path] = Topology.from_file(path)
    mix = ConstraintMix() if mix is None else mix
    names, notes = constrained_methods(methods or CONSTRAINED_METHODS + ANCHORS)
    windows = constrained_windows(tree, num_windows, seed, cap=cap, mix=mix)
    for name in names:  # imports and compiled kernels first, untimed
        solve_as_asked(
            windows[0],
            name,
            convention=convention,
            **({"time_limit_s": 1.0} if get_method("tree", name).time_limited else {}),
        )
    tasks = [
        (
            {
                "idle_nodes": w.idle_nodes.tolist(),
                "jobs": [job.to_value() for job in w.jobs],
                "meta": dict(w.meta),
            },
            path,
            seed,
            convention,
            tuple(names),
            time_limit_s,
            freeform_time_limit_s,
        )
        for w in windows
    ]
    rows = sweep_rows(
        executor or make_executor(1),
        solve_constrained_window,
        tasks,
        desc=f"constrained/{Path(path).name}",
        quiet=quiet,
        csv_path=csv_path,
        many=True,
    )
    return {
        "rows": rows,
        "summary": summarize(rows),
        "layout": Path(path).name,
        "topology": path,
        "nodes": tree.num_nodes,
        "seed": seed,
        "convention": convention,
        "num_windows": len(windows),
        "cap": cap,
        "mix": mix.shares(),
        "methods": names,
        "notes": notes,
        "constrained": True,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_topology(
    path,
    num_windows=100,
    seed=0,
    *,
    convention="paper",
    cap=5,
    tau_s=60,
    warmup_windows=None,
    freeform_time_limit_s=2.0,
    bound="freeform",
    quiet=False,
    executor=None,
    csv_path=None,
    workload: Workload | None = None,
) -> dict:
    """The paper's stream on the tree in ``path``: dp, SCIP, slurm-tree and a lower bound
    (``bound``: "freeform" or "per-job", see :func:`solve_tree_window`) on every window (one
    task per window); per-window rows and summary. ``workload`` replaces the generator's jobs
    (used as read: nothing rescaled)."""
    if bound not in ("freeform", "per-job"):
        raise InvalidInputError(f"bound must be 'freeform' or 'per-job', got {bound!r}")
    path = str(Path(path).resolve())
    tree = _TREES[path] = Topology.from_file(path)
    windows = generate_windows(
        topology=tree,
        num_windows=num_windows,
        seed=seed,
        cap=cap,
        tau_s=tau_s,
        epoch_windows=num_windows,
        warmup_windows=warmup_windows,
        convention=convention,
        workload=workload,
    )
    solve(windows[0], "dp", convention=convention)  # compile (or load) the Numba kernels first
    tasks = [
        (
            {
                "idle_nodes": w.idle_nodes.tolist(),
                "job_sizes": list(w.job_sizes),
                "meta": dict(w.meta),
            },
            path,
            seed,
            convention,
            freeform_time_limit_s,
            bound,
        )
        for w in windows
    ]
    rows = sweep_rows(
        executor or make_executor(1),
        solve_tree_window,
        tasks,
        desc=f"exact/{Path(path).name}",
        quiet=quiet,
        csv_path=csv_path,
        many=True,
    )
    return {
        "rows": rows,
        "summary": summarize(rows),
        "layout": Path(path).name,
        "topology": path,
        "nodes": tree.num_nodes,
        "seed": seed,
        "convention": convention,
        "num_windows": len(windows),
        "cap": cap,
        "bound": bound,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run(
    layout="paper",
    num_windows=200,
    seed=0,
    *,
    convention="paper",
    cap=5,
    freeform_time_limit_s=2.0,
    paper_windows=20,
    paper_time_limit_s=10.0,
    quiet=False,
    executor=None,
    csv_path=None,
    workload: Workload | None = None,
) -> dict:
    """Solve the stream's windows with every exact method (one task per window on ``executor``,
    default serial; the paper's formulation on the first ``paper_windows``); return per-window
    rows and summary (with ``csv_path``, the rows are appended there as they arrive). Times are
    per task, so on a pool each method of a window shares a core's
    conditions with the SCIP run it is compared to. ``workload`` replaces the generator's jobs
    (used as read: nothing rescaled)."""
    windows = generate_windows(
        layout, num_windows, seed, cap=cap, convention=convention, workload=workload
    )
    solve(windows[0], "dp", convention=convention)  # compile (or load) the Numba kernels first
    tasks = [
        (
            w.to_dict(),
            seed,
            convention,
            freeform_time_limit_s,
            paper_time_limit_s if k < paper_windows else None,
        )
        for k, w in enumerate(windows)
    ]
    rows = sweep_rows(
        executor or make_executor(1),
        solve_window,
        tasks,
        desc=f"exact/{layout}",
        quiet=quiet,
        csv_path=csv_path,
        many=True,
    )
    return {
        "rows": rows,
        "summary": summarize(rows),
        "layout": layout,
        "seed": seed,
        "convention": convention,
        "num_windows": len(windows),
        "cap": cap,
    }


def summarize(rows: list[dict]) -> list[dict]:
    out = []
    for method in dict.fromkeys(r["method"] for r in rows):
        rs = [r for r in rows if r["method"] == method]
        t = np.array([r["runtime_s"] for r in rs])
        speedup = np.array([r["scip_runtime_s"] / max(r["runtime_s"], 1e-9) for r in rs])
        # a TIME_LIMIT row holds the best solution found (never worse than seq) and counts
        solved = [
            r
            for r in rs
            if r["status"] in ("OPTIMAL", "FEASIBLE", "TIME_LIMIT")
            and r["objective"] is not None
            and np.isfinite(r["objective"])
        ]
        agree = [r for r in solved if r["scip_optimal"]]
        same = sum(
            abs(r["objective"] - r["scip_objective"]) <= 1e-6 * max(1.0, abs(r["scip_objective"]))
            for r in agree
        )
        gap = [(r["scas_optimum"] - r["objective"]) / r["scas_optimum"] for r in solved]
        bound_gap = [
            (r["objective"] - r["bound"]) / r["objective"] for r in solved if r["bound"] is not None
        ]
        above_bound = [
            (r["objective"] - r["lower_bound"]) / r["lower_bound"]
            for r in solved
            if r.get("lower_bound")
        ]
        peaks = [r["peak_mb"] for r in rs if r.get("peak_mb") is not None]
        out.append(
            {
                "method": method,
                "windows": len(rs),
                "mean_s": float(t.mean()),
                "median_s": float(np.median(t)),
                "max_s": float(t.max()),
                "scip_over_method": float(np.median(speedup)),
                "method_over_scip": float(np.median(1.0 / speedup)),
                "optimal_pct": 100.0 * sum(r["status"] == "OPTIMAL" for r in rs) / len(rs),
                "same_as_scip_pct": 100.0 * same / len(agree) if agree else None,
                "mean_objective": float(np.mean([r["objective"] for r in solved]))
                if solved
                else None,
                "below_scas_pct": 100.0 * float(np.mean(gap)) if gap else None,
                "max_bound_gap_pct": 100.0 * float(max(bound_gap)) if bound_gap else None,
            }
        )
        if any("lower_bound" in r for r in rs):
            out[-1]["above_bound_pct"] = (
                100.0 * float(np.mean(above_bound)) if above_bound else None
            )
            out[-1]["peak_mb"] = float(max(peaks)) if peaks else None
        if any("placed" in r for r in rs):
            out[-1].update(_constrained_summary(rows, rs, peaks))
    return out


def _constrained_summary(rows: list[dict], rs: list[dict], peaks: list) -> dict:
    """The columns of windows with job constraints for one method's rows ``rs``: on the windows
    where every method placed every job (``all_place``), the mean of objective / dp's
    (``cost_vs_dp``), of its proven bound / dp's objective where it has one (``bound_vs_dp``)
    and of the whole idle base blocks left (``free_blocks``); over all windows,
    those it was asked without a constraint it cannot express (``asked_without``), those where
    it left a job unplaced and the jobs left, the jobs whose constraints it broke, and its runs
    cut short by a time limit."""
    key = lambda r: (r["epoch"], r["window"])  # noqa: E731
    unplaced = {key(r) for r in rows if not r["placed"]}
    common = [r for r in rs if key(r) not in unplaced]
    bounds = [r["bound"] / r["scas_optimum"] for r in common if r["bound"] is not None]
    return {
        "all_place": len(common),
        "asked_without": sum(bool(r["asked_without"]) for r in rs),
        "cost_vs_dp": float(np.mean([r["objective"] / r["scas_optimum"] for r in common]))
        if common
        else None,
        "free_blocks": float(np.mean([r["free_blocks"] for r in common])) if common else None,
        "bound_vs_dp": float(np.mean(bounds)) if bounds else None,
        "unplaced_windows": sum(not r["placed"] for r in rs),
        "unplaced_jobs": sum(r["unplaced_jobs"] for r in rs),
        "broken_jobs": sum(r["broken_jobs"] for r in rs),
        "cut_short": sum(r["status"] == "TIME_LIMIT" for r in rs),
        "peak_mb": float(max(peaks)) if peaks else None,
    }


COLUMNS = [
    ("method", ""),
    ("windows", "d"),
    ("mean_s", ".4f"),
    ("median_s", ".4f"),
    ("max_s", ".4f"),
    ("scip_over_method", ".1f"),
    ("method_over_scip", ".1f"),
    ("optimal_pct", ".1f"),
    ("same_as_scip_pct", ".1f"),
    ("mean_objective", ".1f"),
    ("below_scas_pct", ".3f"),
    ("max_bound_gap_pct", ".3f"),
]


TOPOLOGY_COLUMNS = [c for c in COLUMNS if c[0] not in ("method_over_scip", "max_bound_gap_pct")] + [
    ("above_bound_pct", ".3f"),
    ("peak_mb", ".2f"),
]

#: The table of ``--constraints``: speed against SCIP, optimality, and (on the windows every
#: method places) cost relative to dp and whole idle base blocks left; windows asked without a
#: constraint the method cannot express, windows and jobs left unplaced, jobs with a broken
#: constraint, runs cut short by the time limit.
CONSTRAINED_COLUMNS = [
    ("method", ""),
    ("windows", "d"),
    ("median_s", ".4f"),
    ("max_s", ".4f"),
    ("scip_over_method", ".1f"),
    ("optimal_pct", ".1f"),
    ("cut_short", "d"),
    ("same_as_scip_pct", ".1f"),
    ("all_place", "d"),
    ("cost_vs_dp", ".4f"),
    ("bound_vs_dp", ".4f"),
    ("free_blocks", ".2f"),
    ("asked_without", "d"),
    ("unplaced_windows", "d"),
    ("unplaced_jobs", "d"),
    ("broken_jobs", "d"),
    ("peak_mb", ".2f"),
]


def _stem(layout, convention, seed, workload_file=None, constrained=False) -> str:
    tag = f"_{Path(workload_file).stem}" if workload_file else ""
    tag += "_constrained" if constrained else ""
    return f"exact_{Path(layout).stem}{tag}_{convention}_s{seed}"


def report(result: dict, out_dir: Path) -> dict:
    """Write CSVs and the PNG; return their paths and the printed table."""
    stem = _stem(
        result["layout"],
        result["convention"],
        result["seed"],
        result.get("workload_file"),
        result.get("constrained", False),
    )
    paths = {
        "rows_csv": write_csv(out_dir / f"{stem}.csv", result["rows"]),
        "summary_csv": write_csv(out_dir / f"{stem}_summary.csv", result["summary"]),
        "plot_png": plot(result, out_dir / f"{stem}.png"),
    }
    return {k: str(v) for k, v in paths.items()}


def plot(result: dict, path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for method in dict.fromkeys(r["method"] for r in result["rows"]):
        rs = [r for r in result["rows"] if r["method"] == method]
        ax.scatter(
            [r["idle_nodes"] for r in rs],
            [r["runtime_s"] for r in rs],
            s=10,
            label=method,
            alpha=0.7,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("idle nodes in the window")
    ax.set_ylabel("time per window (s)")
    where = (
        f"{result['layout']}, {result['nodes']} nodes"
        if "topology" in result
        else f"{result['layout']} layout"
    )
    stream = (
        f"the stream of {Path(result['workload_file']).name}"
        if result.get("workload_file")
        else "windows with job constraints"
        if result.get("constrained")
        else "the paper's stream"
    )
    ax.set_title(
        f"Exact SCAS on {stream} ({where}, "
        f"{result['convention']} cost, {result['num_windows']} windows)",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return save_figure(fig, path)


def main(args, workload: Workload | None = None) -> dict:
    """``tjap bench exact``: the run, its files and its printed table. ``workload`` (read from
    ``args.workload`` by the command line) replaces the generator's jobs; the files' names
    then carry the workload file's name."""
    from tjap.cli.common import executor_from_args
    from tjap.core.errors import InvalidInputError

    started = time.perf_counter()
    source = getattr(args, "workload", None) if workload is not None else None
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise InvalidInputError(f"--out {args.out} is a file; give a folder for the CSV and PNG")
    if getattr(args, "constraints", None) is not None:
        if not args.topology or workload is not None or args.warmup is not None:
            raise InvalidInputError(
                "--constraints draws its own windows on a --topology FILE; "
                "give --topology, and drop --workload and --warmup"
            )
        result = run_constrained(
            args.topology,
            args.num_windows,
            args.seed,
            convention=args.convention,
            cap=args.cap,
            mix=args.constraints,
            time_limit_s=args.time_limit,
            freeform_time_limit_s=args.freeform_time_limit,
            quiet=args.quiet,
            executor=executor_from_args(args),
            csv_path=Path(args.out)
            / f"{_stem(args.topology, args.convention, args.seed, None, True)}.csv",
        )
        columns = CONSTRAINED_COLUMNS
    elif args.topology:
        result = run_topology(
            args.topology,
            args.num_windows,
            args.seed,
            convention=args.convention,
            cap=args.cap,
            warmup_windows=args.warmup,
            freeform_time_limit_s=args.freeform_time_limit,
            bound=args.bound,
            quiet=args.quiet,
            executor=executor_from_args(args),
            csv_path=Path(args.out)
            / f"{_stem(args.topology, args.convention, args.seed, source)}.csv",
            workload=workload,
        )
        columns = TOPOLOGY_COLUMNS
    else:
        result = run(
            args.layout,
            args.num_windows,
            args.seed,
            convention=args.convention,
            cap=args.cap,
            freeform_time_limit_s=args.freeform_time_limit,
            paper_windows=args.paper_windows,
            paper_time_limit_s=args.paper_time_limit,
            quiet=args.quiet,
            executor=executor_from_args(args),
            csv_path=Path(args.out)
            / f"{_stem(args.layout, args.convention, args.seed, source)}.csv",
            workload=workload,
        )
        columns = COLUMNS
    if not result["rows"]:
        raise InvalidInputError("every window failed (see the messages above); nothing to report")
    result["workload_file"] = source
    files = report(result, Path(args.out))
    extra = (
        {
            "topology": result["topology"],
            "nodes": result["nodes"],
            "max_rss_mb": result["max_rss_mb"],
        }
        if args.topology
        else {}
    )
    if result.get("constrained"):
        extra |= {"mix": result["mix"], "methods": result["methods"], "notes": result["notes"]}
    elif args.topology:
        extra["bound"] = result["bound"]
    return {
        "summary": result["summary"],
        "files": files,
        "layout": result["layout"],
        "convention": result["convention"],
        "seed": result["seed"],
        "num_windows": result["num_windows"],
        "cap": result["cap"],
        **({"workload": source} if source else {}),
        **extra,
        "table": format_table(result["summary"], columns),
        "wall_s": time.perf_counter() - started,
    }
