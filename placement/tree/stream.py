"""The paper's workload and its stream of scheduling windows, seeded so anyone regenerates them.

Workload (seed 002, section VI-A): inter-arrival times uniform integers in [5, 30] s, runtimes
uniform integers in [10, 1800] s, requested nodes uniform integers in [1, 40].

Window stream: every ``tau`` seconds finished jobs release their nodes and the arrivals of
[t - tau, t) join the queue. The queue is ordered by more waiting periods (NWP) first, then fewer
requested nodes. The window takes a greedy prefix of that order: it stops at the first job that
does not fit the idle count and, as the published code did, after ``cap`` multi-node jobs (default
5; ``None`` for no cap). Unselected jobs get NWP += 1. The selected multi-node jobs form the
:class:`~placement.tree.window.Window`; it is solved with ``method`` to move the cluster on, and the selected
one-node jobs are then placed first-fit (lowest idle id). A window with no multi-node job is not
counted. Evaluation runs in epochs of ``epoch_windows`` windows, each starting from an empty
cluster at a random job index.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tjap.errors import InvalidInputError
from placement.tree.topology import FatTree
from placement.tree.window import Window

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
    def generate(cls, num_jobs: int = 100_000, seed: int = 0, max_nodes: int = REQUESTED_NODES[1]
                 ) -> "Workload":
        """The paper's random workload."""
        if num_jobs < 1:
            raise InvalidInputError(f"num_jobs must be at least 1, got {num_jobs}")
        rng = np.random.default_rng(seed)
        gaps = rng.integers(INTER_ARRIVAL_S[0], INTER_ARRIVAL_S[1] + 1, num_jobs)
        arrival = np.cumsum(gaps) - gaps[0]
        runtime = rng.integers(RUNTIME_S[0], RUNTIME_S[1] + 1, num_jobs)
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


def window_stream(topology: FatTree, workload: Workload, *, num_windows: int, tau_s: int = 60,
                  cap: int | None = 5, epoch_windows: int = 100, seed: int = 0,
                  method: str = "auto", convention: str = "paper") -> Iterator[Window]:
    """Yield ``num_windows`` non-empty windows of the paper's stream.

    Each window's ``meta`` records its epoch, index in the epoch, time and job indices. The cluster
    moves on with the allocation found by ``method`` (any :func:`tjap.solve` method), so every
    method evaluated on the stream sees the same windows.
    """
    if num_windows < 1 or epoch_windows < 1 or tau_s < 1:
        raise InvalidInputError("num_windows, epoch_windows and tau_s must be positive")
    if cap is not None and cap < 1:
        raise InvalidInputError(f"cap must be a positive number of multi-node jobs or None, got {cap}")
    if workload.requested_nodes.max() > topology.num_nodes:
        raise InvalidInputError("a job requests more nodes than the cluster has")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    produced = 0
    epoch = 0
    while produced < num_windows:
        start = int(rng.integers(0, max(1, workload.num_jobs // 2)))
        for window in _epoch(topology, workload, start, epoch, min(epoch_windows, num_windows - produced),
                             tau_s, cap, method, convention, seed):
            yield window
            produced += 1
        epoch += 1


def _epoch(topology, workload, start, epoch, count, tau_s, cap, method, convention, seed):
    from placement.tree.online import window_ticks

    made = 0
    for tick in window_ticks(topology, workload, start, None, tau_s=tau_s, cap=cap, method=method,
                             convention=convention, seed=seed):
        if tick.window is None:
            continue
        yield tick.window.with_meta(epoch=epoch, index=made)
        made += 1
        if made == count:
            return
    raise InvalidInputError(
        f"the workload ran out of jobs after {made} windows of epoch {epoch}; "
        "generate more jobs or ask for fewer windows")


def generate_windows(layout: str = "paper", num_windows: int = 200, seed: int = 0, *,
                     cap: int | None = 5, tau_s: int = 60, epoch_windows: int = 100,
                     num_jobs: int = 100_000, method: str = "auto", convention: str = "paper"
                     ) -> list[Window]:
    """Windows of the paper's stream on a named 1000-node layout ("paper" or "published")."""
    topology = FatTree.from_layout(layout)
    workload = Workload.generate(num_jobs, seed)
    windows = list(window_stream(topology, workload, num_windows=num_windows, tau_s=tau_s, cap=cap,
                                 epoch_windows=epoch_windows, seed=seed, method=method,
                                 convention=convention))
    return windows
