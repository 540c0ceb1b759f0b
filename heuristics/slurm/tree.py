"""What Slurm 22.05 (or 24.11) would choose on a switch tree: its ``topology/tree`` selection as a
placement method, for one job (:func:`slurm_tree_nodes`) and for a window of jobs placed one after
another in priority order (:func:`solve_slurm_tree`, registered as method ``"slurm-tree"``).

The rule follows ``_eval_nodes_topo`` (with its helpers ``_topo_choose_best_switch``,
``_topo_compare_switches`` and ``_topo_add_dist``) in ``src/plugins/select/cons_tres/job_test.c``
of Slurm 22.05.8, and the switch table that ``_validate_switches`` in
``src/plugins/topology/tree/topology_tree.c`` builds from ``topology.conf``. It is re-written here
from a reading of that code, for what this project places: whole-node exclusive jobs of ``n``
nodes (``sbatch -N n --exclusive``), nodes of one CPU and equal scheduling weight, no required
nodes, no ``--switches`` limit. In those terms Slurm does this:

1. **Switch table.** Switches are numbered in the order of their lines in ``topology.conf``. A
   leaf switch has level 0, any other switch one more than its highest child. The distance of two
   switches is the number of links between them in the switch graph, infinite when they have no
   common ancestor. Each switch records a parent: the switch that lists it; a switch nobody lists
   keeps parent 0 (the first line), which is itself when it is the first line.
2. **Top switch.** Among the switches holding at least ``n`` idle nodes, the one of the highest
   level is taken, the last in table order on a tie. With one root this is the root; with several
   top-level switches and no common root it is one of them, and the job is confined to the nodes
   under it. When no switch holds ``n`` idle nodes the job does not start (it stays pending).
3. **Leaf switches, one at a time.** Every leaf switch under the top switch starts with its count
   of idle nodes and a summed distance of 0. While nodes are missing, the leaves with idle nodes
   left are scanned in table order and one is kept as the best so far: a later leaf replaces it
   when it is strictly closer (smaller summed distance) and compares at least as well, or equally
   close and compares strictly better. Comparing two leaves for ``r`` missing nodes: a leaf that
   can hold all ``r`` beats one that cannot; of two that can, the one with fewer idle nodes wins
   (best fit); of two that cannot, the comparison moves up to their parents (while the parents
   differ) and repeats there with the parents' idle counts; when that ends undecided, more idle
   nodes win, then the lower level. Parents' counts are those before the job took any node.
4. **Taking nodes.** The chosen leaf gives its idle nodes in node order (Slurm's node index
   order) until the job has ``n``; its count drops to zero and every switch's summed distance
   grows by its distance to the chosen leaf, so the next leaf is preferably near the ones taken.

**Slurm 24.11** (``slurm="24.11"``; its ``_eval_nodes_topo`` in
``src/plugins/topology/tree/eval_nodes_tree.c``) differs in two steps, and this rule reproduces
its choices on the 120 windows (285 jobs) of ``benchmarks/slurm_tree_validation.py`` (seeds 0
and 1) where 22.05's differs on 20: in step 3 a strictly closer leaf replaces the best so far
when it can hold the missing nodes, or when the ancestor the comparison ended at can (not when
it merely compares at least as well); and once a leaf has given all its idle nodes, every switch
above it loses them too, so the parents' counts are those left.

So a job that fits in one leaf lands in the leaf with the fewest idle nodes that holds it (the
first such leaf on a tie), on that leaf's first idle nodes. A larger job starts with the leaf the
same comparison prefers (it looks at the parents first, so a leaf whose parent holds the job beats
a fuller leaf whose parent does not; among siblings the fullest wins), then adds leaves close to
the ones it already has, best fit for the rest among the closest.

Assumptions (checked against a real Slurm 22.05.8 by ``benchmarks/slurm_tree_validation.py``):

- ``topology.conf`` is :meth:`Topology.to_slurm`'s text: switches depth first, root first, so the
  table order is the topology's switch order (less an implicit root, which Slurm does not have).
- Slurm's node order (the ``NodeName`` order in ``slurm.conf``) is the topology's depth-first node
  order; nodes of one leaf are taken in that order.
- All nodes have the same weight and one CPU, and every idle node can run the job.

With several top-level switches (a :data:`~tjap.placement.tree.topology.IMPLICIT_ROOT` tree) a job
that no single top-level switch can hold would stay pending in Slurm; :func:`slurm_tree_nodes`
then raises :class:`SlurmWouldNotPlaceError` and :func:`solve_slurm_tree` returns an
``INFEASIBLE`` result naming the job in ``info["unplaced_job"]``.
"""

