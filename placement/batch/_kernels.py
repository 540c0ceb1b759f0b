"""Numba kernels of the batch-queue simulator. The public wrapper is :mod:`tjap.placement.batch.simulator`.

The simulator state is a set of arrays (so a snapshot is a copy of them) plus the scalar slots of
``clock`` (indices below). Jobs are rows of the job table, in (submit, id) order, so a row index
is also the submission order used to break priority ties.

Event processing at one time t (the documented, tested tie-breaking): first every job ending at t
(in row order of their end events), then every submission at t (in row order), then the periodic
priority recalculation if due, then the main scheduling pass (if anything changed), then the
backfill pass (if due).
"""

import numpy as np

from tjap.core.jit import njit, njit_inline
from tjap.placement.tree.tree_cost import block_costs

INF = 1 << 62

# job status
FUTURE, PENDING, RUNNING, DONE = 0, 1, 2, 3
# eligibility of a pending job (else the time it became eligible)
WAITING = -1  # on its dependency
HELD = -2  # held until released (sbatch --hold / scontrol release)

# backfill modes (config slot MODE); the reservation depth is config slot DEPTH
MODE_NONE = 0  # main pass only: strict priority order (FCFS when priorities are equal)
MODE_DEPTH = 1  # reservations recomputed each pass for the first DEPTH blocked jobs (1 = EASY)
MODE_CONSERVATIVE = 2  # a reservation for every job, kept between passes and only moved earlier

# node selection (config slot PLACEMENT)
PLACE_FIRST_FIT = 0  # lowest free node ids
PLACE_CONTIGUOUS = 1  # the cheapest block of consecutive free nodes on the switch tree (its count
# form: group_of, config slots TOP_LEVEL and NUM_GROUPS; hop-cost convention in config slot
# CONVENTION: 0 = paper, 1 = published)

# integer config slots
(
    MODE,
    DEPTH,
    BF_INTERVAL,
    BF_RESOLUTION,
    BF_MAX_JOB_TEST,
    CALC_PERIOD,
    PLACEMENT,
    NUM_NODES,
    TOP_LEVEL,
    NUM_GROUPS,
    FAVOR_SMALL,
    RELEASE_DELAY,
    WHOLE_RESERVATION,
    CONVENTION,
    BF_END_SLACK,
    WILL_RUN_WINDOW,
    NODE_RESERVATION,
) = range(17)
NUM_ICONFIG = 17
# BF_END_SLACK: seconds a backfilled job must end before a reservation begins: 1 = strictly before
# (Slurm), 0 = it may end exactly when the reservation begins (the textbook EASY rule)
# WILL_RUN_WINDOW: 0 = a reservation starts at the earliest time the job fits; W > 0 = at the time
# Slurm's will-run test predicts, removing the running jobs in batches W seconds wide (see
# will_run_start)
# NODE_RESERVATION: 1 = a (single, EASY) reservation holds named nodes, the lowest ids free at its
# start, and a job backfilled past its start takes the lowest free nodes outside them (see
# reserve_nodes); 0 = reservations are node counts in the profile
# float config slots
W_AGE, W_SIZE, W_FAIRSHARE, W_QOS, MAX_AGE, HALF_LIFE, QOS_FACTOR = range(7)
NUM_FCONFIG = 7
# clock slots (int64 scalars of the state)
(
    NOW,
    NEXT_SUBMIT,
    QLEN,
    RLEN,
    FREE,
    BF_PENDING,
    NEXT_BF,
    NEXT_CALC,
    LAST_CALC,
    STARTED,
    PASSES,
    DIRTY,
) = range(12)
NUM_CLOCK = 12


def work_arrays(num_jobs):
    """Scratch arrays of :func:`advance` (allocated once per simulator): scratch, profile times,
    profile free counts. A pass adds at most 4 profile points per queued job and 1 per running job."""
    cap = 6 * num_jobs + 8
    return (
        np.empty(num_jobs + 1, np.int64),
        np.empty(cap, np.int64),
        np.empty(cap, np.int64),
        np.empty(cap, np.int64),
    )


