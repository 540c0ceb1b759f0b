"""Seed 001's ``opt`` operator: one scheduler's batch placed jointly by simulated annealing.

:class:`OptPolicy` starts from a rule's plans (Tetris's by default, or ``whole``'s; jobs the rule
cannot place are forwarded) and makes ``iterations`` moves of one task to another feasible group
of the partition, with Metropolis acceptance at a temperature falling geometrically. It minimises
the sum over the partition's jobs, the batch's and the running ones, of their predicted iteration
time over their ideal one (the slowest worker's slowdown by the interference model, the slowest
flow at the shared link bandwidths), so the slowdown and the bandwidth the batch takes from
running jobs count (:func:`_batch_objective`).
"""

from __future__ import annotations

import numpy as np

from tjap.core.anneal import accept_move
from tjap.core.errors import InvalidInputError, check_int, check_number
from tjap.core.jit import njit
from tjap.heuristics.interference.rules import TASK_RULES, TaskPolicy, WholeJobPolicy
from tjap.placement.interference import _kernels as sim_kern
from tjap.placement.interference import profiles
from tjap.placement.interference.planning import (
    Scratch,
    commit_scratch,
    jobs_comm,
    occupy,
    running_jobs_by_server,
)


@njit
def _batch_objective(
    n_jobs,
    job_model,
    job_workers,
    job_ps,
    bt_ptr,
    bt_group,
    bt_cpu,
    bt_pcie,
    bt_flow_ptr,
    flow_links,
    flow_len,
    link_flows,
    link_gbps,
    cpu_used,
    pcie_used,
    tasks,
    exp_sum,
    server_tasks,
    group_server,
    group_cores,
    server_first_group,
    server_groups,
    iter_s,
    grad_gbit,
    coef,
    nb_jobs,
    nb_flow_ptr,
    nb_flow_links,
    nb_flow_len,
    job_volume,
    job_iter_s,
    nb_task_ptr,
    nb_task_group,
    nb_task_cpu,
    nb_task_pcie,
    nb_workers,
):
    """Sum over the batch's jobs of predicted iteration time over ideal compute time (1 + the
    slowest worker's slowdown + the slowest flow's transfer / ideal), plus, for the running jobs
    ``nb_jobs`` of the partition (their tasks and flows in ``nb_task_*`` and ``nb_flow_*``), the
    same less the constant 1: their slowest worker's slowdown given the per-group sums (which
    hold the batch) and their transfer time at the link shares of ``link_flows`` (which hold the
    batch's flows). So the slowdown and the bandwidth the batch takes from running jobs count, as
    the simulator counts them (workers only, clipped, the slowest one per job)."""
    total = 0.0
    for j in range(n_jobs):
        m = job_model[j]
        worst = 0.0
        for t in range(bt_ptr[j], bt_ptr[j] + job_workers[j]):
            g = bt_group[t]
            s = group_server[g]
            over = 0.0
            for h in range(server_first_group[s], server_first_group[s] + server_groups[s]):
                if h != g and cpu_used[h] - group_cores[h] > 0.0:
                    over += cpu_used[h] - group_cores[h]
            sd = sim_kern.slowdown(
                bt_cpu[t],
                bt_pcie[t],
                cpu_used[g] - bt_cpu[t],
                over,
                pcie_used[g] - bt_pcie[t],
                server_tasks[s] <= 1,
                coef,
            )
            if sd > worst:
                worst = sd
        comm = sim_kern.comm_time(
            grad_gbit[m] / job_ps[j],
            bt_flow_ptr[j],
            bt_flow_ptr[j + 1],
            flow_len,
            flow_links,
            link_gbps,
            link_flows,
        )
        total += 1.0 + worst + comm / iter_s[m]
    for j in nb_jobs:  # running jobs: their slowest worker's slowdown with the batch placed
        worst = 0.0
        for t in range(nb_task_ptr[j], nb_task_ptr[j] + nb_workers[j]):
            sd = sim_kern.task_slowdown(
                t,
                nb_task_group,
                nb_task_cpu,
                nb_task_pcie,
                group_server,
                server_first_group,
                server_groups,
                group_cores,
                cpu_used,
                pcie_used,
                server_tasks,
                coef,
            )
            if sd > worst:
                worst = sd
        total += worst
    if nb_jobs.shape[0]:
        total += jobs_comm(
            nb_jobs,
            nb_flow_ptr,
            nb_flow_links,
            nb_flow_len,
            job_volume,
            job_iter_s,
            link_gbps,
            link_flows,
        )
    return total


