"""Clusters drawn as levels: Kubernetes node labels (Kueue's topology-aware scheduling) and
Volcano HyperNodes, read as switch trees.

**Node labels.** Kueue describes a cluster's topology as levels, each a node label key, from the
top down (a Kueue ``Topology`` object: ``spec.levels[].nodeLabel``), e.g. block, rack, host.
A node's domain at a level is the tuple of its label values from the top level down to that one;
:meth:`~tjap.placement.tree.topology.Topology.from_node_labels` makes each domain a switch, the
domains of the lowest level leaf switches over their nodes. A level keyed by the hostname label
(``kubernetes.io/hostname``) is the node itself (named by its ``metadata.name``), not a switch;
it may only be the last level. A node that lacks a level's label is an error naming the node and
the label (Kueue leaves such nodes out of topology-aware scheduling; ``missing="skip"`` does the
same, with a warning that counts them).

A domain's switch name is the path of its label values joined by ``/``, each value
percent-encoded (``urllib.parse.quote`` with no safe characters: letters, digits and ``_.-~``
stay as they are, which is every character a Kubernetes label value may hold) and an empty value
written ``""``: rack ``r1`` of block ``b1`` is ``b1/r1``. The names are valid switch names and
distinct for distinct domains. Domains and nodes keep the order in which the nodes come
(``kubectl get nodes`` sorts them by name).

**HyperNodes.** Volcano describes the same trees as ``HyperNode`` objects
(``topology.volcano.sh/v1alpha1``): ``spec.tier`` (1 is the lowest) and ``spec.members``, each of
``type: Node`` or ``type: HyperNode`` with a ``selector``. Tier-1 HyperNodes hold nodes, chosen
by ``exactMatch: {name: ...}``, ``regexMatch: {pattern: ...}`` (matched anywhere in a node's
name, as Go's ``regexp.MatchString`` does: anchor it with ``^...$``) or ``labelMatch:
{matchLabels: {...}}``; the last two need the cluster's node list. Higher tiers hold HyperNodes
(``exactMatch`` by name) of lower tiers.
:meth:`~tjap.placement.tree.topology.Topology.from_hypernodes` makes each HyperNode a switch;
HyperNodes that no other one holds are joined under the implicit root, in the order of the
file. Members keep their order, a regular expression's nodes the node list's order.
"""

from __future__ import annotations

import re
import warnings
from urllib.parse import quote

from tjap.core.errors import InvalidInputError, is_int
from tjap.placement.tree.sources import load_documents

#: The node label Kubernetes sets to the node's host name; as a level it is the node itself.
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: What ``missing=`` of :func:`node_label_specs` accepts.
MISSING = ("error", "skip")


def domain_name(values) -> str:
    """The switch name of the domain whose label values, from the top level down, are
    ``values``: each percent-encoded, an empty one written ``""``, joined by ``/``.

    >>> domain_name(["b1", "r1"]), domain_name(["zone a/1", ""])
    ('b1/r1', 'zone%20a%2F1/""')
    """
    return "/".join(quote(v, safe="") if v else '""' for v in values)


# ---------------------------------------------------------------------------- reading the inputs
def _flatten(documents, kinds: tuple[str, ...], label: str) -> list:
    """The objects of parsed documents: a List's (or any mapping's) ``items``, a list's
    elements, or the document itself."""
    found = []
    for document in documents:
        if isinstance(document, dict) and "items" in document and document.get("kind") not in kinds:
            items = document["items"]
            if not isinstance(items, list):
                raise InvalidInputError(
                    f"{label}: 'items' must be a list of objects, got {type(items).__name__}"
                )
            found.extend(items)
        elif isinstance(document, (list, tuple)) and not _is_pair(document):
            found.extend(document)
        else:
            found.append(document)
    return found


