"""Numba kernels of DCAS on a window whose jobs carry constraints (the rule is defined in
:mod:`tjap.placement.tree.dcas`).

A step places one job on the free sequence F of its step: the positions of Q that no earlier
job took or holds. ``state`` keeps, per position of Q, :data:`FREE`, :data:`TAKEN` (a job's
node) or :data:`HELD` (an idle node of an exclusive job's domain); :func:`free_sequence` writes F
out. A job's start is an index into F; :func:`try_start` gives the Q positions it takes from
there and their price, or infinity when its constraints refuse that start, and :func:`commit`
takes them.

The rules enter as the tuple :class:`tjap.placement.tree.dcas.Rules` builds:
``(domains, prices, jobs, prefer_cost, frag_weight, frag_level)``: the domain id of every Q
position at every level (row ``level - 1``), per job the fragmentation price of each position's
domain of the fragmentation level (:mod:`tjap.placement.tree.fragmentation`), one row per job of :data:`SEGMENT`, :data:`SEGMENT_LEVEL`,
:data:`WITHIN`, :data:`PREFER`, :data:`EXCLUSIVE` (0 where the job has none), the prefer
prices, and the fragmentation weight and level. The domains of a level are runs of consecutive
positions of Q (nodes are numbered depth first), so a job's nodes, listed in the cyclic Q order
of F, meet each domain in one cyclic run: counting the changes of domain along that list counts
its distinct domains.
"""

import numpy as np

from tjap.core.jit import njit, njit_inline
from tjap.placement.tree._arc_kernels import segment_walk
from tjap.placement.tree._dcas_kernels import block_cost

FREE, TAKEN, HELD = 0, 1, 2
#: Columns of the rules' table of jobs.
SEGMENT, SEGMENT_LEVEL, WITHIN, PREFER, EXCLUSIVE = range(5)


@njit_inline
def free_sequence(state, alive):
    """Write the free positions of Q, in order, into ``alive``; return how many there are."""
    length = 0
    for p in range(state.shape[0]):
        if state[p] == FREE:
            alive[length] = p
            length += 1
    return length


@njit_inline
def prepare(rules, j, state, alive, length, seq_domains, busy):
    """Before trying starts of job ``j`` on the free sequence ``alive[:length]``: the domains of
    its segment level along F (``seq_domains``), and for an exclusive job the domains of its
    level that hold a node of an earlier job (``busy``, one flag per domain id)."""
    domains, jobs = rules[0], rules[2]
    if jobs[j, SEGMENT]:
        row = domains[jobs[j, SEGMENT_LEVEL] - 1]
        for i in range(length):
            seq_domains[i] = row[alive[i]]
    level = jobs[j, EXCLUSIVE]
    if level:
        row = domains[level - 1]
        busy[:] = 0
        for p in range(state.shape[0]):
            if state[p] == TAKEN:
                busy[row[p]] = 1


@njit_inline
def _touched(row, out, n):
    """Distinct domains (ids ``row``) among the positions ``out[:n]`` (one cyclic run each)."""
    changes = 0
    last = row[out[n - 1]]
    for i in range(n):
        d = row[out[i]]
        changes += d != last
        last = d
    return max(changes, 1)


@njit_inline
def _priced(row, prices, out, n):
    """The sum of ``prices`` over the distinct domains among ``out[:n]`` (a domain's price at
    any of its positions)."""
    changes = 0
    total = 0.0
    last = row[out[n - 1]]
    for i in range(n):
        d = row[out[i]]
        if d != last:
            changes += 1
            total += prices[out[i]]
        last = d
    return total if changes else prices[out[0]]


