"""The simulator against a real local Slurm on a slice of the LS6 trace (marked ``slurm``; CI
installs Slurm first). The full 200-job comparison is ``python -m benchmarks.slurm_fidelity``."""

from __future__ import annotations

import pytest

from tjap.placement.batch.traces import bundled_trace
from tjap.placement.slurm.harness import slurm_available

LS6 = bundled_trace("ls6-a100")

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(slurm_available() is not None, reason=str(slurm_available())),
]


def test_simulator_follows_real_slurm_on_a_trace_slice():
    from benchmarks.slurm_fidelity import fidelity

    # 40 jobs of 2023-01-15, 2400x faster, on 8 CPUs: about 3 minutes, with queueing
    fcfs, easy = fidelity(
        str(LS6), "2023-01-15", count=40, compression=2400, cpus=8, modes=("fcfs", "easy")
    )
    for r in (fcfs, easy):
        print({k: v for k, v in r.items() if k != "per_job"})
        assert r["jobs"] == 40 and r["mean_wait_slurm_s"] > 5  # the slice does queue
    # FCFS: the same order, waits within a few seconds (measured: 100 %, 0.6 s)
    assert fcfs["same_order_pct"] >= 90 and fcfs["mean_abs_wait_error_s"] <= 3
    # EASY: most pairs in the same order and the mean wait close (measured: about 97 % of
    # ordered pairs, 65 % of jobs in no discordant pair; see benchmarks/RESULTS.md)
    assert easy["concordant_pairs_pct"] >= 85
    assert abs(easy["mean_wait_error_s"]) <= 0.3 * easy["mean_wait_slurm_s"]


# -- node-level replay: each trace node a Slurm node ------------------------------------
def test_simulator_follows_a_multi_node_slurm_on_a_trace_slice():
    from benchmarks.slurm_fidelity import fidelity

    # 40 jobs of 2023-01-15, 2400x faster, on 8 Slurm nodes (8 slurmd, jobs on whole nodes)
    fcfs, easy = fidelity(
        str(LS6),
        "2023-01-15",
        count=40,
        compression=2400,
        cpus=8,
        modes=("fcfs", "easy"),
        nodes_as="slurm-nodes",
    )
    for r in (fcfs, easy):
        print({k: v for k, v in r.items() if k not in ("per_job", "out_of_order")})
        assert r["jobs"] == 40 and r["mean_wait_slurm_s"] > 5 and r["t0_unix"] > 0
    assert fcfs["same_order_pct"] >= 90 and fcfs["mean_abs_wait_error_s"] <= 3
    assert easy["concordant_pairs_pct"] >= 90