from __future__ import annotations

import functools
import re
import time

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.core.jit import njit
from tjap.core.result import Status
from tjap.placement.tree.jobs import refuse_constraints
from tjap.placement.tree.result import Result
from tjap.placement.tree.topology import IMPLICIT_ROOT, Topology
from tjap.placement.tree.window import Window

#: Slurm's INFINITE (a uint32 of all ones), the distance between switches with no common ancestor.
INFINITE = 0xFFFFFFFF


class SlurmWouldNotPlaceError(InvalidInputError):
    """No switch holds enough idle nodes for the job: Slurm would leave it pending."""


# --------------------------------------------------------------------------- the switch table
class SlurmSwitchTable:
    """The switch table Slurm builds from :meth:`Topology.to_slurm`'s ``topology.conf``, as arrays
    indexed by Slurm's switch index (the topology's switch index, less one with an implicit root).

    Attributes
    ----------
    level : int64 array
        0 for a leaf switch, else one more than the highest child.
    parent : int64 array
        The listing switch; 0 for a switch no line lists (Slurm leaves it unset, i.e. zero).
    first_node, end_node : int64 arrays
        The switch's nodes are ``first_node[s]:end_node[s]`` in the topology's node order.
    leaves : int64 array
        The leaf switches, in table order.
    ancestors : int64 array (num_switches, depth + 1)
        ``ancestors[s, d]`` is the switch above ``s`` at depth ``d`` (``s`` itself at its own
        depth, -1 below it): the links between two switches follow from their two rows
        (:func:`switch_distance`), so no leaves x switches table is ever built (it would be
        tens of GiB on a tree of a million nodes). :meth:`leaf_distances` builds it for
        inspection.
    top : bool array
        Whether the switch is a top-level switch (no line lists it).
    """

    def __init__(self, topology: Topology):
        offset = 1 if topology.switch_names[0] == IMPLICIT_ROOT else 0
        parent_t = topology.switch_parent.astype(np.int64)
        num = topology.num_switches - offset
        parent = np.zeros(num, dtype=np.int64)
        for s in range(num):
            p = int(parent_t[s + offset]) - offset
            parent[s] = p if p >= 0 else 0
        is_top = np.array([int(parent_t[s + offset]) - offset < 0 for s in range(num)])
        # preorder: children after parents, so a reverse scan gives heights
        level = np.zeros(num, dtype=np.int64)
        for s in range(num - 1, -1, -1):
            if not is_top[s]:
                level[parent[s]] = max(level[parent[s]], level[s] + 1)
        # node ranges: preorder subtrees are contiguous in depth-first node order
        leaf_of = topology.node_leaf.astype(np.int64) - offset
        first = np.full(num, topology.num_nodes, dtype=np.int64)
        end = np.zeros(num, dtype=np.int64)
        nodes = np.arange(topology.num_nodes, dtype=np.int64)
        np.minimum.at(first, leaf_of, nodes)
        np.maximum.at(end, leaf_of, nodes + 1)
        for s in range(num - 1, -1, -1):  # children before parents
            if not is_top[s]:
                first[parent[s]] = min(first[parent[s]], first[s])
                end[parent[s]] = max(end[parent[s]], end[s])
        depth = np.zeros(num, dtype=np.int64)
        for s in range(num):
            if not is_top[s]:
                depth[s] = depth[parent[s]] + 1
        leaves = np.flatnonzero(level == 0).astype(np.int64)
        # path[s, d]: the ancestor of s at depth d (-1 below s); two switches share a prefix of
        # their paths, as long as the depth of their lowest common ancestor plus one
        path = np.full((num, int(depth.max()) + 1), -1, dtype=np.int64)
        for s in range(num):
            u = s
            for d in range(int(depth[s]), -1, -1):
                path[s, d] = u
                u = int(parent[u])
        self.num_switches = num
        self.offset = offset
        self.level, self.parent, self.first_node, self.end_node = level, parent, first, end
        self.leaves, self.ancestors, self.top = leaves, path, is_top
        for array in (level, parent, first, end, leaves, path, is_top):
            array.setflags(write=False)

    def kernel_args(self) -> tuple:
        """The arrays :func:`place_job` takes after ``avail`` and ``size``, in its order."""
        return (
            self.level,
            self.parent,
            self.first_node,
            self.end_node,
            self.leaves,
            self.ancestors,
            self.top,
        )

    def leaf_distances(self) -> np.ndarray:
        """Links between each leaf and every switch (:data:`INFINITE` across top-level
        switches), a leaves x switches table: for inspection and tests of small trees."""
        out = np.empty((self.leaves.size, self.num_switches), dtype=np.int64)
        for a, leaf in enumerate(self.leaves):
            for s in range(self.num_switches):
                out[a, s] = switch_distance(self.ancestors, int(leaf), s)
        return out


