"""The in-memory twin of a control plane (tjap.placement.k8s.memory): what the stream benchmark's
offline mode and the controller's tests rely on. Its fidelity to a real control plane is
tests/benchmarks/test_k8s_stream.py's live test (marked k8s)."""

from __future__ import annotations

import pytest

import tjap
from tjap.placement.k8s.api import ApiError
from tjap.placement.k8s.memory import MemoryApi
from tjap.placement.k8s.nodes import HOSTNAME, free_nodes

TREE = tjap.Topology.from_slurm(
    "BlockName=r0 Nodes=g[1-4]\nBlockName=r1 Nodes=g[5-8]\nBlockSizes=4,8"
)
PODS = "/api/v1/namespaces/default/pods"


def pod(name, host=None, gated=False, gpus=4):
    spec = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if host:
        spec["nodeSelector"] = {HOSTNAME: host}
    if gated:
        spec["schedulingGates"] = [{"name": "g"}]
    return {"metadata": {"name": name}, "spec": spec}


def test_nodes_are_ready_and_free_until_a_pod_holds_one():
    api = MemoryApi(TREE)
    assert free_nodes(api.items("/api/v1/nodes"), api.items("/api/v1/pods")) == set(TREE.node_names)
    api.create(PODS, pod("a", "g1"))
    assert "g1" not in free_nodes(api.items("/api/v1/nodes"), api.items("/api/v1/pods"))


def test_bind_takes_ungated_pods_whose_selector_names_a_node_with_room():
    api = MemoryApi(TREE)
    api.create(PODS, pod("a", "g1"))
    api.create(PODS, pod("b", "g1"))  # g1 has 4 GPUs: one of the two
    api.create(PODS, pod("c", "g2", gated=True))
    api.create(PODS, pod("d"))  # no selector: kube-scheduler's scoring is not modelled
    api.objects["/api/v1/nodes/g3"]["spec"]["unschedulable"] = True
    api.create(PODS, pod("e", "g3"))
    assert api.bind() == 1
    bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in api.items(PODS)}
    assert bound == {"a": "g1", "b": None, "c": None, "d": None, "e": None}
    api.request("DELETE", f"{PODS}/a")
    assert api.bind() == 1 and api.get(f"{PODS}/b")["spec"]["nodeName"] == "g1"


def test_a_patch_naming_a_stale_version_is_a_conflict_and_none_removes_a_key():
    api = MemoryApi(TREE)
    created = api.create(PODS, pod("a", gated=True))
    version = created["metadata"]["resourceVersion"]
    changed = api.patch(f"{PODS}/a", {"metadata": {"resourceVersion": version},
                                      "spec": {"schedulingGates": None}})  # fmt: skip
    assert "schedulingGates" not in changed["spec"]
    with pytest.raises(ApiError) as exc:
        api.patch(f"{PODS}/a", {"metadata": {"resourceVersion": version}})
    assert exc.value.status == 409
    with pytest.raises(ApiError) as exc:
        api.get(f"{PODS}/gone")
    assert exc.value.status == 404
    with pytest.raises(ApiError) as exc:
        api.create(PODS, pod("a"))
    assert exc.value.status == 409


def test_creation_times_follow_the_clock_given():
    ticks = [3]
    api = MemoryApi(TREE, clock=lambda: ticks[0])
    api.create(PODS, pod("first"))
    ticks[0] = 12
    api.create(PODS, pod("second"))
    stamps = {p["metadata"]["name"]: p["metadata"]["creationTimestamp"] for p in api.items(PODS)}
    assert stamps["first"] < stamps["second"]
