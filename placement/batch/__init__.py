"""Batch-queue simulation (seed 004, and seed 002's per-job baselines): an event-driven simulator
of a Slurm-like queue with multifactor priority and backfilling, loaders for real traces, and an
adapter to a real Slurm (:mod:`tjap.placement.slurm.client`).

>>> from tjap.placement.batch import load_trace, simulate
>>> from tjap.placement.batch import bundled_trace
>>> jobs, report = load_trace(bundled_trace("ls6-a100"))   # shipped with the package
>>> simulate(jobs, 76, backfill="easy").summary()["mean_wait_s"]
"""

from tjap.core.renames import renamed
from tjap.placement.batch.jobs import Jobs
from tjap.placement.batch.replay import monthly_waits, replay_trace
from tjap.placement.batch.simulator import (
    BatchResult,
    Priority,
    SchedulerConfig,
    Simulator,
    Snapshot,
    simulate,
)
from tjap.placement.batch.synthetic import synthetic_jobs
from tjap.placement.batch.traces import TraceReport, bundled_trace, default_nodes, load_trace

# the old names, kept for one release (they warn): tjap.core.renames
__getattr__ = renamed(__name__, {"SimulationResult": "BatchResult"})

__all__ = [
    "BatchResult",
    "Jobs",
    "Priority",
    "SchedulerConfig",
    "Simulator",
    "Snapshot",
    "TraceReport",
    "bundled_trace",
    "default_nodes",
    "load_trace",
    "monthly_waits",
    "replay_trace",
    "simulate",
    "synthetic_jobs",
]
