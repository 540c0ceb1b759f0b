"""The Kubernetes API as plain JSON: one small client over the official ``kubernetes`` package.

:class:`Api` loads a kubeconfig (or the in-cluster service account) with the official client,
then sends requests by path and returns the decoded JSON objects (dicts), so everything above it
reads Kubernetes objects as ``kubectl get -o json`` prints them. Failures are one line:
:class:`KubernetesUnreachableError` when the API server cannot be reached, :class:`ApiError`
(with the HTTP status and Kubernetes' own message) when it refuses a request.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tjap.core.errors import KubernetesError, KubernetesUnreachableError, MissingDependencyError

__all__ = ["Api", "ApiError", "KubernetesError", "KubernetesUnreachableError"]


class ApiError(KubernetesError):
    """The API server refused a request: ``status`` is the HTTP status (404, 409, 403 ...)."""

    def __init__(self, message: str, status: int, reason: str = ""):
        super().__init__(message)
        self.status, self.reason = status, reason


def _client():
    try:
        import kubernetes
    except ImportError:
        raise MissingDependencyError(
            "tjap's Kubernetes commands need the official client: pip install 'tjap[k8s]' "
            "(or pip install kubernetes)"
        ) from None
    return kubernetes


class Api:
    """Requests to one API server, by path, in JSON.

    Parameters
    ----------
    kubeconfig : str, Path or None
        A kubeconfig file; None: ``$KUBECONFIG``, else the in-cluster service account when
        running in a pod, else ``~/.kube/config``.
    timeout_s : float
        Seconds a request may take.
    """

    def __init__(self, kubeconfig=None, *, timeout_s: float = 30.0):
        k = _client()
        self.timeout_s = timeout_s
        config = k.client.Configuration()
        path = kubeconfig or os.environ.get("KUBECONFIG")
        try:
            if path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
                k.config.load_incluster_config(client_configuration=config)
                self.source = "the in-cluster service account"
            else:
                path = Path(path or Path.home() / ".kube" / "config")
                if not path.is_file():
                    raise KubernetesError(
                        f"no kubeconfig at {path}; give --kubeconfig FILE (tjap k8s cluster up "
                        "writes one) or set KUBECONFIG"
                    )
                k.config.load_kube_config(config_file=str(path), client_configuration=config)
                self.source = str(path)
        except KubernetesError:
            raise
        except Exception as exc:  # the client's own ConfigException, a YAML error ...
            raise KubernetesError(
                f"cannot read the Kubernetes configuration {path or '(in-cluster)'}: "
                f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            ) from None
        self.host = config.host
        self._api = k.client.ApiClient(config)
        self.versions: dict[str, str | None] = {}  # a list's path -> its last resource version

    def close(self) -> None:
        self._api.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict | None = None,
        content_type: str = "application/json",
    ) -> dict:
        """``method`` on ``path`` (``/api/v1/nodes``), ``body`` sent as JSON; the decoded answer."""
        headers = {"Accept": "application/json", "Content-Type": content_type}
        try:
            response = self._send(method, path, query, headers, body, self.timeout_s)
            data = response.read()
        except Exception as exc:  # urllib3: connection refused, TLS, timeout
            raise KubernetesUnreachableError(
                f"cannot reach the Kubernetes API server at {self.host} ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:160] if str(exc) else ''}); is the cluster up?"
            ) from None
        if response.status >= 400:
            raise _refused(method, path, response.status, response.reason, data)
        return json.loads(data) if data else {}

    def _send(self, method, path, query, headers, body, timeout):
        """The client's response to one request (its body not read yet)."""
        method, url, headers, body, _ = self._api.param_serialize(
            method,
            path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        return self._api.call_api(
            method, url, header_params=headers, body=body, _request_timeout=timeout
        )

    def get(self, path: str, **query) -> dict:
        return self.request("GET", path, query=query or None)

    def items(self, path: str, **query) -> list[dict]:
        """Every object of a list, following ``continue`` tokens (500 a page); the list's
        resource version is kept in :attr:`versions` (``path`` -> version), where
        :meth:`wait_for_change` starts watching."""
        found: list[dict] = []
        token = None
        while True:
            page = self.get(path, limit=500, **query, **({"continue": token} if token else {}))
            found += page.get("items", [])
            if token is None:
                self.versions[path] = page.get("metadata", {}).get("resourceVersion")
            token = page.get("metadata", {}).get("continue")
            if not token:
                return found

    def wait_for_change(self, path: str, timeout_s: float, *, settle_s: float = 0.2) -> bool:
        """Watch ``path`` (a list, e.g. ``/api/v1/pods``) from the version :meth:`items` last
        read it at: True once something changed (then after ``settle_s`` more, since a gang's
        pods are created one by one), False when nothing did for ``timeout_s`` seconds. An
        expired version (the server's 410) counts as a change."""
        import time

        version = self.versions.get(path)
        if not version:
            time.sleep(timeout_s)
            return True
        query = {"watch": "1", "resourceVersion": version,
                 "timeoutSeconds": str(max(1, round(timeout_s)))}  # fmt: skip
        try:
            response = self._send("GET", path, query, {"Accept": "application/json"}, None,
                                  (self.timeout_s, timeout_s + 10))  # fmt: skip
            stream = response.response
            try:
                line = stream.readline() if response.status < 400 else b"{}"
            finally:  # a watch still streaming is closed, never put back in the pool half read
                stream.close()
        except Exception as exc:  # urllib3: refused, TLS, the read timed out
            raise KubernetesUnreachableError(
                f"cannot watch {path} on {self.host} ({type(exc).__name__}); is the cluster up?"
            ) from None
        if not line:  # the server ended the watch at timeoutSeconds: nothing changed
            return False
        time.sleep(settle_s)
        return True

    def create(self, path: str, body: dict) -> dict:
        return self.request("POST", path, body)

    def create_or_keep(self, path: str, body: dict) -> bool:
        """Create ``body`` at ``path`` unless an object of that name is there already (HTTP
        409; that one is kept as it is); returns whether it was created."""
        try:
            self.create(path, body)
        except ApiError as exc:
            if exc.status != 409:
                raise
            return False
        return True

    def patch(self, path: str, body: dict, *, merge: str = "strategic") -> dict:
        """A strategic-merge (default), ``"merge"`` or ``"json"`` patch."""
        kinds = {
            "strategic": "application/strategic-merge-patch+json",
            "merge": "application/merge-patch+json",
            "json": "application/json-patch+json",
        }
        return self.request("PATCH", path, body, content_type=kinds[merge])

    def delete(self, path: str) -> dict:
        return self.request("DELETE", path)


def _refused(method: str, path: str, status: int, reason, data: bytes) -> ApiError:
    message, reason = "", reason or ""
    try:
        answer = json.loads(data or b"{}")
        message, reason = answer.get("message", ""), answer.get("reason", reason)
    except (TypeError, ValueError):
        message = (data or b"")[:200].decode(errors="replace")
    return ApiError(
        f"Kubernetes refused {method} {path}: {status} {reason}: {message}".rstrip(": "),
        int(status),
        reason,
    )
