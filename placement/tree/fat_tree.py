"""The paper's pruned fat-tree layouts: a :class:`~tjap.placement.tree.topology.Topology` of three levels.

Nodes are numbered 0..num_nodes-1 from left to right (named ``"0"``..``"N-1"``);
``nodes_per_switch`` consecutive ids share an edge switch and ``switches_per_pod`` consecutive
switches share a pod. The last pod (and its last switch) may be partly pruned. As a tree: root
``"core"``, pods ``"pod0"``..., edge (leaf) switches ``"s0"``... .

A :class:`FatTree` is a :class:`Topology` like any other (the same node order, names and costs:
every cost comes from its count form, :mod:`tjap.placement.tree.tree_cost`); it also keeps the
arrays ``switch_of`` and ``pod_of``, the edge switch and pod of each node, which the learned
repair's features (NSA) and the paper reproductions read.
"""

from __future__ import annotations

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.placement.tree.topology import MAX_NODES, Topology

#: Hop levels of a node pair: same edge switch, same pod, different pods.
SAME_SWITCH, SAME_POD, OTHER_POD = 0, 1, 2

LAYOUTS = ("paper", "published")


#: The keys of a fat-tree's JSON form (:meth:`FatTree.from_dict`).
DICT_KEYS = ("k", "num_nodes", "nodes_per_switch", "switches_per_pod")


def _positive_int(name: str, value, most: int = MAX_NODES) -> int:
    """``value`` as an int in 1..``most`` (one line naming ``name`` otherwise)."""
    value = check_int(name, value, 1)
    if value > most:
        raise InvalidInputError(
            f"{name}={value:,} is more than tjap supports: a topology has at most "
            f"{MAX_NODES:,} nodes (tjap.placement.tree.topology.MAX_NODES); give {name} <= {most:,}"
        )
    return int(value)


