"""SCAS as the paper's constrained shortest path (section IV-B), and the exact DP over it.

:func:`graph` builds the paper's graph for inspection and plotting. :func:`solve_dp` solves SCAS
exactly with a dynamic programme over (position in Q, multiset of job sizes still to place), which
is what a shortest path that must use a given number of operation arcs of each length amounts to,
plus the single block that may wrap from the tail of Q to its head (the paper leaves it out "for
brevity"; the DP handles it exactly).

The DP's table has (|Q| + 1) x prod(count_r + 1) cells, r ranging over the distinct job sizes. With
the published code's cap of five multi-node jobs per window that is at most 1001 x 32. Without the
cap a window can hold dozens of jobs and the table explodes: :func:`solve_dp` then raises
:class:`~tjap.errors.StateSpaceTooLargeError`, and ``method="auto"`` picks SCIP instead.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from tjap.placement.tree import _dp_kernels
from tjap._backends import Deadline
from tjap.errors import StateSpaceTooLargeError
from tjap.placement.tree.result import Result, Status
from tjap.placement.tree.window import Window

#: Largest DP table (cells) solve_dp accepts by default, about 150 MB of memory.
MAX_DP_CELLS = 2**24
#: Largest table for which ``method="auto"`` prefers the DP to SCIP.
AUTO_DP_CELLS = 2**21


def size_classes(window: Window) -> tuple[np.ndarray, np.ndarray]:
    """Distinct job sizes (in order of first appearance) and how many jobs have each."""
    counter = Counter(window.job_sizes)
    sizes = np.array(list(counter), dtype=np.int64)
    return sizes, np.array([counter[s] for s in sizes], dtype=np.int64)


def num_dp_states(window: Window) -> int:
    """Number of job multisets the DP tracks: prod over distinct sizes of (count + 1)."""
    return int(np.prod(size_classes(window)[1] + 1))


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
    return dp_table_cells(window) * len(size_classes(window)[0]) * DP_SECONDS_PER_CELL_CLASS


def seq_assignment(window: Window) -> list[list[int]]:
    """The paper's sequential assignment (Seq): each job, in window order, takes the next n_j
    idle nodes of Q (the fallback of every time-limited SCAS method)."""
    offsets = np.concatenate([[0], np.cumsum(window.job_sizes)[:-1]]).astype(np.int64)
    return [window.idle_nodes[o:o + n].tolist() for o, n in zip(offsets, window.job_sizes)]


def solve_dp(window: Window, *, convention="paper", time_limit_s=None, seed=0,
             max_cells=MAX_DP_CELLS) -> Result:
    """Exact SCAS optimum by dynamic programming (Numba).

    Without a time limit, raises StateSpaceTooLargeError when the table would exceed
    ``max_cells``. With ``time_limit_s``, it always returns a feasible solution: when the table is
    too large or its first pass is predicted to take longer than the limit, the Seq solution
    (status TIME_LIMIT, ``info["fallback"] = "seq"``); when the limit runs out between the passes
    for blocks that wrap from the tail of Q to its head, the best solution so far, which is never
    worse than Seq (status TIME_LIMIT)."""
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
                "jobs per window")
        seq = Result.from_assignment(window, seq_assignment(window), status=Status.FEASIBLE,
                                     method="seq", convention=convention, runtime_s=0.0)
        why = (f"table of {cells:,} cells over the limit of {max_cells:,}" if cells > max_cells
               else f"predicted {predicted:.3g} s, more than the {deadline.left():.3g} s left")
        return Result(window, seq.assignment, seq.objective, Status.TIME_LIMIT, "dp", convention,
                      time.perf_counter() - started, None, seed,
                      info={"stopped": f"time limit: dp not run ({why})", "fallback": "seq",
                            "dp_cells": cells, "predicted_s": predicted})
    sizes, counts = size_classes(window)
    digits, strides = _state_digits(counts)
    costs = np.stack([window.block_costs(int(r), convention) for r in sizes])
    objective, classes, starts, dps_run, complete = _cyclic_dp(
        costs, sizes, counts, digits, strides, deadline, predicted)
    # Hand the blocks of each size class to that class's jobs in window order, by start position.
    blocks = {int(r): sorted(int(p) for c, p in zip(classes, starts) if sizes[c] == r) for r in sizes}
    assignment = [window.block(blocks[n].pop(0), n).tolist() for n in window.job_sizes]
    info = {"dp_states": int(digits.shape[0]), "dp_runs": int(dps_run)}
    if not complete:
        info["stopped"] = "time limit: some wrapping blocks not tried"
    return Result.from_assignment(
        window, assignment, status=Status.OPTIMAL if complete else Status.TIME_LIMIT, method="dp",
        convention=convention, runtime_s=time.perf_counter() - started,
        bound=float(objective) if complete else None, seed=seed, info=info)


def _cyclic_dp(costs, sizes, counts, digits, strides, deadline, pass_s):
    """Exact SCAS optimum of disjoint cyclic blocks on Q (m = costs.shape[1] positions).

    Either no block wraps (one linear DP over [0, m)), or exactly one block of class i starts at
    p = m - sizes[i] + e and covers [p, m) and [0, e), with the rest placed linearly in [e, p).
    A wrap offset e is tried only if some candidate's cost plus a lower bound on the other jobs
    can beat the best so far (one DP serves every class at that e), and only while the deadline
    leaves time for one more pass (``pass_s`` predicted).

    Returns (objective, classes, starts, number of DPs run, whether every offset was tried).
    """
    lin = _dp_kernels.linear_dp
    num_states, num_classes = digits.shape
    m = costs.shape[1]
    full = num_states - 1
    min_cost = costs.min(axis=1)
    value, choice = lin(costs, sizes, digits, strides, 0, m)
    best = value[m, full]
    best_e, best_class, best_choice = 0, -1, choice
    dps_run, complete = 1, True
    for e in range(1, int(sizes.max())):
        candidates = [i for i in range(num_classes) if counts[i] > 0 and e < sizes[i] <= m]
        promising = False
        for i in candidates:                      # summed in the same order as the kernel did
            lower = costs[i, m - sizes[i] + e]
            for k in range(num_classes):
                lower += digits[full - strides[i], k] * min_cost[k]
            promising = promising or lower < best
        if not promising:
            continue
        left = deadline.left()
        if left is not None and left < pass_s:
            complete = False
            break
        value, choice = lin(costs, sizes, digits, strides, e, m)
        dps_run += 1
        for i in candidates:
            p = m - sizes[i] + e
            v = costs[i, p] + value[p - e, full - strides[i]]
            if v < best:
                best, best_e, best_class, best_choice = v, e, i, choice
    if best_class < 0:
        classes, starts = _dp_kernels.backtrack(best_choice, sizes, strides, 0, m, full)
        return best, classes, starts, dps_run, complete
    p = m - sizes[best_class] + best_e
    classes, starts = _dp_kernels.backtrack(best_choice, sizes, strides, best_e, p - best_e,
                                            full - strides[best_class])
    return (best, np.append(classes, best_class), np.append(starts, p), dps_run, complete)


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
            g.add_edge(p, p + r, weight=float(costs[p]), kind="operation", size=r,
                       span=tuple(window.idle_nodes[p:p + r].tolist()))
    return g
