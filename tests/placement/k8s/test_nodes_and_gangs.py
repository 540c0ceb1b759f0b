"""The Node objects of a topology and back, free nodes, and gated pods as gangs with the
requests of Kueue's annotations (no API server: plain Kubernetes objects)."""

from __future__ import annotations

import pytest

import tjap
from tjap.core.errors import InvalidInputError
from tjap.placement.k8s.gangs import (
    GATE,
    PLANNED,
    PREFERRED,
    REQUIRED,
    SLICE_LEVEL,
    SLICE_SIZE,
    gangs,
    job_sizes,
)
from tjap.placement.k8s.nodes import (
    HOSTNAME,
    free_nodes,
    label_value,
    level_keys,
    node_manifests,
    ready_status,
)

BLOCKS = tjap.Topology.from_slurm(
    "\n".join(f"BlockName=r{i} Nodes=g[{4 * i + 1:02d}-{4 * i + 4:02d}]" for i in range(4))
    + "\nBlockSizes=4,8,16"
)
UNEVEN = tjap.Topology.from_slurm(open("examples/topology.conf").read())


@pytest.mark.parametrize("tree", [BLOCKS, UNEVEN], ids=["blocks", "uneven-tree"])
def test_the_nodes_of_a_topology_draw_the_same_tree_back(tree):
    nodes = node_manifests(tree, gpus=8)
    assert [n["metadata"]["name"] for n in nodes] == list(tree.node_names)
    assert all(n["status"]["capacity"]["nvidia.com/gpu"] == "8" for n in nodes)
    keys = level_keys(tree)
    assert keys[-1] == HOSTNAME and len(keys) == tree.num_levels
    back = tjap.Topology.from_node_labels(
        [(n["metadata"]["name"], n["metadata"]["labels"]) for n in nodes], keys[:-1]
    )
    assert back.num_nodes == tree.num_nodes
    assert sorted(back.leaf_sizes.tolist()) == sorted(tree.leaf_sizes.tolist())
    # the same domains: nodes that share a leaf switch share one in the tree read back
    for t in (tree, back):
        assert len({frozenset(t.nodes_of(s)) for s in t.leaf_switches.tolist()}) == len(
            t.leaf_switches
        )


def test_label_values_are_always_valid():
    assert label_value("rack1..rack2") == "rack1..rack2"
    for name in ("(root)", "a/b c", "x" * 80, "--"):
        value = label_value(name)
        assert len(value) <= 63 and value[0].isalnum() and value[-1].isalnum()
    assert label_value("a/b") != label_value("a b")  # distinct names stay distinct


def node(name, *, ready=True, cordoned=False, taint=None):
    n = {"metadata": {"name": name}, "spec": {}, **ready_status({"nvidia.com/gpu": "4"})}
    n["status"]["conditions"][0]["status"] = "True" if ready else "False"
    if cordoned:
        n["spec"]["unschedulable"] = True
    if taint:
        n["spec"]["taints"] = [{"key": taint, "effect": "NoSchedule"}]
    return n


def pod(name, *, node=None, selector=None, planned=None, gpu=True, phase="Pending", gate=True,
        labels=None, notes=None, priority=0, created="2026-12-02T10:00:00Z"):  # fmt: skip
    spec = {
        "containers": [
            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}} if gpu else {}}
        ]
    }
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = {HOSTNAME: selector}
    if gate:
        spec["schedulingGates"] = [{"name": GATE}]
    spec["priority"] = priority
    notes = dict(notes or {})
    if planned:
        notes[PLANNED] = planned
    return {
        "metadata": {"name": name, "namespace": "default", "labels": labels or {},
                     "annotations": notes, "creationTimestamp": created, "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": phase},
    }  # fmt: skip


def test_free_nodes_are_ready_schedulable_untainted_and_unheld():
    nodes = [node("a"), node("b", ready=False), node("c", cordoned=True), node("d", taint="x"),
             node("e"), node("f"), node("g"), node("h")]  # fmt: skip
    pods = [
        pod("p1", node="e", gate=False),
        pod("p2", selector="f", gate=False),
        pod("p3", planned="g"),
        pod("p4", node="h", gpu=False, gate=False),  # no GPU asked: the node stays free
        pod("p5", node="a", phase="Succeeded", gate=False),
    ]
    assert free_nodes(nodes, pods) == {"a", "h"}
    assert free_nodes(nodes, pods, tolerations=[{"key": "x", "operator": "Exists"}]) == {
        "a",
        "d",
        "h",
    }


