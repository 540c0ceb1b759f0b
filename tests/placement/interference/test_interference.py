"""Seed 001's model: cluster paths, the slowdown and iteration-time formulas on hand-worked cases,
interference fitting (coefficient recovery, Table III ordering), conservation and no
oversubscription over whole runs of every policy, determinism by seed, bad input and the CLI."""

from __future__ import annotations

import json
import math

import networkx as nx
import numpy as np
import pytest

from tjap.cli import main
from tjap.core.errors import InvalidInputError, TjapError, UnknownMethodError
from tjap.placement.interference import (
    Coefficients,
    Simulator,
    Workload,
    co_location_samples,
    error_table,
    fit,
    make_cluster,
    profiles,
    simulate,
)
from tjap.placement.interference import _kernels as kern
from tjap.registry import make, methods

GEN = Coefficients.generator()


def small_run(
    policy,
    topology="fattree",
    k=4,
    arch="pcie",
    pattern="poisson",
    seed=0,
    intervals=6,
    rate=2.0,
    **options,
):
    cluster = make_cluster(topology, k, arch)
    workload = Workload.generate(cluster.num_partitions, intervals, pattern, seed, rate=rate)
    sim = Simulator(cluster, workload)
    return sim, sim.run(make("interference", policy, **options), seed=seed)


# -- cluster ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "topology, k, servers, partitions",
    [
        ("fattree", 20, 2000, 20),
        ("vl2", 20, 2000, 20),
        ("bcube", 3, 1296, 18),
        ("fattree", 8, 128, 8),
    ],
)
def test_cluster_sizes_follow_the_paper(topology, k, servers, partitions):
    c = make_cluster(topology, k)
    assert (c.num_servers, c.num_partitions) == (servers, partitions)
    assert c.total_gpus == 4 * servers and np.all(
        np.bincount(c.server_partition) == servers // partitions
    )


def test_architectures():
    assert make_cluster("fattree", 4, "dgx1").total_gpus == 8 * 16
    mixed = make_cluster("fattree", 20, "mixed")
    kinds = mixed.server_kind[mixed.server_partition == 0]
    assert [np.mean(kinds == k) for k in ("small", "pcie", "dgx1")] == [0.2, 0.4, 0.4]
    het = make_cluster("fattree", 4, "hetcpu")
    assert het.group_cores[:2].tolist() == [16, 8] and het.group_gpus[:2].tolist() == [4, 2]


@pytest.mark.parametrize("topology, k", [("fattree", 4), ("vl2", 4), ("bcube", 2)])
def test_paths_are_walks_in_the_graph_between_the_groups(topology, k):
    c = make_cluster(topology, k)
    g = c.graph
    ends = {d["link"]: (a, b) for a, b, d in g.edges(data=True)}
    rng = np.random.default_rng(0)
    for a, b in rng.integers(c.num_groups, size=(60, 2)):
        links = c.path(int(a), int(b))
        if a == b:
            assert links.tolist() == [a]
            continue
        node = ("group", int(a))
        for link in links:
            u, v = ends[int(link)]
            assert node in (u, v)
            node = v if node == u else u
            if node[0] == "server" and node[1] == c.group_server[a] and link == links[0]:
                continue
        assert node == ("group", int(b))
        if topology != "bcube":  # tree routes are shortest paths
            assert len(links) == nx.shortest_path_length(g, ("group", int(a)), ("group", int(b)))


def test_the_racks_topology_is_the_testbed_of_seed_001():
    """Sec. VII-A: 12 servers of 4 GPUs, two schedulers of 6 servers; 50 Gbps NICs."""
    c = make_cluster("racks")
    assert c.describe() | {"name": c.name} == c.describe() | {"name": "racks-k2-n6-pcie"}
    assert (c.num_servers, c.total_gpus, c.num_partitions) == (12, 48, 2)
    assert c.server_partition.tolist() == [0] * 6 + [1] * 6
    same_rack, across = c.path(0, 2), c.path(0, 12)  # server 0 to server 1, to server 6
    assert c.link_gbps[same_rack].tolist() == [128.0, 50.0, 50.0, 128.0]
    assert c.link_gbps[across].tolist() == [128.0, 50.0, 300.0, 300.0, 50.0, 128.0]


