"""One executor for every sweep: serial, a local process pool, or a Ray cluster.

A sweep is a picklable function and a list of argument sets (a tuple is passed as positional
arguments, a dict as keyword arguments). :meth:`Executor.map` runs them and yields the results in
the order of the argument sets, as soon as each one and all before it are done, with a progress
bar. Seeds travel inside the argument sets, so the results are the same whatever the back end.

A task that raises does not stop the sweep: it yields a :class:`TaskFailure` (its index, its
arguments and the error, one line, also printed to stderr) in its place, and the other results
come on. :class:`CsvRows` appends rows to a CSV as they arrive and flushes each, so a crash or
Ctrl-C leaves a valid partial CSV, named ``NAME.partial.csv`` until the sweep completes (then
renamed ``NAME.csv``): an interrupted run never looks complete. Ctrl-C, SIGTERM (which the
``tjap`` command turns into :class:`Terminated`) or leaving the loop early stops the workers;
workers ignore SIGINT and die quietly on SIGTERM, so they print no traceback.

Back ends
---------
- ``serial``: in this process, for debugging (``--workers 1``); torch runs on one thread during
  the sweep, as in the workers, and gets its thread count back after.
- ``pool`` (default): one process per core (``--workers N``), forked on Linux so workers share
  what the parent loaded (traces, compiled Numba kernels), spawned elsewhere. Each worker pins
  torch, Numba and BLAS to one thread, so N workers on N cores do not oversubscribe them.
- ``ray``: ``--ray auto`` joins the Ray cluster running on this machine (``ray start``),
  ``--ray HOST:PORT`` a cluster elsewhere, ``--ray local`` starts a private one here (tests).
  Needs the ``[ray]`` extra (``pip install 'tjap[ray]'``). Every node needs the same tjap
  installed (and the same data files at the same paths when a task reads one).

Training
--------
RL training does not go through this executor: stable-baselines3 collects rollouts from
vectorised environments, and ``SubprocVecEnv`` (one subprocess per environment, as
``learned/network/train.py`` uses) is the local way to collect them on several cores. PPO steps
all environments in lock step, once per action, so each step is a round trip to every worker:
cheap over pipes, too chatty over a network. To use a Ray cluster for training, use Ray's own
RLlib (its env runners are Ray actors) rather than pointing SubprocVecEnv at remote workers;
this library ships no such trainer. Sweeps that *evaluate* trained weights are ordinary sweeps
and run here.
"""

from __future__ import annotations

import contextlib
import csv
import logging
import multiprocessing as mp
import os
import signal
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from tjap.core.errors import InvalidInputError, MissingDependencyError, Terminated, check_int

RAY_HINT = "pip install 'tjap[ray]'"
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")


def progress(iterable, *, total=None, desc="", quiet=False):
    """A tqdm bar on stderr when stderr is a terminal (so ``--json > file`` still shows one);
    silent when stderr is not a terminal or ``quiet`` is set. Stdout is never written to."""
    from tqdm import tqdm

    return tqdm(
        iterable,
        total=total,
        desc=desc,
        file=sys.stderr,
        disable=quiet or not sys.stderr.isatty(),
        leave=False,
    )


@contextlib.contextmanager
def progress_bar(desc: str = "", quiet: bool = False):
    """:func:`progress` for a loop that reports itself: yields ``update(done, total)``, to be
    called as the work advances (a simulation's jobs done, a stream's windows made)."""
    with progress(None, desc=desc, quiet=quiet) as bar:

        def update(done, total):
            bar.total = total
            bar.update(done - bar.n)

        yield update


@dataclass(frozen=True)
class TaskFailure:
    """A task that raised: its place in the sweep, its arguments and the error (one line)."""

    index: int
    args: Any
    error: str

    def line(self) -> str:
        args = repr(self.args)
        if len(args) > 200:  # a window's node list would fill the screen
            args = args[:200] + "...)"
        return f"task {self.index} {args} failed: {self.error}"


#: Partial outputs left by interrupted or failed sweeps in this process (:class:`CsvRows`), for
#: the one line ``tjap`` prints when interrupted.
PARTIAL_OUTPUTS: list[Path] = []


