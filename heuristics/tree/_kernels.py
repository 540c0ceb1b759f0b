"""Numba kernels of the search loops. All @njit code of heuristics lives here, compiled with the
project's one jit policy (:mod:`tjap.core.jit`).

Operators are chosen by integer codes so the whole loop stays compiled (the repair's kind by the
type of its argument, see :func:`pick_start`); the public operator classes in
:mod:`tjap.heuristics.tree.operators` map to these codes and validate their parameters.

The tree enters as its count form (see :mod:`tjap.placement.tree._dcas_kernels`): ``group_q`` (the
group of each idle position per row), ``shallow`` (each row's shallow group), ``top_level`` and
``num_groups``, built by :class:`tjap.placement.tree.dcas.Arrays`; the same kernels serve the paper's
fat-tree and any switch tree.

One loop, :func:`anneal`, runs SA, LNS and NSA, on windows with or without job constraints: a
window whose jobs carry constraints passes its rules, and each move is then placed by the
constrained DCAS kernels of :mod:`tjap.placement.tree._dcas_constraints` (a call per move: those
moves cost far more than the reference counting the flat code avoids). Without rules the move is
written for speed: no call and no opaque code inside it, small branch-free kernels inlined flat
into it, so that Numba can drop the reference counting of its arrays (see the notes in the
random-draw section and in the loop). Its random draws and its accept step are those of every
annealing loop (:mod:`tjap.core.anneal`).
"""

import numpy as np
from numba import types
from numba.extending import overload

from tjap.core.anneal import accept_move, draw, rng_reserve, rng_seed, rng_state
from tjap.core.jit import njit, njit_inline
from tjap.heuristics.tree._mlp_kernels import (
    CFG_LOOKAHEAD,
    CFG_SAMPLE,
    candidate_starts,
    net_logits,
    net_start,
    top_k,
)
from tjap.placement.tree import _dcas_constraints as rules_k
from tjap.placement.tree._dcas_kernels import (
    decode,
    free_positions,
    reset_taken,
    row_ends,
    take_block_cost,
    taken_words,
)
from tjap.placement.tree.tree_cost import block_costs

# repair operators: how a re-inserted job picks its start in the current idle sequence
REPAIR_PAPER = 0  # uniform among the first min(q, length) positions (the paper, q = 100)
REPAIR_UNIFORM = 1  # uniform over every position
REPAIR_GREEDY = 2  # the cheapest block (ties: lowest position)
REPAIR_LEARNED = 3  # a trained network run in the loop (tjap.heuristics.tree._mlp_kernels, tjap.learned.tree.policy)
REPAIR_LOOKAHEAD = 4  # k proposed starts, each scored with the later jobs placed greedily
# order in which removed jobs are re-inserted
REINSERT_LARGEST_FIRST = 0  # descending size, ties by window order (the paper's text)
REINSERT_WINDOW_ORDER = 1  # window order (the published code)
# acceptance
ACCEPT_METROPOLIS = 0  # simulated annealing
ACCEPT_IMPROVING = 1  # accept only moves that do not worsen the current cost (descent / LNS)


# -- random draws --------------------------------------------------------------------------------
# The loop draws from its own MT19937 generator (tjap.core.anneal: rng_state, rng_seed,
# rng_reserve, draw), refilled between moves, so a draw inside the move is a load: Numba's
# np.random is an opaque call, and an opaque call (or any kernel call) inside the move keeps the
# atomic reference counting of the loop's arrays, which cost more than the move itself.

# destroy flags removed steps in the high half of its scratch array of step indices
_LOW = 0xFFFFFFFF
_FLAG = 1 << 32


@njit_inline
def _copy_solution(order, starts, to_order, to_starts):
    for i in range(order.shape[0]):
        to_order[i] = order[i]
        to_starts[i] = starts[i]


