"""What every ``tjap`` subcommand shares: argument types, the common flags and JSON output."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tjap.core import executor
from tjap.core.errors import (
    MAX_SEED,
    KubernetesUnreachableError,
    SlurmUnreachableError,
    TjapError,
)
from tjap.core.result import plain


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with one-line usage errors: ``tjap: error: MESSAGE (see PROG --help)``
    on stderr and exit status 2 (argparse's own error prints the whole usage block first).
    Subparsers made with ``add_subparsers`` inherit the class."""

    _PROG = "_tjap_prog"  # the innermost parser that ran, kept on the namespace meanwhile

    def error(self, message, prog: str | None = None):
        text = " ".join(str(message).split())
        self.exit(2, f"tjap: error: {text} (see {prog or self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if not hasattr(namespace, self._PROG):  # subcommands return first: the innermost wins
            setattr(namespace, self._PROG, self.prog)
        return namespace, extras

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unknown argument's error names the subcommand's help."""
        namespace, extras = self.parse_known_args(args, namespace)
        prog = vars(namespace).pop(self._PROG, None)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}", prog)
        return namespace


#: The exit status when the reader of stdout went away (``tjap ... | head``): 128 + SIGPIPE, what
#: a command killed by SIGPIPE reports, so ``set -o pipefail`` scripts see the output was cut.
EXIT_CLOSED_STDOUT = 141

#: The exit status when Slurm cannot be reached (:class:`tjap.core.errors.SlurmUnreachableError`:
#: slurmctld does not answer, Slurm's commands are not on PATH, its configuration is missing):
#: not 1 (the job ran and found no solution) nor 2 (the input is wrong).
EXIT_SLURM_UNREACHABLE = 3


def run_command(run, *args) -> int:
    """``run(*args)``, a command's body, with the command line's contract for errors: bad input
    (a :class:`~tjap.core.errors.TjapError`) is one line ``tjap: error: ...`` on stderr and exit 2, an
    unreachable Slurm the same line and :data:`EXIT_SLURM_UNREACHABLE`."""
    try:
        return run(*args)
    except (SlurmUnreachableError, KubernetesUnreachableError) as exc:
        print(f"tjap: error: {exc}", file=sys.stderr)
        return EXIT_SLURM_UNREACHABLE
    except TjapError as exc:
        print(f"tjap: error: {exc}", file=sys.stderr)
        return 2


def stdout_closed() -> bool:
    """Whether nothing reads stdout any more (the reader of its pipe has exited). False when stdout
    is no file descriptor (captured in-process): a broken pipe then came from elsewhere."""
    import select

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    if not hasattr(select, "poll"):  # no poll (Windows): assume it was stdout
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (OSError, ValueError):
        return True


def silence_stdout() -> None:
    """Point stdout's descriptor at /dev/null, so the interpreter's final flush of what is left in
    its buffer does not fail a second time (and print "Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


def positive(kind=float, high: float = 1e9):
    """An argparse type: a number of ``kind`` in (0, high]."""
    word = "integer" if kind is int else "number"

    def parse(value):
        try:
            number = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive {word}, got {value!r}") from None
        if not 0 < number <= high:
            raise argparse.ArgumentTypeError(
                f"expected a positive {word} up to {high:g}, got {value!r}"
            )
        return number

    return parse


def non_negative(value: str) -> float:
    """An argparse type: a finite number >= 0."""
    import math

    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not (math.isfinite(number) and number >= 0):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value!r}")
    return number


def count(value: str) -> int:
    """An argparse type: a non-negative integer (0 = skip that stage)."""
    return 0 if value.strip() == "0" else positive(int)(value)


def cap(value: str):
    """An argparse type: a positive integer, or ``none`` for no cap."""
    if value.lower() in ("none", "no", "off"):
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"cap must be a positive integer or 'none', got {value!r}")
    return number


