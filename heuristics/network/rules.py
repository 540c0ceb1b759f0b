"""Server-choosing baselines of seed 003 (Tetris, NALB, NULB, random, exact), behind the
:class:`tjap.placement.network.ServerPolicy` protocol: ``reset(topology, seed)`` and ``choose(engine)``,
which returns one server the engine's mask allows (or a server with its paths, or None to give up).
The same episode (:class:`tjap.placement.network.Episode`, driven by
:func:`~tjap.placement.network.run_episode`) runs every one of them, and a learned policy plugs in the
same way. Build them by name with ``tjap.registry.make("network", name, **options)``.

- **tetris**: per-server cosine between the server's free vector (CPU, memory, free channels of its
  own link, each over its capacity) and what one server is asked for: the request's remaining CPU
  and memory, and the channels the new server's link will carry (max(servers chosen so far, the
  request's minimum server count - 1)), each clipped to one server's capacity. Locality penalty: once the request has a server, every
  server more than 2 hops from the previous pick (i.e. outside its rack) has its score multiplied by
  ``penalty`` = 0.9, as the published code did. Highest score wins, ties to the lowest id. Routing:
  shortest feasible path.
- **nulb**: the first server by Tetris, then a breadth-first walk of the network from it, taking
  every server met that can still contribute until the request is covered; neighbours are visited
  in id order. The whole server list is planned when the request arrives. Routing: balanced
  (bandwidth-weighted, emptier links preferred; see :mod:`tjap.placement.network.engine`).
- **nalb**: NULB, but each node's neighbours are visited in decreasing free channels of the link
  to them (ties by id).
- **random**: uniform among the servers the mask allows. Routing: shortest.
- **exact**: the CP-SAT per-request model (:func:`tjap.placement.network.solve_request`): fewest
  channels, ties to best fit; gives the request up when the model finds no plan.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from tjap.core.errors import check_number
from tjap.core.result import Status
from tjap.placement.network.engine import Engine
from tjap.placement.network.exact import solve_request
from tjap.placement.network.topology import DataCentre


class TetrisPolicy:
    """Cosine alignment of free resources with the remaining need, with a rack-locality penalty."""

    name = "tetris"
    routing = "shortest"

    def __init__(self, penalty: float = 0.9):
        check_number("tetris penalty", penalty, 0, 1, low_open=True)
        self.penalty = float(penalty)

    def reset(self, topology: DataCentre, seed: int) -> None:
        self.topology = topology

    def scores(self, engine: Engine) -> np.ndarray:
        """Score of every server (-inf where the mask forbids it)."""
        t = engine.topology
        cpu, mem, _ = engine.request
        servers_needed = math.ceil(max(cpu / t.server_cpu, mem / t.server_mem))
        net_need = max(len(engine.chosen), servers_needed - 1)
        have = np.stack(
            [
                engine.free_cpu / t.server_cpu,
                engine.free_mem / t.server_mem,
                engine.free_channels[: t.num_servers] / t.channels[0],
            ],
            axis=1,
        )
        need = np.array(
            [
                min(engine.need_cpu, t.server_cpu) / t.server_cpu,
                min(engine.need_mem, t.server_mem) / t.server_mem,
                min(net_need, t.channels[0]) / t.channels[0],
            ]
        )
        norm = np.linalg.norm(have, axis=1) * np.linalg.norm(need)
        score = np.divide(have @ need, norm, out=np.zeros(len(have)), where=norm > 0)
        if engine.chosen:
            score = np.where(t.rack_of == t.rack_of[engine.chosen[-1]], score, score * self.penalty)
        return np.where(engine.mask(), score, -np.inf)

    def choose(self, engine: Engine) -> int:
        return int(np.argmax(self.scores(engine)))


class RandomPolicy:
    """Uniform among the servers the mask allows."""

    name = "random"
    routing = "shortest"

    def reset(self, topology: DataCentre, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def choose(self, engine: Engine) -> int:
        return int(self.rng.choice(np.flatnonzero(engine.mask())))


class _PlannedPolicy:
    """A policy that plans a request's servers when it arrives and hands them out one by one."""

    routing = "shortest"

    def reset(self, topology: DataCentre, seed: int) -> None:
        self.topology, self.seed = topology, seed
        self._plan: list | None = []

    def choose(self, engine: Engine):
        if not engine.chosen:
            self._plan = self.plan(engine)
        if self._plan is None:
            return None
        return self._plan[len(engine.chosen)]

    def plan(self, engine: Engine) -> list | None:
        raise NotImplementedError


class NULBPolicy(_PlannedPolicy):
    """Tetris's first server, then a breadth-first walk taking servers as they come."""

    name = "nulb"
    routing = "balanced"

    def __init__(self, penalty: float = 0.9):
        self.tetris = TetrisPolicy(penalty)

    def neighbours(self, engine: Engine, node: int) -> list[int]:
        return sorted(engine.topology.graph.adj[node])

    def plan(self, engine: Engine) -> list[int]:
        t = engine.topology
        first = self.tetris.choose(engine)
        need_cpu, need_mem = engine.need_cpu, engine.need_mem
        free_cpu, free_mem = engine.free_cpu, engine.free_mem
        plan = [first]
        need_cpu -= min(need_cpu, int(free_cpu[first]))
        need_mem -= min(need_mem, int(free_mem[first]))
        seen = {first}
        queue = deque([first])
        while queue and (need_cpu or need_mem):
            for w in self.neighbours(engine, queue.popleft()):
                if w in seen:
                    continue
                seen.add(w)
                if w >= t.num_servers:
                    queue.append(w)
                elif (need_cpu and free_cpu[w]) or (need_mem and free_mem[w]):
                    plan.append(w)
                    need_cpu -= min(need_cpu, int(free_cpu[w]))
                    need_mem -= min(need_mem, int(free_mem[w]))
                    if not (need_cpu or need_mem):
                        break
        return plan


class NALBPolicy(NULBPolicy):
    """NULB with neighbours visited in decreasing free channels of the connecting link."""

    name = "nalb"

    def neighbours(self, engine: Engine, node: int) -> list[int]:
        adj = engine.topology.graph.adj[node]
        free = engine.free_channels
        return sorted(adj, key=lambda w: (-int(free[adj[w]["link"]]), w))


class ExactPolicy(_PlannedPolicy):
    """The CP-SAT per-request model: fewest channels, ties to best fit."""

    name = "exact"
    routing = "shortest"  # unused: every path is named by the plan

    def __init__(self, time_limit_s: float | None = 1.0, workers: int = 1):
        if time_limit_s is not None:
            check_number("exact time_limit_s", time_limit_s, 0, low_open=True)
        self.time_limit_s, self.workers = time_limit_s, int(workers)

    def reset(self, topology: DataCentre, seed: int) -> None:
        super().reset(topology, seed)
        self.stats = {s.value.lower(): 0 for s in Status} | {"solve_s": 0.0}

    def plan(self, engine: Engine, tie_cost=None):
        """The request's servers and paths, or None; ``tie_cost`` as in
        :func:`tjap.placement.network.exact.solve_request` (default best fit)."""
        cpu, mem, _ = engine.request
        result = solve_request(
            engine.topology,
            engine.free_cpu,
            engine.free_mem,
            engine.free_channels,
            cpu,
            mem,
            time_limit_s=self.time_limit_s,
            seed=self.seed,
            workers=self.workers,
            tie_cost=tie_cost,
        )
        self.stats[result.status.value.lower()] += 1
        self.stats["solve_s"] += result.runtime_s
        if not result.has_solution:
            return None
        return [(s, list(p)) for s, p in zip(result.servers, result.paths)]
