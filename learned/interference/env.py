"""Seed 001's schedulers as one gymnasium environment over the JCT simulator.

An episode runs a generated workload (``intervals`` intervals of arrivals, the CLI's default rate
of 15 jobs per interval per 100 servers of a partition) on a small cluster: it drives the
simulator's own loop, :class:`tjap.placement.interference.episode.PlacementEpisode` (at each interval
the arrived jobs join their home scheduler's queue; the schedulers, in partition order, place their
queues; the jobs they forwarded are then offered to the other partitions, most free GPUs first,
each partition at most once; a job no partition takes waits for the next interval; then the
interval runs), placing each turn's jobs one task per step, for at most ``intervals +
extra_intervals`` intervals.

One step = one decision of the scheduler whose turn it is (``info["agent"]``, the partition): the
next task (workers first, then parameter servers) of the job in hand goes to one GPU group of the
partition (action ``i < groups``: the i-th group of the partition) or the job is forwarded (the
last action; allowed only before the job's first task and while some partition has not seen the
job). Every partition's scheduler is an agent; they share one policy (parameter sharing) and the
env cycles through them. A task that fits nowhere rolls the job back and forwards it, as the
heuristics do. ``action_masks()`` gives the feasible actions (the groups with a free GPU for a
worker and the CPU for the task); an action outside the mask raises.

Reward (ours; the paper's JCT-based reward needs the job's finish, many intervals later): minus
the predicted slowdown added by the task (the interference model's unclipped total slowdown of the
tasks on the group's server after minus before), minus, when the job's last task is placed, its
communication cost (the slowest worker-PS flow's gradient / PS over its bottleneck bandwidth share,
over the model's ideal iteration time), minus ``wait_penalty`` per job left waiting at the end of
each interval. With ``reward="jct"`` the reward is instead the true objective: minus the time
every arrived, unfinished job spent in the system during each interval (in intervals), given at
the interval's last decision, so an episode's return is minus the total JCT of its jobs up to the
episode's end. ``reward="jct_rule"`` credits the agent for the difference it makes against a
hand-written rule (``rule``, default ``whole``): at reset the rule's own choices are run on the
same workload (a twin env), and each interval's reward is the rule's time in system in that
interval minus the agent's, so an episode's return is the rule's total JCT minus the agent's
(zero for an exact copy of the rule, positive where the agent does better). Observations:
:func:`tjap.learned.interference.features.observe`; the queue lengths and the partitions a job was
offered to are recorded on the simulator by the episode (:meth:`Simulator.begin_interval`,
:meth:`Simulator.mark_offered`), so the ``marl`` policy in the simulator sees exactly these
observations (test).

``single_agent=True`` is the single-agent variant: one scheduler whose graph is the whole cluster
(every GPU group), one queue of every arrived job, no forwarding action; in the simulator it is
the ``single`` policy (:class:`tjap.learned.interference.policy.SingleAgentPolicy`), which replays
these episodes exactly.

``level="server"`` is seed 001's server-level variant (:mod:`tjap.learned.interference.features`):
the graph's nodes are the servers and switches, action ``i < servers`` picks the partition's i-th
server (allowed when one of its groups can take the task) and the task goes to one of those groups
drawn uniformly at random by a generator seeded with the episode's workload seed (so an episode is
deterministic by the env seed); in the simulator it is the ``marl-server`` policy
(:class:`tjap.learned.interference.policy.ServerLevelPolicy`), which draws from the run's seed (the
workload's by default) in the same order, so it replays these episodes too. ``num_actions`` is the
number of action nodes (``num_groups`` the partition's GPU groups, equal at device level).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.learned.interference.features import (
    ALL,
    EDGE_FEATURES,
    JOB_FEATURES,
    NODE_FEATURES,
    PARTITION_FEATURES,
    PartitionGraph,
    Planning,
    added_slowdown,
    check_level,
    choose_group,
    observe,
)
from tjap.placement.interference import (
    PlacementEpisode,
    Simulator,
    Workload,
    default_rate,
    make_cluster,
    profiles,
)

WAIT_PENALTY = 0.2
EXPERTS = ("tetris", "whole")
REWARDS = ("proxy", "jct", "jct_rule")
COMM_CLIP = 5.0


def comm_cost(sim, job: int) -> float:
    """The committed ``job``'s slowest worker-PS transfer over its ideal iteration time."""
    w, c = sim.workload, sim.cluster
    m = w.model[job]
    volume = profiles.GRAD_MB[m] * 8e-3 / w.ps[job]
    worst = 0.0
    for f in range(sim.flow_ptr[job], sim.flow_ptr[job + 1]):
        links = sim.flow_links[f, : sim.flow_len[f]]
        if len(links):
            share = np.min(c.link_gbps[links] / np.maximum(sim.link_flows[links], 1))
            worst = max(worst, volume / share)
    return min(worst / profiles.ITER_S[m], COMM_CLIP)


