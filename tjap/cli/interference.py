"""``tjap interference ...``: seed 001's interference-aware placement commands."""

from __future__ import annotations


def add_parser(sub) -> None:
    from placement.interference.cli import add_parser as add

    add(sub)
    sub.choices["interference"].set_defaults(run=run)


def run(args) -> int:
    from placement.interference.cli import run as run_interference

    return run_interference(args)
