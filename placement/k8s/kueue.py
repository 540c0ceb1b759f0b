"""Kueue's own manager on a local Kubernetes: a real Kueue that admits jobs and places them.

:class:`LocalKueue` starts the manager that ``.ci/build-kueue-manager`` builds from Kueue's own
packages (``go/kueue-manager``: Kueue's core controllers, scheduler, topology-aware scheduling
and webhooks, with the batch/v1 Job integration; :func:`manager_home`) beside a
:class:`~tjap.placement.k8s.harness.LocalKubernetes` (which needs ``controllers=True``: the Job
controller makes the pods). It

1. installs Kueue's CustomResourceDefinitions of that release;
2. writes the webhook server's certificate (signed by the cluster's certificate authority, for
   ``127.0.0.1``) and Kueue's own ``Configuration`` (``config.kueue.x-k8s.io/v1beta2``: the
   webhook on a free loopback port, internal certificate management off, no leader election,
   the ``batch/job`` integration), and starts the manager as the cluster's administrator;
3. registers Kueue's webhooks for Jobs and for its own objects (the release's webhook
   configuration, each pointed at the local server): a Job created with a
   ``kueue.x-k8s.io/queue-name`` label is suspended by Kueue's webhook, as on any cluster.

:meth:`LocalKueue.queue` then makes a topology-aware queue: a ``Topology`` with the cluster's
levels, a ``ResourceFlavor`` naming it (or, with ``topology=None``, one without
``topologyName``: Kueue admits by quota only and the pods are placed by whoever places them),
a ``ClusterQueue`` with quota for the GPUs, and a ``LocalQueue``. The manager is stopped with
the cluster.
"""

from __future__ import annotations

import base64
import os
import socket
import time
from pathlib import Path

from tjap.core.cache import cache_root
from tjap.core.errors import MissingDependencyError
from tjap.placement.k8s.api import ApiError, KubernetesError
from tjap.placement.k8s.harness import _free_port, _openssl
from tjap.placement.k8s.nodes import GPU, HOSTNAME

#: The Kueue release go/kueue-manager/go.mod pins.
KUEUE = "v0.17.0"
#: The environment variable naming the folder of a built manager (its ``bin/`` and ``config/``).
MANAGER_ENV = "TJAP_KUEUE_MANAGER"
#: Kueue's API, the version the manager stores.
KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
QUEUE_NAME = "kueue.x-k8s.io/queue-name"
#: The label every fake node carries for the flavor's ``nodeLabels`` (Kueue asks for at least
#: one on a topology-aware flavor).
POOL_LABEL = "tjap.io/pool"
#: The API groups whose webhooks the manager serves (the Job integration and Kueue's objects).
WEBHOOK_GROUPS = {"batch", "kueue.x-k8s.io"}


def manager_home() -> Path:
    """Where the built manager is: ``$TJAP_KUEUE_MANAGER``, else
    ``$TJAP_CACHE_ROOT/kueue-manager-KUEUE`` (default ``/var/cache/tjap``)."""
    return Path(os.environ.get(MANAGER_ENV) or cache_root() / f"kueue-manager-{KUEUE}")


def missing() -> str:
    """Why the manager cannot start here (empty when it can)."""
    home = manager_home()
    if not os.access(home / "bin" / "kueue-manager", os.X_OK):
        return (
            f"Kueue's manager is not built in {home / 'bin'}; build it once with "
            "`bash .ci/build-kueue-manager` (Go and the module proxy, minutes on 2 cores) or "
            f"point {MANAGER_ENV} at a built one"
        )
    if not (home / "config" / "webhooks.yaml").is_file():
        return (
            f"{home / 'config'} lacks Kueue's webhook configuration; rerun .ci/build-kueue-manager"
        )
    return ""


def _webhooks(text: str, url: str, ca_bundle: str) -> list[dict]:
    """Kueue's webhook configurations (the release's ``manifests.yaml``) with only the webhooks
    of :data:`WEBHOOK_GROUPS`, each pointed at ``url`` + its path."""
    import yaml

    out = []
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        kept = []
        for hook in doc.get("webhooks") or []:
            groups = {g for rule in hook.get("rules") or [] for g in rule.get("apiGroups") or []}
            if not groups or not groups <= WEBHOOK_GROUPS:
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": url + path, "caBundle": ca_bundle}
            kept.append(hook)
        if kept:
            doc["metadata"] = {"name": f"tjap-local-{doc['metadata']['name']}"}
            doc["webhooks"] = kept
            out.append(doc)
    return out


