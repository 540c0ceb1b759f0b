"""Communication-hop cost on any switch tree, in count form: sums of squared node counts per group.

A tree is two int64 arrays: ``switch_parent[s]``, the parent switch of switch ``s`` (``-1`` for the
one top switch), and ``node_leaf[v]``, the switch node ``v`` hangs from. Leaves may sit at
different depths.

**Hop count.** Levels are counted upward from a node's own switch (= 1). The distance of node
``v`` to a switch ``X`` above it is the number of switches on the path from ``v``'s switch up to
``X``, inclusive. Two distinct nodes ``a, b`` whose lowest common switch is ``X`` are
``h = 2 l`` hops apart, with ``l = max(dist(a, X), dist(b, X))``. The costs follow
:mod:`tjap.placement.tree.cost`: ``"paper"`` is (1/n) x sum over ordered pairs of ``1000 h``;
``"published"`` is sum over unordered pairs of ``1000 (h - 1)``, integer-divided by ``n``, at
least 1.

**Derivation of the count form.** Let ``D(v)`` be the depth of ``v``'s switch (the top switch has
depth 0), ``d(X)`` that of a switch, and ``L = 1 + max_v D(v)`` the top level. Then
``dist(v, X) = D(v) - d(X) + 1``, so for a pair with lowest common switch ``X``

    l(a, b) = (max(D(a), D(b)) + 1) - d(X)

and each term counts shared memberships. ``d(X)`` is the number of switches other than the top
one that hold both ``a`` and ``b`` below them (``X`` and its ancestors). And
``max(D(a), D(b)) + 1 = L - #{k in 1..L-1 : D(a) < k and D(b) < k}``: ``L`` minus the number of
"shallow groups" ``R_k = {v : D(v) < k}`` holding both.

So with the groups "the nodes below switch ``Y``" (``Y`` not the top switch) and ``R_k``
(``k = 1..L-1``), and ``c_g`` the number of the set's nodes in group ``g``, the sum over ordered
pairs of distinct nodes is ``L (n^2 - n) - sum_g (c_g^2 - c_g)``. A node lies in exactly ``D(v)``
switch groups (its ancestors at depths ``1..D(v)``) and ``L - 1 - D(v)`` shallow groups, so
``sum_g c_g = n (L - 1)`` and

    sum over ordered pairs of h = 2 (L n^2 - n - S),    S = sum_g c_g^2

Every group has the same weight (2 in hops), and each node lies in exactly one group per row
``r = 1..L-1``: its ancestor switch at depth ``r`` when ``D(v) >= r``, else ``R_r``. That is the
array ``group_of[r - 1, v]`` of :class:`CountForm`. On the paper's fat-tree (edge switches under
pods under one root) ``L = 3``, the rows are the edge switch and the pod, and this is
:mod:`tjap.placement.tree.cost`'s ``6n^2 - 2A - 2B - 2n``. The costs:

    paper     = 1000 * 2 (L n^2 - n - S) / n
    published = max(1, (1000 ((2L - 1) n^2 - n - 2S) / 2) // n)

(the published numerator is even, so its halving is exact). The derivation does not need a
node's switch to be childless: a node may hang from a switch with switches below it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.core.jit import njit

#: c, the cost of one communication hop.
HOP_UNIT_COST = 1000
#: Cost conventions, by the code the kernels take (0 = paper, 1 = published).
CONVENTIONS = ("paper", "published")


def convention_code(convention: str) -> int:
    """The integer the kernels use for a convention name (0 = paper, 1 = published)."""
    if convention not in CONVENTIONS:
        raise InvalidInputError(
            f"convention must be one of {', '.join(CONVENTIONS)}, got {convention!r}"
        )
    return CONVENTIONS.index(convention)


# -- kernels --------------------------------------------------------------------------------------
@njit
def cost_from_sum_of_squares(n, top_level, sum_sq, convention):
    """Cost of an n-node set whose group counts square-sum to ``sum_sq`` (0 = paper, 1 = published)."""
    if convention == 0:
        return HOP_UNIT_COST * float(2 * (top_level * n * n - n - sum_sq)) / n
    pair_sum = HOP_UNIT_COST * ((2 * top_level - 1) * n * n - n - 2 * sum_sq) // 2
    return float(max(1, pair_sum // n))


@njit
def node_set_cost(group_of, top_level, nodes, counts, convention):
    """Cost of the node set ``nodes`` in O(n x rows).

    ``counts`` is a zeroed int64 scratch array of one entry per group; it is zeroed again on return.
    """
    sum_sq = 0
    for r in range(group_of.shape[0]):
        for i in range(nodes.shape[0]):
            g = group_of[r, nodes[i]]
            sum_sq += 2 * counts[g] + 1
            counts[g] += 1
    for r in range(group_of.shape[0]):
        for i in range(nodes.shape[0]):
            counts[group_of[r, nodes[i]]] = 0
    return cost_from_sum_of_squares(nodes.shape[0], top_level, sum_sq, convention)


@njit
def block_costs(group_of, top_level, q, size, num_groups, convention):
    """Cost of the block D(p, size) for every start position p of the node sequence ``q``.

    The block takes ``size`` consecutive positions from p and wraps to the head of ``q``. A sliding
    window keeps the per-group counts, so all m costs take O(m x rows) time.
    """
    m = q.shape[0]
    rows = group_of.shape[0]
    out = np.empty(m, np.float64)
    counts = np.zeros(num_groups, np.int64)
    sum_sq = 0
    for i in range(size):
        for r in range(rows):
            g = group_of[r, q[i]]
            sum_sq += 2 * counts[g] + 1
            counts[g] += 1
    out[0] = cost_from_sum_of_squares(size, top_level, sum_sq, convention)
    for p in range(1, m):
        gone = q[p - 1]
        new = q[(p + size - 1) % m]
        for r in range(rows):
            g = group_of[r, gone]
            counts[g] -= 1
            sum_sq -= 2 * counts[g] + 1
            g = group_of[r, new]
            sum_sq += 2 * counts[g] + 1
            counts[g] += 1
        out[p] = cost_from_sum_of_squares(size, top_level, sum_sq, convention)
    return out


# -- validation -----------------------------------------------------------------------------------
def _int_array(name: str, values) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1 or array.size == 0:
        raise InvalidInputError(
            f"{name} must be a non-empty 1-D array of integers, got shape {array.shape}"
        )
    if not np.issubdtype(array.dtype, np.integer):
        raise InvalidInputError(f"{name} must hold integers, got dtype {array.dtype}")
    return array.astype(np.int64)


def switch_depths(switch_parent) -> np.ndarray:
    """Depth of every switch (the top switch has depth 0), checking that ``switch_parent`` is a tree.

    Raises
    ------
    InvalidInputError
        A parent out of range, not exactly one top switch (``-1``), or a cycle.
    """
    parent = _int_array("switch_parent", switch_parent)
    num_switches = parent.size
    bad = np.flatnonzero((parent < -1) | (parent >= num_switches))
    if bad.size:
        s = int(bad[0])
        raise InvalidInputError(
            f"switch_parent[{s}]={int(parent[s])} is out of range; "
            f"allowed: -1 (top switch) or 0..{num_switches - 1}"
        )
    tops = np.flatnonzero(parent == -1)
    if tops.size != 1:
        raise InvalidInputError(
            f"switch_parent must have exactly one top switch (-1), got "
            f"{tops.size}; join several top switches under one root"
        )
    depth = np.full(num_switches, -1, np.int64)
    depth[tops[0]] = 0
    level = 0
    while True:
        below = (depth == -1) & (parent >= 0)
        below[below] = depth[parent[below]] == level
        if not below.any():
            break
        level += 1
        depth[below] = level
    if (depth < 0).any():
        s = int(np.flatnonzero(depth < 0)[0])
        raise InvalidInputError(
            f"switch {s} does not lead up to the top switch: switch_parent "
            "has a cycle; every switch needs a path of parents to the -1"
        )
    return depth


def _node_leaves(node_leaf, num_switches: int) -> np.ndarray:
    leaf = _int_array("node_leaf", node_leaf)
    bad = np.flatnonzero((leaf < 0) | (leaf >= num_switches))
    if bad.size:
        v = int(bad[0])
        raise InvalidInputError(
            f"node_leaf[{v}]={int(leaf[v])} is not a switch; allowed: 0..{num_switches - 1}"
        )
    return leaf


def _node_ids(name: str, nodes, num_nodes: int) -> np.ndarray:
    ids = np.asarray(nodes)
    if ids.ndim != 1 or ids.size == 0:
        raise InvalidInputError(
            f"{name} must be a non-empty list of node ids, got shape {ids.shape}"
        )
    if not np.issubdtype(ids.dtype, np.integer):
        raise InvalidInputError(f"{name} must hold integer node ids, got dtype {ids.dtype}")
    ids = ids.astype(np.int64)
    if ids.min() < 0 or ids.max() >= num_nodes:
        raise InvalidInputError(
            f"{name} must lie in 0..{num_nodes - 1}, got {int(ids.min())}..{int(ids.max())}"
        )
    if np.unique(ids).size != ids.size:
        raise InvalidInputError(f"{name} must be distinct node ids")
    return ids


# -- public face ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CountForm:
    """The count groups of one tree: everything the cost of a node set depends on.

    Attributes
    ----------
    group_of : numpy.ndarray
        int64, shape ``(top_level - 1, num_nodes)``: the group of each node in each row (see the
        module docstring); read-only.
    top_level : int
        ``L``, one more than the deepest node switch's depth (3 on a fat-tree).
    num_groups : int
        One more than the largest group id.
    """

    group_of: np.ndarray
    top_level: int
    num_groups: int

    @property
    def num_nodes(self) -> int:
        return self.group_of.shape[1]

    def cost(self, nodes: Sequence[int], convention: str = "paper") -> float:
        """Cost of one job placed on ``nodes`` (distinct node ids).

        Examples
        --------
        >>> form = count_groups([-1, 0, 0, 2], [1, 1, 3])   # nodes 0, 1 on switch 1; node 2 deeper
        >>> form.cost([0, 1])                              # one switch: h = 2 both ways
        2000.0
        >>> form.cost([0, 2])                              # top switch, distances 2 and 3: h = 6
        6000.0
        """
        code = convention_code(convention)
        ids = _node_ids("nodes", nodes, self.num_nodes)
        counts = np.zeros(self.num_groups, np.int64)
        return float(node_set_cost(self.group_of, self.top_level, ids, counts, code))

    def block_costs(
        self, sequence: Sequence[int], size: int, convention: str = "paper"
    ) -> np.ndarray:
        """Cost of the cyclic block of ``size`` nodes starting at every position of ``sequence``
        (distinct node ids, the SCAS model's sequence Q)."""
        code = convention_code(convention)
        q = _node_ids("sequence", sequence, self.num_nodes)
        size = check_int("size", size, 1, q.size)
        return block_costs(self.group_of, self.top_level, q, size, self.num_groups, code)


def count_groups(switch_parent, node_leaf) -> CountForm:
    """The count form of the tree ``switch_parent`` / ``node_leaf`` (checked: one top switch, no
    cycle, every node on an existing switch).

    Group ids: switch ``s`` for the nodes below switch ``s``, ``num_switches + r - 1`` for the
    shallow group ``R_r`` of row ``r``.

    Raises
    ------
    InvalidInputError
        ``switch_parent`` is not a tree or ``node_leaf`` names a switch that does not exist.
    """
    depth = switch_depths(switch_parent)
    parent = np.asarray(switch_parent, dtype=np.int64)
    leaf = _node_leaves(node_leaf, depth.size)
    node_depth = depth[leaf]
    rows = int(node_depth.max())
    num_switches = depth.size
    group_of = np.repeat(num_switches + np.arange(rows, dtype=np.int64)[:, None], leaf.size, axis=1)
    nodes = np.arange(leaf.size)
    switch = leaf.copy()
    for _ in range(rows):
        inside = node_depth >= 1
        group_of[node_depth[inside] - 1, nodes[inside]] = switch[inside]
        switch[inside] = parent[switch[inside]]
        node_depth = node_depth - 1
    group_of.setflags(write=False)
    return CountForm(group_of=group_of, top_level=rows + 1, num_groups=num_switches + rows)
