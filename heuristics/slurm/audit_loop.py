"""The audit's measure loop in Numba: for each audited job of a site's history, the SCAS
optimum, the free-form bound and Slurm's ``topology/tree`` choice on the nodes idle at its start.

:func:`measure` walks the history once (:mod:`tjap.placement.slurm.occupancy`, two sweeps: the
strict one gives the idle nodes, the lenient one flags records that overlap), keeping the idle
count of every switch as nodes come and go, so each job costs what its own kernels cost
(:mod:`tjap.placement.tree.single_job`, :func:`tjap.heuristics.slurm.tree.place_counted`), not a
scan of the cluster. :mod:`tjap.slurm.audit` is its caller; the definitions are there.
"""

from __future__ import annotations

import time

import numpy as np

from tjap.core.errors import interrupted_by
from tjap.core.jit import njit
from tjap.heuristics.slurm.tree import place_counted, switch_table
from tjap.placement.slurm.occupancy import Sweep, advance
from tjap.placement.tree.single_job import (
    SingleJobTables,
    freeform_best,
    scas_best,
    scas_nodes,
    take_nodes,
)
from tjap.placement.tree.tree_cost import cost_from_sum_of_squares, node_set_cost

#: Outputs per job: cost as placed, SCAS optimum, bound (NaN when not computed here), Slurm's
#: cost (NaN when it would not place), and the flags.
COLUMNS = ("cost", "optimum", "bound", "slurm_tree", "idle", "same", "overlap")


class LoopTables:
    """Everything :func:`measure` needs about one tree, built once: the single-job tables, Slurm's
    switch table, and ``node_path``, each node's counted switches: the Slurm table's switches
    above it, then (last column) ``num_table`` plus its leaf in the single-job tables' order."""

    def __init__(self, topology, slurm_rule: str = "22.05"):
        single = SingleJobTables.from_topology(topology)
        table = switch_table(topology)
        self.single, self.table = single, table
        n, ns = topology.num_nodes, table.num_switches
        above = np.zeros(n, np.int64)
        for s in range(ns):
            above[table.first_node[s] : table.end_node[s]] += 1
        path = np.full((n, int(above.max()) + 1), -1, np.int64)
        filled = np.zeros(n, np.int64)
        for s in range(ns):
            span = np.arange(table.first_node[s], table.end_node[s])
            path[span, filled[span]] = s
            filled[span] += 1
        for k in range(single.leaf_first.size):
            path[single.leaf_first[k] : single.leaf_first[k] + single.leaf_size[k], -1] = ns + k
        self.node_path = path
        self.num_table = ns
        self.num_counts = ns + single.leaf_first.size
        self.newer = slurm_rule == "24.11"
        form = topology.count_form
        self.group_of, self.top_level, self.num_groups = (
            form.group_of,
            form.top_level,
            form.num_groups,
        )


#: Seconds one call of the compiled loop aims at (a signal waits for the call to end), and the
#: jobs of the first call.
CHUNK_S = 0.2
FIRST_CHUNK = 200
#: A call holds at most this many times the jobs of the one before.
MAX_GROWTH = 4


def measure(
    history,
    topology,
    rows,
    tables: LoopTables,
    code: int,
    *,
    chunk: int | None = None,
    progress=None,
):
    """Measure the allocations ``rows`` of ``history`` (indices, any order).

    Returns ``(cols, rows, ptr, flat, done, interrupted)``: the columns of :data:`COLUMNS` for
    the rows in start order (``rows`` in that order), the offsets ``ptr`` of each job in the flat
    node arrays ``flat`` (``"optimum"``, ``"bound"``, ``"slurm_tree"``: node ids, each job's
    ``size`` of them), how many jobs were measured, and the Ctrl-C (or
    :class:`~tjap.core.errors.Terminated`) that stopped the loop, None if it ran to the end. The
    kernel runs ``chunk`` jobs (:data:`FIRST_CHUNK`) in its first call, then as many as take about :data:`CHUNK_S`
    seconds, so a signal between calls is obeyed within a fraction of a second and leaves whole
    jobs. ``progress(done, total)`` is called after each chunk."""
    strict = Sweep(
        history,
        topology.num_nodes,
        strict=True,
        node_path=tables.node_path,
        num_switches=tables.num_counts,
    )
    lenient = Sweep(history, topology.num_nodes)
    position = history.position
    rows = np.asarray(rows, np.int64)
    rows = rows[np.argsort(position[rows], kind="stable")]
    sizes = history.ptr[rows + 1] - history.ptr[rows]
    ptr = np.zeros(rows.size + 1, np.int64)
    np.cumsum(sizes, out=ptr[1:])
    cols = {name: np.full(rows.size, np.nan) for name in COLUMNS[:4]}
    cols.update(
        idle=np.zeros(rows.size, np.int64),
        same=np.zeros(rows.size, np.bool_),
        overlap=np.zeros(rows.size, np.bool_),
    )
    flat = {name: np.zeros(int(ptr[-1]), np.int32) for name in ("optimum", "bound", "slurm_tree")}
    single, table = tables.single, tables.table
    biggest = max(int(sizes.max()) if sizes.size else 1, 1)
    leaves = single.leaf_first.size
    work = (
        np.zeros(tables.num_groups, np.int64),
        np.zeros(leaves, np.int64),
        np.zeros(leaves, np.int64),
        np.zeros(leaves, np.int64),
        np.zeros(leaves, np.int64),
        np.zeros(table.num_switches, np.int64),
        np.zeros(biggest, np.int32),
        np.zeros(biggest, np.int64),
    )
    args = (*strict.kernel_args(), *lenient.kernel_args(), position, rows, ptr)
    fixed = (
        tables.num_table,
        (
            single.leaf_switch,
            single.leaf_first,
            single.leaf_size,
            single.leaf_groups,
            single.switch_parent,
            single.leaf_of_switch,
            single.child_start,
            single.child_list,
            single.leaf_depth,
        ),
        single.scratch(biggest),
        single.exact_kernel,
        (*table.kernel_args(), tables.newer),
        (tables.group_of, tables.top_level, code),
        work,
        tuple(cols[name] for name in COLUMNS),
        (flat["optimum"], flat["bound"], flat["slurm_tree"]),
    )
    done, chunk = 0, FIRST_CHUNK if chunk is None else chunk
    try:
        while done < rows.size:
            hi = min(rows.size, done + chunk)
            began = time.perf_counter()
            _measure_chunk(*args, done, hi, *fixed)
            took = time.perf_counter() - began
            chunk = int(min(max(chunk * CHUNK_S / max(took, 1e-6), 1), MAX_GROWTH * chunk, 50_000))
            done = hi
            if progress is not None:
                progress(done, rows.size)
    except BaseException as exc:  # Ctrl-C, SIGTERM: the chunks done are whole
        stop = interrupted_by(exc)
        if stop is None:
            raise
        return cols, rows, ptr, flat, done, stop
    return cols, rows, ptr, flat, done, None


