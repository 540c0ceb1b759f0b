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
from heuristics.anneal import SA_PRESETS, anneal, preset_options
from heuristics.operators import Metropolis, RandomDestroy, Repair
from learned.features import repair_observation, require_fat_tree_features
from placement.tree.dcas import Arrays
from placement.tree.result import Result
from placement.tree.window import Window

WEIGHTS_DIR = Path(__file__).parent / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "nsa_cnn3.json"

#: The loop settings (every option but the repair's) of the SA presets NSA runs under: the
#: paper's Table I ("paper", the default) and the published code ("published").
NSA_PRESETS = {name: {k: v for k, v in SA_PRESETS[name].items() if k not in ("repair", "q")}
               for name in ("paper", "published")}


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
        require_fat_tree_features(window)
        a = Arrays(window)
        self.rng[0] = np.random.default_rng(seed)

        def callback(alive, length, size, others, num_others):
            return self.start(a.switch_q, a.pod_q, alive, length, size, others, num_others,
                              a.num_switches, a.num_pods)

        previous = k.LEARNED_REPAIR[0]
        k.LEARNED_REPAIR[0] = callback
        try:
            yield
        finally:
            k.LEARNED_REPAIR[0] = previous


@functools.lru_cache(maxsize=8)
def _load(path: str):
    return load_policy(path)


def build_policy(arch: str, spec: dict):
    """An untrained MaskableActorCriticPolicy of Table II architecture ``arch`` for ``spec``."""
    import gymnasium as gym
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from learned.nets import policy_kwargs

    obs_space = gym.spaces.Box(0.0, 1.0, (len(spec["channels"]), spec["q"]), dtype=np.float32)
    return MaskableActorCriticPolicy(obs_space, gym.spaces.Discrete(spec["q"]),
                                     lambda _: 0.0, **policy_kwargs(arch))


def load_policy(path, *, expect_spec: dict | None = None):
    """(policy, metadata) of NSA weights at ``path`` (.json, .pt or the stem), in eval mode;
    ``expect_spec``: refuse weights trained on other features."""
    from learned.nets import ARCHS
    from learned.policy_io import load_weights, spec_hash
    from tjap.errors import InvalidInputError

    def build(meta_path, meta):
        arch, spec = meta.get("architecture"), meta.get("feature_spec")
        if arch not in ARCHS or not isinstance(spec, dict):
            raise InvalidInputError(f"{meta_path}: unknown architecture {arch!r} or missing "
                                    f"feature_spec; architectures: {', '.join(ARCHS)}")
        if spec_hash(spec) != meta.get("feature_spec_hash"):
            raise InvalidInputError(f"{meta_path}: feature_spec does not match its hash; the "
                                    "file was edited")
        if expect_spec is not None and spec_hash(expect_spec) != spec_hash(spec):
            raise InvalidInputError(
                f"{meta_path} was trained on features {spec}, but {expect_spec} were asked for")
        return build_policy(arch, spec)

    return load_weights(path, "nsa", build)


def solve_nsa(window: Window, *, convention="paper", time_limit_s=None, seed=0, preset="paper",
              iterations=None, weights=None, max_remove=None, t_max=None, t_min=None,
              reinsert=None, initial=None, sample=True) -> Result:
    """NSA: the SA loop of :func:`heuristics.anneal.anneal` with the learned repair operator.

    Loop options left out (None) take their value from ``preset``, the loop settings of the SA
    preset of that name (:data:`NSA_PRESETS`); an option given explicitly overrides it. The
    repair is the policy, so the presets' ``repair`` and ``q`` do not apply (q comes from the
    weights), and the ``"best"`` SA preset is not offered: its destroy (n^D = 5) is outside what
    the shipped policies were trained on (n^D = 2).

    Parameters
    ----------
    window : Window
        The idle nodes and the jobs to place.
    convention : {"paper", "published"}, default "paper"
        Cost convention, see :mod:`placement.tree.cost` (not part of a preset).
    time_limit_s : float, optional
        Stop early (between chunks of 256 iterations) once exceeded; by default no limit.
    seed : int, default 0
        Seed of the loop's generator and of the policy's draws; the same seed gives the same
        Result.
    preset : {"paper", "published"}, default "paper"
        ``"paper"``: the paper's Table I loop (T_max 2500, T_min 2.5, 500 iterations, n^D = 2,
        largest first). ``"published"``: the published code's loop (T_max 25000, window order;
        pass ``convention="published"`` too). tjap/bench/sa_tables.py's NSA table runs each
        setting under the preset of its name.
    iterations : int, optional
        Moves; the cooling schedule spans them. 500 in both presets.
    weights : str or Path, optional
        The trained policy to load (the path of its JSON metadata); by default the shipped
        CNN-3 (``learned/weights/nsa_cnn3.json``, trained in the published setting).
    max_remove : int, optional
        n^D: a move removes 1..max_remove jobs, uniformly. 2 in both presets.
    t_max, t_min : float, optional
        Metropolis temperatures, cooled exponentially from t_max to t_min. t_max: paper 2500,
        published 25000; t_min 2.5 in both.
    reinsert : {"largest-first", "window-order"}, optional
        Order in which removed jobs are re-inserted. paper "largest-first", published
        "window-order".
    initial : "seq", a method name, a Result or an assignment, optional
        Where the search starts. ``"seq"`` in both presets.
    sample : bool, default True
        Draw each start from the policy's distribution (seeded); False takes its most likely
        start, which measured worse inside SA (see benchmarks/RESULTS.md).

    Returns
    -------
    Result
        The best solution found; see :func:`heuristics.anneal.anneal`.

    Raises
    ------
    InvalidInputError
        An unknown preset or reinsert order, an option out of range, weights that do not load, or
        a window on a general switch tree (the policy's features are fat-tree features).
    """
    require_fat_tree_features(window)
    o = preset_options(preset, NSA_PRESETS, iterations=iterations, max_remove=max_remove,
                       t_max=t_max, t_min=t_min, reinsert=reinsert, initial=initial)
    repair = LearnedRepair.load(weights or DEFAULT_WEIGHTS, sample=sample)
    return anneal(window, iterations=o["iterations"], repair=repair,
                  destroy=RandomDestroy(o["max_remove"]), accept=Metropolis(o["t_max"], o["t_min"]),
                  reinsert=o["reinsert"], initial=o["initial"], convention=convention,
                  time_limit_s=time_limit_s, seed=seed, method="nsa")
