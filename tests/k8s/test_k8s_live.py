"""The placement controller against a real Kubernetes: etcd, kube-apiserver, kube-scheduler and
kube-controller-manager (its Job controller) built from Go modules (``.ci/build-k8s``), started
and stopped here, with fake GPU nodes drawn from a topology, and Kueue's own Topology CRD.
Marked k8s: ``make test-k8s`` builds the control plane once and runs these."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import tjap
from tjap.k8s.controller import Controller
from tjap.placement.k8s.api import Api, ApiError
from tjap.placement.k8s.gangs import GATE, PLANNED, REQUIRED, SLICE_LEVEL, SLICE_SIZE
from tjap.placement.k8s.harness import LocalKubernetes, kueue_crd, missing_programs
from tjap.placement.k8s.nodes import HOSTNAME, level_keys

pytestmark = pytest.mark.k8s
ROOT = Path(__file__).resolve().parents[2]
TREE = tjap.Topology.from_slurm(
    "\n".join(f"BlockName=r{i} Nodes=g[{6 * i + 1:02d}-{6 * i + 6:02d}]" for i in range(4))
    + "\nBlockSizes=6,12,24"
)
LEVELS = level_keys(TREE)[:-1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    missing = missing_programs(controllers=True)
    if missing:
        pytest.skip(f"no Kubernetes control plane built ({', '.join(missing)}): bash .ci/build-k8s")
    with LocalKubernetes(tmp_path_factory.mktemp("k8s"), controllers=True) as k8s:
        k8s.add_nodes(TREE)
        yield k8s


@pytest.fixture
def api(cluster):
    with cluster.api() as api:
        yield api
        for job in api.items("/apis/batch/v1/namespaces/default/jobs"):  # each test starts empty
            api.request("DELETE", f"/apis/batch/v1/namespaces/default/jobs/{job['metadata']['name']}",
                        query={"propagationPolicy": "Background"})  # fmt: skip
        for node in TREE.node_names:  # every node back, schedulable
            try:
                api.patch(f"/api/v1/nodes/{node}", {"spec": {"unschedulable": None}}, merge="merge")
            except ApiError:
                cluster.add_nodes(TREE)
        while api.items("/apis/batch/v1/namespaces/default/jobs"):
            time.sleep(0.1)
        for pod in api.items("/api/v1/namespaces/default/pods"):
            api.request("DELETE", f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}",
                        query={"gracePeriodSeconds": 0})  # fmt: skip
        deadline = time.monotonic() + 30
        while api.items("/api/v1/namespaces/default/pods") and time.monotonic() < deadline:
            time.sleep(0.1)


def gated_pods(api, gang, n, notes=None, gate=GATE):
    for i in range(n):
        api.create("/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{gang}-{i}", "labels": {"tjap.io/gang": gang},
                         "annotations": {"tjap.io/gang-size": str(n), **(notes or {})}},
            "spec": {"schedulingGates": [{"name": gate}], "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10",
                 "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
        })  # fmt: skip


def bound(api, timeout_s=30.0) -> dict:
    """Pod name -> the node kube-scheduler bound it to, once every pod is bound."""
    deadline = time.monotonic() + timeout_s
    while True:
        pods = api.items("/api/v1/namespaces/default/pods")
        names = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
        if all(names.values()) or time.monotonic() > deadline:
            return names
        time.sleep(0.2)


def test_the_nodes_are_ready_and_the_scheduler_binds_ungated_pods(cluster, api):
    nodes = api.items("/api/v1/nodes")
    assert len(nodes) == TREE.num_nodes
    assert all(not n["spec"].get("taints") for n in nodes)
    gated_pods(api, "plain", 2, gate="example.com/other")
    for i in range(2):  # remove the other gate: kube-scheduler alone places them
        api.patch(
            f"/api/v1/namespaces/default/pods/plain-{i}",
            {"spec": {"schedulingGates": None}},
            merge="merge",
        )
    assert all(bound(api).values())


def test_gangs_are_placed_whole_and_bound_where_tjap_planned(cluster, api):
    gated_pods(api, "seg", 6, {SLICE_SIZE: "3", SLICE_LEVEL: LEVELS[-1]})
    gated_pods(api, "rack", 6, {REQUIRED: LEVELS[-1]})
    gated_pods(api, "plain", 4)
    decision = Controller(api).run_pass()
    assert len(decision.placed) == 3 and decision.cost <= decision.kueue_cost + 1e-9
    nodes = bound(api)
    assert all(nodes.values()) and len(set(nodes.values())) == 16
    for pod in api.items("/api/v1/namespaces/default/pods"):
        assert pod["spec"]["nodeName"] == pod["metadata"]["annotations"][PLANNED]
        assert pod["spec"]["nodeSelector"][HOSTNAME] == pod["spec"]["nodeName"]
    racks = {TREE.node_leaf[TREE.node_index(nodes[f"rack-{i}"])] for i in range(6)}
    assert len(racks) == 1


def test_a_bad_request_stays_gated_with_an_event(cluster, api):
    gated_pods(api, "bad", 2, {REQUIRED: "example.com/rack"})
    decision = Controller(api).run_pass()
    assert ("default", "gang/bad") in decision.refused
    pod = api.get("/api/v1/namespaces/default/pods/bad-0")
    assert pod["spec"]["schedulingGates"] and not pod["spec"].get("nodeName")
    events = api.items(
        "/api/v1/namespaces/default/events", fieldSelector="involvedObject.name=bad-0"
    )
    assert any(
        e["reason"] == "TjapRequestRefused" and "not a level" in e["message"] for e in events
    )


def test_the_controller_survives_an_api_server_restart(cluster, api):
    gated_pods(api, "late", 3)
    cluster.restart("kube-apiserver", down_s=1.0)
    with cluster.api() as fresh:
        Controller(fresh).run_pass()
        assert all(bound(fresh).values())


def test_the_least_privilege_account_can_place_and_nothing_more(cluster, api, tmp_path):
    cluster.apply(ROOT / "examples" / "k8s" / "rbac.yaml")
    config = cluster.account_kubeconfig(tmp_path / "kubeconfig", "tjap-system", "tjap-placement")
    gated_pods(api, "sa", 2)
    with Api(config) as limited:
        Controller(limited).run_pass()
        assert all(bound(api).values())
        with pytest.raises(ApiError) as refused:
            limited.delete("/api/v1/namespaces/default/pods/sa-0")
        assert refused.value.status == 403
        with pytest.raises(ApiError):
            limited.patch("/api/v1/nodes/g01", {"metadata": {"labels": {"x": "y"}}}, merge="merge")


def test_two_replicas_elect_one_placer_with_the_least_privilege_account(cluster, api, tmp_path):
    """Two controllers with --leader-elect's Lease (tjap-system/tjap-placement, the RBAC of
    examples/k8s/rbac.yaml): only the holder places; on its clean stop the standby takes over
    and places the next gang; the account may touch no other Lease."""
    import io
    import json
    import threading

    from tjap.placement.k8s.lease import LeaderLease

    cluster.apply(ROOT / "examples" / "k8s" / "rbac.yaml")
    config = cluster.account_kubeconfig(tmp_path / "kubeconfig", "tjap-system", "tjap-placement")
    logs, replicas = {}, {}
    with Api(config) as first, Api(config) as second:
        for name, own in (("a", first), ("b", second)):
            logs[name] = io.StringIO()
            controller = Controller(own, log=logs[name])
            lease = LeaderLease(own, namespace="tjap-system", identity=name, duration_s=3)
            thread = threading.Thread(target=controller.run, daemon=True,
                                      kwargs={"interval_s": 1.0, "lease": lease})  # fmt: skip
            thread.start()
            replicas[name] = (controller, thread)
            time.sleep(0.5)  # a first: it takes the Lease
        gated_pods(api, "elected", 3)
        assert all(bound(api).values())
        path = "/apis/coordination.k8s.io/v1/namespaces/tjap-system/leases/tjap-placement"
        assert api.get(path)["spec"]["holderIdentity"] == "a"
        replicas["a"][0].stop()
        replicas["a"][1].join(timeout=15)
        gated_pods(api, "after-a", 2)
        nodes = bound(api, timeout_s=30)
        assert all(nodes.values())
        assert api.get(path)["spec"]["holderIdentity"] == "b"
        with pytest.raises(ApiError) as refused:
            first.get("/apis/coordination.k8s.io/v1/namespaces/tjap-system/leases/other")
        assert refused.value.status == 403
        replicas["b"][0].stop()
        replicas["b"][1].join(timeout=15)
    assert not any(thread.is_alive() for _, thread in replicas.values())
    records = {
        k: [json.loads(line) for line in log.getvalue().splitlines()] for k, log in logs.items()
    }
    placed = {
        k: {g for r in rs if r["event"] == "window" for g in r["placed"]}
        for k, rs in records.items()
    }
    assert placed == {"a": {"default/gang/elected"}, "b": {"default/gang/after-a"}}
    states = {k: [r["state"] for r in rs if r["event"] == "lease"] for k, rs in records.items()}
    assert states == {"a": ["leading", "released"], "b": ["standby", "leading", "released"]}
    assert "holderIdentity" not in api.get(path)["spec"]


def test_a_killed_leader_is_replaced_once_its_lease_expires(cluster, api, tmp_path):
    """Two ``tjap k8s place --leader-elect`` processes: the holder killed with SIGKILL (no
    release) is replaced by the standby within the Lease's duration, which places the next
    gang; SIGTERM stops the new holder (exit status 143), which gives the Lease up."""
    import signal
    import subprocess
    import sys

    path = "/apis/coordination.k8s.io/v1/namespaces/default/leases/tjap-kill-test"
    argv = [sys.executable, "-m", "tjap", "k8s", "place", "--kubeconfig", str(cluster.kubeconfig),
            "--leader-elect", "--lease", "tjap-kill-test", "--lease-namespace", "default",
            "--lease-duration", "3", "--interval", "1", "--json"]  # fmt: skip
    procs = []
    try:
        for name in ("a", "b"):
            log = open(tmp_path / f"{name}.jsonl", "w")
            procs.append(subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.PIPE,
                                          text=True))  # fmt: skip
            if name == "a":  # the first takes the Lease before the second starts
                wait_for(lambda: _holder(api, path) is not None)
        first = _holder(api, path)
        holder, standby = procs
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        killed = time.monotonic()
        gated_pods(api, "after-kill", 2)
        assert all(bound(api, timeout_s=30).values())
        assert time.monotonic() - killed < 20
        assert _holder(api, path) not in (None, first)
        standby.send_signal(signal.SIGTERM)
        assert standby.wait(timeout=20) == 143, standby.stderr.read()  # the CLI's SIGTERM status
        assert _holder(api, path) is None  # given up on the clean stop
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _holder(api, path):
    try:
        return api.get(path)["spec"].get("holderIdentity")
    except ApiError:
        return None


def test_the_commands_of_the_how_to(tmp_path):
    """``tjap k8s cluster up`` / ``advise`` / ``place --once --json`` / ``cluster down``, as
    docs/how-to/kubernetes.md shows them, in processes of their own."""
    import json
    import os
    import subprocess
    import sys

    if missing_programs():
        pytest.skip("no Kubernetes control plane built: bash .ci/build-k8s")

    def tjap_cli(*argv, env=None):
        return subprocess.run([sys.executable, "-m", "tjap", *argv], cwd=ROOT, capture_output=True,
                              text=True, timeout=120, env={**os.environ, **(env or {})})  # fmt: skip

    folder = tmp_path / "k8s"
    up = tjap_cli(
        "k8s", "cluster", "up", "--dir", str(folder), "--topology", "examples/blocks.conf"
    )
    assert up.returncode == 0 and "72 nodes" in up.stdout, up.stderr
    try:
        again = tjap_cli(
            "k8s", "cluster", "up", "--dir", str(folder), "--topology", "examples/blocks.conf"
        )
        assert again.returncode == 2 and "already runs" in again.stderr
        env = {"KUBECONFIG": str(folder / "kubeconfig")}
        with Api(folder / "kubeconfig") as api:
            gated_pods(api, "train", 12, {SLICE_SIZE: "6", SLICE_LEVEL: "topology.tjap.io/level-2"})
            advise = tjap_cli("k8s", "advise", env=env)
            assert advise.returncode == 0 and "default/gang/train" in advise.stdout, advise.stderr
            assert api.get("/api/v1/namespaces/default/pods/train-0")["spec"]["schedulingGates"]
            place = tjap_cli(
                "k8s", "place", "--once", "--json", "--kubeconfig", str(folder / "kubeconfig")
            )
            assert place.returncode == 0, place.stderr
            line = json.loads(place.stdout.splitlines()[-1])
            assert line["released_pods"] == 12 and line["cost"] <= line["kueue_cost"] + 1e-9
            assert all(bound(api).values())
    finally:
        down = tjap_cli("k8s", "cluster", "down", "--dir", str(folder))
    assert down.returncode == 0, down.stderr
    gone = tjap_cli("k8s", "advise", "--kubeconfig", str(folder / "kubeconfig"))
    assert gone.returncode == 3 and len(gone.stderr.splitlines()) == 1, gone.stderr


def pods_of(api, prefix):
    return [p for p in api.items("/api/v1/namespaces/default/pods")
            if p["metadata"]["name"].startswith(prefix)]  # fmt: skip


def wait_for(predicate, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_an_indexed_job_of_the_example_manifest_is_placed_as_one_gang(cluster, api):
    """examples/k8s/gang.yaml: the Job controller makes its 12 gated pods; the controller reads
    the gang's size from the Job and places it whole, each slice of 6 inside one rack."""
    import yaml

    job = yaml.safe_load((ROOT / "examples" / "k8s" / "gang.yaml").read_text())
    api.create("/apis/batch/v1/namespaces/default/jobs", job)
    wait_for(lambda: len(pods_of(api, "train-12-")) == 12)
    decision = Controller(api).run_pass()
    assert list(decision.placed) == [("default", "job/train-12")]
    nodes = bound(api)
    assert len(nodes) == 12 and all(nodes.values()) and len(set(nodes.values())) == 12
    rank = {p["metadata"]["name"]: int(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"])
            for p in pods_of(api, "train-12-")}  # fmt: skip
    by_rank = [nodes[name] for name in sorted(nodes, key=rank.get)]
    for first in (0, 6):
        assert len({TREE.node_leaf[TREE.node_index(n)] for n in by_rank[first : first + 6]}) == 1


def test_the_levels_come_from_a_kueue_topology_object(cluster, api):
    """Kueue's own Topology CRD (v0.17.0) installed, a Topology object created: the controller
    named it reads its levels from the API server; a name that is not there is one line."""
    cluster.install_crd(kueue_crd())
    try:
        api.create("/apis/kueue.x-k8s.io/v1beta2/topologies", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
            "metadata": {"name": "gpus"},
            "spec": {"levels": [{"nodeLabel": key} for key in [*LEVELS, HOSTNAME]]},
        })  # fmt: skip
    except ApiError as exc:
        assert exc.status == 409
    gated_pods(api, "kueue", 4, {REQUIRED: LEVELS[-1]})
    decision = Controller(api, topology="gpus").run_pass()
    nodes = bound(api)
    assert list(decision.placed) == [("default", "gang/kueue")] and all(nodes.values())
    assert len({TREE.node_leaf[TREE.node_index(n)] for n in nodes.values()}) == 1
    with pytest.raises(tjap.InvalidInputError, match="no Kueue Topology 'other'"):
        Controller(api, topology="other").run_pass()


