"""The ``tjap`` command line: one program, one module per family of subcommands.

Each family module has ``add_parser(sub)``, which adds its subcommands and sets ``run``, and
``run(args)``: ``tree`` (solve, generate, online, demo), ``topology`` (show), ``bench`` (the experiments), ``batch``
(simulate, provision), ``slurm`` (place, advise), ``network``, ``interference``, ``train`` and ``methods``.

Exit codes: 0 success, 1 the job ran but failed (no solution found), 2 bad input or usage,
130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 141 stdout closed by its reader (``| head``;
quietly). Every error the user can
cause prints one line ``tjap: error: ...`` (usage errors add ``(see tjap CMD --help)``) and never a
traceback.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading

import tjap
from tjap.cli import (batch, bench, interference, methods, network, slurm, topology, train,
                      tree)
from tjap.cli.common import EXIT_CLOSED_STDOUT, ArgumentParser, silence_stdout, stdout_closed
from tjap.errors import TjapError

FAMILIES = (tree, topology, bench, batch, slurm, network, interference, train, methods)


def build_parser() -> argparse.ArgumentParser:
    """The ``tjap`` argument parser with every family's subcommands."""
    parser = ArgumentParser(   # one-line usage errors, for every subcommand (they inherit it)
        prog="tjap", description="Placement problems of HPC and ML clusters: exact models, Numba "
                                 "search and learned operators for four published systems.")
    parser.add_argument("--version", action="version", version=f"tjap {tjap.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for family in FAMILIES:
        family.add_parser(sub)
    return parser


def main(argv=None) -> int:
    """Run ``tjap`` with ``argv`` (default: the process arguments); returns the exit code.

    A closed stdout (``tjap methods | head -1``) ends the command quietly with exit status 141
    (128 + SIGPIPE, as a command killed by SIGPIPE), never a BrokenPipeError traceback."""
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()   # inside the try: a reader gone is seen here, not at exit
    except BrokenPipeError:
        if not stdout_closed():
            raise
        silence_stdout()
        return EXIT_CLOSED_STDOUT


def _main(argv) -> int:
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    args = build_parser().parse_args(argv)
    args.command_line = "tjap " + shlex.join(argv)   # what training runs record in metadata
    previous = _on_sigterm()
    try:
        return args.run(args)
    except TjapError as exc:
        print(f"tjap: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:   # Ctrl-C, or SIGTERM as executor.Terminated
        from tjap.executor import Terminated, interruption_line

        print(interruption_line(exc), file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _on_sigterm():
    """Make SIGTERM stop the command as Ctrl-C does (raising executor.Terminated in the main
    thread); returns the previous handler (None off the main thread, where none is installed)."""
    from tjap.executor import Terminated

    def terminate(signum, frame):
        raise Terminated

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, terminate)


if __name__ == "__main__":
    sys.exit(main())