@njit
def _move_task(
    t,
    g_new,
    bt_group,
    bt_gpu,
    bt_cpu,
    bt_pcie,
    bt_exp,
    gpu_free,
    cpu_used,
    pcie_used,
    tasks,
    exp_sum,
    server_tasks,
    group_server,
):
    for g, sign in ((bt_group[t], -1), (g_new, 1)):
        occupy(
            g,
            sign,
            bt_gpu[t],
            bt_cpu[t],
            bt_pcie[t],
            bt_exp[t],
            gpu_free,
            cpu_used,
            pcie_used,
            exp_sum,
            tasks,
            server_tasks,
            group_server,
        )
    bt_group[t] = g_new


@njit
def _anneal_batch(
    seed,
    iterations,
    t_start,
    t_end,
    candidates,
    n_jobs,
    job_model,
    job_workers,
    job_ps,
    bt_job,
    bt_ptr,
    bt_group,
    bt_gpu,
    bt_cpu,
    bt_pcie,
    bt_exp,
    bt_flow_ptr,
    flow_links,
    flow_len,
    link_flows,
    link_gbps,
    gpu_free,
    cpu_used,
    pcie_used,
    tasks,
    exp_sum,
    server_tasks,
    group_server,
    group_cores,
    cpu_capacity,
    server_first_group,
    server_groups,
    iter_s,
    grad_gbit,
    coef,
    num_groups,
    kind,
    server_tor,
    nic_link,
    tor_path,
    tor_path_len,
    bcube_n,
    bcube_levels,
    port_base,
    nb_jobs,
    nb_flow_ptr,
    nb_flow_links,
    nb_flow_len,
    job_volume,
    job_iter_s,
    nb_task_ptr,
    nb_task_group,
    nb_task_cpu,
    nb_task_pcie,
    nb_workers,
):
    """Simulated annealing over moves of one batch task to another feasible group of
    ``candidates``; leaves the best plan found in ``bt_group`` (and the state arrays in line with
    it). Returns (initial objective, best objective, accepted moves)."""
    np.random.seed(seed)
    n_tasks = bt_ptr[n_jobs]
    current = _batch_objective(
        n_jobs,
        job_model,
        job_workers,
        job_ps,
        bt_ptr,
        bt_group,
        bt_cpu,
        bt_pcie,
        bt_flow_ptr,
        flow_links,
        flow_len,
        link_flows,
        link_gbps,
        cpu_used,
        pcie_used,
        tasks,
        exp_sum,
        server_tasks,
        group_server,
        group_cores,
        server_first_group,
        server_groups,
        iter_s,
        grad_gbit,
        coef,
        nb_jobs,
        nb_flow_ptr,
        nb_flow_links,
        nb_flow_len,
        job_volume,
        job_iter_s,
        nb_task_ptr,
        nb_task_group,
        nb_task_cpu,
        nb_task_pcie,
        nb_workers,
    )
    initial, best = current, current
    best_group = bt_group.copy()
    accepted = 0
    saved_links = np.empty((16, flow_links.shape[1]), np.int64)
    saved_len = np.empty(16, np.int64)
    ratio = t_end / t_start
    for it in range(iterations):
        t = np.random.randint(n_tasks)
        g_new = candidates[np.random.randint(candidates.shape[0])]
        g_old = bt_group[t]
        if (
            g_new == g_old
            or gpu_free[g_new] < bt_gpu[t]
            or cpu_used[g_new] + bt_cpu[t] > cpu_capacity[g_new] + 1e-9
        ):
            continue
        j = bt_job[t]
        f0, nf = bt_flow_ptr[j], bt_flow_ptr[j + 1] - bt_flow_ptr[j]
        sim_kern.add_flows(flow_links, flow_len, f0, nf, link_flows, -1)
        for f in range(nf):
            saved_len[f] = flow_len[f0 + f]
            saved_links[f] = flow_links[f0 + f]
        _move_task(
            t,
            g_new,
            bt_group,
            bt_gpu,
            bt_cpu,
            bt_pcie,
            bt_exp,
            gpu_free,
            cpu_used,
            pcie_used,
            tasks,
            exp_sum,
            server_tasks,
            group_server,
        )
        sim_kern.fill_job_flows(
            bt_group[bt_ptr[j] : bt_ptr[j + 1]],
            job_workers[j],
            job_ps[j],
            group_server,
            num_groups,
            kind,
            server_tor,
            nic_link,
            tor_path,
            tor_path_len,
            bcube_n,
            bcube_levels,
            port_base,
            flow_links,
            flow_len,
            f0,
        )
        sim_kern.add_flows(flow_links, flow_len, f0, nf, link_flows, 1)
        value = _batch_objective(
            n_jobs,
            job_model,
            job_workers,
            job_ps,
            bt_ptr,
            bt_group,
            bt_cpu,
            bt_pcie,
            bt_flow_ptr,
            flow_links,
            flow_len,
            link_flows,
            link_gbps,
            cpu_used,
            pcie_used,
            tasks,
            exp_sum,
            server_tasks,
            group_server,
            group_cores,
            server_first_group,
            server_groups,
            iter_s,
            grad_gbit,
            coef,
            nb_jobs,
            nb_flow_ptr,
            nb_flow_links,
            nb_flow_len,
            job_volume,
            job_iter_s,
            nb_task_ptr,
            nb_task_group,
            nb_task_cpu,
            nb_task_pcie,
            nb_workers,
        )
        # the one accept step (tjap.core.anneal), drawing from Numba's generator seeded above
        if accept_move(value - current, True, t_start, ratio, it, iterations, None):
            current = value
            accepted += 1
            if value < best - 1e-12:
                best = value
                best_group[:] = bt_group
        else:
            sim_kern.add_flows(flow_links, flow_len, f0, nf, link_flows, -1)
            _move_task(
                t,
                g_old,
                bt_group,
                bt_gpu,
                bt_cpu,
                bt_pcie,
                bt_exp,
                gpu_free,
                cpu_used,
                pcie_used,
                tasks,
                exp_sum,
                server_tasks,
                group_server,
            )
            for f in range(nf):
                flow_len[f0 + f] = saved_len[f]
                flow_links[f0 + f] = saved_links[f]
            sim_kern.add_flows(flow_links, flow_len, f0, nf, link_flows, 1)
    bt_group[:] = best_group
    return initial, best, accepted