@njit_inline
def try_start(
    rules,
    group_q,
    shallow,
    top_level,
    convention,
    j,
    n,
    s,
    alive,
    length,
    seq_domains,
    busy,
    walk,
    out,
):
    """The price of job ``j`` (``n`` nodes) from start ``s`` of the free sequence: its CH cost
    plus its prefer and fragmentation terms, its Q positions in ``out[:n]`` (cyclic Q order); or
    infinity when the start lies outside F or the job's constraints refuse it (``prepare`` first;
    ``walk`` is scratch)."""
    domains, prices, jobs, prefer_cost, frag_weight, frag_level = rules
    if s < 0 or s >= length or n > length:
        return np.inf
    segment = jobs[j, SEGMENT]
    if segment:
        if segment_walk(seq_domains[:length], n, segment, s, walk) < 0:
            return np.inf
        for i in range(n):
            out[i] = alive[walk[i]]
    else:
        for i in range(n):
            k = s + i
            out[i] = alive[k - length if k >= length else k]
    level = jobs[j, WITHIN]
    if level:
        row = domains[level - 1]
        for i in range(1, n):
            if row[out[i]] != row[out[0]]:
                return np.inf
    level = jobs[j, EXCLUSIVE]
    if level:
        row = domains[level - 1]
        for i in range(n):
            if busy[row[out[i]]]:
                return np.inf
    cost = block_cost(group_q, shallow, out, 0, n, top_level, convention)
    level = jobs[j, PREFER]
    if level:
        cost += prefer_cost[j] * (_touched(domains[level - 1], out, n) - 1)
    if frag_weight > 0:
        cost += frag_weight * _priced(domains[frag_level - 1], prices[j], out, n)
    return cost


@njit_inline
def commit(rules, j, n, state, out):
    """Take the positions ``out[:n]`` for job ``j``; an exclusive job also holds every free
    position of the domains of its level that it touches."""
    domains, jobs = rules[0], rules[2]
    for i in range(n):
        state[out[i]] = TAKEN
    level = jobs[j, EXCLUSIVE]
    if level:
        row = domains[level - 1]
        m = state.shape[0]
        for i in range(n):
            p = out[i]
            d = row[p]
            if i > 0 and row[out[i - 1]] == d:
                continue
            while p > 0 and row[p - 1] == d:
                p -= 1
            while p < m and row[p] == d:
                if state[p] == FREE:
                    state[p] = HELD
                p += 1


@njit
def scratch(rules, m):
    """(state, alive, seq_domains, walk, out, busy): the arrays the kernels above work in."""
    return (
        np.zeros(m, np.int8),
        np.empty(m, np.int64),
        np.empty(m, np.int64),
        np.empty(m, np.int64),
        np.empty(m, np.int64),
        np.zeros(rules[0].max() + 1, np.int8),
    )


@njit
def decode(
    rules,
    group_q,
    shallow,
    top_level,
    convention,
    sizes,
    offsets,
    order,
    starts,
    positions,
    job_cost,
):
    """Place the steps (order, starts): job j's Q positions into ``positions[offsets[j]:]``, its
    price into ``job_cost[j]``. Returns False when some step's start is not allowed."""
    state, alive, seq_domains, walk, out, busy = scratch(rules, group_q.shape[1])
    for step in range(order.shape[0]):
        j = order[step]
        n = sizes[j]
        length = free_sequence(state, alive)
        prepare(rules, j, state, alive, length, seq_domains, busy)
        cost = try_start(
            rules,
            group_q,
            shallow,
            top_level,
            convention,
            j,
            n,
            starts[step],
            alive,
            length,
            seq_domains,
            busy,
            walk,
            out,
        )
        if cost == np.inf:
            return False
        commit(rules, j, n, state, out)
        job_cost[j] = cost
        for i in range(n):
            positions[offsets[j] + i] = out[i]
    return True


@njit
def find_start(rules, group_q, shallow, top_level, j, n, state, target):
    """The lowest start of the free sequence of ``state`` from which job ``j`` takes exactly the
    positions flagged in ``target`` (``n`` of them), taken into ``state``; -1 when none."""
    _, alive, seq_domains, walk, out, busy = scratch(rules, state.shape[0])
    length = free_sequence(state, alive)
    prepare(rules, j, state, alive, length, seq_domains, busy)
    for s in range(length):
        if not target[alive[s]]:
            continue
        if (
            try_start(
                rules,
                group_q,
                shallow,
                top_level,
                0,
                j,
                n,
                s,
                alive,
                length,
                seq_domains,
                busy,
                walk,
                out,
            )
            == np.inf
        ):
            continue
        same = True
        for i in range(n):
            same = same and target[out[i]]
        if same:
            commit(rules, j, n, state, out)
            return s
    return -1