# -- small helpers ---------------------------------------------------------------------------------
@njit_inline
def round_up(t, resolution):
    if resolution <= 1:
        return t
    return -((-t) // resolution) * resolution


@njit_inline
def before(prio, a, b):
    """Queue order: higher priority first, then lower row (earlier submission)."""
    return prio[a] > prio[b] or (prio[a] == prio[b] and a < b)


@njit
def priority(j, now, nodes, user, eligible, usage, total_usage, num_users, iconf, fconf):
    """Slurm's multifactor priority of job ``j`` at ``now`` (an integer, as Slurm's)."""
    value = 0.0
    if fconf[W_AGE] > 0.0 and eligible[j] >= 0:
        value += fconf[W_AGE] * min(now - eligible[j], fconf[MAX_AGE]) / fconf[MAX_AGE]
    if fconf[W_SIZE] > 0.0:
        n = iconf[NUM_NODES]
        if iconf[FAVOR_SMALL]:
            value += fconf[W_SIZE] * (n - nodes[j] + 1) / n
        else:
            value += fconf[W_SIZE] * nodes[j] / n
    if fconf[W_FAIRSHARE] > 0.0:
        share = 1.0 / num_users
        used = usage[user[j]] / total_usage if total_usage > 0.0 else 0.0
        value += fconf[W_FAIRSHARE] * 2.0 ** (-used / share)
    value += fconf[W_QOS] * fconf[QOS_FACTOR]
    return np.floor(value)


# -- the queue (rows sorted by priority) -----------------------------------------------------------
@njit_inline
def queue_insert(queue, qlen, prio, j):
    i = qlen
    while i > 0 and before(prio, j, queue[i - 1]):
        queue[i] = queue[i - 1]
        i -= 1
    queue[i] = j
    return qlen + 1


@njit
def queue_sort(queue, qlen, prio):
    """Insertion sort (the queue is nearly sorted after a recalculation); True if the order changed."""
    changed = False
    for i in range(1, qlen):
        j = queue[i]
        k = i
        while k > 0 and before(prio, j, queue[k - 1]):
            queue[k] = queue[k - 1]
            k -= 1
        if k != i:
            queue[k] = j
            changed = True
    return changed


@njit_inline
def queue_compact(queue, qlen, status):
    """Drop rows that are no longer pending, keeping the order."""
    k = 0
    for i in range(qlen):
        if status[queue[i]] == PENDING:
            queue[k] = queue[i]
            k += 1
    return k


# -- nodes ---------------------------------------------------------------------------------------
@njit
def select_nodes(free, size, iconf, group_of, out, lo):
    """Write ``size`` free node ids into ``out[lo:]`` by the configured placement (``group_of``:
    the tree's count form, :class:`tjap.placement.tree.tree_cost.CountForm`, for the contiguous
    placement)."""
    if iconf[PLACEMENT] == PLACE_CONTIGUOUS:
        idle = np.flatnonzero(free)
        costs = block_costs(
            group_of,
            iconf[TOP_LEVEL],
            idle,
            size,
            iconf[NUM_GROUPS],
            iconf[CONVENTION],
        )
        first = int(np.argmin(costs))
        for i in range(size):
            out[lo + i] = idle[(first + i) % idle.shape[0]]
        return
    k = 0
    node = 0
    while k < size:
        if free[node]:
            out[lo + k] = node
            k += 1
        node += 1


# -- starting and ending jobs ----------------------------------------------------------------------
@njit
def start_job(
    j,
    now,
    nodes,
    runtime,
    status,
    start,
    end,
    running,
    clock,
    free,
    node_of,
    node_offset,
    iconf,
    group_of,
    start_seq,
):
    """Start job ``j`` now: take its nodes and insert it in ``running`` (sorted by end, then row).
    ``start_seq[j]`` records how many jobs started before it (the order of starts at one time)."""
    status[j] = RUNNING
    start[j] = now
    start_seq[j] = clock[STARTED]
    end[j] = now + runtime[j]
    lo = node_offset[j]
    select_nodes(free, nodes[j], iconf, group_of, node_of, lo)
    for i in range(lo, lo + nodes[j]):
        free[node_of[i]] = False
    clock[FREE] -= nodes[j]
    i = clock[RLEN]
    while i > 0 and (
        end[running[i - 1]] > end[j] or (end[running[i - 1]] == end[j] and running[i - 1] > j)
    ):
        running[i] = running[i - 1]
        i -= 1
    running[i] = j
    clock[RLEN] += 1
    clock[STARTED] += 1


# -- the availability profile of backfilling -------------------------------------------------------
@njit_inline
def profile_point(pt, pf, plen, t):
    """Index of the segment starting exactly at ``t``, splitting a segment if needed (t >= pt[0]).
    Returns (index, new length)."""
    k = plen - 1
    while pt[k] > t:
        k -= 1
    if pt[k] == t:
        return k, plen
    for i in range(plen, k + 1, -1):
        pt[i] = pt[i - 1]
        pf[i] = pf[i - 1]
    pt[k + 1] = t
    pf[k + 1] = pf[k]
    return k + 1, plen + 1


@njit_inline
def profile_add(pt, pf, plen, a, b, delta):
    """Add ``delta`` free nodes on [a, b); returns the new length."""
    ka, plen = profile_point(pt, pf, plen, a)
    kb, plen = profile_point(pt, pf, plen, b)
    for i in range(ka, kb):
        pf[i] += delta
    return plen


@njit_inline
def earliest_start(pt, pf, plen, size, limit, resolution):
    """Earliest segment start s (s = pt[k]) at which ``size`` nodes stay free until
    round_up(s + limit)."""
    k = 0
    while True:
        s = pt[k]
        stop = round_up(s + limit, resolution)
        m = k
        while m < plen and pt[m] < stop and pf[m] >= size:
            m += 1
        if m == plen or pt[m] >= stop:
            return s
        k = m + 1  # segment m is too full: no start before its end can work


@njit_inline
def prefix_minimum(pf, plen, pm):
    """pm[k] = min(pf[0..k]): the fewest free nodes from now to the end of segment k."""
    low = pf[0]
    for i in range(plen):
        low = min(low, pf[i])
        pm[i] = low


@njit_inline
def fits_now(pt, pm, plen, size, stop):
    """True if ``size`` nodes stay free from now (pt[0]) until ``stop``: binary search for the last
    segment starting before ``stop``, then its prefix minimum."""
    lo, hi = 0, plen - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pt[mid] < stop:
            lo = mid
        else:
            hi = mid - 1
    return pm[lo] >= size


@njit
def build_profile(now, free_count, running, rlen, start, limit, nodes, resolution, pt, pf, scratch):
    """Free nodes over time from the running jobs' time limits (ends rounded up to the
    resolution): pt[0] = now with the current free count, then one step per predicted end."""
    for i in range(rlen):
        scratch[i] = running[i]
    ends = np.empty(rlen, np.int64)
    for i in range(rlen):
        ends[i] = max(round_up(start[scratch[i]] + limit[scratch[i]], resolution), now)
    order = np.argsort(ends, kind="mergesort")
    pt[0] = now
    pf[0] = free_count
    plen = 1
    for i in range(rlen):
        t = ends[order[i]]
        if t > pt[plen - 1]:
            pt[plen] = t
            pf[plen] = pf[plen - 1]
            plen += 1
        pf[plen - 1] += nodes[scratch[order[i]]]
    return plen


@njit
def will_run_start(now, free_count, running, rlen, start, limit, nodes, size, window):
    """When Slurm 22.05's will-run test (select/cons_tres) says a job of ``size`` nodes can start,
    counting nodes: the running jobs, by predicted end (start + limit), are taken away in batches
    and the job is tried after each batch; it starts at the end of the last job of the first batch
    after which enough nodes are free. The first batch ends on the first multiple of ``window``
    (Unix seconds) strictly after the earliest end, plus ``window``; the window then doubles (at
    least once, and until it reaches the next end) before each further batch grows to the barrier
    plus the new window. Returns INF if the job never fits."""
    if free_count >= size:
        return now
    if rlen == 0:
        return INF
    ends = np.empty(rlen, np.int64)
    for i in range(rlen):
        ends[i] = start[running[i]] + limit[running[i]]
    order = np.argsort(ends, kind="mergesort")
    barrier = ends[order[0]] + (window - ends[order[0]] % window)
    w = window
    freed = free_count
    k = 0
    while k < rlen:
        last = ends[order[k]]
        while True:
            freed += nodes[running[order[k]]]
            last = ends[order[k]]
            k += 1
            if k == rlen or ends[order[k]] > barrier + w:
                break
        w *= 2
        while k < rlen and ends[order[k]] > barrier + w:
            w *= 2
        if freed >= size:
            return last if last > now else now + 1
    return INF


@njit
def reserve_nodes(t, size, free, running, rlen, start, limit, nodes, node_of, node_offset, mask):
    """Mark in ``mask`` the ``size`` lowest node ids that are free at ``t`` by the time limits:
    free now, or held by a running job whose start + limit is at most ``t`` (the nodes Slurm's
    will-run test picks for a reservation when it takes nodes in index order)."""
    later = np.zeros(free.shape[0], np.bool_)
    for i in range(rlen):
        r = running[i]
        if start[r] + limit[r] <= t:
            for q in range(node_offset[r], node_offset[r] + nodes[r]):
                later[node_of[q]] = True
    mask[:] = False
    k = 0
    for node in range(free.shape[0]):
        if k == size:
            break
        if free[node] or later[node]:
            mask[node] = True
            k += 1


# -- scheduling passes -----------------------------------------------------------------------------
@njit
def main_pass(
    now,
    queue,
    clock,
    eligible,
    nodes,
    runtime,
    status,
    start,
    end,
    running,
    free,
    node_of,
    node_offset,
    iconf,
    group_of,
    start_seq,
):
    """Start pending jobs in priority order until the first eligible one that does not fit."""
    started = False
    for i in range(clock[QLEN]):
        j = queue[i]
        if eligible[j] < 0:
            continue
        if nodes[j] > clock[FREE]:
            break
        start_job(
            j,
            now,
            nodes,
            runtime,
            status,
            start,
            end,
            running,
            clock,
            free,
            node_of,
            node_offset,
            iconf,
            group_of,
            start_seq,
        )
        started = True
    if started:
        clock[QLEN] = queue_compact(queue, clock[QLEN], status)


@njit
def backfill_pass(
    now,
    queue,
    clock,
    eligible,
    nodes,
    limit,
    runtime,
    status,
    start,
    end,
    running,
    free,
    node_of,
    node_offset,
    reserved_at,
    first_reservation,
    iconf,
    group_of,
    start_seq,
    pt,
    pf,
    pm,
    scratch,
):
    """One backfill pass (MODE_DEPTH or MODE_CONSERVATIVE), see the module docstring of
    :mod:`tjap.placement.batch.simulator` for the rules."""
    resolution = iconf[BF_RESOLUTION]
    plen = build_profile(
        now, clock[FREE], running, clock[RLEN], start, limit, nodes, resolution, pt, pf, scratch
    )
    qlen = clock[QLEN]
    started = False
    if iconf[MODE] == MODE_CONSERVATIVE:
        # 1. compression: every held reservation, in order of its time, moves to its earliest slot
        held = 0
        for i in range(qlen):
            j = queue[i]
            if reserved_at[j] >= 0:
                t0 = max(reserved_at[j], now)
                plen = profile_add(pt, pf, plen, t0, round_up(t0 + limit[j], resolution), -nodes[j])
                scratch[held] = j
                held += 1
        keys = np.empty(held, np.int64)
        for i in range(held):
            keys[i] = reserved_at[scratch[i]]
        order = np.argsort(keys, kind="mergesort")  # ties keep queue order
        for i in range(held):
            j = scratch[order[i]]
            t0 = max(reserved_at[j], now)
            plen = profile_add(pt, pf, plen, t0, round_up(t0 + limit[j], resolution), nodes[j])
            s = earliest_start(pt, pf, plen, nodes[j], limit[j], resolution)
            plen = profile_add(pt, pf, plen, s, round_up(s + limit[j], resolution), -nodes[j])
            if s == now:
                reserved_at[j] = -1
                start_job(
                    j,
                    now,
                    nodes,
                    runtime,
                    status,
                    start,
                    end,
                    running,
                    clock,
                    free,
                    node_of,
                    node_offset,
                    iconf,
                    group_of,
                    start_seq,
                )
                started = True
            else:
                reserved_at[j] = s
    # 2. jobs without a reservation, in priority order
    reservations = 0
    tested = 0
    slack = iconf[BF_END_SLACK]
    depth = iconf[DEPTH]
    minimum_ready = False
    node_mode = iconf[NODE_RESERVATION] != 0
    mask = np.zeros(free.shape[0] if node_mode else 0, np.bool_)
    res_start = INF
    for i in range(qlen):
        j = queue[i]
        if status[j] != PENDING or eligible[j] < 0 or reserved_at[j] >= 0:
            continue
        tested += 1
        if tested > iconf[BF_MAX_JOB_TEST]:
            break
        limited = iconf[MODE] == MODE_DEPTH and depth >= 0 and reservations >= depth
        if limited and node_mode:
            # Slurm: a job overlaps the reservation when it begins no later than the job's end
            # (now + limit); it then runs only on free nodes outside the reserved ones
            overlaps = round_up(now + limit[j] + slack, resolution) > res_start
            room = clock[FREE]
            if overlaps and res_start < INF:
                for node in range(free.shape[0]):
                    if mask[node] and free[node]:
                        room -= 1
            if nodes[j] > room:
                continue
            hidden = np.empty(free.shape[0] if overlaps and res_start < INF else 0, np.int64)
            h = 0
            for node in range(hidden.shape[0]):
                if mask[node] and free[node]:  # the reserved nodes are not for this job
                    free[node] = False
                    hidden[h] = node
                    h += 1
            start_job(
                j,
                now,
                nodes,
                runtime,
                status,
                start,
                end,
                running,
                clock,
                free,
                node_of,
                node_offset,
                iconf,
                group_of,
                start_seq,
            )
            for q in range(h):
                free[hidden[q]] = True
            started = True
            if clock[FREE] == 0:
                break
            continue
        if limited:  # no reservation left to give: the job starts now or not at all
            if nodes[j] > clock[FREE]:
                continue
            if not minimum_ready:
                prefix_minimum(pf, plen, pm)
                minimum_ready = True
            if not fits_now(pt, pm, plen, nodes[j], round_up(now + limit[j] + slack, resolution)):
                continue
        # Slurm: a job must end strictly before a reservation begins (begin_time <= end_time
        # overlaps), so it is tested for its limit plus one second (slack 1); the textbook EASY
        # rule lets it end exactly then (slack 0)
        s = earliest_start(pt, pf, plen, nodes[j], limit[j] + slack, resolution)
        if s == now:
            # held for the slack too: a job ending as a reservation begins has taken spare nodes
            # there (Slurm's reservations are named nodes), so the next job tested must not
            # count the same nodes free at the reservation's first second
            plen = profile_add(
                pt, pf, plen, s, round_up(s + limit[j] + slack, resolution), -nodes[j]
            )
            start_job(
                j,
                now,
                nodes,
                runtime,
                status,
                start,
                end,
                running,
                clock,
                free,
                node_of,
                node_offset,
                iconf,
                group_of,
                start_seq,
            )
            started = True
            minimum_ready = False
        elif not limited:
            if iconf[WILL_RUN_WINDOW] > 0:  # Slurm's will-run start, never before the profile's
                s = max(
                    s,
                    will_run_start(
                        now,
                        clock[FREE],
                        running,
                        clock[RLEN],
                        start,
                        limit,
                        nodes,
                        nodes[j],
                        iconf[WILL_RUN_WINDOW],
                    ),
                )
            if node_mode:
                res_start = s
                reserve_nodes(
                    s,
                    nodes[j],
                    free,
                    running,
                    clock[RLEN],
                    start,
                    limit,
                    nodes,
                    node_of,
                    node_offset,
                    mask,
                )
            # Slurm reserves whole nodes: with every simulated node a CPU of one Slurm node
            # (WHOLE_RESERVATION), a reservation keeps all of them from its start to its end
            taken = iconf[NUM_NODES] if iconf[WHOLE_RESERVATION] else nodes[j]
            plen = profile_add(pt, pf, plen, s, round_up(s + limit[j], resolution), -taken)
            reservations += 1
            if first_reservation[j] < 0:
                first_reservation[j] = s
            if iconf[MODE] == MODE_CONSERVATIVE:
                reserved_at[j] = s
        if iconf[MODE] == MODE_DEPTH and depth >= 0 and reservations >= depth and clock[FREE] == 0:
            break
    if started:
        clock[QLEN] = queue_compact(queue, clock[QLEN], status)
    clock[PASSES] += 1


# -- fair-share usage ------------------------------------------------------------------------------
@njit
def charge_usage(now, clock, running, user, nodes, start, usage, fconf):
    """Decay every user's usage to ``now`` and charge running jobs since the last charge."""
    last = clock[LAST_CALC]
    if now <= last:
        return
    decay = 2.0 ** (-(now - last) / fconf[HALF_LIFE])
    for u in range(usage.shape[0]):
        usage[u] *= decay
    for i in range(clock[RLEN]):
        j = running[i]
        usage[user[j]] += nodes[j] * (now - max(start[j], last))
    clock[LAST_CALC] = now


# -- the event loop --------------------------------------------------------------------------------
@njit
def advance(
    submit,
    nodes,
    limit,
    runtime,
    user,
    depends_on,
    child_ptr,
    children,
    node_offset,
    group_of,
    iconf,
    fconf,
    clock,
    status,
    eligible,
    start,
    end,
    prio,
    reserved_at,
    first_reservation,
    queue,
    running,
    free,
    node_of,
    usage,
    held,
    start_seq,
    scratch,
    pt,
    pf,
    pm,
    t_stop,
):
    """Process events up to and including ``t_stop``; returns the time of the next event (INF if
    none is left). ``clock[DIRTY]`` set means the state changed at ``clock[NOW]`` (a warm start,
    an injected job) and a scheduling pass is due then."""
    n = submit.shape[0]
    num_users = usage.shape[0]
    fairshare = fconf[W_FAIRSHARE] > 0.0
    recalc = fconf[W_AGE] > 0.0 or fairshare
    total_usage = 0.0
    for u in range(num_users):
        total_usage += usage[u]
    period = iconf[CALC_PERIOD]
    while True:
        if recalc and clock[NEXT_CALC] <= clock[NOW] and not clock[DIRTY]:
            clock[NEXT_CALC] = (
                clock[NOW] // period + 1
            ) * period  # stale while the queue was empty
        t = INF
        if clock[DIRTY]:
            t = clock[NOW]
        if clock[RLEN] > 0:
            t = min(t, end[running[0]] + iconf[RELEASE_DELAY])
        if clock[NEXT_SUBMIT] < n:
            t = min(t, submit[clock[NEXT_SUBMIT]])
        if clock[BF_PENDING]:
            t = min(t, clock[NEXT_BF])
        if recalc and clock[QLEN] > 0:
            t = min(t, clock[NEXT_CALC])
        if t == INF or t > t_stop:
            return t
        clock[NOW] = t
        changed = clock[DIRTY] != 0
        clock[DIRTY] = 0
        # 1. jobs ending now
        while clock[RLEN] > 0 and end[running[0]] + iconf[RELEASE_DELAY] == t:
            j = running[0]
            for i in range(1, clock[RLEN]):
                running[i - 1] = running[i]
            clock[RLEN] -= 1
            status[j] = DONE
            for i in range(node_offset[j], node_offset[j] + nodes[j]):
                free[node_of[i]] = True
            clock[FREE] += nodes[j]
            if fairshare:
                usage[user[j]] += nodes[j] * (t - max(start[j], clock[LAST_CALC]))
            for c in range(child_ptr[j], child_ptr[j + 1]):
                k = children[c]
                if status[k] == PENDING and eligible[k] == WAITING:
                    eligible[k] = t
            changed = True
        # 2. submissions now
        while clock[NEXT_SUBMIT] < n and submit[clock[NEXT_SUBMIT]] == t:
            j = clock[NEXT_SUBMIT]
            clock[NEXT_SUBMIT] += 1
            status[j] = PENDING
            d = depends_on[j]
            if held[j]:
                eligible[j] = HELD
            else:
                eligible[j] = t if d < 0 or status[d] == DONE else WAITING
            prio[j] = priority(
                j, t, nodes, user, eligible, usage, total_usage, num_users, iconf, fconf
            )
            clock[QLEN] = queue_insert(queue, clock[QLEN], prio, j)
            changed = True
        # 3. periodic priority recalculation (Slurm's PriorityCalcPeriod)
        if recalc and t >= clock[NEXT_CALC]:
            if fairshare:
                charge_usage(t, clock, running, user, nodes, start, usage, fconf)
                total_usage = 0.0
                for u in range(num_users):
                    total_usage += usage[u]
            for i in range(clock[QLEN]):
                j = queue[i]
                prio[j] = priority(
                    j, t, nodes, user, eligible, usage, total_usage, num_users, iconf, fconf
                )
            if queue_sort(queue, clock[QLEN], prio):
                changed = True
            clock[NEXT_CALC] = (t // period + 1) * period
        # 4. scheduling
        mode = iconf[MODE]
        if changed:
            if mode != MODE_CONSERVATIVE:
                main_pass(
                    t,
                    queue,
                    clock,
                    eligible,
                    nodes,
                    runtime,
                    status,
                    start,
                    end,
                    running,
                    free,
                    node_of,
                    node_offset,
                    iconf,
                    group_of,
                    start_seq,
                )
            if mode != MODE_NONE and not clock[BF_PENDING]:
                clock[BF_PENDING] = 1
                interval = iconf[BF_INTERVAL]
                # conservative reservations are kept exact: its pass runs at every change
                if interval <= 0 or mode == MODE_CONSERVATIVE:
                    clock[NEXT_BF] = t
                else:
                    clock[NEXT_BF] = (t // interval + 1) * interval
        if clock[BF_PENDING] and t >= clock[NEXT_BF]:
            clock[BF_PENDING] = 0
            backfill_pass(
                t,
                queue,
                clock,
                eligible,
                nodes,
                limit,
                runtime,
                status,
                start,
                end,
                running,
                free,
                node_of,
                node_offset,
                reserved_at,
                first_reservation,
                iconf,
                group_of,
                start_seq,
                pt,
                pf,
                pm,
                scratch,
            )
