"""Predicted cost of plans on an interference simulator's state: the computations of seed 001's
interference model and link model that placement rules and learned schedulers share.

A policy plans a batch on a :class:`Scratch` copy of the simulator's per-group arrays (it never
writes the simulator), putting tasks on groups with :func:`occupy` (one task, in compiled code) or
:func:`commit_scratch` (a whole plan) and the flows of a planned job on a copy of the link counts
with :func:`add_plan_flows`. On that state:

- :func:`server_interference`: the interference model's total (unclipped) slowdown of every task
  on a server, optionally with one more task on one of its groups, summed exactly from the
  per-group sums (``exp_sum`` holds exp((alpha3 - alpha2) C_t) per group);
- :func:`split_cost`: the predicted cost of a job placed whole on one server at a given socket
  split: its own iteration time over the ideal one plus the slowdown and transfer time it adds to
  the jobs already there;
- :func:`jobs_comm`: the running jobs' transfer time over ideal at given link shares;
- :func:`running_jobs_by_server`: which running jobs have a task on each server.
"""

from __future__ import annotations

import math

import numpy as np

from tjap.core.jit import njit, njit_inline
from tjap.placement.interference import _kernels as sim_kern
from tjap.placement.interference.jobs import RUNNING


class Scratch:
    """Copies of the simulator's per-group state (``gpu_free``, ``cpu_used``, ``pcie_used``,
    ``tasks``, ``exp_sum``, ``server_tasks``) that a policy updates while it plans a batch."""

    def __init__(self, sim):
        self.gpu_free = sim.gpu_free.copy()
        self.cpu_used = sim.cpu_used.copy()
        self.pcie_used = sim.pcie_used.copy()
        self.tasks = sim.tasks.copy()
        self.exp_sum = sim.exp_sum.copy()
        self.server_tasks = sim.server_tasks.copy()


@njit_inline
def occupy(
    g,
    sign,
    gpu,
    cpu,
    pcie,
    exp,
    gpu_free,
    cpu_used,
    pcie_used,
    exp_sum,
    tasks,
    server_tasks,
    group_server,
):
    """Put one task on GPU group ``g`` (sign +1) or take it off (sign -1)."""
    gpu_free[g] -= sign * gpu
    cpu_used[g] += sign * cpu
    pcie_used[g] += sign * pcie
    exp_sum[g] += sign * exp
    tasks[g] += sign
    server_tasks[group_server[g]] += sign


@njit
def server_interference(
    s,
    g_add,
    cpu_add,
    pcie_add,
    exp_add,
    cpu_used,
    pcie_used,
    tasks,
    exp_sum,
    server_tasks,
    group_cores,
    server_first_group,
    server_groups,
    coef,
):
    """Sum of the unclipped slowdown of every task on server ``s`` once a task (cpu_add,
    pcie_add, exp_add) joins group ``g_add`` (-1: none); 0 when the server holds one task."""
    if server_tasks[s] + (1 if g_add >= 0 else 0) <= 1:
        return 0.0
    first, count = server_first_group[s], server_groups[s]
    total = 0.0
    for h in range(first, first + count):
        cpu_h = cpu_used[h] + (cpu_add if h == g_add else 0.0)
        n_h = tasks[h] + (1 if h == g_add else 0)
        if n_h == 0:
            continue
        pcie_h = pcie_used[h] + (pcie_add if h == g_add else 0.0)
        exp_h = exp_sum[h] + (exp_add if h == g_add else 0.0)
        over = 0.0
        for o in range(first, first + count):
            if o != h:
                extra = cpu_used[o] + (cpu_add if o == g_add else 0.0) - group_cores[o]
                if extra > 0.0:
                    over += extra
        total += (
            coef[0] * math.exp(coef[1] * (cpu_h + over)) * exp_h
            + n_h * (coef[3] + coef[6])
            + coef[4] * (n_h - 1) * pcie_h
            + coef[5] * pcie_h
        )
    return total


