"""Exact single-job optima on an idle set, fast enough to evaluate every job of a long record.

For one job of ``size`` nodes and the set of idle nodes at its start, two optima:

- **SCAS optimum**: the cheapest run of ``size`` consecutive idle nodes of the SCAS sequence Q
  (the idle nodes in the tree's depth-first node order, cyclic: a run may wrap from the tail of Q
  to its head), as :meth:`~tjap.placement.tree.window.Window.block_costs` prices them; ties go to
  the first start.
- **Free-form optimum** (the bound): the cheapest set of any ``size`` idle nodes, as
  :func:`~tjap.placement.tree.freeform.best_single_job_nodes` finds it.

Both maximise S, the sum over the tree's count groups of the squared node counts
(:mod:`tjap.placement.tree.tree_cost`): a job's cost falls as S grows
(:func:`~tjap.placement.tree.tree_cost.cost_from_sum_of_squares`). Every node of a leaf switch
lies in the same groups, so both kernels work on per-leaf idle counts.

**SCAS.** When a leaf holds ``size`` idle nodes, the first such leaf's first ``size`` is the
answer (every row's count is ``size``). Otherwise slide the run along Q. While the node that leaves the run and the node that enters it
stay on the same two leaves, each step moves one node out of the first leaf's groups and into the
second's, so the step's change of S grows by 4 per row where the two groups differ: S is convex
along such a stretch and its first maximum is at one of the stretch's ends. The kernel jumps from
end to end (at most two moves per idle leaf, each O(rows)) instead of stepping node by node.

**Free form.** A DP over the tree (as in :mod:`tjap.placement.tree.freeform`): under a switch
whose children are leaves, filling the fullest leaves first is best for every count; above, a
knapsack over the children's tables, each cut at ``min(size, idle below)``; at the top only the
count ``size`` is needed. When one leaf holds ``size`` idle nodes the answer is immediate (every
row's count is ``size``: the largest S there is). The kernel needs every leaf at the same depth;
on trees with leaves at several depths (the count form's shallow groups couple the subtrees)
:class:`SingleJobTables` falls back to
:func:`~tjap.placement.tree.freeform.best_single_job_nodes` (exact, in Python, milliseconds).

The kernels take plain arrays and scratch arrays (no allocation per call), so njit code may loop
over them; :class:`SingleJobTables` holds the arrays and validates its arguments.

Examples
--------
>>> import numpy as np
>>> from tjap.placement.tree.topology import Topology
>>> tree = Topology.from_slurm('''
... SwitchName=a Nodes=n[1-3]
... SwitchName=b Nodes=n[4-6]
... SwitchName=c Nodes=n[7-9]
... SwitchName=d Nodes=n[10-12]
... SwitchName=top Switches=a,b,c,d
... ''')
>>> tables = SingleJobTables.from_topology(tree)
>>> idle = np.zeros(tree.num_nodes, dtype=bool)
>>> idle[[0, 1, 3, 6, 7, 9]] = True           # n1 n2 | n4 | n7 n8 | n10
>>> s, nodes = tables.scas(idle, 4)           # every run of 4 spans three leaves
>>> s, nodes.tolist(), tables.cost(4, s)
(6, [0, 1, 3, 6], 11000.0)
>>> s, nodes = tables.bound(idle, 4)          # two full pairs
>>> s, nodes.tolist(), tables.cost(4, s)
(8, [0, 1, 6, 7], 10000.0)
"""

from __future__ import annotations

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.core.jit import njit, njit_inline
from tjap.placement.tree.freeform import _best_single_job
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.tree_cost import convention_code, cost_from_sum_of_squares


# -- kernels ---------------------------------------------------------------------------------------
@njit
def leaf_idle_counts(idle_mask, leaf_first, leaf_size, out):
    """Idle nodes of each leaf switch into ``out`` (one entry per leaf, in switch order); returns
    the total. Leaf ``k`` holds nodes ``leaf_first[k]`` to ``leaf_first[k] + leaf_size[k] - 1``."""
    total = 0
    for k in range(leaf_first.shape[0]):
        c = 0
        for v in range(leaf_first[k], leaf_first[k] + leaf_size[k]):
            c += idle_mask[v]
        out[k] = c
        total += c
    return total


