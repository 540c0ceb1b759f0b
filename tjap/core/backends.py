"""Thin helpers shared by the models solved with SCIP and OR-Tools CP-SAT."""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import threading
import time

from tjap.core.errors import MissingDependencyError
from tjap.core.result import Status


def require(module: str, extra_hint: str = "pip install -e ."):
    """Import an optional solver package or raise a one-line error naming the fix."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"solver package {module!r} is not installed; install it with `{extra_hint}`"
        ) from None


def integer_coefficients(costs_by_job, sizes, limit=2**50):
    """Scale per-job cost arrays to exact integers for CP-SAT, or return None if impossible.

    Published costs are already integers. Paper costs are integers times 1/n_j, so multiplying by
    the lcm of the window's job sizes makes them exact integers; if the products would be too large
    for CP-SAT's exact arithmetic, None tells the caller to fall back to a float objective.
    """
    if all(float(c).is_integer() for costs in costs_by_job for c in costs):
        return 1, [[int(c) for c in costs] for costs in costs_by_job]
    scale = math.lcm(*sizes)
    largest = max(max(abs(c) for c in costs) for costs in costs_by_job) * scale * len(sizes)
    if largest >= limit:
        return None
    scaled = [[c * scale for c in costs] for costs in costs_by_job]
    if any(abs(v - round(v)) > 1e-6 for row in scaled for v in row):
        return None  # terms that are not multiples of 1/n_j (e.g. a stated weight)
    return scale, [[int(round(v)) for v in row] for row in scaled]


#: An exact model (SCAS set packing, the free-form model) is not built at all when its predicted
#: build time is more than this many times the time left (the predictions err by less; a build
#: that might fit is tried and stopped by the clock).
BUILD_MARGIN = 2.0


class Deadline:
    """A time limit counted from a start: what is left of it, and whether it is spent.

    ``Deadline(None)`` never expires (``left()`` is None). Model builders call :meth:`check`
    between steps, so a limit covers building a model as well as solving it.
    """

    def __init__(self, time_limit_s=None, started: float | None = None):
        self.time_limit_s = None if time_limit_s is None else float(time_limit_s)
        self.started = time.perf_counter() if started is None else started

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float | None:
        """Seconds left (0 when spent), or None without a limit."""
        if self.time_limit_s is None:
            return None
        return max(0.0, self.time_limit_s - self.elapsed())

    def expired(self) -> bool:
        return self.time_limit_s is not None and self.elapsed() >= self.time_limit_s

    def check(self) -> None:
        """Raise :class:`OutOfTime` once the limit is spent."""
        if self.expired():
            raise OutOfTime


class Slices:
    """Sizes of the slices a long compiled loop runs in, so that Python gets control back
    between kernel calls (a Ctrl-C or SIGTERM is handled only then) about every ``target_s``
    seconds. Sizes are multiples of ``unit`` (where a loop may be cut without changing what it
    computes), the first ``first`` units; each call's measured time doubles or halves the next
    slice.

    >>> slices = Slices(unit=256, first=4)
    >>> slices.size
    1024
    >>> slices.took(0.001); slices.size
    2048
    """

    def __init__(self, unit: int, first: int = 1, target_s: float = 0.1):
        self.unit, self.target_s = int(unit), float(target_s)
        self.size = self.unit * max(1, int(first))

    def took(self, seconds: float) -> None:
        """Adapt the next slice to the time the last one took."""
        if seconds < 0.5 * self.target_s:
            self.size *= 2
        elif seconds > 2 * self.target_s and self.size > self.unit:
            self.size = max(self.unit, (self.size // 2) // self.unit * self.unit)


class OutOfTime(Exception):
    """Raised by :meth:`Deadline.check` inside a model builder; the solver catches it and returns
    its fallback with status TIME_LIMIT."""


def run_interruptible(solve, stop):
    """Run ``solve()`` (a C solver call that releases the GIL) in a helper thread while this
    thread waits, so that Ctrl-C and SIGTERM reach Python at once: on any exception here (a
    KeyboardInterrupt, the SystemExit of a SIGTERM handler) ``stop()`` asks the solver to stop,
    the solve is waited for (at most a few seconds) and the exception is raised again; the
    interrupted solve's result is never returned. Returns what ``solve()`` returned."""
    if threading.current_thread() is not threading.main_thread():
        return solve()  # signals are only delivered to the main thread
    box = {}

    def target():
        try:
            box["value"] = solve()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="tjap-solver", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.05)
    except BaseException:
        stop()
        thread.join(5.0)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def scip_model(time_limit_s, seed, threads=1):
    """A quiet SCIP model with a time limit and seed, which leaves SIGINT to Python (solve it
    with :func:`scip_optimize`)."""
    pyscipopt = require("pyscipopt")
    model = pyscipopt.Model()
    model.hideOutput()
    model.setParam("misc/catchctrlc", False)
    if time_limit_s is not None:
        model.setParam("limits/time", max(float(time_limit_s), 1e-3))
    model.setParam("randomization/randomseedshift", int(seed) % 2**31)
    return model


