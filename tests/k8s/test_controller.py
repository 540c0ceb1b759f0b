"""The placement controller's decisions and its restart rule, on an in-memory stand-in for the
API server (plain objects, JSON merge patches with resource versions); the same controller
against a real control plane is tests/k8s/test_k8s_live.py (marked k8s)."""

from __future__ import annotations

import pytest

import tjap
from tjap.k8s.controller import Controller
from tjap.placement.k8s.gangs import GATE, PLANNED, PREFERRED, REQUIRED, SLICE_LEVEL, SLICE_SIZE
from tjap.placement.k8s.memory import MemoryApi
from tjap.placement.k8s.nodes import HOSTNAME, level_keys

TREE = tjap.Topology.from_slurm(
    "\n".join(f"BlockName=r{i} Nodes=g[{6 * i + 1:02d}-{6 * i + 6:02d}]" for i in range(4))
    + "\nBlockSizes=6,12,24"
)


class FakeApi(MemoryApi):
    """The in-memory API server (nodes Ready, a patch naming a stale resourceVersion is a
    409) with the tests' helpers: gated pods, Jobs, pods that hold a node; it counts patches."""

    def __init__(self, tree):
        super().__init__(tree)
        self.patches = 0

    def patch(self, path, body, *, merge="merge"):
        self.patches += 1
        return super().patch(path, body, merge=merge)

    def add_pods(self, gang, n, notes=None, *, created="2026-12-02T10:00:00Z"):
        for i in range(n):
            self.objects[f"/api/v1/namespaces/default/pods/{gang}-{i}"] = {
                "metadata": {"name": f"{gang}-{i}", "namespace": "default", "resourceVersion": "1",
                             "labels": {"tjap.io/gang": gang}, "annotations": dict(notes or {}),
                             "creationTimestamp": created},
                "spec": {"schedulingGates": [{"name": GATE}],
                         "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
                "status": {"phase": "Pending"},
            }  # fmt: skip

    def add_job(self, name, parallelism, completions=None, *, jobset=None, replicas=1):
        """A batch/v1 Job and its gated pods, as the Job controller makes them (owner
        references, completion indices); ``jobset``: a JobSet's replicated job's child Job."""
        spec = {"parallelism": parallelism, "completions": completions or parallelism}
        self.objects[f"/apis/batch/v1/namespaces/default/jobs/{name}"] = {"spec": spec}
        for i in range(parallelism):
            labels = {"batch.kubernetes.io/job-completion-index": str(i)}
            if jobset:
                labels.update({"jobset.sigs.k8s.io/jobset-name": jobset,
                               "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                               "jobset.sigs.k8s.io/replicatedjob-replicas": str(replicas)})  # fmt: skip
            self.objects[f"/api/v1/namespaces/default/pods/{name}-{i}"] = {
                "metadata": {"name": f"{name}-{i}", "namespace": "default", "resourceVersion": "1",
                             "labels": labels, "annotations": {},
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name}],
                             "creationTimestamp": "2026-12-02T10:00:00Z"},
                "spec": {"schedulingGates": [{"name": GATE}],
                         "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
            }  # fmt: skip

    def hold(self, node):
        """A running pod (no gate) bound to ``node``, holding its GPUs."""
        self.objects[f"/api/v1/namespaces/default/pods/busy-{node}"] = {
            "metadata": {"name": f"busy-{node}", "namespace": "default", "resourceVersion": "1"},
            "spec": {"nodeName": node,
                     "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
        }  # fmt: skip

    def pods(self):
        return {o["metadata"]["name"]: o for p, o in self.objects.items() if "/pods/" in p}


def released(api):
    return {
        name: p["spec"]["nodeSelector"][HOSTNAME]
        for name, p in api.pods().items()
        if not p["spec"].get("schedulingGates")
        and HOSTNAME in (p["spec"].get("nodeSelector") or {})
    }


LEVELS = level_keys(TREE)[:-1]


def test_a_pass_releases_whole_gangs_never_worse_than_kueue():
    api = FakeApi(TREE)
    api.add_pods("a", 4, {SLICE_SIZE: "2", SLICE_LEVEL: LEVELS[-1]})
    api.add_pods("b", 6, {REQUIRED: LEVELS[-1]}, created="2026-12-02T10:00:01Z")
    decision = Controller(api).run_pass()
    assert set(decision.placed) == {("default", "gang/a"), ("default", "gang/b")}
    assert decision.cost <= decision.kueue_cost + 1e-9
    nodes = released(api)
    assert len(nodes) == 10 and len(set(nodes.values())) == 10  # one pod per node
    b = {nodes[f"b-{i}"] for i in range(6)}
    assert len({TREE.node_leaf[TREE.node_index(n)] for n in b}) == 1  # one rack, as required
    for p in api.pods().values():
        assert p["metadata"]["annotations"][PLANNED] == p["spec"]["nodeSelector"][HOSTNAME]


def test_a_gang_waits_until_it_is_whole_and_a_bad_request_gets_an_event():
    api = FakeApi(TREE)
    api.add_pods("part", 2, {"tjap.io/gang-size": "3"})
    api.add_pods("bad", 4, {REQUIRED: "rack"})
    decision = Controller(api).run_pass()
    assert not decision.placed and not released(api)
    assert "2 of 3 pods exist" in decision.waiting[("default", "gang/part")]
    assert "not a level of this cluster" in decision.refused[("default", "gang/bad")]
    assert len(api.events) == 1 and api.events[0]["involvedObject"]["name"] == "bad-0"
    Controller(api).run_pass()  # a new controller: one event again, not a flood
    assert len(api.events) == 2


def test_a_job_larger_than_the_free_nodes_waits_and_one_larger_than_the_cluster_is_refused():
    api = FakeApi(TREE)
    api.add_pods("huge", 30)
    decision = Controller(api).run_pass()
    assert "30 pods and the cluster 24 nodes" in decision.refused[("default", "gang/huge")]


def test_advise_patches_nothing():
    api = FakeApi(TREE)
    api.add_pods("a", 4)
    decision = Controller(api, dry_run=True).run_pass()
    assert decision.placed and api.patches == 0


class Killed(Exception):
    pass


def killed_after(api, patches: int, make=Controller) -> None:
    """Run one pass of a controller (``make(api)``) that is killed once ``api`` has taken
    ``patches`` patches, then give the API its own patch back (the next controller's)."""
    real = api.patch

    def dying(path, body, *a, **k):
        if api.patches >= patches:
            raise Killed
        return real(path, body, *a, **k)

    api.patch = dying
    with pytest.raises(Killed):
        make(api).run_pass()
    api.patch = real


@pytest.mark.parametrize("after", [1, 3, 5, 6])
def test_a_controller_killed_mid_window_is_finished_by_the_next(after):
    """Killed after ``after`` patches (some pods planned, some released): the next controller
    releases every pod of the window, each on the node first planned for it."""
    api = FakeApi(TREE)
    api.add_pods("a", 4)
    killed_after(api, after)
    planned = {n: p["metadata"]["annotations"].get(PLANNED) for n, p in api.pods().items()}
    Controller(api).run_pass()
    nodes = released(api)
    assert len(nodes) == 4 and len(set(nodes.values())) == 4
    assert all(nodes[n] == planned[n] for n in nodes if planned[n])


def test_a_planned_node_cordoned_before_release_redoes_the_gang():
    api = FakeApi(TREE)
    api.add_pods("a", 4)
    killed_after(api, 4)  # every pod planned, none released
    first = api.pods()["a-0"]["metadata"]["annotations"][PLANNED]
    node = api.objects[f"/api/v1/nodes/{first}"]
    node["spec"]["unschedulable"] = True
    Controller(api).run_pass()  # clears the plan and places the gang afresh
    nodes = released(api)
    assert len(nodes) == 4 and first not in nodes.values()


def test_levels_come_from_keys_or_a_kueue_topology_file(tmp_path):
    from tjap.cli.k8s import controller_levels
    from tjap.core.errors import InvalidInputError

    assert controller_levels(None) is None
    assert controller_levels("example.com/block, kubernetes.io/hostname") == [
        "example.com/block",
        "kubernetes.io/hostname",
    ]
    topology = tmp_path / "topology.yaml"
    topology.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata:\n  name: gpus\n"
        "spec:\n  levels:\n  - nodeLabel: example.com/block\n  - nodeLabel: example.com/rack\n"
        "  - nodeLabel: kubernetes.io/hostname\n"
    )
    assert controller_levels(str(topology)) == [
        "example.com/block",
        "example.com/rack",
        "kubernetes.io/hostname",
    ]
    wrong = tmp_path / "pod.yaml"
    wrong.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n")
    with pytest.raises(InvalidInputError, match="Topology"):
        controller_levels(str(wrong))


def test_a_pod_deleted_before_release_holds_the_rest_of_its_gang():
    """Every pod planned, one deleted before any release: the next controller releases none of
    the gang (a part of a gang never starts) and clears the plans, so the gang is placed afresh
    once it is whole again."""
    api = FakeApi(TREE)
    api.add_pods("a", 4, {"tjap.io/gang-size": "4"})
    killed_after(api, 4)  # every pod planned, none released
    del api.objects["/api/v1/namespaces/default/pods/a-3"]
    decision = Controller(api).run_pass()
    assert not released(api)
    assert all(PLANNED not in p["metadata"]["annotations"] for p in api.pods().values())
    assert "3 of 4 pods exist" in decision.waiting[("default", "gang/a")]
    api.add_pods("a", 4, {"tjap.io/gang-size": "4"})  # the pods back (a-3 anew)
    Controller(api).run_pass()
    assert len(released(api)) == 4


def test_the_pods_of_a_job_are_one_gang_as_large_as_its_parallelism():
    api = FakeApi(TREE)
    api.add_job("train", 4)
    del api.objects["/api/v1/namespaces/default/pods/train-3"]  # the Job controller not done yet
    decision = Controller(api).run_pass()
    assert not released(api) and "3 of 4 pods exist" in decision.waiting[("default", "job/train")]
    api.add_job("train", 4)
    decision = Controller(api).run_pass()
    assert list(decision.placed) == [("default", "job/train")] and len(released(api)) == 4


def test_a_job_whose_job_object_is_gone_is_never_released():
    api = FakeApi(TREE)
    api.add_job("gone", 2)
    del api.objects["/apis/batch/v1/namespaces/default/jobs/gone"]
    decision = Controller(api).run_pass()
    assert not released(api) and decision.waiting[("default", "job/gone")] == "its Job is gone"


def test_a_jobset_replicated_job_is_one_gang_of_all_its_child_jobs():
    api = FakeApi(TREE)
    api.add_job("js-workers-0", 3, jobset="js", replicas=2)
    decision = Controller(api).run_pass()
    assert "3 of 6 pods exist" in decision.waiting[("default", "jobset/js/workers")]
    api.add_job("js-workers-1", 3, jobset="js", replicas=2)
    decision = Controller(api).run_pass()
    assert list(decision.placed) == [("default", "jobset/js/workers")] and len(released(api)) == 6


def test_the_fragmentation_weight_keeps_whole_racks_free_never_above_kueue():
    """Rack r1 half busy: a 3-pod job that prefers one rack goes into r1's free half with a
    fragmentation weight on racks (every whole rack stays free), at no more than Kueue's cost;
    without it the optimum, as cheap, breaks into the whole rack r0."""

    def placed(**options):
        api = FakeApi(TREE)
        for node in ("g07", "g08", "g09"):
            api.hold(node)
        api.add_pods("a", 3, {"tjap.io/gang-size": "3", PREFERRED: LEVELS[-1]})
        decision = Controller(api, **options).run_pass()
        assert decision.cost <= decision.kueue_cost + 1e-9
        return sorted(decision.placed[("default", "gang/a")])

    assert placed(fragmentation=50.0, fragmentation_level=LEVELS[-1]) == ["g10", "g11", "g12"]
    assert placed(fragmentation=0) == ["g01", "g02", "g03"]


def test_a_fragmentation_weight_must_be_a_number_at_least_zero():
    from tjap.core.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="fragmentation"):
        Controller(FakeApi(TREE), fragmentation=-1)


def test_the_rest_of_a_gang_released_in_part_is_placed_when_its_planned_node_is_lost():
    """Killed while releasing (every pod planned, some released), then the planned node of a
    pod not yet released is cordoned: the next controller releases the others on their plans
    and places that pod on another free node, so the gang runs whole."""
    api = FakeApi(TREE)
    api.add_pods("a", 4, {"tjap.io/gang-size": "4"})
    killed_after(api, 6)  # four plans, two releases
    waiting = [p for p in api.pods().values() if p["spec"].get("schedulingGates")]
    assert len(waiting) == 2
    lost = waiting[0]["metadata"]["annotations"][PLANNED]
    api.objects[f"/api/v1/nodes/{lost}"]["spec"]["unschedulable"] = True
    Controller(api).run_pass()
    nodes = released(api)
    assert len(nodes) == 4 and len(set(nodes.values())) == 4 and lost not in nodes.values()


def test_a_run_killed_while_planning_redoes_the_whole_gang():
    """Killed after planning two of four pods: the next controller clears both plans and
    places the gang whole (never the planned two alone)."""
    api = FakeApi(TREE)
    api.add_pods("a", 4, {"tjap.io/gang-size": "4"})
    killed_after(api, 2)
    controller = Controller(api)
    state = controller.read()
    assert controller.resume(state) == 2 and not released(api)
    controller.run_pass()
    assert len(released(api)) == 4


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--fragmentation", "-1"], "--fragmentation: expected a number >= 0"),
        (["--fragmentation", "nan"], "--fragmentation: expected a number >= 0"),
        (["--levels", "a,b", "--topology-name", "x"], "not allowed with argument --levels"),
    ],
)
def test_the_commands_refuse_bad_options_in_one_line_before_reaching_kubernetes(
    argv, message, capsys
):
    from tjap.cli import main

    with pytest.raises(SystemExit) as done:
        main(["k8s", "advise", "--kubeconfig", "/nonexistent", *argv])
    err = capsys.readouterr().err.strip()
    assert done.value.code == 2 and message in err and len(err.splitlines()) == 1