@njit
def jobs_comm(jobs, flow_ptr, flow_links, flow_len, job_volume, job_iter_s, link_gbps, link_flows):
    """Sum over ``jobs`` of their slowest flow's transfer time over their ideal iteration time,
    with the link shares of ``link_flows``."""
    total = 0.0
    for j in jobs:
        total += (
            sim_kern.comm_time(
                job_volume[j],
                flow_ptr[j],
                flow_ptr[j + 1],
                flow_len,
                flow_links,
                link_gbps,
                link_flows,
            )
            / job_iter_s[j]
        )
    return total


@njit
def split_cost(
    s,
    a,
    b,
    W,
    P,
    cw,
    pw,
    ew,
    cps,
    eps,
    volume,
    iter_s,
    gpu_free,
    cpu_used,
    pcie_used,
    tasks,
    exp_sum,
    server_tasks,
    group_cores,
    cpu_capacity,
    server_first_group,
    server_groups,
    num_groups,
    link_gbps,
    link_flows,
    coef,
    nb_jobs,
    flow_ptr,
    flow_links,
    flow_len,
    job_volume,
    job_iter_s,
):
    """Predicted cost of the job (``W`` workers of cw cores / pw Gbps, ``P`` PSs of cps cores)
    whole on server ``s``, ``a`` workers and ``b`` PSs on its first group, the rest on the
    second: its own iteration time over the ideal one (1 + worst worker slowdown + transfer /
    ideal) plus the added (unclipped) slowdown of the tasks already on the server plus the added
    transfer time (over ideal) of the running jobs ``nb_jobs`` whose flows share its links.
    Returns inf when the split does not fit."""
    g0 = server_first_group[s]
    two = server_groups[s] == 2
    g1 = g0 + 1 if two else g0
    nw = np.array([a, W - a])
    nps = np.array([b, P - b])
    if not two and (a != W or b != P):
        return np.inf
    ng = 2 if two else 1
    cpu_after = np.empty(2)
    pcie_after = np.empty(2)
    for i in range(ng):
        g = g0 + i
        if nw[i] > gpu_free[g]:
            return np.inf
        cpu_after[i] = cpu_used[g] + nw[i] * cw + nps[i] * cps
        if cpu_after[i] > cpu_capacity[g] + 1e-9:
            return np.inf
        pcie_after[i] = pcie_used[g] + nw[i] * pw
    over_after = np.zeros(2)
    over_before = np.zeros(2)
    if two:
        for i in range(2):
            o = 1 - i
            over_after[i] = max(cpu_after[o] - group_cores[g0 + o], 0.0)
            over_before[i] = max(cpu_used[g0 + o] - group_cores[g0 + o], 0.0)
    worst = 0.0
    alone_after = server_tasks[s] + W + P <= 1
    for i in range(ng):
        if nw[i] > 0:
            sd = sim_kern.slowdown(
                cw, pw, cpu_after[i] - cw, over_after[i], pcie_after[i] - pw, alone_after, coef
            )
            if sd > worst:
                worst = sd
    # co-runners' added interference (the unclipped model, as lif and opt count it)
    others = 0.0
    if server_tasks[s] > 0:
        for i in range(ng):
            g = g0 + i
            if tasks[g] == 0:
                continue
            after = coef[0] * math.exp(coef[1] * (cpu_after[i] + over_after[i])) * exp_sum[
                g
            ] + coef[4] * (tasks[g] * pcie_after[i] - pcie_used[g])
            before = 0.0
            if server_tasks[s] > 1:
                before = (
                    coef[0] * math.exp(coef[1] * (cpu_used[g] + over_before[i])) * exp_sum[g]
                    + coef[4] * (tasks[g] - 1) * pcie_used[g]
                )
            else:  # it ran alone: no slowdown before, the whole model after
                after += tasks[g] * (coef[3] + coef[6]) + coef[5] * pcie_used[g]
            others += after - before
    # flows: (worker group, PS group) pairs; PCIe links are the group ids, QPI num_groups + s
    f00, f01, f10, f11 = a * b, a * (P - b), (W - a) * b, (W - a) * (P - b)
    qpi = num_groups + s
    add0 = f00 + f01 + f10
    add1 = f11 + f01 + f10 if two else 0
    addq = f01 + f10 if two else 0
    before_comm = 0.0
    if nb_jobs.shape[0]:
        before_comm = jobs_comm(
            nb_jobs, flow_ptr, flow_links, flow_len, job_volume, job_iter_s, link_gbps, link_flows
        )
    link_flows[g0] += add0
    if two:
        link_flows[g1] += add1
        link_flows[qpi] += addq
    comm = 0.0
    if f00 > 0:
        comm = max(comm, volume * link_flows[g0] / link_gbps[g0])
    if f11 > 0:
        comm = max(comm, volume * link_flows[g1] / link_gbps[g1])
    if f01 + f10 > 0:
        share = min(
            link_gbps[g0] / link_flows[g0],
            link_gbps[g1] / link_flows[g1],
            link_gbps[qpi] / link_flows[qpi],
        )
        comm = max(comm, volume / share)
    after_comm = 0.0
    if nb_jobs.shape[0]:
        after_comm = jobs_comm(
            nb_jobs, flow_ptr, flow_links, flow_len, job_volume, job_iter_s, link_gbps, link_flows
        )
    link_flows[g0] -= add0
    if two:
        link_flows[g1] -= add1
        link_flows[qpi] -= addq
    return 1.0 + worst + comm / iter_s + others + (after_comm - before_comm)


