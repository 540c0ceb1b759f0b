"""Numba kernels of the search loops. All @njit code of heuristics lives here, compiled with the
project's one jit policy (:mod:`tjap._jit`).

Operators are chosen by integer codes so the whole loop stays compiled; the public operator
classes in :mod:`heuristics.operators` map to these codes and validate their parameters.
"""

import warnings

import numpy as np
from numba import objmode, types
from numba.extending import overload
from numba.core.errors import NumbaWarning

from tjap._dcas_kernels import decode, free_positions, take_block, taken_words, total_cost
from tjap._jit import njit, njit_inline
from tjap._kernels import block_costs

# The learned repair runs a Python callback in object mode; nogil cannot apply to that block.
warnings.filterwarnings("ignore", message="Code running in object mode", category=NumbaWarning)

# repair operators: how a re-inserted job picks its start in the current idle sequence
REPAIR_PAPER = 0     # uniform among the first min(q, length) positions (the paper, q = 100)
REPAIR_UNIFORM = 1   # uniform over every position
REPAIR_GREEDY = 2    # the cheapest block (ties: lowest position)
REPAIR_LEARNED = 3   # a trained policy, called back from compiled code (learned.nsa)
# order in which removed jobs are re-inserted
REINSERT_LARGEST_FIRST = 0  # descending size, ties by window order (the paper's text)
REINSERT_WINDOW_ORDER = 1   # window order (the published code)
# acceptance
ACCEPT_METROPOLIS = 0  # simulated annealing
ACCEPT_IMPROVING = 1   # accept only moves that do not worsen the current cost (descent / LNS)


def learned_start(switch_q, pod_q, alive, length, size, others, num_others):
    """Called from compiled code (object mode) when the repair operator is learned: asks the
    policy registered in LEARNED_REPAIR[0] for a start position."""
    return int(LEARNED_REPAIR[0](switch_q, pod_q, alive, length, size, others, num_others))


#: The learned repair policy the compiled loop calls back (set by learned.nsa for one run).
LEARNED_REPAIR = [None]


@njit
def learned_choice(switch_q, pod_q, alive, length, size, others, num_others):
    """The learned operator's start, from the policy in LEARNED_REPAIR (object mode)."""
    with objmode(start="int64"):
        start = learned_start(switch_q, pod_q, alive, length, size, others, num_others)
    return start


@njit_inline
def choose_start(switch_q, pod_q, taken, length, alive, size, num_switches, num_pods,
                 convention, repair, q):
    """Start position of a block of ``size`` in the free sequence of ``length`` positions (the
    complement of the ``taken`` bitmap) under a hand-written repair; ``alive`` is scratch."""
    if repair == REPAIR_PAPER:
        return int(np.random.random() * min(q, length))
    if repair == REPAIR_UNIFORM:
        return int(np.random.random() * length)
    free_positions(taken, alive)
    costs = block_costs(switch_q[alive[:length]], pod_q[alive[:length]], size, num_switches,
                        num_pods, convention)
    return int(np.argmin(costs))


def pick_start(switch_q, pod_q, taken, length, alive, size, num_switches, num_pods,
               convention, repair, q, others, num_others):
    """Compiled dispatch on the *type* of ``repair``: an integer code selects a hand-written
    operator; the tuple ``(REPAIR_LEARNED,)`` selects the learned call-back. So the loop is one
    piece of source, compiled once per kind, and the hand-written kind carries no object-mode
    code (which would slow every iteration)."""


@overload(pick_start, jit_options={"cache": True, "nogil": True})
def _pick_start(switch_q, pod_q, taken, length, alive, size, num_switches, num_pods,
                convention, repair, q, others, num_others):
    if isinstance(repair, types.Integer):
        def hand_written(switch_q, pod_q, taken, length, alive, size, num_switches, num_pods,
                         convention, repair, q, others, num_others):
            return choose_start(switch_q, pod_q, taken, length, alive, size, num_switches,
                                num_pods, convention, repair, q)
        return hand_written

    def learned(switch_q, pod_q, taken, length, alive, size, num_switches, num_pods,
                convention, repair, q, others, num_others):
        free_positions(taken, alive)
        return learned_choice(switch_q, pod_q, alive, length, size, others, num_others)
    return learned


@njit_inline
def _is_picked(picks, k, step):
    for i in range(k):
        if picks[i] == step:
            return True
    return False


@njit_inline
def destroy(sizes, order, starts, new_order, new_starts, picks, max_remove, reinsert):
    """Remove 1..max_remove random jobs from the order: ``new_order`` gets the kept steps (their
    starts unchanged) followed by the removed jobs in re-insertion order. Returns the kept count."""
    num_jobs = order.shape[0]
    k = 1 + int(np.random.random() * min(max_remove, num_jobs))
    for i in range(num_jobs):
        picks[i] = i
    for i in range(k):  # partial Fisher-Yates over step indices
        r = i + int(np.random.random() * (num_jobs - i))
        picks[i], picks[r] = picks[r], picks[i]
    new_order[:] = -1
    kept = 0
    for step in range(num_jobs):
        if not _is_picked(picks, k, step):
            new_order[kept] = order[step]
            new_starts[kept] = starts[step]
            kept += 1
    # removed jobs in re-insertion order (insertion sort: at most max_remove of them)
    for step in range(num_jobs):
        if _is_picked(picks, k, step):
            j = order[step]
            pos = kept
            while pos < num_jobs and new_order[pos] >= 0:
                pos += 1
            new_order[pos] = j
            while pos > kept:
                a = new_order[pos - 1]
                if reinsert == REINSERT_LARGEST_FIRST:
                    before = sizes[j] > sizes[a] or (sizes[j] == sizes[a] and j < a)
                else:
                    before = j < a
                if not before:
                    break
                new_order[pos - 1], new_order[pos] = j, a
                pos -= 1
    return kept


