"""The ``whole`` rule of seed 001 (each job on one server, at the split of least predicted cost)
against a plain-Python oracle of its cost and a brute-force search; the running-jobs transfer
term of the ``opt`` objective on a hand-worked case; the env's ``whole`` expert."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from tjap.heuristics.interference.anneal import OptPolicy
from tjap.heuristics.interference.rules import WholeJobPolicy
from tjap.placement.interference import Coefficients, Simulator, Workload, make_cluster, profiles
from tjap.placement.interference import _kernels as kern
from tjap.placement.interference.jobs import RUNNING
from tjap.placement.interference.planning import running_jobs_by_server, split_cost
from tjap.registry import make

GEN = Coefficients.generator()


def busy_simulator(seed=0, k=4, intervals=2, rate=1.5):
    """A k=4 simulator after ``intervals`` intervals of Tetris: running jobs, jobs waiting."""
    c = make_cluster("fattree", k)
    w = Workload.generate(c.num_partitions, intervals + 2, "poisson", seed, rate=rate)
    sim = Simulator(c, w)
    sim.run(make("interference", "tetris"), max_intervals=intervals, drain=False)
    sim.interval = intervals
    return sim


def comm_over_ideal(sim, job):
    m = sim.workload.model[job]
    volume = profiles.GRAD_MB[m] * 8e-3 / sim.workload.ps[job]
    comm = kern.comm_time(
        volume,
        sim.flow_ptr[job],
        sim.flow_ptr[job + 1],
        sim.flow_len,
        sim.flow_links,
        sim.cluster.link_gbps,
        sim.link_flows,
    )
    return comm / profiles.ITER_S[m]


def task_slowdowns(sim, server):
    """Unclipped slowdown of every running task on ``server`` (0 when it is alone there), from
    the per-task lists, as the paper's formula reads."""
    c = sim.cluster
    live = np.repeat(sim.state == RUNNING, np.diff(sim.task_ptr)) & (sim.task_group >= 0)
    tasks = [t for t in np.flatnonzero(live) if c.group_server[sim.task_group[t]] == server]
    out = {}
    for t in tasks:
        g = sim.task_group[t]
        same = [u for u in tasks if u != t and sim.task_group[u] == g]
        over = 0.0
        for h in set(sim.task_group[u] for u in tasks) - {g}:
            cpu_h = sum(sim.task_cpu[u] for u in tasks if sim.task_group[u] == h)
            over += max(cpu_h - c.group_cores[h], 0.0)
        u_c = sum(sim.task_cpu[u] for u in same) + over
        u_p = sum(sim.task_pcie[u] for u in same)
        out[t] = (
            0.0
            if len(tasks) == 1
            else float(GEN.predict(sim.task_cpu[t], sim.task_pcie[t], u_c, u_p))
        )
    return out


def oracle_cost(sim, job, plan):
    """The ``whole`` cost of ``plan`` by committing it in a copy of the simulator: the job's own
    iteration time over ideal (1 + worst worker slowdown + transfer / ideal), plus the added
    slowdown of the tasks already on the server, plus the added transfer (over ideal) of the
    running jobs there; inf when it does not fit."""
    if not sim.fits(job, plan):
        return np.inf
    c = sim.cluster
    server = int(c.group_server[plan[0]])
    before = task_slowdowns(sim, server)
    neighbours = [
        j
        for j in np.flatnonzero(sim.state == RUNNING)
        if server in c.group_server[sim.task_group[sim.task_ptr[j] : sim.task_ptr[j + 1]]]
    ]
    comm_before = sum(comm_over_ideal(sim, j) for j in neighbours)
    after_sim = copy.deepcopy(sim)
    after_sim.commit(job, np.asarray(plan))
    after = task_slowdowns(after_sim, server)
    lo = sim.task_ptr[job]
    worst = max(max(after[t], 0.0) for t in range(lo, lo + sim.workload.workers[job]))
    own = 1.0 + worst + comm_over_ideal(after_sim, job)
    others = sum(after[t] - before[t] for t in before)
    comm_after = sum(comm_over_ideal(after_sim, j) for j in neighbours)
    return own + others + comm_after - comm_before


def splits(sim, job, server):
    """Every plan of ``job`` on ``server``: (a, b, plan) with a workers and b PSs on its first
    group."""
    c, w = sim.cluster, sim.workload
    W, P = int(w.workers[job]), int(w.ps[job])
    g0 = int(c.server_first_group[server])
    for a in range(W + 1):
        for b in range(P + 1):
            yield a, b, np.array([g0] * a + [g0 + 1] * (W - a) + [g0] * b + [g0 + 1] * (P - b))


