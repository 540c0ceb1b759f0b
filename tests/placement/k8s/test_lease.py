"""Leader election on a Lease (tjap.placement.k8s.lease) between replicas on the control plane's
in-memory twin, on a hand-driven clock; and two placement controllers of which only the holder
places. The same election against a real kube-apiserver is in tests/k8s/test_k8s_live.py."""

from __future__ import annotations

import threading
import time

import pytest

import tjap
from tjap.core.errors import InvalidInputError
from tjap.k8s.controller import Controller
from tjap.placement.k8s.gangs import GATE
from tjap.placement.k8s.lease import LeaderLease
from tjap.placement.k8s.memory import MemoryApi

TREE = tjap.Topology.from_slurm("BlockName=r0 Nodes=g[01-06]\nBlockName=r1 Nodes=g[07-12]")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def replica(api, clock, name, **kw):
    return LeaderLease(api, namespace="tjap-system", identity=name, duration_s=15, clock=clock,
                       wall=lambda: 1.8e9 + clock.now, **kw)  # fmt: skip


def lease_of(api):
    return api.get("/apis/coordination.k8s.io/v1/namespaces/tjap-system/leases/tjap-placement")


def test_the_first_replica_takes_the_lease_and_the_second_stands_by():
    api, clock = MemoryApi(TREE), Clock()
    a, b = replica(api, clock, "a"), replica(api, clock, "b")
    assert a.acquire_or_renew() and a.leading
    assert not b.acquire_or_renew() and not b.leading
    assert b.holder == "a"
    spec = lease_of(api)["spec"]
    assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"].endswith("Z") and "." in spec["renewTime"]  # a MicroTime


def test_a_holder_that_renews_keeps_the_lease_and_one_that_stops_loses_it():
    api, clock = MemoryApi(TREE), Clock()
    a, b = replica(api, clock, "a"), replica(api, clock, "b")
    a.acquire_or_renew()
    for _ in range(6):  # a renews every 5 s; b tries as often and never wins
        clock.now += 5
        assert a.due() and a.acquire_or_renew()
        assert not b.acquire_or_renew()
    # a stops renewing (killed): b takes over once 15 s have passed since it saw the last change
    clock.now += 14
    assert not b.acquire_or_renew()
    assert not a.leading  # past its renew deadline (10 s), a no longer counts itself the leader
    clock.now += 1.5
    assert b.acquire_or_renew() and b.leading
    spec = lease_of(api)["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert not a.acquire_or_renew()  # a comes back: b holds a fresh lease
    assert a.holder == "b"


def test_of_two_replicas_that_try_at_once_one_wins():
    api, clock = MemoryApi(TREE), Clock()
    a, b, c = replica(api, clock, "a"), replica(api, clock, "b"), replica(api, clock, "c")
    a.acquire_or_renew()
    assert not b.acquire_or_renew() and not c.acquire_or_renew()  # both see a's lease now
    clock.now += 16  # a never renewed: expired on b's clock and on c's
    before = lease_of(api)
    assert b.acquire_or_renew()
    real_get, reads = api.get, []

    def stale_once(path, **query):  # c read the Lease before b wrote it
        reads.append(path)
        return before if len(reads) == 1 else real_get(path, **query)

    api.get = stale_once
    try:
        assert not c.acquire_or_renew()  # its write names the old resourceVersion: 409
    finally:
        api.get = real_get
    assert lease_of(api)["spec"]["holderIdentity"] == "b" and not c.leading


def test_a_released_lease_is_taken_at_the_next_try():
    api, clock = MemoryApi(TREE), Clock()
    a, b = replica(api, clock, "a"), replica(api, clock, "b")
    a.acquire_or_renew()
    assert not b.acquire_or_renew()
    assert a.release() and not a.leading
    assert "holderIdentity" not in lease_of(api)["spec"]
    assert b.acquire_or_renew()  # no wait for the duration
    assert not a.release()  # no longer its own: nothing to give up


def test_bad_lease_settings_are_refused_in_one_line():
    api = MemoryApi(TREE)
    with pytest.raises(InvalidInputError, match="plain object name"):
        LeaderLease(api, "a/b")
    with pytest.raises(InvalidInputError, match="duration"):
        LeaderLease(api, duration_s=0.5)


def gated_gang(api, gang, n):
    for i in range(n):
        api.create("/api/v1/namespaces/default/pods", {
            "metadata": {"name": f"{gang}-{i}", "labels": {"tjap.io/gang": gang},
                         "annotations": {"tjap.io/gang-size": str(n)}},
            "spec": {"schedulingGates": [{"name": GATE}],
                     "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
        })  # fmt: skip


def released(api):
    return [
        o for p, o in api.objects.items() if "/pods/" in p and not o["spec"].get("schedulingGates")
    ]


def test_only_the_holder_places_and_a_standby_takes_over_when_it_stops(tmp_path):
    api = MemoryApi(TREE)
    holder = LeaderLease(api, namespace="tjap-system", identity="holder", duration_s=3)
    assert holder.acquire_or_renew()
    log = open(tmp_path / "b.jsonl", "w")
    standby = Controller(api, log=log)
    lease = LeaderLease(api, namespace="tjap-system", identity="standby", duration_s=3)
    gated_gang(api, "g1", 4)
    thread = threading.Thread(target=standby.run, kwargs={"interval_s": 0.1, "lease": lease})
    thread.start()
    try:
        time.sleep(0.5)
        assert released(api) == []  # the holder renews nothing here, but 3 s have not passed
        holder.release()  # a clean stop of the holder
        deadline = time.monotonic() + 5
        while len(released(api)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(released(api)) == 4
    finally:
        standby.stop()
        thread.join(10)
    assert not thread.is_alive()
    log.close()
    import json

    states = [
        r["state"] for r in map(json.loads, open(tmp_path / "b.jsonl")) if r["event"] == "lease"
    ]
    assert states == ["standby", "leading", "released"]
    assert "holderIdentity" not in lease_of(api)["spec"]  # given up on the stop


def test_giving_up_with_the_server_away_is_quiet():
    """A stop while the API server is unreachable: the Lease is left to expire."""
    from tjap.core.errors import KubernetesUnreachableError

    api, clock = MemoryApi(TREE), Clock()
    a = replica(api, clock, "a")
    a.acquire_or_renew()

    def away(path, **query):
        raise KubernetesUnreachableError("the API server does not answer")

    api.get = away
    assert not a.release() and not a.leading
