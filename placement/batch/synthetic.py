"""Synthetic workloads for the batch simulator: real jobs resampled onto Poisson arrivals."""

from __future__ import annotations

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.placement.batch.jobs import Jobs


def synthetic_jobs(count: int, nodes: int, *, like: Jobs, load: float = 0.8, seed: int = 0) -> Jobs:
    """``count`` jobs whose (nodes, limit, runtime, user) rows are drawn with replacement from
    ``like`` (rows needing at most ``nodes`` nodes), arriving as a Poisson process whose rate
    offers ``load`` of the cluster's node-seconds. Scaling ``count`` keeps the load, so the
    simulated queue behaves alike at every size."""
    if count < 1 or nodes < 1:
        raise InvalidInputError(f"count and nodes must be positive, got {count}, {nodes}")
    if not 0 < load <= 10:
        raise InvalidInputError(f"load must lie in (0, 10], got {load}")
    pool = np.flatnonzero(like.nodes <= nodes)
    if pool.size == 0:
        raise InvalidInputError(f"no job of {like.source or 'the template'} fits {nodes} nodes")
    rng = np.random.default_rng(seed)
    rows = rng.choice(pool, size=count)
    work = float((like.nodes[pool] * like.runtime_s[pool]).mean())
    gap = work / (load * nodes)  # mean inter-arrival time
    submit = np.floor(np.cumsum(rng.exponential(gap, count))).astype(np.int64)
    return Jobs.build(
        submit_s=submit,
        nodes=like.nodes[rows],
        limit_s=like.limit_s[rows],
        runtime_s=like.runtime_s[rows],
        user=like.user[rows],
        source=f"synthetic({count}, like={like.source or 'jobs'}, load={load})",
    )
