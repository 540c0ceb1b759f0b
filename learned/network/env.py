"""Choosing servers for seed 003's requests, one server per step.

An episode serves ``requests`` requests (the paper trains on 32) on one topology (drawn per episode
from ``topologies``, all of one size, so one observation shape): it is a
:class:`tjap.placement.network.Episode`, the same object :func:`tjap.placement.network.run_episode` drives,
and one env step is one :meth:`~tjap.placement.network.Episode.step`. Reward (the paper, Sec. 3.B): +10
when a step completes a request, -10 when it fails it, 0 otherwise. An action the engine's mask
forbids (only a caller ignoring ``action_masks()`` sends one) fails the request.

Observations are :class:`tjap.learned.network.features.FeatureBuilder`'s ``(nodes + 1) x 16`` array;
the topology's structure is not in them (the policy holds it). Request streams are
:meth:`tjap.placement.network.Requests.generate` with seeds drawn from the env's generator in
[1000, 2^31), apart from the evaluation seeds 0..999.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.learned.network.features import FeatureBuilder
from tjap.placement.network import DataCentre, Episode, Outcome, Requests, paper_topology

ACCEPT_REWARD, FAIL_REWARD = 10.0, -10.0


class NetworkAllocEnv(gym.Env):
    """Masked discrete actions 0..servers-1 (the next server); use ``action_masks()``."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        topologies=("8:1-16",),
        *,
        servers: int = 64,
        requests: int = 32,
        routing: str = "shortest",
        max_servers: int = 8,
        load: float = 0.95,
    ):
        if isinstance(topologies, (str, DataCentre)):
            topologies = (topologies,)
        topologies = [
            t if isinstance(t, DataCentre) else paper_topology(t, servers) for t in topologies
        ]
        if not topologies:
            raise InvalidInputError("NetworkAllocEnv needs at least one topology")
        shapes = {(t.num_servers, t.graph.number_of_nodes()) for t in topologies}
        if len(shapes) > 1:
            raise InvalidInputError(
                "all topologies of one NetworkAllocEnv must have the same "
                f"servers and switches, got {sorted(shapes)}"
            )
        check_int("requests per episode", requests, 1)
        self.topologies = topologies
        self.requests_per_episode = int(requests)
        self.routing, self.max_servers, self.load = routing, max_servers, load
        self.builders = [FeatureBuilder(t, max_servers=max_servers, load=load) for t in topologies]
        self.observation_space = gym.spaces.Box(
            -np.inf, np.inf, self.builders[0].shape, dtype=np.float32
        )
        self.action_space = gym.spaces.Discrete(topologies[0].num_servers)
        self.topology, self.builder = topologies[0], self.builders[0]
        none = np.zeros(0, np.int64)  # an empty episode until reset(); it also checks routing
        self.episode = Episode(self.topology, Requests(none, none, none), routing=routing)

    @property
    def engine(self):
        """The engine of the current episode (what a policy reads)."""
        return self.episode.engine

    @property
    def stream(self) -> Requests:
        """The current episode's requests."""
        return self.episode.requests

    # -- episode ---------------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        which = int(self.np_random.integers(len(self.topologies)))
        self.topology, self.builder = self.topologies[which], self.builders[which]
        stream = Requests.generate(
            self.topology,
            self.requests_per_episode,
            int(self.np_random.integers(1000, 2**31)),
            max_servers=self.max_servers,
            load=self.load,
        )
        self.episode = Episode(self.topology, stream, routing=self.routing)
        return self._observe(), self._info()

    def step(self, action):
        server = int(action)
        allowed = 0 <= server < self.topology.num_servers and self.engine.mask()[server]
        outcome = self.episode.step(server if allowed else None)
        reward = 0.0
        if outcome != Outcome.PENDING:
            reward = ACCEPT_REWARD if outcome == Outcome.ACCEPTED else FAIL_REWARD
        return self._observe(), reward, self.episode.done, False, self._info()

    def _observe(self) -> np.ndarray:
        return self.builder.observe(self.engine)

    def _info(self) -> dict:
        return {
            "topology": self.topology.name,
            "request": self.episode.index,
            "accepted": self.episode.accepted_count,
        }

    def action_masks(self) -> np.ndarray:
        mask = self.engine.mask()
        if not mask.any():  # after the last request: any action (the episode is over)
            mask = np.ones_like(mask)
        return mask
