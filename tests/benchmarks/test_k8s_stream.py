"""The stream benchmark of gangs on Kubernetes (benchmarks/k8s_stream.py): its offline mode on
the in-memory twin (whole gangs, slices inside their racks, no window above Kueue's choice, the
same stream from the same seed), and the twin against a real control plane (marked k8s)."""

from __future__ import annotations

import pytest

from benchmarks import k8s_stream
from tjap.placement.k8s.harness import missing_programs

NODES, JOBS = 144, 20  # one block of 8 racks of 18


def stream(arm, *, offline=True, seed=3):
    jobs = k8s_stream.workload(JOBS, seed, 72, NODES, 0.9)
    return k8s_stream.run_arm(arm, NODES, jobs, 7200, "kueue-bestfit", 600, offline=offline)


def placements(row):
    return [(j["name"], j["nodes"], j["wait_s"]) for j in row["per_job"]]


def test_offline_streams_place_whole_gangs_and_tjap_never_above_kueue_per_window():
    kueue, tjap = stream("kueue"), stream("tjap")
    for row in (kueue, tjap):
        assert row["started"] == JOBS and row["slices_kept_share"] == 1.0
        for job in row["per_job"]:
            assert len(set(job["nodes"])) == job["size"]
        assert row["placed_per_s"] is None and row["bound_per_s"] is None  # live figures only
    assert tjap["windows"] > 0 and tjap["windows_above_kueue"] == 0
    assert kueue["windows_above_kueue"] == 0  # Kueue's choice is its own reference
    assert placements(stream("tjap")) == placements(tjap)  # the same seed, the same stream


def test_segmented_jobs_that_may_wait_for_their_floor_change_the_stream():
    """With --topology-wait some segmented job waits longer than without it and the stream's
    placements differ; every job still starts whole, and no window is above Kueue's choice."""
    jobs = k8s_stream.workload(JOBS, 3, 72, NODES, 0.9)
    plain = k8s_stream.run_arm("tjap", NODES, jobs, 7200, "kueue-bestfit", 600, offline=True)
    held = k8s_stream.run_arm("tjap", NODES, jobs, 7200, "kueue-bestfit", 600, offline=True,
                              topology_wait_s=3600)  # fmt: skip
    assert held["started"] == JOBS and held["windows_above_kueue"] == 0
    assert held["slices_kept_share"] == 1.0
    waits = {j["name"]: j["wait_s"] for j in held["per_job"]}
    assert any(waits[j["name"]] > j["wait_s"] for j in plain["per_job"] if "slice" in j)
    assert placements(held) != placements(plain)


def test_the_fragmentation_term_of_the_tjap_arm_may_keep_racks_instead_of_blocks():
    """--fragmentation-level rack prices the whole free racks a window breaks into: the stream
    differs from the default (whole blocks), every job starts whole, no window above Kueue's."""
    nodes = 2 * NODES  # two blocks
    jobs = k8s_stream.workload(JOBS, 3, 72, nodes, 0.9)
    default = k8s_stream.run_arm("tjap", nodes, jobs, 7200, "kueue-bestfit", 600, offline=True)
    racks = k8s_stream.run_arm("tjap", nodes, jobs, 7200, "kueue-bestfit", 600, offline=True,
                               fragmentation_level="rack")  # fmt: skip
    assert racks["started"] == JOBS and racks["windows_above_kueue"] == 0
    assert placements(racks) != placements(default)
    args = k8s_stream.build_parser().parse_args(
        ["--fragmentation", "0", "--fragmentation-level", "rack"]
    )
    assert (args.fragmentation, args.fragmentation_level) == (0.0, "rack")


def test_offline_refuses_the_arms_that_need_a_real_control_plane(capsys):
    with pytest.raises(SystemExit) as exc:
        k8s_stream.main(["--offline", "--arms", "kube-scheduler,tjap"])
    assert "--offline runs the kueue and tjap arms only" in str(exc.value)
    with pytest.raises(SystemExit) as exc:
        k8s_stream.main(["--arms", "tjap,kueu"])
    assert "unknown arm 'kueu'" in str(exc.value)


@pytest.mark.k8s
def test_the_twin_places_the_stream_as_a_real_control_plane_does():
    missing = missing_programs()
    if missing:
        pytest.skip(f"no Kubernetes control plane built ({', '.join(missing)}): bash .ci/build-k8s")
    live = stream("tjap", offline=False)
    assert live["started"] == JOBS
    assert placements(stream("tjap")) == placements(live)