@njit
def greedy_start(group_q, top_level, num_groups, taken, length, alive, size, convention):
    """Start of the cheapest block of ``size`` in the free sequence (ties: lowest position)."""
    free_positions(taken, alive)
    costs = block_costs(group_q, top_level, alive[:length], size, num_groups, convention)
    return int(np.argmin(costs))


@njit
def lookahead_total(
    group_q,
    ends,
    shallow,
    top_level,
    num_groups,
    convention,
    taken,
    work,
    length,
    alive,
    start,
    size,
    sizes,
    order,
    rest_from,
):
    """The cost of the block of ``size`` at ``start`` of the current sequence (``length`` free
    positions of ``taken``) plus those of the jobs ``order[rest_from:]`` (of ``sizes``) placed
    after it in that order, each at its cheapest block (the greedy repair, ties to the lowest
    start), summed in that order. ``work`` (a taken bitmap) and ``alive`` are scratch; ``taken``
    is unchanged."""
    for w in range(taken.shape[0]):
        work[w] = taken[w]
    total = take_block_cost(work, start, size, group_q, ends, shallow, top_level, convention)
    left = length - size
    for step in range(rest_from, order.shape[0]):
        r = sizes[order[step]]
        g = greedy_start(group_q, top_level, num_groups, work, left, alive, r, convention)
        total += take_block_cost(work, g, r, group_q, ends, shallow, top_level, convention)
        left -= r
    return total


@njit
def lookahead_start(
    group_q,
    ends,
    shallow,
    top_level,
    num_groups,
    convention,
    taken,
    work,
    length,
    alive,
    size,
    candidates,
    count,
    sizes,
    order,
    rest_from,
):
    """Of the starts ``candidates[:count]``, the one of least :func:`lookahead_total` (ties: the
    earlier candidate); with one candidate, that one."""
    best = candidates[0]
    if count == 1:
        return best
    best_total = np.inf
    for c in range(count):
        total = lookahead_total(
            group_q,
            ends,
            shallow,
            top_level,
            num_groups,
            convention,
            taken,
            work,
            length,
            alive,
            candidates[c],
            size,
            sizes,
            order,
            rest_from,
        )
        if total < best_total:
            best, best_total = candidates[c], total
    return best


def pick_start(
    group_q,
    ends,
    shallow,
    top_level,
    num_groups,
    taken,
    length,
    alive,
    size,
    convention,
    repair,
    q,
    others,
    num_others,
    sizes,
    order,
    step,
    rng,
):
    """Start position of a block of ``size`` in the free sequence of ``length`` positions (the
    complement of the ``taken`` bitmap); ``alive`` is scratch. The job is ``order[step]``; the
    jobs ``order[step + 1:]`` (of ``sizes``) are still to re-insert after it.

    Compiled dispatch on the *type* of ``repair`` (see :func:`repair_argument`): an integer code
    is a drawn repair (paper, uniform), a one-tuple ``(code,)`` a computed one (greedy), a
    four-tuple ``(code, k, work, temperature)`` the look-ahead repair (k proposals, the
    cheapest blocks or, with a temperature, sampled from the softmax of -cost / temperature
    with one draw, each scored by :func:`lookahead_start`; ``work`` is a taken bitmap of
    scratch), and the seven-tuple ``(params, layers, switch_q, pod_q, config, scratch, work)``
    a learned one: a network run by :mod:`tjap.heuristics.tree._mlp_kernels` on the repair state
    (``others``, ``num_others``: the nodes and number of the jobs still to re-insert after this
    one), given one draw of the loop's generator for its sampling (see :mod:`tjap.learned.tree.policy`); with
    a look-ahead k in its config, the network's k proposals
    (:func:`tjap.heuristics.tree._mlp_kernels.candidate_starts`) are scored the same way. So the loop is
    one piece of source, compiled once per kind, and the drawn kind, the fast one, carries no
    calls: a call in the loop keeps the reference counting of the loop's arrays, which would
    cost more than the move itself."""


