"""What Slurm's ``topology/block`` selection does with a window's jobs: each whole-node job, in
window (priority) order, on the nodes the earlier ones left idle (method ``"slurm-block"``,
:func:`solve_slurm_block`).

The rules are re-written from a reading of Slurm 24.11's ``eval_nodes_block`` (with its helper
``_choose_best_bblock``) in ``src/plugins/topology/block/eval_nodes_block.c``, of
``topology_p_whole_topo`` in ``src/plugins/topology/block/topology_block.c`` and of
``_block_by_topology`` in ``src/plugins/select/cons_tres/job_test.c``, and checked against the
placements a real Slurm 24.11.5 made on 16 nodes in 4 blocks of 4 with ``BlockSizes=4,8,16``
(``tests/heuristics/tree/test_anchors_block_kueue.py`` replays them) and on random block clusters of 16-40 nodes
(``benchmarks/slurm_block_validation.py``; ``tests/placement/slurm/test_slurm_block_live.py`` replays a few on
a real Slurm). For what this project places (jobs of
``n`` whole nodes, ``sbatch -N n --exclusive``, nodes of equal weight and CPUs, no required
nodes) Slurm does this:

1. **Blocks and levels.** The base blocks are the tree's leaf switches; the aggregated blocks of
   a ``BlockSizes`` entry are the domains of one level of the tree (level 1: the base blocks;
   :func:`~tjap.placement.tree.jobs.level_domains`). The base block size ``b`` is the smallest
   leaf's node count.
2. **The level a job asks for.** A request of ``r`` nodes needs ceil(r / b) base blocks, rounded
   up to the next ``BlockSizes`` level: the lowest level whose largest domain has that many
   (:func:`~tjap.placement.tree.jobs.slurm_level`); a single top aggregated block counts at its
   ``BlockSizes`` size (its base blocks rounded up to a power of two), so it also takes the
   requests between its real size and that one. The request's nodes all come from one block of
   that level. A larger request (possible where blocks hold more than ``b`` nodes) goes to the
   whole cluster, counted as all its base blocks. The blocks of the next level down are the
   level's "llblocks" (for the whole cluster: the top aggregated blocks, or the single top
   block itself); the request may use ceil(r / llblock size) of them.
3. **The block.** Of the blocks of that level that can hold the request, the one with the
   fewest idle nodes (best fit), the last in the tree's order on a tie. A block can hold the
   request when its idle nodes do; when its size (in base blocks, as rule 2 counts it) is not
   the llblock size times the llblocks the request may use, only the idle nodes of that many of
   its fullest llblocks count, and only llblocks among its first size / llblock size (rounded
   down): the whole cluster leaves out a last llblock that is not full, and holds no request at
   all when its llblock is a top block larger than the cluster (base blocks not a power of two):
   Slurm refuses such a job at submission ("Requested node configuration is not available").
4. **Base blocks inside it.** Base blocks are added one at a time until the request is met; each
   gives its idle nodes in node order. The next one is, in Slurm's order: one that holds all the
   missing nodes, the one with the fewest idle nodes among those, the last on a tie; else the
   one with the most idle nodes, the last on a tie. Where llblocks count (rule 3), the choice
   first prefers a base block in an llblock the job already uses, then an llblock that holds all
   the missing nodes (the one with the fewest idle nodes), else the llblock with the most idle
   nodes, and the job may use at most the llblocks of rule 2. A step that adds no node
   (Slurm's code may pick an empty base block in an llblock already used) ends the search: the
   job stays pending, as the code does.
5. **Segments** (``--segment=S``, the job's ``segment``). The level is sized from the segment, and
   each of the n / S segments is placed by rules 3-4 in its own pass, on the nodes the earlier
   passes left; nothing keeps the segments near each other. If any segment finds no block, the
   whole job stays pending. Slurm 24.11 itself refuses segments larger than a base block
   ("segment > bblock_node_cnt is not supported"); later releases size the level from the
   segment as here.
6. **``--exclusive=topo``** (the job's ``exclusive``, level 1 only: Slurm's whole-topology unit
   is the base block). Such a job uses only base blocks in which no other job runs: a base block
   with a busy node (outside the window, or taken by an earlier job of the window) is left out.
   Every later job leaves out the base blocks an exclusive job touches.

A job whose request no block can hold stays pending in Slurm: it holds nothing, the later jobs
are still tried, and the result has no solution (status ``INFEASIBLE``) with
``info["unplaced"]`` the window indices of the pending jobs and ``info["placed"]`` the others'
nodes by job index, so that a benchmark can count them.

The other constraints are Slurm's own where it has them and refused (one line) where it has
not: ``within`` and ``prefer`` (the block plugin has no ``--switches``), a fragmentation term,
``exclusive`` above level 1, and a ``segment_level`` below the level Slurm sizes from the segment
(Slurm keeps each segment inside one block of that level; any ``segment_level`` at or above it
holds). ``slurm_rule`` always holds: it is the rule of steps 2-5.

Simplified: node order is the tree's node order (Slurm's ``NodeName`` order); one weight for
all nodes; the tree keeps no ``BlockSizes`` entry above the first that holds every base block,
so those are taken as absent, and that first one as the top block's base blocks rounded up to
a power of two (Slurm sizes a request's level from every entry given: where the configuration
lists larger sizes, or its first size that holds every base block is larger than that, Slurm
may place the largest requests otherwise); the ``SPREAD_SEGMENTS`` / ``CONSOLIDATE_SEGMENTS``
flags of later releases are not modelled; a pending job does not hold back the jobs behind it
(no reservation). On a tree that is not a block tree (any :class:`Topology`), leaf switches are the
base blocks and the switches above them the aggregated blocks of their level.

``time_limit_s`` and ``seed`` are accepted for the common solver signature: the rule is
deterministic and fast.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.core.result import Status
from tjap.placement.tree.jobs import base_block_size, level_domains, slurm_level, switch_levels
from tjap.placement.tree.result import Result
from tjap.placement.tree.topology import IMPLICIT_ROOT
from tjap.placement.tree.window import Window

METHOD = "slurm-block"


# --------------------------------------------------------------------------- the block table
class BlockTable:
    """The blocks of a tree as Slurm's block plugin sees them, per level ``L`` (1 = base blocks).

    Attributes
    ----------
    top : int
        The tree's top level.
    base : int
        The base block size: the smallest leaf's node count.
    node_domain : dict level -> int64 array
        Each node's domain (switch index) at the level.
    blocks : dict level -> list of int
        The domains of the level, in the tree's node order.
    leaves_in : dict level -> dict domain -> list of int
        The leaf switches (base blocks) of each domain, in order.
    leaf_domain : dict level -> int64 array
        Each switch's domain at the level (meaningful for leaf switches).
    nominal : dict level -> int
        The size of the level's blocks in base blocks, as Slurm counts it: the most leaves a
        domain of the level holds; at the top, a single aggregated block counts at its
        ``BlockSizes`` size (that count rounded up to a power of two), the implicit root above
        several top blocks at the number of base blocks.
    num_blocks : int
        The number of base blocks (Slurm's whole-cluster block when no level is large enough).
    implicit : bool
        Whether the top is the implicit root over several top blocks.
    leaf_first, leaf_size : int64 arrays
        A leaf switch's nodes are ``leaf_first[s] : leaf_first[s] + leaf_size[s]``.
    """

    def __init__(self, topology):
        self.top = int(switch_levels(topology)[0])
        self.base = base_block_size(topology, "slurm-block")
        leaf = topology.node_leaf.astype(np.int64)
        self.node_leaf = leaf
        first_node = np.full(topology.num_switches, topology.num_nodes, np.int64)
        np.minimum.at(first_node, leaf, np.arange(topology.num_nodes, dtype=np.int64))
        self.leaf_first = first_node
        self.leaf_size = np.bincount(leaf, minlength=topology.num_switches).astype(np.int64)
        leaves = [int(s) for s in np.asarray(topology.leaf_switches)]
        leaves.sort(key=lambda s: first_node[s])
        self.node_domain, self.blocks, self.leaves_in, self.leaf_domain, self.nominal = (
            {},
            {},
            {},
            {},
            {},
        )
        for level in range(1, self.top + 1):
            dom = level_domains(topology, level)
            per_leaf = np.full(topology.num_switches, -1, np.int64)
            per_leaf[leaf] = dom
            inside: dict[int, list[int]] = {}
            for s in leaves:
                inside.setdefault(int(per_leaf[s]), []).append(s)
            self.node_domain[level] = dom
            self.leaf_domain[level] = per_leaf
            self.leaves_in[level] = inside
            self.blocks[level] = list(inside)  # leaves in node order: so are domains
            self.nominal[level] = max(len(v) for v in inside.values())
        self.num_blocks = len(leaves)
        self.implicit = self.top > 1 and topology.switch_names[0] == IMPLICIT_ROOT
        if self.top > 1 and not self.implicit:
            self.nominal[self.top] = 1 << (self.nominal[self.top] - 1).bit_length()


@functools.lru_cache(maxsize=16)
def block_table(topology) -> BlockTable:
    """The :class:`BlockTable` of ``topology`` (built once per topology, then cached)."""
    return BlockTable(topology)


# --------------------------------------------------------------------------- one request
def _level_for(table: BlockTable, topology, count: int) -> tuple[int, int, int]:
    """Where Slurm looks for ``count`` nodes: ``(level, span, ll_level)``, the level of the
    blocks, their size in base blocks as Slurm counts it, and the level of their llblocks (0:
    none). The top level at its ``BlockSizes`` size when that holds ceil(count / b) base
    blocks; else the whole cluster, ``span`` all the base blocks, whose llblock is the top
    aggregated block (the level below the implicit root's)."""
    level = slurm_level(topology, count)
    if level is None and table.nominal[table.top] * table.base >= count:
        level = table.top
    if level is not None:
        return level, table.nominal[level], level - 1
    return table.top, table.num_blocks, table.top - 1 if table.implicit else table.top


def _eval_block(
    table: BlockTable, avail: np.ndarray, rem: int, level: int, span: int, ll_level: int
):
    """One pass of ``eval_nodes_block`` for ``rem`` nodes in the blocks of ``level``, which
    Slurm counts as ``span`` base blocks, with llblocks of ``ll_level`` (0: none): the node ids
    taken (in the order taken), or None when Slurm would not place the request."""
    counts = np.bincount(table.node_domain[level][avail], minlength=table.leaf_size.size)
    leaf_count = np.bincount(table.node_leaf[avail], minlength=table.leaf_size.size)
    use_ll, max_ll = False, 0
    if ll_level >= 1:
        max_ll = -(-rem // (table.nominal[ll_level] * table.base))
        use_ll = span != table.nominal[ll_level] * max_ll
        counted = span // table.nominal[ll_level]  # llblocks of a block that Slurm counts
    ll_count = (
        np.bincount(table.node_domain[ll_level][avail], minlength=table.leaf_size.size)
        if use_ll
        else None
    )
    # rule 3: the block with the fewest idle nodes that can hold the request, the last on a tie
    chosen, chosen_count = None, 0
    for block in table.blocks[level]:
        idle = int(counts[block])
        usable = idle
        if use_ll:
            lls = list(
                dict.fromkeys(
                    int(table.leaf_domain[ll_level][s]) for s in table.leaves_in[level][block]
                )
            )[:counted]
            usable = int(sum(sorted((int(ll_count[d]) for d in lls), reverse=True)[:max_ll]))
        if usable < rem:
            continue
        if chosen is None or idle <= chosen_count:
            chosen, chosen_count = block, idle
    if chosen is None:
        return None
    # rule 4: base blocks one at a time
    bblocks = table.leaves_in[level][chosen]
    ll_of = table.leaf_domain[ll_level] if use_ll else None
    used: list[int] = []
    taken: list[int] = []
    prev = rem + 1
    while rem > 0 and prev != rem:
        prev = rem
        best, best_fit, best_same = -1, False, True
        for b in bblocks:
            if b in used:
                continue
            fit = leaf_count[b] >= rem
            if use_ll and (best < 0 or ll_of[best] != ll_of[b]):
                same = any(ll_of[u] == ll_of[b] for u in used)
                if best < 0 or (same and not best_same):
                    best, best_fit, best_same = b, fit, same
                    continue
                if not same and best_same:
                    continue
                mine, theirs = int(ll_count[ll_of[b]]), int(ll_count[ll_of[best]])
                mine_fit, theirs_fit = mine >= rem, theirs >= rem
                if mine_fit != theirs_fit:
                    if mine_fit:
                        best, best_fit, best_same = b, fit, same
                    continue
                if mine != theirs:
                    if (mine < theirs) == mine_fit:  # fits: fewer nodes; else more nodes
                        best, best_fit, best_same = b, fit, same
                    continue
            if (
                best < 0
                or (fit and not best_fit)
                or (not fit and not best_fit and leaf_count[b] >= leaf_count[best])
                or (fit and leaf_count[b] <= leaf_count[best])
            ):
                best, best_fit = b, fit
        if best < 0 or (use_ll and max_ll <= 0 and not best_same):
            break
        used.append(best)
        start = table.leaf_first[best]
        for v in range(start, start + table.leaf_size[best]):
            if avail[v]:
                taken.append(v)
                rem -= 1
                if rem == 0:
                    return taken
        if use_ll and not best_same:
            max_ll -= 1
    return None


def slurm_block_nodes(topology, idle: np.ndarray, size: int):
    """The nodes Slurm's ``topology/block`` selection gives a whole-node job of ``size`` nodes
    (no segment) when ``idle`` (a boolean mask over ``topology``'s nodes) are the idle nodes: a
    sorted list of node ids, or None when Slurm would leave it pending."""
    table = block_table(topology)
    nodes = _eval_block(
        table, np.asarray(idle, dtype=bool), int(size), *_level_for(table, topology, int(size))
    )
    return None if nodes is None else sorted(nodes)


def block_nodes(window: Window, job, avail: np.ndarray):
    """The nodes Slurm's block selection gives ``job`` (a job of ``window``) when ``avail`` (a
    boolean mask over the tree's nodes) are the nodes it may use: a sorted list of node ids, or
    None when Slurm would leave the job pending."""
    topology = window.topology
    table = block_table(topology)
    if job.segment is None:
        nodes = _eval_block(table, avail, job.nodes, *_level_for(table, topology, job.nodes))
        return None if nodes is None else sorted(nodes)
    level = _level_for(table, topology, job.segment)
    left = avail.copy()
    nodes = []
    for _ in range(job.nodes // job.segment):
        part = _eval_block(table, left, job.segment, *level)
        if part is None:
            return None
        left[part] = False
        nodes += part
    return sorted(nodes)


# --------------------------------------------------------------------------- the window
def refuse_unslurmlike(window: Window) -> None:
    """Refuse, in one line, a constraint Slurm's block plugin cannot express."""
    takes = "dp, scip, cpsat, seq or auto"
    if window.fragmentation[0]:
        raise InvalidInputError(
            f"method {METHOD!r} does not take a fragmentation term (Slurm's block selection has "
            f"none); drop 'fragmentation' or use {takes}"
        )
    topology = window.topology
    for j, job in enumerate(window.jobs):
        where = f"jobs[{j}]"
        if job.within is not None:
            raise InvalidInputError(
                f"{where}: method {METHOD!r} does not take 'within' (Slurm's topology/block has no "
                f"--switches); drop it or use {takes}, kueue-bestfit or kueue-leastfree"
            )
        if job.prefer is not None:
            raise InvalidInputError(
                f"{where}: method {METHOD!r} does not take 'prefer' (Slurm's topology/block has no "
                f"preferred level); drop it or use {takes}, kueue-bestfit or kueue-leastfree"
            )
        if job.exclusive is not None and job.exclusive != 1:
            raise InvalidInputError(
                f"{where}: method {METHOD!r} takes 'exclusive' at level 1 only (Slurm's "
                f"--exclusive=topo holds base blocks), got level {job.exclusive}; give "
                f"exclusive: true or use {takes}"
            )
        if job.segment is not None:
            level = slurm_level(topology, job.segment) or block_table(topology).top
            if job.segment_level < level:
                raise InvalidInputError(
                    f"{where}: Slurm places each segment of {job.segment} nodes inside one block "
                    f"of level {level} (the level its size asks for), not of level "
                    f"{job.segment_level}; give segment_level >= {level} or use {takes}"
                )


def solve_slurm_block(window: Window, *, convention="paper", time_limit_s=None, seed=0) -> Result:
    """Place the window's jobs in window order, each where Slurm's ``topology/block`` selection
    puts it on the nodes the earlier jobs left (see the module docstring for the rules).

    Status ``FEASIBLE``; ``INFEASIBLE`` when Slurm would leave a job pending, with
    ``info["unplaced"]`` (the pending jobs' indices) and ``info["placed"]`` (the other jobs'
    nodes, by job index). Constraints Slurm cannot express are refused in one line
    (:class:`~tjap.core.errors.InvalidInputError`).
    """
    if not isinstance(window, Window):
        raise InvalidInputError(f"window must be a Window, got {type(window).__name__}")
    refuse_unslurmlike(window)
    started = time.perf_counter()
    topology = window.topology
    table = block_table(topology)
    free = np.zeros(topology.num_nodes, bool)
    free[window.idle_nodes] = True
    held = np.zeros(topology.num_switches, bool)  # base blocks of exclusive jobs
    placed, unplaced = {}, []
    for j, job in enumerate(window.jobs):
        avail = free & ~held[table.node_leaf]
        if job.exclusive is not None:  # only base blocks where nothing runs
            busy = np.bincount(table.node_leaf[~free], minlength=topology.num_switches) > 0
            avail &= ~busy[table.node_leaf]
        nodes = block_nodes(window, job, avail)
        if nodes is None:
            unplaced.append(j)
            continue
        placed[j] = tuple(nodes)
        free[nodes] = False
        if job.exclusive is not None:
            held[table.node_leaf[nodes]] = True
    return window_result(
        window,
        METHOD,
        placed,
        unplaced,
        convention=convention,
        seed=seed,
        runtime_s=time.perf_counter() - started,
        reason="no block of the level its size asks for holds enough idle "
        "nodes (Slurm leaves it pending)",
    )


def window_result(
    window: Window,
    method: str,
    placed: dict,
    unplaced: list,
    *,
    convention,
    seed,
    runtime_s,
    reason: str,
) -> Result:
    """The Result of a job-by-job rule: FEASIBLE with every job's nodes, or INFEASIBLE with
    ``info["unplaced"]``, ``info["placed"]`` and ``info["reason"]``."""
    if unplaced:
        return Result.from_assignment(
            window,
            (),
            status=Status.INFEASIBLE,
            method=method,
            convention=convention,
            runtime_s=runtime_s,
            seed=seed,
            info={
                "unplaced": list(unplaced),
                "placed": dict(placed),
                "reason": f"job {unplaced[0]}: {reason}",
            },
        )
    return Result.from_assignment(
        window,
        [placed[j] for j in range(window.num_jobs)],
        status=Status.FEASIBLE,
        method=method,
        convention=convention,
        runtime_s=runtime_s,
        seed=seed,
    )


__all__ = [
    "BlockTable",
    "block_nodes",
    "block_table",
    "refuse_unslurmlike",
    "solve_slurm_block",
    "window_result",
]
