"""SCAS as the paper's constrained shortest path (section IV-B), and the exact DP over it.

:func:`graph` builds the paper's graph for inspection and plotting. :func:`solve_dp` solves SCAS
exactly with a dynamic programme over (position in Q, multiset of job sizes still to place), which
is what a shortest path that must use a given number of operation arcs of each length amounts to,
plus the single block that may wrap from the tail of Q to its head (the paper leaves it out "for
brevity"; the DP handles it exactly).

The DP's table has (|Q| + 1) x prod(count_r + 1) cells, r ranging over the distinct job sizes. With
the published code's cap of five multi-node jobs per window that is at most 1001 x 32. Without the
cap a window can hold dozens of jobs and the table explodes: :func:`solve_dp` then raises
:class:`~tjap.core.errors.StateSpaceTooLargeError`, and ``method="auto"`` picks SCIP instead.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from tjap.core.backends import Deadline
from tjap.core.errors import StateSpaceTooLargeError
from tjap.placement.tree import _dp_kernels
from tjap.placement.tree.arcs import arc_nodes, first_fit, job_arcs
from tjap.placement.tree.result import Result, Status
from tjap.placement.tree.window import Window

#: Largest DP table (cells) solve_dp accepts by default, about 150 MB of memory.
MAX_DP_CELLS = 2**24
#: Largest table for which ``method="auto"`` prefers the DP to SCIP.
AUTO_DP_CELLS = 2**21


def job_classes(window: Window) -> tuple[list, np.ndarray]:
    """The distinct jobs (size and constraints), in order of first appearance, and how many jobs
    of the window are each."""
    counter = Counter(window.jobs)
    return list(counter), np.array(list(counter.values()), dtype=np.int64)


def size_classes(window: Window) -> tuple[np.ndarray, np.ndarray]:
    """The size of each job class (:func:`job_classes`; on a window without constraints, the
    distinct job sizes) and how many jobs have each."""
    classes, counts = job_classes(window)
    return np.array([job.nodes for job in classes], dtype=np.int64), counts


def num_dp_states(window: Window) -> int:
    """Number of job multisets the DP tracks: prod over job classes of (count + 1)."""
    return int(np.prod(job_classes(window)[1] + 1))


def dp_table_cells(window: Window) -> int:
    """Cells of one DP table: (|Q| + 1) x number of states."""
    return (window.num_idle + 1) * num_dp_states(window)


def _state_digits(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    strides = np.cumprod(np.concatenate([[1], counts[:-1] + 1])).astype(np.int64)
    num_states = int(np.prod(counts + 1))
    states = np.arange(num_states)
    digits = (states[:, None] // strides[None, :]) % (counts + 1)[None, :]
    return digits.astype(np.int64), strides


#: Seconds per (cell x size class) of one linear DP, measured on one core (benchmarks/time_limits.py);
#: with a time limit, the DP runs only when its first pass is predicted to fit what is left.
DP_SECONDS_PER_CELL_CLASS = 4e-9


def predicted_dp_s(window: Window) -> float:
    """Predicted seconds of one linear DP pass over the window (the DP runs one, plus one per
    promising wrap offset, usually few)."""
    return dp_table_cells(window) * len(job_classes(window)[0]) * DP_SECONDS_PER_CELL_CLASS


def seq_assignment(window: Window) -> list[list[int]]:
    """The paper's sequential assignment (Seq): each job, in window order, takes the next n_j
    idle nodes of Q (the fallback of every time-limited SCAS method)."""
    offsets = np.concatenate([[0], np.cumsum(window.job_sizes)[:-1]]).astype(np.int64)
    return [window.idle_nodes[o : o + n].tolist() for o, n in zip(offsets, window.job_sizes)]


def fallback_assignment(window: Window, convention: str = "paper"):
    """What a time-limited SCAS method falls back to: Seq, or on a window with constraints Seq
    under them (:func:`~tjap.placement.tree.arcs.first_fit`; None when it finds no place)."""
    if window.constrained:
        return first_fit(window, convention)
    return seq_assignment(window)


def solve_dp(
    window: Window, *, convention="paper", time_limit_s=None, seed=0, max_cells=MAX_DP_CELLS
) -> Result:
    """Exact SCAS optimum by dynamic programming (Numba), the jobs' constraints included
    (:mod:`tjap.placement.tree.arcs`): INFEASIBLE when no placement keeps them.

    Without a time limit, raises StateSpaceTooLargeError when the table would exceed
    ``max_cells``. With ``time_limit_s``, it always returns a feasible solution when Seq (under the
    constraints) finds one: when the table is too large or its first pass is predicted to take
    longer than the limit, the Seq solution (status TIME_LIMIT, ``info["fallback"] = "seq"``);
    when the limit runs out between the passes for blocks that wrap from the tail of Q to its
    head, the best solution so far, which is never worse than Seq (status TIME_LIMIT)."""
    started = time.perf_counter()
    deadline = Deadline(time_limit_s, started)
    cells = dp_table_cells(window)
    predicted = predicted_dp_s(window)
    too_slow = time_limit_s is not None and predicted > deadline.left()
    if cells > max_cells or too_slow:
        if time_limit_s is None:
            raise StateSpaceTooLargeError(
                f"method 'dp' needs a table of {cells:,} cells for this window's {window.num_jobs} "
                f"jobs (limit {max_cells:,}); use method='auto' or 'scip', or cap the multi-node "
                "jobs per window"
            )
        why = (
            f"table of {cells:,} cells over the limit of {max_cells:,}"
            if cells > max_cells
            else f"predicted {predicted:.3g} s, more than the {deadline.left():.3g} s left"
        )
        return Result.from_assignment(
            window,
            fallback_assignment(window, convention) or (),
            status=Status.TIME_LIMIT,
            method="dp",
            convention=convention,
            runtime_s=time.perf_counter() - started,
            seed=seed,
            info={
                "stopped": f"time limit: dp not run ({why})",
                "fallback": "seq",
                "dp_cells": cells,
                "predicted_s": predicted,
            },
        )
    classes, counts = job_classes(window)
    digits, strides = _state_digits(counts)
    tables = _ArcTables(window, classes, convention)
    objective, chosen, dps_run, complete = _cyclic_dp(
        tables, counts, digits, strides, deadline, predicted
    )
    info = {"dp_states": int(digits.shape[0]), "dp_runs": int(dps_run)}
    if not complete:
        info["stopped"] = "time limit: some wrapping blocks not tried"
    if not np.isfinite(objective):
        status = Status.INFEASIBLE if complete else Status.TIME_LIMIT
        return Result.from_assignment(
            window,
            (),
            status=status,
            method="dp",
            convention=convention,
            runtime_s=time.perf_counter() - started,
            seed=seed,
            info=info,
        )
    # Hand the runs of each class to that class's jobs in window order, by start position.
    runs = {c: sorted(p for i, p in chosen if i == c) for c in range(len(classes))}
    index = {job: c for c, job in enumerate(classes)}
    assignment = [arc_nodes(window, job, runs[index[job]].pop(0)) for job in window.jobs]
    return Result.from_assignment(
        window,
        assignment,
        status=Status.OPTIMAL if complete else Status.TIME_LIMIT,
        method="dp",
        convention=convention,
        runtime_s=time.perf_counter() - started,
        bound=float(objective) if complete else None,
        seed=seed,
        info=info,
    )


class _ArcTables:
    """The classes' arcs for the DP: those whose region lies inside Q's order, by the position
    where the region ends (``first``, ``cost``, ``start``: class x end x slot), and those whose
    region wraps from Q's tail to its head (``wraps``: rows of class, region start, head end and
    start; ``wrap_costs``: their costs)."""

    def __init__(self, window: Window, classes, convention: str):
        m = window.num_idle
        arcs = [job_arcs(window, job, convention) for job in classes]
        ends = [a.first + a.length for a in arcs]
        linear = [e <= m for e in ends]
        slots = 1
        for e, keep in zip(ends, linear):
            if keep.sum() > 1 and not (np.diff(e[keep]) > 0).all():  # arcs sharing an end
                slots = max(slots, int(np.bincount(e[keep]).max()))
        shape = (len(classes), m + 1, slots)
        self.first = np.full(shape, -1, np.int64)
        self.cost = np.full(shape, np.inf)
        self.start = np.full(shape, -1, np.int64)
        self.min_cost = np.array([a.cost.min() if a.count else np.inf for a in arcs])
        wraps, wrap_costs = [], []
        for i, (a, e, keep) in enumerate(zip(arcs, ends, linear)):
            if not a.count:
                continue
            at, first, cost, start = e[keep], a.first[keep], a.cost[keep], a.start[keep]
            if at.size < 2 or (np.diff(at) > 0).all():  # ends already distinct, in order
                slot = 0
            else:
                order = np.argsort(at, kind="stable")
                at, first, cost, start = at[order], first[order], cost[order], start[order]
                slot = np.arange(at.size) - np.searchsorted(at, at, side="left")
            self.first[i, at, slot] = first
            self.cost[i, at, slot] = cost
            self.start[i, at, slot] = start
            wrap = ~keep
            if wrap.any():
                wraps.append(
                    np.stack(
                        [np.full(int(wrap.sum()), i), a.first[wrap], e[wrap] - m, a.start[wrap]]
                    ).T
                )
                wrap_costs.append(a.cost[wrap])
        self.wraps = np.concatenate(wraps) if wraps else np.zeros((0, 4), np.int64)
        self.wrap_costs = np.concatenate(wrap_costs) if wrap_costs else np.zeros(0)


def _cyclic_dp(tables: _ArcTables, counts, digits, strides, deadline, pass_s):
    """Exact SCAS optimum of disjoint cyclic regions on Q (m positions).

    Either no region wraps (one linear DP over [0, m)), or exactly one arc's region wraps: it
    covers [a, m) and [0, e), with the rest placed linearly in [e, a). A head end e is tried only
    if some arc's cost plus a lower bound on the other jobs can beat the best so far (one DP
    serves every arc with that e), and only while the deadline leaves time for one more pass
    (``pass_s`` predicted).

    Returns (objective, [(class, start)] of the runs, number of DPs run, whether every head end
    was tried); the objective is inf when no placement exists.
    """
    lin = _dp_kernels.linear_dp
    m = tables.first.shape[1] - 1
    num_states, num_classes = digits.shape
    full = num_states - 1
    value, choice = lin(tables.first, tables.cost, digits, strides, 0, m)
    best = value[m, full]
    best_e, best_wrap, best_choice = 0, None, choice
    dps_run, complete = 1, True
    rest = digits[full - strides]  # the other jobs, per wrapping class
    lower_rest = (rest * np.where(rest > 0, tables.min_cost[None, :], 0.0)).sum(axis=1)
    wraps, wrap_costs = tables.wraps, tables.wrap_costs
    usable = (counts[wraps[:, 0]] > 0) & (wraps[:, 1] >= wraps[:, 2])
    wraps, wrap_costs = wraps[usable], wrap_costs[usable]
    lower = wrap_costs + lower_rest[wraps[:, 0]]
    for e in np.unique(wraps[:, 2]):
        at = np.flatnonzero(wraps[:, 2] == e)
        if not (lower[at] < best).any():
            continue
        left = deadline.left()
        if left is not None and left < pass_s:
            complete = False
            break
        value, choice = lin(tables.first, tables.cost, digits, strides, int(e), m)
        dps_run += 1
        for k in at:
            i, a = int(wraps[k, 0]), int(wraps[k, 1])
            v = wrap_costs[k] + value[a - e, full - strides[i]]
            if v < best:
                best, best_e, best_wrap, best_choice = v, int(e), k, choice
    if not np.isfinite(best):
        return best, [], dps_run, complete
    if best_wrap is None:
        found = _dp_kernels.backtrack(best_choice, tables.first, strides, 0, m, full)
        chosen = []
    else:
        i, a, _, p = (int(v) for v in wraps[best_wrap])
        found = _dp_kernels.backtrack(
            best_choice, tables.first, strides, best_e, a - best_e, full - strides[i]
        )
        chosen = [(i, p)]
    chosen += [(int(i), int(tables.start[i, end, k])) for i, end, k in zip(*found)]
    return best, chosen, dps_run, complete


def graph(window: Window, convention: str = "paper"):
    """The paper's CSP graph of a window, as a networkx MultiDiGraph (a one-node operation arc runs beside a transition arc).

    Vertices are positions 0..|Q| of the idle sequence (|Q| is a sink after the last idle node).
    Transition arcs p -> p+1 have weight 0 (``kind="transition"``). Operation arcs p -> p+r, one per
    distinct job size r, have the CH cost of D(p, r) as weight and ``span`` = its node ids
    (``kind="operation"``). The paper draws an operation arc to the block's last node; ending it one
    position later keeps consecutive blocks disjoint. As in the paper, blocks that wrap are not
    arcs. SCAS is the shortest 0 -> |Q| path that uses count_r operation arcs of length r.
    """
    import networkx as nx

    g = nx.MultiDiGraph()
    m = window.num_idle
    for p in range(m + 1):
        g.add_node(p, node_id=int(window.idle_nodes[p]) if p < m else None)
    for p in range(m):
        g.add_edge(p, p + 1, weight=0.0, kind="transition", size=0, span=())
    for r in size_classes(window)[0]:
        r = int(r)
        costs = window.block_costs(r, convention)
        for p in range(m - r + 1):
            g.add_edge(
                p,
                p + r,
                weight=float(costs[p]),
                kind="operation",
                size=r,
                span=tuple(window.idle_nodes[p : p + r].tolist()),
            )
    return g
