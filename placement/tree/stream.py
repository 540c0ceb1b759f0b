"""The paper's workload and its stream of scheduling windows, seeded so anyone regenerates them.

Workload (seed 002, section VI-A): inter-arrival times uniform integers in [5, 30] s, runtimes
uniform integers in [10, 1800] s, requested nodes uniform integers in [1, 40].

Window stream: every ``tau`` seconds finished jobs release their nodes and the arrivals of
[t - tau, t) join the queue. The queue is ordered by more waiting periods (NWP) first, then fewer
requested nodes. The window takes a greedy prefix of that order: it stops at the first job that
does not fit the idle count and, as the published code did, after ``cap`` multi-node jobs (default
5; ``None`` for no cap). Unselected jobs get NWP += 1. The selected multi-node jobs form the
:class:`~tjap.placement.tree.window.Window`; it is solved with ``method`` to move the cluster on, and the selected
one-node jobs are then placed first-fit (lowest idle id). A window with no multi-node job is not
counted. Evaluation runs in epochs of ``epoch_windows`` windows, each starting from an empty
cluster at a random job index, as the authors' code did (the index is drawn in the first half of
the workload; theirs was drawn in [0, jobs - 128)).

Any :class:`~tjap.placement.tree.workload.Workload` feeds the stream: the generator's, or a job list
read by :meth:`~tjap.placement.tree.workload.Workload.from_file` (the authors' published format, SWF
or sacct), which is used as read (nothing rescaled).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.online import window_ticks
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window
from tjap.placement.tree.workload import REQUESTED_NODES, RUNTIME_S, Workload


def window_stream(
    topology: Topology,
    workload: Workload,
    *,
    num_windows: int,
    tau_s: int = 60,
    cap: int | None = 5,
    epoch_windows: int = 100,
    seed: int = 0,
    method: str = "auto",
    convention: str = "paper",
    warmup_windows: int = 0,
) -> Iterator[Window]:
    """Yield ``num_windows`` non-empty windows of the paper's stream (after the first
    ``warmup_windows`` of each epoch, which move the cluster on but are not yielded).

    Each window's ``meta`` records its epoch, index in the epoch, time and job indices. The cluster
    moves on with the allocation found by ``method`` (any :func:`tjap.solve` method), so every
    method evaluated on the stream sees the same windows.
    """
    if num_windows < 1 or epoch_windows < 1 or tau_s < 1:
        raise InvalidInputError("num_windows, epoch_windows and tau_s must be positive")
    if cap is not None and cap < 1:
        raise InvalidInputError(
            f"cap must be a positive number of multi-node jobs or None, got {cap}"
        )
    if workload.requested_nodes.max() > topology.num_nodes:
        raise InvalidInputError(
            f"a job requests {int(workload.requested_nodes.max())} nodes, more nodes than the "
            f"cluster has ({topology.num_nodes}); drop such jobs (Workload.from_file(..., "
            "cluster_nodes=N) does)"
        )
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    produced = 0
    epoch = 0
    while produced < num_windows:
        start = int(rng.integers(0, max(1, workload.num_jobs // 2)))
        count = min(epoch_windows, num_windows - produced)
        try:
            for window in _epoch(
                topology,
                workload,
                start,
                epoch,
                count,
                tau_s,
                cap,
                method,
                convention,
                seed,
                warmup_windows,
            ):
                yield window
                produced += 1
        except _RanOut as out:
            warm = f" after {warmup_windows} warm-up windows" if warmup_windows else ""
            raise InvalidInputError(
                f"the workload ({workload.num_jobs} jobs) ran out of jobs in epoch {epoch} "
                f"(from job {start}{warm}) after {out.made} of its {count} windows: "
                f"{produced} of the {num_windows} windows asked were made; ask for fewer "
                "windows (or fewer per epoch), or give more jobs"
            ) from None
        epoch += 1


class _RanOut(Exception):
    """An epoch's jobs ran out before its windows were made (``made`` of them were)."""

    def __init__(self, made: int):
        super().__init__(made)
        self.made = made


def _epoch(
    topology, workload, start, epoch, count, tau_s, cap, method, convention, seed, warmup_windows=0
):
    made = skipped = 0
    for tick in window_ticks(
        topology,
        workload,
        start,
        None,
        tau_s=tau_s,
        cap=cap,
        method=method,
        convention=convention,
        seed=seed,
    ):
        if tick.window is None:
            continue
        if skipped < warmup_windows:
            skipped += 1
            continue
        yield tick.window.with_meta(epoch=epoch, index=made)
        made += 1
        if made == count:
            return
    raise _RanOut(made)


#: Nodes of the paper's cluster, whose load the stream on another cluster keeps per node.
PAPER_NODES = 1000
#: On a cluster smaller than the paper's, the largest job requests at most this share of it.
LARGEST_JOB_SHARE = 0.25


