"""Slurm's ``topology.yaml`` (Slurm 25.05 and later): several named topologies in one file.

The file is a YAML list; each entry names a topology (``topology: NAME``), may mark it
``cluster_default: true`` and defines exactly one of:

- ``tree:`` with ``switches:``, a list of ``switch: NAME`` entries holding ``nodes:`` (a leaf
  switch) or ``children:`` (the switches below it), each a hostlist expression or a YAML list of
  names: the same tree as ``topology.conf``'s ``SwitchName=`` lines;
- ``block:`` with ``blocks:``, a list of ``block: NAME`` / ``nodes:`` entries, and optionally
  ``block_sizes:`` (the base block size in nodes, then the larger sizes Slurm plans with): read
  as ``topology.conf``'s ``BlockName=`` lines and ``BlockSizes=`` are
  (:mod:`tjap.placement.tree.blocks`: base blocks become leaf switches, aggregated blocks the
  switches above them);
- ``flat: true``: Slurm's ``topology/flat``, which lists no switches and no nodes.

:meth:`~tjap.placement.tree.topology.Topology.from_slurm_yaml` builds one
topology of the file (by default the first marked ``cluster_default``, else the first);
:func:`slurm_yaml_topologies` lists them. A flat topology has no structure to place on: it is
refused, unless a node list is given, which becomes one switch over all the nodes.

Names must be strings: quote a name YAML would read as a number or a boolean (``"01"``,
``"on"``). Unknown keys are refused (a misspelt key would otherwise silently change the tree).
"""

from __future__ import annotations

from tjap.core.errors import InvalidInputError, is_int
from tjap.placement.tree.blocks import block_specs, parse_block_sizes
from tjap.placement.tree.sources import load_documents

#: The keys of one topology entry, of a tree switch and of a block.
TOPOLOGY_KEYS = ("topology", "cluster_default", "tree", "block", "flat")
SWITCH_KEYS = ("switch", "children", "nodes")
BLOCK_KEYS = ("block", "nodes")
_KINDS = ("tree", "block", "flat")


def _entries(source) -> tuple[list[dict], str]:
    """The file's topology entries, checked: each a mapping with a unique string name, known
    keys, a boolean ``cluster_default`` and exactly one kind."""
    documents, label = load_documents(source, "topology.yaml")
    if not documents:
        raise InvalidInputError(
            f"{label} is empty (nothing but blank lines and comments); list its topologies, "
            "e.g. '- topology: topo1' then '  tree:' or '  block:'"
        )
    if len(documents) != 1 or not isinstance(documents[0], list):
        if any(isinstance(d, dict) and "kind" in d for d in documents):
            raise InvalidInputError(
                f"{label} is a Kubernetes manifest, not a Slurm "
                "topology.yaml; read HyperNodes with "
                "Topology.from_hypernodes, nodes with from_node_labels"
            )
        raise InvalidInputError(
            f"{label} must be one YAML list of topologies, each starting "
            "'- topology: NAME'; write e.g. '- topology: topo1' then "
            "'  tree:' or '  block:'"
        )
    entries, seen = [], set()
    for i, entry in enumerate(documents[0]):
        where = f"{label}, entry {i + 1}"
        if not isinstance(entry, dict) or "topology" not in entry:
            raise InvalidInputError(
                f"{where} has no 'topology: NAME'; every entry starts with its name"
            )
        name = entry["topology"]
        if not isinstance(name, str) or not name:
            raise InvalidInputError(
                f"{where}: topology: {name!r} is not a name; give a non-empty string (quote it)"
            )
        where = f"{label}, topology {name!r}"
        if name in seen:
            raise InvalidInputError(f"{where} is defined twice; give each topology its own name")
        seen.add(name)
        _check_keys(entry, TOPOLOGY_KEYS, where)
        default = entry.get("cluster_default", False)
        if not isinstance(default, bool):
            raise InvalidInputError(
                f"{where}: cluster_default: {default!r} is not true or "
                "false; write cluster_default: true"
            )
        flat = entry.get("flat", False)
        if not isinstance(flat, bool):
            raise InvalidInputError(
                f"{where}: flat: {flat!r} is not true or false; write flat: true"
            )
        kinds = [k for k in _KINDS if k in entry and (k != "flat" or flat)]
        if len(kinds) != 1:
            raise InvalidInputError(
                f"{where} defines {' and '.join(kinds) if kinds else 'no topology type'}; "
                "give exactly one of tree:, block: or flat: true"
            )
        entries.append(
            {
                "name": name,
                "kind": kinds[0],
                "default": default,
                "body": entry.get(kinds[0]),
                "where": where,
            }
        )
    if not entries:
        raise InvalidInputError(f"{label} lists no topology; add '- topology: NAME' entries")
    return entries, label


def _check_keys(mapping: dict, allowed, where: str) -> None:
    unknown = [k for k in mapping if k not in allowed]
    if unknown:
        raise InvalidInputError(
            f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(allowed)}"
        )


def slurm_yaml_topologies(source) -> dict[str, str]:
    """The topologies of a ``topology.yaml``, in file order: name -> kind (``"tree"``,
    ``"block"`` or ``"flat"``). ``source`` is a path, the file's text (a string holding a
    newline) or the parsed list.

    Examples
    --------
    >>> slurm_yaml_topologies('''
    ... - topology: fabric
    ...   tree:
    ...     switches:
    ...       - switch: s1
    ...         nodes: n[1-4]
    ... - topology: none
    ...   flat: true
    ... ''')
    {'fabric': 'tree', 'none': 'flat'}
    """
    return {e["name"]: e["kind"] for e in _entries(source)[0]}