def busy_in_every_rack(api):
    for node in ("g01", "g07", "g13", "g19"):  # one node taken in each rack of 6
        api.hold(node)


def test_a_gang_may_wait_for_a_place_as_cheap_as_its_floor():
    from tjap.placement.tree.cost import job_cost

    api, clock = FakeApi(TREE), [0.0]
    busy_in_every_rack(api)
    api.add_pods("s", 6, {SLICE_SIZE: "3", SLICE_LEVEL: LEVELS[-1]})
    controller = Controller(api, topology_wait_s=100, clock=lambda: clock[0])
    decision = controller.run_pass()
    assert not decision.placed and not released(api)
    why = decision.waiting[("default", "gang/s")]
    assert "as cheap as its floor" in why and "100 s more at most" in why
    clock[0] = 60
    assert not controller.run_pass().placed
    del api.objects["/api/v1/namespaces/default/pods/busy-g01"]  # a rack of 6 free now
    decision = controller.run_pass()
    nodes = released(api)
    assert len(nodes) == 6 and {TREE.node_leaf[TREE.node_index(n)] for n in nodes.values()} == {
        TREE.node_leaf[TREE.node_index("g01")]
    }
    assert decision.cost == job_cost(TREE, [TREE.node_index(n) for n in nodes.values()])