@njit
def switch_distance(ancestors, a, s):
    """Links between switches ``a`` and ``s`` (:data:`INFINITE` under different top-level
    switches), from their rows of :attr:`SlurmSwitchTable.ancestors`."""
    shared = 0
    depth_a = -1
    depth_s = -1
    for d in range(ancestors.shape[1]):
        above_a, above_s = ancestors[a, d], ancestors[s, d]
        if above_a >= 0:
            depth_a += 1
        if above_s >= 0:
            depth_s += 1
        if above_a >= 0 and above_a == above_s:
            shared += 1
    if shared == 0:
        return INFINITE
    return depth_a + depth_s - 2 * (shared - 1)


@functools.lru_cache(maxsize=16)
def switch_table(topology: Topology) -> SlurmSwitchTable:
    """The :class:`SlurmSwitchTable` of ``topology`` (built once per topology, then cached)."""
    return SlurmSwitchTable(topology)


# --------------------------------------------------------------------------- kernels
@njit
def _compare(i, j, rem, count, parent, level):
    """``(order, fit)``: order is 1 if leaf ``i`` is the better of ``i`` and ``j`` for ``rem``
    missing nodes, -1 if ``j``, 0 if neither (Slurm's ``_topo_compare_switches``); fit is
    whether ``i``, or the ancestor of ``i`` the comparison ended at, holds ``rem`` nodes."""
    while True:
        i_fit = count[i] >= rem
        j_fit = count[j] >= rem
        if i_fit and j_fit:
            if count[i] < count[j]:
                return 1, i_fit
            if count[i] > count[j]:
                return -1, i_fit
            break
        if i_fit:
            return 1, i_fit
        if j_fit:
            return -1, i_fit
        if (parent[i] != i or parent[j] != j) and parent[i] != parent[j]:
            i = parent[i]
            j = parent[j]
            continue
        break
    if count[i] > count[j]:
        return 1, i_fit
    if count[i] < count[j]:
        return -1, i_fit
    if level[i] < level[j]:
        return 1, i_fit
    if level[i] > level[j]:
        return -1, i_fit
    return 0, i_fit


@njit
def place_job(
    avail, size, level, parent, first_node, end_node, leaves, ancestors, top_level, newer, out
):
    """Slurm's choice of ``size`` nodes among ``avail`` (uint8 per node, 1 = idle; the chosen
    nodes are set to 0), by 22.05's rule or, with ``newer``, by 24.11's. Writes the node indices
    to ``out[:size]`` in the order taken and returns ``size``, or returns -1 (nothing changed)
    when no switch holds ``size`` idle nodes."""
    count = np.zeros(level.size, dtype=np.int64)
    for s in range(level.size):
        c = 0
        for v in range(first_node[s], end_node[s]):
            c += avail[v]
        count[s] = c
    return place_counted(
        avail,
        count,
        size,
        level,
        parent,
        first_node,
        end_node,
        leaves,
        ancestors,
        top_level,
        newer,
        out,
    )


