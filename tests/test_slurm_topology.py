"""benchmarks/slurm_topology.py: the pure parts offline (size scaling, the ``--switches`` hint,
the stream's load, figures from Slurm's records, the simulator's prediction, the service's
breakdown), and a tiny live run of the three ways (``-m slurm``)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from benchmarks import slurm_topology as st
from tjap.placement.slurm.client import CompletedJob
from tjap.placement.slurm.harness import slurm_available
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.topology import Topology
from tjap.errors import InvalidInputError

TREE = Topology.from_slurm("""
SwitchName=top Switches=s1,s2
SwitchName=s1 Switches=l1,l2
SwitchName=l1 Nodes=n[01-04]
SwitchName=l2 Nodes=n[05-06]
SwitchName=s2 Switches=l3
SwitchName=l3 Nodes=n[07-09]
""")


def test_scale_sizes_covers_the_range_monotonically():
    scaled = st.scale_sizes(np.arange(1, 41), 12)
    assert scaled[0] == 1 and scaled[-1] == 12
    assert np.all(np.diff(scaled) >= 0)
    assert set(scaled.tolist()) == set(range(1, 13))
    # a uniform 1..40 stays nearly uniform: every size 3 or 4 times
    assert set(np.bincount(scaled)[1:].tolist()) <= {3, 4}
    assert st.scale_sizes([5, 10], 1).tolist() == [1, 1]
    with pytest.raises(InvalidInputError):
        st.scale_sizes([41], 12)
    with pytest.raises(InvalidInputError):
        st.scale_sizes([3], 0)


def test_leaves_needed_matches_brute_force():
    sizes = TREE.leaf_sizes.tolist()
    for n in range(1, TREE.num_nodes + 1):
        best = min(k for k in range(1, len(sizes) + 1)
                   if any(sum(c) >= n for c in itertools.combinations(sizes, k)))
        assert st.leaves_needed(TREE, n) == best
    with pytest.raises(InvalidInputError):
        st.leaves_needed(TREE, TREE.num_nodes + 1)


def test_switches_option():
    assert st.switches_option(TREE, 4, 10) == "--switches=1@0:10"
    assert st.switches_option(TREE, 5, 75) == "--switches=2@1:15"
    assert st.switches_option(TREE, 9, 0) == "--switches=3@0:00"
    with pytest.raises(InvalidInputError):
        st.switches_option(TREE, 2, -1)


def test_paper_rows_scale_and_load():
    t = st.cluster_topology(40, 1)
    rows = st.paper_rows(300, 5, t, max_nodes=12, load=0.8, compression=60)
    assert rows == st.paper_rows(300, 5, t, max_nodes=12, load=0.8, compression=60)
    size = np.array([r["cpus"] for r in rows])
    runtime = np.array([r["runtime_s"] for r in rows])
    submit = np.array([r["submit_s"] for r in rows])
    assert size.min() >= 1 and size.max() <= 12
    assert runtime.min() >= 1 and runtime.max() <= 30          # 10-1800 s over 60
    assert np.all(np.diff(submit) >= 0) and submit[0] == 0
    load = (size * runtime).sum() / (t.num_nodes * submit[-1])
    assert load == pytest.approx(0.8, rel=0.02)
    assert all(60 * r["limit_min"] >= r["runtime_s"] for r in rows)
    with pytest.raises(InvalidInputError):
        st.paper_rows(10, 0, t, max_nodes=41)


def _record(job_id, nodes, submit, start, end):
    return CompletedJob(job_id=job_id, name="x", user="root", state="COMPLETED",
                        partition="main", time_limit_s=60, submit_time=submit,
                        eligible_time=submit, start_time=start, end_time=end,
                        nodes=len(nodes.split(",")), cpus=1, node_list=nodes, exit_code="0:0")


def _per_job():
    rows = [{"id": 0, "cpus": 2, "runtime_s": 5, "limit_min": 1, "slurm_job_id": 11},
            {"id": 1, "cpus": 3, "runtime_s": 4, "limit_min": 1, "slurm_job_id": 12},
            {"id": 2, "cpus": 1, "runtime_s": 9, "limit_min": 1, "slurm_job_id": 13}]
    records = [_record(12, "n01,n05,n07", 1002, 1010, 1014),
               _record(11, "n01,n02", 1000, 1003, 1008),
               _record(13, "n09", 1004, 1004, 1013)]
    return st.job_rows(rows, records, TREE, 1000.0)


def test_job_rows_cost_and_wait_from_records():
    per_job = _per_job()
    assert [r["wait"] for r in per_job] == [3.0, 8.0, 0.0]
    assert [r["submit"] for r in per_job] == [0.0, 2.0, 4.0]
    assert per_job[0]["cost"] == job_cost(TREE, ["n01", "n02"]) == 2000.0
    assert per_job[1]["cost"] == job_cost(TREE, [0, 4, 6])
    assert [r["leaves"] for r in per_job] == [1, 3, 1]
    s = st.summarize(per_job, TREE, compression=10)
    assert s["mean_cost"] == pytest.approx(sum(r["cost"] for r in per_job) / 3)
    assert s["mean_cost_multi"] == pytest.approx((per_job[0]["cost"] + per_job[1]["cost"]) / 2)
    assert s["mean_wait_s"] == pytest.approx(11 / 3)
    assert s["makespan_s"] == 14.0 and s["makespan_trace_s"] == 140.0
    assert s["fewest_leaves_pct"] == 50.0          # 2 nodes on 1 leaf yes, 3 on 3 leaves no
    assert s["by_size"][3] == {"jobs": 1, "mean_cost": per_job[1]["cost"], "mean_wait_s": 8.0}


def test_job_rows_refuses_a_missing_record_or_wrong_size():
    rows = [{"id": 0, "cpus": 2, "runtime_s": 5, "limit_min": 1, "slurm_job_id": 11}]
    with pytest.raises(InvalidInputError, match="no completion record"):
        st.job_rows(rows, [], TREE, 0)
    with pytest.raises(InvalidInputError, match="asked for 2"):
        st.job_rows(rows, [_record(11, "n01", 0, 1, 2)], TREE, 0)


def test_predict_slurm_places_every_job_and_never_overlaps():
    t = st.cluster_topology(20, 3)
    rows = st.paper_rows(40, 1, t, max_nodes=6, load=0.9, compression=60)
    per_job = [{**r, "submit": float(r["submit_s"]), "wait": 0.0} for r in rows]
    pred = st.predict_slurm(per_job, t, compression=60)
    assert pred["jobs"] == 40
    assert pred["mean_wait_s"] >= 0 and pred["makespan_s"] > 0
    assert 0 <= pred["fewest_leaves_pct"] <= 100


def test_service_breakdown_from_log(tmp_path):
    log = tmp_path / "service.jsonl"
    lines = [{"event": "start", "time": 0},
             {"event": "window", "time": 1005.0, "winner": "scas", "cost": 2000.0,
              "slurm_tree_cost": 4000.0,
              "jobs": [{"job_id": 11, "outcome": "placed"}, {"job_id": 12, "outcome": "placed"}]},
             {"event": "window", "time": 1007.0, "winner": None, "cost": None,
              "slurm_tree_cost": None, "jobs": []}]
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    per_job = [{"slurm_job_id": 11, "submit": 1.0, "start": 6.0},
               {"slurm_job_id": 12, "submit": 3.0, "start": 5.0}]
    b = st.service_breakdown(log, per_job, 1000.0)
    assert b["windows"] == 2 and b["windows_placing"] == 1
    assert b["winners"] == {"scas": 1}
    assert b["window_cost_ratio"] == 0.5
    assert b["mean_held_s"] == pytest.approx(3.0)           # (5-1 + 5-3) / 2
    assert b["mean_placed_to_start_s"] == pytest.approx(0.5)


_REASON = slurm_available()


@pytest.mark.slurm
@pytest.mark.skipif(_REASON is not None, reason=f"no local Slurm: {_REASON}")
def test_three_ways_live():
    """8 jobs on 14 nodes, the three ways side by side: every job ran, on the nodes it asked
    for, costs computed from Slurm's node lists; the service placed every job."""
    t = st.cluster_topology(14, 2)
    rows = st.paper_rows(8, 0, t, max_nodes=5, load=0.9, compression=120)
    res = st.benchmark(rows, t, interval_s=1.0, switch_wait_s=5, time_limit_s=0.2,
                       compression=120)
    assert [r["way"] for r in res["ways"]] == list(st.WAYS)
    for r in res["ways"]:
        assert r["jobs"] == len(rows)
        assert all(j["state"] == "COMPLETED" for j in r["per_job"])
        assert [j["cpus"] for j in r["per_job"]] == [x["cpus"] for x in rows]
        for j in r["per_job"]:
            assert j["cost"] == job_cost(t, j["nodes"])
            assert j["wait"] >= 0
    tjap_way = res["ways"][1]
    assert tjap_way["service"]["windows_placing"] >= 1
    assert tjap_way["service"]["mean_held_s"] is not None
    assert res["simulator"]["jobs"] == len(rows)
    assert set(res["ratios"]) == {"tjap", "switches"}
