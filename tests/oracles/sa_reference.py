"""Plain-Python twin of the compiled DCAS search loop, for tests (an oracle that must follow the
same trajectory, draw for draw) and for the speed comparison of ``benchmarks/sa_speed.py``. Not
for use."""

from __future__ import annotations

import math

import numpy as np

from tjap.heuristics.tree import _kernels as k
from tjap.placement.tree.tree_cost import HOP_UNIT_COST


def _cost(switch_q, pod_q, nodes, convention):
    sw, pd = {}, {}
    for p in nodes:
        sw[switch_q[p]] = sw.get(switch_q[p], 0) + 1
        pd[pod_q[p]] = pd.get(pod_q[p], 0) + 1
    n = len(nodes)
    a = sum(c * c for c in sw.values())
    b = sum(c * c for c in pd.values())
    if convention == 0:
        return HOP_UNIT_COST * (6.0 * n * n - 2.0 * a - 2.0 * b - 2.0 * n) / n
    return float(max(1, (HOP_UNIT_COST * (5 * n * n - 2 * a - 2 * b - n) // 2) // n))


def _take(alive, start, size):
    length = len(alive)
    block = [alive[(start + i) % length] for i in range(size)]
    if start + size <= length:
        rest = alive[:start] + alive[start + size :]
    else:
        rest = alive[start + size - length : start]
    return block, rest


def _decode(m, sizes, order, starts, steps):
    alive = list(range(m))
    blocks = {}
    for s in range(steps):
        blocks[order[s]], alive = _take(alive, starts[s], sizes[order[s]])
    return blocks, alive


def _greedy(switch_q, pod_q, alive, size, convention):
    costs = [
        _cost(switch_q, pod_q, _take(alive, s, size)[0], convention) for s in range(len(alive))
    ]
    return int(np.argmin(costs))


def candidates(logits, k, u=None):
    """The kernel's proposals (tjap.heuristics.tree._mlp_kernels.candidate_starts), written plainly: with
    ``u``, for c = 0..k-1 the first position whose cumulative softmax exceeds (u + c) / k of the
    total (the last position if none), duplicates dropped; without, the k largest logits (ties
    to the lowest position)."""
    logits = np.asarray(logits, float)
    if u is None:
        return sorted(range(logits.size), key=lambda i: (-logits[i], i))[:k]
    cumulative = np.cumsum(np.exp(logits - logits.max()))
    out = []
    for c in range(k):
        i = int(
            min(
                np.searchsorted(cumulative, (u + c) / k * cumulative[-1], side="right"),
                logits.size - 1,
            )
        )
        if i not in out:
            out.append(i)
    return out


def lookahead(switch_q, pod_q, alive, size, convention, starts, rest):
    """Of ``starts``, the one whose block plus the blocks of ``rest`` (sizes), each then placed
    greedily, cost least (ties: the earlier start)."""
    if len(starts) == 1:
        return starts[0]
    best, best_total = starts[0], math.inf
    for s in starts:
        block, left = _take(alive, s, size)
        total = _cost(switch_q, pod_q, block, convention)
        for r in rest:
            block, left = _take(left, _greedy(switch_q, pod_q, left, r, convention), r)
            total += _cost(switch_q, pod_q, block, convention)
        if total < best_total:
            best, best_total = s, total
    return best


def _start(switch_q, pod_q, alive, size, convention, repair, q, rng, others, num_others, rest):
    if callable(
        repair
    ):  # a learned repair's oracle (tests/heuristics/tree/test_nsa_numba.py): one draw, its start
        return repair(alive, size, others, num_others, rng.random_sample(), rest)
    if isinstance(repair, tuple):  # the look-ahead repair: ("lookahead", k, temperature)
        _, count, temperature = repair
        u = rng.random_sample() if temperature > 0 else None
        costs = [
            _cost(switch_q, pod_q, _take(alive, s, size)[0], convention) for s in range(len(alive))
        ]
        logits = -np.asarray(costs) / temperature if temperature > 0 else -np.asarray(costs)
        starts = candidates(logits, count, u)
        return lookahead(switch_q, pod_q, alive, size, convention, starts, rest)
    if repair == k.REPAIR_PAPER:
        return int(rng.random_sample() * min(q, len(alive)))
    if repair == k.REPAIR_UNIFORM:
        return int(rng.random_sample() * len(alive))
    return _greedy(switch_q, pod_q, alive, size, convention)


def anneal(
    switch_q,
    pod_q,
    convention,
    sizes,
    order,
    starts,
    iterations,
    t_max,
    t_min,
    max_remove,
    repair,
    q,
    reinsert,
    accept,
    seed,
):
    """Same arguments and result as the kernel run over all iterations from (order, starts):
    (best order, best starts, best cost). ``repair`` may also be ``("lookahead", k,
    temperature)``, the look-ahead repair, or a callable ``repair(alive, size, others,
    num_others, u, rest)``: a learned repair given the idle sequence, the job's size, the nodes
    and number of the jobs still to re-insert after it, one draw and those jobs' sizes."""
    switch_q, pod_q = switch_q.tolist(), pod_q.tolist()
    sizes = [int(s) for s in sizes]
    m, num_jobs = len(switch_q), len(sizes)
    cur_order, cur_starts = [int(v) for v in order], [int(v) for v in starts]
    blocks, _ = _decode(m, sizes, cur_order, cur_starts, num_jobs)
    cur = sum(_cost(switch_q, pod_q, blocks[j], convention) for j in range(num_jobs))
    best, best_order, best_starts = cur, list(cur_order), list(cur_starts)
    rng = None
    for it in range(iterations):
        if it % k.CHUNK == 0:
            rng = np.random.RandomState((seed * 1_000_003 + it // k.CHUNK) % 4294967296)
        temperature = t_max * (t_min / t_max) ** (it / max(iterations - 1, 1))
        count = 1 + int(rng.random_sample() * min(max_remove, num_jobs))
        picks = list(range(num_jobs))
        for i in range(count):
            r = i + int(rng.random_sample() * (num_jobs - i))
            picks[i], picks[r] = picks[r], picks[i]
        removed = set(picks[:count])
        new_order = [cur_order[s] for s in range(num_jobs) if s not in removed]
        new_starts = [cur_starts[s] for s in range(num_jobs) if s not in removed]
        out = [cur_order[s] for s in range(num_jobs) if s in removed]
        if reinsert == k.REINSERT_LARGEST_FIRST:
            out.sort(key=lambda j: (-sizes[j], j))
        else:
            out.sort()
        blocks, alive = _decode(m, sizes, new_order, new_starts, len(new_order))
        others = sum(sizes[j] for j in out)
        for i, j in enumerate(out):
            others -= sizes[j]
            s = _start(
                switch_q,
                pod_q,
                alive,
                sizes[j],
                convention,
                repair,
                q,
                rng,
                others,
                len(out) - 1 - i,
                [sizes[r] for r in out[i + 1 :]],
            )
            blocks[j], alive = _take(alive, s, sizes[j])
            new_order.append(j)
            new_starts.append(s)
        new = sum(_cost(switch_q, pod_q, blocks[j], convention) for j in range(num_jobs))
        delta = new - cur
        if delta <= 0:
            take = True
        elif accept == k.ACCEPT_METROPOLIS:
            take = rng.random_sample() < math.exp(-delta / temperature)
        else:
            take = False
        if take:
            cur, cur_order, cur_starts = new, new_order, new_starts
            if new < best:
                best, best_order, best_starts = new, list(new_order), list(new_starts)
    return best_order, best_starts, best
