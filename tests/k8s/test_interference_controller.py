"""Seed 001's policies placing DL jobs' pods on Kubernetes (tjap.k8s.interference), on the
in-memory stand-in for the API server of tests/k8s/test_controller.py: whole jobs, GPU counts
kept on every node and socket, the very plans the policy makes in the family's simulator for the
same state, determinism, restarts, and one-line refusals of bad input."""

from __future__ import annotations

import numpy as np
import pytest
from test_controller import (
    FakeApi,
    killed_after,
    released,
)  # the stand-in of the topology controller's tests

import tjap
from tjap.k8s.interference import (
    ROLE,
    SOCKET,
    InterferenceController,
    cluster_of,
    job_pods,
    pod_gpus,
    read_state,
)
from tjap.placement.interference import PlacementEpisode, Simulator, Workload, profiles
from tjap.placement.k8s.gangs import GATE, PLANNED
from tjap.placement.k8s.nodes import HOSTNAME

#: Seed 001's testbed: 12 servers of 4 GPUs, two schedulers of 6 servers (two racks).
TESTBED = tjap.Topology.from_slurm("SwitchName=r0 Nodes=g[01-06]\nSwitchName=r1 Nodes=g[07-12]")
HEURISTICS = ("tetris", "lb", "lif", "whole")


def torch_or_skip():
    pytest.importorskip("torch")


def job_mix(n: int, seed: int = 0) -> list[tuple]:
    """(name, model, workers, ps, epochs, scheduler) of the testbed's jobs: workers U{2..4},
    parameter servers U{1..2} (Sec. VII-A)."""
    rng = np.random.default_rng(seed)
    return [
        (
            f"j{i:02d}",
            profiles.MODEL_NAMES[int(rng.integers(8))],
            int(rng.integers(2, 5)),
            int(rng.integers(1, 3)),
            int(rng.integers(2, 13)),
            f"r{int(rng.integers(2))}",
        )
        for i in range(n)
    ]


def add_jobs(api, jobs, *, start: int = 0) -> None:
    for i, (name, model, workers, ps, epochs, scheduler) in enumerate(jobs):
        for pod in job_pods(name, model, workers, ps, epochs=epochs, scheduler=scheduler):
            meta = pod["metadata"]
            meta.update(resourceVersion="1", annotations={},
                        creationTimestamp=f"2026-12-02T10:{(start + i) // 60:02d}:{(start + i) % 60:02d}Z")  # fmt: skip
            api.objects[f"/api/v1/namespaces/default/pods/{meta['name']}"] = pod


def gpus_per_node_and_socket(api):
    nodes, sockets = {}, {}
    for p in api.pods().values():
        node = (p["spec"].get("nodeSelector") or {}).get(HOSTNAME)
        if node is None or p["spec"].get("schedulingGates"):
            continue
        gpus = int(p["spec"]["containers"][0]["resources"]["requests"].get("nvidia.com/gpu", 0))
        nodes[node] = nodes.get(node, 0) + gpus
        key = (node, p["metadata"]["annotations"][SOCKET])
        sockets[key] = sockets.get(key, 0) + gpus
    return nodes, sockets


@pytest.mark.parametrize("policy", HEURISTICS)
def test_jobs_are_placed_whole_and_no_node_or_socket_holds_more_gpus_than_it_has(policy):
    api = FakeApi(TESTBED)
    jobs = job_mix(22)  # about 66 GPUs asked of 48: some wait
    add_jobs(api, jobs)
    decision = InterferenceController(api, policy).run_pass()
    assert decision.placed and decision.waiting  # some placed, some wait for GPUs
    out = released(api)
    for name, *_ in jobs:
        mine = [n for n in api.pods() if n.startswith(f"{name}-")]
        if ("default", f"gang/{name}") in decision.placed:
            assert all(n in out for n in mine)  # whole
            for n in mine:
                p = api.pods()[n]
                assert p["metadata"]["annotations"][PLANNED] == out[n]
        else:
            assert not any(n in out for n in mine)  # none of it
    nodes, sockets = gpus_per_node_and_socket(api)
    assert max(nodes.values()) <= 4 and max(sockets.values()) <= 2
    assert sum(nodes.values()) == sum(jobs[int(k[1][len("gang/j") :])][2] for k in decision.placed)
    # a second pass with nothing new places nothing more and keeps the counts
    again = InterferenceController(api, policy).run_pass()
    assert again.placed == {} and gpus_per_node_and_socket(api) == (nodes, sockets)


