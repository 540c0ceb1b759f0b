"""Numba kernels of a segmented job's runs (see :mod:`tjap.placement.tree.arcs`).

A segmented job that starts at position p of Q walks Q from p: each domain (of the segment
level) it meets gives it as many whole segments as that domain's idle nodes from there allow, or
what the job still needs; the rest of the domain's idle nodes (fewer than a segment) are skipped.
The walk starts with a segment (p's domain holds one from p on) and ends at its last node.
"""

import numpy as np

from tjap.core.jit import njit
from tjap.placement.tree.tree_cost import cost_from_sum_of_squares


@njit
def segment_walk(domains_q, n, segment, p, out):
    """The positions of Q the job takes from p (into ``out``, n entries); returns the walk's
    length from p to its last node, or -1 when no walk from p collects n nodes within one turn
    of Q or p's domain holds no segment from p on."""
    m = domains_q.shape[0]
    got = 0
    k = 0
    while got < n and k < m:
        d = domains_q[(p + k) % m]
        run = 0
        while k + run < m and domains_q[(p + k + run) % m] == d:
            run += 1
        take = min((run // segment) * segment, n - got)
        if k == 0 and take == 0:
            return -1
        for i in range(take):
            out[got + i] = (p + k + i) % m
        got += take
        if got == n:
            return k + take
        k += run
    return -1


@njit
def segment_arcs(
    domains_q, n, segment, group_of, top_level, q, num_groups, convention, count_rows, price_rows
):
    """For every start p: the walk's length (-1: no walk), the CH cost of its nodes, and for
    each row r of ``count_rows`` (domain ids per position of Q) the distinct domains among its
    nodes, and the sum of ``price_rows[r]`` over those distinct domains (each domain's price at
    its first position in the walk; prices are per domain, so any of its positions would do)."""
    m = domains_q.shape[0]
    rows = group_of.shape[0]
    length = np.full(m, -1, np.int64)
    cost = np.full(m, np.inf)
    distinct = np.zeros((count_rows.shape[0], m), np.int64)
    priced = np.zeros((count_rows.shape[0], m))
    positions = np.empty(n, np.int64)
    counts = np.zeros(num_groups, np.int64)
    for p in range(m):
        steps = segment_walk(domains_q, n, segment, p, positions)
        if steps < 0:
            continue
        length[p] = steps
        sum_sq = 0
        for i in range(n):
            v = q[positions[i]]
            for r in range(rows):
                g = group_of[r, v]
                sum_sq += 2 * counts[g] + 1
                counts[g] += 1
        for i in range(n):
            v = q[positions[i]]
            for r in range(rows):
                counts[group_of[r, v]] = 0
        cost[p] = cost_from_sum_of_squares(n, top_level, sum_sq, convention)
        for r in range(count_rows.shape[0]):
            seen = 0
            price = 0.0
            for i in range(n):
                d = count_rows[r, positions[i]]
                if i == 0 or d != count_rows[r, positions[i - 1]]:
                    seen += 1
                    price += price_rows[r, positions[i]]
            d_first = count_rows[r, positions[0]]
            if seen > 1 and count_rows[r, positions[n - 1]] == d_first:
                seen -= 1  # the walk wrapped back into its first domain
                price -= price_rows[r, positions[0]]
            distinct[r, p] = seen
            priced[r, p] = price
    return length, cost, distinct, priced