class Killed(Exception):
    pass


def killed_after(api, patches):
    """One pass of a controller killed once it has sent ``patches`` patches."""
    real, sent = api.patch, [0]

    def dying(*a, **k):
        if sent[0] >= patches:
            raise Killed
        sent[0] += 1
        return real(*a, **k)

    api.patch = dying
    try:
        with pytest.raises(Killed):
            Controller(api).run_pass()
    finally:
        api.patch = real


def planned_nodes(api, prefix):
    return {p["metadata"]["name"]: (p["metadata"].get("annotations") or {}).get(PLANNED)
            for p in pods_of(api, prefix)}  # fmt: skip


@pytest.mark.parametrize("after", [2, 6])
def test_a_controller_killed_mid_window_is_finished_by_the_next(cluster, api, after):
    """Killed after 2 patches (two pods planned) or 6 (all four planned, two released): the
    next controller releases the whole gang, each planned pod on the node planned for it."""
    gated_pods(api, "cut", 4)
    killed_after(api, after)
    planned = planned_nodes(api, "cut-")
    Controller(api).run_pass()
    nodes = bound(api)
    assert all(nodes.values()) and len(set(nodes.values())) == 4
    assert all(nodes[name] == node for name, node in planned.items() if node)


@pytest.mark.parametrize("fault", ["cordoned", "removed"])
def test_a_planned_node_lost_before_release_redoes_the_gang(cluster, api, fault):
    gated_pods(api, "lost", 4)
    killed_after(api, 4)  # every pod planned, none released
    node = planned_nodes(api, "lost-")["lost-0"]
    if fault == "cordoned":
        api.patch(f"/api/v1/nodes/{node}", {"spec": {"unschedulable": True}}, merge="merge")
    else:
        api.delete(f"/api/v1/nodes/{node}")
    Controller(api).run_pass()
    nodes = bound(api)
    assert all(nodes.values()) and node not in nodes.values() and len(set(nodes.values())) == 4


