"""An in-memory API server with an instant binder: the offline twin of a local control plane.

:class:`MemoryApi` keeps Node and Pod objects by path and answers the calls tjap's controller
and the stream benchmark make of :class:`tjap.placement.k8s.api.Api` (``items``, ``get``,
``create``, ``patch`` as a JSON merge patch with resource versions, ``request("DELETE")``);
:meth:`MemoryApi.bind` then does what kube-scheduler does for pods whose node selector names a
host (``kubernetes.io/hostname``): binds each ungated one to that node when the node has the
GPUs free. Pods with no such selector stay Pending (kube-scheduler's own scoring is not
modelled: the live control plane is the only place to measure it).

It is for designing placement policies quickly (a stream of 120 jobs in seconds instead of
minutes), never for the figures: those come from the real control plane, which the twin must
reproduce (``python -m benchmarks.k8s_stream --offline`` against a live run of the same stream).
"""

from __future__ import annotations

import copy
import itertools

from tjap.placement.k8s.nodes import GPU, HOSTNAME, node_manifests, ready_status


def _merge(target, patch):
    """RFC 7386 JSON merge patch: ``None`` removes a key, dicts merge, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def _gpus(pod: dict) -> int:
    total = 0
    for c in pod.get("spec", {}).get("containers", []):
        res = c.get("resources", {})
        total += int((res.get("limits") or res.get("requests") or {}).get(GPU, 0))
    return total


class MemoryApi:
    """Nodes of ``topology`` (as :func:`~tjap.placement.k8s.nodes.node_manifests` draws them,
    Ready), pods and events in memory; ``clock`` (a callable giving seconds) stamps
    ``creationTimestamp`` so that the controller's age order is the creation order."""

    def __init__(self, topology, *, gpus: int = 4, clock=None):
        from tjap.placement.k8s.api import ApiError

        self._error = ApiError
        self.objects: dict[str, dict] = {}
        self.events: list[dict] = []
        self._version = itertools.count(1)
        self._clock = clock
        self._created = itertools.count()
        for node in node_manifests(topology, gpus=gpus):
            node.update(ready_status(node["status"]["capacity"]))
            node["metadata"]["resourceVersion"] = str(next(self._version))
            self.objects[f"/api/v1/nodes/{node['metadata']['name']}"] = node

    # -- the calls of Api ----------------------------------------------------------------------
    def items(self, path: str, **query) -> list[dict]:
        kind = path.rstrip("/").rsplit("/", 1)[1]
        prefix = path.rstrip("/") + "/" if "/namespaces/" in path else None
        return [
            copy.deepcopy(o)
            for p, o in self.objects.items()
            if (p.startswith(prefix) if prefix else f"/{kind}/" in p)
        ]

    def get(self, path: str, **query) -> dict:
        if path not in self.objects:
            raise self._error(f"404 Not Found: {path}", 404, "NotFound")
        return copy.deepcopy(self.objects[path])

    def create(self, path: str, body: dict) -> dict:
        if path.endswith("/events"):
            self.events.append(copy.deepcopy(body))
            return body
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("namespace", path.split("/namespaces/")[1].split("/")[0]
                        if "/namespaces/" in path else "default")  # fmt: skip
        key = f"{path.rstrip('/')}/{meta['name']}"
        if key in self.objects:
            raise self._error(f"409 AlreadyExists: {key}", 409, "AlreadyExists")
        meta["resourceVersion"] = str(next(self._version))
        meta["uid"] = f"uid-{next(self._created)}"
        if self._clock is not None:
            meta["creationTimestamp"] = f"{self._clock():015.3f}"  # sorts as the clock does
        obj.setdefault("status", {"phase": "Pending"})
        self.objects[key] = obj
        return copy.deepcopy(obj)

    def patch(self, path: str, body: dict, *, merge: str = "merge") -> dict:
        if merge != "merge":
            raise ValueError(f"MemoryApi takes JSON merge patches only, got {merge!r}")
        current = self.get(path)
        body = copy.deepcopy(body)
        version = body.get("metadata", {}).pop("resourceVersion", None)
        if version is not None and version != current["metadata"]["resourceVersion"]:
            raise self._error(f"409 Conflict: {path}", 409, "Conflict")
        new = _merge(current, body)
        new["metadata"]["resourceVersion"] = str(next(self._version))
        self.objects[path] = new
        return copy.deepcopy(new)

    def request(self, method: str, path: str, body=None, *, query=None, **kw) -> dict:
        if method == "DELETE":
            return self.objects.pop(path, {})
        if method == "GET":
            return self.get(path)
        raise ValueError(f"MemoryApi answers GET and DELETE through request, got {method}")

    def delete(self, path: str) -> dict:
        return self.request("DELETE", path)

    # -- kube-scheduler's part -----------------------------------------------------------------
    def bind(self) -> int:
        """Bind every ungated, unbound pod whose hostname selector names a node with its GPUs
        free (in creation order); returns the pods bound."""
        used: dict[str, int] = {}
        pods = [o for p, o in self.objects.items() if "/pods/" in p]
        for pod in pods:
            if pod["spec"].get("nodeName"):
                used[pod["spec"]["nodeName"]] = used.get(pod["spec"]["nodeName"], 0) + _gpus(pod)
        bound = 0
        for pod in pods:
            spec = pod["spec"]
            host = (spec.get("nodeSelector") or {}).get(HOSTNAME)
            if spec.get("nodeName") or spec.get("schedulingGates") or host is None:
                continue
            node = self.objects.get(f"/api/v1/nodes/{host}")
            if node is None or node.get("spec", {}).get("unschedulable"):
                continue
            capacity = int(
                node["status"].get("allocatable", node["status"]["capacity"]).get(GPU, 0)
            )
            if used.get(host, 0) + _gpus(pod) > capacity:
                continue
            spec["nodeName"] = host
            pod["metadata"]["resourceVersion"] = str(next(self._version))
            used[host] = used.get(host, 0) + _gpus(pod)
            bound += 1
        return bound
