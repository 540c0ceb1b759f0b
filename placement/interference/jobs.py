"""Workloads of seed 001: distributed training jobs arriving at the schedulers, interval by interval.

A job trains one of the 8 model types (uniform), with U{1..4} workers and U{1..4} parameter servers
and U{EPOCHS} epochs (:mod:`tjap.placement.interference.profiles`). Arrival counts per scheduler and
30-minute interval follow one of three patterns (Sec. VI-B):

- ``uniform``: 15 jobs per interval at every scheduler (the paper: "uniformly ... 15 jobs per
  scheduling interval");
- ``poisson``: Poisson(15) jobs per interval at every scheduler;
- ``trace``: the arrival pattern of a real trace (the paper used Google's): its submit times binned
  into 30-minute intervals and scaled so the mean is 15 per interval per scheduler; scheduler p
  reads the series from an offset of p / schedulers of its length (cyclically), and scaled counts
  are rounded stochastically. Any trace :func:`tjap.placement.batch.load_trace` reads works; the default
  is the LS6 A100 trace bundled in ``placement/batch/data/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tjap.core.errors import InvalidInputError, check_int, check_number
from tjap.placement.interference import profiles

ARRIVALS = ("uniform", "poisson", "trace")
INTERVAL_S = 1800.0
JOBS_PER_INTERVAL = 15
#: The bundled LS6 A100 trace (placement/batch/data/, see :func:`tjap.placement.batch.traces.bundled_trace`).
DEFAULT_TRACE = Path(__file__).resolve().parents[1] / "batch" / "data" / "ls6-a100.tsv"
#: A job's state in a run: queued, placed and running, or finished.
WAITING, RUNNING, DONE = 0, 1, 2


def default_rate(cluster) -> float:
    """15 jobs per interval per 100 servers of a partition (the paper's 15 per scheduler of its
    100-server pods), so small clusters get a load like the paper's."""
    return 15.0 * cluster.num_servers / cluster.num_partitions / 100.0


@dataclass(frozen=True)
class Workload:
    """Jobs in arrival order (arrays of one length): ``arrival`` interval, ``home`` scheduler,
    ``model`` type, ``workers``, ``ps``, ``epochs``."""

    arrival: np.ndarray
    home: np.ndarray
    model: np.ndarray
    workers: np.ndarray
    ps: np.ndarray
    epochs: np.ndarray
    pattern: str = "custom"
    seed: int = 0

    def __post_init__(self):
        n = len(np.asarray(self.arrival))
        bounds = {
            "arrival": (0, 10**7),
            "home": (0, 10**5),
            "model": (0, len(profiles.MODEL_NAMES) - 1),
            "workers": (1, 64),
            "ps": (1, 64),
            "epochs": (1, 10**4),
        }
        for name, (low, high) in bounds.items():
            a = np.asarray(getattr(self, name))
            if a.shape != (n,) or not (np.issubdtype(a.dtype, np.integer) or n == 0):
                raise InvalidInputError(
                    f"workload {name} must be a 1-d integer array of length {n}"
                )
            if n and (a.min() < low or a.max() > high):
                raise InvalidInputError(
                    f"workload {name} must lie in [{low}, {high}], got [{a.min()}, {a.max()}]"
                )
            a = np.ascontiguousarray(a, dtype=np.int64)
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        if n and np.any(np.diff(self.arrival) < 0):
            raise InvalidInputError("workload jobs must be sorted by arrival interval")

    def __len__(self) -> int:
        return len(self.arrival)

    @property
    def tasks(self) -> np.ndarray:
        return self.workers + self.ps

    @classmethod
    def generate(
        cls,
        schedulers: int,
        intervals: int = 48,
        pattern: str = "uniform",
        seed: int = 0,
        *,
        rate: float = JOBS_PER_INTERVAL,
        trace=None,
    ) -> "Workload":
        """Jobs arriving at ``schedulers`` schedulers over ``intervals`` intervals (see the module
        docstring), deterministic in ``seed``."""
        for name, value in (("schedulers", schedulers), ("intervals", intervals)):
            check_int(name, value, 1, 100000)
        check_number(
            "rate",
            rate,
            0,
            1000,
            low_open=True,
            must="a number in (0, 1000] jobs per interval per scheduler",
        )
        rng = np.random.default_rng(seed)
        if pattern == "uniform":
            counts = np.full((intervals, schedulers), int(round(rate)), np.int64)
        elif pattern == "poisson":
            counts = rng.poisson(rate, size=(intervals, schedulers))
        elif pattern == "trace":
            counts = trace_counts(trace, intervals, schedulers, rate, rng)
        else:
            raise InvalidInputError(
                f"unknown arrival pattern {pattern!r}; choose one of {', '.join(ARRIVALS)}"
            )
        arrival = np.repeat(np.repeat(np.arange(intervals), schedulers), counts.ravel())
        home = np.repeat(np.tile(np.arange(schedulers), intervals), counts.ravel())
        n = len(arrival)
        low_w, high_w = profiles.WORKERS
        low_p, high_p = profiles.PARAMETER_SERVERS
        low_e, high_e = profiles.EPOCHS
        return cls(
            arrival,
            home,
            rng.integers(len(profiles.MODEL_NAMES), size=n),
            rng.integers(low_w, high_w + 1, size=n),
            rng.integers(low_p, high_p + 1, size=n),
            rng.integers(low_e, high_e + 1, size=n),
            pattern,
            int(seed),
        )


def trace_counts(
    trace, intervals: int, schedulers: int, rate: float, rng: np.random.Generator
) -> np.ndarray:
    """(intervals, schedulers) arrival counts following ``trace``'s submissions (module doc)."""
    from tjap.placement.batch import load_trace

    path = Path(trace) if trace is not None else DEFAULT_TRACE
    if not path.exists():
        raise InvalidInputError(f"trace {path} not found; pass --trace PATH (an SWF or sacct file)")
    jobs, _ = load_trace(path)
    if len(jobs) < 2:
        raise InvalidInputError(f"trace {path} holds fewer than 2 jobs; cannot derive arrivals")
    submit = jobs.submit_s - jobs.submit_s.min()
    series = np.bincount((submit // int(INTERVAL_S)).astype(np.int64)).astype(float)
    series *= rate / series.mean()
    length = len(series)
    counts = np.empty((intervals, schedulers), np.int64)
    for p in range(schedulers):
        index = (p * length // schedulers + np.arange(intervals)) % length
        scaled = series[index]
        counts[:, p] = np.floor(scaled + rng.random(intervals)).astype(np.int64)
    return counts