class LocalKueue:
    """Kueue's manager on ``k8s`` (a started :class:`LocalKubernetes` with ``controllers=True``).

    Use as a context manager inside the cluster's (``with LocalKueue(k8s) as kueue: ...``) or
    call :meth:`start`; the manager stops with the cluster (or by :meth:`stop`).
    """

    def __init__(self, k8s, *, start_timeout_s: float = 120.0):
        reason = missing()
        if reason:
            raise MissingDependencyError(reason)
        if not k8s.controllers:
            raise KubernetesError(
                "Kueue needs the Job controller: start the LocalKubernetes with controllers=True"
            )
        self.k8s, self.start_timeout_s = k8s, start_timeout_s
        self.folder = k8s.folder / "kueue"
        self.port = 0

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self) -> "LocalKueue":
        """Install Kueue's CRDs, start the manager, wait for its webhook server, register the
        webhooks."""
        home = manager_home()
        for crd in sorted((home / "config" / "crd").glob("*.yaml")):
            self.k8s.install_crd(crd)
        self.folder.mkdir(parents=True, exist_ok=True)
        certs = self.folder / "certs"
        certs.mkdir(exist_ok=True)
        self._certificate(certs)
        self.port = _free_port()
        config = self.folder / "config.yaml"
        config.write_text(
            f"""apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
webhook:
  host: 127.0.0.1
  port: {self.port}
  certDir: {certs}
internalCertManagement:
  enable: false
leaderElection:
  leaderElect: false
integrations:
  frameworks: ["batch/job"]
"""
        )
        with self.k8s.api() as api:
            api.create_or_keep("/api/v1/namespaces", {"metadata": {"name": "kueue-system"}})
        env = {**os.environ, "KUBECONFIG": str(self.k8s.kubeconfig)}
        self.k8s._spawn(
            "kueue-manager",
            [f"--config={config}"],
            program=home / "bin" / "kueue-manager",
            env=env,
        )
        self._wait_webhook_server()
        ca = base64.b64encode((self.k8s.folder / "pki" / "ca.crt").read_bytes()).decode()
        hooks = _webhooks(
            (home / "config" / "webhooks.yaml").read_text(), f"https://127.0.0.1:{self.port}", ca
        )
        with self.k8s.api() as api:
            for doc in hooks:
                plural = (
                    "mutatingwebhookconfigurations"
                    if doc["kind"].startswith("Mutating")
                    else ("validatingwebhookconfigurations")
                )
                api.create_or_keep(f"/apis/admissionregistration.k8s.io/v1/{plural}", doc)
        return self

    def stop(self) -> None:
        """Stop the manager (the cluster goes on)."""
        proc = self.k8s.procs.pop("kueue-manager", None)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except Exception:
                proc.kill()
                proc.wait()

    def _certificate(self, certs: Path) -> None:
        pki = self.k8s.folder / "pki"
        ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
        _openssl("req", "-new", *ec, "-keyout", str(certs / "tls.key"), "-out",
                 str(certs / "tls.csr"), "-subj", "/CN=kueue-webhook", cwd=pki)  # fmt: skip
        _openssl("x509", "-req", "-in", str(certs / "tls.csr"), "-CA", "ca.crt", "-CAkey",
                 "ca.key", "-CAcreateserial", "-out", str(certs / "tls.crt"), "-days", "3650",
                 "-extfile", "san.ext", cwd=pki)  # fmt: skip

    def _wait_webhook_server(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            self.k8s._check_alive()
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise KubernetesError(
            f"Kueue's manager did not serve its webhooks within {self.start_timeout_s:g} s "
            f"(log: {self.k8s.folder / 'kueue-manager.log'})"
        )

    # -- a queue -------------------------------------------------------------------------------
    def queue(
        self,
        levels: list[str] | None,
        *,
        name: str = "tas",
        gpus: int,
        namespace: str = "default",
        timeout_s: float = 60.0,
    ) -> str:
        """Make a queue for GPU jobs and wait until Kueue calls it active; returns the
        LocalQueue's name (the ``kueue.x-k8s.io/queue-name`` of the jobs).

        ``levels``: the node-label keys of a ``Topology`` named ``name`` (top first;
        ``kubernetes.io/hostname`` is added at the bottom), which the flavor names: Kueue's
        topology-aware scheduling places the jobs. None: a flavor without ``topologyName``
        (Kueue admits by quota only). ``gpus``: the ClusterQueue's nominal quota of
        ``nvidia.com/gpu``. The flavor selects the nodes labelled :data:`POOL_LABEL` ``=gpu``.
        """
        flavor: dict = {"nodeLabels": {POOL_LABEL: "gpu"}}
        with self.k8s.api() as api:
            if levels is not None:
                keys = [k for k in levels if k != HOSTNAME] + [HOSTNAME]
                api.create_or_keep(f"{KUEUE_API}/topologies", {
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                    "metadata": {"name": name},
                    "spec": {"levels": [{"nodeLabel": k} for k in keys]},
                })  # fmt: skip
                flavor["topologyName"] = name
            api.create_or_keep(f"{KUEUE_API}/resourceflavors", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                "metadata": {"name": name}, "spec": flavor,
            })  # fmt: skip
            api.create_or_keep(f"{KUEUE_API}/clusterqueues", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [{
                        "coveredResources": [GPU],
                        "flavors": [{"name": name, "resources": [
                            {"name": GPU, "nominalQuota": str(gpus)}]}],
                    }],
                },
            })  # fmt: skip
            api.create_or_keep(f"{KUEUE_API}/namespaces/{namespace}/localqueues", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"clusterQueue": name},
            })  # fmt: skip
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                found = api.get(f"{KUEUE_API}/clusterqueues/{name}")
                conditions = (found.get("status") or {}).get("conditions") or []
                if any(c["type"] == "Active" and c["status"] == "True" for c in conditions):
                    return name
                self.k8s._check_alive()
                time.sleep(0.2)
        raise KubernetesError(
            f"Kueue did not make the ClusterQueue {name!r} active in {timeout_s:g} s "
            f"(its conditions: {conditions}; log: {self.k8s.folder / 'kueue-manager.log'})"
        )


