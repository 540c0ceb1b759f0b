"""Gymnasium environment of seed 004's decision: every 10 minutes after the predecessor's
submission, wait (action 0) or submit the successor (action 1).

Observation: the 144 x 40 history ending now, normalised (:mod:`tjap.learned.batch.features`).
Reward: 0 while waiting; when the successor is submitted (by the agent, or by the reactive
fallback when the predecessor ends first) the episode ends with :func:`reward_h` of the outcome,
-(e_I * interruption_h + e_O * overlap_h). Each reset injects the pair at one of
``injection_times`` (drawn with the env's seeded generator); the warm-started episode is kept as a
checkpoint, so a later reset at the same time costs a copy instead of a replay of the warm-up.

:meth:`ProvisionEnv.step` is the one step of training: the training data
(:func:`tjap.learned.batch.episodes.record_episode`) are recorded by stepping this environment,
waiting along the episode and probing a submission at each decision (:meth:`ProvisionEnv.probe`),
and a provisioner at inference goes through the same episode step that this step takes
(:meth:`tjap.placement.batch.chained.ChainedEpisode.step`, driven by
:func:`tjap.heuristics.batch.rules.run_episode`).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.learned.batch.features import SCALES, normalise, observation
from tjap.placement.batch.chained import HOUR_S, ChainedEpisode, Pair
from tjap.placement.batch.jobs import Jobs
from tjap.placement.batch.simulator import SchedulerConfig

WAIT, SUBMIT = 0, 1


def reward_h(outcome_s, e_interruption: float = 1.0, e_overlap: float = 1.0) -> np.ndarray:
    """The reward of outcomes (successor start minus predecessor end, seconds; one or an array):
    -(e_I * interruption + e_O * overlap), in hours."""
    o = np.asarray(outcome_s, dtype=np.float64) / HOUR_S
    return -(e_interruption * np.maximum(o, 0) + e_overlap * np.maximum(-o, 0))


class ProvisionEnv(gym.Env):
    """The decision of seed 004 as a gymnasium environment (see the module notes).

    ``raw`` is the raw history (history x 40, :func:`~tjap.learned.batch.features.observation`)
    behind the last observation :meth:`reset` or :meth:`step` returned: the observation is
    ``normalise(raw)``, and the training data record ``raw``.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        jobs: Jobs,
        injection_times,
        cluster_nodes: int = 76,
        pair: Pair = Pair(),
        config: SchedulerConfig | None = None,
        e_interruption: float = 1.0,
        e_overlap: float = 1.0,
        history: int = 144,
        cache: int = 64,
    ):
        times = [int(t) for t in injection_times]
        if not times:
            raise InvalidInputError("ProvisionEnv needs at least one injection time")
        if e_interruption < 0 or e_overlap < 0:
            raise InvalidInputError("the penalty weights e_interruption and e_overlap must be >= 0")
        check_int("cache", cache, 1)
        self.jobs, self.times, self.cluster_nodes, self.pair = jobs, times, cluster_nodes, pair
        self.config, self.history = config, history
        self.e_interruption, self.e_overlap = e_interruption, e_overlap
        self.observation_space = gym.spaces.Box(0.0, np.inf, (history, len(SCALES)), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._cache: dict[int, tuple[ChainedEpisode, tuple]] = {}
        self._cache_size = cache
        self.episode: ChainedEpisode | None = None
        self.raw: np.ndarray | None = None

    def _start(self, inject_s: int) -> ChainedEpisode:
        if inject_s in self._cache:
            episode, saved = self._cache[inject_s]
            episode.rewind(saved)
            return episode
        episode = ChainedEpisode(
            self.jobs,
            self.cluster_nodes,
            inject_s,
            self.pair,
            config=self.config,
            history=self.history,
        )
        if len(self._cache) >= self._cache_size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[inject_s] = (episode, episode.checkpoint())
        return episode

    def _obs(self) -> np.ndarray:
        self.raw = observation(self.episode)
        return np.maximum(normalise(self.raw), 0.0)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        inject_s = (options or {}).get("inject_s")
        if inject_s is None:
            inject_s = self.times[int(self.np_random.integers(len(self.times)))]
        self.episode = self._start(int(inject_s))
        return self._obs(), {"inject_s": int(inject_s), "now_s": self.episode.now}

    def step(self, action):
        """Wait (0) or submit (1). Once the successor is submitted (by the action, or by the
        reactive fallback) the episode ends; ``info`` then holds the outcome (``outcome_s``,
        ``interruption_h``, ``overlap_h``), the successor's wait from its submission to its start
        (``wait_s``) and whether the fallback submitted it."""
        reward, done, info = self._advance(action)
        return self._obs(), reward, done, False, info

    def _advance(self, action) -> tuple[float, bool, dict]:
        """:meth:`step` but the observation: (reward, terminated, info)."""
        if self.episode is None or self.episode.done:
            raise InvalidInputError("call reset() before step()")
        if int(action) not in (WAIT, SUBMIT):
            raise InvalidInputError(f"action must be 0 (wait) or 1 (submit), got {action!r}")
        episode = self.episode
        if not episode.step(int(action) == SUBMIT):
            return 0.0, False, {"now_s": episode.now}
        outcome_s = episode.outcome()
        o = outcome_s / HOUR_S
        reward = float(reward_h(outcome_s, self.e_interruption, self.e_overlap))
        info = {
            "now_s": episode.now,
            "outcome_s": outcome_s,
            "interruption_h": max(o, 0.0),
            "overlap_h": max(-o, 0.0),
            "wait_s": int(episode.sim._state["start"][episode.succ]) - episode.submitted_s,
            "fallback": int(action) != SUBMIT,
        }
        return reward, True, info

    def probe(self) -> tuple[float, dict]:
        """The reward and ``info`` that :meth:`step` would return for submitting now (action
        1), after which the environment is back at this decision, as if nothing had been tried
        (``raw`` and the observation stay this decision's).

        Before the submission the episode's states do not depend on the actions, so one pass
        that waits at every decision and probes a submission at each records the whole decision
        problem of an injection time (:func:`tjap.learned.batch.episodes.record_episode`)."""
        if self.episode is None or self.episode.done:
            raise InvalidInputError("call reset() before probe()")
        saved = self.episode.checkpoint()
        try:
            reward, _, info = self._advance(SUBMIT)
        finally:
            self.episode.rewind(saved)
        return reward, info
