"""Numba kernels of the exact SCAS dynamic programme (see :mod:`tjap.placement.tree.csp`).

The cyclic driver (the blocks that wrap from the tail of Q to its head, and the time limit
between passes) is :func:`tjap.placement.tree.csp._cyclic_dp`. A state is a multiset of job sizes,
encoded in mixed radix: ``digits[s, i]`` is how many jobs of size class i the state holds and
``strides[i]`` the index step of one such job.
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