#: Seconds per variable that SCIP may run past its limit (transforming a large model is not
#: interruptible) plus reading a solution and freeing the model (measured: 0.45-0.65 s in all
#: for the 93,000-126,000 binaries of a 133-job window); :func:`scip_optimize` keeps that much of
#: the time left for them.
SCIP_AFTER_S_PER_VAR = 6e-6


#: Under a time limit, a SCIP model of more than this many variables is not presolved: SCIP's
#: presolve rounds check the clock only between rounds, and on models of about 100,000
#: variables (a window of 90-133 jobs on 1,000 idle nodes) ran up to 1.5 s past the limit (FAST
#: presolving still 0.6 s); without them it stays within 0.4 s of it.
SCIP_FAST_PRESOLVE_VARS = 50_000


def scip_optimize(model, time_limit_s=None) -> None:
    """``model.optimize()`` that Ctrl-C and SIGTERM interrupt at once (the interrupted solve
    raises KeyboardInterrupt or SystemExit here, never returns a result); ``time_limit_s``
    (optional) replaces the model's limit, e.g. with what is left after building the model. Of
    that, SCIP gets all but the predicted time to read its solution and free the model
    (:data:`SCIP_AFTER_S_PER_VAR`) and 5 % for SCIP's own overrun of its limit (it checks the
    clock between steps; seen up to 0.5 s on a loaded machine), at most half of it, so the
    caller's limit holds with them; a large model is not presolved
    (:data:`SCIP_FAST_PRESOLVE_VARS`)."""
    if time_limit_s is not None:
        after = min(
            0.5 * float(time_limit_s),
            0.02 + 0.05 * float(time_limit_s) + SCIP_AFTER_S_PER_VAR * model.getNVars(),
        )
        model.setParam("limits/time", max(float(time_limit_s) - after, 1e-3))
        if model.getNVars() > SCIP_FAST_PRESOLVE_VARS:
            model.setPresolve(require("pyscipopt").SCIP_PARAMSETTING.OFF)
    run_interruptible(model.optimizeNogil, model.interruptSolve)
    if model.getStatus() == "userinterrupt":
        raise KeyboardInterrupt


def scip_free(model) -> None:
    """Free a solved SCIP model's problem now (seconds for a model of 100,000 variables), so a
    solver counts it in its runtime and time limit instead of leaving it to whoever drops the
    last reference. Read everything needed from the model first."""
    model.freeProb()


def scip_dual_bound(model) -> float | None:
    """SCIP's proven dual bound, or None when it has none (SCIP reports its infinity, 1e20,
    which is a finite float and must not be passed on as a bound)."""
    dual = model.getDualbound()
    return None if model.isInfinity(abs(dual)) else float(dual)


def scip_status(model) -> Status:
    """OPTIMAL, INFEASIBLE, TIME_LIMIT (stopped by a limit, with or without a solution:
    ``getNSols`` tells) or FEASIBLE (stopped otherwise, with a solution)."""
    status = model.getStatus()
    if status == "optimal":
        return Status.OPTIMAL
    if status == "infeasible":
        return Status.INFEASIBLE
    if status in ("timelimit", "totalnodelimit", "nodelimit", "stallnodelimit", "memlimit"):
        return Status.TIME_LIMIT
    return Status.FEASIBLE if model.getNSols() > 0 else Status.TIME_LIMIT