def test_gated_pods_group_into_gangs_in_priority_then_age_order():
    pods = [
        pod("w-1", labels={"tjap.io/gang": "w"}, notes={"tjap.io/gang-size": "3"}, created="2026-12-02T10:00:05Z"),
        pod("w-0", labels={"tjap.io/gang": "w"}, notes={"tjap.io/gang-size": "3"}, created="2026-12-02T10:00:04Z"),
        pod("v-0", labels={"tjap.io/gang": "v"}, created="2026-12-02T10:00:01Z"),
        pod("hi", priority=10, created="2026-12-02T11:00:00Z"),
        pod("free", gate=False),
    ]  # fmt: skip
    found = gangs(pods)
    assert [g.name for g in found] == ["pod/hi", "gang/v", "gang/w"]
    w = found[2]
    assert [p["metadata"]["name"] for p in w.pods] == ["w-0", "w-1"] and not w.complete
    assert found[1].complete and found[1].size is None


def test_a_job_gives_its_pods_size_and_a_declared_size_wins():
    owned = {"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "t"}]}
    jobs = {("default", "t"): {"spec": {"parallelism": 6, "completions": 4}}}
    pods = [pod(f"t-{i}") for i in range(3)] + [pod("s-0", notes={"tjap.io/gang-size": "2"})]
    for p in pods[:3]:
        p["metadata"].update(owned)
    pods[3]["metadata"].update(
        {"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "s"}]}
    )
    asked = []

    def read(ns, name):
        asked.append(name)
        return jobs.get((ns, name))

    sizes = job_sizes(pods, read)
    assert sizes == {("default", "job/t"): 4} and asked == ["t"]  # min(parallelism, completions)
    found = {g.name: g for g in gangs(pods, sizes=sizes)}
    assert found["job/t"].size == 4 and not found["job/t"].complete
    assert found["job/s"].size == 2 and not found["job/s"].complete


LEVELS = ["topology.tjap.io/level-1", "topology.tjap.io/level-2", "topology.tjap.io/level-3"]


def gang_of(n, notes):
    return gangs([pod(f"j-{i}", labels={"tjap.io/gang": "j"}, notes=notes) for i in range(n)])[0]


@pytest.mark.parametrize(
    "notes, job",
    [
        ({}, {"nodes": 8}),
        ({REQUIRED: LEVELS[2]}, {"nodes": 8, "within": LEVELS[2]}),
        ({PREFERRED: LEVELS[1]}, {"nodes": 8, "prefer": LEVELS[1]}),
        ({SLICE_SIZE: "4", SLICE_LEVEL: LEVELS[2]}, {"nodes": 8, "segment": 4, "segment_level": LEVELS[2]}),
        ({PREFERRED: LEVELS[0], SLICE_SIZE: "2", SLICE_LEVEL: LEVELS[2]},
         {"nodes": 8, "prefer": LEVELS[0], "segment": 2, "segment_level": LEVELS[2]}),
    ],
)  # fmt: skip
def test_kueue_annotations_become_the_jobs_request(notes, job):
    assert gang_of(8, notes).job(LEVELS) == job


@pytest.mark.parametrize(
    "notes, fragment",
    [
        ({REQUIRED: "rack"}, "'rack' is not a level of this cluster"),
        ({REQUIRED: LEVELS[0], PREFERRED: LEVELS[1]}, "are both set"),
        ({SLICE_SIZE: "3", SLICE_LEVEL: LEVELS[2]}, "slices of 3 pods do not divide the 8 pods"),
        ({SLICE_SIZE: "x", SLICE_LEVEL: LEVELS[2]}, "not a positive whole number"),
        ({SLICE_SIZE: "4"}, "go together"),
        ({REQUIRED: HOSTNAME}, "on one node"),
    ],
)
def test_a_bad_request_is_one_line_naming_the_annotation(notes, fragment):
    with pytest.raises(InvalidInputError, match=fragment) as info:
        gang_of(8, notes).job(LEVELS)
    assert "\n" not in str(info.value)
