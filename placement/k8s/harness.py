"""A throw-away Kubernetes on this machine: etcd, kube-apiserver and kube-scheduler, fake nodes.

:class:`LocalKubernetes` runs the control plane that ``.ci/build-k8s`` builds from Go modules
(:func:`k8s_bin`: ``$TJAP_K8S/bin``, else ``$TJAP_CACHE_ROOT/k8s-RELEASE/bin``) in a folder of
its own: a certificate authority and certificates made with ``openssl``, etcd on loopback, the
API server on ``127.0.0.1`` with TLS, client certificates and RBAC, kube-scheduler, and with
``controllers=True`` kube-controller-manager running only the Job controller and the garbage
collector (so batch/v1 Jobs make their pods, and nothing marks the fake nodes NotReady). Each
program is a child process, stopped by its process id (never by name); their logs are in the
folder. ``kubeconfig`` (the cluster's administrator, group ``system:masters``) is written there
too. Nodes are plain Node objects without a kubelet (:mod:`tjap.placement.k8s.nodes`): status
Ready, the not-ready taint removed; kube-scheduler binds pods to them and they stay Pending with
``spec.nodeName`` set, which is all placement needs. No node-lifecycle controller runs, so nodes
never turn NotReady. Start-up takes a few seconds; several clusters can run side by side (free
ports are picked).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tjap.core.cache import cache_root
from tjap.core.errors import MissingDependencyError
from tjap.placement.k8s.api import Api, KubernetesError
from tjap.placement.k8s.nodes import node_manifests, ready_status

#: The Kubernetes release go/controlplane/go.mod pins (and .ci/build-k8s builds).
RELEASE = "v1.35.4"
PROGRAMS = ("etcd", "kube-apiserver", "kube-scheduler")
#: Run with ``controllers=True``: the Job controller and the garbage collector only (no node
#: lifecycle controller, so the fake nodes stay Ready).
CONTROLLER_MANAGER = "kube-controller-manager"
CONTROLLERS = "job-controller,garbage-collector-controller"
#: The environment variable naming the folder of a built control plane (its ``bin/``).
K8S_ENV = "TJAP_K8S"


def k8s_bin() -> Path:
    """Where the control plane's programs are: ``$TJAP_K8S/bin``, else
    ``$TJAP_CACHE_ROOT/k8s-RELEASE/bin`` (default ``/var/cache/tjap``)."""
    return Path(os.environ.get(K8S_ENV) or cache_root() / f"k8s-{RELEASE}") / "bin"


def kueue_crd(plural: str = "topologies") -> Path:
    """Kueue's CustomResourceDefinition of ``plural`` as ``.ci/build-k8s`` copied it from Kueue's
    module (Kueue v0.17.0) next to the control plane's ``bin/``."""
    return k8s_bin().parent / "kueue" / f"kueue.x-k8s.io_{plural}.yaml"