def rule_action(nodes: np.ndarray, mask: np.ndarray, expert: str) -> int:
    """The rule ``expert``'s action (:meth:`InterferenceEnv.expert_action`) from an observation's
    ``nodes`` and action ``mask`` (its last entry: forward, returned when no node is allowed)."""
    if expert not in EXPERTS:
        raise InvalidInputError(f"unknown expert {expert!r}; choose one of {', '.join(EXPERTS)}")
    A = len(mask) - 1
    nodes, feasible = nodes[:A], mask[:A]
    if not feasible.any():
        return A
    if expert == "whole":
        ok = feasible & (nodes[:, NODE_FEATURES.index("whole_ok")] > 0)
        if ok.any():
            gap = nodes[:, NODE_FEATURES.index("whole_gap")]
            return int(np.argmin(np.where(ok, gap, np.inf)))
    col = NODE_FEATURES.index
    score = np.where(
        feasible, 2.0 * nodes[:, col("job_on_server")] + nodes[:, col("tetris_fill")], -np.inf
    )
    return int(np.argmax(score))


def partition_shapes(
    cluster, single_agent: bool = False, level: str = "device"
) -> tuple[list[PartitionGraph], int, int, int]:
    """The partition graphs and their common (nodes, edges, action nodes)."""
    graphs = (
        [PartitionGraph(cluster, p, level) for p in range(cluster.num_partitions)]
        if not single_agent
        else [PartitionGraph(cluster, ALL, level)]
    )
    shapes = {(g.num_nodes, g.edge_index.shape[1], g.num_actions) for g in graphs}
    if len(shapes) != 1:
        raise InvalidInputError(
            f"InterferenceEnv needs partitions of one shape, got {shapes}; "
            "use a fat-tree or VL2 cluster with one server architecture"
        )
    return graphs, *shapes.pop()


