"""The ``marl`` placement policy: the trained GNN scheduler of every partition (shared weights)
behind the simulator's policy protocol, its single-agent twin ``single`` (one scheduler for the
whole cluster), and saving / loading their weights.

``place(sim, partition, jobs)`` plans each job task by task on a scratch copy of the state
(:class:`tjap.learned.interference.features.Planning`): the network scores the partition's GPU groups
and "forward"; the policy takes the best allowed action (greedy, so runs are deterministic). A job
is returned as None (forwarded by the simulator to the other partitions, each at most once) when
the network picks "forward" or a task fits nowhere. Forwarding is allowed before a job's first
task only, and only while some partition has not been offered the job in this interval. The
observations are the env's (:func:`tjap.learned.interference.features.observe`, which reads the queue
lengths and the partitions a job was offered to from the simulator), so the policy replays the
env's greedy episodes exactly (tests).

``single`` (:class:`SingleAgentPolicy`) runs the same network over the whole cluster's graph
(every GPU group, :data:`tjap.learned.interference.features.ALL`): the simulator asks it once per
interval for every queued job (its ``scope`` is "cluster"), forwarding is never offered, and a
job with a task that fits nowhere waits. Its default weights are the single-agent run's,
``learned/weights/interference_single.json``.

``marl-server`` (:class:`ServerLevelPolicy`) is seed 001's server-level variant: the network sees
the partition's servers and switches (no GPU groups, ``level="server"`` of
:class:`tjap.learned.interference.features.PartitionGraph`), picks a server per task, and the task goes
to one of the server's groups that can take it, drawn uniformly at random from a generator seeded
by the run's seed (:func:`tjap.learned.interference.features.choose_group`). Its default weights are
``learned/weights/interference_marl_server.json``. Weights record the level they were trained at
(``"level"`` in the metadata; none recorded: device); loading them at the other level is refused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.learned.policy_io import check_architecture, load_weights, save_weights

DEFAULT_WEIGHTS = Path(__file__).resolve().parents[1] / "weights" / "interference_marl.json"
SINGLE_WEIGHTS = DEFAULT_WEIGHTS.with_name("interference_single.json")
SERVER_WEIGHTS = DEFAULT_WEIGHTS.with_name("interference_marl_server.json")


def save_model(model, path, training: dict, level: str = "device") -> tuple[Path, Path]:
    """Write ``path``.pt (the state dict) and ``path``.json (metadata: the architecture, the
    ``level`` the network acts at, ``training``) in the format of :mod:`tjap.learned.policy_io`; the
    device level's metadata has no ``level`` key (which reads as device)."""
    from tjap.learned.interference.features import check_level

    extra = {"level": level} if check_level(level) != "device" else {}
    return save_weights(
        path, "interference-gnn", model, {"model": model.config, **extra, "training": training}
    )


def weights_level(meta: dict) -> str:
    """The level (device or server) weights' metadata ``meta`` was trained at."""
    return meta.get("level", "device")


def load_model(path=None, level: str | None = None):
    """(model, metadata) from ``path`` (.json, .pt or the stem; default the shipped weights);
    with ``level``, weights trained at the other level are refused."""
    from tjap.learned.interference.nets import InterferenceGNN

    def build(meta_path, meta):
        if not isinstance(meta.get("model"), dict):
            raise InvalidInputError(f"{meta_path} names no model architecture ('model')")
        if level is not None and weights_level(meta) != level:
            raise InvalidInputError(
                f"{meta_path} holds {weights_level(meta)}-level weights, not {level}-level ones; "
                f"use {'marl-server' if weights_level(meta) == 'server' else 'marl or single'} "
                f"with them or train {level}-level ones (tjap train interference "
                f"--level {level})"
            )
        check_architecture(meta_path, meta["model"], "interference-gnn", "model")
        try:
            return InterferenceGNN(**meta["model"])
        except TypeError:
            raise InvalidInputError(
                f"{meta_path}: model {meta['model']!r} is not an InterferenceGNN architecture"
            ) from None

    return load_weights(path if path is not None else DEFAULT_WEIGHTS, "interference-gnn", build)


class MarlPolicy:
    """The learned multi-agent scheduler (``name = "marl"``)."""

    name = "marl"
    scope = "partition"
    level = "device"
    default_weights = DEFAULT_WEIGHTS

    def __init__(self, weights=None, model=None):
        if model is None:
            model, self.meta = load_model(
                weights if weights is not None else self.default_weights, level=self.level
            )
        else:
            self.meta = {}
        self.model = model
        self.stats = {"decisions": 0, "forwards": 0}

    def reset(self, sim, seed: int) -> None:
        import torch

        from tjap.learned.interference.features import PartitionGraph

        torch.manual_seed(seed)
        self._group_rng = np.random.default_rng(seed)  # server level: the random group
        self._graphs = {}
        self._cluster = sim.cluster
        self.stats = {"decisions": 0, "forwards": 0}
        self._PartitionGraph = PartitionGraph

    def _graph(self, sim, p):
        if sim.cluster is not self._cluster:
            self._graphs, self._cluster = {}, sim.cluster
        if p not in self._graphs:
            self._graphs[p] = self._PartitionGraph(sim.cluster, p, self.level)
        return self._graphs[p]

    def place(self, sim, partition: int, jobs) -> list:
        import torch

        from tjap.learned.interference.features import Planning, choose_group, observe
        from tjap.learned.interference.nets import to_torch

        graph = self._graph(sim, partition)
        plan = Planning(sim, partition)
        plans = []
        for job in jobs:
            plan.start(sim, job)
            ok = True
            while not plan.done:
                # the queue features and the forwarding mask come from the simulator's record of
                # the interval, as in the env the weights were trained in
                obs, mask = observe(sim, plan, graph, partition)
                if not mask.any():
                    ok = False
                    break
                with torch.no_grad():
                    logits, _ = self.model(to_torch([obs]), graph.num_actions)
                logits = logits[0].numpy()
                action = int(np.argmax(np.where(mask, logits, -np.inf)))
                self.stats["decisions"] += 1
                if action == graph.num_actions:
                    self.stats["forwards"] += 1
                    ok = False
                    break
                plan.add(sim, choose_group(sim, plan, graph, action, self._group_rng))
            if ok:
                plans.append(np.array(plan.plan, np.int64))
            else:
                plan.rollback(sim)
                plans.append(None)
        return plans


class SingleAgentPolicy(MarlPolicy):
    """The learned single-agent scheduler (``name = "single"``): one GNN over the whole cluster,
    one queue, no forwarding (the variant seed 001's Fig. 10 compares with MARL)."""

    name = "single"
    scope = "cluster"
    default_weights = SINGLE_WEIGHTS


class ServerLevelPolicy(MarlPolicy):
    """The learned multi-agent scheduler at server level (``name = "marl-server"``): the GNN
    picks a server of the partition per task, the task goes to a random group of it that can
    take it (seed 001's server-level variant)."""

    name = "marl-server"
    level = "server"
    default_weights = SERVER_WEIGHTS