def tree_load(num_nodes: int) -> dict:
    """How the paper's generator is scaled for a cluster of ``num_nodes`` nodes, so that it sees
    the paper's offered load per node (about 1.06: on average 1.06 x num_nodes nodes' worth of
    work arrives per second of work the cluster can do) with jobs that outlive many windows.

    Returns ``max_nodes`` (the largest request), ``runtime_scale`` and ``arrival_scale`` (for
    :meth:`~tjap.placement.tree.workload.Workload.generate`):

    - at least the paper's 1000 nodes: requests stay 1-40 nodes and arrivals the paper's, and
      every runtime is multiplied by num_nodes / 1000;
    - fewer nodes: runtimes stay the paper's (10-1800 s, many windows of 60 s long), requests
      are 1 to min(40, num_nodes // 4) nodes (at least 2, at most the cluster), so that several
      jobs fit at once, and every inter-arrival time is multiplied by
      (1000 / num_nodes) x (mean request / 20.5), which keeps the offered load per node.

    On 1000 nodes this is the paper's generator, unscaled.
    """
    if num_nodes < 1:
        raise InvalidInputError(f"a cluster needs at least one node, got {num_nodes}")
    if num_nodes >= PAPER_NODES:
        return {
            "max_nodes": REQUESTED_NODES[1],
            "runtime_scale": num_nodes / PAPER_NODES,
            "arrival_scale": 1.0,
        }
    max_nodes = min(REQUESTED_NODES[1], num_nodes, max(2, int(num_nodes * LARGEST_JOB_SHARE)))
    mean_request = (REQUESTED_NODES[0] + max_nodes) / 2
    paper_mean_request = (REQUESTED_NODES[0] + REQUESTED_NODES[1]) / 2
    return {
        "max_nodes": max_nodes,
        "runtime_scale": 1.0,
        "arrival_scale": PAPER_NODES / num_nodes * mean_request / paper_mean_request,
    }


def generate_windows(
    layout: str = "paper",
    num_windows: int = 200,
    seed: int = 0,
    *,
    cap: int | None = 5,
    tau_s: int = 60,
    epoch_windows: int = 100,
    num_jobs: int = 100_000,
    method: str = "auto",
    convention: str = "paper",
    topology=None,
    warmup_windows: int | None = None,
    workload: Workload | None = None,
    progress=None,
) -> list[Window]:
    """Windows of the paper's stream on a named 1000-node layout ("paper" or "published"), or
    on ``topology`` (any :class:`~tjap.placement.tree.topology.Topology`: a user's cluster).

    The jobs are the paper's generator's (``num_jobs`` of them, drawn with ``seed``) unless
    ``workload`` is given: a :class:`~tjap.placement.tree.workload.Workload`, such as a job list read by
    :meth:`~tjap.placement.tree.workload.Workload.from_file`, used as it is (nothing rescaled;
    ``num_jobs`` ignored).

    On a ``topology`` the generator is scaled to the tree's node count by :func:`tree_load`, so
    that the cluster carries the paper's load per node: on a tree of 1000 nodes or more every
    runtime is multiplied by nodes / 1000; on a smaller one runtimes stay the paper's, requests
    are at most a quarter of the cluster (at most 40) and arrivals are spaced out to keep the
    load. Each epoch first replays ``warmup_windows`` windows that are not kept (default: one
    mean job runtime's worth, of the generator or of ``workload``), so the kept windows see a
    loaded, fragmented cluster (busy nodes scattered over the switches, a queue behind the
    window) rather than an empty one. On a named layout nothing is scaled and nothing skipped
    unless ``warmup_windows`` is given. ``progress(made, num_windows)``, if given, is called
    after each window.
    """
    load = None
    if topology is None:
        topology = FatTree.from_layout(layout)
    else:
        load = tree_load(topology.num_nodes)
        if warmup_windows is None:
            mean_runtime = (
                (RUNTIME_S[0] + RUNTIME_S[1]) / 2 * load["runtime_scale"]
                if workload is None
                else float(np.mean(workload.runtime_s))
            )
            warmup_windows = int(np.ceil(mean_runtime / tau_s))
    if warmup_windows is not None and warmup_windows < 0:
        raise InvalidInputError(f"warmup_windows must be 0 or more, got {warmup_windows}")
    if workload is None:
        workload = Workload.generate(num_jobs, seed, **(load or {}))
    elif not isinstance(workload, Workload):
        raise InvalidInputError(
            f"workload must be a Workload (Workload.from_file reads one), "
            f"got {type(workload).__name__}"
        )
    windows = []
    for window in window_stream(
        topology,
        workload,
        num_windows=num_windows,
        tau_s=tau_s,
        cap=cap,
        epoch_windows=epoch_windows,
        seed=seed,
        method=method,
        convention=convention,
        warmup_windows=warmup_windows or 0,
    ):
        windows.append(window)
        if progress is not None:
            progress(len(windows), num_windows)
    return windows