class InterferenceEnv(gym.Env):
    """Masked discrete actions 0..groups (the last: forward); use ``action_masks()``."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        topology: str = "fattree",
        k: int = 8,
        arch: str = "pcie",
        *,
        intervals: int = 8,
        pattern: str = "poisson",
        rate: float | None = None,
        extra_intervals: int = 8,
        wait_penalty: float = WAIT_PENALTY,
        reward: str = "proxy",
        single_agent: bool = False,
        rule: str = "whole",
        level: str = "device",
    ):
        self._config = dict(
            topology=topology,
            k=k,
            arch=arch,
            intervals=intervals,
            pattern=pattern,
            rate=rate,
            extra_intervals=extra_intervals,
            wait_penalty=wait_penalty,
            single_agent=single_agent,
            level=level,
        )
        self.level = check_level(level)

        self.cluster = make_cluster(topology, k, arch)
        self.intervals, self.pattern = check_int("intervals", intervals, 1), pattern
        self.rate = default_rate(self.cluster) if rate is None else rate
        self.extra_intervals, self.wait_penalty = int(extra_intervals), float(wait_penalty)
        if reward not in REWARDS:
            raise InvalidInputError(
                f"unknown reward {reward!r}; choose one of {', '.join(REWARDS)}"
            )
        self.reward = reward
        if rule not in EXPERTS:
            raise InvalidInputError(f"unknown rule {rule!r}; choose one of {', '.join(EXPERTS)}")
        self.rule = rule
        self.single_agent = bool(single_agent)
        self.graphs, n, e, self.num_actions = partition_shapes(
            self.cluster, self.single_agent, self.level
        )
        self.num_groups = self.graphs[0].num_groups
        P = self.cluster.num_partitions
        box = lambda *shape: gym.spaces.Box(-np.inf, np.inf, shape, dtype=np.float32)  # noqa: E731
        self.observation_space = gym.spaces.Dict(
            {
                "nodes": box(n, len(NODE_FEATURES)),
                "edge_index": gym.spaces.Box(0, n - 1, (2, e), dtype=np.int64),
                "edges": box(e, len(EDGE_FEATURES)),
                "job": box(len(JOB_FEATURES)),
                "partitions": box(P, len(PARTITION_FEATURES)),
                "own": gym.spaces.Box(0.0, 1.0, (P,), dtype=np.float32),
            }
        )
        self.action_space = gym.spaces.Discrete(self.num_actions + 1)
        self._mask = np.zeros(self.num_actions + 1, bool)

    # -- gym API ---------------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        wseed = int(self.np_random.integers(1000, 2**31 - 1))
        workload = Workload.generate(
            self.cluster.num_partitions, self.intervals, self.pattern, wseed, rate=self.rate
        )
        self._rule_cost = self.rule_interval_costs(workload) if self.reward == "jct_rule" else None
        return self._begin(workload)

    def rule_interval_costs(self, workload: Workload) -> np.ndarray:
        """Time in system of every arrived job in each interval of ``workload``'s episode when
        the rule ``self.rule`` makes every choice (a twin env with the JCT reward)."""
        if getattr(self, "_twin", None) is None:
            self._twin = InterferenceEnv(**self._config, reward="jct")
        twin = self._twin
        twin._begin(workload)
        done = False
        while not done:
            _, _, done, _, _ = twin.step(twin.expert_action(self.rule))
        return np.array(twin.episode.time_in_system)

    def _begin(self, workload: Workload):
        self.workload = workload
        self.sim = Simulator(self.cluster, self.workload)
        self.episode = PlacementEpisode(
            self.sim,
            scope="cluster" if self.single_agent else "partition",
            max_intervals=self.intervals + self.extra_intervals,
        )
        self._group_rng = np.random.default_rng(workload.seed)  # server level: the random group
        self._reward, self._agent = 0.0, 0
        self._obs = {
            key: np.zeros(space.shape, space.dtype)
            for key, space in self.observation_space.spaces.items()
        }
        self._decisions = self._run()
        return self._advance(None)[0], self._info()

    def step(self, action):
        action = int(action)
        if not (0 <= action < len(self._mask)) or not self._mask[action]:
            raise InvalidInputError(
                f"action {action} is masked (infeasible group or forwarding "
                "not allowed); pick one allowed by action_masks()"
            )
        self._reward = 0.0
        obs, done = self._advance(action)
        return obs, float(self._reward), done, False, self._info()

    def action_masks(self) -> np.ndarray:
        return self._mask.copy()

    def expert_action(self, expert: str = "tetris") -> int:
        """A hand-written rule's choice for the current task; forward when no group fits.

        ``tetris``: the feasible group maximising 2 x (the job already has a task on its server)
        + fill after placing. ``whole``: the group of the least-cost plan keeping the job on one
        server (:class:`tjap.heuristics.interference.rules.WholeJobPolicy`, read from the ``whole_ok`` /
        ``whole_gap`` features), Tetris's choice when no such plan exists. At server level the
        same code reads the server nodes' aggregates (most fill, least gap over the server's
        groups), so it picks the server of the rule's group (ties to the first, as there)."""
        return rule_action(self._obs["nodes"], self._mask, expert)

    # -- the episode, as a generator that yields at each decision ----------------------------
    def _info(self) -> dict:
        return {
            "agent": self._agent,
            "interval": self.sim.interval,
            "action_mask": self._mask.copy(),
        }

    def _advance(self, action):
        try:
            self._obs, self._mask = self._decisions.send(action)
            return self._obs, False
        except StopIteration:
            self._mask = np.zeros_like(self._mask)
            self._mask[-1] = True  # nothing to decide; keep the mask non-empty for wrappers
            return self._obs, True

    def _place(self, p: int, job: int, batch=()):
        sim, graph = self.sim, self.graphs[0 if p == ALL else p]
        plan = Planning(sim, p, exclude=batch)  # the policy plans its batch in one call
        plan.start(sim, job)
        self._agent, self._plan = max(p, 0), plan
        while not plan.done:
            obs, mask = observe(sim, plan, graph, p)
            if not mask.any():
                plan.rollback(sim)
                return False
            action = yield obs, mask
            if action == graph.num_actions:
                plan.rollback(sim)
                return False
            g = choose_group(sim, plan, graph, action, self._group_rng)
            if self.reward == "proxy":
                self._reward -= added_slowdown(sim, plan, g)
            plan.add(sim, g)
        self.episode.commit(job, np.array(plan.plan, np.int64))
        if self.reward == "proxy":
            self._reward -= comm_cost(sim, job)
        return True

    def _run(self):
        """The episode's turns, one job after the other, one task at a time; the interval
        rewards are added as the episode records each interval."""
        episode, seen = self.episode, 0
        while True:
            turn = episode.next_turn()
            seen = self._interval_rewards(seen)
            if turn is None:
                return
            batch = []
            for job in turn.jobs:
                if (yield from self._place(turn.partition, job, batch)):
                    batch.append(job)

    def _interval_rewards(self, seen: int) -> int:
        """Add the rewards of the intervals the episode recorded since the first ``seen``."""
        episode = self.episode
        for i in range(seen, len(episode.time_in_system)):
            if self.reward == "proxy":
                self._reward -= self.wait_penalty * episode.waiting[i]
                continue
            self._reward -= episode.time_in_system[i]  # each job's share of the interval
            if self.reward == "jct_rule" and i < len(self._rule_cost):
                self._reward += float(self._rule_cost[i])
        return len(episode.time_in_system)