def test_path_hand_worked_fattree():
    c = make_cluster("fattree", 4)  # 4 pods x 2 edges x 2 servers, 2 groups per server
    assert c.path(0, 1).tolist() == [0, c.num_groups + 0, 1]  # PCIe, QPI, PCIe
    nic = c.nic_link
    up = c.net_base + c.num_servers  # edge uplinks
    assert c.path(0, 2).tolist() == [0, nic[0], nic[1], 2]  # same edge switch
    assert c.path(0, 4).tolist() == [0, nic[0], up + 0, up + 1, nic[2], 4]  # same pod
    assert len(c.path(0, 8)) == 8  # across pods via a core
    assert c.link_gbps[nic[0]] == 10 and c.link_gbps[up] == 2 * 20


# -- slowdown and iteration time -----------------------------------------------------------------
def test_slowdown_formula_hand_worked():
    coef = GEN.as_array()
    # worker C=4, P=20 with a co-runner of 5 cores / 24 Gbps on its group; other socket 10 cores
    # of 8 physical: U_c = 5 + 2 = 7, U_p = 24
    expected = 0.02 * math.exp(0.2 * 7 + 0.1 * 4) - 0.03 + 0.008 * 24 + 0.001 * 20 - 0.01
    assert kern.slowdown(4.0, 20.0, 5.0, 2.0, 24.0, False, coef) == pytest.approx(expected)
    assert kern.slowdown(4.0, 20.0, 0.0, 0.0, 0.0, True, coef) == 0.0  # alone
    low = np.array([0.0, 0, 0, -1.0, 0, 0, 0])
    assert kern.slowdown(1.0, 1.0, 1.0, 0.0, 1.0, False, low) == 0.0  # clipped at 0
    assert GEN.predict(4, 20, 7, 24) == pytest.approx(expected)


def test_iteration_time_hand_worked():
    """Two resnet50 workers and one PS of one job on one server: compute slowdown from the other
    worker, communication over PCIe links shared by the two flows."""
    c = make_cluster("fattree", 4)
    w = Workload(
        np.array([0]), np.array([0]), np.array([0]), np.array([2]), np.array([1]), np.array([1])
    )
    sim = Simulator(c, w)
    sim.commit(0, [0, 0, 1])  # both workers on group 0, PS on group 1 (same server)
    cpu = profiles.CPU_CORES[0]
    s = GEN.predict(cpu, profiles.PCIE_GBPS[0], cpu, profiles.PCIE_GBPS[0])
    # flows 0->1 twice: links PCIe(0) (2 flows), QPI (2), PCIe(1) (2): 128 / 2 = 64 Gbps
    comm = profiles.GRAD_MB[0] * 8e-3 / 64.0
    iteration = profiles.ITER_S[0] * (1 + s) + comm
    epoch_s = profiles.ITERS_PER_EPOCH[0] / 2 * iteration
    out = np.zeros(1), np.zeros(1), np.zeros(1)
    kern.interval_update(
        np.array([0]),
        600.0,
        w.model,
        w.workers,
        w.ps,
        w.epochs,
        sim.progress,
        sim.task_ptr,
        sim.task_group,
        sim.task_cpu,
        sim.task_pcie,
        sim.flow_ptr,
        sim.flow_links,
        sim.flow_len,
        sim.link_flows,
        c.link_gbps,
        c.group_server,
        c.server_first_group,
        c.server_groups,
        c.group_cores,
        sim.cpu_used,
        sim.pcie_used,
        sim.server_tasks,
        profiles.ITER_S,
        profiles.ITERS_PER_EPOCH.astype(float),
        profiles.GRAD_MB * 8e-3,
        sim.coef,
        *out,
    )
    assert out[1][0] == pytest.approx(s) and out[2][0] == pytest.approx(comm)
    assert sim.progress[0] == pytest.approx(600.0 / epoch_s)


def test_link_bandwidth_is_shared_among_flows():
    c = make_cluster("fattree", 4)
    w = Workload(
        np.array([0, 0]),
        np.array([0, 0]),
        np.array([1, 1]),
        np.array([1, 1]),
        np.array([1, 1]),
        np.array([50, 50]),
    )
    sim = Simulator(c, w)
    sim.commit(0, [0, 2])  # two servers under one edge switch: NIC 10 Gbps each
    sim.commit(1, [1, 3])  # the same two servers: both NICs now carry 2 flows
    nic = c.nic_link
    assert sim.link_flows[nic[0]] == sim.link_flows[nic[1]] == 2
    sim.check()
    sim.release(1)
    assert sim.link_flows[nic[0]] == 1
    sim.check()


