"""``python -m benchmarks.provision_live_demo ...``: an alias of ``tjap provision live ...``.

A demonstration of seed 004's live mode: one predecessor/successor pair on a real (localhost, with
``--local``) Slurm, with a compressed slice of the LS6 trace as background load (``--trace``). See
``tjap provision live --help`` and :mod:`tjap.placement.slurm.chained`.

    python -m benchmarks.provision_live_demo --local --policy moe --trace placement/batch/data/ls6-a100.tsv --at 2023-03-02T12:00
"""

from __future__ import annotations

import sys

from tjap.cli import main as tjap_main


def main(argv=None) -> int:
    return tjap_main(["provision", "live", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
