"""benchmarks.placement_headroom: placements on a fixed schedule are feasible and costed by the
library; the ratios are to Slurm's own fit."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import placement_headroom as ph
from benchmarks import slurm_topology as st
from tjap.heuristics.slurm.tree import slurm_tree_nodes
from tjap.placement.tree.cost import job_cost


@pytest.fixture(scope="module")
def stream():
    topology = st.cluster_topology(12, seed=3)
    rows = st.paper_rows(25, 1, topology, max_nodes=6)
    per_job = [
        {
            "submit": r["submit_s"],
            "cpus": r["cpus"],
            "limit_min": r["limit_min"],
            "runtime_s": r["runtime_s"],
        }
        for r in rows
    ]
    start, end, seq = st.simulate_starts(per_job, topology.num_nodes)
    return topology, [r["cpus"] for r in rows], start, end, seq


def test_both_placements_are_feasible_and_cost_what_job_cost_says(stream):
    topology, sizes, start, end, seq = stream
    slurm = st.place_in_order(topology, sizes, start, end, seq, slurm_tree_nodes)
    now = st.place_in_order(topology, sizes, start, end, seq, ph.cheapest_now)
    for nodes in (slurm, now):
        ph.check_placement(sizes, start, end, nodes)
    # the first job starts on the empty cluster: the exact single-job optimum is the floor
    first = int(np.lexsort((seq, start))[0])
    assert job_cost(topology, now[first]) == pytest.approx(st.cost_floor(topology, sizes[first]))
    assert job_cost(topology, slurm[first]) >= job_cost(topology, now[first]) - 1e-6


def test_headroom_reports_ratios_to_slurm_tree():
    out = ph.headroom(2, jobs=30, nodes=12)
    assert out["ratio"]["slurm-tree"] == 1.0
    assert out["floor"] <= min(out["mean_cost"].values()) + 1e-6
    assert out["mean_cost"]["cheapest-now"] == pytest.approx(
        out["ratio"]["cheapest-now"] * out["mean_cost"]["slurm-tree"]
    )


def test_check_placement_refuses_a_shared_node_or_a_wrong_size():
    start, end = np.array([0, 5]), np.array([10, 20])
    with pytest.raises(AssertionError, match="share a node"):
        ph.check_placement([2, 2], start, end, [np.array([0, 1]), np.array([1, 2])])
    with pytest.raises(AssertionError, match="nodes for a size"):
        ph.check_placement([2, 2], start, end, [np.array([0, 0]), np.array([2, 3])])
    # one that starts after the other ended (plus the 1 s release) may reuse its nodes
    ph.check_placement(
        [2, 2], np.array([0, 11]), np.array([10, 20]), [np.array([0, 1]), np.array([0, 1])]
    )
