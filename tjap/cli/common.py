"""What every ``tjap`` subcommand shares: argument types, the common flags and JSON output."""

from __future__ import annotations

import argparse
import json
import sys

from tjap.result import plain


def positive(kind=float, high: float = 1e9):
    """An argparse type: a number of ``kind`` in (0, high]."""
    word = "integer" if kind is int else "number"

    def parse(value):
        try:
            number = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive {word}, got {value!r}") from None
        if not 0 < number <= high:
            raise argparse.ArgumentTypeError(f"expected a positive {word} up to {high:g}, got {value!r}")
        return number
    return parse


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


def int_in(low: int, high: int):
    """An argparse type: an integer in [low, high]."""
    def parse(value):
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {value!r}") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"expected an integer in [{low}, {high}], got {value!r}")
        return number
    return parse


def add_common(p: argparse.ArgumentParser) -> None:
    """``--seed``, ``--json`` and ``--quiet``, which every subcommand takes."""
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def print_json(data) -> None:
    """Print ``data`` as indented JSON (numpy values as plain numbers, NaN as null)."""
    print(json.dumps(plain(data), indent=2, default=str, allow_nan=False))


def print_rows(result: dict, width: int = 22, skip=()) -> None:
    """Print a flat dict as aligned ``key value`` lines (floats with three decimals)."""
    for key, value in result.items():
        if key not in skip:
            print(f"{key:{width}s} {value:.3f}" if isinstance(value, float) else f"{key:{width}s} {value}")


def warn(message: str) -> None:
    print(f"tjap: {message}", file=sys.stderr)
