"""Repairing a destroyed DCAS window, one removed job at a time (seed 002, NSA).

An episode takes a window of the paper's stream and a current DCAS solution, destroys it exactly
as the SA loop does (the same compiled ``destroy``), and asks the agent for the start of each
removed job in the idle sequence left by the steps before it. The current solution is Seq after
0..``warmup_moves`` random moves (drawn uniformly) of the loop's destroy and of the
``warmup_repair``: ``"uniform"`` (a start drawn over the whole sequence: varied, mostly poor
solutions) or ``"greedy"`` (the cheapest block: the good solutions a strong repair keeps the
search among, as in the "best" SA loop). The reward is 0 until the last
removed job is placed, then minus the CH cost of the repaired jobs (``reward="repaired"``, the
paper) or of the whole window (``reward="window"``, the published code), divided by
``reward_scale``. ``reward="relative"`` (ours) subtracts a per-episode baseline from the repaired
jobs' cost: the look-ahead expert's best total for the same destroyed solution
(:func:`tjap.learned.tree.imitation.lookahead_totals`), so that rewards of easy and hard windows are on one
scale (0: as good as the expert; positive: better); the baseline depends on the episode's start
only, so policy gradients stay unbiased.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.heuristics.tree import _kernels as k
from tjap.learned.tree.features import feature_spec, repair_observation, require_fat_tree_features
from tjap.placement.tree._dcas_kernels import (
    block_cost,
    decode,
    free_positions,
    take_block,
    taken_words,
)
from tjap.placement.tree.cost import convention_code
from tjap.placement.tree.dcas import Arrays

REWARDS = ("repaired", "window", "relative")
#: The repair of the warm-up moves that make an episode's current solution.
WARMUP_REPAIRS = {"uniform": k.REPAIR_UNIFORM, "greedy": k.REPAIR_GREEDY}


class NSARepairEnv(gym.Env):
    """Masked discrete actions 0..q-1 (the start position); use ``action_masks()``."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        windows,
        *,
        convention="published",
        q=100,
        n_max=40,
        max_remove=2,
        reinsert="window-order",
        reward="repaired",
        reward_scale=1e5,
        idle_flag=False,
        boundaries=False,
        warmup_moves=20,
        warmup_repair="uniform",
    ):
        if not windows:
            raise InvalidInputError("NSARepairEnv needs at least one window")
        if reward not in REWARDS:
            raise InvalidInputError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        if warmup_repair not in WARMUP_REPAIRS:
            raise InvalidInputError(
                f"warmup_repair must be one of {', '.join(WARMUP_REPAIRS)}, got {warmup_repair!r}"
            )
        from tjap.heuristics.tree.operators import REINSERT

        for w in windows:
            require_fat_tree_features(w, "NSARepairEnv")
        self.windows = [Arrays(w) for w in windows]
        self.code = convention_code(convention)
        self.q, self.n_max, self.max_remove = q, n_max, max_remove
        self.reinsert = REINSERT[reinsert]
        self.reward_kind, self.reward_scale = reward, reward_scale
        self.idle_flag, self.boundaries, self.warmup_moves = idle_flag, boundaries, warmup_moves
        self.warmup_repair = k.repair_argument(WARMUP_REPAIRS[warmup_repair])
        self.spec_dict = feature_spec(q, n_max, idle_flag, boundaries)
        channels = len(self.spec_dict["channels"])
        self.observation_space = gym.spaces.Box(0.0, 1.0, (channels, q), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(q)
        self._mask = np.zeros(q, dtype=bool)

    # -- episode ---------------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        k.seed_rng(int(self.np_random.integers(2**31)))
        a = self.windows[int(self.np_random.integers(len(self.windows)))]
        self.a = a
        num_jobs = a.sizes.size
        order = np.arange(num_jobs, dtype=np.int64)
        starts = np.zeros(num_jobs, dtype=np.int64)
        self.positions = np.empty(int(a.sizes.sum()), dtype=np.int64)
        self.taken = np.empty(taken_words(a.num_idle), dtype=np.uint64)
        self.alive = np.empty(a.num_idle, dtype=np.int64)
        picks = np.empty(num_jobs, dtype=np.int64)
        new_order = np.empty(num_jobs, dtype=np.int64)
        new_starts = np.empty(num_jobs, dtype=np.int64)
        # a varied current solution: a few random moves from Seq
        for _ in range(int(self.np_random.integers(self.warmup_moves + 1))):
            k.destroy_and_repair(
                *a.tree,
                self.code,
                a.sizes,
                a.offsets,
                order,
                starts,
                new_order,
                new_starts,
                self.positions,
                self.taken,
                self.alive,
                picks,
                self.max_remove,
                self.warmup_repair,
                self.q,
                self.reinsert,
            )
            order, starts = new_order.copy(), new_starts.copy()
        kept = k.destroy(
            a.sizes, order, starts, new_order, new_starts, picks, self.max_remove, self.reinsert
        )
        self.order, self.starts, self.step_index, self.kept = new_order, new_starts, kept, kept
        self.length = decode(
            a.num_idle, a.sizes, a.offsets, new_order, new_starts, kept, self.positions, self.taken
        )
        self.baseline = 0.0
        if self.reward_kind == "relative":  # the look-ahead expert's score of this state
            from tjap.learned.tree.imitation import expert_scores

            self.baseline = float(expert_scores(self, "lookahead").min())
        return self._observe(), {}

    def _observe(self):
        a = self.a
        j = self.order[self.step_index]
        rest = self.order[self.step_index + 1 :]
        free_positions(self.taken, self.alive)
        obs, self._mask = repair_observation(
            a.switch_q,
            a.pod_q,
            self.alive,
            self.length,
            a.sizes[j],
            int(a.sizes[rest].sum()),
            rest.size,
            a.num_switches,
            a.num_pods,
            self.q,
            self.n_max,
            self.idle_flag,
            self.boundaries,
        )
        return obs

    def action_masks(self) -> np.ndarray:
        return self._mask.copy()

    def step(self, action):
        a = self.a
        action = int(action)
        if not self._mask[action]:
            raise InvalidInputError(
                f"action {action} is masked: the idle sequence has {self.length} positions"
            )
        j = self.order[self.step_index]
        self.starts[self.step_index] = action
        take_block(self.taken, action, a.sizes[j], self.positions, a.offsets[j])
        self.length -= a.sizes[j]
        self.step_index += 1
        if self.step_index < a.sizes.size:
            return self._observe(), 0.0, False, False, {}
        jobs = self.order if self.reward_kind == "window" else self.order[self.kept :]
        cost = sum(
            block_cost(
                a.group_q,
                a.shallow,
                self.positions,
                a.offsets[j],
                a.sizes[j],
                a.top_level,
                self.code,
            )
            for j in jobs
        )
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        return obs, (self.baseline - cost) / self.reward_scale, True, False, {"cost": cost}
