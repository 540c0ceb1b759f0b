"""``tjap network ...``: seed 003's network-aware allocation commands."""

from __future__ import annotations


def add_parser(sub) -> None:
    from placement.network.cli import add_parser as add

    add(sub)
    sub.choices["network"].set_defaults(run=run)


def run(args) -> int:
    from placement.network.cli import run as run_network

    return run_network(args)