def interruption_line(exc: BaseException | None = None) -> str:
    """The one stderr line of an interrupted command, naming the partial outputs it left."""
    what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
    if PARTIAL_OUTPUTS:
        kept = ", ".join(str(p) for p in dict.fromkeys(PARTIAL_OUTPUTS))
        return f"tjap: {what}; the rows finished before are in {kept}"
    return f"tjap: {what}"


#: the signals a worker is born with blocked (see :meth:`Executor._pool`)
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _block_stop_signals() -> Callable[[], None]:
    """Block SIGINT and SIGTERM in this thread (where the platform can: POSIX); returns the
    function that restores the previous mask."""
    if not hasattr(signal, "pthread_sigmask"):
        return lambda: None
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)

    def restore() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    return restore


def _init_worker() -> None:
    """Pool worker set-up: one thread per library, SIGINT left to the parent (which stops the
    pool), SIGTERM's default action (a quiet exit when the pool is terminated). The worker was
    forked with both signals blocked, so a SIGTERM sent while it started (a pool terminated at
    once) waits, and kills it here, rather than meeting a handler inherited from the parent and
    leaving it alive, waiting for work, while the parent waits for it to exit."""
    pin_threads()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def pin_threads() -> None:
    """One thread for torch, Numba and BLAS in this process (called in every worker)."""
    for name in _THREAD_VARS:
        os.environ[name] = "1"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _call(fn: Callable, index: int, args) -> tuple[int, bool, Any]:
    """Run one task; an exception becomes its one-line description (and never escapes)."""
    try:
        value = fn(**args) if isinstance(args, dict) else fn(*args)
        return index, True, value
    except Exception as exc:  # noqa: BLE001 - reported with the task's arguments, sweep goes on
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f" ({Path(frame.filename).name}:{frame.lineno})"
        return index, False, f"{type(exc).__name__}: {exc}{where}".replace("\n", " ")


def _call_pinned(fn, index, args):
    pin_threads()
    return _call(fn, index, args)


