"""An exact per-request model (OR-Tools CP-SAT): the servers and one path per server pair that
provision a request with the fewest channels.

The model, per request with candidate servers V (those with free CPU or memory): choose servers
S of V covering the request, and for every pair of S one of its k candidate paths whose links all
have a free channel, reserving one channel per link per path, with the fewest channels in all.

It is solved in an aggregated form that is exact for these topologies. A server's own link is a
leaf, so it carries exactly one path to every other chosen server (|S| - 1 channels, whatever the
paths), and the switch links a pair's path uses depend only on the two racks and the candidate
index. So the variables are x_v (v in S), m = |S|, n_r (chosen servers in rack r), p_ab = n_a n_b
(pairs between racks a < b) and z_abj (how many of those pairs use candidate j):

    sum_v free_cpu_v x_v >= cpu,   sum_v free_mem_v x_v >= mem           (coverage)
    m - 1 <= free_channels_v        if x_v                              (v's own link)
    sum_j z_abj = p_ab = n_a n_b                                         (one path per pair)
    sum of z over candidates through switch link l <= free_channels_l    (switch channels)
    minimise  W * (m^2 - m + sum len_abj z_abj)  +  sum_v (free_cpu_v + free_mem_v) x_v

(len_abj: switch links of the candidate). Any assignment of the z_abj paths to the n_a n_b server
pairs uses the same channels, so the plan hands them out in order. The second objective term breaks
ties towards best fit (fuller servers) and W exceeds it, so the channel count is minimised first.
An optimal server set is inclusion-minimal (dropping a server saves its paths), so served one at a
time in any order each server contributes (the engine's min(free, still needed) rule never meets a
useless server) and the request completes exactly with the last one. A request that one server can
hold needs no channels; it is answered directly (best fit). The tests check the model against a
brute force over server sets and per-pair paths on tiny topologies.

The model is myopic (one request at a time): exact for the request, not for the episode.

Mid-request (``fixed``: the servers already chosen, whose resources and paths the free state
already holds), the same model completes the request: x_v = 1 for the fixed servers (they give
nothing more), only new pairs count (p_ab = n_a n_b - f_a f_b, with f the fixed servers per rack),
a fixed server's own link carries one path to each new server (m - |F| <= free_channels), and the
plan lists the new servers only, ``paths[m]`` naming a candidate per server of fixed + servers[:m].
An optimal completion of an optimal set's subset is the rest of that set (the fixed part's cost is
a constant), which is what a policy imitating the exact model learns from.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tjap.core import backends as _backends
from tjap.core.errors import InvalidInputError
from tjap.core.result import Record, Status
from tjap.placement.network.topology import DataCentre


@dataclass(frozen=True)
class RequestPlan(Record):
    """Servers in the order to choose them, and ``paths[m][i]``: the candidate path index of the
    pair (servers[i], servers[m]) for i < m. ``channels`` counts the channels the plan reserves;
    ``bound`` (when the solver proves one) is a lower bound on it. ``method`` is what chose the
    servers (``"exact"``: :func:`solve_request`; else the policy's name) and ``seed`` its seed.
    The fields every result shares (:data:`tjap.core.result.COMMON_FIELDS`) are ``method``,
    ``status``, ``objective`` (the channels reserved, lower is better; None without a
    solution), ``runtime_s`` and ``seed``. ``to_dict()`` / ``to_json()`` write them and every
    field (servers and paths as lists, the status by name)."""

    servers: tuple
    paths: tuple
    channels: int
    status: Status
    runtime_s: float
    bound: int | None = None
    method: str = "exact"
    seed: int = 0

    @property
    def has_solution(self) -> bool:
        return len(self.servers) > 0

    @property
    def objective(self) -> int | None:
        """The channels the plan reserves; None when it has no servers."""
        return self.channels if self.has_solution else None

    def is_feasible(
        self, topology: DataCentre, free_cpu, free_mem, free_channels, cpu: int, mem: int
    ) -> bool:
        """Whether the plan covers the request and its paths fit the free channels."""
        servers = list(self.servers)
        if not servers or len(set(servers)) != len(servers):
            return False
        if (
            sum(int(free_cpu[s]) for s in servers) < cpu
            or sum(int(free_mem[s]) for s in servers) < mem
        ):
            return False
        used = np.zeros(topology.num_links, np.int64)
        channels = 0
        for m in range(1, len(servers)):
            if len(self.paths[m]) != m:
                return False
            for i in range(m):
                candidates = topology.server_paths(servers[i], servers[m])
                j = self.paths[m][i]
                if not 0 <= j < len(candidates):
                    return False
                np.add.at(used, candidates[j], 1)
                channels += len(candidates[j])
        return bool((used <= np.asarray(free_channels)).all()) and channels == self.channels


def solve_request(
    topology: DataCentre,
    free_cpu,
    free_mem,
    free_channels,
    cpu: int,
    mem: int,
    *,
    time_limit_s: float | None = 1.0,
    seed: int = 0,
    workers: int = 1,
    fixed=(),
    tie_cost=None,
) -> RequestPlan:
    """The fewest-channel plan for a request of ``cpu`` and ``mem`` units on the given free state.

    ``fixed``: servers already chosen for this request (their paths already reserved in
    ``free_channels``); the plan then completes the request with new servers (``cpu`` and ``mem``
    being what is still needed), see the module notes.

    ``tie_cost``: non-negative integers, one per server, that break ties between plans of the
    fewest channels (lower is preferred); default each server's free CPU + memory (best fit).

    Returns a plan with status OPTIMAL, FEASIBLE (time limit hit with a solution), INFEASIBLE or
    TIME_LIMIT (no solution found in time; ``servers`` is empty).
    """
    start = time.perf_counter()
    n = topology.num_servers
    free_cpu = np.asarray(free_cpu, dtype=np.int64)
    free_mem = np.asarray(free_mem, dtype=np.int64)
    free_channels = np.asarray(free_channels, dtype=np.int64)
    if (
        free_cpu.shape != (n,)
        or free_mem.shape != (n,)
        or free_channels.shape != (topology.num_links,)
    ):
        raise InvalidInputError(
            f"free_cpu and free_mem need {n} entries and free_channels {topology.num_links}"
        )
    fixed = [int(v) for v in fixed]
    if len(set(fixed)) != len(fixed) or any(not 0 <= v < n for v in fixed):
        raise InvalidInputError(f"fixed must name distinct servers in [0, {n}), got {fixed}")
    if min(cpu, mem) < 1 and not (fixed and min(cpu, mem) >= 0 and cpu + mem >= 1):
        raise InvalidInputError(
            f"request cpu and mem must be >= 1 (mid-request, with fixed "
            f"servers: >= 0, one of them >= 1), got {cpu}, {mem}"
        )
    if tie_cost is None:
        tie_cost = free_cpu + free_mem
    tie_cost = np.asarray(tie_cost)
    if (
        tie_cost.shape != (n,)
        or not np.issubdtype(tie_cost.dtype, np.integer)
        or (tie_cost < 0).any()
    ):
        raise InvalidInputError(f"tie_cost must hold {n} non-negative integers, one per server")
    tie_cost = tie_cost.astype(np.int64)
    if time_limit_s is not None and not time_limit_s > 0:
        raise InvalidInputError(f"time_limit_s must be positive or None, got {time_limit_s!r}")

    def plan(servers, paths, channels, status, bound=None):
        return RequestPlan(
            tuple(int(s) for s in servers),
            tuple(tuple(int(j) for j in p) for p in paths),
            int(channels),
            Status(status),
            time.perf_counter() - start,
            bound,
            seed=int(seed),
        )

    if fixed:  # the fixed servers give nothing more
        free_cpu, free_mem = free_cpu.copy(), free_mem.copy()
        free_cpu[fixed] = free_mem[fixed] = 0
    if free_cpu.sum() < cpu or free_mem.sum() < mem:
        return plan((), (), 0, Status.INFEASIBLE)
    single = np.flatnonzero((free_cpu >= cpu) & (free_mem >= mem))
    if single.size and not fixed:
        best = single[np.argmin(tie_cost[single])]
        return plan((best,), ((),), 0, Status.OPTIMAL, 0)

    cp_model = _backends.require("ortools.sat.python.cp_model")
    t = topology
    model = cp_model.CpModel()
    is_fixed = np.zeros(n, bool)
    is_fixed[fixed] = True
    V = np.flatnonzero((free_cpu > 0) | (free_mem > 0) | is_fixed).tolist()
    x = {v: model.NewBoolVar(f"x{v}") for v in V}
    for v in fixed:
        model.Add(x[v] == 1)
    model.Add(sum(int(free_cpu[v]) * x[v] for v in V) >= cpu)
    model.Add(sum(int(free_mem[v]) * x[v] for v in V) >= mem)
    m = model.NewIntVar(0, len(V), "m")
    model.Add(m == sum(x.values()))
    for v in V:  # v's own link carries one (new) path to each other chosen server
        if is_fixed[v]:
            model.Add(m <= int(free_channels[v]) + len(fixed))
        else:
            model.Add(m <= int(free_channels[v]) + 1).OnlyEnforceIf(x[v])
    count, size, fixed_in = {}, {}, {}
    for r in range(t.num_racks):
        members = [x[v] for v in V if t.rack_of[v] == r]
        if members:
            size[r] = len(members)
            fixed_in[r] = sum(1 for v in fixed if t.rack_of[v] == r)
            count[r] = model.NewIntVar(0, len(members), f"n{r}")
            model.Add(count[r] == sum(members))
    # pairs of servers in different racks a < b use the switch links of one of the racks' paths;
    # z[a, b, j] of them use candidate j
    z, through, switch_cost = {}, {}, []
    racks = sorted(count)
    for i, a in enumerate(racks):
        for b in racks[i + 1 :]:
            hi = size[a] * size[b]
            all_pairs = model.NewIntVar(0, hi, f"q{a}_{b}")
            model.AddMultiplicationEquality(all_pairs, [count[a], count[b]])
            pairs = all_pairs - fixed_in[a] * fixed_in[b]  # the fixed pairs hold their paths
            terms = []
            for j in range(t.rack_path_count[a, b]):
                links = t.rack_path_len[a, b, j]
                path = t.rack_paths[a, b, j, :links]
                if (free_channels[path] < 1).any():
                    continue
                z[a, b, j] = var = model.NewIntVar(0, hi, f"z{a}_{b}_{j}")
                terms.append(var)
                switch_cost.append(int(links) * var)
                for link in path.tolist():
                    through.setdefault(link, []).append(var)
            model.Add(sum(terms) == pairs) if terms else model.Add(pairs == 0)
    for link, terms in through.items():
        model.Add(sum(terms) <= int(free_channels[link]))
    # every pair uses both servers' links: 2 * m(m-1)/2 = m*m - m channels
    m_sq = model.NewIntVar(0, len(V) ** 2, "m_sq")
    model.AddMultiplicationEquality(m_sq, [m, m])
    fit = {v: 0 if is_fixed[v] else int(tie_cost[v]) for v in V}
    weight = 1 + sum(fit.values())
    model.Minimize(weight * (m_sq - m + sum(switch_cost)) + sum(fit[v] * x[v] for v in V))

    solver = _backends.cpsat_solver(time_limit_s, seed, workers)
    status, found = _backends.cpsat_solve(solver, model)  # a Ctrl-C raises, never a result
    if found and status is Status.TIME_LIMIT:
        status = Status.FEASIBLE  # this module's convention (see above)
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return plan((), (), 0, status)
    servers = fixed + [v for v in V if solver.BooleanValue(x[v]) and not is_fixed[v]]
    left = {key: solver.Value(var) for key, var in z.items()}
    paths, channels = [()] * max(1, len(fixed)), 0
    for k in range(max(1, len(fixed)), len(servers)):
        row = []
        for i in range(k):
            a, b = sorted((int(t.rack_of[servers[i]]), int(t.rack_of[servers[k]])))
            j = 0
            if a != b:
                j = next(j for j in range(t.k) if left.get((a, b, j), 0) > 0)
                left[a, b, j] -= 1
            row.append(j)
            channels += 2 + int(t.rack_path_len[a, b, j])
        paths.append(tuple(row))
    bound = int(solver.BestObjectiveBound() // weight) - (len(fixed) ** 2 - len(fixed))
    if fixed:
        servers, paths = servers[len(fixed) :], paths[len(fixed) :]
    return plan(servers, paths, channels, status, bound)
