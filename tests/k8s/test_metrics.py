"""The controller's metrics and health (tjap.k8s.metrics): counters from its records, Prometheus'
text format, /healthz, served over HTTP; the running controller on the in-memory twin feeds
them."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request

import pytest

import tjap
from tjap.core.errors import InvalidInputError
from tjap.k8s.controller import Controller
from tjap.k8s.metrics import Metrics, parse_address, serve
from tjap.placement.k8s.gangs import GATE
from tjap.placement.k8s.memory import MemoryApi

TREE = tjap.Topology.from_slurm("BlockName=r0 Nodes=g[01-06]\nBlockName=r1 Nodes=g[07-12]")


def parse(text: str) -> dict[str, float]:
    """Prometheus' text format as {name: value}; every sample line has a HELP and a TYPE."""
    values, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
        elif line and not line.startswith("#"):
            name, value = line.split()
            assert name in typed
            values[name] = float(value)
    return values


def test_the_records_make_the_counters():
    clock = [100.0]
    m = Metrics(clock=lambda: clock[0])
    m.observe({"event": "window", "placed": {"a": ["n1"], "b": ["n2", "n3"]}, "cost": 30.0,
               "kueue_cost": 40.0, "released_pods": 3, "waiting": {"c": "x"}, "refused": {},
               "decide_s": 0.25})  # fmt: skip
    m.observe({"event": "window", "placed": {}, "cost": None, "kueue_cost": None,
               "released_pods": 0, "waiting": {}, "refused": {"d": "bad"}})  # fmt: skip
    m.observe({"event": "resume", "released": 2, "replanned": 1})
    m.observe({"event": "error", "error": "unreachable"})
    m.observe({"event": "lease", "state": "standby"})
    v = parse(m.exposition())
    assert v["tjap_passes_total"] == 2 and v["tjap_windows_placed_total"] == 1
    assert v["tjap_gangs_placed_total"] == 2 and v["tjap_pods_released_total"] == 3
    assert v["tjap_window_cost_total"] == 30 and v["tjap_window_kueue_cost_total"] == 40
    assert v["tjap_decision_seconds_sum"] == 0.25 and v["tjap_decision_seconds_count"] == 1
    assert v["tjap_gangs_waiting"] == 0 and v["tjap_gangs_refused"] == 1  # the last pass's
    assert v["tjap_pods_resumed_total"] == 3 and v["tjap_errors_total"] == 1
    assert v["tjap_leader"] == 0 and v["tjap_last_pass_timestamp_seconds"] == 100


def test_health_is_the_age_of_the_last_contact():
    clock = [0.0]
    m = Metrics(clock=lambda: clock[0])
    assert m.health(60) == (False, "no pass yet")
    m.alive()
    clock[0] = 59
    assert m.health(60) == (True, "ok")
    clock[0] = 61
    ok, why = m.health(60)
    assert not ok and "61 s" in why


@pytest.mark.parametrize("bad", ["9090", "host:", "host:http", "h:70000"])
def test_a_bad_address_is_one_line(bad):
    with pytest.raises(InvalidInputError, match="HOST:PORT"):
        parse_address(bad)


def test_parse_address():
    assert parse_address(":9090") == ("0.0.0.0", 9090)
    assert parse_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_address("[::1]:9090") == ("::1", 9090)


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_running_controller_serves_its_metrics_and_health():
    api = MemoryApi(TREE)
    controller = Controller(api)
    controller.metrics = Metrics()
    server = serve(controller.metrics, "127.0.0.1:0", max_age_s=60)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert get(base + "/healthz")[0] == 503  # no pass yet
        for i in range(3):
            api.create("/api/v1/namespaces/default/pods", {
                "metadata": {"name": f"g-{i}", "labels": {"tjap.io/gang": "g"},
                             "annotations": {"tjap.io/gang-size": "3"}},
                "spec": {"schedulingGates": [{"name": GATE}], "containers": [
                    {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
            })  # fmt: skip
        thread = threading.Thread(target=controller.run, kwargs={"interval_s": 0.1})
        thread.start()
        deadline = time.monotonic() + 10
        while controller.metrics.values["pods_released_total"] < 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        controller.stop()
        thread.join(10)
        status, text = get(base + "/metrics")
        assert status == 200
        v = parse(text)
        assert v["tjap_gangs_placed_total"] == 1 and v["tjap_pods_released_total"] == 3
        assert v["tjap_window_cost_total"] <= v["tjap_window_kueue_cost_total"]
        assert v["tjap_leader"] == 1
        assert get(base + "/healthz") == (200, "ok\n")
        assert get(base + "/other")[0] == 404
    finally:
        server.shutdown()


def test_a_port_in_use_is_one_line():
    first = serve(Metrics(), "127.0.0.1:0")
    try:
        with pytest.raises(InvalidInputError, match="cannot serve the metrics"):
            serve(Metrics(), f"127.0.0.1:{first.server_address[1]}")
    finally:
        first.shutdown()
