"""Neural simulated annealing (seed 002): a trained repair operator inside the same SA loop.

:class:`LearnedRepair` holds a policy and implements the repair protocol of
:mod:`heuristics.operators`; the compiled loop of :func:`heuristics.anneal.anneal` calls it back
for each re-inserted job. ``tjap.solve(window, method="nsa", iterations=500, weights=...)`` runs it.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from heuristics import _kernels as k
from heuristics.operators import Metropolis, RandomDestroy, Repair
from learned.features import repair_observation
from placement.tree.result import Result
from placement.tree.window import Window

WEIGHTS_DIR = Path(__file__).parent / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "nsa_cnn3.json"


@dataclass(frozen=True, eq=False)
class LearnedRepair(Repair):
    """Repair operator choosing each start with a trained policy: the masked argmax, or with
    ``sample=True`` a draw from the policy's distribution (seeded by the search's seed)."""

    name = "learned"
    code: int = k.REPAIR_LEARNED
    q: int = 100
    policy: object = None
    spec: dict = field(default_factory=dict)
    sample: bool = False
    calls: list = field(default_factory=lambda: [0])
    rng: list = field(default_factory=lambda: [np.random.default_rng(0)])

    @classmethod
    def load(cls, weights=DEFAULT_WEIGHTS, sample: bool = False) -> "LearnedRepair":
        policy, meta = _load(str(weights))
        return cls(q=meta["feature_spec"]["q"], policy=policy, spec=meta["feature_spec"],
                   sample=sample)

    def start(self, switch_q, pod_q, alive, length, size, others, num_others, num_switches,
              num_pods) -> int:
        import torch

        obs, mask = repair_observation(switch_q, pod_q, alive, length, size, others, num_others,
                                       num_switches, num_pods, self.q, self.spec["n_max"],
                                       "idle" in self.spec["channels"],
                                       "switch_start" in self.spec["channels"])
        with torch.no_grad():
            features = self.policy.extract_features(torch.as_tensor(obs[None]),
                                                    self.policy.pi_features_extractor)
            logits = self.policy.action_net(self.policy.mlp_extractor.forward_actor(features))[0]
        logits = logits.numpy().astype(np.float64)
        logits[~mask] = -np.inf
        self.calls[0] += 1
        if not self.sample:
            return int(np.argmax(logits))
        p = np.exp(logits - logits.max())
        return int(self.rng[0].choice(p.size, p=p / p.sum()))

    @contextlib.contextmanager
    def active(self, window: Window, seed: int = 0):
        t = window.topology
        self.rng[0] = np.random.default_rng(seed)

        def callback(switch_q, pod_q, alive, length, size, others, num_others):
            return self.start(switch_q, pod_q, alive, length, size, others, num_others,
                              t.num_switches, t.num_pods)

        previous = k.LEARNED_REPAIR[0]
        k.LEARNED_REPAIR[0] = callback
        try:
            yield
        finally:
            k.LEARNED_REPAIR[0] = previous


@functools.lru_cache(maxsize=8)
def _load(path: str):
    from learned.policy_io import load_policy

    return load_policy(path)


def solve_nsa(window: Window, *, convention="paper", time_limit_s=None, seed=0, iterations=500,
              weights=None, max_remove=2, t_max=2500.0, t_min=2.5, reinsert="largest-first",
              initial="seq", sample=True) -> Result:
    """NSA: the paper's SA loop with the learned repair operator (the shipped CNN-3 by default).
    Starts are drawn from the policy (seeded); ``sample=False`` takes its most likely start, which
    measured worse inside SA (see benchmarks/RESULTS.md)."""
    from heuristics.anneal import anneal

    repair = LearnedRepair.load(weights or DEFAULT_WEIGHTS, sample=sample)
    return anneal(window, iterations=iterations, repair=repair, destroy=RandomDestroy(max_remove),
                  accept=Metropolis(t_max, t_min), reinsert=reinsert, initial=initial,
                  convention=convention, time_limit_s=time_limit_s, seed=seed, method="nsa")