class OptPolicy:
    """Per scheduler and interval, the batch of queued jobs placed jointly by simulated annealing
    (module docstring): start from Tetris's plans (jobs Tetris cannot place are forwarded), then
    ``iterations`` moves of one task to another feasible group of the partition, Metropolis
    acceptance at a temperature falling geometrically from ``t_start`` to ``t_end``. Feasibility
    holds after every move, so every plan returned fits."""

    name = "opt"

    def __init__(
        self,
        iterations: int = 2000,
        t_start: float = 0.5,
        t_end: float = 0.005,
        start: str = "tetris",
    ):
        check_int("opt iterations", iterations, 0, 10**7, must="an integer in [0, 1e7]")
        for name, value in (("t_start", t_start), ("t_end", t_end)):
            check_number(f"opt {name}", value, 0, low_open=True)
        if start not in TASK_RULES and start != "whole":
            raise InvalidInputError(
                f"opt start must be one of {', '.join(TASK_RULES)}, whole; got {start!r}"
            )
        self.iterations, self.t_start, self.t_end = int(iterations), float(t_start), float(t_end)
        self.start = WholeJobPolicy() if start == "whole" else TaskPolicy(start)

    def reset(self, sim, seed: int) -> None:
        self.start.reset(sim, seed)
        self.rng = np.random.default_rng(seed)
        self.stats = {"batches": 0, "objective_start": 0.0, "objective_best": 0.0}

    def _neighbours(self, sim, partition: int) -> tuple:
        """The running jobs with a task in ``partition`` (their flows share its links; a job's
        tasks all lie in one partition) and the flow arrays the objective reads."""
        servers = np.flatnonzero(sim.cluster.server_partition == partition)
        _, nb_jobs = running_jobs_by_server(sim, servers)
        w = sim.workload
        return (
            np.unique(nb_jobs),
            sim.flow_ptr,
            sim.flow_links,
            sim.flow_len,
            profiles.GRAD_MB[w.model] * 8e-3 / w.ps,
            profiles.ITER_S[w.model],
            sim.task_ptr,
            sim.task_group,
            sim.task_cpu,
            sim.task_pcie,
            w.workers,
        )

    def _batch(self, sim, partition: int, ids: np.ndarray, bt_group: np.ndarray) -> dict:
        """Arrays of the batch ``ids`` planned on ``bt_group`` (their tasks, in order): its
        tasks, its flows, and the scratch state with the whole batch placed."""
        c, w = sim.cluster, sim.workload
        workers, ps = w.workers[ids], w.ps[ids]
        bt_ptr = np.concatenate([[0], np.cumsum(workers + ps)]).astype(np.int64)
        bt_flow_ptr = np.concatenate([[0], np.cumsum(workers * ps)]).astype(np.int64)
        task_index = np.concatenate([np.arange(sim.task_ptr[j], sim.task_ptr[j + 1]) for j in ids])
        bt_gpu = sim.task_worker[task_index].astype(np.int64)
        bt_cpu, bt_pcie, bt_exp = (
            sim.task_cpu[task_index],
            sim.task_pcie[task_index],
            sim.task_exp[task_index],
        )
        scratch = Scratch(sim)
        commit_scratch(scratch, c, bt_group, bt_gpu, bt_cpu, bt_pcie, bt_exp)
        flow_links = np.full((bt_flow_ptr[-1], c.max_path_len), -1, np.int64)
        flow_len = np.zeros(bt_flow_ptr[-1], np.int64)
        link_flows = sim.link_flows.copy()
        for j in range(len(ids)):
            sim_kern.fill_job_flows(
                bt_group[bt_ptr[j] : bt_ptr[j + 1]],
                int(workers[j]),
                int(ps[j]),
                *c.path_arrays(),
                flow_links,
                flow_len,
                int(bt_flow_ptr[j]),
            )
        sim_kern.add_flows(flow_links, flow_len, 0, int(bt_flow_ptr[-1]), link_flows, 1)
        return {
            "workers": workers,
            "ps": ps,
            "bt_ptr": bt_ptr,
            "bt_flow_ptr": bt_flow_ptr,
            "bt_job": np.repeat(np.arange(len(ids)), workers + ps),
            "bt_gpu": bt_gpu,
            "bt_cpu": bt_cpu,
            "bt_pcie": bt_pcie,
            "bt_exp": bt_exp,
            "scratch": scratch,
            "flow_links": flow_links,
            "flow_len": flow_len,
            "link_flows": link_flows,
        }

    def objective(self, sim, partition: int, jobs, plans, *, running: bool = True) -> float:
        """The annealing objective of ``plans`` (one per job of ``jobs``) on ``partition`` in
        ``sim``'s state; ``running=False`` leaves out the running jobs' terms."""
        ids = np.asarray(jobs, np.int64)
        bt_group = np.concatenate([np.asarray(p, np.int64) for p in plans])
        b, c, w = self._batch(sim, partition, ids, bt_group), sim.cluster, sim.workload
        nb = self._neighbours(sim, partition)
        if not running:
            nb = (np.zeros(0, np.int64),) + nb[1:]
        sc = b["scratch"]
        return float(
            _batch_objective(
                len(ids),
                w.model[ids],
                b["workers"],
                b["ps"],
                b["bt_ptr"],
                bt_group,
                b["bt_cpu"],
                b["bt_pcie"],
                b["bt_flow_ptr"],
                b["flow_links"],
                b["flow_len"],
                b["link_flows"],
                c.link_gbps,
                sc.cpu_used,
                sc.pcie_used,
                sc.tasks,
                sc.exp_sum,
                sc.server_tasks,
                c.group_server,
                c.group_cores,
                c.server_first_group,
                c.server_groups,
                profiles.ITER_S,
                profiles.GRAD_MB * 8e-3,
                sim.coef,
                *nb,
            )
        )

    def place(self, sim, partition: int, jobs) -> list:
        plans = self.start.place(sim, partition, jobs)
        chosen = [i for i, plan in enumerate(plans) if plan is not None]
        if not chosen or self.iterations == 0:
            return plans
        c, w = sim.cluster, sim.workload
        ids = np.array([jobs[i] for i in chosen], np.int64)
        bt_group = np.concatenate([plans[i] for i in chosen]).astype(np.int64)
        b = self._batch(sim, partition, ids, bt_group)
        sc = b["scratch"]
        initial, best, _ = _anneal_batch(
            int(self.rng.integers(2**31)),
            self.iterations,
            self.t_start,
            self.t_end,
            c.partition_groups[partition],
            len(ids),
            w.model[ids],
            b["workers"],
            b["ps"],
            b["bt_job"],
            b["bt_ptr"],
            bt_group,
            b["bt_gpu"],
            b["bt_cpu"],
            b["bt_pcie"],
            b["bt_exp"],
            b["bt_flow_ptr"],
            b["flow_links"],
            b["flow_len"],
            b["link_flows"],
            c.link_gbps,
            sc.gpu_free,
            sc.cpu_used,
            sc.pcie_used,
            sc.tasks,
            sc.exp_sum,
            sc.server_tasks,
            c.group_server,
            c.group_cores,
            sim.cpu_capacity,
            c.server_first_group,
            c.server_groups,
            profiles.ITER_S,
            profiles.GRAD_MB * 8e-3,
            sim.coef,
            *c.path_arrays()[1:],
            *self._neighbours(sim, partition),
        )
        self.stats["batches"] += 1
        self.stats["objective_start"] += initial
        self.stats["objective_best"] += best
        bt_ptr = b["bt_ptr"]
        for k, i in enumerate(chosen):
            plans[i] = bt_group[bt_ptr[k] : bt_ptr[k + 1]].copy()
        return plans