def test_a_gang_held_for_its_floor_goes_once_its_wait_is_over():
    api, clock = FakeApi(TREE), [0.0]
    busy_in_every_rack(api)
    api.add_pods("s", 6, {SLICE_SIZE: "3", SLICE_LEVEL: LEVELS[-1]})
    controller = Controller(api, topology_wait_s=100, clock=lambda: clock[0])
    assert not controller.run_pass().placed
    clock[0] = 100
    assert controller.run_pass().placed and len(released(api)) == 6  # two racks: 3 + 3


def test_the_topology_wait_annotation_overrides_the_default_and_a_bad_one_is_refused():
    from tjap.placement.k8s.gangs import TOPOLOGY_WAIT

    api = FakeApi(TREE)
    busy_in_every_rack(api)
    api.add_pods("now", 6, {TOPOLOGY_WAIT: "0"})
    api.add_pods("bad", 2, {TOPOLOGY_WAIT: "soon"})
    decision = Controller(api, topology_wait_s=3600, clock=lambda: 0.0).run_pass()
    assert ("default", "gang/now") in decision.placed
    assert "not a number of seconds" in decision.refused[("default", "gang/bad")]
    api = FakeApi(TREE)
    busy_in_every_rack(api)
    api.add_pods("waits", 6, {TOPOLOGY_WAIT: "60"})
    decision = Controller(api, clock=lambda: 0.0).run_pass()  # no default wait, its own 60 s
    assert "as cheap as its floor" in decision.waiting[("default", "gang/waits")]