@njit
def place_counted(
    avail,
    count,
    size,
    level,
    parent,
    first_node,
    end_node,
    leaves,
    ancestors,
    top_level,
    newer,
    out,
):
    """:func:`place_job` given ``count``, the idle nodes below each switch (which the call
    overwrites): for callers that keep those counts as nodes come and go."""
    num = level.size
    top = -1
    for s in range(num):
        if count[s] < size or count[s] == 0:
            continue
        if top == -1 or level[s] >= level[top]:
            top = s
    if top == -1:
        return -1
    lo, hi = first_node[top], end_node[top]
    for s in range(num):  # keep only the top switch's nodes (spans nest or are apart)
        if first_node[s] >= lo and end_node[s] <= hi:
            continue  # inside the top switch: all its idle nodes
        if first_node[s] <= lo and end_node[s] >= hi:
            count[s] = count[top]  # above it: the top switch's
        else:
            count[s] = 0
    dist = np.zeros(num, dtype=np.int64)
    rem = size
    taken = 0
    prev = rem + 1
    while prev != rem:
        prev = rem
        best = -1
        for pos in range(leaves.size):
            i = leaves[pos]
            if best == -1 or dist[i] == INFINITE or count[i] == 0:
                if count[i] > 0 and dist[i] < INFINITE:
                    best = i
                continue
            tcs, fit = _compare(i, best, rem, count, parent, level)
            if (dist[i] < dist[best] and (fit if newer else tcs >= 0)) or (
                dist[i] == dist[best] and tcs > 0
            ):
                best = i
        if best == -1:
            break
        for s in range(num):
            d = switch_distance(ancestors, best, s)
            if d == INFINITE or dist[s] == INFINITE:
                dist[s] = INFINITE
            else:
                dist[s] += d
        for v in range(max(first_node[best], lo), min(end_node[best], hi)):
            if avail[v]:
                avail[v] = 0
                out[taken] = v
                taken += 1
                rem -= 1
                if rem == 0:
                    return size
        if newer:  # 24.11: the leaf's switches lose the nodes it gave
            used = count[best]
            s = best
            while True:
                count[s] = count[s] - used if count[s] > used else 0
                if top_level[s]:
                    break
                s = parent[s]
        count[best] = 0
    # not reached on a tree (the top switch holds enough nodes): undo
    for k in range(taken):
        avail[out[k]] = 1
    return -1


# --------------------------------------------------------------------------- public functions
def _avail_mask(topology: Topology, idle) -> np.ndarray:
    if isinstance(idle, np.ndarray) and idle.dtype == np.bool_:
        if idle.shape != (topology.num_nodes,):
            raise InvalidInputError(
                f"an idle mask needs one entry per node ({topology.num_nodes}), "
                f"got shape {idle.shape}"
            )
        return idle.astype(np.uint8)
    try:
        ids = topology.node_indices(list(idle))
    except TypeError:
        raise InvalidInputError(
            "idle nodes must be a boolean mask or a list of node names or "
            f"indices, got {type(idle).__name__}"
        ) from None
    mask = np.zeros(topology.num_nodes, dtype=np.uint8)
    mask[ids] = 1
    if int(mask.sum()) != len(ids):
        raise InvalidInputError("idle nodes list a node twice; list each idle node once")
    return mask


#: The Slurm releases whose rule is modelled (``slurm=``): 22.05's and 24.11's.
RELEASES = ("22.05", "24.11")


def release_for(version: str) -> str:
    """The rule of :data:`RELEASES` a Slurm version follows (``slurm 24.11.5`` -> ``"24.11"``,
    ``slurm-wlm 22.05.8`` -> ``"22.05"``): 24.11's from 24.11 on, else 22.05's."""
    found = re.search(r"(\d+)\.(\d+)", version or "")
    return "24.11" if found and (int(found[1]), int(found[2])) >= (24, 11) else "22.05"


def _newer(slurm) -> bool:
    """True for 24.11's rule, False for 22.05's; anything else is one line."""
    if slurm not in RELEASES:
        raise InvalidInputError(
            f"slurm must be one of {', '.join(map(repr, RELEASES))} (the "
            f"release whose topology/tree rule to follow), got {slurm!r:.40}"
        )
    return slurm == "24.11"


def _check_topology(topology) -> Topology:
    if not isinstance(topology, Topology):
        raise InvalidInputError(
            f"topology must be a tjap.Topology (or FatTree), got {type(topology).__name__}"
        )
    return topology