def repair_argument(code: int):
    """The form of the hand-written repair operator ``code`` that the compiled loop takes (see
    pick_start); a learned repair builds its own (:func:`tjap.heuristics.tree._mlp_kernels.pack_layers`)."""
    if code in (REPAIR_LEARNED, REPAIR_LOOKAHEAD):
        raise ValueError("a learned or look-ahead repair builds its own argument")
    return code if code in (REPAIR_PAPER, REPAIR_UNIFORM) else (code,)


@overload(pick_start, inline="always", jit_options={"cache": True, "nogil": True})
def _pick_start(
    group_q,
    ends,
    shallow,
    top_level,
    num_groups,
    taken,
    length,
    alive,
    size,
    convention,
    repair,
    q,
    others,
    num_others,
    sizes,
    order,
    step,
    rng,
):
    if isinstance(repair, types.Integer):

        def drawn(
            group_q,
            ends,
            shallow,
            top_level,
            num_groups,
            taken,
            length,
            alive,
            size,
            convention,
            repair,
            q,
            others,
            num_others,
            sizes,
            order,
            step,
            rng,
        ):
            # paper: among the first min(q, length); uniform: among all (branch-free)
            bound = length - (repair == REPAIR_PAPER) * max(length - q, 0)
            return int(draw(rng) * bound)

        return drawn

    if len(repair) == 1:

        def computed(
            group_q,
            ends,
            shallow,
            top_level,
            num_groups,
            taken,
            length,
            alive,
            size,
            convention,
            repair,
            q,
            others,
            num_others,
            sizes,
            order,
            step,
            rng,
        ):
            return greedy_start(
                group_q, top_level, num_groups, taken, length, alive, size, convention
            )

        return computed

    if len(repair) == 4:

        def lookahead(
            group_q,
            ends,
            shallow,
            top_level,
            num_groups,
            taken,
            length,
            alive,
            size,
            convention,
            repair,
            q,
            others,
            num_others,
            sizes,
            order,
            step,
            rng,
        ):
            free_positions(taken, alive)
            costs = block_costs(group_q, top_level, alive[:length], size, num_groups, convention)
            candidates = np.empty(repair[1], np.int64)
            if repair[3] > 0.0:  # one draw for the proposals (none with T = 0: greedy's)
                u = draw(rng)
                for i in range(length):
                    costs[i] = -costs[i] / repair[3]
                count = candidate_starts(costs, length, True, u, candidates)
            else:
                count = top_k(costs, length, repair[1], -1.0, candidates)
            return lookahead_start(
                group_q,
                ends,
                shallow,
                top_level,
                num_groups,
                convention,
                taken,
                repair[2],
                length,
                alive,
                size,
                candidates,
                count,
                sizes,
                order,
                step + 1,
            )

        return lookahead

    def learned(
        group_q,
        ends,
        shallow,
        top_level,
        num_groups,
        taken,
        length,
        alive,
        size,
        convention,
        repair,
        q,
        others,
        num_others,
        sizes,
        order,
        step,
        rng,
    ):
        u = draw(rng)  # one draw per step, sampled or not: the budget of a drawn repair
        free_positions(taken, alive)
        k = repair[4][CFG_LOOKAHEAD]
        if k <= 1:
            return net_start(
                repair[0],
                repair[1],
                repair[2],
                repair[3],
                repair[4],
                repair[5],
                alive,
                length,
                size,
                others,
                num_others,
                u,
            )
        logits, n = net_logits(
            repair[0],
            repair[1],
            repair[2],
            repair[3],
            repair[4],
            repair[5],
            alive,
            length,
            size,
            others,
            num_others,
        )
        candidates = np.empty(k, np.int64)
        count = candidate_starts(logits, n, repair[4][CFG_SAMPLE] != 0, u, candidates)
        return lookahead_start(
            group_q,
            ends,
            shallow,
            top_level,
            num_groups,
            convention,
            taken,
            repair[6],
            length,
            alive,
            size,
            candidates,
            count,
            sizes,
            order,
            step + 1,
        )

    return learned


