"""Numba kernels of the network engine. The public wrapper is :mod:`tjap.placement.network.engine`.

A server-to-server path is ``[u, *rack_paths[rack u, rack v, j], v]`` (server s's link id is s).
"""

import numpy as np

from tjap.core.jit import njit

#: Routing rules: how one of the k candidate paths of a server pair is chosen.
ROUTE_SHORTEST = 0  # the first candidate (fewest hops) whose links all have a free channel
ROUTE_BALANCED = 1  # the feasible candidate of least sum over links of capacity / free channels
ROUTE_GIVEN = 2  # the candidate named by the caller, if feasible


@njit
def _feasible(u, v, ra, rb, j, rack_paths, rack_path_len, free):
    if free[u] < 1 or free[v] < 1:
        return False
    for i in range(rack_path_len[ra, rb, j]):
        if free[rack_paths[ra, rb, j, i]] < 1:
            return False
    return True


@njit
def _cost(u, v, ra, rb, j, rack_paths, rack_path_len, free, capacity):
    cost = capacity[u] / free[u] + capacity[v] / free[v]
    for i in range(rack_path_len[ra, rb, j]):
        link = rack_paths[ra, rb, j, i]
        cost += capacity[link] / free[link]
    return cost


@njit
def connect(
    v,
    chosen,
    n_chosen,
    rack_of,
    rack_paths,
    rack_path_len,
    rack_path_count,
    capacity,
    free,
    routing,
    given,
    out_links,
    out_paths,
):
    """Connect server ``v`` to each of ``chosen[:n_chosen]`` in order, reserving one channel per
    link of one candidate path per pair (chosen by ``routing``; ``given[i]`` is the candidate for
    pair i under ROUTE_GIVEN).

    All or nothing: returns the number of link ids written to ``out_links`` (with the candidate
    index of each pair in ``out_paths[:n_chosen]``), or -1 - i if pair i has no feasible
    candidate, in which case every channel this call reserved is returned to ``free``.
    """
    n_out = 0
    rb = rack_of[v]
    for i in range(n_chosen):
        u = chosen[i]
        ra = rack_of[u]
        best = -1
        if routing == ROUTE_GIVEN:
            j = given[i]
            if 0 <= j < rack_path_count[ra, rb] and _feasible(
                u, v, ra, rb, j, rack_paths, rack_path_len, free
            ):
                best = j
        else:
            best_cost = np.inf
            for j in range(rack_path_count[ra, rb]):
                if not _feasible(u, v, ra, rb, j, rack_paths, rack_path_len, free):
                    continue
                if routing == ROUTE_SHORTEST:
                    best = j
                    break
                cost = _cost(u, v, ra, rb, j, rack_paths, rack_path_len, free, capacity)
                if cost < best_cost - 1e-12:
                    best, best_cost = j, cost
        if best < 0:
            for t in range(n_out):
                free[out_links[t]] += 1
            return -1 - i
        out_paths[i] = best
        free[u] -= 1
        out_links[n_out] = u
        n_out += 1
        for t in range(rack_path_len[ra, rb, best]):
            link = rack_paths[ra, rb, best, t]
            free[link] -= 1
            out_links[n_out] = link
            n_out += 1
        free[v] -= 1
        out_links[n_out] = v
        n_out += 1
    return n_out


@njit
def release(free, links, count):
    """Return one channel to ``free`` for each of ``links[:count]``."""
    for t in range(count):
        free[links[t]] += 1