def slurm_tree_nodes(topology: Topology, idle, size: int, *, slurm: str = "22.05") -> np.ndarray:
    """The nodes Slurm 22.05's ``topology/tree`` selection (24.11's with ``slurm="24.11"``)
    gives a whole-node job of ``size`` nodes when ``idle`` are the idle nodes (see the module
    docstring for the rule).

    Parameters
    ----------
    topology : Topology
        The switch tree, as Slurm reads it from :meth:`Topology.to_slurm`'s text.
    idle : bool array of length ``num_nodes``, or sequence of node names or indices
        The idle nodes.
    size : int
        Nodes the job asks for (``sbatch -N size --exclusive``).
    slurm : {"22.05", "24.11"}
        The release whose rule to follow.

    Returns
    -------
    numpy.ndarray
        ``size`` node indices, sorted.

    Raises
    ------
    InvalidInputError
        Bad topology, idle nodes or size, or fewer idle nodes than ``size``.
    SlurmWouldNotPlaceError
        No switch holds ``size`` idle nodes (only possible with several top-level switches).

    Examples
    --------
    >>> t = Topology.from_slurm('''
    ... SwitchName=a Nodes=n[1-4]
    ... SwitchName=b Nodes=n[5-6]
    ... SwitchName=top Switches=a,b''')
    >>> [t.node_names[v] for v in slurm_tree_nodes(t, t.node_names, 2)]   # best fit: leaf b
    ['n5', 'n6']
    """
    topology = _check_topology(topology)
    newer = _newer(slurm)
    check_int("size", size, 1)
    avail = _avail_mask(topology, idle)
    if int(avail.sum()) < size:
        raise InvalidInputError(
            f"a job of {size} nodes does not fit in {int(avail.sum())} idle "
            "nodes; give more idle nodes or a smaller size"
        )
    table = switch_table(topology)
    out = np.empty(int(size), dtype=np.int64)
    got = place_job(avail, np.int64(size), *table.kernel_args(), newer, out)
    if got < 0:
        raise SlurmWouldNotPlaceError(
            f"no switch holds {size} idle nodes: Slurm would leave this job pending (the tree has "
            "several top-level switches and no common root; add a root switch to topology.conf)"
        )
    return np.sort(out)


def solve_slurm_tree(
    window: Window, *, convention="paper", time_limit_s=None, seed=0, slurm: str = "22.05"
) -> Result:
    """Place the window's jobs in window (priority) order, each where Slurm 22.05's
    ``topology/tree`` selection (24.11's with ``slurm="24.11"``) puts it on the nodes the
    previous jobs left idle.

    ``time_limit_s`` and ``seed`` are accepted for the common solver signature; the rule is
    deterministic and fast. Status ``FEASIBLE``; ``INFEASIBLE`` (no assignment,
    ``info["unplaced_job"]`` the job's index) when Slurm would leave a job pending, which only
    happens on a tree with several top-level switches.
    """
    refuse_constraints(window, "slurm-tree")
    if not isinstance(window, Window):
        raise InvalidInputError(f"window must be a Window, got {type(window).__name__}")
    newer = _newer(slurm)
    started = time.perf_counter()
    topology = _check_topology(window.topology)
    table = switch_table(topology)
    avail = np.zeros(topology.num_nodes, dtype=np.uint8)
    avail[window.idle_nodes] = 1
    sizes = np.asarray(window.job_sizes, dtype=np.int64)
    out = np.empty(int(sizes.sum()), dtype=np.int64)
    # one kernel call per job, so that a Ctrl-C or SIGTERM is handled between jobs: a job scans
    # every switch, 30 ms on a tree of a million nodes
    failed, offset = -1, 0
    for j, size in enumerate(sizes):
        got = place_job(avail, size, *table.kernel_args(), newer, out[offset : offset + size])
        if got < 0:
            failed = j
            break
        offset += size
    runtime = time.perf_counter() - started
    if failed >= 0:
        return Result.from_assignment(
            window,
            (),
            status=Status.INFEASIBLE,
            method="slurm-tree",
            convention=convention,
            runtime_s=runtime,
            seed=seed,
            info={
                "unplaced_job": int(failed),
                "reason": f"no switch holds {int(sizes[failed])} idle nodes",
            },
        )
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    assignment = [sorted(out[a:b].tolist()) for a, b in zip(bounds[:-1], bounds[1:])]
    return Result.from_assignment(
        window,
        assignment,
        status=Status.FEASIBLE,
        method="slurm-tree",
        convention=convention,
        runtime_s=runtime,
        seed=seed,
    )


__all__ = [
    "INFINITE",
    "RELEASES",
    "SlurmSwitchTable",
    "SlurmWouldNotPlaceError",
    "place_job",
    "slurm_tree_nodes",
    "solve_slurm_tree",
    "switch_table",
]
