"""Hand-written provisioners for chained jobs (seed 004's baselines), behind the submit-or-wait
protocol that learned provisioners implement too, and the evaluation loop they all share."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.core.renames import renamed
from tjap.core.result import Measurement
from tjap.placement.batch.chained import DAY_S, HOUR_S, ChainedEpisode, Pair, split
from tjap.placement.batch.jobs import Jobs
from tjap.placement.batch.simulator import Priority, SchedulerConfig

# the old names, kept for one release (they warn): tjap.core.renames
__getattr__ = renamed(__name__, {"Evaluation": "ProvisionEvaluation"})

LOADS = {
    "heavy": (12 * HOUR_S, np.inf),
    "medium": (2 * HOUR_S, 12 * HOUR_S),
    "light": (-np.inf, 2 * HOUR_S),
}

#: Scheduler settings of chained-job episodes. ``"easy"``: Slurm's defaults (EASY backfill, equal
#: priorities, i.e. first come, first served), the simulator's default. ``"mirage"``: the published
#: Mirage simulator of seed 004: conservative backfill (a reservation for every waiting job) and
#: priority = age (weight 7000, capped at PriorityMaxAge = 7 days) + job size (weight 100), the
#: weights of its slurm_config.json without the fair-share, QoS and partition terms it left unused.
SCHEDULERS = {
    "easy": SchedulerConfig(),
    "mirage": SchedulerConfig(backfill="conservative", priority=Priority(age=7000, job_size=100)),
}


def scheduler_config(name: str) -> SchedulerConfig:
    if name not in SCHEDULERS:
        raise InvalidInputError(
            f"unknown scheduler setting {name!r}; choose one of {', '.join(SCHEDULERS)}"
        )
    return SCHEDULERS[name]


class Provisioner(Protocol):
    """Decides, at each 10-minute decision point of an episode, whether to submit the successor.

    ``decide(episode)`` returns True (submit now) or False (wait another interval): one decision,
    not a record. The records are the evaluations: :func:`evaluate` over simulated pairs returns
    a :class:`ProvisionEvaluation`, :func:`tjap.placement.slurm.chained.run_live` on a real Slurm a
    :class:`~tjap.placement.slurm.chained.LiveResult`; both have the fields every result shares
    (:data:`tjap.core.result.COMMON_FIELDS`), with the provisioner's ``name`` as ``method``.
    """

    name: str

    def decide(self, episode: ChainedEpisode) -> bool: ...


class Reactive:
    """Submit when the predecessor ends (never earlier)."""

    name = "reactive"

    def decide(self, episode: ChainedEpisode) -> bool:
        return False


@dataclass
class Average:
    """Submit once the predecessor's expected end (its start plus its limit) is at most T_avg
    away, T_avg the mean wait of the jobs started in the last ``window_s``."""

    window_s: int = DAY_S
    name: str = "avg"

    def decide(self, episode: ChainedEpisode) -> bool:
        pred = episode.predecessor()
        if pred["start_s"] is None:
            return False
        return pred["expected_end_s"] - episode.now <= episode.recent_mean_wait_s(self.window_s)


def run_episode(episode: ChainedEpisode, provisioner: Provisioner) -> int:
    """The one decision loop: ask the provisioner every interval until the successor is submitted
    (or the predecessor ends); returns the outcome (successor start minus predecessor end, s)."""
    while not episode.done:
        episode.step(bool(provisioner.decide(episode)))
    return episode.outcome()


def sample_pairs(
    jobs: Jobs,
    nodes: int,
    pair: Pair,
    start_s: int,
    end_s: int,
    load: str | None,
    count: int,
    seed: int = 0,
    config: SchedulerConfig | None = None,
    max_tries: int | None = None,
) -> list[int]:
    """Injection times in [start_s, end_s) whose reactive outcome falls in the ``load`` level
    (heavy > 12 h, medium 2-12 h, light < 2 h; None: any), drawn in a seeded order."""
    if load is not None and load not in LOADS:
        raise InvalidInputError(f"load must be one of {', '.join(LOADS)}, got {load!r}")
    if end_s <= start_s:
        raise InvalidInputError("the evaluation period is empty (--to must be after --from)")
    rng = np.random.default_rng(seed)
    low, high = LOADS[load] if load else (-np.inf, np.inf)
    found = []
    for _ in range(max_tries or 20 * count):
        t = int(rng.integers(start_s, end_s))
        outcome = run_episode(ChainedEpisode(jobs, nodes, t, pair, config=config), Reactive())
        if low < outcome <= high:
            found.append(t)
            if len(found) == count:
                break
    return found


@dataclass(frozen=True)
class ProvisionEvaluation(Measurement):
    """A provisioner's outcomes over injected pairs: mean interruption and overlap (hours), the
    fraction of pairs with no interruption, and every pair's outcome (successor start minus
    predecessor end, hours; negative = overlap). ``summary()`` leaves the outcomes out.

    The fields every result shares (:data:`tjap.core.result.COMMON_FIELDS`): ``method`` (the
    provisioner's name, an alias of ``policy``), ``status`` (FEASIBLE: the pairs ran their
    course), ``objective`` (the mean interruption in hours, ``mean_interruption_h``; lower is
    better), ``runtime_s`` (seconds of the evaluation) and ``seed`` (the seed the injection
    times were drawn with and the provisioner built with, as the caller gave it).
    """

    policy: str
    pairs: int
    mean_interruption_h: float
    mean_overlap_h: float
    zero_interruption_fraction: float
    outcomes_h: tuple
    runtime_s: float = 0.0
    seed: int = 0

    @property
    def objective(self) -> float:
        """The mean interruption in hours (``mean_interruption_h``)."""
        return self.mean_interruption_h

    def summary(self) -> dict:
        return {k: v for k, v in self.to_dict().items() if k != "outcomes_h"}


def evaluate(
    jobs: Jobs,
    nodes: int,
    pair: Pair,
    times: list[int],
    provisioner: Provisioner,
    config: SchedulerConfig | None = None,
    seed: int = 0,
) -> ProvisionEvaluation:
    """Mean interruption and overlap (hours) of ``provisioner`` over pairs injected at ``times``
    (one :func:`run_episode` each).

    Returns a :class:`ProvisionEvaluation`: method (the provisioner's name), status FEASIBLE,
    objective (the mean interruption, hours), runtime_s, and ``seed`` as given (the seed that
    drew ``times`` and built the provisioner, recorded with the figures)."""
    check_int("seed", seed)
    started = time.perf_counter()
    outcomes = np.array(
        [
            run_episode(ChainedEpisode(jobs, nodes, t, pair, config=config), provisioner)
            for t in times
        ],
        dtype=float,
    )
    interruption, overlap = split(outcomes)
    return ProvisionEvaluation(
        policy=provisioner.name,
        pairs=len(times),
        mean_interruption_h=float(interruption.mean()) if len(times) else 0.0,
        mean_overlap_h=float(overlap.mean()) if len(times) else 0.0,
        zero_interruption_fraction=float((interruption == 0).mean()) if len(times) else 0.0,
        outcomes_h=tuple((outcomes / HOUR_S).tolist()),
        runtime_s=time.perf_counter() - started,
        seed=int(seed),
    )