def _empty_list(documents, label: str, what: str, fix: str) -> None:
    """Refuse, in one line, documents that are only Kubernetes Lists with no items
    (``kind: List``, ``items: []``): the file holds no ``what``."""
    if documents and all(isinstance(d, dict) and d.get("items") == [] for d in documents):
        raise InvalidInputError(
            f"{label} is a Kubernetes List with no items (items: []), so it holds no {what}; {fix}"
        )


def _is_pair(item) -> bool:
    return (
        isinstance(item, (list, tuple))
        and len(item) == 2
        and isinstance(item[0], str)
        and isinstance(item[1], dict)
    )


def read_nodes(nodes) -> list[tuple[str, dict]]:
    """``(name, labels)`` of every node of ``nodes``: the parsed output of ``kubectl get nodes
    -o json`` (a mapping with ``items``, each with ``metadata.name`` and ``metadata.labels``),
    a path to such a file (JSON or YAML), a list of Node objects, a list of ``(name, labels)``
    pairs or a list of names (no labels). Names are unique; label values are strings."""
    if isinstance(nodes, (dict, list, tuple)):
        documents, label = [nodes], "the node list"
    else:
        documents, label = load_documents(nodes, "node list")
    found, seen = [], set()
    for i, item in enumerate(_flatten(documents, ("Node",), label)):
        where = f"{label}, item {i + 1}"
        if isinstance(item, str):
            name, labels = item, {}
        elif _is_pair(item):
            name, labels = item
        elif isinstance(item, dict):
            if item.get("kind", "Node") != "Node":
                raise InvalidInputError(
                    f"{where} is a {item.get('kind')!r}, not a Node; give "
                    "kubectl get nodes -o json output"
                )
            meta = item.get("metadata")
            if not isinstance(meta, dict) or "name" not in meta:
                raise InvalidInputError(
                    f"{where} has no metadata.name; give Node objects as "
                    "kubectl get nodes -o json writes them"
                )
            name, labels = meta["name"], meta.get("labels") or {}
        else:
            raise InvalidInputError(
                f"{where} is neither a Node object, a (name, labels) pair nor a name: {item!r:.60}"
            )
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"{where}: node name {name!r} is not a non-empty string")
        if not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            raise InvalidInputError(
                f"{where}: the labels of node {name!r} must map strings to "
                "strings (quote numbers and booleans)"
            )
        if name in seen:
            raise InvalidInputError(f"{where}: node {name!r} appears twice; list each node once")
        seen.add(name)
        found.append((name, labels))
    if not found:
        _empty_list(
            documents,
            label,
            "node",
            "give kubectl get nodes -o json output of a cluster with nodes",
        )
        raise InvalidInputError(f"{label} holds no node; give kubectl get nodes -o json output")
    return found


def read_levels(levels) -> list[str]:
    """The label keys of the levels, top first: a list of keys, or a Kueue ``Topology`` object
    (a mapping, or a path to its YAML or JSON, or that text) whose ``spec.levels`` lists
    ``nodeLabel`` keys."""
    if isinstance(levels, (list, tuple)):
        keys, label = list(levels), "the levels"
    else:
        if isinstance(levels, dict):
            documents, label = [levels], "the Kueue Topology"
        else:
            documents, label = load_documents(levels, "Kueue Topology")
        _empty_list(
            documents,
            label,
            "Topology",
            "give a Kueue Topology (kind: Topology, spec.levels[].nodeLabel), e.g. kubectl get "
            "topology NAME -o yaml, or the label keys as a list",
        )
        objects = _flatten(documents, ("Topology",), label)  # a List's items (kubectl get -o yaml)
        topologies = [d for d in objects if isinstance(d, dict) and d.get("kind") == "Topology"]
        if len(topologies) != 1:
            kinds = sorted({str(d.get("kind")) for d in objects if isinstance(d, dict)})
            raise InvalidInputError(
                f"{label} must hold one object of kind Topology (spec.levels[].nodeLabel), "
                f"found {len(topologies)} (kinds: {', '.join(kinds) or 'none'}); give a Kueue "
                "Topology, or the label keys as a list"
            )
        spec = topologies[0].get("spec")
        entries = spec.get("levels") if isinstance(spec, dict) else None
        if not isinstance(entries, list) or not all(
            isinstance(e, dict) and "nodeLabel" in e for e in entries
        ):
            raise InvalidInputError(
                f"{label}: spec.levels must be a list of '- nodeLabel: KEY' entries"
            )
        keys = [e["nodeLabel"] for e in entries]
    if not keys:
        raise InvalidInputError(
            f"{label} lists no level; give label keys from the top level "
            "down, e.g. [block-label, rack-label, kubernetes.io/hostname]"
        )
    for i, key in enumerate(keys):
        if not isinstance(key, str) or not key.strip() or key != key.strip():
            raise InvalidInputError(f"{label}: level {i + 1} ({key!r}) is not a label key")
        if key in keys[:i]:
            raise InvalidInputError(f"{label}: label {key!r} is given twice; give each level once")
        if key == HOSTNAME_LABEL and i != len(keys) - 1:
            raise InvalidInputError(
                f"{label}: {HOSTNAME_LABEL} is level {i + 1} of "
                f"{len(keys)}; the hostname level (the node itself) can "
                "only be the last"
            )
    if keys == [HOSTNAME_LABEL]:
        raise InvalidInputError(
            f"{label} has only the hostname level; give at least one level "
            "above the nodes (a rack or block label)"
        )
    return keys


