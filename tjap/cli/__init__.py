"""The ``tjap`` command line: one program, one module per family of subcommands.

Each family module has ``add_parser(sub)``, which adds its subcommands and sets ``run``, and
``run(args)``: ``tree`` (solve, generate, online, demo), ``topology`` (show), ``bench`` (exact), ``batch``
(simulate, provision), ``slurm`` (place, advise), ``audit``, ``network``, ``interference``, ``train`` and ``methods``.

Exit codes: 0 success, 1 the job ran but failed (no solution found), 2 bad input or usage,
3 Slurm cannot be reached (:class:`tjap.core.errors.SlurmUnreachableError`: slurmctld does not answer,
or Slurm's commands or configuration are missing), 130 interrupted (Ctrl-C), 143 terminated
(SIGTERM), 141 stdout closed by its reader (``| head``; quietly). Every error the user can
cause prints one line ``tjap: error: ...`` (usage errors add ``(see tjap CMD --help)``) and never a
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import signal
import sys
import threading

import tjap
from tjap.core.errors import Terminated, interrupted_by

# Importing this module loads nothing beyond the standard library, so that the handlers of
# Ctrl-C and SIGTERM are in place before the families (numpy, Numba, solvers) are imported.
FAMILY_NAMES = (
    "tree",
    "topology",
    "bench",
    "batch",
    "slurm",
    "k8s",
    "audit",
    "network",
    "interference",
    "train",
    "methods",
)


def families() -> tuple:
    """The family modules, in the order their subcommands are listed."""
    return tuple(importlib.import_module(f"tjap.cli.{name}") for name in FAMILY_NAMES)


def build_parser() -> argparse.ArgumentParser:
    """The ``tjap`` argument parser with every family's subcommands."""
    from tjap.cli.common import ArgumentParser

    parser = ArgumentParser(  # one-line usage errors, for every subcommand (they inherit it)
        prog="tjap",
        description="Placement problems of HPC and ML clusters: exact models, Numba "
        "search and learned operators for four published systems.",
    )
    parser.add_argument("--version", action="version", version=f"tjap {tjap.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for family in families():
        family.add_parser(sub)
    return parser


def main(argv=None) -> int:
    """Run ``tjap`` with ``argv`` (default: the process arguments); returns the exit code.

    Ctrl-C ends the command with exit status 130 and SIGTERM with 143, one line on stderr, at any
    moment from here on (importing the command's modules included). A closed stdout (``tjap
    methods | head -1``) ends it quietly with exit status 141 (128 + SIGPIPE, as a command killed
    by SIGPIPE), never a BrokenPipeError traceback."""
    previous = on_sigterm()
    try:
        try:
            try:
                return _main(argv)
            finally:
                sys.stdout.flush()  # inside the try: a reader gone is seen here, not at exit
        except BrokenPipeError:
            from tjap.cli.common import EXIT_CLOSED_STDOUT, silence_stdout, stdout_closed

            if not stdout_closed():
                raise
            silence_stdout()
            return EXIT_CLOSED_STDOUT
    except BaseException as exc:
        stop = interrupted_by(exc)
        if stop is None:
            raise
        return _interrupted(stop)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv) -> int:
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    from tjap.cli.bench import moved_experiment

    moved = moved_experiment(argv)
    if moved is not None:
        print(f"tjap: error: {moved}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    args.command_line = "tjap " + shlex.join(argv)  # what training runs record in metadata
    from tjap.cli.common import run_command

    return run_command(args.run, args)


def _interrupted(exc: KeyboardInterrupt) -> int:
    """Print the one line of an interrupted command; its exit status (143 SIGTERM, else 130)."""
    try:
        from tjap.core.executor import interruption_line

        print(interruption_line(exc), file=sys.stderr)
    except KeyboardInterrupt:  # a second Ctrl-C while saying so
        print("tjap: interrupted", file=sys.stderr)
    return 143 if isinstance(exc, Terminated) else 130


def on_sigterm():
    """Make SIGTERM stop the command as Ctrl-C does (raising :class:`tjap.core.errors.Terminated` in
    the main thread); returns the previous handler (None off the main thread, where none is
    installed)."""

    def terminate(signum, frame):
        raise Terminated

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, terminate)


if __name__ == "__main__":
    sys.exit(main())