class Executor:
    """Runs sweeps; build one with :func:`make_executor` or :func:`executor_from_args`.

    Parameters
    ----------
    workers : processes (pool) or concurrent tasks (Ray, None: the cluster's CPUs); 1: serial.
    ray_address : None for a local back end; "auto", "local" or "HOST:PORT" for Ray.
    start_method : the pool's multiprocessing start method (default fork on Linux, else spawn).
    """

    def __init__(
        self,
        workers: int | None = None,
        ray_address: str | None = None,
        start_method: str | None = None,
    ):
        if workers is not None:
            check_int("workers", workers, 1)
        if ray_address is not None:
            _import_ray()
        self.ray_address = ray_address
        self.workers: int | None
        if workers is not None:
            self.workers = int(workers)
        elif ray_address:
            self.workers = None  # as many at once as the cluster has CPUs
        else:
            self.workers = (
                len(os.sched_getaffinity(0))
                if hasattr(os, "sched_getaffinity")
                else os.cpu_count() or 1
            )
        self.start_method = start_method or (
            "fork" if sys.platform.startswith("linux") else "spawn"
        )
        self.failures: list[TaskFailure] = []

    @property
    def backend(self) -> str:
        return "ray" if self.ray_address else "serial" if self.workers == 1 else "pool"

    def __repr__(self) -> str:
        where = f", ray {self.ray_address}" if self.ray_address else ""
        return f"Executor({self.backend}, workers={self.workers}{where})"

    def map(
        self,
        fn: Callable,
        tasks: Sequence,
        *,
        desc: str = "",
        quiet: bool = False,
        report: bool = True,
    ) -> Iterator:
        """Yield ``fn(*args)`` (or ``fn(**args)``) for each argument set of ``tasks``, in order;
        a task that raised yields a :class:`TaskFailure` (also kept in ``self.failures`` and,
        with ``report``, printed to stderr as one line). Leaving the loop stops the workers."""
        tasks = list(tasks)
        run = {"serial": self._serial, "pool": self._pool, "ray": self._ray}[self.backend]
        bar = progress(None, total=len(tasks), desc=desc, quiet=quiet)
        runner = run(fn, tasks)
        try:
            for index, ok, value in runner:
                bar.update(1)
                if not ok:
                    value = TaskFailure(index, tasks[index], value)
                    self.failures.append(value)
                    if report:
                        bar.clear()
                        print(f"tjap: {value.line()}", file=sys.stderr, flush=True)
                yield value
        finally:
            runner.close()  # stops the workers when the caller leaves early or on Ctrl-C
            bar.close()

    def results(self, fn: Callable, tasks: Sequence, **options) -> list:
        """The successful results of :meth:`map`, in order (failures reported and dropped)."""
        return [r for r in self.map(fn, tasks, **options) if not isinstance(r, TaskFailure)]

    @staticmethod
    def _serial(fn, tasks):
        # torch on one thread here too, as in the workers (so results match), restored after
        threads = sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None
        try:
            for index, args in enumerate(tasks):
                if "torch" in sys.modules:
                    threads = threads or sys.modules["torch"].get_num_threads()
                    sys.modules["torch"].set_num_threads(1)
                yield _call(fn, index, args)
        finally:
            if threads and "torch" in sys.modules:
                sys.modules["torch"].set_num_threads(threads)

    def _pool(self, fn, tasks):
        workers = min(self.workers or 1, max(1, len(tasks)))  # None only on Ray
        # workers (and the pool's threads, which fork replacements) start with SIGINT and SIGTERM
        # blocked; _init_worker unblocks them once their dispositions are the worker's own
        unblock = _block_stop_signals()
        try:
            pool = mp.get_context(self.start_method).Pool(workers, initializer=_init_worker)
        except BaseException:
            unblock()
            raise
        try:
            unblock()  # a Ctrl-C held back meanwhile lands here, pool stopped below
            results = pool.imap(_Star(fn), enumerate(tasks), chunksize=1)
            for index in range(len(tasks)):
                try:
                    yield results.next()
                except Exception as exc:  # noqa: BLE001 - e.g. arguments that cannot be pickled
                    yield index, False, f"{type(exc).__name__}: {exc}"
            pool.close()
        finally:
            pool.terminate()  # also on Ctrl-C and when the caller stops early
            pool.join()

    def _ray(self, fn, tasks):
        ray = _import_ray()
        if not ray.is_initialized():
            _check_reachable(self.ray_address or "")
            # ray.init installs its own SIGTERM handler in this process: keep the caller's (tjap's
            # exits 143 with one line) and its SIGINT
            handlers = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}
            try:
                if self.ray_address == "local":
                    ray.init(
                        num_cpus=self.workers,
                        include_dashboard=False,
                        log_to_driver=False,
                        logging_level=logging.WARNING,
                    )
                else:
                    ray.init(
                        address=self.ray_address, log_to_driver=False, logging_level=logging.WARNING
                    )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise InvalidInputError(
                    f"cannot join a Ray cluster at --ray {self.ray_address} ({first}); start one "
                    "with `ray start --head`, or use --ray local for a private one"
                ) from None
            finally:
                for sig, handler in handlers.items():
                    if (
                        handler is not None
                        and signal.getsignal(sig) != handler
                        and threading.current_thread() is threading.main_thread()
                    ):
                        signal.signal(sig, handler)
        remote = ray.remote(num_cpus=1)(_call_pinned)
        fn_ref = ray.put(fn)
        # at most ~2 tasks per worker in flight: results stream back while the rest wait
        window = 2 * (self.workers or int(ray.cluster_resources().get("CPU", 1)))
        pending, submitted = [], 0
        try:
            for index in range(len(tasks)):
                while submitted < len(tasks) and submitted < index + window:
                    pending.append(remote.remote(fn_ref, submitted, tasks[submitted]))
                    submitted += 1
                ref = pending.pop(0)
                try:
                    yield ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - e.g. the task's module is missing there
                    yield index, False, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)


