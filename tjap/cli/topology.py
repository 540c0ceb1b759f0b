"""``tjap topology show FILE``: what a cluster's switch tree looks like to tjap.

FILE is a Slurm ``topology.conf`` or a JSON tree (``Topology.to_dict()``); the command prints the
switch levels, the size of every level's switches, the node count and the depth-first node order
that the SCAS model uses as its static sequence.
"""

from __future__ import annotations

from pathlib import Path

from tjap.cli.common import add_common, print_json


def add_parser(sub) -> None:
    """Add ``topology`` and its subcommands to the ``tjap`` parser."""
    p = sub.add_parser("topology", help="read a cluster's switch tree (Slurm topology.conf or JSON)")
    what = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    s = what.add_parser("show", help="levels, switch sizes and node count of a switch tree",
                        description="Read FILE (Slurm topology.conf, or .json as written by "
                                    "Topology.to_dict) and print its switch levels, the sizes "
                                    "of each level's switches and the node count.")
    s.add_argument("file", metavar="FILE", help="topology.conf or .json")
    s.add_argument("--nodes", action="store_true", help="also list the nodes in depth-first order")
    add_common(s)
    p.set_defaults(run=run)


def summary(tree) -> dict:
    """Levels (leaf = 1), per level the switch count and the nodes under each switch."""
    import numpy as np

    under = np.zeros(tree.num_switches, np.int64)
    np.add.at(under, tree.node_leaf, 1)
    for s in range(tree.num_switches - 1, 0, -1):       # parents come before their children
        under[tree.switch_parent[s]] += under[s]
    height = np.zeros(tree.num_switches, np.int64)      # level counted upward from the leaves
    height[tree.leaf_switches] = 1
    for s in range(tree.num_switches - 1, 0, -1):
        p = tree.switch_parent[s]
        height[p] = max(height[p], height[s] + 1)
    levels = []
    for level in range(1, int(height.max()) + 1):
        switches = np.flatnonzero(height == level)
        sizes = under[switches]
        levels.append({"level": level, "switches": int(len(switches)),
                       "min_nodes": int(sizes.min()), "max_nodes": int(sizes.max()),
                       "names": [tree.switch_names[s] for s in switches]})
    return {"nodes": tree.num_nodes, "switches": tree.num_switches, "levels": levels,
            "leaf_sizes": sorted({int(v) for v in tree.leaf_sizes})}


def run(args) -> int:
    from tjap.placement.tree.hostlist import compress_hostlist

    from tjap.placement.tree.topology import Topology

    tree = Topology.from_file(args.file)
    out = summary(tree)
    if args.nodes:
        out["node_order"] = list(tree.node_names)
    if args.json:
        print_json(out)
        return 0
    print(f"{args.file}: {out['nodes']} nodes under {out['switches']} switches, "
          f"{len(out['levels'])} level(s) (leaf switches = level 1)")
    for row in out["levels"]:
        names = ", ".join(row["names"][:6]) + (", ..." if row["switches"] > 6 else "")
        print(f"  level {row['level']}: {row['switches']:5d} switch(es), {row['min_nodes']}-"
              f"{row['max_nodes']} nodes each  ({names})")
    print(f"leaf switch sizes: {', '.join(map(str, out['leaf_sizes']))}")
    if args.nodes:
        print("node order (the SCAS sequence Q): " + compress_hostlist(list(tree.node_names)))
    return 0