def slurm_yaml_default(source) -> str:
    """The name of the topology Slurm uses where a partition names none: the first marked
    ``cluster_default: true``, else the first of the file."""
    entries, _ = _entries(source)
    return next((e["name"] for e in entries if e["default"]), entries[0]["name"])


def _names(value, key: str, where: str, listed) -> list[str]:
    value = list(value) if isinstance(value, tuple) else value
    if not isinstance(value, (str, list)):
        raise InvalidInputError(
            f"{where}: {key}: must be a hostlist (n[1-4]) or a list of names, got {value!r:.60}"
        )
    try:
        names = listed(value, "switches" if key == "children" else "nodes")
    except InvalidInputError as error:
        raise InvalidInputError(f"{where}: {key}: {error}") from None
    if not names:
        raise InvalidInputError(f"{where}: {key}: is empty; list at least one name")
    return names


def _items(body, key: str, item: str, allowed, where: str) -> list:
    """The non-empty list under ``key`` of the mapping ``body`` (whose keys are ``allowed``)."""
    if not isinstance(body, dict):
        raise InvalidInputError(f"{where}: expected a mapping with '{key}:', got {body!r:.60}")
    _check_keys(body, allowed, where)
    items = body.get(key)
    if not isinstance(items, list) or not items:
        raise InvalidInputError(
            f"{where}: '{key}:' must be a non-empty list; write '{key}:' "
            f"then '- {item}: NAME' entries"
        )
    return items


def _named(item, key: str, allowed, where: str) -> tuple[str, str]:
    if not isinstance(item, dict) or key not in item:
        raise InvalidInputError(f"{where} is no '{key}: NAME' entry; got {item!r:.60}")
    name = item[key]
    if not isinstance(name, str) or not name:
        raise InvalidInputError(
            f"{where}: {key}: {name!r} is not a name; give a non-empty string (quote it)"
        )
    where = f"{where} ({key} {name!r})"
    _check_keys(item, allowed, where)
    return name, where


def _tree_specs(entry, listed) -> list:
    where = f"{entry['where']}, tree"
    specs = []
    for i, item in enumerate(_items(entry["body"], "switches", "switch", ("switches",), where)):
        name, at = _named(item, "switch", SWITCH_KEYS, f"{where}.switches[{i}]")
        if ("nodes" in item) == ("children" in item):
            raise InvalidInputError(
                f"{at} needs exactly one of nodes: (a leaf switch) or "
                "children: (the switches below it)"
            )
        key = "nodes" if "nodes" in item else "children"
        names = _names(item[key], key, at, listed)
        specs.append(
            (name, names if key == "nodes" else None, names if key == "children" else None, at)
        )
    return specs


def _block_specs(entry, listed) -> list:
    where = f"{entry['where']}, block"
    body = entry["body"]
    blocks = []
    for i, item in enumerate(_items(body, "blocks", "block", ("block_sizes", "blocks"), where)):
        name, at = _named(item, "block", BLOCK_KEYS, f"{where}.blocks[{i}]")
        if "nodes" not in item:
            raise InvalidInputError(f"{at} has no nodes:; list its nodes")
        blocks.append((name, _names(item["nodes"], "nodes", at, listed), at))
    sizes, sizes_at = body.get("block_sizes"), f"{where}.block_sizes"
    if sizes is not None:
        if is_int(sizes):
            sizes = [sizes]
        if not isinstance(sizes, list) or not sizes or not all(is_int(s) for s in sizes):
            raise InvalidInputError(
                f"{sizes_at}: {sizes!r:.60} is not a list of node counts; "
                "write e.g. block_sizes: [18, 36, 72]"
            )
        sizes = parse_block_sizes(",".join(map(str, sizes)), sizes_at, yaml=True)
    return block_specs(blocks, sizes, sizes_at if sizes else f"{where}.blocks")


def slurm_yaml_specs(source, name: str | None, listed, nodes=None) -> tuple[list, int | None]:
    """Switch definitions ``(name, nodes or None, switches or None, where)`` of one topology of
    a ``topology.yaml``, for ``Topology._from_specs``, and the base block size of a block
    topology (None for the other kinds).

    ``name`` None picks :func:`slurm_yaml_default`'s topology; ``listed(value, key)`` expands a
    hostlist or a list of names of ``key`` (``"nodes"`` or ``"switches"``) within tjap's size
    limits. ``nodes`` (a hostlist or a list of names) is the node list of a flat topology, which
    becomes one switch named after the topology; it is refused for the other kinds.
    """
    entries, label = _entries(source)
    if name is None:
        entry = next((e for e in entries if e["default"]), entries[0])
    else:
        entry = next((e for e in entries if e["name"] == name), None)
        if entry is None:
            listing = ", ".join(f"{e['name']} ({e['kind']})" for e in entries)
            raise InvalidInputError(
                f"{label} has no topology {name!r}; its topologies are {listing[:200]}"
            )
    if entry["kind"] == "flat":
        if nodes is None:
            raise InvalidInputError(
                f"{entry['where']} is flat (topology/flat): it lists no switches and no nodes, "
                "so there is no structure to place on; pick a tree or block topology, or give "
                "the node list (nodes=...) to place on one switch"
            )
        return [
            (entry["name"], _names(nodes, "nodes", entry["where"], listed), None, entry["where"])
        ], None
    if nodes is not None:
        raise InvalidInputError(
            f"{entry['where']} is a {entry['kind']} topology, which lists "
            "its own nodes; give nodes= for a flat topology only"
        )
    if entry["kind"] == "tree":
        return _tree_specs(entry, listed), None
    return _block_specs(entry, listed)
