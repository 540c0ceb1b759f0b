"""A tree of switches over named compute nodes: any depth, uneven fan-out and leaf sizes.

A :class:`Topology` is what a scheduler builder knows about their cluster's network: leaf
switches holding compute nodes, switches above them, one root. It reads Slurm's
``topology.conf`` (:meth:`Topology.from_slurm`) and ``topology.yaml``
(:meth:`Topology.from_slurm_yaml`), Kubernetes node labels at Kueue's topology levels
(:meth:`Topology.from_node_labels`), Volcano HyperNodes (:meth:`Topology.from_hypernodes`), a
JSON-ready dict (:meth:`Topology.from_dict`) or a networkx tree (:meth:`Topology.from_networkx`).
The paper's fat-tree layouts are the same kind of tree:
:class:`~tjap.placement.tree.fat_tree.FatTree` is a subclass (the same node order and costs, with
the arrays its fast kernels take).

Conventions
-----------
- **Switch order.** Switches are listed depth first, parent before children (pre-order), a
  switch's children in the order its definition lists them; the root is switch 0 and
  ``switch_parent[i] < i`` for every other switch.
- **Node order.** ``node_names`` lists nodes depth first: leaf switches in switch order, a leaf's
  nodes in the order its definition lists them. This is the static node sequence Q of the SCAS
  model; node ``i`` is index ``i`` everywhere.
- **Leaves.** A switch holds either compute nodes (a leaf switch) or switches, never both and
  never neither. Leaves may sit at different depths.
- **Levels.** Counted upward from a node's leaf switch (= level 1); ``num_levels`` is the largest
  number of switches on a path from a node up to the root.
- **Implicit root.** Several top-level switches (switches no other switch lists) are joined under
  one added switch named ``"(root)"`` (:data:`IMPLICIT_ROOT`), so that every tree has one root;
  :meth:`Topology.to_slurm` leaves it out again. A single top-level switch is the root itself.
- **Names.** Switch names and node names are separate name spaces; names are non-empty and
  contain no whitespace, commas, brackets, ``=``, ``#`` or ``\\``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from tjap.core.errors import InvalidInputError, check_int, is_int
from tjap.placement.tree.blocks import block_specs, parse_block_sizes
from tjap.placement.tree.hostlist import compress_hostlist, expand_hostlist
from tjap.placement.tree.sources import read_utf8
from tjap.placement.tree.tree_cost import CountForm, count_groups

#: Name of the switch added above several top-level switches.
IMPLICIT_ROOT = "(root)"

#: The most compute nodes (and the most switches) of a tree tjap reads or builds: every reader
#: and constructor refuses a larger size (one line, before allocating anything of that size).
MAX_NODES = 1_000_000
#: The most switches of a tree (a switch tree has at least one node under each leaf switch).
MAX_SWITCHES = MAX_NODES

_BAD_NAME = re.compile(r"[\s,\[\]=#\\]")


def _where(where: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"{where}: {message}" if where else message)


#: The advice of an error about a tree larger than tjap supports.
_SIZE_FIX = (
    f"tjap supports switch trees of at most {MAX_NODES:,} nodes and {MAX_SWITCHES:,} "
    "switches (tjap.placement.tree.topology.MAX_NODES, MAX_SWITCHES)"
)


def _block_size(value, leaf_sizes) -> int | None:
    """A ``topology/block`` cluster's base block size, checked: a whole number of nodes from 1
    to the smallest block's size (None: a switch tree)."""
    if value is None:
        return None
    smallest = int(leaf_sizes.min())
    check_int(
        "block_size",
        value,
        1,
        smallest,
        must=f"a whole number of nodes from 1 to the smallest block's {smallest}",
    )
    return int(value)


def _rebuild(cls, args, block_size):
    """Unpickle a :class:`Topology` (its block size is a keyword)."""
    return cls(*args, block_size=block_size)


def _check_size(num_nodes: int, num_switches: int, where: str = "") -> None:
    """Refuse a tree of more nodes or switches than tjap supports (before building it)."""
    if num_nodes > MAX_NODES:
        raise _where(where, f"the tree has more than {MAX_NODES:,} nodes; {_SIZE_FIX}")
    if num_switches > MAX_SWITCHES + 1:  # + an implicit root
        raise _where(where, f"the tree has more than {MAX_SWITCHES:,} switches; {_SIZE_FIX}")


def _listed(value, key: str, counts: dict) -> list[str]:
    """The names listed under ``key`` ("nodes" or "switches") of one switch: a hostlist
    expression (expanded only up to what tjap supports) or a list of names. ``counts[key]``
    counts the names of that key read so far; more than tjap supports are refused."""
    most = MAX_NODES if key == "nodes" else MAX_SWITCHES
    if isinstance(value, str):
        room = most - counts[key]  # expanded only as far as the tree may still grow
        fix = (
            _SIZE_FIX
            if room == most
            else f"with the {counts[key]:,} {key} listed before "
            f"it, the tree would have more than {most:,}; {_SIZE_FIX}"
        )
        names = expand_hostlist(value, room, fix) if value else []
    else:
        names = list(_check_names(value, "node" if key == "nodes" else "switch"))
    counts[key] += len(names)
    if counts[key] > most:
        raise InvalidInputError(f"the tree lists more than {most:,} {key}; {_SIZE_FIX}")
    return names