class FatTree(Topology):
    """A pruned fat-tree with nodes numbered left to right: the paper's layouts as a
    :class:`Topology` (root ``"core"``, pods, edge switches, nodes ``"0"``..``"N-1"``).

    Either give the radix ``k`` (the paper's k-ary fat-tree: k/2 nodes per edge switch, k/2 edge
    switches per pod, k^3/4 nodes at most) or the general layout ``nodes_per_switch`` and
    ``switches_per_pod``.

    Examples
    --------
    >>> FatTree(k=20, num_nodes=1000).num_pods          # the paper's text: 10 pods of 100
    10
    >>> FatTree(num_nodes=1000, nodes_per_switch=10, switches_per_pod=4).num_pods  # published code
    25
    >>> FatTree(k=4).num_levels, FatTree(k=4).switch_names[:3]   # a Topology: core, pods, switches
    (3, ('core', 'pod0', 's0'))
    """

    __slots__ = ("k", "nodes_per_switch", "switches_per_pod", "switch_of", "pod_of")

    def __init__(self, k=None, num_nodes=None, nodes_per_switch=None, switches_per_pod=None):
        if k is not None:
            k = _positive_int("k", k, 2 * MAX_NODES)
            if k % 2:
                raise InvalidInputError(
                    f"k must be even (a k-ary fat-tree has k/2 ports down), got {k}"
                )
            if nodes_per_switch is not None or switches_per_pod is not None:
                raise InvalidInputError(
                    "give either k or nodes_per_switch and switches_per_pod, not both"
                )
            nodes_per_switch = switches_per_pod = k // 2
            capacity = k**3 // 4
            if num_nodes is None and capacity > MAX_NODES:
                raise InvalidInputError(
                    f"k={k} gives a fat-tree of {capacity:,} nodes, more than tjap supports "
                    f"({MAX_NODES:,} nodes, tjap.placement.tree.topology.MAX_NODES); give a smaller "
                    "k or num_nodes too"
                )
            num_nodes = capacity if num_nodes is None else _positive_int("num_nodes", num_nodes)
            if num_nodes > capacity:
                raise InvalidInputError(
                    f"num_nodes={num_nodes} exceeds the k={k} fat-tree's {capacity} nodes; "
                    "use a larger k"
                )
        else:
            if num_nodes is None or nodes_per_switch is None or switches_per_pod is None:
                raise InvalidInputError(
                    "FatTree needs k, or all of num_nodes, nodes_per_switch and switches_per_pod"
                )
            num_nodes = _positive_int("num_nodes", num_nodes)
            nodes_per_switch = _positive_int("nodes_per_switch", nodes_per_switch)
            switches_per_pod = _positive_int("switches_per_pod", switches_per_pod)
        ids = np.arange(num_nodes, dtype=np.int64)
        switch_of = ids // nodes_per_switch
        pod_of = ids // (nodes_per_switch * switches_per_pod)
        switch_of.setflags(write=False)
        pod_of.setflags(write=False)
        for name, value in (
            ("k", k),
            ("nodes_per_switch", nodes_per_switch),
            ("switches_per_pod", switches_per_pod),
            ("switch_of", switch_of),
            ("pod_of", pod_of),
        ):
            object.__setattr__(self, name, value)
        num_edge = -(-num_nodes // nodes_per_switch)
        num_pods = -(-num_nodes // (nodes_per_switch * switches_per_pod))
        names, parent, leaf_index = ["core"], [-1], np.empty(num_edge, dtype=np.int64)
        for p in range(num_pods):
            pod_index = len(names)
            names.append(f"pod{p}")
            parent.append(0)
            for e in range(p * switches_per_pod, min((p + 1) * switches_per_pod, num_edge)):
                leaf_index[e] = len(names)
                names.append(f"s{e}")
                parent.append(pod_index)
        super().__init__(names, parent, [str(i) for i in range(num_nodes)], leaf_index[switch_of])

    @classmethod
    def from_layout(cls, layout: str, num_nodes: int = 1000) -> "FatTree":
        """The two named 1000-node layouts: ``"paper"`` (k=20, 10 pods of 100) or ``"published"``
        (the authors' code: 10 nodes per switch, 4 switches per pod, 25 pods of 40)."""
        if layout == "paper":
            return cls(k=20, num_nodes=num_nodes)
        if layout == "published":
            return cls(num_nodes=num_nodes, nodes_per_switch=10, switches_per_pod=4)
        raise InvalidInputError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")

    @property
    def nodes_per_pod(self) -> int:
        return self.nodes_per_switch * self.switches_per_pod

    @property
    def num_edge_switches(self) -> int:
        """Number of edge (leaf) switches; :attr:`num_switches` counts pods and the core too."""
        return -(-self.num_nodes // self.nodes_per_switch)

    @property
    def num_pods(self) -> int:
        return -(-self.num_nodes // self.nodes_per_pod)

    def hop_level(self, a: int, b: int) -> int:
        """0 if nodes ``a`` and ``b`` share an edge switch, 1 if they share a pod, else 2."""
        if self.switch_of[a] == self.switch_of[b]:
            return SAME_SWITCH
        if self.pod_of[a] == self.pod_of[b]:
            return SAME_POD
        return OTHER_POD

    def to_dict(self) -> dict:
        return {
            "num_nodes": self.num_nodes,
            "nodes_per_switch": self.nodes_per_switch,
            "switches_per_pod": self.switches_per_pod,
        }

    @classmethod
    def from_dict(cls, data) -> "FatTree":
        """Read :meth:`to_dict`'s form, ``{"num_nodes", "nodes_per_switch",
        "switches_per_pod"}``, or the radix form ``{"k": K}`` / ``{"k": K, "num_nodes": N}``
        (``FatTree(k=K, num_nodes=N)``). Any other key is refused."""
        if not isinstance(data, dict):
            raise InvalidInputError(f"topology must be an object, got {type(data).__name__}")
        unknown = sorted(map(str, set(data) - set(DICT_KEYS)))
        if unknown:
            raise InvalidInputError(
                f"topology has unknown key(s) {', '.join(map(repr, unknown))}; a fat-tree takes "
                "num_nodes, nodes_per_switch and switches_per_pod, or k (and optionally "
                "num_nodes); other switch trees are {'tree': ...}, {'slurm': PATH} or "
                "{'json': PATH}"
            )
        if "k" in data:
            return cls(
                k=data["k"],
                num_nodes=data.get("num_nodes"),
                nodes_per_switch=data.get("nodes_per_switch"),
                switches_per_pod=data.get("switches_per_pod"),
            )
        missing = {"num_nodes", "nodes_per_switch", "switches_per_pod"} - set(data)
        if missing:
            raise InvalidInputError(
                f"topology is missing field(s) {', '.join(sorted(missing))}; "
                "give num_nodes, nodes_per_switch and switches_per_pod, or k"
            )
        return cls(
            num_nodes=data["num_nodes"],
            nodes_per_switch=data["nodes_per_switch"],
            switches_per_pod=data["switches_per_pod"],
        )

    def as_tree(self) -> Topology:
        """The same switches and nodes as a plain :class:`Topology`: the same costs (both come
        from the count form) and the same answers of every method that takes any tree."""
        return Topology(self.switch_names, self.switch_parent, self.node_names, self.node_leaf)

    def __eq__(self, other) -> bool:
        return isinstance(other, FatTree) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.to_dict().values()))

    def __reduce__(self):
        if self.k is not None:
            return (FatTree, (self.k, self.num_nodes))
        return (FatTree, (None, self.num_nodes, self.nodes_per_switch, self.switches_per_pod))

    def __repr__(self) -> str:
        if self.k is not None:
            return f"FatTree(k={self.k}, num_nodes={self.num_nodes})"
        return (
            f"FatTree(num_nodes={self.num_nodes}, nodes_per_switch={self.nodes_per_switch}, "
            f"switches_per_pod={self.switches_per_pod})"
        )
