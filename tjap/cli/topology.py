"""``tjap topology show FILE``: what a cluster's switch tree looks like to tjap.

FILE is a Slurm ``topology.conf`` or ``topology.yaml``, a JSON tree (``Topology.to_dict()``),
``kubectl get nodes -o json`` output (with the label keys of the levels) or Volcano HyperNode
manifests, told apart by content (``--format`` names it). The command prints the switch levels,
the size of every level's switches, the node count and the depth-first node order that the SCAS
model uses as its static sequence; for a ``topology.yaml`` without ``--name``, every topology of
the file with its kind.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tjap.cli.common import add_common, print_json

#: ``--format`` choices: auto, then the kinds tjap.placement.tree.sources.file_kind tells apart.
FORMATS = ("auto", "conf", "json", "yaml", "kube-nodes", "hypernodes")


def add_parser(sub) -> None:
    """Add ``topology`` and its subcommands to the ``tjap`` parser."""
    p = sub.add_parser(
        "topology",
        help="read a cluster's switch tree (Slurm topology.conf or "
        "topology.yaml, JSON, Kubernetes node labels, HyperNodes)",
    )
    what = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    s = what.add_parser(
        "show",
        help="levels, switch sizes and node count of a switch tree",
        description="Read FILE (Slurm topology.conf or topology.yaml, .json as "
        "written by Topology.to_dict, kubectl get nodes -o json "
        "output with --levels or --kueue-topology, or Volcano "
        "HyperNode manifests) and print its switch levels, the "
        "sizes of each level's switches and the node count.",
    )
    s.add_argument(
        "file",
        metavar="FILE",
        help="topology.conf, topology.yaml, .json tree, node list or HyperNodes",
    )
    s.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="what FILE holds: conf (topology.conf), json (a tree), yaml (Slurm "
        "topology.yaml), kube-nodes (kubectl get nodes -o json), hypernodes "
        "(Volcano HyperNode manifests); auto (default) tells by content",
    )
    s.add_argument(
        "--name",
        metavar="NAME",
        help="topology.yaml: show this topology (default: every topology of the "
        "file, each with its kind)",
    )
    s.add_argument(
        "--levels",
        metavar="KEY,KEY,...",
        help="node list: the node label keys of the levels, top first (e.g. "
        "topology.kubernetes.io/zone,cloud.provider.com/topology-rack,"
        "kubernetes.io/hostname)",
    )
    s.add_argument(
        "--kueue-topology",
        metavar="FILE",
        help="node list: a Kueue Topology manifest whose spec.levels name the label "
        "keys (instead of --levels)",
    )
    s.add_argument(
        "--missing",
        choices=("error", "skip"),
        default="error",
        help="node list: a node without a level's label is an error (default) or is "
        "left out, counted on stderr (skip)",
    )
    s.add_argument(
        "--node-list",
        metavar="FILE",
        help="HyperNodes: the cluster's nodes (kubectl get nodes -o json), for "
        "members selected by regexMatch or labelMatch",
    )
    s.add_argument("--nodes", action="store_true", help="also list the nodes in depth-first order")
    add_common(s)
    p.set_defaults(run=run)


def summary(tree) -> dict:
    """Levels (leaf = 1), per level the switch count and the nodes under each switch."""
    import numpy as np

    under = tree.switch_spans()[1]  # nodes under each switch
    height = np.zeros(tree.num_switches, np.int64)  # level counted upward from the leaves
    height[tree.leaf_switches] = 1
    for s in range(tree.num_switches - 1, 0, -1):
        p = tree.switch_parent[s]
        height[p] = max(height[p], height[s] + 1)
    levels = []
    for level in range(1, int(height.max()) + 1):
        switches = np.flatnonzero(height == level)
        sizes = under[switches]
        levels.append(
            {
                "level": level,
                "switches": int(len(switches)),
                "min_nodes": int(sizes.min()),
                "max_nodes": int(sizes.max()),
                "names": [tree.switch_names[s] for s in switches],
            }
        )
    return {
        "nodes": tree.num_nodes,
        "switches": tree.num_switches,
        "levels": levels,
        "leaf_sizes": sorted({int(v) for v in tree.leaf_sizes}),
    }


def read_tree(args, kind: str):
    """The tree of ``args.file``, read as ``kind`` (a :data:`FORMATS` entry other than auto)."""
    import warnings

    from tjap.core.errors import InvalidInputError
    from tjap.placement.tree.sources import load_documents
    from tjap.placement.tree.topology import Topology

    if kind == "conf":
        return Topology.from_slurm(Path(args.file))
    if kind == "json":
        documents, label = load_documents(Path(args.file), "switch tree file")
        try:
            return Topology.from_dict(documents[0] if len(documents) == 1 else documents)
        except InvalidInputError as error:
            raise InvalidInputError(f"{args.file}: {error}") from None
    if kind == "yaml":
        return Topology.from_slurm_yaml(Path(args.file), args.name)
    if kind == "hypernodes":
        nodes = None if args.node_list is None else Path(args.node_list)
        return Topology.from_hypernodes(Path(args.file), nodes)
    levels = (
        Path(args.kueue_topology)
        if args.kueue_topology is not None
        else [key.strip() for key in args.levels.split(",")]
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tree = Topology.from_node_labels(Path(args.file), levels, missing=args.missing)
    for warning in caught:
        print(f"tjap: note: {warning.message}", file=sys.stderr)
    return tree


def _check_options(args, kind: str) -> None:
    """Refuse options that the file's kind does not read (one line naming the option)."""
    from tjap.core.errors import InvalidInputError

    used = {
        "--name": args.name is not None and kind != "yaml",
        "--levels": args.levels is not None and kind != "kube-nodes",
        "--kueue-topology": args.kueue_topology is not None and kind != "kube-nodes",
        "--missing": args.missing != "error" and kind != "kube-nodes",
        "--node-list": args.node_list is not None and kind != "hypernodes",
    }
    for option, wrong in used.items():
        if wrong:
            raise InvalidInputError(
                f"{option} does not apply to {args.file} ({kind}); see tjap topology show --help"
            )
    if kind == "kube-nodes" and (args.levels is None) == (args.kueue_topology is None):
        raise InvalidInputError(
            f"{args.file} is a node list: give the levels with --levels "
            "KEY,KEY,... or --kueue-topology FILE (one of them)"
        )