def kernel_cost(sim, job, server, a, b, nb_ptr, nb_jobs, servers):
    c, w = sim.cluster, sim.workload
    lo, hi = sim.task_ptr[job], sim.task_ptr[job + 1]
    i = int(np.flatnonzero(servers == server)[0])
    volume = profiles.GRAD_MB[w.model] * 8e-3 / w.ps
    return split_cost(
        server,
        a,
        b,
        int(w.workers[job]),
        int(w.ps[job]),
        sim.task_cpu[lo],
        sim.task_pcie[lo],
        sim.task_exp[lo],
        sim.task_cpu[hi - 1],
        sim.task_exp[hi - 1],
        volume[job],
        profiles.ITER_S[w.model[job]],
        sim.gpu_free,
        sim.cpu_used,
        sim.pcie_used,
        sim.tasks,
        sim.exp_sum,
        sim.server_tasks,
        c.group_cores,
        sim.cpu_capacity,
        c.server_first_group,
        c.server_groups,
        c.num_groups,
        c.link_gbps,
        sim.link_flows.copy(),
        sim.coef,
        nb_jobs[nb_ptr[i] : nb_ptr[i + 1]],
        sim.flow_ptr,
        sim.flow_links,
        sim.flow_len,
        volume,
        profiles.ITER_S[w.model],
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_split_cost_matches_the_oracle_and_whole_picks_the_brute_force_minimum(seed):
    sim = busy_simulator(seed)
    c = sim.cluster
    assert np.any(sim.state == RUNNING) and np.any(sim.server_tasks > 0)
    waiting = np.flatnonzero((sim.state == 0) & (sim.workload.arrival <= sim.interval))
    checked = 0
    for job in waiting[:6]:
        p = int(sim.workload.home[job])
        servers = np.flatnonzero(c.server_partition == p)
        nb_ptr, nb_jobs = running_jobs_by_server(sim, servers)
        best = np.inf
        for s in servers:
            for a, b, plan in splits(sim, job, s):
                expected = oracle_cost(sim, job, plan)
                got = kernel_cost(sim, job, s, a, b, nb_ptr, nb_jobs, servers)
                assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
                best = min(best, expected)
                checked += np.isfinite(expected)
        policy = WholeJobPolicy()
        policy.reset(sim, 0)
        (plan,) = policy.place(sim, p, [int(job)])
        if np.isfinite(best):
            assert len(set(c.group_server[plan])) == 1  # one server
            assert oracle_cost(sim, job, plan) == pytest.approx(best, rel=1e-9, abs=1e-12)
        elif plan is not None:  # Tetris's fallback
            assert sim.fits(job, plan)
    assert checked > 20


def test_whole_is_deterministic_and_splits_a_job_only_when_no_server_holds_it(monkeypatch):
    c = make_cluster("fattree", 4)
    w = Workload.generate(c.num_partitions, 6, "poisson", 3, rate=2.0)
    original = WholeJobPolicy.place
    split = []

    def place_and_check(self, sim, partition, jobs):
        plans = original(self, sim, partition, jobs)
        gpu_free, cpu_used = sim.gpu_free.copy(), sim.cpu_used.copy()
        for job, plan in zip(jobs, plans):  # replay the batch on a copy of the state
            if plan is None:
                continue
            lo, hi = sim.task_ptr[job], sim.task_ptr[job + 1]
            gpu, cpu = sim.task_worker[lo:hi].astype(int), sim.task_cpu[lo:hi]
            if len(set(c.group_server[plan])) > 1:
                split.append(job)
                for s in np.flatnonzero(c.server_partition == partition):
                    for _, _, whole in splits(sim, job, s):
                        need_gpu = np.bincount(whole, gpu, minlength=c.num_groups)
                        need_cpu = np.bincount(whole, cpu, minlength=c.num_groups)
                        assert not (
                            np.all(need_gpu <= gpu_free)
                            and np.all(cpu_used + need_cpu <= sim.cpu_capacity + 1e-9)
                        )
            np.subtract.at(gpu_free, plan, gpu)
            np.add.at(cpu_used, plan, cpu)
            assert np.all(gpu_free >= 0) and np.all(cpu_used <= sim.cpu_capacity + 1e-9)
        return plans

    monkeypatch.setattr(WholeJobPolicy, "place", place_and_check)
    a = Simulator(c, w).run(make("interference", "whole"), seed=3)
    b = Simulator(c, w).run(make("interference", "whole"), seed=3)
    np.testing.assert_array_equal(a.finish, b.finish)
    assert a.summary()["completed"] == len(w) and 0 < len(split) < len(w) // 2


def test_opt_objective_counts_what_the_batch_takes_from_running_jobs():
    """Running job 0 (resnet50, 1 worker on server 0, 1 PS on server 1, one edge switch): its
    flow's bottleneck is server 0's 10 Gbps NIC. A batch job (resnext110) whose worker sits on
    server 0's other socket, with its PS on server 2, halves that share: job 0's transfer over
    ideal goes from 0.8192 Gbit / 10 Gbps / 0.2 s = 0.4096 to 0.8192 / 5 / 0.2 = 0.8192, and job
    0's worker, no longer alone on its server, slows down by the model's S with U_c = U_p = 0
    (the other socket's 2 cores stay under its 8). On servers 2 and 3 job 0 keeps 0.4096 and S = 0."""
    c = make_cluster("fattree", 4)  # pod 0: servers 0, 1 (edge 0) and 2, 3 (edge 1)
    w = Workload(
        np.zeros(2, np.int64),
        np.zeros(2, np.int64),
        np.array([0, 3]),
        np.array([1, 1]),
        np.array([1, 1]),
        np.array([5, 5]),
    )
    sim = Simulator(c, w)
    sim.commit(0, [0, 2])  # groups 0 (server 0) and 2 (server 1)
    policy = OptPolicy()
    policy.reset(sim, 0)
    slowdown = float(GEN.predict(profiles.CPU_CORES[0], profiles.PCIE_GBPS[0], 0.0, 0.0))
    assert slowdown == pytest.approx(0.02 * np.exp(0.1 * 5.0) - 0.03 + 0.001 * 24 - 0.01)
    shared = [1, 4]  # server 0's second socket to server 2
    apart = [4, 6]  # server 2 to server 3
    for plan, term in ((shared, 0.8192 / 5 / 0.2 + slowdown), (apart, 0.8192 / 10 / 0.2)):
        with_running = policy.objective(sim, 0, [1], [plan])
        without = policy.objective(sim, 0, [1], [plan], running=False)
        assert with_running - without == pytest.approx(term)


def test_opt_can_start_from_whole_and_rejects_unknown_starts():
    from tjap.core.errors import InvalidInputError

    assert OptPolicy(start="whole").start.name == "whole"
    with pytest.raises(InvalidInputError, match="start"):
        OptPolicy(start="nope")


def test_env_whole_expert_replays_the_whole_rule():
    """Following the env's ``whole`` expert (read from the observation's whole_ok / whole_gap)
    gives exactly the JCTs of the ``whole`` policy in the simulator."""
    from tjap.learned.interference.env import InterferenceEnv

    env = InterferenceEnv(k=4, intervals=3, rate=1.5, extra_intervals=60)
    env.reset(seed=7)
    done = False
    while not done:
        _, _, done, _, _ = env.step(env.expert_action("whole"))
    ref = Simulator(env.cluster, env.workload).run(make("interference", "whole"), seed=0)
    assert np.allclose(env.sim.finish, ref.finish, equal_nan=True)
    with pytest.raises(Exception, match="expert"):
        env.expert_action("nope")


def test_env_jct_reward_sums_to_minus_the_total_jct():
    from tjap.learned.interference.env import InterferenceEnv

    env = InterferenceEnv(k=4, intervals=3, rate=1.5, extra_intervals=60, reward="jct")
    env.reset(seed=7)
    done, total = False, 0.0
    while not done:
        _, reward, done, _, _ = env.step(env.expert_action("whole"))
        total += reward
    jct = env.sim.finish - env.workload.arrival
    assert np.isfinite(jct).all() and total == pytest.approx(-jct.sum())
    with pytest.raises(Exception, match="reward"):
        InterferenceEnv(k=4, reward="nope")


def test_cli_whole_and_opt_start(capsys):
    from tjap.cli import main

    base = ["interference", "evaluate", "--k", "4", "--intervals", "3", "--seed", "2", "--json"]
    assert main([*base, "--policy", "whole"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["policy"] == "whole" and whole["completed"] == whole["jobs"] > 0
    assert main([*base, "--policy", "opt", "--opt-start", "whole", "--iterations", "50"]) == 0
    assert json.loads(capsys.readouterr().out)["completed"] == whole["jobs"]
    assert main([*base, "--policy", "whole", "--opt-start", "whole"]) == 2
    err = capsys.readouterr().err
    assert "--opt-start needs --policy opt" in err and err.count("\n") == 1