@njit
def take_nodes(idle_mask, leaf_first, leaf_size, leaf_skip, leaf_take, order, out):
    """Write into ``out`` the node ids of a set given per leaf: from leaf ``order[i]``, its idle
    nodes after the first ``leaf_skip[k]`` of them, ``leaf_take[k]`` of them (in node order).
    Returns the number written."""
    at = 0
    for i in range(order.shape[0]):
        k = order[i]
        skip, want = leaf_skip[k], leaf_take[k]
        v = leaf_first[k]
        while want > 0:
            if idle_mask[v]:
                if skip > 0:
                    skip -= 1
                else:
                    out[at] = v
                    at += 1
                    want -= 1
            v += 1
    return at


@njit_inline
def _move(leaf_groups, counts, out_leaf, in_leaf, d):
    """Change of S when ``d`` nodes leave ``out_leaf``'s groups and ``d`` enter ``in_leaf``'s."""
    change = 0
    for r in range(leaf_groups.shape[1]):
        a = leaf_groups[out_leaf, r]
        b = leaf_groups[in_leaf, r]
        if a != b:
            ca = counts[a]
            cb = counts[b]
            change += 2 * d * (cb - ca + d)  # (ca - d)^2 - ca^2 + (cb + d)^2 - cb^2
            counts[a] = ca - d
            counts[b] = cb + d
    return change


@njit
def scas_best(leaf_groups, leaf_idle, size, counts, seg_leaf, seg_count):
    """The cheapest SCAS run of ``size`` idle nodes: the largest S over the start positions of Q.

    Parameters
    ----------
    leaf_groups : numpy.ndarray
        int64, shape ``(num_leaves, rows)``: the count group of leaf ``k``'s nodes in each row
        (the count form's ``group_of`` at the leaf's first node).
    leaf_idle : numpy.ndarray
        int64, the idle nodes of each leaf (:func:`leaf_idle_counts`).
    size : int
        The job's node count, 1 to the total idle count.
    counts : numpy.ndarray
        int64 scratch, one entry per count group, all zero; zero again on return.
    seg_leaf : numpy.ndarray
        int64 scratch, one entry per leaf.
    seg_count : numpy.ndarray
        int64 scratch, one entry per leaf.

    Returns
    -------
    tuple of int
        ``(S, start, leaf, offset)``: the largest S, the first position of Q where a run reaches
        it, and that position as a leaf and the number of its idle nodes before the run.
    """
    rows = leaf_groups.shape[1]
    num = 0
    m = 0
    for k in range(leaf_idle.shape[0]):
        if leaf_idle[k] >= size:  # the first run inside one leaf: every row counts size
            start = 0
            for i in range(k):
                start += leaf_idle[i]
            return rows * size * size, start, k, 0
        if leaf_idle[k] > 0:
            seg_leaf[num] = k
            seg_count[num] = leaf_idle[k]
            num += 1
            m += leaf_idle[k]
    # the run at position 0: [0, size); (ei, eo) is the position just after it
    s_sq = 0
    left = size
    ei = 0
    eo = 0
    while left > 0:
        take = min(seg_count[ei], left)
        for r in range(rows):
            g = leaf_groups[seg_leaf[ei], r]
            c = counts[g]
            s_sq += (c + take) * (c + take) - c * c
            counts[g] = c + take
        left -= take
        if take == seg_count[ei]:
            ei = (ei + 1) % num
            eo = 0
        else:
            eo = take
    best, best_p, best_si, best_so = s_sq, 0, 0, 0
    p = 0
    si = 0
    so = 0
    while p < m - 1:
        # while the leaving and the entering node keep their leaves, S is convex: jump to the end
        d = min(seg_count[si] - so, seg_count[ei] - eo, m - 1 - p)
        s_sq += _move(leaf_groups, counts, seg_leaf[si], seg_leaf[ei], d)
        so += d
        eo += d
        p += d
        if so == seg_count[si]:
            si += 1
            so = 0
        if eo == seg_count[ei]:
            ei = (ei + 1) % num
            eo = 0
        if s_sq > best:
            best, best_p, best_si, best_so = s_sq, p, si, so
    # zero the counts again: remove the run at p
    left = size
    while left > 0:
        take = min(seg_count[si] - so, left)
        for r in range(rows):
            counts[leaf_groups[seg_leaf[si], r]] = 0
        left -= take
        si = (si + 1) % num
        so = 0
    return best, best_p, seg_leaf[best_si], best_so


