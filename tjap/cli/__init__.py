"""The ``tjap`` command line: one program, one module per family of subcommands.

Each family module has ``add_parser(sub)``, which adds its subcommands and sets ``run``, and
``run(args)``: ``tree`` (solve, generate, online, demo), ``topology`` (show), ``bench`` (the experiments), ``batch``
(simulate, provision), ``network``, ``interference``, ``train`` and ``methods``.

Exit codes: 0 success, 1 the job ran but failed (no solution found), 2 bad input or usage,
130 interrupted. Every error the user can cause prints one line ``tjap: error: ...`` and never a
traceback.
"""

from __future__ import annotations

import argparse
import shlex
import sys

import tjap
from tjap.cli import batch, bench, interference, methods, network, topology, train, tree
from tjap.errors import TjapError

FAMILIES = (tree, topology, bench, batch, network, interference, train, methods)


def build_parser() -> argparse.ArgumentParser:
    """The ``tjap`` argument parser with every family's subcommands."""
    parser = argparse.ArgumentParser(
        prog="tjap", description="Placement problems of HPC and ML clusters: exact models, Numba "
                                 "search and learned operators for four published systems.")
    parser.add_argument("--version", action="version", version=f"tjap {tjap.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for family in FAMILIES:
        family.add_parser(sub)
    return parser


def main(argv=None) -> int:
    """Run ``tjap`` with ``argv`` (default: the process arguments); returns the exit code."""
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    args = build_parser().parse_args(argv)
    args.command_line = "tjap " + shlex.join(argv)   # what training runs record in metadata
    try:
        return args.run(args)
    except TjapError as exc:
        print(f"tjap: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tjap: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
