"""A tiny chained-job case shared by the provisioner tests: 4 nodes kept busy by 2-node, 5-hour
jobs every half hour, so that a 2-node successor waits hours; exact (no backfill interval)
scheduling."""

from __future__ import annotations

import numpy as np

from tjap.placement.batch import Jobs, SchedulerConfig
from tjap.placement.batch.chained import Pair

H = 3600
EXACT = SchedulerConfig(backfill="easy", bf_interval_s=0, bf_resolution_s=1)
PAIR = Pair(nodes=2, runtime_s=6 * H, limit_s=6 * H)


def busy_trace(n=120) -> Jobs:
    return Jobs.build(
        submit_s=np.arange(n) * 1800, nodes=[2] * n, limit_s=[6 * H] * n, runtime_s=[5 * H] * n
    )