def _check_names(names, what: str, where: str = "") -> tuple[str, ...]:
    names = tuple(names)
    for name in names:
        if not isinstance(name, str) or not name or _BAD_NAME.search(name):
            raise _where(
                where,
                f"{what} name {name!r} is not allowed; names are non-empty, "
                "without whitespace, commas, brackets, '=', '#' or '\\'",
            )
    return names


def _frozen_int_array(values, what: str) -> np.ndarray:
    try:
        array = np.array(values, dtype=np.int64, ndmin=1)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(f"{what} must be a list of integers, got {values!r:.80}") from None
    if array.ndim != 1:
        raise InvalidInputError(f"{what} must be one-dimensional, got shape {array.shape}")
    array.setflags(write=False)
    return array


class Topology:
    """A rooted tree of switches over named compute nodes (see the module's conventions).

    Build one with :meth:`from_slurm`, :meth:`from_slurm_yaml`, :meth:`from_node_labels`,
    :meth:`from_hypernodes`, :meth:`from_dict`, :meth:`from_networkx`,
    or ``FatTree(...)`` (a subclass); the constructor takes the canonical arrays and
    checks them. The tree is immutable.

    Parameters
    ----------
    switch_names : sequence of str
        Switch names in depth-first pre-order (the root first).
    switch_parent : sequence of int
        Parent switch index of each switch, -1 for the root (and only for it).
    node_names : sequence of str
        Compute node names in depth-first order.
    node_leaf : sequence of int
        Leaf switch index of each node (non-decreasing, since nodes are depth first).

    Examples
    --------
    >>> tree = Topology.from_slurm('''
    ... SwitchName=leaf1 Nodes=n[01-04]
    ... SwitchName=leaf2 Nodes=n[05-06]
    ... SwitchName=spine Switches=leaf[1-2]
    ... ''')
    >>> tree.switch_names, tree.num_nodes, tree.num_levels
    (('spine', 'leaf1', 'leaf2'), 6, 2)
    >>> tree.leaf_sizes.tolist(), tree.node_index("n05"), tree.ancestors("n05")
    ([4, 2], 4, (2, 0))
    """

    __slots__ = (
        "switch_names",
        "switch_parent",
        "node_names",
        "node_leaf",
        "switch_depth",
        "leaf_switches",
        "leaf_sizes",
        "num_levels",
        "_node_ids",
        "_switch_ids",
        "_count_form",
        "block_size",
    )
    # the slots' types, for static readers (set once, in __init__)
    switch_names: tuple[str, ...]
    switch_parent: np.ndarray
    node_names: tuple[str, ...]
    node_leaf: np.ndarray
    switch_depth: np.ndarray
    leaf_switches: np.ndarray
    leaf_sizes: np.ndarray
    num_levels: int
    block_size: int | None

    def __init__(self, switch_names, switch_parent, node_names, node_leaf, *, block_size=None):
        switch_names, node_names = tuple(switch_names), tuple(node_names)
        _check_size(len(node_names), len(switch_names))
        switch_names = _check_names(switch_names, "switch")
        node_names = _check_names(node_names, "node")
        parent = _frozen_int_array(switch_parent, "switch_parent")
        leaf = _frozen_int_array(node_leaf, "node_leaf")
        num_switches, num_nodes = len(switch_names), len(node_names)
        if num_switches == 0 or num_nodes == 0:
            raise InvalidInputError("a switch tree needs at least one switch and one node")
        if len(parent) != num_switches:
            raise InvalidInputError(
                f"switch_parent has {len(parent)} entries for "
                f"{num_switches} switches; give one parent per switch"
            )
        if len(leaf) != num_nodes:
            raise InvalidInputError(
                f"node_leaf has {len(leaf)} entries for {num_nodes} nodes; give one per node"
            )
        switch_ids = {name: i for i, name in enumerate(switch_names)}
        if len(switch_ids) != num_switches:
            raise InvalidInputError(
                f"switch {_first_duplicate(switch_names)!r} appears twice; "
                "switch names must be unique"
            )
        node_ids = {name: i for i, name in enumerate(node_names)}
        if len(node_ids) != num_nodes:
            raise InvalidInputError(
                f"node {_first_duplicate(node_names)!r} appears twice; node names must be unique"
            )
        depth = _preorder_depths(switch_names, parent)
        has_child = np.zeros(num_switches, dtype=bool)
        has_child[parent[1:]] = True
        if leaf.min() < 0 or leaf.max() >= num_switches:
            raise InvalidInputError(
                f"node_leaf must hold switch indices 0..{num_switches - 1}, "
                f"got {int(leaf.min() if leaf.min() < 0 else leaf.max())}"
            )
        if np.any(np.diff(leaf) < 0):
            i = int(np.flatnonzero(np.diff(leaf) < 0)[0]) + 1
            raise InvalidInputError(
                f"node {node_names[i]!r} is out of depth-first order (its leaf switch comes "
                "before the previous node's); list nodes leaf by leaf in switch order"
            )
        sizes = np.bincount(leaf, minlength=num_switches)
        for s in range(num_switches):
            if has_child[s] and sizes[s]:
                raise InvalidInputError(
                    f"switch {switch_names[s]!r} has both nodes and child switches; a switch "
                    "holds either nodes (a leaf switch) or switches"
                )
            if not has_child[s] and not sizes[s]:
                raise InvalidInputError(
                    f"switch {switch_names[s]!r} has neither nodes nor child switches; give it "
                    "nodes or remove it"
                )
        leaves = np.flatnonzero(~has_child).astype(np.int64)
        leaf_sizes = sizes[leaves].astype(np.int64)
        for array in (depth, leaves, leaf_sizes):
            array.setflags(write=False)
        set_ = object.__setattr__
        set_(self, "switch_names", switch_names)
        set_(self, "switch_parent", parent)
        set_(self, "node_names", node_names)
        set_(self, "node_leaf", leaf)
        set_(self, "switch_depth", depth)
        set_(self, "leaf_switches", leaves)
        set_(self, "leaf_sizes", leaf_sizes)
        set_(self, "num_levels", int(depth[leaves].max()) + 1)
        set_(self, "_node_ids", node_ids)
        set_(self, "_switch_ids", switch_ids)
        set_(self, "_count_form", None)
        set_(self, "block_size", _block_size(block_size, leaf_sizes))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is immutable; cannot delete {name!r}")

    def __reduce__(self):
        return (
            _rebuild,
            (
                type(self),
                (self.switch_names, self.switch_parent, self.node_names, self.node_leaf),
                self.block_size,
            ),
        )

    @property
    def is_block(self) -> bool:
        """Whether this is a Slurm ``topology/block`` cluster (built from ``BlockName=`` lines
        or a ``block:`` topology): its leaves are base blocks of :attr:`block_size` nodes or
        more, and Slurm's block rule (``slurm_rule``, ``slurm-block``) applies to it alone."""
        return self.block_size is not None

    # ------------------------------------------------------------------ derived facts
    @property
    def num_nodes(self) -> int:
        """Number of compute nodes."""
        return len(self.node_names)

    @property
    def num_switches(self) -> int:
        """Number of switches, the implicit root included."""
        return len(self.switch_names)

    @property
    def count_form(self) -> CountForm:
        """The tree's :class:`~tjap.placement.tree.tree_cost.CountForm` (built once, then cached):
        what the cost of a node set and the SCAS block costs are computed from."""
        if self._count_form is None:
            object.__setattr__(
                self, "_count_form", count_groups(self.switch_parent, self.node_leaf)
            )
        return self._count_form

    def node_index(self, node) -> int:
        """The index of a node given by name (str) or by index (int).

        Raises
        ------
        InvalidInputError
            An unknown name, an index out of range, or neither a str nor an int.
        """
        if isinstance(node, str):
            try:
                return self._node_ids[node]
            except KeyError:
                raise InvalidInputError(
                    f"unknown node {node!r}; the tree's nodes are "
                    f"{compress_hostlist(self.node_names)[:120]}"
                ) from None
        if is_int(node):
            if 0 <= node < self.num_nodes:
                return int(node)
            raise InvalidInputError(
                f"node index {int(node)} is out of range; indices run 0..{self.num_nodes - 1}"
            )
        raise InvalidInputError(f"a node is a name (str) or an index (int), got {node!r}")

    def node_indices(self, nodes) -> np.ndarray:
        """:meth:`node_index` of each of ``nodes`` (names and indices may be mixed)."""
        if isinstance(nodes, str):
            raise InvalidInputError(f"give a list of nodes, got the string {nodes!r}")
        return np.array([self.node_index(n) for n in nodes], dtype=np.int64)

    def switch_index(self, name: str) -> int:
        """The index of the switch called ``name``."""
        try:
            return self._switch_ids[name]
        except (KeyError, TypeError):
            raise InvalidInputError(
                f"unknown switch {name!r}; the tree's switches are "
                f"{compress_hostlist(self.switch_names)[:120]}"
            ) from None

    def switch_spans(self) -> tuple[np.ndarray, np.ndarray]:
        """``(first, count)`` of every switch: the nodes under switch ``s`` (all levels below)
        are the node indices ``first[s]`` to ``first[s] + count[s] - 1`` (the node order is depth
        first, so they are contiguous)."""
        count = np.zeros(self.num_switches, np.int64)
        np.add.at(count, self.node_leaf, 1)
        first = np.full(self.num_switches, self.num_nodes, np.int64)
        np.minimum.at(first, self.node_leaf, np.arange(self.num_nodes, dtype=np.int64))
        for s in range(self.num_switches - 1, 0, -1):  # parents come before their children
            p = self.switch_parent[s]
            count[p] += count[s]
            first[p] = min(first[p], first[s])
        return first, count

    def ancestors(self, node) -> tuple[int, ...]:
        """The switch indices above ``node`` (name or index), its leaf switch first, the root
        last; its length is the node's number of levels."""
        s = int(self.node_leaf[self.node_index(node)])
        path = []
        while s >= 0:
            path.append(s)
            s = int(self.switch_parent[s])
        return tuple(path)

    def children(self, switch) -> tuple[int, ...]:
        """The child switch indices of ``switch`` (name or index), in order; empty for a leaf."""
        s = self.switch_index(switch) if isinstance(switch, str) else int(switch)
        return tuple(int(c) for c in np.flatnonzero(self.switch_parent == s))

    def nodes_of(self, switch) -> tuple[str, ...]:
        """The names of the nodes directly under leaf ``switch`` (name or index)."""
        s = self.switch_index(switch) if isinstance(switch, str) else int(switch)
        return tuple(self.node_names[i] for i in np.flatnonzero(self.node_leaf == s))

    # ------------------------------------------------------------------ equality
    def _key(self):
        return (
            self.switch_names,
            self.switch_parent.tobytes(),
            self.node_names,
            self.node_leaf.tobytes(),
            self.block_size,
        )

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"Topology(num_nodes={self.num_nodes}, num_switches={self.num_switches}, "
            f"num_levels={self.num_levels}, root={self.switch_names[0]!r})"
        )

    # ------------------------------------------------------------------ builders
    @classmethod
    def _from_specs(cls, specs, block_size: int | None = None) -> "Topology":
        """Build from switch definitions ``(name, nodes or None, switches or None, where)`` in
        definition order (``where`` names the line or entry in error messages); ``block_size``
        marks a Slurm ``topology/block`` cluster."""
        if not specs:
            raise InvalidInputError("no switch is defined; define at least one switch")
        defined: dict[str, int] = {}
        for k, (name, nodes, switches, where) in enumerate(specs):
            _check_names([name], "switch", where)
            if name in defined:
                raise _where(
                    where,
                    f"switch {name!r} is already defined "
                    f"({specs[defined[name]][3]}); define each switch once",
                )
            defined[name] = k
            if nodes is not None and switches is not None:
                raise _where(
                    where,
                    f"switch {name!r} has both nodes and switches; a switch "
                    "lists either its nodes (a leaf switch) or its switches",
                )
            if nodes is None and switches is None:
                raise _where(
                    where,
                    f"switch {name!r} has neither nodes nor switches; list "
                    "its nodes (a leaf switch) or its switches",
                )
            if nodes is not None:
                _check_names(nodes, "node", where)
            else:
                _check_names(switches, "switch", where)
        parent_of: dict[str, int] = {}
        for k, (name, _, switches, where) in enumerate(specs):
            for child in switches or ():
                if parent_of.get(child) == k:
                    raise _where(
                        where, f"switch {name!r} lists switch {child!r} twice; list it once"
                    )
                if child not in defined:
                    raise _where(
                        where,
                        f"switch {name!r} lists unknown switch {child!r}; "
                        f"define {child!r} or remove it from the list",
                    )
                if child in parent_of:
                    first = specs[parent_of[child]]
                    raise _where(
                        where,
                        f"switch {child!r} is listed under {first[0]!r} "
                        f"({first[3]}) and under {name!r}; a switch has one parent",
                    )
                parent_of[child] = k
        tops = [k for k, spec in enumerate(specs) if spec[0] not in parent_of]
        if not tops:
            _raise_cycle(specs, parent_of, 0)
        # depth-first, parent before children
        switch_names, switch_parent, node_names, node_leaf = [], [], [], []
        stack = [(k, -1) for k in reversed(tops)]
        if len(tops) > 1:
            if IMPLICIT_ROOT in defined:
                raise _where(
                    specs[defined[IMPLICIT_ROOT]][3],
                    f"switch name {IMPLICIT_ROOT!r} is reserved for the implicit root "
                    "of several top-level switches; rename it",
                )
            switch_names.append(IMPLICIT_ROOT)
            switch_parent.append(-1)
            stack = [(k, 0) for k in reversed(tops)]
        node_seen: dict[str, str] = {}
        while stack:
            k, parent = stack.pop()
            name, nodes, switches, where = specs[k]
            index = len(switch_names)
            switch_names.append(name)
            switch_parent.append(parent)
            for node in nodes or ():
                if node in node_seen:
                    raise _where(
                        where,
                        f"node {node!r} is also under switch {node_seen[node]}; "
                        "a node belongs to one leaf switch, listed once",
                    )
                node_seen[node] = f"{name!r} ({where})"
                node_names.append(node)
                node_leaf.append(index)
            stack.extend((defined[c], index) for c in reversed(switches or ()))
        if len(switch_names) - (len(tops) > 1) < len(specs):
            reached = set(switch_names)
            _raise_cycle(
                specs, parent_of, next(k for k, spec in enumerate(specs) if spec[0] not in reached)
            )
        return cls(switch_names, switch_parent, node_names, node_leaf, block_size=block_size)

    @classmethod
    def from_slurm_live(cls, env: dict | None = None, *, timeout_s: float = 30) -> "Topology":
        """The switch tree of a running Slurm (``scontrol show topology``): the Slurm that
        ``env``'s ``SLURM_CONF`` points at (merged over this process's environment; None: the
        environment as it is). A leaf's nodes come in Slurm's own node order.

        Raises
        ------
        tjap.placement.slurm.client.SlurmError
            Slurm is not installed or its controller cannot be reached (one line).
        InvalidInputError
            Slurm runs without ``TopologyPlugin=topology/tree``.
        """
        from tjap.placement.slurm.readers import live_topology_conf

        return cls.from_slurm(live_topology_conf(env, timeout_s=timeout_s))

    @classmethod
    def from_scontrol(cls, text: str) -> "Topology":
        """The tree printed by ``scontrol show topology`` (``Level=`` and ``LinkSpeed=`` are
        ignored; a switch with ``Switches=`` is built from those). Under ``topology/block`` the
        base blocks and the block sizes Slurm prints give the tree, and every aggregated block
        Slurm lists is checked to be one of its switches."""
        from tjap.placement.slurm.readers import aggregated_blocks, show_topology_conf

        tree = cls.from_slurm(show_topology_conf(text))
        if aggregated_blocks(text):  # Slurm's own aggregated blocks: the tree must hold each
            ours = {frozenset(tree.node_names[f : f + c]) for f, c in zip(*tree.switch_spans())}
            for name, nodes in aggregated_blocks(text):
                if frozenset(expand_hostlist(nodes)) not in ours:
                    raise InvalidInputError(
                        f"scontrol show topology: Slurm's aggregated block {name} ({nodes}) is "
                        "not one tjap builds from the base blocks and BlockSizes; please report "
                        "it with the output of scontrol show topology"
                    )
        return tree

    @classmethod
    def from_file(cls, path) -> "Topology":
        """Read a tree from a file: ``*.json`` is :meth:`to_dict`'s form, ``*.yaml`` and
        ``*.yml`` a Slurm ``topology.yaml`` (its default topology, :meth:`from_slurm_yaml`),
        anything else a Slurm ``topology.conf`` (:meth:`from_slurm`). Unreadable or malformed
        files are one-line errors."""
        import json

        file = Path(path)
        if file.suffix.lower() in (".yaml", ".yml"):
            return cls.from_slurm_yaml(file)
        if file.suffix.lower() == ".json":
            text = read_utf8(file, "switch tree file")
            try:
                data = json.loads(text)
            except RecursionError:
                raise InvalidInputError(f"{path} is not valid JSON (it nests too deeply)") from None
            except ValueError as error:  # JSONDecodeError, or an integer of too many digits
                where = (
                    f"line {error.lineno}: {error.msg}"
                    if hasattr(error, "lineno")
                    else " ".join(str(error).split())[:120]
                )
                raise InvalidInputError(f"{path} is not valid JSON ({where})") from None
            try:
                return cls.from_dict(data)
            except InvalidInputError as error:
                raise InvalidInputError(f"{path}: {error}") from None
        if not file.exists():
            raise InvalidInputError(f"no such topology file: {path}")
        return cls.from_slurm(file)

    @classmethod
    def from_slurm(cls, source) -> "Topology":
        """Read Slurm's ``topology.conf``, of the ``topology/tree`` or the ``topology/block`` plugin.

        Each line ``SwitchName=NAME Nodes=HOSTLIST`` defines a leaf switch,
        ``SwitchName=NAME Switches=HOSTLIST`` a switch above others. A block configuration
        (``BlockName=NAME Nodes=HOSTLIST`` lines and an optional ``BlockSizes=``) becomes the
        same kind of tree: each base block a leaf switch, each aggregated block Slurm plans
        with a switch above the blocks it joins (:mod:`tjap.placement.tree.blocks`). Keys are case-insensitive;
        other keys (``LinkSpeed=``...) are ignored; ``#`` starts a comment; a line ending in
        ``\\`` continues on the next. Several top-level switches are joined under
        :data:`IMPLICIT_ROOT`.

        Parameters
        ----------
        source : str or os.PathLike
            A path, or the file's text itself (a string holding a newline or ``=``).

        Raises
        ------
        InvalidInputError
            One line naming the line number (or switch, or node) and the fix; nothing is built.
        """
        text = _read_source(source)
        specs, blocks, block_sizes = [], [], None
        counts = {"nodes": 0, "switches": 0}
        for number, line in _logical_lines(text):
            where = f"line {number}"
            if len(specs) + len(blocks) >= MAX_SWITCHES:
                raise _where(
                    where, f"the tree has more than {MAX_SWITCHES:,} switches; {_SIZE_FIX}"
                )
            fields: dict[str, str] = {}
            tokens = line.split()
            for t, token in enumerate(tokens):
                key, sep, value = token.partition("=")
                if (
                    not sep
                    and t
                    and (
                        tokens[t - 1].endswith(",")
                        or token.startswith(",")
                        or tokens[t - 1].lower().startswith("blocksizes=")
                    )
                ):  # a list written with spaces: "BlockSizes=18, 36", "Nodes=n1, n2"
                    run = tokens[t - 1 : t]
                    for rest in tokens[t:]:
                        if "=" in rest:
                            break
                        run.append(rest)
                    raise _where(
                        where,
                        f"{' '.join(run)!r} has a space in its list; Slurm splits a line at "
                        "spaces into KEY=VALUE pairs, so write the list without spaces: "
                        + ",".join(part.strip(",") for part in run),
                    )
                if not sep or not key:
                    raise _where(
                        where,
                        f"expected KEY=VALUE, got {token!r}; write e.g. SwitchName=s1 Nodes=n[1-4]",
                    )
                key = key.lower()
                if key in fields:
                    raise _where(where, f"{key} is given twice; give each key once per line")
                fields[key] = value
            if "blocksizes" in fields and len(fields) > 1:
                others = [t.partition("=")[0] + "=" for t in tokens]
                others = [k for k in others if k.lower() != "blocksizes="]
                raise _where(
                    where,
                    f"BlockSizes= goes on a line of its own, but this line also has "
                    f"{', '.join(others)}; write BlockSizes={fields['blocksizes']} alone on its "
                    "line"
                    + (
                        " and the nodes on BlockName= lines (BlockName=b1 Nodes=...)"
                        if "nodes" in fields and "blockname" not in fields
                        else ""
                    ),
                )
            if "blocksizes" in fields:
                if block_sizes is not None:
                    raise _where(where, "BlockSizes= is given twice; give it once")
                block_sizes = (parse_block_sizes(fields["blocksizes"], where), where)
                continue
            kind = "blockname" if "blockname" in fields else "switchname"
            if kind not in fields:
                raise _where(
                    where,
                    "the line has no SwitchName= or BlockName=; every line "
                    "defines one switch (SwitchName=NAME Nodes=... or "
                    "Switches=...) or one block (BlockName=NAME Nodes=...)",
                )
            if "blockname" in fields and "switchname" in fields:
                raise _where(
                    where,
                    "the line has both SwitchName= and BlockName=; a line "
                    "defines a switch (topology/tree) or a block (topology/block)",
                )
            if kind == "blockname" and "switches" in fields:
                raise _where(
                    where,
                    "a block lists nodes, not switches (BlockName=NAME "
                    "Nodes=...); Slurm builds the larger blocks itself",
                )
            name = fields[kind]
            if not name:
                raise _where(
                    where,
                    f"{'BlockName' if kind == 'blockname' else 'SwitchName'}= "
                    "is empty; give it a name",
                )
            lists = {}
            for key in ("nodes", "switches"):
                if key in fields:
                    try:
                        lists[key] = _listed(fields[key], key, counts)
                    except InvalidInputError as error:
                        raise _where(where, str(error)) from None
                    if not lists[key]:
                        raise _where(
                            where,
                            f"{key.capitalize()}= is empty; list at least one "
                            "name or remove the key",
                        )
            if kind == "blockname":
                if "nodes" not in lists:
                    raise _where(where, f"block {name!r} has no Nodes=; list its nodes")
                blocks.append((name, lists["nodes"], where))
            else:
                specs.append((name, lists.get("nodes"), lists.get("switches"), where))
        if specs and (blocks or block_sizes):
            first = blocks[0][2] if blocks else block_sizes[1]
            raise _where(
                first,
                "the file mixes switches (topology/tree) and blocks "
                "(topology/block); a topology.conf describes one of the two",
            )
        if block_sizes is not None and not blocks:
            raise _where(
                block_sizes[1],
                "BlockSizes= is given but no block; add lines like BlockName=b1 Nodes=n[1-18]",
            )
        block_size = None
        if blocks:
            specs, block_size = block_specs(
                blocks,
                block_sizes[0] if block_sizes else None,
                block_sizes[1] if block_sizes else "the blocks",
            )
        if not specs:
            raise InvalidInputError(
                "the topology.conf text defines no switch; add lines like "
                "SwitchName=s1 Nodes=n[1-4]"
            )
        return cls._from_specs(specs, block_size)

    @classmethod
    def from_slurm_yaml(cls, source, name: str | None = None, *, nodes=None) -> "Topology":
        """Read one topology of Slurm's ``topology.yaml`` (Slurm 25.05+): a ``tree:`` or a
        ``block:`` one, built as :meth:`from_slurm` builds ``topology.conf``'s
        (:mod:`tjap.placement.tree.slurm_yaml`).

        Parameters
        ----------
        source : str, os.PathLike or list
            A path, the file's text (a string holding a newline) or the parsed YAML list.
        name : str, optional
            The topology to read; None: the first marked ``cluster_default: true``, else the
            first. :func:`~tjap.placement.tree.slurm_yaml.slurm_yaml_topologies` lists them.
        nodes : str or list of str, optional
            The nodes of a ``flat: true`` topology (which lists none), placed under one switch
            named after the topology; without it a flat topology is refused.

        Raises
        ------
        InvalidInputError
            One line naming the topology, the entry and the field, and the fix: a name not in
            the file (listing its topologies), a flat topology, a malformed entry.
        """
        from tjap.placement.tree.slurm_yaml import slurm_yaml_specs

        counts = {"nodes": 0, "switches": 0}  # names read so far, within the size limits
        specs, block_size = slurm_yaml_specs(
            source, name, lambda value, key: _listed(value, key, counts), nodes
        )
        return cls._from_specs(specs, block_size)

    @classmethod
    def from_node_labels(cls, nodes, levels, *, missing: str = "error") -> "Topology":
        """The tree that Kubernetes node labels draw at Kueue's topology levels: each domain
        (the label values from the top level down to one level) a switch, the domains of the
        lowest level leaf switches over their nodes (:mod:`tjap.placement.tree.levels`).

        Parameters
        ----------
        nodes : dict, list, str or os.PathLike
            ``kubectl get nodes -o json`` output (parsed, or a path to it), a list of Node
            objects or of ``(name, labels)`` pairs.
        levels : list of str, dict, str or os.PathLike
            Label keys from the top level down (``kubernetes.io/hostname`` last, if at all: that
            level is the node itself), or a Kueue ``Topology`` object (parsed, or a path to its
            YAML) whose ``spec.levels[].nodeLabel`` gives them.
        missing : {"error", "skip"}
            A node without one of the labels is an error (default) or left out with a warning.

        Examples
        --------
        >>> tree = Topology.from_node_labels(
        ...     [("n1", {"rack": "r1"}), ("n2", {"rack": "r1"}), ("n3", {"rack": "r2"})],
        ...     ["rack"])
        >>> tree.switch_names, tree.nodes_of("r2")
        (('(root)', 'r1', 'r2'), ('n3',))
        """
        from tjap.placement.tree.levels import node_label_specs

        return cls._from_specs(node_label_specs(nodes, levels, missing))

    @classmethod
    def from_hypernodes(cls, manifests, nodes=None) -> "Topology":
        """The tree of Volcano ``HyperNode`` objects: each HyperNode a switch, tier-1 ones over
        their nodes, higher tiers over their member HyperNodes
        (:mod:`tjap.placement.tree.levels`).

        Parameters
        ----------
        manifests : list, dict, str or os.PathLike
            HyperNode objects (a list, one, or a List of them), or a path to (or the text of) a
            YAML file of ``---`` documents or a JSON file.
        nodes : optional
            The cluster's nodes (as :meth:`from_node_labels` takes them, or a list of names),
            needed by members selected with ``regexMatch`` or ``labelMatch``.

        Raises
        ------
        InvalidInputError
            One line naming the HyperNode and member: an unknown member, a member of two
            HyperNodes, a cycle, a tier that does not fit, a selector that picks nothing.
        """
        from tjap.placement.tree.levels import hypernode_specs

        return cls._from_specs(hypernode_specs(manifests, nodes))

    def to_slurm(self) -> str:
        """The tree as ``topology.conf`` text (depth first; an implicit root is left out), which
        :meth:`from_slurm` reads back to an equal tree."""
        lines = []
        implicit = self.switch_names[0] == IMPLICIT_ROOT and len(self.children(0)) > 1
        for s, name in enumerate(self.switch_names):
            if s == 0 and implicit:
                continue
            kids = self.children(s)
            if kids:
                body = "Switches=" + compress_hostlist([self.switch_names[c] for c in kids])
            else:
                body = "Nodes=" + compress_hostlist(self.nodes_of(s))
            lines.append(f"SwitchName={name} {body}")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict:
        """A JSON-ready dict: ``{"switches": [{"name": ..., "nodes": HOSTLIST} or
        {"name": ..., "switches": HOSTLIST}, ...]}`` with switches depth first (the root first,
        an implicit root included) and name lists as hostlist expressions; a Slurm
        ``topology/block`` cluster adds ``"block_size"``, its base block size."""
        entries = []
        for s, name in enumerate(self.switch_names):
            kids = self.children(s)
            if kids:
                entries.append(
                    {
                        "name": name,
                        "switches": compress_hostlist([self.switch_names[c] for c in kids]),
                    }
                )
            else:
                entries.append({"name": name, "nodes": compress_hostlist(self.nodes_of(s))})
        if self.block_size is not None:
            return {"switches": entries, "block_size": self.block_size}
        return {"switches": entries}

    @classmethod
    def from_dict(cls, data) -> "Topology":
        """Read :meth:`to_dict`'s form. ``nodes`` and ``switches`` may be hostlist strings or
        lists of names; switches may come in any order (top-level ones keep theirs)."""
        if not isinstance(data, dict):
            raise InvalidInputError(f"a switch tree must be an object, got {type(data).__name__}")
        if "switches" not in data or not set(data) <= {"switches", "block_size"}:
            raise InvalidInputError(
                "a switch tree has the key 'switches' (and 'block_size' for a Slurm "
                f"topology/block cluster), got {sorted(data)}"
            )
        entries = data["switches"]
        if not isinstance(entries, list):
            raise InvalidInputError(f"switches must be a list, got {type(entries).__name__}")
        _check_size(0, len(entries))
        specs = []
        counts = {"nodes": 0, "switches": 0}
        for i, entry in enumerate(entries):
            where = f"switches[{i}]"
            if not isinstance(entry, dict) or "name" not in entry:
                raise _where(
                    where,
                    "each switch is an object with 'name' and 'nodes' or "
                    f"'switches', got {entry!r:.80}",
                )
            unknown = sorted(set(entry) - {"name", "nodes", "switches"})
            if unknown:
                raise _where(where, f"unknown key(s) {unknown}; allowed: name, nodes, switches")
            lists = {}
            for key in ("nodes", "switches"):
                if key in entry:
                    value = entry[key]
                    try:
                        lists[key] = _listed(value, key, counts)
                    except InvalidInputError as error:
                        raise _where(where, str(error)) from None
                    except TypeError:
                        raise _where(
                            where, f"{key} must be a hostlist or a list of names, got {value!r:.80}"
                        ) from None
                    if not lists[key]:
                        raise _where(where, f"{key} is empty; list at least one name")
            specs.append((entry["name"], lists.get("nodes"), lists.get("switches"), where))
        return cls._from_specs(specs, data.get("block_size"))

    @classmethod
    def from_networkx(cls, graph, root) -> "Topology":
        """A tree from a networkx graph: ``root`` is the top switch, the other vertices with
        children are switches and the leaves (vertices without children) are compute nodes.

        Edges may be undirected or point either way; the graph must be a tree (connected, no
        cycle, no parallel edge). Children keep the graph's adjacency order (in a directed
        graph: successors, then predecessors); names are ``str(vertex)``.

        Raises
        ------
        InvalidInputError
            ``root`` not in the graph, a graph that is not a tree, a switch with both nodes and
            switches below it.
        """
        if root not in graph:
            raise InvalidInputError(f"root {root!r} is not a vertex of the graph; give a vertex")
        if graph.is_directed():

            def neighbors(v):
                return [*graph.successors(v), *graph.predecessors(v)]
        else:
            neighbors = graph.neighbors
        n = graph.number_of_nodes()
        if graph.number_of_edges() != n - 1:
            raise InvalidInputError(
                f"the graph is not a tree: {n} vertices need {n - 1} edges, it has "
                f"{graph.number_of_edges()}; remove cycles and parallel edges"
            )
        children: dict = {}
        order = [(root, None)]
        seen = {root}
        for vertex, parent in order:
            kids = [v for v in neighbors(vertex) if v != parent]
            for v in kids:
                if v in seen:
                    raise InvalidInputError(
                        f"the graph is not a tree: {v!r} is reached twice; remove the cycle"
                    )
                seen.add(v)
                order.append((v, vertex))
            children[vertex] = kids
        if len(seen) != n:
            raise InvalidInputError(
                f"the graph is not a tree: {n - len(seen)} vertices are not "
                f"connected to root {root!r}; connect or remove them"
            )
        if not children[root]:
            raise InvalidInputError(f"root {root!r} has no children; a tree needs nodes")
        names = {}
        specs = []
        for vertex, _ in order:
            kids = children[vertex]
            if not kids:
                continue
            name = str(vertex)
            names.setdefault(name, vertex)
            leaves = [k for k in kids if not children[k]]
            if leaves and len(leaves) < len(kids):
                raise InvalidInputError(
                    f"switch {name!r} has both compute nodes and switches below it; put its "
                    "nodes under a leaf switch of their own"
                )
            listed = [str(k) for k in kids]
            if leaves:
                specs.append((name, listed, None, f"switch {name!r}"))
            else:
                specs.append((name, None, listed, f"switch {name!r}"))
        return cls._from_specs(specs)

    def to_networkx(self):
        """The tree as a :class:`networkx.Graph`: vertices are switch and node names (attribute
        ``kind``: ``"switch"`` or ``"node"``), edges join each child to its parent, added depth
        first so that ``from_networkx(g, root=tree.switch_names[0])`` gives the tree back.

        Raises
        ------
        InvalidInputError
            A node has the name of a switch (networkx needs one vertex per name).
        """
        import networkx as nx

        clash = set(self.switch_names) & set(self.node_names)
        if clash:
            raise InvalidInputError(
                f"node {sorted(clash)[0]!r} has a switch's name; a networkx "
                "graph needs distinct vertex names"
            )
        graph = nx.Graph()
        graph.add_node(self.switch_names[0], kind="switch")
        for s, name in enumerate(self.switch_names):
            for c in self.children(s):
                graph.add_node(self.switch_names[c], kind="switch")
                graph.add_edge(name, self.switch_names[c])
            if not self.children(s):
                for node in self.nodes_of(s):
                    graph.add_node(node, kind="node")
                    graph.add_edge(name, node)
        return graph


