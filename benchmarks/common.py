"""Small helpers every benchmark shares: the runner convention (its parser, ``--out``, one-line
errors), tables, CSV, plots, progress bars, the sweep executor.

Tables, CSV, plots and the executor live in the tjap core (:mod:`tjap.core.report`,
:mod:`tjap.core.executor`), which the command line and the simulators use too; this module gathers them
for the benchmark scripts. Every runnable ``benchmarks/NAME.py`` has ``build_parser()`` (made with
:func:`parser`) and ``main(argv=None) -> int`` (wrapped in :func:`one_line_errors`), and runs as
``python -m benchmarks.NAME``; see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

from tjap.cli.common import executor_from_args  # noqa: F401
from tjap.core.executor import (  # noqa: F401
    CsvRows,
    TaskFailure,
    interruption_line,
    make_executor,
    progress,
)
from tjap.core.report import format_table, pyplot, save_figure, write_csv  # noqa: F401

#: Where a benchmark writes its files unless given ``--out DIR``.
OUT = "benchmarks/out"


def parser(name: str, doc: str) -> argparse.ArgumentParser:
    """The parser of ``python -m benchmarks.NAME``: the module's docstring ``doc`` as its
    description, and usage errors as one line on stderr, exit 2 (``tjap: error: ... (see python -m
    benchmarks.NAME --help)``), as every ``tjap`` command has them."""
    from tjap.cli.common import ArgumentParser

    return ArgumentParser(
        prog=f"python -m benchmarks.{name}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_out(p: argparse.ArgumentParser, what: str = "its files", default=OUT) -> None:
    """``--out DIR``: the folder a benchmark writes ``what`` to (default ``benchmarks/out``)."""
    p.add_argument(
        "--out",
        default=str(default),
        metavar="DIR",
        help=f"folder for {what} (default {default}; created if missing)",
    )


def write_result(folder, name: str, result) -> Path:
    """Write ``result`` as ``FOLDER/NAME.json`` (indented, the folder made when missing), say so
    on stdout, and return the path."""
    out = Path(folder) / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return out


def one_line_errors(main):
    """Wrap a benchmark's ``main(argv=None) -> int`` the way ``tjap`` runs its commands: bad input
    (a :class:`~tjap.core.errors.TjapError`) is one line ``tjap: error: ...`` on stderr and exit 2 (3
    when Slurm cannot be reached); Ctrl-C is one line naming the partial outputs kept, exit 130,
    and SIGTERM the same with exit 143 (so the servers a benchmark started are stopped)."""

    @functools.wraps(main)
    def run(argv=None) -> int:
        import signal

        from tjap.cli import on_sigterm
        from tjap.cli.common import run_command
        from tjap.core.errors import Terminated

        previous = on_sigterm()
        try:
            return run_command(main, argv)
        except KeyboardInterrupt as exc:
            print(interruption_line(exc), file=sys.stderr)
            return 143 if isinstance(exc, Terminated) else 130
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    return run
