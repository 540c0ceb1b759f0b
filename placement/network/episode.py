"""The episode loop every method shares, and the protocol of a server-choosing policy.

An episode (Sec. 4.A of the paper): requests arrive one per tick. Before a request is handled,
expired requests are released; if the data centre lacks the raw CPU or memory for it, time advances
tick by tick (holding times run down) until it fits, instead of prompting the policy. Then the
policy chooses servers one at a time (masked to servers that can contribute) until the request is
accepted or fails. Measures are sampled after each request's outcome and averaged over the episode.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from placement.network.engine import Engine, Outcome
from placement.network.requests import Requests
from placement.network.topology import SPREAD, Topology
from tjap.errors import InvalidInputError


@runtime_checkable
class ServerPolicy(Protocol):
    """Chooses the next server of the request the engine is serving.

    ``routing`` is the engine's path rule for this policy ("shortest" or "balanced").
    ``choose`` returns a server with ``engine.mask()[server]`` true, or ``(server, paths)`` naming
    the candidate path per server already chosen, or None to give the request up (a failure).
    A learned policy implements the same two methods.
    """

    name: str
    routing: str

    def reset(self, topology: Topology, seed: int) -> None: ...

    def choose(self, engine: Engine) -> int | tuple[int, Sequence[int]] | None: ...


@dataclass
class EpisodeResult:
    """Per-request records of one episode and their averages (:meth:`summary`)."""

    policy: str
    topology: str
    servers: int
    seed: int
    accepted: np.ndarray        # bool per request
    num_servers: np.ndarray     # servers of each accepted request (0 if failed)
    spread: np.ndarray          # index into SPREAD per accepted request, -1 if failed
    util: np.ndarray            # (requests, 5): cpu, mem, tier1, tier2, tier3 after each request
    ticks: int
    steps: int
    runtime_s: float
    info: dict = field(default_factory=dict)

    @property
    def acceptance(self) -> float:
        return float(self.accepted.mean())

    def summary(self) -> dict:
        u = self.util.mean(axis=0)
        ok = self.spread[self.spread >= 0]
        out = {"acceptance": self.acceptance, "cpu_util": float(u[0]), "mem_util": float(u[1]),
               "net_util_tier1": float(u[2]), "net_util_tier2": float(u[3]),
               "net_util_tier3": float(u[4]), "requests": int(len(self.accepted)),
               "accepted": int(self.accepted.sum()),
               "mean_servers": float(self.num_servers[self.accepted].mean()) if ok.size else 0.0}
        for level, name in enumerate(SPREAD):
            out[f"spread_{name}"] = float((ok == level).mean()) if ok.size else 0.0
        out |= {"ticks": self.ticks, "steps": self.steps, "runtime_s": self.runtime_s}
        return out


def run_episode(topology: Topology, requests: Requests, policy: ServerPolicy, *,
                seed: int | None = None) -> EpisodeResult:
    """Serve ``requests`` on ``topology`` with ``policy`` (reset with ``seed``, default the
    requests' seed)."""
    if not isinstance(policy, ServerPolicy):
        raise InvalidInputError(f"policy must have name, routing, reset() and choose(), "
                                f"got {type(policy).__name__}")
    total_cpu, total_mem = topology.capacity
    if len(requests) and (requests.cpu.max() > total_cpu or requests.mem.max() > total_mem):
        raise InvalidInputError(f"a request exceeds the data centre ({total_cpu} CPU, {total_mem} "
                                "memory); generate requests for this topology")
    seed = requests.seed if seed is None else int(seed)
    start = time.perf_counter()
    engine = Engine(topology, routing=policy.routing)
    policy.reset(topology, seed)
    count = len(requests)
    accepted = np.zeros(count, bool)
    num_servers = np.zeros(count, np.int64)
    spread = np.full(count, -1, np.int64)
    util = np.zeros((count, 5))
    steps = 0
    for i in range(count):
        engine.arrive(int(requests.cpu[i]), int(requests.mem[i]), int(requests.holding[i]),
                      first=i == 0)
        outcome = Outcome.PENDING
        while outcome == Outcome.PENDING:
            choice = policy.choose(engine)
            steps += 1
            if choice is None:
                outcome = engine.abort()
            elif isinstance(choice, tuple):
                server, paths = choice
                chosen = engine.chosen + [server]
                outcome = engine.step(server, paths)
            else:
                chosen = engine.chosen + [choice]
                outcome = engine.step(choice)
        if outcome == Outcome.ACCEPTED:
            accepted[i] = True
            num_servers[i] = len(chosen)
            spread[i] = topology.spread(chosen)
        u = engine.utilisation()
        util[i] = (u["cpu"], u["mem"], u["tier1"], u["tier2"], u["tier3"])
    return EpisodeResult(getattr(policy, "name", type(policy).__name__), topology.name,
                         topology.num_servers, seed, accepted, num_servers, spread, util,
                         engine.now + 1, steps, time.perf_counter() - start,
                         info=dict(getattr(policy, "stats", {}) or {}))


def evaluate(topology: Topology, make_policy: Callable[[], ServerPolicy], *, requests: int = 128,
             seeds: int = 5, seed_base: int = 0, max_servers: int = 8, load: float = 0.95,
             progress: Callable | None = None) -> dict:
    """Mean of :meth:`EpisodeResult.summary` over episodes seeded ``seed_base .. + seeds - 1``
    (requests and policy seeded alike, so every method sees the same requests), plus the
    per-seed summaries under ``"episodes"``."""
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or seeds < 1:
        raise InvalidInputError(f"seeds must be a positive integer, got {seeds!r}")
    runs, name = [], ""
    seed_list = range(int(seed_base), int(seed_base) + int(seeds))
    for seed in (progress(seed_list) if progress else seed_list):
        reqs = Requests.generate(topology, requests, seed, max_servers=max_servers, load=load)
        result = run_episode(topology, reqs, make_policy(), seed=seed)
        name = result.policy
        runs.append(result.summary() | {"seed": seed, "offered_load": reqs.offered_load}
                    | ({"info": result.info} if result.info else {}))
    keys = [k for k, v in runs[0].items() if isinstance(v, (int, float)) and k != "seed"]
    mean = {k: float(np.mean([r[k] for r in runs])) for k in keys}
    mean["requests"] = int(requests)
    return mean | {"policy": name, "topology": topology.name,
                   "servers": topology.num_servers, "seeds": int(seeds),
                   "seed_base": int(seed_base), "episodes": runs}