@njit
def scas_nodes(idle_mask, leaf_first, leaf_size, leaf_idle, size, start_leaf, offset, out):
    """Write into ``out`` the run of ``size`` idle nodes that starts after the first ``offset``
    idle nodes of leaf ``start_leaf``, in Q's order (wrapping to its head)."""
    at = 0
    k = start_leaf
    skip = offset
    num = leaf_first.shape[0]
    while at < size:
        if leaf_idle[k] > skip:
            v = leaf_first[k]
            end = v + leaf_size[k]
            while v < end and at < size:
                if idle_mask[v]:
                    if skip > 0:
                        skip -= 1
                    else:
                        out[at] = v
                        at += 1
                v += 1
        skip = 0
        k = (k + 1) % num
    return at


@njit
def _sort_children(child_list, a, b, idle_below, keys, order, descending):
    """Children of one switch with idle nodes below, sorted by that count (ties: switch order),
    into ``order[a:a + n]``; returns n."""
    n = 0
    for i in range(a, b):
        c = child_list[i]
        if idle_below[c] > 0:
            key = idle_below[c]
            if descending:
                key = (1 << 30) - key
            keys[a + n] = (key << 32) | (i - a)
            n += 1
    part = keys[a : a + n]
    part.sort()
    for j in range(n):
        order[a + j] = child_list[a + (part[j] & 0xFFFFFFFF)]
    return n