def simulator_plans(policy_name: str, jobs) -> dict:
    """The plans the family's episode makes in its first interval for ``jobs`` all arriving at
    once on the testbed, as (node, socket) per task."""
    view = cluster_of(FakeApi(TESTBED).items("/api/v1/nodes"))
    workload = Workload(
        np.zeros(len(jobs), np.int64),
        np.array([int(j[5][1:]) for j in jobs]),
        np.array([profiles.MODEL_NAMES.index(j[1]) for j in jobs]),
        np.array([j[2] for j in jobs]),
        np.array([j[3] for j in jobs]),
        np.array([j[4] for j in jobs]),
    )
    sim = Simulator(view.cluster, workload)
    policy = tjap.registry.make("interference", policy_name)
    episode = PlacementEpisode(sim)
    policy.reset(sim, 0)
    while (turn := episode.next_turn()) is not None and turn.interval == 0:
        episode.submit(policy.place(sim, turn.partition, list(turn.jobs)))
    out = {}
    for j, job in enumerate(jobs):
        if sim.start[j] == 0:
            groups = sim.task_group[sim.task_ptr[j] : sim.task_ptr[j + 1]]
            out[("default", f"gang/{job[0]}")] = [
                "{}/{}".format(*view.where(int(g))) for g in groups
            ]
    return out


@pytest.mark.parametrize("policy", HEURISTICS + ("marl",))
def test_the_controller_makes_the_plans_the_policy_makes_in_the_simulator(policy):
    if policy == "marl":
        torch_or_skip()
    jobs = job_mix(20, seed=3)
    api = FakeApi(TESTBED)
    add_jobs(api, jobs)
    decision = InterferenceController(api, policy, dry_run=True).run_pass()
    assert decision.placed == simulator_plans(policy, jobs)
    assert not released(api)  # advise patches nothing


def test_the_state_read_back_is_the_state_the_plans_made():
    """After a pass, the simulator built from the pods holds the placed jobs where planned:
    free GPUs and CPU per socket as committing the plans gives."""
    api = FakeApi(TESTBED)
    add_jobs(api, job_mix(12, seed=1))
    InterferenceController(api, "tetris").run_pass()
    state = read_state(api.items("/api/v1/nodes"), api.items("/api/v1/pods"), gate=GATE)
    sim, view = state.sim, state.view
    assert not state.waiting and state.skipped == []
    used = np.zeros(view.cluster.num_groups)
    for p in api.pods().values():
        if ROLE in p["metadata"]["labels"] and p["metadata"]["labels"][ROLE] == "worker":
            node, socket = p["spec"]["nodeSelector"][HOSTNAME], p["metadata"]["annotations"][SOCKET]
            used[view.group(node, int(socket))] += 1
    assert np.array_equal(view.cluster.group_gpus - used, sim.gpu_free)
    sim.check()


def test_the_same_pods_give_the_same_placement():
    runs = []
    for _ in range(2):
        api = FakeApi(TESTBED)
        add_jobs(api, job_mix(18, seed=5))
        runs.append(InterferenceController(api, "lif", seed=7).run_pass().placed)
    assert runs[0] == runs[1] and runs[0]


def test_pods_placed_by_someone_else_count_where_they_run():
    """A job bound by kube-scheduler alone (no socket annotation) and a foreign GPU pod take
    their GPUs: the policy never places onto them beyond the node's 4."""
    api = FakeApi(TESTBED)
    for pod in job_pods("x", "vgg16", 4, 1, gate=""):
        pod["metadata"].update(resourceVersion="1", annotations={})
        pod["spec"]["nodeName"] = "g01"
        api.objects[f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}"] = pod
    api.hold("g02")  # a foreign pod of 4 GPUs
    state = read_state(api.items("/api/v1/nodes"), api.items("/api/v1/pods"), gate=GATE)
    assert state.sim.gpu_free[:4].sum() == 0  # g01 and g02: both sockets full
    add_jobs(api, job_mix(20, seed=2))
    InterferenceController(api, "lb").run_pass()
    nodes, _ = gpus_per_node_and_socket(api)
    assert nodes.get("g01", 0) == nodes.get("g02", 0) == 0  # parameter servers only, if any


def test_a_cordoned_or_tainted_node_takes_no_pod():
    api = FakeApi(TESTBED)
    api.objects["/api/v1/nodes/g01"]["spec"]["unschedulable"] = True
    api.objects["/api/v1/nodes/g02"]["spec"]["taints"] = [{"key": "x", "effect": "NoSchedule"}]
    add_jobs(api, job_mix(20, seed=2))
    InterferenceController(api, "tetris").run_pass()
    placed = {p["spec"]["nodeSelector"][HOSTNAME] for p in api.pods().values()
              if not p["spec"].get("schedulingGates")}  # fmt: skip
    assert placed and not placed & {"g01", "g02"}  # no worker, no parameter server there