def test_a_gated_pod_deleted_after_planning_holds_its_gang(cluster, api):
    gated_pods(api, "gone", 3)
    killed_after(api, 3)
    api.request("DELETE", "/api/v1/namespaces/default/pods/gone-2", query={"gracePeriodSeconds": 0})
    wait_for(lambda: len(pods_of(api, "gone-")) == 2)
    decision = Controller(api).run_pass()
    assert "2 of 3 pods exist" in decision.waiting[("default", "gang/gone")]
    pods = pods_of(api, "gone-")
    assert all(p["spec"].get("schedulingGates") and not p["spec"].get("nodeName") for p in pods)
    assert all(PLANNED not in (p["metadata"].get("annotations") or {}) for p in pods)


def test_a_job_larger_than_the_cluster_is_refused_with_an_event(cluster, api):
    gated_pods(api, "huge", TREE.num_nodes + 1)
    decision = Controller(api).run_pass()
    assert "the cluster 24 nodes" in decision.refused[("default", "gang/huge")]
    events = api.items(
        "/api/v1/namespaces/default/events", fieldSelector="involvedObject.name=huge-0"
    )
    assert any(e["reason"] == "TjapRequestRefused" for e in events)


def test_the_running_controller_wakes_on_a_new_gang(cluster, api):
    """``run`` watches the pods: a gang created while it waits (its interval 60 s) is placed
    within seconds; ``stop`` ends it."""
    import threading

    with cluster.api() as own:
        controller = Controller(own)
        thread = threading.Thread(target=controller.run, kwargs={"interval_s": 60.0}, daemon=True)
        thread.start()
        time.sleep(1.0)  # its first pass done, it watches
        began = time.monotonic()
        gated_pods(api, "woken", 3)
        nodes = bound(api, timeout_s=20)
        took = time.monotonic() - began
        controller.stop()
        thread.join(timeout=10)
    assert all(nodes.values()) and took < 15 and not thread.is_alive()