@njit
def destroy_and_repair(switch_q, pod_q, num_switches, num_pods, convention, sizes, offsets,
                       order, starts, new_order, new_starts, positions, taken, alive,
                       picks, max_remove, repair, q, reinsert):
    """One move: :func:`destroy`, decode the kept steps, then re-insert the removed jobs at the end
    of the order, each at a start chosen by ``repair`` in the sequence left by the steps before."""
    num_jobs = order.shape[0]
    kept = destroy(sizes, order, starts, new_order, new_starts, picks, max_remove, reinsert)
    m = switch_q.shape[0]
    length = decode(m, sizes, offsets, new_order, new_starts, kept, positions, taken)
    others = 0
    for step in range(kept, num_jobs):
        others += sizes[new_order[step]]
    for step in range(kept, num_jobs):
        j = new_order[step]
        others -= sizes[j]
        start = pick_start(switch_q, pod_q, taken, length, alive, sizes[j], num_switches,
                           num_pods, convention, repair, q, others, num_jobs - step - 1)
        new_starts[step] = start
        take_block(taken, start, sizes[j], positions, offsets[j])
        length -= sizes[j]
    return num_jobs - kept


@njit
def block_offsets(sizes):
    """Where each job's block starts in the flat positions array (job order)."""
    offsets = np.zeros(sizes.shape[0], np.int64)
    for j in range(1, sizes.shape[0]):
        offsets[j] = offsets[j - 1] + sizes[j - 1]
    return offsets


#: Iterations per kernel call; the RNG is re-seeded per chunk from (seed, chunk), so a run is the
#: same whether or not a time limit stops it between chunks.
CHUNK = 256


@njit
def chunk_seed(seed, it_begin):
    return (seed * 1_000_003 + it_begin // CHUNK) % 4294967296


@njit
def anneal(switch_q, pod_q, num_switches, num_pods, convention, sizes, cur_order, cur_starts,
           cur, best_order, best_starts, best, it_begin, it_end, iterations, t_max, t_min,
           max_remove, repair, q, reinsert, accept, seed):
    """Iterations [it_begin, it_end) of simulated annealing / LNS over DCAS solutions
    (Algorithm 1 of seed 002), with exponential cooling from t_max to t_min over ``iterations``.

    The current and best solutions are updated in place; returns (current cost, best cost,
    accepted moves, improving moves). On rejection the search stays at the current solution
    (the published code did not). ``it_begin`` must be a multiple of CHUNK.
    """
    np.random.seed(chunk_seed(seed, it_begin))
    num_jobs = sizes.shape[0]
    m = switch_q.shape[0]
    offsets = block_offsets(sizes)
    positions = np.empty(offsets[num_jobs - 1] + sizes[num_jobs - 1], np.int64)
    taken = np.empty(taken_words(m), np.uint64)
    alive = np.empty(m, np.int64)
    picks = np.empty(num_jobs, np.int64)
    new_order = np.empty(num_jobs, np.int64)
    new_starts = np.empty(num_jobs, np.int64)
    accepted = 0
    improved = 0
    ratio = t_min / t_max
    for it in range(it_begin, it_end):
        temperature = t_max * ratio ** (it / max(iterations - 1, 1))
        destroy_and_repair(switch_q, pod_q, num_switches, num_pods, convention, sizes, offsets,
                           cur_order, cur_starts, new_order, new_starts, positions, taken, alive,
                           picks, max_remove, repair, q, reinsert)
        new = total_cost(switch_q, pod_q, sizes, offsets, positions, convention)
        delta = new - cur
        if delta <= 0.0:
            take = True
        elif accept == ACCEPT_METROPOLIS:
            take = np.random.random() < np.exp(-delta / temperature)
        else:
            take = False
        if take:
            cur = new
            cur_order[:] = new_order
            cur_starts[:] = new_starts
            accepted += 1
            if new < best:
                best = new
                best_order[:] = new_order
                best_starts[:] = new_starts
                improved += 1
    return cur, best, accepted, improved


@njit
def solution_cost(switch_q, pod_q, num_switches, num_pods, convention, sizes, order, starts):
    """Cost of the DCAS solution (order, starts), or inf if a start is out of range."""
    num_jobs = sizes.shape[0]
    offsets = block_offsets(sizes)
    positions = np.empty(offsets[num_jobs - 1] + sizes[num_jobs - 1], np.int64)
    taken = np.empty(taken_words(switch_q.shape[0]), np.uint64)
    if decode(switch_q.shape[0], sizes, offsets, order, starts, num_jobs, positions, taken) < 0:
        return np.inf
    return total_cost(switch_q, pod_q, sizes, offsets, positions, convention)


@njit
def seed_rng(seed):
    """Seed the random generator of compiled code (used by environments that call destroy)."""
    np.random.seed(seed)
