"""Numba kernels of the TJAP model: hop cost from switch/pod counts and costs of every SCAS block.

Kernels take arrays and scalars only; the public wrappers in :mod:`tjap.placement.tree.cost` validate and convert.
Conventions are passed as integers: 0 = "paper", 1 = "published".
"""

import numpy as np

from tjap.core.jit import njit

HOP_UNIT_COST = 1000  # c, the cost of one communication hop


@njit
def cost_from_squares(n, sum_sq_switch, sum_sq_pod, convention):
    """Cost of an n-node set whose per-switch counts square-sum to ``sum_sq_switch`` and per-pod
    counts to ``sum_sq_pod``.

    paper:     (1/n) sum over ordered pairs of c*h, h = 2/4/6
               = c (6n^2 - 2A - 2B - 2n) / n
    published: sum over unordered pairs of c*h, h = 1/3/5, floor-divided by n, at least 1
               = max(1, (c (5n^2 - 2A - 2B - n) / 2) // n)
    """
    if convention == 0:
        return HOP_UNIT_COST * (6.0 * n * n - 2.0 * sum_sq_switch - 2.0 * sum_sq_pod - 2.0 * n) / n
    pair_sum = HOP_UNIT_COST * (5 * n * n - 2 * sum_sq_switch - 2 * sum_sq_pod - n) // 2
    return float(max(1, pair_sum // n))


@njit
def node_set_cost(switch_ids, pod_ids, num_switches, num_pods, convention):
    """Cost of one node set given the switch and pod of each of its nodes."""
    switch_count = np.zeros(num_switches, np.int64)
    pod_count = np.zeros(num_pods, np.int64)
    sum_sq_switch = 0
    sum_sq_pod = 0
    for i in range(switch_ids.shape[0]):
        sum_sq_switch += 2 * switch_count[switch_ids[i]] + 1
        switch_count[switch_ids[i]] += 1
        sum_sq_pod += 2 * pod_count[pod_ids[i]] + 1
        pod_count[pod_ids[i]] += 1
    return cost_from_squares(switch_ids.shape[0], sum_sq_switch, sum_sq_pod, convention)


@njit
def block_costs(switch_q, pod_q, size, num_switches, num_pods, convention):
    """Cost of the block D(p, size) for every start position p of the idle sequence Q.

    The block takes ``size`` consecutive positions from p and wraps to the head of Q. A sliding
    window keeps the per-switch and per-pod counts, so all m costs take O(m) time.
    """
    m = switch_q.shape[0]
    out = np.empty(m, np.float64)
    switch_count = np.zeros(num_switches, np.int64)
    pod_count = np.zeros(num_pods, np.int64)
    sum_sq_switch = 0
    sum_sq_pod = 0
    for i in range(size):
        sum_sq_switch += 2 * switch_count[switch_q[i]] + 1
        switch_count[switch_q[i]] += 1
        sum_sq_pod += 2 * pod_count[pod_q[i]] + 1
        pod_count[pod_q[i]] += 1
    out[0] = cost_from_squares(size, sum_sq_switch, sum_sq_pod, convention)
    for p in range(1, m):
        gone = p - 1
        switch_count[switch_q[gone]] -= 1
        sum_sq_switch -= 2 * switch_count[switch_q[gone]] + 1
        pod_count[pod_q[gone]] -= 1
        sum_sq_pod -= 2 * pod_count[pod_q[gone]] + 1
        new = (p + size - 1) % m
        sum_sq_switch += 2 * switch_count[switch_q[new]] + 1
        switch_count[switch_q[new]] += 1
        sum_sq_pod += 2 * pod_count[pod_q[new]] + 1
        pod_count[pod_q[new]] += 1
        out[p] = cost_from_squares(size, sum_sq_switch, sum_sq_pod, convention)
    return out