# ---------------------------------------------------------------------------- node labels
def node_label_specs(nodes, levels, missing: str = "error") -> list:
    """Switch definitions ``(name, nodes or None, switches or None, where)`` of the tree the
    labels of ``nodes`` (:func:`read_nodes`) draw at ``levels`` (:func:`read_levels`).

    ``missing="error"`` refuses a node without one of the levels' labels (one line naming the
    node and the label); ``"skip"`` leaves such nodes out and warns (``UserWarning``) with their
    count and the first of them.
    """
    if missing not in MISSING:
        raise InvalidInputError(f"missing={missing!r} is not one of {', '.join(MISSING)}")
    keys = read_levels(levels)
    switch_keys = [k for k in keys if k != HOSTNAME_LABEL]
    children: dict[tuple, dict] = {(): {}}  # domain -> its child domains, in order
    members: dict[tuple, list[str]] = {}  # lowest domain -> its nodes, in order
    skipped = []
    for name, labels in read_nodes(nodes):
        lacking = next((k for k in switch_keys if k not in labels), None)
        if lacking is not None:
            if missing == "skip":
                skipped.append((name, lacking))
                continue
            raise InvalidInputError(
                f"node {name!r} has no label {lacking!r}; label it, leave it out of the node "
                "list, or skip such nodes (missing='skip', --missing skip)"
            )
        path = tuple(labels[k] for k in switch_keys)
        for depth in range(1, len(path) + 1):
            children[path[: depth - 1]].setdefault(path[:depth], None)
            children.setdefault(path[:depth], {})
        members.setdefault(path, []).append(name)
    if skipped:
        name, key = skipped[0]
        warnings.warn(
            f"left out {len(skipped)} node(s) without a level's label (first: "
            f"{name!r}, no {key!r})",
            UserWarning,
            stacklevel=3,
        )
    if not members:
        raise InvalidInputError(
            f"no node has every level's label; check the label keys ({', '.join(switch_keys)})"
        )
    specs, stack = [], list(reversed(children[()]))
    while stack:  # depth first, parents before children
        domain = stack.pop()
        name = domain_name(domain)
        where = f"domain {name!r} ({', '.join(f'{k}={v}' for k, v in zip(switch_keys, domain))})"
        if len(domain) == len(switch_keys):
            specs.append((name, members[domain], None, where))
        else:
            kids = list(children[domain])
            specs.append((name, None, [domain_name(k) for k in kids], where))
            stack.extend(reversed(kids))
    return specs


