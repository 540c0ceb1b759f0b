"""Numba kernels of the exact SCAS dynamic programme (see :mod:`tjap.placement.tree.csp`).

The cyclic driver (the regions that wrap from the tail of Q to its head, and the time limit
between passes) is :func:`tjap.placement.tree.csp._cyclic_dp`. A state is a multiset of jobs,
counted per job class (jobs of one size and the same constraints), encoded in mixed radix:
``digits[s, i]`` is how many jobs of class i the state holds and ``strides[i]`` the index step of
one such job.

A class's arcs are given by the position where their region ends: ``arc_first[i, e, k]`` is the
first position of the k-th region of class i that ends just before position e (-1: none), and
``arc_cost[i, e, k]`` its cost. An unconstrained class has one arc per end, its region the job's
run itself; an exclusive job's regions may hold more positions than its run.
"""

import numpy as np

from tjap.core.jit import njit


@njit
def linear_dp(arc_first, arc_cost, digits, strides, first, last):
    """Best placement of every multiset of jobs into regions inside positions [first, last) of Q.

    Returns ``value[t, s]``, the minimum cost of placing multiset s within [first, first + t), and
    ``choice[t, s]``, the arc (class * slots + slot) whose region ends at first + t (or -1:
    position unused).
    """
    num_states, num_classes = digits.shape
    slots = arc_first.shape[2]
    length = last - first
    value = np.full((length + 1, num_states), np.inf)
    choice = np.full((length + 1, num_states), -1, np.int32)
    value[0, 0] = 0.0
    for t in range(1, length + 1):
        end = first + t
        for s in range(num_states):
            best = value[t - 1, s]
            best_arc = -1
            for i in range(num_classes):
                if digits[s, i] > 0:
                    for k in range(slots):
                        a = arc_first[i, end, k]
                        if a < first:
                            continue
                        v = value[a - first, s - strides[i]] + arc_cost[i, end, k]
                        if v < best:
                            best = v
                            best_arc = i * slots + k
            value[t, s] = best
            choice[t, s] = best_arc
    return value, choice


@njit
def backtrack(choice, arc_first, strides, first, t, s):
    """(class, region end, slot) of each arc of the DP's best placement of state s in
    [first, first + t)."""
    slots = arc_first.shape[2]
    classes = []
    ends = []
    ks = []
    while t > 0 and s > 0:
        c = choice[t, s]
        if c < 0:
            t -= 1
        else:
            i = c // slots
            k = c % slots
            end = first + t
            classes.append(i)
            ends.append(end)
            ks.append(k)
            s -= strides[i]
            t = arc_first[i, end, k] - first
    return (np.array(classes, np.int64), np.array(ends, np.int64), np.array(ks, np.int64))
