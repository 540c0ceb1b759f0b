"""Numba kernels of the exact SCAS dynamic programme (see :mod:`placement.tree.csp`).

A state is a multiset of job sizes, encoded in mixed radix: ``digits[s, i]`` is how many jobs of
size class i the state holds and ``strides[i]`` the index step of one such job.
"""

import numpy as np

from tjap._jit import njit


@njit
def linear_dp(costs, sizes, digits, strides, first, last):
    """Best placement of every multiset of jobs into non-wrapping blocks inside positions
    [first, last) of Q.

    Returns ``value[t, s]``, the minimum cost of placing multiset s within [first, first + t), and
    ``choice[t, s]``, the size class of the block that ends at first + t (or -1: position unused).
    """
    num_states, num_classes = digits.shape
    length = last - first
    value = np.full((length + 1, num_states), np.inf)
    choice = np.full((length + 1, num_states), -1, np.int8)
    value[0, 0] = 0.0
    for t in range(1, length + 1):
        for s in range(num_states):
            best = value[t - 1, s]
            best_class = -1
            for i in range(num_classes):
                r = sizes[i]
                if digits[s, i] > 0 and r <= t:
                    v = value[t - r, s - strides[i]] + costs[i, first + t - r]
                    if v < best:
                        best = v
                        best_class = i
            value[t, s] = best
            choice[t, s] = best_class
    return value, choice


@njit
def backtrack(choice, sizes, strides, first, t, s):
    """(size class, start position) of each block of the DP's best placement of state s in
    [first, first + t)."""
    classes = []
    starts = []
    while t > 0 and s > 0:
        i = choice[t, s]
        if i < 0:
            t -= 1
        else:
            classes.append(i)
            starts.append(first + t - sizes[i])
            s -= strides[i]
            t -= sizes[i]
    return np.array(classes, np.int64), np.array(starts, np.int64)


@njit
def cyclic_scas_dp(costs, sizes, counts, digits, strides):
    """Exact SCAS optimum of disjoint cyclic blocks on Q (m = costs.shape[1] positions).

    Either no block wraps (one linear DP over [0, m)), or exactly one block of class i starts at
    p = m - sizes[i] + e and covers [p, m) and [0, e), with the rest placed linearly in [e, p).
    A wrap candidate is tried only if its cost plus a lower bound on the other jobs can beat the
    best so far, and candidates with the same e share one DP.

    Returns (objective, classes, starts, number of DPs run).
    """
    num_states, num_classes = digits.shape
    m = costs.shape[1]
    full = num_states - 1
    min_cost = np.empty(num_classes)
    for i in range(num_classes):
        min_cost[i] = costs[i].min()
    value, choice = linear_dp(costs, sizes, digits, strides, 0, m)
    best = value[m, full]
    best_e, best_class = 0, -1
    dps_run = 1
    for e in range(1, sizes.max()):
        promising = False
        for i in range(num_classes):
            r = sizes[i]
            if counts[i] > 0 and e < r <= m:
                rest = full - strides[i]
                lower = costs[i, m - r + e]
                for k in range(num_classes):
                    lower += digits[rest, k] * min_cost[k]
                if lower < best:
                    promising = True
        if not promising:
            continue
        value, _ = linear_dp(costs, sizes, digits, strides, e, m)
        dps_run += 1
        for i in range(num_classes):
            r = sizes[i]
            if counts[i] > 0 and e < r <= m:
                p = m - r + e
                v = costs[i, p] + value[p - e, full - strides[i]]
                if v < best:
                    best, best_e, best_class = v, e, i
    if best_class < 0:
        classes, starts = backtrack(choice, sizes, strides, 0, m, full)
        return best, classes, starts, dps_run
    value, choice = linear_dp(costs, sizes, digits, strides, best_e, m)
    p = m - sizes[best_class] + best_e
    classes, starts = backtrack(choice, sizes, strides, best_e, p - best_e, full - strides[best_class])
    classes = np.append(classes, best_class)
    starts = np.append(starts, p)
    return best, classes, starts, dps_run + 1