@njit
def freeform_best(
    switch_parent,
    leaf_switch,
    leaf_of_switch,
    child_start,
    child_list,
    leaf_depth,
    leaf_idle,
    size,
    idle_below,
    num_kids,
    keys,
    order,
    table_at,
    tables,
    choice_at,
    choices,
    buf_a,
    buf_b,
    stack_s,
    stack_c,
    leaf_take,
):
    """The largest S of any ``size`` idle nodes on a tree whose leaves all sit at depth
    ``leaf_depth``, and the count taken from each leaf (into ``leaf_take``).

    The tree: ``switch_parent`` (the top switch is 0, parents before children),
    ``leaf_switch[k]`` the switch of leaf ``k``, ``leaf_of_switch[s]`` its inverse (-1 for other
    switches), ``child_list[child_start[s]:child_start[s + 1]]`` the children of switch ``s``.
    Scratch (int64): ``idle_below``, ``num_kids``, ``table_at``, ``stack_s``, ``stack_c``: one
    entry per switch; ``keys``, ``order``, ``choice_at``: one per child entry; ``leaf_take``: one
    per leaf; ``buf_a``, ``buf_b``: ``size + 1`` each; ``tables`` and ``choices``: as
    :meth:`SingleJobTables.scratch` sizes them. Returns -1 when fewer than ``size`` nodes are idle.
    """
    num_switches = switch_parent.shape[0]
    num_leaves = leaf_switch.shape[0]
    best_leaf = -1
    for k in range(num_leaves):
        leaf_take[k] = 0
        if leaf_idle[k] >= size and (best_leaf < 0 or leaf_idle[k] < leaf_idle[best_leaf]):
            best_leaf = k
    if best_leaf >= 0:  # one leaf holds the job: every row counts size
        leaf_take[best_leaf] = size
        return leaf_depth * size * size
    for s in range(num_switches):
        idle_below[s] = 0
    for k in range(num_leaves):
        idle_below[leaf_switch[k]] = leaf_idle[k]
    for s in range(num_switches - 1, 0, -1):
        idle_below[switch_parent[s]] += idle_below[s]
    if idle_below[0] < size:
        return -1
    at = 0
    chosen_at = 0
    answer = 0
    for s in range(num_switches - 1, -1, -1):
        if leaf_of_switch[s] >= 0 or idle_below[s] == 0:
            continue
        top = s == 0
        a = child_start[s]
        cap = min(size, idle_below[s])
        if leaf_of_switch[child_list[a]] >= 0:
            # leaves below: the fullest whole, the remainder in one more leaf
            n = _sort_children(child_list, a, child_start[s + 1], idle_below, keys, order, True)
            num_kids[s] = n
            table_at[s] = at
            tables[at] = 0
            f = 0
            whole = 0
            squares = 0
            for c in range(1, cap + 1):
                while f < n and whole + idle_below[order[a + f]] <= c:
                    whole += idle_below[order[a + f]]
                    squares += idle_below[order[a + f]] ** 2
                    f += 1
                rest = c - whole
                tables[at + c] = squares + rest * rest + (0 if top else c * c)
            if top:
                answer = tables[at + size]
            at += cap + 1
            continue
        # switches below: a knapsack over their tables, the fewest idle first
        n = _sort_children(child_list, a, child_start[s + 1], idle_below, keys, order, False)
        num_kids[s] = n
        cur, nxt = buf_a, buf_b
        cur[0] = 0
        cur_len = 1
        remaining = idle_below[s]
        for j in range(n):
            c = order[a + j]
            g = table_at[c]
            g_len = min(size, idle_below[c]) + 1
            remaining -= idle_below[c]
            new_len = min(size, cur_len - 1 + g_len - 1) + 1
            lo = max(0, size - remaining) if top else 0  # the top needs size in the end
            choice_at[a + j] = chosen_at
            for t in range(new_len):
                nxt[t] = -1
            for t in range(lo, new_len):
                best = -1
                arg = 0
                for b in range(max(0, t - cur_len + 1), min(g_len - 1, t) + 1):
                    if cur[t - b] >= 0:
                        v = cur[t - b] + tables[g + b]
                        if v > best:
                            best = v
                            arg = b
                nxt[t] = best
                choices[chosen_at + t] = arg
            chosen_at += new_len
            cur, nxt = nxt, cur
            cur_len = new_len
        if top:
            answer = cur[size]
        else:
            table_at[s] = at
            for t in range(cur_len):
                tables[at + t] = cur[t] + t * t
            at += cur_len
    # the counts: down from the top
    depth = 1
    stack_s[0] = 0
    stack_c[0] = size
    while depth > 0:
        depth -= 1
        s = stack_s[depth]
        t = stack_c[depth]
        if t == 0:
            continue
        if leaf_of_switch[s] >= 0:
            leaf_take[leaf_of_switch[s]] = t
            continue
        a = child_start[s]
        n = num_kids[s]
        if leaf_of_switch[child_list[a]] >= 0:
            f = 0
            while f < n and idle_below[order[a + f]] <= t:
                t -= idle_below[order[a + f]]
                leaf_take[leaf_of_switch[order[a + f]]] = idle_below[order[a + f]]
                f += 1
            if t > 0:  # the tightest other leaf that holds the rest
                fit = -1
                for i in range(f, n):
                    if idle_below[order[a + i]] >= t and (
                        fit < 0 or idle_below[order[a + i]] < idle_below[fit]
                    ):
                        fit = order[a + i]
                leaf_take[leaf_of_switch[fit]] = t
            continue
        for j in range(n - 1, -1, -1):
            b = choices[choice_at[a + j] + t]
            stack_s[depth] = order[a + j]
            stack_c[depth] = b
            depth += 1
            t -= b
    return answer