@contextlib.contextmanager
def stop_on_signal(stop):
    """While a C call holds the main thread, call ``stop()`` (from a watcher thread) as soon as a
    signal with a Python handler arrives (SIGTERM under the CLI), so that the call returns and the
    handler runs at once instead of when the call ends on its own. Uses the signal wake-up fd
    (:func:`signal.set_wakeup_fd`), restored afterwards; a no-op outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    try:
        previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(read_end)
        os.close(write_end)
        yield
        return
    done = threading.Event()

    def watch():
        while not done.is_set():
            ready, _, _ = select.select([read_end], [], [], 0.05)
            if ready and os.read(read_end, 64) and not done.is_set():
                stop()
                return

    watcher = threading.Thread(target=watch, name="tjap-signal-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        signal.set_wakeup_fd(previous)
        watcher.join(1.0)
        os.close(read_end)
        os.close(write_end)


def cpsat_solver(time_limit_s, seed, workers=1):
    """A CP-SAT solver with a time limit, seed and worker count (solve with
    :func:`cpsat_solve`, which turns a Ctrl-C during the search into KeyboardInterrupt)."""
    cp_model = require("ortools.sat.python.cp_model")
    solver = cp_model.CpSolver()
    if time_limit_s is not None:
        solver.parameters.max_time_in_seconds = max(float(time_limit_s), 1e-3)
    solver.parameters.random_seed = int(seed) % 2**31
    solver.parameters.num_workers = int(workers)
    return solver


#: Seconds per constraint CP-SAT spends loading a model before its own clock starts (measured:
#: about 0.3 s for the 850,000 constraints of the paper's SCAS formulation of a 133-job window);
#: :func:`cpsat_solve` keeps that, and 5 % of the limit, out of the limit it gives CP-SAT.
CPSAT_LOAD_S_PER_CONSTRAINT = 4e-7


#: Under a time limit, a CP-SAT model of more than this many variables is not presolved: on
#: models of about 126,000 variables (a 133-job window on 950 idle nodes) its presolve ran 0.4-0.7
#: s past the limit; without it the search stays within 0.05 s of it.
CPSAT_NO_PRESOLVE_VARS = 50_000


def cpsat_solve(solver, model) -> tuple[Status, bool]:
    """Solve ``model`` with ``solver``; a Ctrl-C or SIGTERM during the search raises
    KeyboardInterrupt (or the SIGTERM handler's exception) here, never a result. Returns
    (status, whether a solution was found): OPTIMAL, INFEASIBLE, or TIME_LIMIT when the limit
    stopped it (with a solution: CP-SAT's FEASIBLE; without: UNKNOWN).

    CP-SAT's own SIGINT catching is switched off: any signal with a Python handler (Ctrl-C's
    included) stops the search at once from a watcher thread (:func:`stop_on_signal`), and the
    handler runs as soon as the search returns. So an answer is an interrupt exactly when a
    signal arrived, never guessed from the time it took (CP-SAT may well end before its limit,
    on a loaded machine too). The model cannot be solved in a helper thread instead (its wrapper
    aborts the process at exit when interrupted there). Python's SIGINT handler is put back
    after the search in case the solver replaced it. Under a time limit, CP-SAT gets it less its
    loading time (:data:`CPSAT_LOAD_S_PER_CONSTRAINT`) and 5 %, and a large model is not
    presolved (:data:`CPSAT_NO_PRESOLVE_VARS`), so the caller's limit holds."""
    cp_model = require("ortools.sat.python.cp_model")
    main = threading.current_thread() is threading.main_thread()
    solver.parameters.catch_sigint_signal = False
    limit = solver.parameters.max_time_in_seconds
    if limit < 1e300:  # CP-SAT's own clock starts once the model is loaded
        after = min(
            0.5 * limit,
            0.02 + 0.05 * limit + CPSAT_LOAD_S_PER_CONSTRAINT * len(model.proto.constraints),
        )
        solver.parameters.max_time_in_seconds = max(limit - after, 1e-3)
        if len(model.proto.variables) > CPSAT_NO_PRESOLVE_VARS:
            solver.parameters.cp_model_presolve = False
    previous = signal.getsignal(signal.SIGINT) if main else None
    try:
        with stop_on_signal(solver.stop_search):
            code = solver.solve(model)
    finally:
        if previous is not None and signal.getsignal(signal.SIGINT) is not previous:
            signal.signal(signal.SIGINT, previous)
    if code == cp_model.MODEL_INVALID:
        raise RuntimeError("CP-SAT rejected the model as invalid (a bug in tjap: please report)")
    status = cpsat_status(code)
    found = status in (Status.OPTIMAL, Status.FEASIBLE)
    return (Status.TIME_LIMIT if status is Status.FEASIBLE else status), found


def cpsat_status(code) -> Status:
    """The classic mapping (the network model uses it): FEASIBLE with a solution short of a
    proof, TIME_LIMIT without one."""
    cp_model = require("ortools.sat.python.cp_model")
    if code == cp_model.OPTIMAL:
        return Status.OPTIMAL
    if code == cp_model.FEASIBLE:
        return Status.FEASIBLE
    if code == cp_model.INFEASIBLE:
        return Status.INFEASIBLE
    return Status.TIME_LIMIT
