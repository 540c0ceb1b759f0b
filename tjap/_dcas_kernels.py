"""Numba kernels of the dynamic contiguity strategy (DCAS): decoding and costing solutions.

A DCAS solution is an order of the window's jobs and, for each step, a start position in the idle
sequence as updated after the previous steps. The kernels keep the *taken* Q positions as a bitmap
(one bit per position of Q, 64 to a word, bits past the end of Q set) rather than a compacted list
of the free ones: a step then costs O(idle / 64 + size) word operations instead of O(idle) moves,
which is what makes a search move cheap. The free sequence of a step ("alive") is the complement of
the bitmap in Q order; a job takes a cyclically contiguous range of it. :func:`free_positions`
writes it out for operators that need it.
"""

import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from tjap._jit import njit, njit_inline, popcount
from tjap._kernels import cost_from_squares

_ONE = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit_inline
def taken_words(num_idle):
    """Words of the taken bitmap of a sequence of ``num_idle`` positions."""
    return (num_idle + 63) // 64


@njit_inline
def reset_taken(taken, num_idle):
    """Mark every position free (and the padding bits past ``num_idle`` taken)."""
    words = taken.shape[0]
    for w in range(words):
        taken[w] = 0
    tail = num_idle % 64
    if tail:
        taken[words - 1] = _ALL << np.uint64(tail)


@njit_inline
def take_block(taken, start, size, out, out_offset):
    """Take the block of ``size`` free positions from free index ``start`` (wrapping to the head of
    the sequence): write its Q positions, in sequence order, into ``out[out_offset:]`` and mark them
    in ``taken``. Requires ``0 <= start < free positions`` and ``size <= free positions``."""
    words = taken.shape[0]
    w = 0
    r = start
    free = ~taken[0]
    c = popcount(free)
    while r >= c:  # the word holding the start-th free position
        r -= c
        w += 1
        free = ~taken[w]
        c = popcount(free)
    while r > 0:  # drop the r free positions before it in that word
        free &= free - _ONE
        r -= 1
    count = 0
    while True:
        segment = free
        while free != 0 and count < size:
            out[out_offset + count] = 64 * w + int(trailing_zeros(free))
            count += 1
            free &= free - _ONE
        taken[w] |= segment & ~free
        if count == size:
            return
        w += 1
        if w == words:  # wrap to the head of the sequence
            w = 0
        free = ~taken[w]


@njit
def free_positions(taken, alive):
    """Write the free Q positions, in order, into ``alive``; return how many there are."""
    length = 0
    for w in range(taken.shape[0]):
        free = ~taken[w]
        while free != 0:
            alive[length] = 64 * w + int(trailing_zeros(free))
            length += 1
            free &= free - _ONE
    return length


@njit_inline
def decode(num_idle, sizes, offsets, order, starts, steps, positions, taken):
    """Decode the first ``steps`` steps of (order, starts) into ``positions`` (job j's block at
    ``positions[offsets[j]:offsets[j] + sizes[j]]``), with ``taken`` (``taken_words(num_idle)``
    words) as scratch. Returns the number of free positions left, or -1 if a start lies outside
    the sequence of its step."""
    reset_taken(taken, num_idle)
    length = num_idle
    for k in range(steps):
        j = order[k]
        if starts[k] < 0 or starts[k] >= length or sizes[j] > length:
            return -1
        take_block(taken, starts[k], sizes[j], positions, offsets[j])
        length -= sizes[j]
    return length


@njit_inline
def _cyclic_sum_of_squares(ids, positions, lo, size):
    """Sum over distinct ids of (nodes with that id)^2 for the block ``positions[lo:lo + size]``.

    A block is a cyclic run of the idle sequence Q, and Q lists nodes in id order, in which switch
    and pod ids never decrease (FatTree numbers nodes switch by switch). So equal ids sit next to
    each other in the block, except that the run at its end and the run at its start can share an
    id when it wraps: run lengths give the sum without any count array.
    """
    total = 0
    run = 1
    first_run = 0
    for i in range(lo + 1, lo + size):
        if ids[positions[i]] == ids[positions[i - 1]]:
            run += 1
        else:
            if first_run == 0:
                first_run = run
            else:
                total += run * run
            run = 1
    if first_run == 0:  # a single run
        return run * run
    if ids[positions[lo]] == ids[positions[lo + size - 1]]:
        return total + (first_run + run) * (first_run + run)
    return total + first_run * first_run + run * run


@njit_inline
def block_cost(switch_q, pod_q, positions, lo, size, convention):
    """Cost of the node set at ``positions[lo:lo + size]`` (a block of the idle sequence)."""
    return cost_from_squares(size, _cyclic_sum_of_squares(switch_q, positions, lo, size),
                             _cyclic_sum_of_squares(pod_q, positions, lo, size), convention)


@njit
def total_cost(switch_q, pod_q, sizes, offsets, positions, convention):
    total = 0.0
    for j in range(sizes.shape[0]):
        total += block_cost(switch_q, pod_q, positions, offsets[j], sizes[j], convention)
    return total
