"""slurm-block against a real multi-node Slurm 24.11 with ``topology/block`` (``-m slurm``; skipped
with the reason when Slurm 24.11 is not built by ``.ci/build-slurm-newer`` or we are not root).

Two clusters with uneven base blocks, each exercising a rule that Slurm's code has and a simpler
reading would miss; every window's jobs are submitted one at a time in window order
(:class:`benchmarks.slurm_block_validation.SlurmPlacer`) and each job's node set, or its staying
pending, must be what ``tjap.solve(window, "slurm-block")`` says.

- ``SEVEN``: 33 nodes in 7 base blocks of 4-6, ``BlockSizes=4,8``: pairs of blocks under the
  implicit root. A job of three base blocks goes to the whole cluster, counted as its first
  three pairs only (7 // 2): with 7 idle nodes in the pair b3-b4 and 5 in the lone b7, 11 nodes
  stay pending although two "llblocks" hold 12.
- ``TOP``: 34 nodes in 7 base blocks of 4-5, ``BlockSizes=4,8,16,32``: the top block is counted
  as 8 base blocks, so 30 nodes (8 base blocks' worth) go to it, and 33 (9) to the whole
  cluster, whose one llblock (the top block, 8 > 7) Slurm never counts: ``sbatch`` refuses the
  job although all 34 nodes are idle.
"""

from __future__ import annotations

import pytest

import tjap
from benchmarks.slurm_block_validation import SlurmPlacer, compare
from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig, newer_slurm_available
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window

_REASON = newer_slurm_available()
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(_REASON is not None, reason=f"no Slurm 24.11: {_REASON}"),
]


def blocks(sizes, block_sizes):
    """Base blocks b1, b2 ... of the given node counts (nodes n1, n2 ... in order)."""
    lines, first = [], 1
    for i, size in enumerate(sizes):
        lines.append(f"BlockName=b{i + 1} Nodes=n[{first}-{first + size - 1}]")
        first += size
    text = "\n".join(lines) + "\nBlockSizes=" + ",".join(map(str, block_sizes)) + "\n"
    return Topology.from_slurm(text)


def nodes(*ranges, but=()):
    return [f"n{i}" for a, b in ranges for i in range(a, b + 1) if i not in but]


#: (base block sizes, BlockSizes, windows: (idle nodes, jobs, which jobs stay pending))
CASES = {
    "seven-blocks": (
        [5, 4, 4, 4, 6, 5, 5],
        [4, 8],
        [
            # two jobs of 9 (each: two pairs' worth, the whole cluster), then 11 pending, then 1
            (nodes((1, 33), but=(2, 13, 26)), [9, 9, 11, 1], [False, False, True, False]),
            # --exclusive=topo jobs keep base blocks to themselves; segments of 2 go one by one
            (
                nodes((1, 33), but=(5, 10, 15, 20, 25, 30)),
                [
                    {"nodes": 1, "exclusive": True},
                    {"nodes": 8, "segment": 2},
                    6,
                    {"nodes": 4, "exclusive": True},
                ],
                [False, False, False, True],
            ),
        ],
    ),
    "short-top-block": (
        [4, 5, 5, 5, 5, 5, 5],
        [4, 8, 16, 32],
        [
            (nodes((1, 34)), [33], [True]),  # sbatch refuses it outright
            (nodes((1, 34), but=(3, 12)), [30, 2], [False, False]),
        ],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_slurm_places_like_slurm_block(name):
    sizes, block_sizes, windows = CASES[name]
    tree = blocks(sizes, block_sizes)
    with LocalSlurm(LocalSlurmConfig.for_blocks(tree, block_sizes, slurm="24.11")) as slurm:
        placer = SlurmPlacer(slurm)
        for idle, jobs, pending in windows:
            window = Window(tree, idle, jobs)
            row = compare(window, placer.place(window))
            assert row["same"] == [True] * len(jobs), row["differences"]
            assert [nodes is None for nodes in row["slurm"]] == pending, row["slurm"]
            result = tjap.solve(window, "slurm-block")
            assert result.info.get("unplaced", []) == [j for j, p in enumerate(pending) if p]
            if jobs == [33]:
                assert placer.refused == [0]
