"""Gymnasium environment of seed 004's decision: every 10 minutes after the predecessor's
submission, wait (action 0) or submit the successor (action 1).

Observation: the 144 x 40 history ending now, normalised (:mod:`tjap.learned.batch.features`).
Reward: 0 while waiting; when the successor is submitted (by the agent, or by the reactive
fallback when the predecessor ends first) the episode ends with -(e_I * interruption_h + e_O *
overlap_h). Each reset injects the pair at one of ``injection_times`` (drawn with the env's
seeded generator); the warm-started episode is kept as a checkpoint, so a later reset at the same
time costs a copy instead of a replay of the warm-up.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from tjap.learned.batch.features import SCALES, normalise, observation
from tjap.placement.batch.chained import HOUR_S, ChainedEpisode, Pair
from tjap.placement.batch.jobs import Jobs
from tjap.placement.batch.simulator import SchedulerConfig
from tjap.errors import InvalidInputError

WAIT, SUBMIT = 0, 1


class ProvisionEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, jobs: Jobs, injection_times, cluster_nodes: int = 76, pair: Pair = Pair(),
                 config: SchedulerConfig | None = None, e_interruption: float = 1.0,
                 e_overlap: float = 1.0, history: int = 144, cache: int = 64):
        times = [int(t) for t in injection_times]
        if not times:
            raise InvalidInputError("ProvisionEnv needs at least one injection time")
        if e_interruption < 0 or e_overlap < 0:
            raise InvalidInputError("the penalty weights e_interruption and e_overlap must be >= 0")
        self.jobs, self.times, self.cluster_nodes, self.pair = jobs, times, cluster_nodes, pair
        self.config, self.history = config, history
        self.e_interruption, self.e_overlap = e_interruption, e_overlap
        self.observation_space = gym.spaces.Box(0.0, np.inf, (history, len(SCALES)), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._cache: dict[int, tuple[ChainedEpisode, tuple]] = {}
        self._cache_size = cache
        self.episode: ChainedEpisode | None = None

    def _start(self, inject_s: int) -> ChainedEpisode:
        if inject_s in self._cache:
            episode, saved = self._cache[inject_s]
            episode.rewind(saved)
            return episode
        episode = ChainedEpisode(self.jobs, self.cluster_nodes, inject_s, self.pair,
                                 config=self.config, history=self.history)
        if len(self._cache) >= self._cache_size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[inject_s] = (episode, episode.checkpoint())
        return episode

    def _obs(self) -> np.ndarray:
        return np.maximum(normalise(observation(self.episode)), 0.0)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        inject_s = (options or {}).get("inject_s")
        if inject_s is None:
            inject_s = self.times[int(self.np_random.integers(len(self.times)))]
        self.episode = self._start(int(inject_s))
        return self._obs(), {"inject_s": int(inject_s), "now_s": self.episode.now}

    def step(self, action):
        if self.episode is None or self.episode.done:
            raise InvalidInputError("call reset() before step()")
        if int(action) not in (WAIT, SUBMIT):
            raise InvalidInputError(f"action must be 0 (wait) or 1 (submit), got {action!r}")
        submitted = self.episode.step(int(action) == SUBMIT)
        if not submitted:
            return self._obs(), 0.0, False, False, {"now_s": self.episode.now}
        outcome_s = self.episode.outcome()
        o = outcome_s / HOUR_S
        reward = -(self.e_interruption * max(o, 0.0) + self.e_overlap * max(-o, 0.0))
        info = {"now_s": self.episode.now, "outcome_s": outcome_s,
                "interruption_h": max(o, 0.0), "overlap_h": max(-o, 0.0),
                "fallback": int(action) != SUBMIT}
        return self._obs(), float(reward), True, False, info