@njit_inline
def _removed_steps(picks, num_jobs, max_remove, rng):
    """Draw how many steps to remove (1..max_remove) and which (partial Fisher-Yates): they are
    ``picks[:k] & _LOW``, and every removed step s is flagged by ``picks[s] & _FLAG``; returns k."""
    k = 1 + int(draw(rng) * min(max_remove, num_jobs))
    for i in range(num_jobs):
        picks[i] = i
    for i in range(k):
        r = i + int(draw(rng) * (num_jobs - i))
        picks[i], picks[r] = picks[r], picks[i]
    for i in range(k):
        picks[picks[i] & _LOW] |= _FLAG
    return k


@njit_inline
def _split_steps(order, starts, new_order, new_starts, picks, k):
    """Kept steps (with their starts) to the front of ``new_order``, the removed jobs
    (``picks[:k]``) to its last k places in step order; returns the kept count."""
    num_jobs = order.shape[0]
    kept = 0
    out = num_jobs - k
    for step in range(num_jobs):
        removed = (picks[step] >> 32) & 1
        at = kept + removed * (out - kept)
        new_order[at] = order[step]
        new_starts[at] = starts[step]
        kept += 1 - removed
        out += removed
    return kept


@njit_inline
def _sort_removed(sizes, new_order, picks, kept, reinsert):
    """Put the removed jobs ``new_order[kept:]`` in re-insertion order: each at its rank among
    them (descending size then window order, or window order); ``picks`` is scratch."""
    k = new_order.shape[0] - kept
    for i in range(k):
        picks[i] = new_order[kept + i]
    by_size = reinsert == REINSERT_LARGEST_FIRST
    for i in range(k):
        j = picks[i]
        rank = 0
        for other in range(k):
            a = picks[other]
            bigger = by_size & (sizes[a] > sizes[j])
            same = (not by_size) | (sizes[a] == sizes[j])
            rank += bigger | (same & (a < j))
        new_order[kept + rank] = j


@njit_inline
def destroy(sizes, order, starts, new_order, new_starts, picks, max_remove, reinsert, rng=None):
    """Remove 1..max_remove random jobs from the order: ``new_order`` gets the kept steps (their
    starts unchanged) followed by the removed jobs in re-insertion order. Returns the kept count.
    Draws from ``rng`` (see :func:`draw`)."""
    k = _removed_steps(picks, order.shape[0], max_remove, rng)
    kept = _split_steps(order, starts, new_order, new_starts, picks, k)
    _sort_removed(sizes, new_order, picks, kept, reinsert)
    return kept


@njit_inline
def retake_kept(
    group_q,
    ends,
    shallow,
    top_level,
    convention,
    sizes,
    new_order,
    new_starts,
    kept,
    job_cost,
    taken,
):
    """Take the blocks of the first ``kept`` steps into an empty ``taken`` bitmap, their costs into
    ``job_cost``; returns the free positions left. (The kept starts stay valid: destroy only
    removes steps, so no step's sequence got shorter.)"""
    length = group_q.shape[1]
    reset_taken(taken, length)
    for step in range(kept):
        j = new_order[step]
        job_cost[j] = take_block_cost(
            taken, new_starts[step], sizes[j], group_q, ends, shallow, top_level, convention
        )
        length -= sizes[j]
    return length


@njit_inline
def reinsert_removed(
    group_q,
    ends,
    shallow,
    top_level,
    num_groups,
    convention,
    sizes,
    new_order,
    new_starts,
    kept,
    length,
    job_cost,
    taken,
    alive,
    repair,
    q,
    rng,
):
    """Re-insert the jobs of steps kept.. at the end of the order, each at a start chosen by
    ``repair`` in the sequence left by the steps before; their costs into ``job_cost``. Returns
    the total cost of the solution (summed in job order)."""
    num_jobs = new_order.shape[0]
    others = 0
    for step in range(kept, num_jobs):
        others += sizes[new_order[step]]
    for step in range(kept, num_jobs):
        j = new_order[step]
        others -= sizes[j]
        start = pick_start(
            group_q,
            ends,
            shallow,
            top_level,
            num_groups,
            taken,
            length,
            alive,
            sizes[j],
            convention,
            repair,
            q,
            others,
            num_jobs - step - 1,
            sizes,
            new_order,
            step,
            rng,
        )
        new_starts[step] = start
        job_cost[j] = take_block_cost(
            taken, start, sizes[j], group_q, ends, shallow, top_level, convention
        )
        length -= sizes[j]
    total = 0.0
    for j in range(num_jobs):
        total += job_cost[j]
    return total