# -- public face -----------------------------------------------------------------------------------
class SingleJobTables:
    """The arrays the single-job kernels take for one tree, and checked calls of them.

    Build with :meth:`from_topology`; then :meth:`scas` and :meth:`bound` take an idle mask
    (one bool per node) and a job size and return ``(S, nodes)``; :meth:`cost` turns S into the
    CH cost. The scratch arrays are the instance's own: one instance serves one thread.

    Attributes
    ----------
    topology : Topology
        The tree.
    exact_kernel : bool
        True when every leaf sits at the same depth and :meth:`bound` runs the compiled
        :func:`freeform_best`; False when it falls back to
        :func:`~tjap.placement.tree.freeform.best_single_job_nodes` (Python).
    """

    def __init__(self, topology: Topology):
        if not isinstance(topology, Topology):
            raise InvalidInputError(
                f"topology must be a tjap.Topology (or tjap.FatTree), got {type(topology).__name__}"
            )
        t = topology
        form = t.count_form
        self.topology = t
        self.top_level = int(form.top_level)
        first, count = t.switch_spans()
        leaves = np.asarray(t.leaf_switches, dtype=np.int64)
        self.leaf_switch = leaves
        self.leaf_first = first[leaves].astype(np.int64)
        self.leaf_size = count[leaves].astype(np.int64)
        self.leaf_groups = np.ascontiguousarray(form.group_of[:, self.leaf_first].T)
        self.switch_parent = np.asarray(t.switch_parent, dtype=np.int64)
        self.leaf_of_switch = np.full(t.num_switches, -1, np.int64)
        self.leaf_of_switch[leaves] = np.arange(leaves.size)
        kids = np.argsort(self.switch_parent[1:], kind="stable") + 1
        self.child_list = kids.astype(np.int64)
        self.child_start = np.searchsorted(
            self.switch_parent[1:][kids - 1], np.arange(t.num_switches + 1)
        ).astype(np.int64)
        depths = np.asarray(t.switch_depth)[leaves]
        self.exact_kernel = bool((depths == depths[0]).all())
        self.leaf_depth = int(depths[0])
        self._nodes_below = count
        self._counts = np.zeros(form.num_groups, np.int64)
        self._leaf_idle = np.zeros(leaves.size, np.int64)
        self._leaf_a = np.zeros(leaves.size, np.int64)
        self._leaf_b = np.zeros(leaves.size, np.int64)
        self._scratch = None
        self._scratch_size = 0

    @classmethod
    def from_topology(cls, topology: Topology) -> "SingleJobTables":
        """The tables of ``topology`` (any :class:`Topology`, a FatTree included)."""
        return cls(topology)

    # -- checks ---------------------------------------------------------------------------------
    def _mask(self, idle_mask) -> np.ndarray:
        mask = np.asarray(idle_mask)
        if mask.dtype != np.bool_ or mask.shape != (self.topology.num_nodes,):
            raise InvalidInputError(
                f"idle_mask must be a bool array of one entry per node (shape "
                f"({self.topology.num_nodes},)), got dtype {mask.dtype} and shape {mask.shape}"
            )
        return mask

    def _check(self, idle_mask, size) -> tuple[np.ndarray, int]:
        mask = self._mask(idle_mask)
        total = leaf_idle_counts(mask, self.leaf_first, self.leaf_size, self._leaf_idle)
        return mask, check_int(
            "size", size, 1, total, must=f"an integer in [1, {total}] (the idle nodes)"
        )

    def leaf_idle(self, idle_mask) -> np.ndarray:
        """The idle nodes of each leaf switch (leaves in switch order), a new array."""
        out = np.zeros(self.leaf_switch.size, np.int64)
        leaf_idle_counts(self._mask(idle_mask), self.leaf_first, self.leaf_size, out)
        return out

    # -- the optima -----------------------------------------------------------------------------
    def scas(self, idle_mask, size: int) -> tuple[int, np.ndarray]:
        """The SCAS optimum: the largest S of a run of ``size`` consecutive idle nodes of Q
        (cyclic; ties to the first start) and the run's nodes in Q's order from its start.

        Raises
        ------
        InvalidInputError
            ``idle_mask`` is not one bool per node, or ``size`` is not in 1..(idle nodes).
        """
        return self._scas(*self._check(idle_mask, size))

    def _scas(self, mask, size):
        s, _, leaf, offset = scas_best(
            self.leaf_groups, self._leaf_idle, size, self._counts, self._leaf_a, self._leaf_b
        )
        nodes = np.empty(size, np.int64)
        scas_nodes(
            mask, self.leaf_first, self.leaf_size, self._leaf_idle, size, leaf, offset, nodes
        )
        return int(s), nodes

    def scratch(self, size: int) -> tuple:
        """Scratch arrays for :func:`freeform_best` with jobs of up to ``size`` nodes, in its
        argument order (``idle_below`` to ``leaf_take``, ``size`` left out)."""
        t = self.topology
        below = np.minimum(self._nodes_below, size) + 1
        table_cells = int(below.sum())
        children = np.diff(self.child_start)
        choice_cells = int((children * below).sum())
        ns, nc, nl = t.num_switches, self.child_list.size, self.leaf_switch.size
        z = np.zeros
        return (
            z(ns, np.int64),
            z(ns, np.int64),
            z(nc, np.int64),
            z(nc, np.int64),
            z(ns, np.int64),
            z(table_cells, np.int64),
            z(nc, np.int64),
            z(choice_cells, np.int64),
            z(size + 1, np.int64),
            z(size + 1, np.int64),
            z(ns, np.int64),
            z(ns, np.int64),
            z(nl, np.int64),
        )

    def bound(self, idle_mask, size: int) -> tuple[int, np.ndarray]:
        """The free-form optimum: the largest S of any ``size`` idle nodes, and those nodes
        (increasing).

        Raises
        ------
        InvalidInputError
            ``idle_mask`` is not one bool per node, or ``size`` is not in 1..(idle nodes).
        """
        return self._bound(*self._check(idle_mask, size))

    def _bound(self, mask, size):
        if not self.exact_kernel:
            nodes, s = _best_single_job(self.topology, np.flatnonzero(mask), size)
            return int(s), np.array(nodes, dtype=np.int64)
        if size > self._scratch_size:
            grow = max(size, 2 * self._scratch_size, 64)
            self._scratch, self._scratch_size = self.scratch(grow), grow
        sc = self._scratch
        s = freeform_best(
            self.switch_parent,
            self.leaf_switch,
            self.leaf_of_switch,
            self.child_start,
            self.child_list,
            self.leaf_depth,
            self._leaf_idle,
            size,
            *sc,
        )
        leaf_take = sc[12]
        nodes = np.empty(size, np.int64)
        self._leaf_a[:] = 0
        take_nodes(
            mask,
            self.leaf_first,
            self.leaf_size,
            self._leaf_a,
            leaf_take,
            np.flatnonzero(leaf_take),
            nodes,
        )
        return int(s), nodes

    def optima(self, idle_mask, size: int) -> tuple[tuple[int, np.ndarray], tuple[int, np.ndarray]]:
        """``(scas(idle_mask, size), bound(idle_mask, size))``, counting the idle nodes once."""
        mask, size = self._check(idle_mask, size)
        return self._scas(mask, size), self._bound(mask, size)

    def cost(self, size: int, sum_sq: int, convention: str = "paper") -> float:
        """The CH cost of a ``size``-node set of sum of squares ``sum_sq`` in ``convention``
        (``"paper"`` or ``"published"``), as :func:`~tjap.placement.tree.cost.job_cost` gives it."""
        return float(
            cost_from_sum_of_squares(
                int(size), self.top_level, int(sum_sq), convention_code(convention)
            )
        )