@pytest.mark.parametrize("after", [1, 4, 9])
def test_a_controller_killed_mid_pass_is_finished_by_the_next(after):
    api = FakeApi(TESTBED)
    add_jobs(api, job_mix(3, seed=4))
    killed_after(api, after, lambda api: InterferenceController(api, "tetris"))
    planned = {n: p["metadata"]["annotations"].get(PLANNED) for n, p in api.pods().items()}
    InterferenceController(api, "tetris").run_pass()
    out = released(api)
    assert len(out) == len(api.pods())  # every job placed, whole
    for name in {n.split("-")[0] for n in planned}:  # a gang planned whole keeps its plan
        mine = [n for n in planned if n.startswith(f"{name}-")]
        if all(planned[n] for n in mine):
            assert all(out[n] == planned[n] for n in mine)
    nodes, sockets = gpus_per_node_and_socket(api)
    assert max(nodes.values()) <= 4 and max(sockets.values()) <= 2


def one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_an_unknown_policy_is_one_line():
    with pytest.raises(tjap.InvalidInputError) as exc:
        InterferenceController(FakeApi(TESTBED), "fifo")
    assert "unknown interference policy 'fifo'" in one_line(exc) and "tetris" in str(exc.value)


@pytest.mark.parametrize(
    "spoil, reason",
    [
        (lambda pods: pods[0]["metadata"]["labels"].pop(ROLE), "label it tjap.io/role=worker"),
        (
            lambda pods: pods[0]["metadata"]["labels"].update({"tjap.io/model": "gpt"}),
            "choose one of",
        ),
        (
            lambda pods: pods[0]["spec"]["containers"][0]["resources"]["requests"].update(
                {"nvidia.com/gpu": "2"}
            ),
            "a worker takes exactly 1",
        ),  # fmt: skip
    ],
)
def test_a_bad_job_stays_gated_with_a_one_line_reason_and_an_event(spoil, reason):
    api = FakeApi(TESTBED)
    add_jobs(api, [("bad", "resnet50", 2, 1, 3, "r0"), ("good", "dssm", 2, 1, 3, "r1")])
    spoil([p for n, p in sorted(api.pods().items()) if n.startswith("bad-worker")])
    decision = InterferenceController(api, "tetris").run_pass()
    why = decision.refused[("default", "gang/bad")]
    assert reason in why and "\n" not in why
    assert ("default", "gang/good") in decision.placed
    assert not any(n.startswith("bad") for n in released(api))
    assert any(e["reason"] == "TjapRequestRefused" for e in api.events)


def test_a_job_larger_than_the_cluster_is_refused():
    api = FakeApi(TESTBED)
    add_jobs(api, [("huge", "resnet50", 49, 1, 3, "r0")])
    decision = InterferenceController(api, "whole").run_pass()
    assert "needs 49 GPUs and the cluster has 48" in decision.refused[("default", "gang/huge")]


def test_racks_of_unequal_size_and_odd_gpu_counts_are_one_line():
    odd = tjap.Topology.from_slurm("SwitchName=r0 Nodes=g[01-05]\nSwitchName=r1 Nodes=g[06-12]")
    with pytest.raises(tjap.InvalidInputError) as exc:
        cluster_of(FakeApi(odd).items("/api/v1/nodes"))
    assert "racks of one size" in one_line(exc)
    nodes = FakeApi(TESTBED).items("/api/v1/nodes")
    nodes[0]["status"]["allocatable"]["nvidia.com/gpu"] = "3"
    with pytest.raises(tjap.InvalidInputError) as exc:
        cluster_of(nodes)
    assert "nvidia.com/gpu" in one_line(exc)


def test_the_cli_places_with_an_interference_policy(monkeypatch, capsys):
    api = FakeApi(TESTBED)
    add_jobs(api, job_mix(4, seed=6))
    monkeypatch.setattr("tjap.placement.k8s.api.Api", lambda *a, **k: api)
    from tjap.cli import main

    assert main(["k8s", "advise", "--system", "interference", "--policy", "tetris"]) == 0
    assert "tetris: 4 jobs placed" in capsys.readouterr().out and not released(api)
    assert main(["k8s", "place", "--system", "interference", "--policy", "whole", "--once"]) == 0
    assert len(released(api)) == len(api.pods())
    assert main(["k8s", "place", "--system", "topology", "--policy", "whole", "--once"]) == 2
    assert "--policy" in capsys.readouterr().err


