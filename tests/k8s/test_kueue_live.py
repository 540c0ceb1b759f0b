"""Kueue's own manager on the local control plane: it admits and places Jobs written for Kueue's
topology-aware scheduling, ``tjap k8s audit`` audits what it placed, and tjap's controller
places Jobs Kueue admitted on a flavor without a topology. Marked k8s: ``make test-k8s`` builds
the control plane (``.ci/build-k8s``) and Kueue's manager (``.ci/build-kueue-manager``)."""

from __future__ import annotations

import json
import time

import pytest

import tjap
from tjap.k8s.audit import PROFILES, audit_cluster, decode_assignment
from tjap.k8s.controller import Controller
from tjap.placement.k8s.gangs import (
    GATE,
    PREFERRED,
    REQUIRED,
    SLICE_LEVEL,
    SLICE_SIZE,
    TJAP_ALIAS,
)
from tjap.placement.k8s.harness import LocalKubernetes, missing_programs
from tjap.placement.k8s.kueue import (
    KUEUE_API,
    POOL_LABEL,
    LocalKueue,
    end_job,
    kueue_job,
    missing,
    remove_terminating,
)
from tjap.placement.k8s.nodes import level_keys
from tjap.placement.tree.cost import job_cost

pytestmark = pytest.mark.k8s
# two blocks of two racks of four nodes
TREE = tjap.Topology.from_node_labels(
    [(f"n{i:02d}", {"block": f"b{i // 8}", "rack": f"r{i // 4}"}) for i in range(16)],
    ["block", "rack"],
)
LEVELS = level_keys(TREE)[:-1]
JOBS = "/apis/batch/v1/namespaces/default/jobs"


@pytest.fixture(scope="module")
def kueue(tmp_path_factory):
    lacking = missing_programs(controllers=True)
    if lacking:
        pytest.skip(f"no Kubernetes control plane built ({', '.join(lacking)}): bash .ci/build-k8s")
    if missing():
        pytest.skip(missing())
    with LocalKubernetes(tmp_path_factory.mktemp("kueue"), controllers=True) as k8s:
        k8s.add_nodes(TREE, labels={POOL_LABEL: "gpu"})
        with LocalKueue(k8s) as manager:
            manager.queue(LEVELS, gpus=4 * TREE.num_nodes)
            manager.queue(None, name="plain", gpus=4 * TREE.num_nodes)
            yield manager


@pytest.fixture
def api(kueue):
    with kueue.k8s.api() as api:
        yield api
        for job in api.items(JOBS):  # each test starts with no Job and no pod
            api.request("DELETE", f"{JOBS}/{job['metadata']['name']}",
                        query={"propagationPolicy": "Background"})  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
            api.items(JOBS) or api.items("/api/v1/namespaces/default/pods")
        ):
            remove_terminating(api, api.items("/api/v1/namespaces/default/pods"))
            time.sleep(0.2)
        for w in api.items(f"{KUEUE_API}/namespaces/default/workloads"):
            api.request(
                "DELETE", f"{KUEUE_API}/namespaces/default/workloads/{w['metadata']['name']}"
            )


