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

from placement.tree import _dp_kernels
from tjap.errors import StateSpaceTooLargeError
from placement.tree.result import Result, Status
from placement.tree.window import Window

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


def solve_dp(window: Window, *, convention="paper", time_limit_s=None, seed=0,
             max_cells=MAX_DP_CELLS) -> Result:
    """Exact SCAS optimum by dynamic programming (Numba). Raises StateSpaceTooLargeError when the
    table would exceed ``max_cells``."""
    started = time.perf_counter()
    cells = dp_table_cells(window)
    if cells > max_cells:
        raise StateSpaceTooLargeError(
            f"method 'dp' needs a table of {cells:,} cells for this window's {window.num_jobs} jobs "
            f"(limit {max_cells:,}); use method='auto' or 'scip', or cap the multi-node jobs per window")
    sizes, counts = size_classes(window)
    digits, strides = _state_digits(counts)
    costs = np.stack([window.block_costs(int(r), convention) for r in sizes])
    objective, classes, starts, dps_run = _dp_kernels.cyclic_scas_dp(costs, sizes, counts, digits, strides)
    # Hand the blocks of each size class to that class's jobs in window order, by start position.
    blocks = {int(r): sorted(int(p) for c, p in zip(classes, starts) if sizes[c] == r) for r in sizes}
    assignment = [window.block(blocks[n].pop(0), n).tolist() for n in window.job_sizes]
    result = Result.from_assignment(
        window, assignment, status=Status.OPTIMAL, method="dp", convention=convention,
        runtime_s=time.perf_counter() - started, bound=float(objective), seed=seed,
        info={"dp_states": int(digits.shape[0]), "dp_runs": int(dps_run)})
    return result


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