# -- jobs for Kueue ----------------------------------------------------------------------------
def kueue_job(
    name: str,
    size: int,
    *,
    queue: str,
    annotations: dict | None = None,
    gpus: int = 4,
    gate: str | None = None,
    namespace: str = "default",
) -> dict:
    """A batch/v1 indexed Job of ``size`` pods for Kueue's LocalQueue ``queue``: each pod asks for
    ``gpus`` of ``nvidia.com/gpu``; ``annotations`` on the pod template (Kueue's pod-set
    annotations: ``kueue.x-k8s.io/podset-preferred-topology`` and the like); ``gate``: a
    scheduling gate on the pods (tjap's, when tjap places them on a flavor without a topology).
    Kueue's webhook suspends it at creation until Kueue admits it."""
    spec: dict = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [{
            "name": "c", "image": "registry.k8s.io/pause:3.10",
            "resources": {"limits": {GPU: str(gpus)}},
        }],
    }  # fmt: skip
    if gate:
        spec["schedulingGates"] = [{"name": gate}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_NAME: queue}},
        "spec": {
            "parallelism": size,
            "completions": size,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": {"metadata": {"annotations": dict(annotations or {})}, "spec": spec},
        },
    }


def end_job(api, name: str, namespace: str = "default") -> None:
    """End a running Job as if its time ran out: ``activeDeadlineSeconds: 1`` (the Job controller
    fails it, deletes its pods; Kueue marks its Workload finished and frees its quota and nodes).
    """
    api.patch(
        f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}",
        {"spec": {"activeDeadlineSeconds": 1}},
        merge="merge",
    )


def remove_terminating(api, pods: list[dict]) -> int:
    """Remove the pods of ``pods`` that are being deleted, as a kubelet would once their
    containers stopped (the fake nodes have none); returns how many."""
    gone = 0
    for pod in pods:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            try:
                api.request("DELETE", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                            query={"gracePeriodSeconds": 0})  # fmt: skip
                gone += 1
            except ApiError as exc:
                if exc.status != 404:
                    raise
    return gone