def test_the_cli_takes_trained_weights_for_a_learned_policy_only(monkeypatch, capsys, tmp_path):
    from pathlib import Path

    from tjap.cli import main

    api = FakeApi(TESTBED)
    add_jobs(api, job_mix(4, seed=6))
    monkeypatch.setattr("tjap.placement.k8s.api.Api", lambda *a, **k: api)
    shipped = Path(__file__).resolve().parents[2] / "learned" / "weights" / "interference_marl.json"
    assert main(["k8s", "advise", "--system", "interference", "--policy", "marl",
                 "--weights", str(shipped)]) == 0  # fmt: skip
    assert "marl: 4 jobs placed" in capsys.readouterr().out
    assert main(["k8s", "advise", "--system", "interference", "--policy", "tetris",
                 "--weights", str(shipped)]) == 2  # fmt: skip
    assert "--weights needs a learned --policy" in capsys.readouterr().err
    missing = tmp_path / "none.json"
    assert main(["k8s", "advise", "--system", "interference", "--policy", "marl",
                 "--weights", str(missing)]) == 2  # fmt: skip
    assert "none.json" in capsys.readouterr().err


# -- on a real control plane ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def testbed(tmp_path_factory):
    from tjap.placement.k8s.harness import LocalKubernetes, missing_programs

    missing = missing_programs()
    if missing:
        pytest.skip(f"no Kubernetes control plane built ({', '.join(missing)}): bash .ci/build-k8s")
    with LocalKubernetes(tmp_path_factory.mktemp("k8s")) as k8s:
        k8s.add_nodes(TESTBED, gpus=4)
        yield k8s


@pytest.mark.k8s
def test_live_jobs_are_bound_by_kube_scheduler_where_the_policy_planned(testbed):
    import time

    jobs = job_mix(8, seed=8)
    with testbed.api() as api:
        for name, model, workers, ps, epochs, scheduler in jobs:
            for pod in job_pods(name, model, workers, ps, epochs=epochs, scheduler=scheduler):
                api.create("/api/v1/namespaces/default/pods", pod)
        decision = InterferenceController(api, "whole").run_pass()
        assert len(decision.placed) >= 6
        placed = {f"{k[1][len('gang/') :]}-": v for k, v in decision.placed.items()}
        deadline = time.monotonic() + 30
        while True:
            pods = api.items("/api/v1/namespaces/default/pods")
            mine = [p for p in pods if any(p["metadata"]["name"].startswith(k) for k in placed)]
            if all(p["spec"].get("nodeName") for p in mine) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        gpus: dict = {}
        for p in pods:
            meta, node = p["metadata"], p["spec"].get("nodeName")
            if any(meta["name"].startswith(k) for k in placed):
                assert node == meta["annotations"][PLANNED]  # bound where planned
                gpus[node] = gpus.get(node, 0) + pod_gpus(p)
            else:
                assert node is None and p["spec"]["schedulingGates"]  # the rest wait, gated
        assert sum(len(v) for v in placed.values()) == sum(
            1 for p in pods if p["spec"].get("nodeName")
        )
        assert max(gpus.values()) <= 4


def test_the_rest_of_a_job_released_in_part_is_placed_when_its_planned_node_is_cordoned():
    api = FakeApi(TESTBED)
    add_jobs(api, job_mix(3, seed=4))
    plan = InterferenceController(api, "tetris", dry_run=True).run_pass().placed
    killed_after(api, sum(map(len, plan.values())) + 1,
                 lambda api: InterferenceController(api, "tetris"))  # fmt: skip
    ((first, node),) = released(api).items()  # killed after the first release
    gang = first.rsplit("-", 1)[0]
    api.objects[f"/api/v1/nodes/{node}"]["spec"]["unschedulable"] = True  # the rest's node too
    InterferenceController(api, "tetris").run_pass()
    out = released(api)
    mine = [n for n in api.pods() if n.startswith(f"{gang}-")]
    assert all(n in out for n in mine)  # the whole job runs: its first pod where it was,
    assert out[first] == node and all(out[n] != node for n in mine if n != first)  # the rest off it
    nodes, sockets = gpus_per_node_and_socket(api)
    assert max(nodes.values()) <= 4 and max(sockets.values()) <= 2
    state = read_state(api.items("/api/v1/nodes"), api.items("/api/v1/pods"), gate=GATE)
    assert state.held == {} and state.rest == {}