# ---------------------------------------------------------------------------- HyperNodes
def _hypernodes(manifests) -> tuple[list[dict], str]:
    if isinstance(manifests, (dict, list, tuple)):
        documents, label = [manifests], "the HyperNodes"
    else:
        documents, label = load_documents(manifests, "HyperNode file")
    _empty_list(
        documents,
        label,
        "HyperNode",
        "give HyperNode objects (kind: HyperNode), e.g. kubectl get hypernodes -o yaml of a "
        "cluster that defines them",
    )
    found = []
    for i, item in enumerate(_flatten(documents, ("HyperNode",), label)):
        if not isinstance(item, dict) or item.get("kind", "HyperNode") != "HyperNode":
            what = item.get("kind") if isinstance(item, dict) else type(item).__name__
            raise InvalidInputError(
                f"{label}, object {i + 1} is a {what!r}, not a HyperNode; "
                "give HyperNode objects (kind: HyperNode)"
            )
        found.append(item)
    if not found:
        raise InvalidInputError(f"{label} holds no HyperNode; give kind: HyperNode objects")
    return found, label


def _selected(member: dict, where: str) -> tuple[str, dict]:
    """The selector kind (exactMatch, regexMatch or labelMatch) of a member, and its body."""
    selector = member.get("selector")
    if not isinstance(selector, dict) or len(selector) != 1:
        raise InvalidInputError(
            f"{where}: the selector must hold exactly one of exactMatch, regexMatch or labelMatch"
        )
    ((how, body),) = selector.items()
    if how not in ("exactMatch", "regexMatch", "labelMatch") or not isinstance(body, dict):
        raise InvalidInputError(
            f"{where}: selector {how!r} is not exactMatch: {{name: ...}}, "
            "regexMatch: {pattern: ...} or labelMatch: {matchLabels: ...}"
        )
    return how, body


def _match_nodes(how: str, body: dict, known, where: str) -> list[str]:
    """The node names a Node member's selector picks (``known``: the node list's (name, labels),
    or None)."""
    if how == "exactMatch":
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"{where}: exactMatch needs a node name (name: NODE)")
        if known is not None and name not in {n for n, _ in known}:
            raise InvalidInputError(
                f"{where}: node {name!r} is not in the node list; fix the "
                "name or give the full node list"
            )
        return [name]
    if known is None:
        raise InvalidInputError(
            f"{where}: {how} picks nodes from the cluster's node list; "
            "give it (nodes=..., tjap topology show --node-list FILE)"
        )
    if how == "regexMatch":
        pattern = body.get("pattern")
        try:
            regex = re.compile(pattern)
        except (re.error, TypeError, RecursionError, OverflowError) as error:
            raise InvalidInputError(
                f"{where}: regexMatch pattern {pattern!r:.60} is not a "
                f"regular expression ({error}); fix it"
            ) from None
        return [n for n, _ in known if regex.search(n)]
    if set(body) != {"matchLabels"} or not isinstance(body["matchLabels"], dict):
        raise InvalidInputError(
            f"{where}: labelMatch is read with matchLabels only; write "
            "labelMatch: {matchLabels: {KEY: VALUE}}"
        )
    wanted = body["matchLabels"].items()
    return [n for n, labels in known if all(labels.get(k) == v for k, v in wanted)]


