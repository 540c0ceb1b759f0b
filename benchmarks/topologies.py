"""The benchmark clusters of the Slurm comparisons, written as Slurm ``topology.conf`` files.

- ``irregular_2000.conf``: an irregular three-level tree of 2,000 nodes: a core switch, spine
  switches holding 4 to 9 leaf switches each, leaf switches of 8 to 32 nodes (uniform, seeded),
  rack-style node names (``r001n[01-17]``).
- ``fat_tree_k48.conf``: the paper's k = 48 fat-tree (27,648 nodes: 48 pods of 24 edge switches of
  24 nodes), as a plain switch tree a Slurm site would write (``n[00000-27647]``).

Regenerate (deterministic; tests/placement/tree/test_cluster_streams.py checks the shipped files are these)::

    python -m benchmarks.topologies
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.common import one_line_errors, parser
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.hostlist import compress_hostlist
from tjap.placement.tree.topology import Topology

FOLDER = Path(__file__).resolve().parent / "topologies"


def irregular_tree(
    num_nodes: int = 2000, leaf_sizes=(8, 32), leaves_per_spine=(4, 9), seed: int = 0
) -> Topology:
    """A three-level tree with uneven leaves and spines: leaf switches of ``leaf_sizes`` nodes
    (inclusive, uniform) under spines of ``leaves_per_spine`` leaves, until ``num_nodes`` nodes (the
    last leaf is cut to fit)."""
    rng = np.random.default_rng(seed)
    sizes = []
    while sum(sizes) < num_nodes:
        sizes.append(int(rng.integers(leaf_sizes[0], leaf_sizes[1] + 1)))
    sizes[-1] -= sum(sizes) - num_nodes
    if sizes[-1] < leaf_sizes[0]:  # too small to be a leaf: give it to the one before
        last = sizes.pop()
        sizes[-1] += last
    lines, spine, leaf = [], 0, 0
    spines = []
    while leaf < len(sizes):
        take = int(rng.integers(leaves_per_spine[0], leaves_per_spine[1] + 1))
        members = list(range(leaf, min(leaf + take, len(sizes))))
        spine += 1
        spines.append(f"spine{spine:02d}")
        for m in members:
            nodes = compress_hostlist([f"r{m + 1:03d}n{i:02d}" for i in range(1, sizes[m] + 1)])
            lines.append(f"SwitchName=leaf{m + 1:03d} Nodes={nodes}")
        lines.append(
            f"SwitchName={spines[-1]} Switches="
            + compress_hostlist([f"leaf{m + 1:03d}" for m in members])
        )
        leaf += take
    lines.append("SwitchName=core Switches=" + compress_hostlist(spines))
    return Topology.from_slurm("\n".join(lines))


def fat_tree_conf(k: int) -> str:
    """The k-ary fat-tree as a topology.conf with nodes ``n00000``...: the tree of
    ``FatTree(k=k)`` with Slurm-style names."""
    fat = FatTree(k=k)
    width = len(str(fat.num_nodes - 1))
    per_switch, per_pod = fat.nodes_per_switch, fat.switches_per_pod
    lines = []
    for e in range(fat.num_edge_switches):
        nodes = compress_hostlist(
            [
                f"n{i:0{width}d}"
                for i in range(e * per_switch, min((e + 1) * per_switch, fat.num_nodes))
            ]
        )
        lines.append(f"SwitchName=edge{e:04d} Nodes={nodes}")
    for p in range(fat.num_pods):
        edges = range(p * per_pod, min((p + 1) * per_pod, fat.num_edge_switches))
        lines.append(
            f"SwitchName=pod{p:02d} Switches=" + compress_hostlist([f"edge{e:04d}" for e in edges])
        )
    lines.append(
        "SwitchName=core Switches="
        + compress_hostlist([f"pod{p:02d}" for p in range(fat.num_pods)])
    )
    return "\n".join(lines) + "\n"


HEADER = "# {what}\n# written by `python -m benchmarks.topologies` (do not edit by hand)\n"


def files() -> dict[str, str]:
    """File name -> text of every benchmark topology."""
    return {
        "irregular_2000.conf": HEADER.format(
            what="irregular three-level tree: 2000 nodes, leaf switches of 8-32 nodes, 4-9 "
            "leaves per spine (seed 0)"
        )
        + irregular_tree().to_slurm(),
        "fat_tree_k48.conf": HEADER.format(
            what="k=48 fat-tree: 27648 nodes, 48 pods of 24 edge switches of 24 nodes"
        )
        + fat_tree_conf(48),
    }


def build_parser() -> argparse.ArgumentParser:
    p = parser("topologies", __doc__)
    p.add_argument(
        "--out",
        default=str(FOLDER),
        metavar="DIR",
        help="folder for the topology.conf files (default benchmarks/topologies, "
        "where the shipped ones are; created if missing)",
    )
    return p


@one_line_errors
def main(argv=None) -> int:
    """Write the clusters' files; print their paths."""
    out = Path(build_parser().parse_args(argv).out)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files().items():
        (out / name).write_text(text, encoding="utf-8")
        print(out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
