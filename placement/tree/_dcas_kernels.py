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
the block run by run and, inside a run, group by group using :func:`row_ends`.

**Costs on any tree.** A block's cost depends only on its size and the sum over the count form's
rows (:class:`tjap.placement.tree.tree_cost.CountForm`) of its squared node counts per group. The
kernels take the groups of each Q position, ``group_q[r, p]`` (rows x idle nodes), and each row's
*shallow* group id ``shallow[r]`` (the nodes whose switch lies above that row, see
:mod:`tjap.placement.tree.tree_cost`; -1 where none). Nodes are numbered depth first, so the nodes below
a switch are consecutive in Q: every group but the shallow one is a run of consecutive positions.
A block (a cyclic range of the free sequence) therefore meets each such group in one run of its
positions, or in two when it wraps (its last and its first run), and run lengths give the sum of
squares without a count array. The shallow group can be split along Q (a shallow leaf between two
deeper subtrees), so it is counted on its own: one count per row. On a fat-tree the rows are the
edge switch and the pod and no node is shallow.
"""

import numpy as np
from numba import types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import overload

from tjap.core.jit import njit, njit_inline, popcount
from tjap.placement.tree import tree_cost

#: The project's block cost on any tree, compiled inline here: the search loop calls it for every
#: block.
cost_from_sum_of_squares = njit_inline(tree_cost.cost_from_sum_of_squares.py_func)

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
    """``ends[p]``: the first Q position after p whose id differs from ``ids[p]`` (or len(ids))."""
    m = ids.shape[0]
    ends = np.empty(m, np.int64)
    end = m
    for p in range(m - 1, -1, -1):
        if p + 1 < m and ids[p + 1] != ids[p]:
            end = p + 1
        ends[p] = end
    return ends


@njit
def row_ends(group_q):
    """``ends[r, p]``: the first Q position after p where a row 0..r of ``group_q`` (rows x Q
    positions) changes its id (or the length of Q). The last row's pieces are those of the finest
    partition, on which every row's id is constant."""
    rows, m = group_q.shape
    ends = np.empty((rows, m), np.int64)
    for r in range(rows):
        ends[r, m - 1] = m
    for p in range(m - 2, -1, -1):
        changed = False
        for r in range(rows):
            changed = changed or group_q[r, p + 1] != group_q[r, p]
            ends[r, p] = p + 1 if changed else ends[r, p + 1]
    return ends


@njit
def check_groups(group_q, shallow, num_groups):
    """(every group but each row's shallow one is a run of consecutive Q positions, some position
    is in a shallow group): the premise of the kernels and whether the rows need ``shallow``."""
    seen = np.zeros(num_groups, np.bool_)
    any_shallow = False
    for r in range(group_q.shape[0]):
        for p in range(group_q.shape[1]):
            g = group_q[r, p]
            if g == shallow[r]:
                any_shallow = True
            elif p == 0 or g != group_q[r, p - 1]:
                if seen[g]:
                    return False, any_shallow
                seen[g] = True
    return True, any_shallow


def is_shallow(g, shallow, r):
    """True if ``g`` is row ``r``'s shallow group; compiled to False when ``shallow`` is None."""


@overload(is_shallow, inline="always", jit_options={"cache": True, "nogil": True})
def _is_shallow(g, shallow, r):
    if isinstance(shallow, (types.NoneType, types.Omitted)):
        return lambda g, shallow, r: False
    return lambda g, shallow, r: g == shallow[r]


@njit_inline
def _add_piece(i, c, last, run, total, first):
    """Add c nodes with id i to the run lengths of a block's ids. State: the id and length of the
    open run, the sum of squares of the closed runs but the first, and the first run's length
    (-1 while it is open). Equal ids are adjacent in a block except where it wraps."""
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
    """Sum over distinct ids of (nodes with that id)^2 from the run state of :func:`_add_piece`,
    ``first_id`` the id of the block's first position: the last and the first run share their id
    only when the block wraps. (When the first position is in the shallow group, which the run
    state skips, the first run met cannot share the last's id: the block's head lies between them
    in Q, and the other groups are runs of Q.)"""
    if last < 0:
        return 0
    if first < 0:
        return run * run
    if last == first_id:
        return total + (first + run) * (first + run)
    return total + first * first + run * run


@njit_inline
def take_block_cost(taken, start, size, group_q, ends, shallow, top_level, convention):
    """Take the block like :func:`take_block` (marking it in ``taken``) and return its cost,
    without writing its positions (``ends`` from :func:`row_ends`).

    ``shallow`` is each row's shallow group id (module docstring), or None for a count form of
    two rows without shallow nodes: a three-level tree with every node on a bottom switch, as the
    paper's fat-tree. That case (chosen when compiling, by the argument's type) walks the block
    once with the run state of both rows in registers; any other form walks it once per row.
    """
    if shallow is None:
        return _take_block_cost_two_rows(taken, start, size, group_q, ends, top_level, convention)
    return _take_block_cost_rows(taken, start, size, group_q, ends, shallow, top_level, convention)


