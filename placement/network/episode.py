"""The episode every method shares, one decision at a time, and the protocol of a server-choosing
policy.

An episode (Sec. 4.A of the paper): requests arrive one per tick. Before a request is handled,
expired requests are released; if the data centre lacks the raw CPU or memory for it, time advances
tick by tick (holding times run down) until it fits, instead of prompting the policy. Then the
policy chooses servers one at a time (masked to servers that can contribute) until the request is
accepted or fails. Measures are sampled after each request's outcome and averaged over the episode.

:class:`Episode` is that loop as an object: :meth:`Episode.step` takes one decision and moves on
to the next request when the current one ends. :func:`run_episode` drives it with a policy,
:func:`evaluate` over several seeds, and the gymnasium environment
(:class:`tjap.learned.network.env.NetworkAllocEnv`) with an agent's actions; :func:`serve_request`
serves one request on any engine state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.core.renames import renamed
from tjap.core.result import Measurement, Status, plain
from tjap.placement.network.engine import Engine, Outcome
from tjap.placement.network.exact import RequestPlan
from tjap.placement.network.requests import Requests
from tjap.placement.network.topology import SPREAD, DataCentre

# the old names, kept for one release (they warn): tjap.core.renames
__getattr__ = renamed(__name__, {"Evaluation": "NetworkEvaluation"})

#: A policy's decision: a server, ``(server, paths)`` naming the candidate path per server already
#: chosen, or None to give the request up.
Choice = int | tuple[int, Sequence[int]] | None


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

    def reset(self, topology: DataCentre, seed: int) -> None: ...

    def choose(self, engine: Engine) -> Choice: ...


def take(engine: Engine, choice: Choice) -> Outcome:
    """Apply one decision to the request ``engine`` is serving: None gives it up (everything it
    holds is released), a server joins it over the engine's routing, ``(server, paths)`` over the
    named candidate paths."""
    if choice is None:
        return engine.abort()
    if isinstance(choice, tuple):
        server, paths = choice
        return engine.step(server, paths)
    return engine.step(choice)


def _check_policy(policy) -> None:
    if not isinstance(policy, ServerPolicy):
        raise InvalidInputError(
            f"policy must have name, routing, reset() and choose(), got {type(policy).__name__}"
        )


@dataclass(frozen=True)
class EpisodeResult(Measurement):
    """Per-request records of one episode; :meth:`summary` gives their averages.

    The fields every result shares (:data:`tjap.core.result.COMMON_FIELDS`): ``method`` (the
    policy's name, an alias of ``policy``), ``status`` (FEASIBLE: the episode ran its course),
    ``objective`` (the acceptance ratio, :attr:`acceptance`; higher is better), ``runtime_s``
    and ``seed``.

    Attributes
    ----------
    accepted : ndarray of bool
        Whether each request was accepted.
    num_servers : ndarray of int
        Servers of each accepted request (0 if it failed).
    spread : ndarray of int
        Index into :data:`tjap.placement.network.SPREAD` per accepted request, -1 if it failed.
    utilization : ndarray, (requests, 5)
        CPU, memory and tier-1, -2, -3 channel utilization after each request's outcome.
    ticks, steps : int
        Ticks the episode lasted and decisions taken.
    info : dict
        The policy's own statistics (``policy.stats``, e.g. the exact model's solve counts).
    """

    policy: str
    topology: str
    servers: int
    seed: int
    offered_load: float
    accepted: np.ndarray
    num_servers: np.ndarray
    spread: np.ndarray
    utilization: np.ndarray
    ticks: int
    steps: int
    runtime_s: float
    info: dict = field(default_factory=dict)

    @property
    def acceptance(self) -> float:
        """The fraction of requests accepted."""
        return float(self.accepted.mean())

    @property
    def objective(self) -> float:
        """The acceptance ratio (:attr:`acceptance`)."""
        return self.acceptance

    def summary(self) -> dict:
        """The episode's figures: acceptance, mean utilizations, counts (integers), how spread
        the accepted requests were (fractions per :data:`~tjap.placement.network.SPREAD` level), its
        seed and offered load, and ``info`` when the policy keeps statistics."""
        u = self.utilization.mean(axis=0)
        ok = self.spread[self.spread >= 0]
        out = {
            "seed": self.seed,
            "acceptance": self.acceptance,
            "cpu_utilization": float(u[0]),
            "mem_utilization": float(u[1]),
            "net_utilization_tier1": float(u[2]),
            "net_utilization_tier2": float(u[3]),
            "net_utilization_tier3": float(u[4]),
            "requests": int(len(self.accepted)),
            "accepted": int(self.accepted.sum()),
            "mean_servers": float(self.num_servers[self.accepted].mean()) if ok.size else 0.0,
        }
        for level, name in enumerate(SPREAD):
            out[f"spread_{name}"] = float((ok == level).mean()) if ok.size else 0.0
        out |= {
            "ticks": self.ticks,
            "steps": self.steps,
            "runtime_s": self.runtime_s,
            "offered_load": self.offered_load,
        }
        return plain(out | ({"info": self.info} if self.info else {}))


class Episode:
    """One episode of ``requests`` on ``topology``, advanced one decision at a time.

    The first request has arrived when the episode is built. :meth:`step` applies a decision to
    the request being served (see :func:`take`); when that request ends (accepted or failed) its
    figures are recorded and the next request arrives (time moves on, see
    :meth:`Engine.arrive`). ``engine`` is the state a policy reads; ``index`` the request being
    served (``len(requests)`` once :attr:`done`).

    >>> from tjap.placement.network import Requests, paper_topology
    >>> topo = paper_topology("8:1-16")
    >>> episode = Episode(topo, Requests.generate(topo, 4, seed=0))
    >>> while not episode.done:
    ...     outcome = episode.step(int(episode.engine.mask().argmax()))
    >>> episode.result("first allowed server").summary()["requests"]
    4
    """

    def __init__(
        self,
        topology: DataCentre,
        requests: Requests,
        *,
        routing: str = "shortest",
        seed: int | None = None,
    ):
        if not isinstance(requests, Requests):
            raise InvalidInputError(
                f"requests must be tjap.placement.network.Requests, got {type(requests).__name__}"
            )
        self.engine = Engine(topology, routing=routing)
        total_cpu, total_mem = topology.capacity
        if len(requests) and (requests.cpu.max() > total_cpu or requests.mem.max() > total_mem):
            raise InvalidInputError(
                f"a request exceeds the data centre ({total_cpu} CPU, "
                f"{total_mem} memory); generate requests for this topology"
            )
        self.topology, self.requests = topology, requests
        self.seed = requests.seed if seed is None else int(seed)
        count = len(requests)
        self.accepted = np.zeros(count, bool)
        self.num_servers = np.zeros(count, np.int64)
        self.spread = np.full(count, -1, np.int64)
        self.utilization = np.zeros((count, 5))
        self.index = 0
        self.steps = 0
        if count:
            self._arrive()

    @property
    def done(self) -> bool:
        """Whether every request has been served."""
        return self.index >= len(self.requests)

    @property
    def accepted_count(self) -> int:
        """Requests accepted so far."""
        return int(self.accepted[: self.index].sum())

    def _arrive(self) -> None:
        r, i = self.requests, self.index
        self.engine.arrive(int(r.cpu[i]), int(r.mem[i]), int(r.holding[i]), first=i == 0)

    def step(self, choice: Choice) -> Outcome:
        """Apply one decision to the current request; returns what it did to that request."""
        if self.done:
            raise InvalidInputError("the episode is over: every request has been served")
        self.steps += 1
        server = choice[0] if isinstance(choice, tuple) else choice
        chosen = self.engine.chosen + [server]
        outcome = take(self.engine, choice)
        if outcome == Outcome.PENDING:
            return outcome
        i = self.index
        if outcome == Outcome.ACCEPTED:
            self.accepted[i] = True
            self.num_servers[i] = len(chosen)
            self.spread[i] = self.topology.spread(chosen)
        u = self.engine.utilisation()
        self.utilization[i] = (u["cpu"], u["mem"], u["tier1"], u["tier2"], u["tier3"])
        self.index += 1
        if not self.done:
            self._arrive()
        return outcome

    def result(
        self, policy: str, runtime_s: float = 0.0, info: dict | None = None
    ) -> EpisodeResult:
        """The records so far as an :class:`EpisodeResult` of ``policy`` (its name)."""
        t = self.topology
        return EpisodeResult(
            policy,
            t.name,
            t.num_servers,
            self.seed,
            self.requests.offered_load,
            self.accepted.copy(),
            self.num_servers.copy(),
            self.spread.copy(),
            self.utilization.copy(),
            self.engine.now + 1,
            self.steps,
            runtime_s,
            dict(info or {}),
        )


def run_episode(
    topology: DataCentre, requests: Requests, policy: ServerPolicy, *, seed: int | None = None
) -> EpisodeResult:
    """Serve ``requests`` on ``topology`` with ``policy`` (reset with ``seed``, default the
    requests' seed)."""
    _check_policy(policy)
    start = time.perf_counter()
    episode = Episode(topology, requests, routing=policy.routing, seed=seed)
    policy.reset(topology, episode.seed)
    while not episode.done:
        episode.step(policy.choose(episode.engine))
    return episode.result(
        getattr(policy, "name", type(policy).__name__),
        time.perf_counter() - start,
        getattr(policy, "stats", {}) or {},
    )


def run_seeded(
    topology: DataCentre,
    make_policy: Callable[[], ServerPolicy],
    seed: int,
    *,
    requests: int = 128,
    max_servers: int = 8,
    load: float = 0.95,
) -> EpisodeResult:
    """One episode of :func:`evaluate`: ``requests`` generated with ``seed`` and a fresh policy
    reset with it."""
    reqs = Requests.generate(topology, requests, seed, max_servers=max_servers, load=load)
    return run_episode(topology, reqs, make_policy(), seed=seed)


@dataclass(frozen=True)
class NetworkEvaluation(Measurement):
    """Means over the episodes of one policy on one topology (:func:`evaluate`).

    The fractions (``acceptance``, the utilizations, the ``spread_*`` shares) and ``offered_load``
    are means over the episodes; counts averaged over episodes say so in their names
    (``mean_accepted``, ``mean_ticks``, ``mean_steps``; ``mean_servers`` is servers per accepted
    request), as does ``mean_runtime_s`` (seconds per episode). ``requests`` is per episode.
    ``episodes`` holds each :class:`EpisodeResult`; :meth:`to_dict` writes their summaries.

    The fields every result shares (:data:`tjap.core.result.COMMON_FIELDS`), aliases of its own:
    ``method`` (``policy``), ``status`` (FEASIBLE), ``objective`` (the mean acceptance ratio,
    ``acceptance``; higher is better), ``runtime_s`` (seconds of all the episodes,
    ``mean_runtime_s`` x ``seeds``) and ``seed`` (the first episode's, ``seed_base``).
    """

    policy: str
    topology: str
    servers: int
    requests: int
    seeds: int
    seed_base: int
    acceptance: float
    cpu_utilization: float
    mem_utilization: float
    net_utilization_tier1: float
    net_utilization_tier2: float
    net_utilization_tier3: float
    mean_servers: float
    spread_server: float
    spread_rack: float
    spread_cluster: float
    spread_global: float
    mean_accepted: float
    mean_ticks: float
    mean_steps: float
    mean_runtime_s: float
    offered_load: float
    episodes: tuple = ()

    #: NetworkEvaluation field -> the episode summary key it averages.
    MEANS = {
        "acceptance": "acceptance",
        "cpu_utilization": "cpu_utilization",
        "mem_utilization": "mem_utilization",
        "net_utilization_tier1": "net_utilization_tier1",
        "net_utilization_tier2": "net_utilization_tier2",
        "net_utilization_tier3": "net_utilization_tier3",
        "mean_servers": "mean_servers",
        **{f"spread_{name}": f"spread_{name}" for name in SPREAD},
        "mean_accepted": "accepted",
        "mean_ticks": "ticks",
        "mean_steps": "steps",
        "mean_runtime_s": "runtime_s",
        "offered_load": "offered_load",
    }

    @classmethod
    def of(cls, episodes: Sequence[EpisodeResult]) -> "NetworkEvaluation":
        """The means of ``episodes`` (of one policy on one topology, seeds in order)."""
        if not episodes:
            raise InvalidInputError("an evaluation needs at least one episode")
        first = episodes[0]
        runs = [e.summary() for e in episodes]
        means = {name: float(np.mean([r[key] for r in runs])) for name, key in cls.MEANS.items()}
        return cls(
            first.policy,
            first.topology,
            first.servers,
            runs[0]["requests"],
            len(episodes),
            first.seed,
            **means,
            episodes=tuple(episodes),
        )

    @property
    def objective(self) -> float:
        """The mean acceptance ratio (``acceptance``)."""
        return self.acceptance

    @property
    def runtime_s(self) -> float:
        """Seconds of all the episodes (``mean_runtime_s`` x ``seeds``)."""
        return self.mean_runtime_s * self.seeds

    @property
    def seed(self) -> int:
        """The first episode's seed (``seed_base``)."""
        return self.seed_base

    def to_dict(self) -> dict:
        """The common fields, every field, the episodes as their :meth:`EpisodeResult.summary`."""
        return self.common() | self.summary() | {"episodes": [e.summary() for e in self.episodes]}

    def summary(self) -> dict:
        """The means and what they are of, without the episodes."""
        return plain({f.name: getattr(self, f.name) for f in fields(self) if f.name != "episodes"})


def evaluate(
    topology: DataCentre,
    make_policy: Callable[[], ServerPolicy],
    *,
    requests: int = 128,
    seeds: int = 5,
    seed_base: int = 0,
    max_servers: int = 8,
    load: float = 0.95,
    progress: Callable | None = None,
) -> NetworkEvaluation:
    """Means over episodes seeded ``seed_base .. + seeds - 1`` (requests and policy seeded alike,
    so every method sees the same requests), see :class:`NetworkEvaluation`."""
    check_int("seeds", seeds, 1)
    seed_list = range(int(seed_base), int(seed_base) + int(seeds))
    return NetworkEvaluation.of(
        [
            run_seeded(
                topology, make_policy, seed, requests=requests, max_servers=max_servers, load=load
            )
            for seed in (progress(seed_list) if progress else seed_list)
        ]
    )


def serve_request(
    engine: Engine, policy: ServerPolicy, cpu: int, mem: int, holding: int, *, seed: int = 0
) -> RequestPlan | None:
    """Serve one request of ``cpu`` and ``mem`` units for ``holding`` ticks on ``engine``'s
    current state with ``policy`` (reset with ``seed``), over the policy's routing. The engine
    keeps the request when it is accepted.

    Returns the plan (servers in order, the candidate path per earlier server, so that replaying
    it with :meth:`Engine.step` on the same state gives the same result, and the channels it
    reserved; method the policy's name, status FEASIBLE: a policy proves nothing; objective the
    channels), or None when the request failed (the engine is then as before).
    """
    _check_policy(policy)
    start = time.perf_counter()
    before = int(engine.free_channels.sum())
    policy.reset(engine.topology, int(seed))
    engine.begin(cpu, mem, holding)
    routing, engine.routing = engine.routing, policy.routing
    servers, paths, outcome = [], [], Outcome.PENDING
    try:
        while outcome == Outcome.PENDING:
            choice = policy.choose(engine)
            outcome = take(engine, choice)
            if outcome != Outcome.FAILED:
                servers.append(int(choice[0] if isinstance(choice, tuple) else choice))
                paths.append(tuple(int(j) for j in engine.last_paths))
    finally:
        engine.routing = routing
        if engine.request is not None:  # the policy raised mid-request: leave no half request
            engine.abort()
    if outcome != Outcome.ACCEPTED:
        return None
    return RequestPlan(
        tuple(servers),
        tuple(paths),
        before - int(engine.free_channels.sum()),
        Status.FEASIBLE,
        time.perf_counter() - start,
        method=getattr(policy, "name", type(policy).__name__),
        seed=int(seed),
    )