# -- fitting ---------------------------------------------------------------------------------------
def test_fit_recovers_generator_coefficients_on_noise_free_samples():
    fitted = fit(co_location_samples(480, seed=3, noise=0.0), "ours").coefficients
    for name in ("alpha1", "alpha2", "alpha3", "beta1", "beta2"):
        assert getattr(fitted, name) == pytest.approx(getattr(GEN, name), rel=0.05), name
    assert fitted.constant == pytest.approx(GEN.constant, rel=0.05)


def test_fit_recovers_other_coefficients():
    truth = Coefficients(0.05, 0.12, -0.05, 0.01, 0.002, 0.004, 0.0)
    fitted = fit(co_location_samples(300, seed=1, noise=0.0, coefficients=truth)).coefficients
    for name in ("alpha1", "alpha2", "alpha3", "beta1", "beta2"):
        assert getattr(fitted, name) == pytest.approx(getattr(truth, name), rel=0.05), name


def test_table3_ours_beats_linear_and_quad_on_held_out_samples():
    rows = {r["model"]: r["test_error"] for r in error_table(480, seed=0)}
    assert rows["ours"] < rows["quad"] < rows["linear"]
    assert rows["ours"] < rows["ours_wo_pcie"] and rows["ours"] < rows["ours_wo_cpu"]


def test_fit_rejects_bad_input():
    with pytest.raises(UnknownMethodError):
        fit(co_location_samples(20), "cubic")
    with pytest.raises(InvalidInputError):
        fit("samples")
    with pytest.raises(InvalidInputError):
        co_location_samples(20, noise=2.0)
    with pytest.raises(InvalidInputError):
        Coefficients(float("nan"), 0, 0, 0, 0, 0)


# -- simulator -------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", methods("interference"))
def test_every_policy_never_oversubscribes(policy, checked_commits):
    checks = checked_commits
    options = {"iterations": 200} if policy == "opt" else {}
    sim, result = small_run(policy, rate=4.0, **options)
    assert checks and result.summary()["completed"] == len(sim.workload)
    assert np.all(sim.gpu_free == sim.cluster.group_gpus) and np.all(sim.link_flows == 0)
    assert np.all(result.finish >= result.start) and np.all(result.start >= result.arrival)


@pytest.mark.parametrize(
    "topology, k, arch", [("vl2", 4, "mixed"), ("bcube", 2, "dgx1"), ("fattree", 4, "hetcpu")]
)
def test_runs_on_every_topology_and_architecture(topology, k, arch):
    sim, result = small_run("lif", topology, k, arch, rate=3.0)
    s = result.summary()
    assert s["completed"] == s["jobs"] > 0 and s["avg_jct"] > 0


def test_commit_refuses_oversubscription():
    c = make_cluster("fattree", 4)
    w = Workload(
        np.zeros(2, np.int64),
        np.zeros(2, np.int64),
        np.zeros(2, np.int64),
        np.array([2, 1]),
        np.array([1, 1]),
        np.array([1, 1]),
    )
    sim = Simulator(c, w)
    sim.commit(0, [0, 0, 0])
    with pytest.raises(InvalidInputError, match="does not fit"):
        sim.commit(1, [0, 1])  # group 0's 2 GPUs are taken
    with pytest.raises(InvalidInputError):
        sim.commit(1, [10**6, 0])


def test_job_alone_runs_at_ideal_speed():
    c = make_cluster("fattree", 4)
    w = Workload(
        np.array([0]), np.array([0]), np.array([3]), np.array([1]), np.array([1]), np.array([2])
    )
    result = simulate(c, w, make("interference", "tetris"))
    # tetris puts worker and PS on one group: no interference with the PS? the PS is another task
    # on the server, so the worker's slowdown is the model's with U_c = PS cores
    s = max(
        0.0, GEN.predict(profiles.CPU_CORES[3], profiles.PCIE_GBPS[3], profiles.PS_CPU_CORES, 0.0)
    )
    comm = profiles.GRAD_MB[3] * 8e-3 / 128.0
    epoch_s = profiles.ITERS_PER_EPOCH[3] * (profiles.ITER_S[3] * (1 + s) + comm)
    assert result.jct[0] == pytest.approx(2 * epoch_s / 1800.0)