def hypernode_specs(manifests, nodes=None) -> list:
    """Switch definitions ``(name, nodes or None, switches or None, where)`` of the tree that
    Volcano HyperNodes draw: ``manifests`` is a list of HyperNode objects, one of them, a List
    of them, or a path to (or the text of) a YAML or JSON file of them; ``nodes`` the cluster's
    node list (:func:`read_nodes`), needed by ``regexMatch`` and ``labelMatch`` members.

    Refused with one line: a member of an unknown HyperNode, a node or a HyperNode that is a
    member of two HyperNodes, HyperNodes that hold each other in a cycle, a tier-1 HyperNode
    holding HyperNodes or a higher one holding nodes, a member whose tier is not below its
    HyperNode's, and a HyperNode that selects nothing.
    """
    known = None if nodes is None else read_nodes(nodes)
    objects, label = _hypernodes(manifests)
    entries: dict[str, dict] = {}
    for i, obj in enumerate(objects):
        meta, spec = obj.get("metadata"), obj.get("spec")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"{label}, HyperNode {i + 1} has no metadata.name; name it")
        where = f"HyperNode {name!r}"
        if name in entries:
            raise InvalidInputError(f"{where} is defined twice; define each HyperNode once")
        if not isinstance(spec, dict):
            raise InvalidInputError(f"{where} has no spec; give spec.tier and spec.members")
        tier, members = spec.get("tier"), spec.get("members")
        if not is_int(tier) or tier < 1:
            raise InvalidInputError(
                f"{where}: spec.tier {tier!r} is not a positive integer; "
                "tier 1 holds nodes, higher tiers hold HyperNodes"
            )
        if not isinstance(members, list) or not members:
            raise InvalidInputError(f"{where}: spec.members must be a non-empty list")
        kinds = set()
        picked: dict[str, None] = {}
        for j, member in enumerate(members):
            at = f"{where} members[{j}]"
            if not isinstance(member, dict) or member.get("type") not in ("Node", "HyperNode"):
                raise InvalidInputError(f"{at}: type must be Node or HyperNode")
            how, body = _selected(member, at)
            kinds.add(member["type"])
            if member["type"] == "HyperNode":
                child = body.get("name")
                if how != "exactMatch" or not isinstance(child, str) or not child:
                    raise InvalidInputError(
                        f"{at}: a HyperNode member is named by exactMatch: {{name: HYPERNODE}}"
                    )
                picked.setdefault(child, None)
            else:
                for node in _match_nodes(how, body, known, at):
                    picked.setdefault(node, None)
        if len(kinds) > 1:
            raise InvalidInputError(
                f"{where} holds both nodes and HyperNodes; a HyperNode holds one or the other"
            )
        holds_nodes = kinds == {"Node"}
        if holds_nodes != (tier == 1):
            raise InvalidInputError(
                f"{where} is tier {tier} and holds {'nodes' if holds_nodes else 'HyperNodes'}; "
                "tier 1 holds nodes, higher tiers hold HyperNodes"
            )
        if not picked:
            raise InvalidInputError(f"{where} selects no node; fix its selectors or remove it")
        entries[name] = {
            "tier": tier,
            "nodes": holds_nodes,
            "members": list(picked),
            "where": where,
        }
    parent: dict[tuple[bool, str], str] = {}
    for name, entry in entries.items():
        for member in entry["members"]:
            key = (entry["nodes"], member)
            if not entry["nodes"] and member not in entries:
                raise InvalidInputError(
                    f"{entry['where']} holds unknown HyperNode {member!r}; "
                    "define it or remove the member"
                )
            if key in parent:
                what = "node" if entry["nodes"] else "HyperNode"
                raise InvalidInputError(
                    f"{what} {member!r} is a member of both HyperNode "
                    f"{parent[key]!r} and {name!r}; a {what} has one parent"
                )
            parent[key] = name
    for start in entries:  # HyperNodes that hold each other in a circle
        path, name = [start], parent.get((False, start))
        while name is not None and name not in path:
            path.append(name)
            name = parent.get((False, name))
        if name == start:
            chain = " in ".join(repr(n) for n in path + [start])
            raise InvalidInputError(
                f"HyperNodes form a cycle ({chain}); remove one of them from its parent's members"
            )
    for entry in entries.values():
        for member in [] if entry["nodes"] else entry["members"]:
            if entries[member]["tier"] >= entry["tier"]:
                raise InvalidInputError(
                    f"{entry['where']} (tier {entry['tier']}) holds HyperNode {member!r} of "
                    f"tier {entries[member]['tier']}; a member's tier must be below its "
                    "HyperNode's"
                )
    return [
        (
            name,
            e["members"] if e["nodes"] else None,
            None if e["nodes"] else e["members"],
            e["where"],
        )
        for name, e in entries.items()
    ]
