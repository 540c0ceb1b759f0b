"""Numba kernels of the dynamic contiguity strategy (DCAS): decoding and costing solutions.

A DCAS solution is an order of the window's jobs and, for each step, a start position in the idle
sequence as updated after the previous steps. The kernels keep the *taken* Q positions as a bitmap
(one bit per position of Q, 64 to a word, bits past the end of Q set) rather than a compacted list
of the free ones: a step then costs O(idle / 64 + runs) word operations instead of O(idle) moves,
which is what makes a search move cheap. The free sequence of a step ("alive") is the complement of
the bitmap in Q order; a job takes a cyclically contiguous range of it, which is a few *runs* of
consecutive Q positions (the gaps are the blocks of earlier steps). :func:`free_positions` writes
the free sequence out for operators that need it.

Two ways to take a block: :func:`take_block` writes its Q positions (decoding a solution), and
:func:`take_block_cost` returns its cost without writing any position (the search loop): it walks
the block run by run and, inside a run, switch by switch using :func:`run_ends`.
"""

import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from tjap._jit import njit, njit_inline, popcount
from placement.tree import _kernels

#: The project's block cost, compiled inline here: the search loop calls it for every block.
cost_from_squares = njit_inline(_kernels.cost_from_squares.py_func)

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
def _low_bits(count):
    """The word with bits 0..count-1 set (0 <= count <= 64)."""
    if count == 0:
        return np.uint64(0)
    return _ALL >> np.uint64(64 - count)


@njit_inline
def _start_word(taken, start):
    """(word, free bits of that word from the start-th free position on): the popcount of whole
    words finds the word, a binary search on popcounts of its low bits finds the position."""
    w = 0
    r = start
    free = ~taken[0]
    c = popcount(free)
    while r >= c:
        r -= c
        w += 1
        free = ~taken[w]
        c = popcount(free)
    bit = 0  # the largest bit with r free positions below it is the r-th free position
    for step in (32, 16, 8, 4, 2, 1):
        if popcount(free & _low_bits(bit + step)) <= r:
            bit += step
    return w, free & (_ALL << np.uint64(bit))


@njit_inline
def _first_run(free, remaining):
    """(lowest set bit, run length to take, its bits) of the first run of set bits of ``free``
    (nonzero), cut to at most ``remaining`` bits."""
    low = np.int64(trailing_zeros(free))
    run = min(np.int64(trailing_zeros(~(free >> np.uint64(low)))), remaining)
    return low, run, _low_bits(run) << np.uint64(low)


@njit_inline
def take_block(taken, start, size, out, out_offset):
    """Take the block of ``size`` free positions from free index ``start`` (wrapping to the head of
    the sequence): write its Q positions, in sequence order, into ``out[out_offset:]`` and mark them
    in ``taken``. Requires ``0 <= start < free positions`` and ``1 <= size <= free positions``."""
    words = taken.shape[0]
    w, free = _start_word(taken, start)
    count = 0
    while True:
        while free != 0:
            low, run, bits = _first_run(free, size - count)
            for i in range(run):
                out[out_offset + count + i] = 64 * w + low + i
            count += run
            taken[w] |= bits
            free &= ~bits
            if count == size:
                return
        w += 1
        if w == words:  # wrap to the head of the sequence
            w = 0
        free = ~taken[w]


@njit
def run_ends(ids):
    """``ends[p]``: the first Q position after p whose id differs from ``ids[p]`` (or len(ids)).
    Q lists nodes in id order, so switch and pod ids form runs of consecutive positions."""
    m = ids.shape[0]
    ends = np.empty(m, np.int64)
    end = m
    for p in range(m - 1, -1, -1):
        if p + 1 < m and ids[p + 1] != ids[p]:
            end = p + 1
        ends[p] = end
    return ends


@njit_inline
def _add_piece(i, c, last, run, total, first):
    """Add c nodes with id i to the run lengths of a block's ids. State: the id and length of the
    open run, the sum of squares of the closed runs but the first, and the first run's length
    (-1 while it is open). A block visits ids in non-decreasing order except where it wraps."""
    if i == last:
        return last, run + c, total, first
    if last >= 0:
        if first < 0:
            first = run
        else:
            total += run * run
    return i, c, total, first


@njit_inline
def _close_runs(first_id, last, run, total, first):
    """Sum over distinct ids of (nodes with that id)^2 from the run state of :func:`_add_piece`:
    the last and the first run share their id only when the block wraps."""
    if first < 0:
        return run * run
    if last == first_id:
        return total + (first + run) * (first + run)
    return total + first * first + run * run


@njit_inline
def take_block_cost(taken, start, size, switch_q, pod_q, switch_ends, convention):
    """Take the block like :func:`take_block` (marking it in ``taken``) and return its cost,
    without writing its positions: run of free positions by run, and inside a run switch by
    switch (``switch_ends`` from :func:`run_ends`); each switch lies in one pod."""
    words = taken.shape[0]
    w, free = _start_word(taken, start)
    head = 64 * w + np.int64(trailing_zeros(free))
    s_last, s_run, s_total, s_first = -1, 0, 0, -1
    p_last, p_run, p_total, p_first = -1, 0, 0, -1
    count = 0
    while True:
        while free != 0:
            low, run, bits = _first_run(free, size - count)
            p = 64 * w + low
            end = p + run
            while p < end:  # the switches of this run of free positions
                e = min(switch_ends[p], end)
                s_last, s_run, s_total, s_first = _add_piece(switch_q[p], e - p, s_last, s_run,
                                                             s_total, s_first)
                p_last, p_run, p_total, p_first = _add_piece(pod_q[p], e - p, p_last, p_run,
                                                             p_total, p_first)
                p = e
            count += run
            taken[w] |= bits
            free &= ~bits
            if count == size:
                return cost_from_squares(
                    size, _close_runs(switch_q[head], s_last, s_run, s_total, s_first),
                    _close_runs(pod_q[head], p_last, p_run, p_total, p_first), convention)
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