class _Star:
    """``(index, args) -> _call(fn, index, args)``, picklable for the pool."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, item):
        return _call(self.fn, *item)


def _check_reachable(address: str) -> None:
    """Fail fast on a HOST:PORT nobody listens on (Ray itself retries for minutes)."""
    import socket

    host, _, port = address.rpartition(":")
    if "://" in address or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise InvalidInputError(
            f"cannot reach a Ray cluster at --ray {address} "
            f"({exc.strerror or exc}); check the address `ray start --head` "
            "printed"
        ) from None


def _import_ray():
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(f"--ray needs the optional Ray extra: {RAY_HINT}") from None
    return ray


def make_executor(workers: int | None = None, ray: str | None = None) -> Executor:
    """An executor: Ray at address ``ray`` when given, else ``workers`` local processes (None:
    one per core; 1: serial)."""
    return Executor(workers, ray_address=ray)


def sweep_rows(
    executor,
    fn: Callable,
    tasks: Sequence,
    *,
    desc: str = "",
    quiet: bool = False,
    csv_path=None,
    many: bool = False,
    lines: bool = False,
) -> list[dict]:
    """The rows of a sweep run on ``executor`` (its :meth:`Executor.map`) whose tasks each return
    one row (a dict), or a list of rows with ``many``, in order (failed tasks reported and
    dropped). With ``csv_path`` each row goes to disk as it arrives (:class:`CsvRows`:
    NAME.partial.csv until the sweep completes, and left so, every row complete, when it is
    interrupted). With ``lines`` and stderr not a terminal (no progress bar), a progress line
    every tenth of the tasks, unless ``quiet``."""
    tasks = list(tasks)
    every = max(1, len(tasks) // 10)
    lines = lines and not quiet and not sys.stderr.isatty()
    out = CsvRows(csv_path) if csv_path else None
    rows: list[dict] = []
    try:
        for k, value in enumerate(executor.map(fn, tasks, desc=desc, quiet=quiet), 1):
            if not isinstance(value, TaskFailure):  # reported by map
                new = value if many else [value]
                rows += new
                if out:
                    for row in new:
                        out.write(row)
            if lines and (k % every == 0 or k == len(tasks)):
                print(f"{desc}: {k}/{len(tasks)} windows", file=sys.stderr, flush=True)
    except BaseException:
        if out:
            out.close(complete=False)
        raise
    if out:
        out.close(complete=True)
    return rows


def partial_path(path: Path) -> Path:
    """Where a CSV is written until it is complete: ``NAME.partial.csv`` beside ``NAME.csv``."""
    return path.with_name((path.stem if path.suffix == ".csv" else path.name) + ".partial.csv")


class CsvRows:
    """A CSV written row by row, flushed after each, valid after every write.

    Rows go to ``NAME.partial.csv`` (:attr:`partial_path`) beside ``path`` while the sweep runs;
    closing normally renames it to ``path``. Left by an exception (Ctrl-C, SIGTERM, a crash), the
    file keeps its ``.partial.csv`` name, every row in it complete, and is listed in
    :data:`PARTIAL_OUTPUTS`. The header is the union of the rows' keys in first-seen order (as
    ``write_csv``): a row with a new key rewrites the file (through a temporary file) with the
    wider header. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.partial_path = partial_path(self.path)
        self.fields: list[str] = []
        self.rows: list[dict] = []
        self._file = None
        self._closed = False

    def write(self, row: dict) -> None:
        self.rows.append(row)
        new = [k for k in row if k not in self.fields]
        if new or self._file is None:
            self.fields += new
            self._rewrite()
        else:
            csv.DictWriter(self._file, fieldnames=self.fields).writerow(row)
            self._file.flush()

    def _rewrite(self) -> None:
        if self._file is not None:
            self._file.close()
        tmp = self.partial_path.with_name(self.partial_path.name + ".tmp")
        with tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.fields)
            writer.writeheader()
            writer.writerows(self.rows)
        os.replace(tmp, self.partial_path)
        self._file = self.partial_path.open("a", newline="")

    def close(self, complete: bool | None = None) -> None:
        """Close the file: complete (the default unless an exception is being raised) renames it
        to ``path``; otherwise it stays ``NAME.partial.csv``."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._closed:
            return
        self._closed = True
        if complete is None:
            complete = sys.exc_info()[0] is None
        if not self.partial_path.exists():
            return
        if complete:
            os.replace(self.partial_path, self.path)
        else:
            PARTIAL_OUTPUTS.append(self.partial_path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(complete=exc_type is None)
