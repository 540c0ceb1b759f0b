"""Leader election on a ``coordination.k8s.io/v1`` Lease, the way Kubernetes' own controllers
(kube-scheduler, kube-controller-manager) elect one of their replicas.

Several replicas of a controller can run at once; only the holder of the Lease acts. The holder
renews the Lease (``spec.renewTime``) every :attr:`LeaderLease.renew_s` seconds; a replica takes
the Lease over when its holder has not renewed it for ``leaseDurationSeconds``, measured on the
replica's own clock from when it last saw the Lease change (as client-go does: the clocks of two
machines are never compared), or at once when the holder gave it up (:meth:`LeaderLease.release`,
on a clean stop). Every write names the ``resourceVersion`` it read, so of two replicas that try
at the same moment one wins and the other's write is refused (409) and it stays a standby.

A holder counts itself the leader only while its last renewal is younger than
:attr:`LeaderLease.renew_deadline_s` (two thirds of the duration), so it stops acting before any
other replica may take over: a holder cut off from the API server stops placing before a standby
starts.
"""

from __future__ import annotations

import socket
import time
import uuid
from datetime import datetime, timezone

from tjap.core.errors import InvalidInputError, KubernetesUnreachableError, check_number

#: The API path of the Leases of a namespace.
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
#: Seconds a Lease lasts unrenewed before a standby takes it over (client-go's default).
DURATION_S = 15.0
#: The in-cluster file naming the pod's namespace.
NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def default_namespace() -> str:
    """The namespace of the pod the controller runs in (in-cluster), else ``default``."""
    try:
        with open(NAMESPACE_FILE, encoding="utf-8") as fh:
            return fh.read().strip() or "default"
    except OSError:
        return "default"


def _micro_time(seconds: float) -> str:
    """A Kubernetes MicroTime (RFC 3339, microseconds, UTC)."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderLease:
    """One replica's part in the election on the Lease ``namespace/name``.

    Parameters
    ----------
    api : Api
        :class:`tjap.placement.k8s.api.Api` (or its in-memory twin).
    name, namespace : str
        The Lease (default namespace: :func:`default_namespace`).
    identity : str or None
        This replica's name in ``spec.holderIdentity`` (default: host name and a random suffix).
    duration_s : float
        ``leaseDurationSeconds`` (default :data:`DURATION_S`); the holder renews every third of it.
    clock, wall : callables
        Seconds on a monotonic clock (the expiry) and on the wall clock (the times written).
    """

    def __init__(
        self,
        api,
        name: str = "tjap-placement",
        namespace: str | None = None,
        *,
        identity: str | None = None,
        duration_s: float = DURATION_S,
        clock=time.monotonic,
        wall=time.time,
    ):
        if not name or "/" in name:
            raise InvalidInputError(f"the Lease's name must be a plain object name, got {name!r}")
        self.duration_s = check_number("the Lease's duration", duration_s, 1)
        self.api, self.name = api, name
        self.namespace = namespace or default_namespace()
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        self.clock, self.wall = clock, wall
        self.renew_s = self.duration_s / 3
        self.renew_deadline_s = 2 * self.duration_s / 3
        self._seen: tuple | None = None  # (resourceVersion, holder) of the Lease last read
        self._seen_at = 0.0  # when it was first seen so (self.clock)
        self._renewed_at: float | None = None  # our last successful write (self.clock)

    @property
    def path(self) -> str:
        return f"{LEASES.format(namespace=self.namespace)}/{self.name}"

    @property
    def leading(self) -> bool:
        """True while this replica holds the Lease and renewed it within the renew deadline."""
        return (
            self._renewed_at is not None and self.clock() - self._renewed_at < self.renew_deadline_s
        )

    @property
    def holder(self) -> str:
        """The holder of the Lease when it was last read ("" when free or not read yet)."""
        return self._seen[1] if self._seen else ""

    def renew_in(self) -> float:
        """Seconds until the next try is due: 0 when not leading, else until the last renewal
        is :attr:`renew_s` old."""
        if not self.leading:
            return 0.0
        return max(0.0, self._renewed_at + self.renew_s - self.clock())

    def due(self) -> bool:
        """True when it is time to try (again): not leading, or the last renewal
        :attr:`renew_s` old."""
        return self.renew_in() == 0.0

    def acquire_or_renew(self) -> bool:
        """Take the Lease when it is free, expired or ours, and renew it; returns
        :attr:`leading`. A write that loses a race (409) leaves this replica a standby."""
        from tjap.placement.k8s.api import ApiError

        now = self.clock()
        try:
            lease = self.api.get(self.path)
        except ApiError as exc:
            if exc.status != 404:
                raise
            return self._create(now)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        seen = (lease["metadata"].get("resourceVersion"), holder)
        if seen != self._seen:
            self._seen, self._seen_at = seen, now
        duration = float(spec.get("leaseDurationSeconds") or self.duration_s)
        if holder and holder != self.identity and now - self._seen_at < duration:
            self._renewed_at = None
            return False  # another replica holds it and renewed it lately
        stamp = _micro_time(self.wall())
        new = {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.duration_s),
               "renewTime": stamp}  # fmt: skip
        if holder != self.identity:
            new["acquireTime"] = stamp
            new["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        try:
            answer = self.api.patch(
                self.path,
                {"metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]},
                 "spec": new},
                merge="merge",
            )  # fmt: skip
        except ApiError as exc:
            if exc.status != 409:
                raise
            self._renewed_at = None
            return False
        self._seen = (answer["metadata"].get("resourceVersion"), self.identity)
        self._seen_at = self._renewed_at = now
        return True

    def _create(self, now: float) -> bool:
        from tjap.placement.k8s.api import ApiError

        stamp = _micro_time(self.wall())
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.duration_s),
                     "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0},
        }  # fmt: skip
        try:
            answer = self.api.create(LEASES.format(namespace=self.namespace), body)
        except ApiError as exc:
            if exc.status == 409:  # another replica created it first
                self._renewed_at = None
                return False
            if exc.status == 404:
                raise InvalidInputError(
                    f"no namespace {self.namespace!r} for the Lease {self.name!r}: create it "
                    "(kubectl create namespace NAME) or give --lease-namespace"
                ) from None
            raise
        self._seen = (answer["metadata"].get("resourceVersion"), self.identity)
        self._seen_at = self._renewed_at = now
        return True

    def release(self) -> bool:
        """Give the Lease up (a clean stop): a standby takes it at its next try. Returns True
        when this replica held it and gave it up."""
        from tjap.placement.k8s.api import ApiError

        if self._renewed_at is None:
            return False
        self._renewed_at = None
        try:
            lease = self.api.get(self.path)
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return False
            self.api.patch(
                self.path,
                {"metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]},
                 "spec": {"holderIdentity": None, "leaseDurationSeconds": 1}},
                merge="merge",
            )  # fmt: skip
        except (ApiError, KubernetesUnreachableError):
            return False  # taken meanwhile, gone, or the server away: it expires on its own
        return True