@njit
def _measure_chunk(
    s_before,
    s_after,
    l_before,
    l_after,
    position,
    rows,
    out_ptr,
    lo,
    hi,
    num_table,
    tree,
    scratch,
    do_bound,
    slurm,
    cost_form,
    work,
    out,
    flat,
):
    ptr, nodes = s_before[2], s_before[3]
    idle, switch_idle = s_after[3], s_after[5]
    l_busy = l_after[0]
    leaf_switch, leaf_first, leaf_size, leaf_groups = tree[0], tree[1], tree[2], tree[3]
    group_of, top_level, code = cost_form
    counts, leaf_idle, seg_a, seg_b, leaf_skip, count_buf, own_idled, tree_out = work
    node_path = s_after[4]
    num_leaves = leaf_first.shape[0]
    for j in range(lo, hi):
        a = rows[j]
        k = position[a]
        advance(
            s_before[0],
            s_before[1],
            s_before[2],
            s_before[3],
            s_before[4],
            s_before[5],
            s_before[6],
            k,
            s_after[0],
            s_after[1],
            s_after[2],
            s_after[3],
            s_after[4],
            s_after[5],
        )
        advance(
            l_before[0],
            l_before[1],
            l_before[2],
            l_before[3],
            l_before[4],
            l_before[5],
            l_before[6],
            k,
            l_after[0],
            l_after[1],
            l_after[2],
            l_after[3],
            l_after[4],
            l_after[5],
        )
        ids = nodes[ptr[a] : ptr[a + 1]]
        size = ids.shape[0]
        o = out_ptr[j]
        overlap = False
        idled = 0  # own nodes counted idle for this job only
        for i in range(size):
            v = ids[i]
            if l_busy[v] > 0:
                overlap = True
            if idle[v] == 0:
                idle[v] = 1
                for s in node_path[v]:
                    if s >= 0:
                        switch_idle[s] += 1
                own_idled[idled] = v
                idled += 1
        total = 0
        for q in range(num_leaves):
            leaf_idle[q] = switch_idle[num_table + q]
            total += leaf_idle[q]
        out[4][j] = total
        out[6][j] = overlap
        out[0][j] = node_set_cost(group_of, top_level, ids, counts, code)
        # the SCAS optimum
        best, _, leaf, offset = scas_best(leaf_groups, leaf_idle, size, counts, seg_a, seg_b)
        scas_nodes(
            idle, leaf_first, leaf_size, leaf_idle, size, leaf, offset, flat[0][o : o + size]
        )
        out[1][j] = cost_from_sum_of_squares(size, top_level, best, code)
        # the free-form bound
        if do_bound:
            best = freeform_best(
                tree[4],
                leaf_switch,
                tree[5],
                tree[6],
                tree[7],
                tree[8],
                leaf_idle,
                size,
                scratch[0],
                scratch[1],
                scratch[2],
                scratch[3],
                scratch[4],
                scratch[5],
                scratch[6],
                scratch[7],
                scratch[8],
                scratch[9],
                scratch[10],
                scratch[11],
                scratch[12],
            )
            leaf_take = scratch[12]
            take_nodes(
                idle,
                leaf_first,
                leaf_size,
                leaf_skip,
                leaf_take,
                np.flatnonzero(leaf_take),
                flat[1][o : o + size],
            )
            out[2][j] = cost_from_sum_of_squares(size, top_level, best, code)
        # Slurm's choice
        for s in range(num_table):
            count_buf[s] = switch_idle[s]
        got = place_counted(
            idle,
            count_buf,
            size,
            slurm[0],
            slurm[1],
            slurm[2],
            slurm[3],
            slurm[4],
            slurm[5],
            slurm[6],
            slurm[7],
            tree_out,
        )
        if got >= 0:
            for i in range(size):
                idle[tree_out[i]] = 1  # place_counted took them
            chosen = np.sort(tree_out[:size])
            out[3][j] = node_set_cost(group_of, top_level, chosen, counts, code)
            same = True
            for i in range(size):
                if chosen[i] != ids[i]:
                    same = False
            out[5][j] = same
            for i in range(size):
                flat[2][o + i] = chosen[i]
        for i in range(idled):  # the job's own nodes back as they were
            v = own_idled[i]
            idle[v] = 0
            for s in node_path[v]:
                if s >= 0:
                    switch_idle[s] -= 1