def test_a_gang_at_its_floor_is_never_held_and_the_others_of_a_window_go_on():
    api = FakeApi(TREE)
    busy_in_every_rack(api)
    api.add_pods("small", 4, {PREFERRED: LEVELS[-1]})  # fits a rack's 5 free nodes: its floor
    api.add_pods("s", 6, {SLICE_SIZE: "3", SLICE_LEVEL: LEVELS[-1]}, created="2026-12-02T10:00:01Z")
    decision = Controller(api, topology_wait_s=100, clock=lambda: 0.0).run_pass()
    assert set(decision.placed) == {("default", "gang/small")}
    assert "as cheap as its floor" in decision.waiting[("default", "gang/s")]
    assert decision.cost <= decision.kueue_cost + 1e-9


def test_with_deadlines_a_long_gang_joins_the_rack_busy_longest_and_its_plan_records_when():
    """Racks r1 and r2 half busy with gangs tjap placed at t=0 (``tjap.io/placed-at``), r1's for
    600 s, r2's for two days (their ``activeDeadlineSeconds``); r0 and r3 whole. A 3-pod gang of
    a day goes into r2's free half, where it keeps no rack from being whole (r1 would have been
    whole in 600 s); its plan records the controller's clock. Without the busy pods' deadlines
    their racks' ends are unknown and r1, as cheap, is taken."""
    from tjap.placement.k8s.gangs import PLACED_AT

    def placed(deadlines: bool):
        api = FakeApi(TREE)
        for node, limit in [("g07", 600), ("g08", 600), ("g09", 600),
                            ("g13", 172800), ("g14", 172800), ("g15", 172800)]:  # fmt: skip
            api.hold(node)
            pod = api.objects[f"/api/v1/namespaces/default/pods/busy-{node}"]
            pod["metadata"]["annotations"] = {PLACED_AT: "0"}
            if deadlines:
                pod["spec"]["activeDeadlineSeconds"] = limit
        api.add_pods("a", 3, {"tjap.io/gang-size": "3", PREFERRED: LEVELS[-1]})
        for i in range(3):
            api.objects[f"/api/v1/namespaces/default/pods/a-{i}"]["spec"][
                "activeDeadlineSeconds"
            ] = 86400
        decision = Controller(
            api, fragmentation=1000.0, fragmentation_level=LEVELS[-1], clock=lambda: 60.0
        ).run_pass()
        assert decision.cost <= decision.kueue_cost + 1e-9
        assert {p["metadata"]["annotations"][PLACED_AT] for n, p in api.pods().items()
                if n.startswith("a-")} == {"60.000"}  # fmt: skip
        return sorted(decision.placed[("default", "gang/a")])

    assert placed(deadlines=True) == ["g16", "g17", "g18"]
    assert placed(deadlines=False) == ["g10", "g11", "g12"]


def test_busy_seconds_knows_only_the_nodes_whose_every_pod_has_a_placement_time_and_deadline():
    from tjap.placement.k8s.gangs import PLACED_AT
    from tjap.placement.k8s.nodes import busy_seconds

    def pod(node, placed=None, limit=None, phase="Running"):
        notes = {} if placed is None else {PLACED_AT: placed}
        spec = {"nodeName": node} | ({} if limit is None else {"activeDeadlineSeconds": limit})
        return {"metadata": {"annotations": notes}, "spec": spec, "status": {"phase": phase}}

    pods = [pod("a", "100", 600), pod("b", "100", 600), pod("b", None, 600),
            pod("c", "100", None), pod("d", "100", 50), pod("e", "x", 600),
            pod("f", "100", 600, phase="Succeeded"), pod("g", "100", True)]  # fmt: skip
    assert busy_seconds(pods, now=400.0) == {"a": 300.0, "d": 0.0}