def _raise_cycle(specs, parent_of: dict, start: int):
    """Raise the error for the cycle above switch ``specs[start]`` (every switch there has a
    parent), naming the switches of the cycle and the line of the first."""
    path, k = [], start
    while k not in path:
        path.append(k)
        k = parent_of[specs[k][0]]
    cycle = path[path.index(k) :]
    if len(cycle) == 1:
        raise _where(
            specs[k][3],
            f"switch {specs[k][0]!r} lists itself; remove it from its own Switches= list",
        )
    first = cycle.index(min(cycle))  # name the cycle from its earliest definition
    cycle = cycle[first:] + cycle[:first]
    names = " under ".join(repr(specs[j][0]) for j in cycle + cycle[:1])
    raise _where(
        specs[cycle[0]][3],
        f"switches form a cycle ({names}); remove one of them from its parent's Switches= list",
    )


def _first_duplicate(names) -> str:
    seen = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return ""


def _preorder_depths(switch_names, parent: np.ndarray) -> np.ndarray:
    """The depth of each switch (root 0), checking that ``parent`` lists a tree in depth-first
    pre-order: the root first, each switch's parent on the path to the switch before it."""
    n = len(parent)
    if parent[0] != -1:
        raise InvalidInputError(
            f"switch 0 ({switch_names[0]!r}) must be the root "
            f"(switch_parent -1), got parent {int(parent[0])}"
        )
    depth = np.zeros(n, dtype=np.int64)
    path = [0]
    for i in range(1, n):
        p = int(parent[i])
        if p == -1:
            raise InvalidInputError(
                f"switch {switch_names[i]!r} has no parent but is not switch 0; one root only "
                f"(several top-level switches go under {IMPLICIT_ROOT!r})"
            )
        while path and path[-1] != p:
            path.pop()
        if not path:
            raise InvalidInputError(
                f"switch {switch_names[i]!r} has parent {p}, which is not on the path to the "
                "switch before it; list switches depth first, parent before children "
                "(Topology.from_dict orders them for you)"
            )
        depth[i] = len(path)
        path.append(i)
    return depth


def _read_source(source) -> str:
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and "\n" not in source and "=" not in source
    ):
        return read_utf8(source, "topology file")
    if not isinstance(source, str):
        raise InvalidInputError(
            f"from_slurm takes a path or the file's text, got {type(source).__name__}"
        )
    return source


def _logical_lines(text: str):
    """``(first line number, content)`` of each non-blank line, comments removed and lines
    ending in a backslash joined to the next."""
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip():
            yield start, line
    if pending.strip():
        yield start, pending