def test_the_running_controller_outlives_an_api_server_restart(cluster, api):
    """``run`` loses the API server for a while (its pass or its watch fails), logs the error,
    tries again, and places the gang created once the server is back."""
    import io
    import json
    import threading

    log = io.StringIO()
    with cluster.api(timeout_s=5) as own:
        controller = Controller(own, log=log)
        thread = threading.Thread(target=controller.run, kwargs={"interval_s": 2.0}, daemon=True)
        thread.start()
        time.sleep(1.0)
        cluster.restart("kube-apiserver", down_s=3.0)
        with cluster.api() as fresh:
            gated_pods(fresh, "after", 2)
            nodes = bound(fresh, timeout_s=30)
        controller.stop()
        thread.join(timeout=15)
    assert all(nodes.values()) and not thread.is_alive()
    events = [json.loads(line)["event"] for line in log.getvalue().splitlines()]
    assert "error" in events and events[-1] == "window"  # it lost the server, then went on


def test_with_deadlines_a_gang_joins_the_rack_that_stays_busy_longest(cluster, api):
    """Gangs of 4 pods with ``activeDeadlineSeconds`` of 600 s and of two days, each in a rack of
    its own (6 nodes); then a gang of 2 pods of a day goes where it keeps no rack from being
    whole: beside the two-day gang. The plans record the controller's clock
    (``tjap.io/placed-at``), which the real API server keeps through the release."""
    from tjap.placement.k8s.gangs import PLACED_AT

    for gang, seconds in (("short", 600), ("long", 172800), ("next", 86400)):
        for i in range(4 if gang != "next" else 2):
            api.create("/api/v1/namespaces/default/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{gang}-{i}", "labels": {"tjap.io/gang": gang},
                             "annotations": {"tjap.io/gang-size": "4" if gang != "next" else "2",
                                             REQUIRED: LEVELS[-1]}},
                "spec": {"schedulingGates": [{"name": GATE}], "activeDeadlineSeconds": seconds,
                         "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
            })  # fmt: skip
        if gang == "long":
            first = Controller(api, fragmentation=1000.0, fragmentation_level=LEVELS[-1],
                               clock=lambda: 0.0).run_pass()  # fmt: skip
            assert len(first.placed) == 2
            bound(api)
    second = Controller(
        api, fragmentation=1000.0, fragmentation_level=LEVELS[-1], clock=lambda: 60.0
    ).run_pass()
    assert list(second.placed) == [("default", "gang/next")]
    nodes = bound(api)
    assert all(nodes.values())
    rack = {n: TREE.node_leaf[TREE.node_index(v)] for n, v in nodes.items()}
    assert {rack["next-0"], rack["next-1"]} == {rack["long-0"]} != {rack["short-0"]}
    stamps = {p["metadata"]["name"]: p["metadata"]["annotations"][PLACED_AT]
              for p in api.items("/api/v1/namespaces/default/pods")}  # fmt: skip
    assert stamps["long-0"] == stamps["short-3"] == "0.000" and stamps["next-1"] == "60.000"
