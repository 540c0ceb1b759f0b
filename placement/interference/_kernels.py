"""Numba kernels of the seed-001 simulator; the public wrappers are in
:mod:`tjap.placement.interference.cluster`, :mod:`.model` and :mod:`.simulator`.

``coef`` is the array (alpha1, alpha2, alpha3, lambda1, beta1, beta2, lambda2) of
:class:`tjap.placement.interference.model.Coefficients`.
"""

import math

import numpy as np

from tjap.core.jit import njit, njit_inline


@njit_inline
def slowdown(cpu_self, pcie_self, same_cpu, over_cpu, same_pcie, alone, coef):
    """S(J, J~) = S_cpu + S_pcie of Sec. V-B, clipped at 0; 0 when the server holds no other task.

    ``same_cpu``/``same_pcie``: CPU cores and PCIe Gbps of the other tasks on J's GPU group;
    ``over_cpu``: sum over the server's other sockets of (their tasks' cores - the socket's
    physical cores)_+, so U_c = same_cpu + over_cpu.
    """
    if alone:
        return 0.0
    u_c = same_cpu + over_cpu
    s = (
        coef[0] * math.exp(coef[1] * u_c + coef[2] * cpu_self)
        + coef[3]
        + coef[4] * same_pcie
        + coef[5] * pcie_self
        + coef[6]
    )
    return s if s > 0.0 else 0.0


@njit_inline
def comm_time(volume, first_flow, end_flow, flow_len, flow_links, link_gbps, link_flows):
    """Seconds to move ``volume`` Gbit over the slowest of a job's flows [first_flow, end_flow):
    each flow runs at its bottleneck link's bandwidth shared equally among the flows on it."""
    comm = 0.0
    for f in range(first_flow, end_flow):
        bottleneck = np.inf
        for i in range(flow_len[f]):
            link = flow_links[f, i]
            share = link_gbps[link] / link_flows[link]
            if share < bottleneck:
                bottleneck = share
        if volume / bottleneck > comm:
            comm = volume / bottleneck
    return comm


@njit_inline
def task_slowdown(
    t,
    task_group,
    task_cpu,
    task_pcie,
    group_server,
    server_first_group,
    server_groups,
    group_cores,
    group_cpu,
    group_pcie,
    server_tasks,
    coef,
):
    """Slowdown of task ``t`` from the per-group sums (which include ``t`` itself)."""
    g = task_group[t]
    s = group_server[g]
    over = 0.0
    for h in range(server_first_group[s], server_first_group[s] + server_groups[s]):
        if h != g:
            extra = group_cpu[h] - group_cores[h]
            if extra > 0.0:
                over += extra
    return slowdown(
        task_cpu[t],
        task_pcie[t],
        group_cpu[g] - task_cpu[t],
        over,
        group_pcie[g] - task_pcie[t],
        server_tasks[s] <= 1,
        coef,
    )


@njit
def fill_path(
    ga,
    gb,
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
    out,
):
    """Write the link ids of the path from GPU group ``ga`` to ``gb`` into ``out``; returns how
    many. Same group: its PCIe link; same server: PCIe, QPI, PCIe; otherwise PCIe, the network
    path between the servers (ToR-pair table, or BCube digit correction from the top level down),
    PCIe."""
    sa, sb = group_server[ga], group_server[gb]
    out[0] = ga
    if ga == gb:
        return 1
    if sa == sb:
        out[1] = num_groups + sa
        out[2] = gb
        return 3
    c = 1
    if kind == 0:
        ta, tb = server_tor[sa], server_tor[sb]
        out[c] = nic_link[sa]
        c += 1
        for i in range(tor_path_len[ta, tb]):
            out[c] = tor_path[ta, tb, i]
            c += 1
        out[c] = nic_link[sb]
        c += 1
    else:
        cur = sa
        for level in range(bcube_levels - 1, -1, -1):
            step = bcube_n**level
            d_cur = (cur // step) % bcube_n
            d_dst = (sb // step) % bcube_n
            if d_cur != d_dst:
                nxt = cur + (d_dst - d_cur) * step
                out[c] = port_base + cur * bcube_levels + level
                out[c + 1] = port_base + nxt * bcube_levels + level
                c += 2
                cur = nxt
    out[c] = gb
    return c + 1


@njit
def fill_job_flows(
    groups,
    workers,
    ps,
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
    first_flow,
):
    """Paths of a job's worker x PS flows (``groups``: workers first, then PSs), written to rows
    ``first_flow ..`` of ``flow_links`` / ``flow_len``."""
    f = first_flow
    for i in range(workers):
        for k in range(ps):
            flow_len[f] = fill_path(
                groups[i],
                groups[workers + k],
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
                flow_links[f],
            )
            f += 1


@njit
def add_flows(flow_links, flow_len, first, count, link_flows, sign):
    """Add ``sign`` (+1 or -1) to the flow count of every link of flows ``first .. + count``."""
    for f in range(first, first + count):
        for i in range(flow_len[f]):
            link_flows[flow_links[f, i]] += sign


@njit
def interval_update(
    running,
    interval_s,
    job_model,
    job_workers,
    job_ps,
    job_epochs,
    job_progress,
    task_ptr,
    task_group,
    task_cpu,
    task_pcie,
    flow_ptr,
    flow_links,
    flow_len,
    link_flows,
    link_gbps,
    group_server,
    server_first_group,
    server_groups,
    group_cores,
    group_cpu,
    group_pcie,
    server_tasks,
    iter_s,
    iters_per_epoch,
    grad_gbit,
    coef,
    out_used_s,
    out_slowdown,
    out_comm_s,
):
    """Advance every job in ``running`` by one interval of ``interval_s`` seconds.

    Iteration time = iter_s x (1 + the slowest worker's slowdown) + the slowest flow's
    (gradient / PS) / bottleneck bandwidth (push and pull overlap on full-duplex links), where a
    link's bandwidth is shared equally by the flows on it; an epoch is ``iters_per_epoch /
    workers`` iterations. Adds the epochs done to ``job_progress`` (capped at the job's epochs)
    and writes the seconds each job used of the interval (< interval_s: it finished), its slowdown and its communication time per iteration.
    """
    for r in range(running.shape[0]):
        j = running[r]
        m = job_model[j]
        worst = 0.0
        for t in range(task_ptr[j], task_ptr[j] + job_workers[j]):
            s = task_slowdown(
                t,
                task_group,
                task_cpu,
                task_pcie,
                group_server,
                server_first_group,
                server_groups,
                group_cores,
                group_cpu,
                group_pcie,
                server_tasks,
                coef,
            )
            if s > worst:
                worst = s
        comm = comm_time(
            grad_gbit[m] / job_ps[j],
            flow_ptr[j],
            flow_ptr[j + 1],
            flow_len,
            flow_links,
            link_gbps,
            link_flows,
        )
        epoch_s = iters_per_epoch[m] / job_workers[j] * (iter_s[m] * (1.0 + worst) + comm)
        left = job_epochs[j] - job_progress[j]
        if left * epoch_s <= interval_s:
            out_used_s[r] = left * epoch_s
            job_progress[j] = job_epochs[j]
        else:
            out_used_s[r] = interval_s
            job_progress[j] += interval_s / epoch_s
        out_slowdown[r] = worst
        out_comm_s[r] = comm