def fragmentation(value: str) -> tuple[float, int | str]:
    """An argparse type: ``W`` or ``W:LEVEL`` (a weight >= 0 and a level number or name)."""
    weight, _, level = value.partition(":")
    try:
        number = float(weight)
    except ValueError:
        number = -1.0
    if not 0 <= number < float("inf"):
        raise argparse.ArgumentTypeError(
            f"expected W or W:LEVEL with a weight W >= 0, got {value!r}"
        )
    level = level.strip() or "1"
    return number, int(level) if level.isdigit() else level


def int_in(low: int, high: int):
    """An argparse type: an integer in [low, high]."""

    def parse(value):
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {value!r}") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(
                f"expected an integer in [{low}, {high}], got {value!r}"
            )
        return number

    return parse


def check_output(path, flag: str, *, folder: bool = False) -> Path | None:
    """Check an output path option (``--out``, ``--plot``, ``--log``, ...) before the command
    does its work; returns it as a Path (None stays None).

    The rule of every command: folders missing on the way are created when the output is
    written; what cannot be written is a one-line :class:`~tjap.core.errors.InvalidInputError` now,
    naming ``flag``, the path and the fix: a file where a folder is needed (on the way, or as
    ``path`` itself when ``folder``), a folder where ``path`` should be a file, a folder that
    may not be written to. Nothing is created here."""
    from tjap.core.errors import InvalidInputError

    if path is None:
        return None
    target = Path(path)
    head = f"cannot write {flag} {path}"
    if folder and target.exists() and not target.is_dir():
        raise InvalidInputError(f"{head}: it is a file; give a folder")
    if not folder and target.is_dir():
        raise InvalidInputError(f"{head}: it is a folder; give a file name")
    where = target if folder else target.parent
    existing = where
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InvalidInputError(
            f"{head}: {existing} is a file, not a folder; give another path (or move that file)"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InvalidInputError(
            f"{head}: no permission to write in {existing}; give a folder you can write to"
        )
    if not folder and target.exists() and not os.access(target, os.W_OK):
        raise InvalidInputError(
            f"{head}: the file exists and may not be written (permission denied)"
        )
    return target


def add_common(p: argparse.ArgumentParser) -> None:
    """``--seed``, ``--json`` and ``--quiet``, which every subcommand takes."""
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def print_json(data) -> None:
    """Print ``data`` as indented JSON (numpy values as plain numbers, NaN as null)."""
    print(json.dumps(plain(data), indent=2, default=str, allow_nan=False))


def print_rows(result: dict, width: int = 22, skip=()) -> None:
    """Print a flat dict as aligned ``key value`` lines (floats with three decimals)."""
    for key, value in result.items():
        if key not in skip:
            print(
                f"{key:{width}s} {value:.3f}"
                if isinstance(value, float)
                else f"{key:{width}s} {value}"
            )


def warn(message: str) -> None:
    print(f"tjap: {message}", file=sys.stderr)


# -- the executor's options --------------------------------------------------------------------
def add_executor_arguments(parser, default_workers: int | None = None) -> None:
    """Add ``--workers N`` and ``--ray ADDRESS|auto|local`` to an argparse parser.

    ``default_workers`` None means one process per core; benchmarks whose rows carry timings pass
    1, so their timing columns are not measured while another task shares the cores."""
    default = (
        "one per core"
        if default_workers is None
        else "1, so that timings are not disturbed"
        if default_workers == 1
        else str(default_workers)
    )
    parser.add_argument(
        "--workers",
        type=_workers,
        default=default_workers,
        metavar="N",
        help=f"processes on this machine (default: {default}; 1: serial, in this process)",
    )
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run the tasks on a Ray cluster: 'auto' (the one started on this "
        "machine with `ray start`), HOST:PORT, or 'local' (a private one); "
        f"needs {executor.RAY_HINT}",
    )


def executor_from_args(args) -> executor.Executor:
    """The executor the parsed ``--workers`` / ``--ray`` ask for."""
    return executor.make_executor(getattr(args, "workers", None), getattr(args, "ray", None))


def _workers(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--workers must be a positive integer, got {value!r}"
        ) from None
    if not 1 <= number <= 4096:
        raise argparse.ArgumentTypeError(f"--workers must be in 1..4096, got {value!r}")
    return number