@pytest.mark.parametrize("policy", ["random", "opt", "lb"])
def test_same_seed_same_result(policy):
    options = {"iterations": 100} if policy == "opt" else {}
    _, a = small_run(policy, seed=5, **options)
    _, b = small_run(policy, seed=5, **options)
    np.testing.assert_array_equal(a.finish, b.finish)
    _, c = small_run(policy, seed=6, **options)
    assert not np.array_equal(np.nan_to_num(a.finish), np.nan_to_num(c.finish)) or len(
        a.finish
    ) != len(c.finish)


def test_forwarding_places_jobs_the_home_partition_cannot_hold():
    c = make_cluster("fattree", 4)  # 4 partitions of 4 servers x 4 GPUs = 16 GPUs each
    n = 8
    w = Workload(
        np.zeros(n, np.int64),
        np.zeros(n, np.int64),
        np.full(n, 3),
        np.full(n, 4),
        np.ones(n, np.int64),
        np.full(n, 3),
    )
    sim = Simulator(c, w)
    result = sim.run(make("interference", "lb"))
    assert result.summary()["completed"] == n
    assert (result.forwarded > 0).sum() >= n - 4  # only 4 jobs of 4 GPUs fit at home
    assert np.all(result.start == 0)  # all placed at once across partitions


def test_workload_patterns():
    u = Workload.generate(3, 4, "uniform", 0)
    assert len(u) == 3 * 4 * 15 and np.all(np.bincount(u.home) == 60)
    p = Workload.generate(3, 40, "poisson", 0)
    assert abs(len(p) / 120 - 15) < 1.5


def test_workload_trace_pattern():
    t = Workload.generate(4, 200, "trace", 0)
    counts = np.bincount(t.arrival, minlength=200)
    assert abs(counts.mean() / 4 - 15) < 5 and counts.std() > 3  # bursty, near the mean rate
    assert np.all((t.workers >= 1) & (t.workers <= 4) & (t.ps >= 1) & (t.ps <= 4))


def test_bad_input():
    with pytest.raises(InvalidInputError):
        make_cluster("torus")
    with pytest.raises(InvalidInputError):
        make_cluster("fattree", 5)
    with pytest.raises(InvalidInputError):
        make_cluster("fattree", 4, "tpu")
    with pytest.raises(InvalidInputError):
        Workload.generate(2, 3, "bursty")
    with pytest.raises(InvalidInputError):
        Workload.generate(0, 3)
    with pytest.raises(UnknownMethodError):
        make("interference", "deepsys")
    with pytest.raises(InvalidInputError):
        make("interference", "opt", iterations=-1)
    with pytest.raises(InvalidInputError):
        Simulator(make_cluster("fattree", 4), Workload.generate(5, 1))  # 5 schedulers > 4
    with pytest.raises(InvalidInputError):
        Simulator(make_cluster("fattree", 4), Workload.generate(4, 1)).run(object())


# -- CLI -------------------------------------------------------------------------------------------
def test_cli_evaluate_json(capsys):
    assert (
        main(
            [
                "interference",
                "evaluate",
                "--topology",
                "fattree",
                "--k",
                "4",
                "--arrivals",
                "poisson",
                "--policy",
                "tetris",
                "--seed",
                "1",
                "--intervals",
                "4",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert {"avg_jct", "jobs", "runtime_s"} <= out.keys() and out["completed"] == out["jobs"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--k", "7"], "even integer"),
        (["--policy", "nope"], "unknown policy"),
        (["--topology", "vl2", "--k", "6"], "multiple of 4"),
        (["--arrivals", "trace", "--trace", "/no/such/file"], "not found"),
        (["--trace", "x.swf"], "needs --arrivals trace"),
        (["--rate", "-1"], "--rate"),
    ],
)
def test_cli_errors_are_one_line(argv, message, capsys):
    assert main(["interference", "evaluate", "--intervals", "1", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_argparse_rejects_bad_choices(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["interference", "evaluate", "--topology", "torus"])
    assert exc.value.code == 2


def test_cli_fit(capsys):
    assert main(["interference", "fit", "--samples", "200", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["model"] for r in rows][:3] == ["linear", "quad", "ours"]


def test_errors_are_tjap_errors():
    assert issubclass(InvalidInputError, TjapError)