def bound_nodes(api, name: str, size: int, timeout_s: float = 60.0, controller=None) -> list[str]:
    """The nodes of Job ``name``'s pods, in index order, once all ``size`` are bound."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if controller is not None:
            controller.run_pass()
        pods = api.items(
            "/api/v1/namespaces/default/pods", labelSelector=f"batch.kubernetes.io/job-name={name}"
        )
        pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        nodes = [
            p["spec"].get("nodeName")
            for p in sorted(
                pods,
                key=lambda p: int(
                    p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
                ),
            )
        ]
        if len(nodes) == size and all(nodes):
            return nodes
        time.sleep(0.2)
    raise AssertionError(f"the pods of {name} were not all bound in {timeout_s:g} s")


def racks(nodes) -> set[int]:
    return {int(TREE.node_leaf[TREE.node_index(n)]) for n in nodes}


def workload_of(api, name: str) -> dict:
    for w in api.items(f"{KUEUE_API}/namespaces/default/workloads"):
        owners = w["metadata"].get("ownerReferences") or []
        if any(o["name"] == name and o["kind"] == "Job" for o in owners):
            return w
    raise AssertionError(f"no Workload owned by the Job {name}")


def test_kueue_suspends_admits_and_places_a_job_by_its_annotations(api):
    api.create(JOBS, kueue_job("one", 4, queue="tas", annotations={REQUIRED: LEVELS[-1]}))
    # Kueue's own webhook suspended it at creation (no pods until Kueue admits it)
    nodes = bound_nodes(api, "one", 4)
    assert len(racks(nodes)) == 1  # required: one rack
    w = workload_of(api, "one")
    assignment = w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    keys, domains = decode_assignment(assignment)
    assert keys[-1] == "kubernetes.io/hostname"
    assert sorted(v[-1] for v, _ in domains) == sorted(nodes)
    assert all(count == 1 for _, count in domains)


def test_the_audit_of_a_stream_recomputes_from_the_recorded_nodes(api, kueue, tmp_path):
    jobs = [
        ("s1", 4, {REQUIRED: LEVELS[-1]}),
        ("s2", 4, {PREFERRED: LEVELS[-1]}),
        ("s3", 4, {SLICE_SIZE: "2", SLICE_LEVEL: LEVELS[-1]}),
        ("s4", 2, {PREFERRED: LEVELS[-1]}),
        ("s5", 3, {REQUIRED: LEVELS[0]}),
    ]
    seen = {}
    for k, (name, size, notes) in enumerate(jobs):
        api.create(JOBS, kueue_job(name, size, queue="tas", annotations=notes))
        seen[f"default/{name}"] = sorted(bound_nodes(api, name, size))
        time.sleep(1.1)  # the next admission in a later second
        if k == 2:  # the first ends: its nodes are free for the later ones
            end_job(api, "s1")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                remove_terminating(api, api.items("/api/v1/namespaces/default/pods"))
                if any(c["type"] == "Finished" and c["status"] == "True"
                       for c in workload_of(api, "s1")["status"].get("conditions", [])):  # fmt: skip
                    break
                time.sleep(0.2)
            time.sleep(1.1)
    result = audit_cluster(api)
    rows = {j["job"]: j for j in result.jobs}
    assert set(rows) == set(seen)
    for name, row in rows.items():
        assert sorted(row["nodes"]) == seen[name]  # the assignment is where the pods were bound
        ids = [TREE.node_index(n) for n in row["nodes"]]
        assert row["ch_cost"] == pytest.approx(job_cost(TREE, ids))
        assert row["floor"] <= row["bound"] + 1e-9 <= row["optimum"] + 2e-9
        assert row["optimum"] <= row["cost"] + 1e-9
        assert not set(row["busy"]) & set(row["nodes"])

    # s1 ended before s4 and s5 were admitted: its nodes were free for them, busy for s2 and s3
    def union(*names):
        return sorted(n for name in names for n in seen[f"default/{name}"])

    assert sorted(rows["default/s3"]["busy"]) == union("s1", "s2")
    assert sorted(rows["default/s4"]["busy"]) == union("s2", "s3")
    assert sorted(rows["default/s5"]["busy"]) == union("s2", "s3", "s4")
    # Kueue's default gates are kueue-leastfree's profile: its re-implementation agrees
    assert result.summary["fidelity"]["kueue-leastfree"] == 1.0, result.summary["differing"]
    assert set(result.summary["fidelity"]) == set(PROFILES)

    from tjap.cli import main

    report = tmp_path / "report"
    assert main(["k8s", "audit", "--kubeconfig", str(kueue.k8s.kubeconfig), "--json",
                 "--report", str(report)]) == 0  # fmt: skip
    page = (report / "index.html").read_text()
    assert "What Kueue&#x27;s placements cost" in page or "What Kueue's placements cost" in page


def test_the_audit_prints_its_summary_and_rejects_a_missing_topology(api, kueue, capsys):
    from tjap.cli import main

    assert main(["k8s", "audit", "--kubeconfig", str(kueue.k8s.kubeconfig)]) == 0
    assert "tjap k8s audit:" in capsys.readouterr().out
    code = main(["k8s", "audit", "--kubeconfig", str(kueue.k8s.kubeconfig),
                 "--topology-name", "nope"])  # fmt: skip
    assert code == 2
    assert "no Kueue Topology 'nope'" in capsys.readouterr().err


def test_tjap_places_a_job_kueue_admitted_on_a_flavor_without_topology(api):
    # Kueue refuses a topology request on a flavor without a topology: tjap's names carry it
    api.create(JOBS, kueue_job("free", 4, queue="plain", gate=GATE,
                               annotations={TJAP_ALIAS[PREFERRED]: LEVELS[-1]}))  # fmt: skip
    controller = Controller(api)
    nodes = bound_nodes(api, "free", 4, controller=controller)
    assert len(racks(nodes)) == 1
    w = workload_of(api, "free")
    admission = w["status"]["admission"]["podSetAssignments"][0]
    assert not admission.get("topologyAssignment")  # Kueue admitted by quota only
    pods = api.items(
        "/api/v1/namespaces/default/pods", labelSelector="batch.kubernetes.io/job-name=free"
    )
    assert all(p["metadata"]["annotations"].get("tjap.io/planned-node") for p in pods)
    assert json.dumps(admission)  # the admission is plain JSON


def test_cluster_up_with_kueue_runs_the_example_job_and_the_audit_reads_it(tmp_path, capsys):
    """The how-to's commands: cluster up --kueue, the example Job, tjap k8s audit, cluster down."""
    from pathlib import Path

    import yaml

    from tjap.cli import main
    from tjap.placement.k8s.api import Api

    if missing_programs(controllers=True) or missing():
        pytest.skip("the control plane or Kueue's manager is not built")
    root = Path(__file__).resolve().parents[2]
    folder = tmp_path / "kq"
    assert main(["k8s", "cluster", "up", "--dir", str(folder), "--topology",
                 str(root / "examples" / "blocks.conf"), "--kueue"]) == 0  # fmt: skip
    try:
        assert "queue-name=tas" in capsys.readouterr().out
        job = yaml.safe_load((root / "examples" / "k8s" / "kueue-job.yaml").read_text())
        with Api(folder / "kubeconfig") as api:
            api.create(JOBS, job)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                pods = api.items("/api/v1/namespaces/default/pods")
                if len(pods) == 12 and all(p["spec"].get("nodeName") for p in pods):
                    break
                time.sleep(0.3)
            else:
                raise AssertionError("Kueue did not place the example Job's 12 pods in 60 s")
        assert main(["k8s", "audit", "--kubeconfig", str(folder / "kubeconfig"), "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        (row,) = data["jobs"]
        assert row["job"] == "default/train-12" and row["size"] == 12
        assert row["request"]["segment"] == 6
        assert row["kueue-leastfree"]["same"]
    finally:
        assert main(["k8s", "cluster", "down", "--dir", str(folder)]) == 0


def test_the_audit_runs_with_its_read_only_account(api, kueue, tmp_path):
    from pathlib import Path

    from tjap.placement.k8s.api import Api, ApiError

    api.create(JOBS, kueue_job("ro", 2, queue="tas", annotations={REQUIRED: LEVELS[-1]}))
    bound_nodes(api, "ro", 2)
    root = Path(__file__).resolve().parents[2]
    kueue.k8s.apply(root / "examples" / "k8s" / "rbac-audit.yaml")
    config = kueue.k8s.account_kubeconfig(tmp_path / "kubeconfig", "tjap-system", "tjap-audit")
    with Api(config) as limited:
        result = audit_cluster(limited)
        assert [r["job"] for r in result.jobs] == ["default/ro"]
        with pytest.raises(ApiError) as refused:  # it can read, and nothing more
            limited.delete(
                f"{KUEUE_API}/namespaces/default/workloads/{result.jobs[0]['workload'][8:]}"
            )
        assert refused.value.status == 403
        with pytest.raises(ApiError):
            limited.items("/api/v1/pods")