def running_jobs_by_server(sim, servers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (ptr, jobs) of the running jobs with a task on each of ``servers``: the jobs of
    ``servers[i]`` are ``jobs[ptr[i]:ptr[i + 1]]``, in increasing id."""
    running = np.flatnonzero(sim.state == RUNNING)
    c = sim.cluster
    if not len(running):
        return np.zeros(len(servers) + 1, np.int64), np.zeros(0, np.int64)
    counts = sim.task_ptr[running + 1] - sim.task_ptr[running]
    first = np.repeat(sim.task_ptr[running], counts)
    offset = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    server = c.group_server[sim.task_group[first + offset]]
    job = np.repeat(running, counts)
    position = np.full(c.num_servers, -1, np.int64)
    position[servers] = np.arange(len(servers))
    keep = position[server] >= 0
    pairs = np.unique(position[server[keep]] * len(sim.workload) + job[keep])
    where, jobs = pairs // len(sim.workload), pairs % len(sim.workload)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(where, minlength=len(servers)))])
    return ptr.astype(np.int64), jobs.astype(np.int64)


def commit_scratch(scratch: Scratch, cluster, plan, gpu, cpu, pcie, exp) -> None:
    """Put the tasks of one plan (demands ``gpu``, ``cpu``, ``pcie``, ``exp`` per task) on the
    groups ``plan`` of ``scratch``."""
    np.subtract.at(scratch.gpu_free, plan, gpu.astype(np.int64))
    np.add.at(scratch.cpu_used, plan, cpu)
    np.add.at(scratch.pcie_used, plan, pcie)
    np.add.at(scratch.exp_sum, plan, exp)
    np.add.at(scratch.tasks, plan, 1)
    np.add.at(scratch.server_tasks, cluster.group_server[plan], 1)


def add_plan_flows(cluster, plan, W, P, link_flows) -> None:
    """Add the ``W`` x ``P`` worker-PS flows of a job planned on ``plan`` to ``link_flows``."""
    links = np.full((W * P, cluster.max_path_len), -1, np.int64)
    length = np.zeros(W * P, np.int64)
    sim_kern.fill_job_flows(plan, W, P, *cluster.path_arrays(), links, length, 0)
    sim_kern.add_flows(links, length, 0, W * P, link_flows, 1)
