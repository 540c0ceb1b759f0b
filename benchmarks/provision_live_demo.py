"""``python -m benchmarks.provision_live_demo ...``: an alias of ``tjap provision live ...``.

A demonstration of seed 004's live mode: one predecessor/successor pair on a real (localhost, with
``--local``) Slurm, with a compressed slice of the LS6 trace as background load (``--trace``). See
``tjap provision live --help`` for the options (every one is passed on) and
:mod:`tjap.placement.slurm.chained`.

    python -m benchmarks.provision_live_demo --local --policy moe --trace placement/batch/data/ls6-a100.tsv --at 2023-03-02T12:00
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.common import parser
from tjap.cli import main as tjap_main


def build_parser() -> argparse.ArgumentParser:
    """This page for ``--help``; every other option is ``tjap provision live``'s."""
    return parser("provision_live_demo", __doc__)


def main(argv=None) -> int:
    """``tjap provision live`` with ``argv`` (which handles its errors and signals)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    _, options = build_parser().parse_known_args(argv)  # --help: this page
    return tjap_main(["provision", "live", *options])


if __name__ == "__main__":
    sys.exit(main())
