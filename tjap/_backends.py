"""Thin helpers shared by the models solved with SCIP and OR-Tools CP-SAT."""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import threading
import time

from tjap.errors import MissingDependencyError
from tjap.result import Status


def require(module: str, extra_hint: str = "pip install -e ."):
    """Import an optional solver package or raise a one-line error naming the fix."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"solver package {module!r} is not installed; install it with `{extra_hint}`") from None


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
    return scale, [[int(round(c * scale)) for c in costs] for costs in costs_by_job]


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
        return solve()                   # signals are only delivered to the main thread
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


def scip_optimize(model, time_limit_s=None) -> None:
    """``model.optimize()`` that Ctrl-C and SIGTERM interrupt at once (the interrupted solve
    raises KeyboardInterrupt or SystemExit here, never returns a result); ``time_limit_s``
    (optional) replaces the model's limit, e.g. with what is left after building the model."""
    if time_limit_s is not None:
        model.setParam("limits/time", max(float(time_limit_s), 1e-3))
    run_interruptible(model.optimizeNogil, model.interruptSolve)
    if model.getStatus() == "userinterrupt":
        raise KeyboardInterrupt


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


def cpsat_solve(solver, model) -> tuple[Status, bool]:
    """Solve ``model`` with ``solver``; a Ctrl-C during the search raises KeyboardInterrupt here
    (never a result). Returns (status, whether a solution was found): OPTIMAL, INFEASIBLE, or
    TIME_LIMIT when the limit stopped it (with a solution: CP-SAT's FEASIBLE; without: UNKNOWN).

    CP-SAT catches SIGINT during its search (stopping at once) and then answers FEASIBLE or
    UNKNOWN; it cannot be solved in a helper thread instead (its wrapper aborts the process at
    exit when interrupted there). Since no other limit is set, such an answer before the time
    limit means the search was interrupted. Where SIGINT is ignored (a pool worker, whose parent
    stops it) the catching is switched off; Python's SIGINT handler is put back after the search
(CP-SAT leaves the default one, which would kill the process at the next Ctrl-C). A SIGTERM
(or any signal with a Python handler) stops the search at once (:func:`stop_on_signal`), so its
handler runs within moments, not at the time limit."""
    cp_model = require("ortools.sat.python.cp_model")
    main = threading.current_thread() is threading.main_thread()
    ignored = main and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    solver.parameters.catch_sigint_signal = main and not ignored
    limit = solver.parameters.max_time_in_seconds
    previous = signal.getsignal(signal.SIGINT) if main else None
    started = time.perf_counter()
    try:
        with stop_on_signal(solver.stop_search):
            code = solver.solve(model)
    finally:
        if previous is not None:          # CP-SAT leaves SIGINT at its default (kill) after
            signal.signal(signal.SIGINT, previous)
    took = time.perf_counter() - started
    if code == cp_model.MODEL_INVALID:
        raise RuntimeError("CP-SAT rejected the model as invalid (a bug in tjap: please report)")
    # CP-SAT itself may end up to ~0.02 s (about 15 % of a 0.15 s limit) before its limit, so only
    # an answer clearly short of it counts as an interrupt (a Ctrl-C in the limit's last 50 ms and
    # 5 % is not told apart from the limit, and the search ends at the limit anyway)
    if (solver.parameters.catch_sigint_signal and code in (cp_model.FEASIBLE, cp_model.UNKNOWN)
            and took < min(0.95 * limit, limit - 0.05)):
        raise KeyboardInterrupt
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