def missing_programs(*, controllers: bool = False) -> list[str]:
    """The control plane's programs not built yet (empty when it can start); with
    ``controllers``, kube-controller-manager too."""
    wanted = PROGRAMS + ((CONTROLLER_MANAGER,) if controllers else ())
    return [p for p in wanted if not os.access(k8s_bin() / p, os.X_OK)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise KubernetesError(f"openssl {args[0]} failed: {done.stderr.strip()[:200]}")


class LocalKubernetes:
    """A local control plane in ``folder`` (a new temporary folder if None).

    Use as a context manager (``with LocalKubernetes() as k8s: ...``) or call :meth:`start` and
    :meth:`stop`. :attr:`kubeconfig` is the administrator's kubeconfig; :meth:`api` an
    :class:`~tjap.placement.k8s.api.Api` on it.
    """

    def __init__(
        self,
        folder=None,
        *,
        scheduler: bool = True,
        controllers: bool = False,
        start_timeout_s: float = 60.0,
    ):
        missing = missing_programs(controllers=controllers)
        if missing:
            raise MissingDependencyError(
                f"the local Kubernetes needs {', '.join(missing)} in {k8s_bin()}; "
                "build them once with `bash .ci/build-k8s` (Go and the module proxy, about 11 "
                "min on 2 cores) or point TJAP_K8S at a built one"
            )
        if shutil.which("openssl") is None:
            raise MissingDependencyError(
                "the local Kubernetes needs openssl (apt-get install openssl)"
            )
        self._own = folder is None
        self.folder = Path(folder or tempfile.mkdtemp(prefix="tjap-k8s-"))
        self.scheduler, self.controllers = scheduler, controllers
        self.start_timeout_s = start_timeout_s
        self.procs: dict[str, subprocess.Popen] = {}
        self._args: dict[str, list[str]] = {}
        self._programs: dict[str, Path] = {}  # programs not of the control plane (Kueue's)
        self._env: dict[str, dict] = {}
        self.port = 0
        self.kubeconfig = self.folder / "kubeconfig"

    # -- certificates --------------------------------------------------------------------------
    def _certificates(self) -> None:
        pki = self.folder / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
        _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
                 "-subj", "/CN=tjap-local-ca", cwd=pki)  # fmt: skip
        (pki / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        for name, subject, ext in (
            ("apiserver", "/CN=kube-apiserver", True),
            ("admin", "/O=system:masters/CN=tjap-admin", False),
            ("scheduler", "/CN=system:kube-scheduler", False),
        ):
            _openssl("req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                     "-subj", subject, cwd=pki)  # fmt: skip
            _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                     "-CAcreateserial", "-out", f"{name}.crt", "-days", "3650",
                     *(("-extfile", "san.ext") if ext else ()), cwd=pki)  # fmt: skip
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)

    def _kubeconfig(self, path: Path, user: str) -> None:
        pki = self.folder / "pki"
        path.write_text(
            f"""apiVersion: v1
kind: Config
clusters:
- name: tjap-local
  cluster:
    server: https://127.0.0.1:{self.port}
    certificate-authority: {pki / "ca.crt"}
users:
- name: {user}
  user:
    client-certificate: {pki / f"{user}.crt"}
    client-key: {pki / f"{user}.key"}
contexts:
- name: tjap-local
  context: {{cluster: tjap-local, user: {user}}}
current-context: tjap-local
"""
        )

    # -- processes -----------------------------------------------------------------------------
    def _spawn(self, name: str, args: list[str], *, program=None, env=None) -> None:
        """Start ``program`` (default: the control plane's ``name``) as ``name``, its output in
        ``name.log``; :meth:`stop` stops it with the others, :meth:`restart` restarts it."""
        self._args[name] = args
        if program is not None:
            self._programs[name] = Path(program)
        if env is not None:
            self._env[name] = env
        log = open(self.folder / f"{name}.log", "a")
        self.procs[name] = subprocess.Popen(
            [str(self.program(name)), *args],
            env=self._env.get(name),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the terminal reaches us, not them
        )
        log.close()

    def program(self, name: str) -> Path:
        """The program started as ``name``: the control plane's, or the one given to
        :meth:`_spawn` (Kueue's manager)."""
        return self._programs.get(name, k8s_bin() / name)

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.folder / f"{name}.log").read_text(errors="replace").strip()
                last = tail.splitlines()[-1][:200] if tail else "no output"
                raise KubernetesError(
                    f"{name} exited with status {proc.returncode} at start-up: {last} "
                    f"(log: {self.folder / f'{name}.log'})"
                )

    def start(self) -> "LocalKubernetes":
        """Start etcd, the API server (waits until it is ready) and kube-scheduler."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self._certificates()
        etcd, peer, self.port = _free_port(), _free_port(), _free_port()
        data = self.folder / "etcd"
        self._spawn("etcd", [
            "--name", "tjap", "--data-dir", str(data), "--unsafe-no-fsync",
            "--listen-client-urls", f"http://127.0.0.1:{etcd}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"tjap=http://127.0.0.1:{peer}",
            "--log-level", "warn",
        ])  # fmt: skip
        pki = self.folder / "pki"
        self._spawn("kube-apiserver", [
            f"--etcd-servers=http://127.0.0.1:{etcd}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}", f"--cert-dir={self.folder / 'certs'}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--disable-admission-plugins=ServiceAccount",  # no token controller runs here
            "--allow-privileged=false", "--profiling=false",
        ])  # fmt: skip
        self._kubeconfig(self.kubeconfig, "admin")
        self._wait_ready()
        if self.scheduler:
            config = self.folder / "scheduler.kubeconfig"
            self._kubeconfig(config, "scheduler")
            self._spawn("kube-scheduler", [
                f"--kubeconfig={config}", f"--authentication-kubeconfig={config}",
                f"--authorization-kubeconfig={config}", "--leader-elect=false",
                "--bind-address=127.0.0.1", f"--secure-port={_free_port()}",
            ])  # fmt: skip
        if self.controllers:  # as the administrator: each controller's own account needs tokens
            self._spawn(CONTROLLER_MANAGER, [
                f"--kubeconfig={self.kubeconfig}", f"--controllers={CONTROLLERS}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}", "--leader-elect=false",
                "--bind-address=127.0.0.1", f"--secure-port={_free_port()}",
            ])  # fmt: skip
        if self.scheduler or self.controllers:
            time.sleep(0.2)
            self._check_alive()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        last = ""
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                with self.api(timeout_s=2) as api:
                    api.get("/api/v1/namespaces/default")
                    return
            except KubernetesError as exc:
                last = str(exc)
            time.sleep(0.2)
        raise KubernetesError(
            f"the API server was not ready after {self.start_timeout_s:g} s ({last[:160]}; "
            f"log: {self.folder / 'kube-apiserver.log'})"
        )

    def restart(self, name: str, *, down_s: float = 0.0) -> None:
        """Stop one of its programs (``"kube-apiserver"``, ...) and start it again with the same
        arguments after ``down_s`` seconds; waits until the API server is ready again."""
        proc = self.procs[name]
        proc.terminate()
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:  # the API server drains its requests for a while
            proc.kill()
            proc.wait()
        time.sleep(down_s)
        self._spawn(name, self._args[name])
        self._wait_ready()

    def stop(self) -> None:
        """Stop every program it started (SIGTERM, then SIGKILL after 5 s); a temporary folder
        is removed."""
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        if self._own:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- the cluster's contents ----------------------------------------------------------------
    def install_crd(self, path, *, timeout_s: float = 30.0) -> str:
        """Create the CustomResourceDefinition in the YAML file ``path`` (e.g. :func:`kueue_crd`)
        and wait until it is established; returns its name."""
        import yaml

        crd = yaml.safe_load(Path(path).read_text())
        name = crd["metadata"]["name"]
        with self.api() as api:
            api.create_or_keep("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                found = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                conditions = (found.get("status") or {}).get("conditions") or []
                if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    return name
                time.sleep(0.1)
        raise KubernetesError(
            f"the CustomResourceDefinition {name} was not established in {timeout_s:g} s"
        )

    def apply(self, path) -> None:
        """Create the objects of the YAML file ``path`` (namespaces, service accounts, roles
        and cluster roles and their bindings: an RBAC manifest such as
        ``examples/k8s/rbac.yaml``); those already there are left as they are."""
        import yaml

        paths = {
            "Namespace": "/api/v1/namespaces",
            "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        }
        namespaced = {
            "ServiceAccount": "/api/v1/namespaces/{}/serviceaccounts",
            "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{}/roles",
            "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{}/rolebindings",
        }
        with self.api() as api:
            for doc in yaml.safe_load_all(Path(path).read_text()):
                kind = doc["kind"]
                where = (
                    namespaced[kind].format(doc["metadata"]["namespace"])
                    if kind in namespaced
                    else paths.get(kind)
                )
                if where is None:
                    raise KubernetesError(f"{path}: cannot apply a {kind} here")
                api.create_or_keep(where, doc)

    def account_kubeconfig(self, path, namespace: str, name: str) -> Path:
        """Write to ``path`` a kubeconfig with a token of the service account ``namespace/name``
        (a TokenRequest of an hour) and return it: to run a program with that account's rights."""
        with self.api() as api:
            token = api.create(
                f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                 "spec": {"expirationSeconds": 3600}},
            )["status"]["token"]  # fmt: skip
        path = Path(path)
        ca = self.folder / "pki" / "ca.crt"
        path.write_text(
            f"apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
            f"    server: https://127.0.0.1:{self.port}\n    certificate-authority: {ca}\n"
            f"users:\n- name: sa\n  user:\n    token: {token}\n"
            "contexts:\n- name: c\n  context: {cluster: c, user: sa}\ncurrent-context: c\n"
        )
        return path

    def api(self, *, timeout_s: float = 30.0) -> Api:
        """An :class:`~tjap.placement.k8s.api.Api` as the cluster's administrator."""
        return Api(self.kubeconfig, timeout_s=timeout_s)

    def add_nodes(self, topology, *, gpus: int = 4, labels: dict | None = None) -> list[str]:
        """Create the fake nodes of ``topology`` (:func:`~tjap.placement.k8s.nodes.node_manifests`),
        with ``labels`` added to each: Ready, schedulable, without the not-ready taint. Returns
        their names."""
        names = []
        with self.api() as api:
            for node in node_manifests(topology, gpus=gpus):
                name = node["metadata"]["name"]
                node["metadata"]["labels"].update(labels or {})
                status = node.pop("status")
                api.create_or_keep("/api/v1/nodes", node)
                api.patch(f"/api/v1/nodes/{name}/status", ready_status(status["capacity"]))
                api.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": None}}, merge="merge")
                names.append(name)
        return names