@njit
def destroy_and_repair(
    group_q,
    shallow,
    top_level,
    num_groups,
    convention,
    sizes,
    offsets,
    order,
    starts,
    new_order,
    new_starts,
    positions,
    taken,
    alive,
    picks,
    max_remove,
    repair,
    q,
    reinsert,
):
    """One move from (order, starts) to (new_order, new_starts), drawing from Numba's global
    generator, for callers outside the loop (the NSA environment): :func:`destroy`,
    :func:`retake_kept`, :func:`reinsert_removed`; also decodes the new solution into ``positions``.
    Returns the number of re-inserted jobs."""
    job_cost = np.empty(sizes.shape[0])
    ends = row_ends(group_q)
    kept = destroy(sizes, order, starts, new_order, new_starts, picks, max_remove, reinsert)
    length = retake_kept(
        group_q,
        ends,
        shallow,
        top_level,
        convention,
        sizes,
        new_order,
        new_starts,
        kept,
        job_cost,
        taken,
    )
    reinsert_removed(
        group_q,
        ends,
        shallow,
        top_level,
        num_groups,
        convention,
        sizes,
        new_order,
        new_starts,
        kept,
        length,
        job_cost,
        taken,
        alive,
        repair,
        q,
        None,
    )
    decode(
        group_q.shape[1], sizes, offsets, new_order, new_starts, sizes.shape[0], positions, taken
    )
    return sizes.shape[0] - kept


#: The RNG is re-seeded every CHUNK iterations from (seed, chunk), so a run is the same however
#: its iterations are split into kernel calls (a time limit stops a run between chunks).
CHUNK = 256


