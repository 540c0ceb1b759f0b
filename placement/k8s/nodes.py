"""Kubernetes nodes and tjap's trees: the Node objects of a topology, and which nodes are free.

:func:`node_manifests` draws any :class:`~tjap.placement.tree.topology.Topology` (a Slurm tree or
block configuration, a topology.yaml, node labels, HyperNodes) as Node objects: one per node,
labelled at each level of the tree with the name of its domain there (Kueue's level labels, the
top level first, ``kubernetes.io/hostname`` last), with a GPU capacity. Read back with
:meth:`~tjap.placement.tree.topology.Topology.from_node_labels` and the same level keys, they
give the same tree (a leaf above the lowest level is its own domain below it).

:func:`free_nodes` says which nodes may take a pod now: Ready, schedulable, no NoSchedule or
NoExecute taint, and no pod holding its GPUs.
"""

from __future__ import annotations

import hashlib
import re

from tjap.core.errors import check_int
from tjap.placement.k8s.gangs import PLACED_AT, PLANNED, deadline

HOSTNAME = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
#: The level keys of the nodes tjap draws, top level first (Kueue's ``Topology`` levels; the last,
#: the host, is the node itself).
LEVEL_PREFIX = "topology.tjap.io/level-"


_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def label_value(name: str) -> str:
    """``name`` as a valid label value (63 characters of ``[-A-Za-z0-9_.]``, alphanumeric at
    both ends): itself when it is one, else its valid characters and a short hash of it."""
    if _LABEL_VALUE.match(name):
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    kept = re.sub(r"[^-A-Za-z0-9_.]+", "-", name).strip("-_.")[:50]
    return f"{kept}-{digest}" if kept else f"d-{digest}"


def level_keys(topology) -> list[str]:
    """The node-label keys of ``topology``'s levels, top first: ``topology.tjap.io/level-1`` for
    the domains under the root, down to the leaves' level, then ``kubernetes.io/hostname``."""
    return [f"{LEVEL_PREFIX}{d}" for d in range(1, topology.num_levels)] + [HOSTNAME]


def node_labels(topology) -> list[dict[str, str]]:
    """Per node (in the tree's node order) its level labels: the switch above it at each level
    below the root; a leaf that sits higher than the lowest level repeats itself below."""
    keys = level_keys(topology)[:-1]
    names, parent = topology.switch_names, topology.switch_parent
    out = []
    for i, node in enumerate(topology.node_names):
        path, s = [], int(topology.node_leaf[i])
        while s > 0:
            path.append(label_value(names[s]))
            s = int(parent[s])
        path.reverse()
        path += [path[-1] if path else label_value(names[0])] * (len(keys) - len(path))
        out.append({**dict(zip(keys, path)), HOSTNAME: node})
    return out


def node_manifests(topology, *, gpus: int = 4, cpu: str = "64", memory: str = "512Gi") -> list:
    """The Node objects of ``topology``: name, level labels (:func:`node_labels`), capacity
    (``gpus`` of ``nvidia.com/gpu``, CPU, memory, 110 pods). Their status (Ready) is written
    apart, through the status subresource (:meth:`tjap.placement.k8s.harness.LocalKubernetes.add_nodes`)."""
    check_int("gpus per node", gpus, 1)
    capacity = {"cpu": cpu, "memory": memory, "pods": "110", GPU: str(gpus)}
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": labels[HOSTNAME], "labels": labels},
            "spec": {},
            "status": {"capacity": capacity, "allocatable": capacity},
        }
        for labels in node_labels(topology)
    ]


def ready_status(capacity: dict) -> dict:
    """The status of a fake node: Ready, with its capacity (what a kubelet would report)."""
    return {
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "a fake node of tjap's local cluster (no kubelet)",
                }
            ],
        }
    }


def _taints_block(node: dict, tolerations: list) -> bool:
    for taint in node.get("spec", {}).get("taints", []) or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return True
    return False


def _tolerates(toleration: dict, taint: dict) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get(
        "value", ""
    )


def is_ready(node: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in node.get("status", {}).get("conditions", []) or []
    )


def holds(pod: dict) -> str | None:
    """The node a pod holds or is about to hold: the one it is bound to, else the host its node
    selector names, else the one tjap planned for it; None for a finished pod."""
    if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return None
    spec = pod.get("spec", {})
    return (
        spec.get("nodeName")
        or (spec.get("nodeSelector") or {}).get(HOSTNAME)
        or (pod["metadata"].get("annotations") or {}).get(PLANNED)
    )


def busy_seconds(pods: list[dict], now: float) -> dict[str, float]:
    """The nodes whose end is known, to the seconds until they are expected free: a node held
    (:func:`holds`) only by pods that tjap placed (their ``tjap.io/placed-at``) with an
    ``activeDeadlineSeconds``, free at the latest of their placement plus deadline, measured
    from ``now`` on the same clock (0 once passed). A node held by any other pod is left out
    (its end unknown)."""
    ends: dict[str, float] = {}
    for pod in pods:
        name = holds(pod)
        if name is None:
            continue
        limit = deadline(pod)
        raw = (pod["metadata"].get("annotations") or {}).get(PLACED_AT)
        try:
            placed = float(raw) if raw is not None else None
        except ValueError:
            placed = None
        end = placed + limit if limit is not None and placed is not None else float("inf")
        ends[name] = max(ends.get(name, end), end)
    return {n: max(0.0, end - now) for n, end in ends.items() if end != float("inf")}


def free_nodes(nodes: list[dict], pods: list[dict], *, tolerations=(), resource: str = GPU) -> set:
    """Names of the nodes a job's pods may take now: Ready, not cordoned, no NoSchedule or
    NoExecute taint the pods do not tolerate, and no pod that asks for ``resource`` holding it
    or about to (:func:`holds`: bound, selected by hostname, or planned by tjap)."""
    held = set()
    for pod in pods:
        name = holds(pod)
        if name is None:
            continue
        if any(
            resource in (c.get("resources", {}).get("requests") or {})
            or resource in (c.get("resources", {}).get("limits") or {})
            for c in pod["spec"].get("containers", [])
        ):
            held.add(name)
    return {
        n["metadata"]["name"]
        for n in nodes
        if is_ready(n)
        and not n.get("spec", {}).get("unschedulable")
        and not _taints_block(n, list(tolerations))
        and n["metadata"]["name"] not in held
    }
