"""The paper's random workload (seed 002, section VI-A) and the window policy's queue rules.

Jobs arrive with inter-arrival times uniform integers in [5, 30] s, run uniform integers in
[10, 1800] s and request uniform integers in [1, 40] nodes. The queue is ordered by more waiting
periods (NWP) first, then fewer requested nodes, then arrival; a window takes the greedy prefix of
that order that fits (at most ``cap`` multi-node jobs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tjap.errors import InvalidInputError

INTER_ARRIVAL_S = (5, 30)
RUNTIME_S = (10, 1800)
REQUESTED_NODES = (1, 40)


@dataclass(frozen=True)
class Workload:
    """Jobs in arrival order: arrival time, runtime and requested nodes (integer arrays)."""

    arrival_s: np.ndarray
    runtime_s: np.ndarray
    requested_nodes: np.ndarray

    def __post_init__(self):
        lengths = {len(self.arrival_s), len(self.runtime_s), len(self.requested_nodes)}
        if len(lengths) != 1:
            raise InvalidInputError("workload arrays arrival_s, runtime_s, requested_nodes differ in length")
        if len(self.arrival_s) == 0:
            raise InvalidInputError("a workload needs at least one job")
        if np.any(np.diff(self.arrival_s) < 0):
            raise InvalidInputError("workload arrival_s must be non-decreasing")
        if np.any(self.requested_nodes < 1) or np.any(self.runtime_s < 0):
            raise InvalidInputError("workload jobs need requested_nodes >= 1 and runtime_s >= 0")

    @property
    def num_jobs(self) -> int:
        return len(self.arrival_s)

    @classmethod
    def generate(cls, num_jobs: int = 100_000, seed: int = 0, max_nodes: int = REQUESTED_NODES[1],
                 runtime_scale: float = 1.0) -> "Workload":
        """The paper's random workload; ``runtime_scale`` multiplies every runtime (rounded), so
        that a cluster of ``1000 * runtime_scale`` nodes sees the paper's load per node."""
        if num_jobs < 1:
            raise InvalidInputError(f"num_jobs must be at least 1, got {num_jobs}")
        if not runtime_scale > 0:
            raise InvalidInputError(f"runtime_scale must be positive, got {runtime_scale}")
        rng = np.random.default_rng(seed)
        gaps = rng.integers(INTER_ARRIVAL_S[0], INTER_ARRIVAL_S[1] + 1, num_jobs)
        arrival = np.cumsum(gaps) - gaps[0]
        runtime = rng.integers(RUNTIME_S[0], RUNTIME_S[1] + 1, num_jobs)
        if runtime_scale != 1.0:
            runtime = np.rint(runtime * runtime_scale).astype(np.int64)
        nodes = rng.integers(REQUESTED_NODES[0], max_nodes + 1, num_jobs)
        return cls(arrival.astype(np.int64), runtime.astype(np.int64), nodes.astype(np.int64))


def select_prefix(requested: list[int], idle_count: int, cap: int | None) -> int:
    """Length of the greedy prefix of a priority-ordered queue that the window takes."""
    taken = multi = 0
    for k, n in enumerate(requested):
        if n > idle_count - taken or (n > 1 and cap is not None and multi == cap):
            return k
        taken += n
        multi += n > 1
    return len(requested)


def priority_order(queue: list[int], nwp: dict[int, int], requested: np.ndarray) -> list[int]:
    """Queue order of the paper: more waiting periods first, then fewer nodes, then arrival."""
    return sorted(queue, key=lambda j: (-nwp[j], int(requested[j]), j))
