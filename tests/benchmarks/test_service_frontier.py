"""The placement service's rules on a simulated cluster (benchmarks/service_frontier.py): every
job starts on free nodes of its size, no later than it becomes visible, deterministically; with
a zero locality slack, one multi-node job per window and an endless wait, every multi-node job
runs on its cheapest nodes of the empty cluster."""

from __future__ import annotations

import pytest

from benchmarks import service_frontier as sf
from benchmarks import slurm_topology as st
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.cost import job_cost
from tjap.slurm.service import ServiceConfig

TOPOLOGY = st.cluster_topology(20, 3)
ROWS = st.paper_rows(30, 1, TOPOLOGY, max_nodes=6, load=0.9, compression=60)


def check(done, rows, visible_after_s=1.0):
    assert len(done) == len(rows)
    for d, r in zip(done, rows):
        assert len(set(d["nodes"])) == r["cpus"] == d["cpus"]
        assert d["start"] >= r["submit_s"] + visible_after_s
        assert d["end"] == d["start"] + r["runtime_s"]
        assert d["cost"] == job_cost(TOPOLOGY, TOPOLOGY.node_indices(d["nodes"]))
    for i, a in enumerate(done):
        for b in done[:i]:
            if a["start"] < b["end"] and b["start"] < a["end"]:
                assert not set(a["nodes"]) & set(b["nodes"])


def test_every_job_starts_on_free_nodes_deterministically():
    cfg = ServiceConfig(time_limit_s=None)
    done = sf.simulate_service(ROWS, TOPOLOGY, cfg)
    check(done, ROWS)
    assert done == sf.simulate_service(ROWS, TOPOLOGY, cfg)


def test_zero_slack_and_endless_wait_put_every_job_on_its_cheapest_nodes():
    cfg = ServiceConfig(time_limit_s=None, cap=1, locality_slack=0.0, locality_wait_s=1e5)
    done = sf.simulate_service(ROWS, TOPOLOGY, cfg)
    check(done, ROWS)
    for d in done:
        assert d["cost"] == pytest.approx(st.cost_floor(TOPOLOGY, d["cpus"]))
    plain = sf.simulate_service(ROWS, TOPOLOGY, ServiceConfig(time_limit_s=None, cap=1))
    assert sum(d["wait"] for d in done) >= sum(d["wait"] for d in plain)


def test_the_reference_and_bad_settings():
    ref = sf.reference(ROWS, TOPOLOGY)
    assert ref["mean_cost"] > 0 and ref["mean_wait_s"] >= 0
    with pytest.raises(InvalidInputError, match="tick"):
        sf.simulate_service(ROWS, TOPOLOGY, ServiceConfig(), tick_s=0)


def test_plot_from_saved_rows(tmp_path):
    rows = [
        {"slack": "none", "wait_s": "-", "cost": 0.97, "wait": 0.7},
        {"slack": 0.5, "wait_s": 8.0, "cost": 0.91, "wait": 0.9},
        {"slack": 0.5, "wait_s": 16.0, "cost": 0.89, "wait": 1.1},
    ]
    png = sf.plot(rows, tmp_path / "f.png", live=[("tjap s2", 0.94, 0.91)])
    assert png.stat().st_size > 1000
