"""Numba kernels of the dynamic contiguity strategy (DCAS): decoding and costing solutions.

A DCAS solution is an order of the window's jobs and, for each step, a start position in the idle
sequence as updated after the previous steps. ``alive`` holds the positions of Q still free, in Q
order; taking a block removes a cyclically contiguous range of it.
"""

from tjap._jit import njit
from tjap._kernels import cost_from_squares


@njit
def take_block(alive, length, start, size, out, out_offset):
    """Write the Q positions of the block of ``size`` from ``start`` of ``alive[:length]`` (wrapping)
    into ``out[out_offset:]``, remove them from ``alive``, and return the new length."""
    for i in range(size):
        out[out_offset + i] = alive[(start + i) % length]
    if start + size <= length:
        for i in range(start, length - size):
            alive[i] = alive[i + size]
    else:
        head = start + size - length
        for i in range(start - head):
            alive[i] = alive[head + i]
    return length - size


@njit
def decode(num_idle, sizes, offsets, order, starts, steps, positions, alive):
    """Decode the first ``steps`` steps of (order, starts) into ``positions`` (job j's block at
    ``positions[offsets[j]:offsets[j] + sizes[j]]``). Returns the free length left in ``alive``, or
    -1 if a start lies outside the sequence of its step."""
    length = num_idle
    for i in range(num_idle):
        alive[i] = i
    for k in range(steps):
        j = order[k]
        if starts[k] < 0 or starts[k] >= length or sizes[j] > length:
            return -1
        length = take_block(alive, length, starts[k], sizes[j], positions, offsets[j])
    return length


@njit
def block_cost(switch_q, pod_q, positions, lo, size, switch_count, pod_count, convention):
    """Cost of the node set at ``positions[lo:lo + size]``; the count scratch arrays come back zeroed."""
    sum_sq_switch = 0
    sum_sq_pod = 0
    for i in range(lo, lo + size):
        s = switch_q[positions[i]]
        p = pod_q[positions[i]]
        sum_sq_switch += 2 * switch_count[s] + 1
        switch_count[s] += 1
        sum_sq_pod += 2 * pod_count[p] + 1
        pod_count[p] += 1
    for i in range(lo, lo + size):
        switch_count[switch_q[positions[i]]] = 0
        pod_count[pod_q[positions[i]]] = 0
    return cost_from_squares(size, sum_sq_switch, sum_sq_pod, convention)


@njit
def total_cost(switch_q, pod_q, sizes, offsets, positions, switch_count, pod_count, convention):
    total = 0.0
    for j in range(sizes.shape[0]):
        total += block_cost(switch_q, pod_q, positions, offsets[j], sizes[j], switch_count,
                            pod_count, convention)
    return total