def run(args) -> int:
    from tjap.core.errors import InvalidInputError
    from tjap.placement.tree.sources import file_kind, read_utf8

    if not Path(args.file).exists():
        raise InvalidInputError(f"no such topology file: {args.file}")
    kind = args.format
    if kind == "auto":
        kind = file_kind(read_utf8(args.file, "topology file"), f"topology file {args.file!r}")
    _check_options(args, kind)
    if kind == "yaml" and args.name is None:
        return show_all(args)
    tree = read_tree(args, kind)
    out = summary(tree)
    if args.nodes:
        out["node_order"] = list(tree.node_names)
    if args.json:
        print_json(out)
        return 0
    title = args.file if args.name is None else f"{args.file}, topology {args.name!r}"
    print_summary(title, out)
    return 0


def show_all(args) -> int:
    """Every topology of a ``topology.yaml``, each with its kind (a flat one has no tree)."""
    from tjap.placement.tree.slurm_yaml import slurm_yaml_default, slurm_yaml_topologies
    from tjap.placement.tree.topology import Topology

    path = Path(args.file)
    kinds, default = slurm_yaml_topologies(path), slurm_yaml_default(path)
    rows = []
    for name, kind in kinds.items():
        row = {"name": name, "kind": kind, "cluster_default": name == default}
        if kind != "flat":
            tree = Topology.from_slurm_yaml(path, name)
            row.update(summary(tree))
            if args.nodes:
                row["node_order"] = list(tree.node_names)
        rows.append(row)
    if args.json:
        print_json({"topologies": rows})
        return 0
    print(f"{args.file}: {len(rows)} topolog{'y' if len(rows) == 1 else 'ies'}")
    for row in rows:
        title = f"topology {row['name']!r} ({row['kind']}" + (
            ", cluster default)" if row["cluster_default"] else ")"
        )
        if row["kind"] == "flat":
            print(f"{title}: flat, no switches or nodes listed; nothing to place on")
        else:
            print_summary(title, row)
    return 0


def print_summary(title: str, out: dict) -> None:
    """The summary of one tree as text (``out`` from :func:`summary`, ``node_order`` optional)."""
    from tjap.placement.tree.hostlist import compress_hostlist

    print(
        f"{title}: {out['nodes']} nodes under {out['switches']} switches, "
        f"{len(out['levels'])} level(s) (leaf switches = level 1)"
    )
    for row in out["levels"]:
        names = ", ".join(row["names"][:6]) + (", ..." if row["switches"] > 6 else "")
        print(
            f"  level {row['level']}: {row['switches']:5d} switch(es), {row['min_nodes']}-"
            f"{row['max_nodes']} nodes each  ({names})"
        )
    print(f"leaf switch sizes: {', '.join(map(str, out['leaf_sizes']))}")
    if "node_order" in out:
        print("node order (the SCAS sequence Q): " + compress_hostlist(out["node_order"]))