@njit_inline
def _take_block_cost_two_rows(taken, start, size, group_q, ends, top_level, convention):
    """:func:`take_block_cost` of two rows without shallow nodes in one walk: run of free
    positions by run and, inside a run, piece by piece (the finest partition, ``ends[1]``)."""
    words = taken.shape[0]
    ids0, ids1, pieces = group_q[0], group_q[1], ends[1]
    w, free = _start_word(taken, start)
    head = 64 * w + np.int64(trailing_zeros(free))
    l0, r0, t0, f0 = -1, 0, 0, -1
    l1, r1, t1, f1 = -1, 0, 0, -1
    count = 0
    while True:
        while free != 0:
            low, run, bits = _first_run(free, size - count)
            p = 64 * w + low
            end = p + run
            while p < end:  # the pieces of this run of free positions
                e = min(pieces[p], end)
                l0, r0, t0, f0 = _add_piece(ids0[p], e - p, l0, r0, t0, f0)
                l1, r1, t1, f1 = _add_piece(ids1[p], e - p, l1, r1, t1, f1)
                p = e
            count += run
            taken[w] |= bits
            free &= ~bits
            if count == size:
                sum_sq = _close_runs(ids0[head], l0, r0, t0, f0) + _close_runs(
                    ids1[head], l1, r1, t1, f1
                )
                return cost_from_sum_of_squares(size, top_level, sum_sq, convention)
        w += 1
        if w == words:  # wrap to the head of the sequence
            w = 0
        free = ~taken[w]


@njit_inline
def _take_block_cost_rows(taken, start, size, group_q, ends, shallow, top_level, convention):
    """:func:`take_block_cost` on any count form, row by row: for each row a walk run of free
    positions by run and, inside a run, group by group, the shallow group counted apart. The block
    is marked in ``taken`` during the last row's walk; the walks before it read the bitmap
    unmarked, which only matters when a block wraps back into its start word, and there the lowest
    free bits, taken first, are the ones below the start: the block's last positions."""
    words = taken.shape[0]
    w0, free0 = _start_word(taken, start)
    head = 64 * w0 + np.int64(trailing_zeros(free0))
    rows = group_q.shape[0]
    sum_sq = 0
    for r in range(rows):
        mark = r == rows - 1
        num_shallow = 0
        last, run_len, total, first = -1, 0, 0, -1
        w, free = w0, free0
        count = 0
        while count < size:
            while free != 0:
                low, run, bits = _first_run(free, size - count)
                p = 64 * w + low
                end = p + run
                while p < end:  # the groups of this run of free positions
                    e = min(ends[r, p], end)
                    g = group_q[r, p]
                    if is_shallow(g, shallow, r):
                        num_shallow += e - p
                    else:
                        last, run_len, total, first = _add_piece(
                            g, e - p, last, run_len, total, first
                        )
                    p = e
                count += run
                if mark:
                    taken[w] |= bits
                free &= ~bits
                if count == size:
                    break
            if count < size:
                w += 1
                if w == words:  # wrap to the head of the sequence
                    w = 0
                free = ~taken[w]
        sum_sq += (
            _close_runs(group_q[r, head], last, run_len, total, first) + num_shallow * num_shallow
        )
    return cost_from_sum_of_squares(size, top_level, sum_sq, convention)


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
def _cyclic_sum_of_squares(group_q, r, shallow, positions, lo, size):
    """Sum over distinct ids of (nodes with that id)^2 for the block ``positions[lo:lo + size]``
    (Q positions in block order), in row ``r``.

    A block is a cyclic run of the idle sequence Q, in which each group but the shallow one is a
    run of consecutive positions (see the module docstring): equal ids sit next to each other in
    the block, except that the run at its end and the run at its start can share an id when it
    wraps, so run lengths give the sum without any count array.
    """
    num_shallow = 0
    last, run, total, first = -1, 0, 0, -1
    for i in range(lo, lo + size):
        g = group_q[r, positions[i]]
        if is_shallow(g, shallow, r):
            num_shallow += 1
        else:
            last, run, total, first = _add_piece(g, 1, last, run, total, first)
    return (
        _close_runs(group_q[r, positions[lo]], last, run, total, first) + num_shallow * num_shallow
    )


@njit_inline
def block_cost(group_q, shallow, positions, lo, size, top_level, convention):
    """Cost of the node set at ``positions[lo:lo + size]`` (a block of the idle sequence)."""
    sum_sq = 0
    for r in range(group_q.shape[0]):
        sum_sq += _cyclic_sum_of_squares(group_q, r, shallow, positions, lo, size)
    return cost_from_sum_of_squares(size, top_level, sum_sq, convention)