@njit
def chunk_seed(seed, it_begin, chunk=CHUNK):
    """The seed of the chunk of ``chunk`` iterations that holds iteration ``it_begin``."""
    return (seed * 1_000_003 + it_begin // chunk) % 4294967296


#: On a window with constraints the loop re-seeds its RNG every CONSTRAINED_CHUNK iterations
#: (its moves try every start of a job, so a time limit is checked more often).
CONSTRAINED_CHUNK = 16


@njit
def constrained_start(
    rules,
    group_q,
    shallow,
    top_level,
    convention,
    j,
    n,
    alive,
    length,
    seq_domains,
    busy,
    walk,
    out,
    repair,
    q,
    rng,
):
    """The start of job ``j`` on the free sequence ``alive[:length]`` (after
    :func:`~tjap.placement.tree._dcas_constraints.prepare`) that ``repair`` picks among the
    starts its constraints allow: greedy, the cheapest (ties: the lowest); paper and uniform,
    the first allowed start at or after the drawn one (cyclically). -1 when none is allowed."""
    if repair == REPAIR_GREEDY:
        best, best_cost = -1, np.inf
        for s in range(length):
            cost = rules_k.try_start(
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
            )
            if cost < best_cost:
                best, best_cost = s, cost
        return best
    bound = length - (repair == REPAIR_PAPER) * max(length - q, 0)
    first = int(draw(rng) * bound)
    for k in range(length):
        s = first + k if first + k < length else first + k - length
        if (
            rules_k.try_start(
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
            )
            < np.inf
        ):
            return s
    return -1


@njit
def constrained_move(
    rules,
    group_q,
    shallow,
    top_level,
    convention,
    sizes,
    new_order,
    new_starts,
    kept,
    job_cost,
    state,
    alive,
    seq_domains,
    walk,
    out,
    busy,
    repair,
    q,
    rng,
):
    """Place the steps of ``new_order`` under the constraints: a kept step at its start when
    that start is still allowed, else (and every removed job) at the start ``repair`` picks
    (:func:`constrained_start`, written into ``new_starts``). Returns the solution's price
    (summed in job order), or infinity when some job has no allowed start."""
    state[:] = rules_k.FREE
    for step in range(new_order.shape[0]):
        j = new_order[step]
        n = sizes[j]
        length = rules_k.free_sequence(state, alive)
        rules_k.prepare(rules, j, state, alive, length, seq_domains, busy)
        cost = np.inf
        if step < kept:
            cost = rules_k.try_start(
                rules,
                group_q,
                shallow,
                top_level,
                convention,
                j,
                n,
                new_starts[step],
                alive,
                length,
                seq_domains,
                busy,
                walk,
                out,
            )
        if cost == np.inf:
            s = constrained_start(
                rules,
                group_q,
                shallow,
                top_level,
                convention,
                j,
                n,
                alive,
                length,
                seq_domains,
                busy,
                walk,
                out,
                repair,
                q,
                rng,
            )
            if s < 0:
                return np.inf
            new_starts[step] = s
            cost = rules_k.try_start(
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
            )
        rules_k.commit(rules, j, n, state, out)
        job_cost[j] = cost
    total = 0.0
    for j in range(sizes.shape[0]):
        total += job_cost[j]
    return total


@njit
def anneal(
    group_q,
    shallow,
    top_level,
    num_groups,
    convention,
    sizes,
    cur_order,
    cur_starts,
    cur,
    best_order,
    best_starts,
    best,
    it_begin,
    it_end,
    iterations,
    t_max,
    t_min,
    max_remove,
    repair,
    q,
    reinsert,
    accept,
    seed,
    rules=None,
):
    """Iterations [it_begin, it_end) of simulated annealing / LNS over DCAS solutions
    (Algorithm 1 of seed 002), with exponential cooling from t_max to t_min over ``iterations``:
    the one loop of SA, LNS and NSA, with or without job constraints.

    Each move removes 1..max_remove random jobs (re-inserted in ``reinsert`` order), places the
    steps again and takes the new solution by the one accept step
    (:func:`tjap.core.anneal.accept_move`: ``accept`` Metropolis or improving only). The current
    and best solutions are updated in place; returns (current cost, best cost, accepted moves,
    improving moves). On rejection the search stays at the current solution (the published code
    did not).

    Without ``rules`` (a window without constraints) a move keeps the kept steps' starts and
    re-inserts the removed jobs at the starts ``repair`` picks (:func:`pick_start`), written out
    flat; the RNG is re-seeded every CHUNK iterations. With ``rules``
    (:attr:`tjap.placement.tree.dcas.Rules.args`) the move is :func:`constrained_move` over the
    constrained DCAS solutions (``repair``: a drawn or the greedy code); a move that leaves some
    job without an allowed start is rejected, so the current and best solutions stay feasible;
    the RNG is re-seeded every CONSTRAINED_CHUNK iterations. Numba compiles one loop per kind
    (``rules`` None prunes the constrained branches before typing, and the reverse), so the
    loop without constraints is the flat code it was. ``it_begin`` must be a multiple of the
    chunk."""
    num_jobs = sizes.shape[0]
    m = group_q.shape[1]
    chunk = CHUNK if rules is None else CONSTRAINED_CHUNK
    job_cost = np.empty(num_jobs)
    if rules is None:
        ends = row_ends(group_q)
        words = taken_words(m)
        taken = np.empty(words, np.uint64)
        free_word = np.empty(words, np.uint64)  # the taken bitmap of an empty solution
        reset_taken(free_word, m)
        alive = np.empty(m, np.int64)
    else:
        state, alive, seq_domains, walk, out, busy = rules_k.scratch(rules, m)
    picks = np.empty(num_jobs, np.int64)
    new_order = np.empty(num_jobs, np.int64)
    new_starts = np.empty(num_jobs, np.int64)
    draws_per_move = 2 + 2 * num_jobs  # at most: destroy 1 + k, repair k, acceptance 1
    rng = rng_state(draws_per_move)
    accepted = 0
    improved = 0
    metropolis = accept == ACCEPT_METROPOLIS
    ratio = t_min / t_max
    for it in range(it_begin, it_end):
        if it % chunk == 0 or it == it_begin:
            rng_seed(rng, chunk_seed(seed, it, chunk))
        rng_reserve(rng, draws_per_move)
        k = _removed_steps(picks, num_jobs, max_remove, rng)
        kept = _split_steps(cur_order, cur_starts, new_order, new_starts, picks, k)
        _sort_removed(sizes, new_order, picks, kept, reinsert)
        if rules is None:
            # retake_kept and reinsert_removed, written out: kernels nested in kernels in this
            # loop would keep the reference counting of their array arguments (atomic updates
            # that Numba prunes only in flat code), which cost about as much as the move itself
            length = m
            for w in range(words):
                taken[w] = free_word[w]
            for step in range(kept):
                j = new_order[step]
                job_cost[j] = take_block_cost(
                    taken, new_starts[step], sizes[j], group_q, ends, shallow, top_level, convention
                )
                length -= sizes[j]
            others = 0  # nodes of the jobs still to re-insert after this one (the learned repair)
            for step in range(kept, num_jobs):
                others += sizes[new_order[step]]
            for step in range(kept, num_jobs):
                j = new_order[step]
                others -= sizes[j]
                start = pick_start(
                    group_q,
                    ends,
                    shallow,
                    top_level,
                    num_groups,
                    taken,
                    length,
                    alive,
                    sizes[j],
                    convention,
                    repair,
                    q,
                    others,
                    num_jobs - step - 1,
                    sizes,
                    new_order,
                    step,
                    rng,
                )
                new_starts[step] = start
                job_cost[j] = take_block_cost(
                    taken, start, sizes[j], group_q, ends, shallow, top_level, convention
                )
                length -= sizes[j]
            new = 0.0
            for j in range(num_jobs):  # in job order, as the plain-Python twin sums
                new += job_cost[j]
        else:
            new = constrained_move(
                rules,
                group_q,
                shallow,
                top_level,
                convention,
                sizes,
                new_order,
                new_starts,
                kept,
                job_cost,
                state,
                alive,
                seq_domains,
                walk,
                out,
                busy,
                repair,
                q,
                rng,
            )
            if new == np.inf:  # some job has no allowed start
                continue
        if accept_move(new - cur, metropolis, t_max, ratio, it, iterations, rng):
            cur = new
            _copy_solution(new_order, new_starts, cur_order, cur_starts)
            accepted += 1
            if new < best:
                best = new
                _copy_solution(new_order, new_starts, best_order, best_starts)
                improved += 1
    return cur, best, accepted, improved


@njit
def solution_cost(group_q, shallow, top_level, num_groups, convention, sizes, order, starts):
    """Cost of the DCAS solution (order, starts), or inf if a start is out of range."""
    m = group_q.shape[1]
    ends = row_ends(group_q)
    taken = np.empty(taken_words(m), np.uint64)
    reset_taken(taken, m)
    job_cost = np.empty(sizes.shape[0])
    length = m
    for step in range(order.shape[0]):
        j = order[step]
        if starts[step] < 0 or starts[step] >= length or sizes[j] > length:
            return np.inf
        job_cost[j] = take_block_cost(
            taken, starts[step], sizes[j], group_q, ends, shallow, top_level, convention
        )
        length -= sizes[j]
    total = 0.0
    for j in range(sizes.shape[0]):
        total += job_cost[j]
    return total


@njit
def seed_rng(seed):
    """Seed the random generator of compiled code (used by environments that call destroy)."""
    np.random.seed(seed)
