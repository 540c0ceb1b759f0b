"""Seed 001's rule-based placement: the four per-task heuristics and the whole-job rule.

The per-task heuristics (:class:`TaskPolicy`) place a job's tasks one at a time on the feasible
GPU group of the partition with the best score (ties to the lowest group id), updating a scratch
copy of the state after each task so later tasks and jobs of the batch see it; a job whose next
task fits nowhere is rolled back and forwarded. Scores (Sec. VI-A of the paper):

- **tetris**: multi-resource packing that follows locality. 2 if the group's server already holds
  a task of this job, plus the mean of the group's GPU and CPU fill fractions after placing the task
  (best fit: the fullest group that still fits). Jobs are packed onto as few servers as possible.
- **lb** (load balancing): the server load, the mean over its groups of (used GPUs / GPUs + used
  CPU / CPU capacity + PCIe traffic / PCIe bandwidth) / 3; least loaded server first, then least
  loaded group.
- **lif** (least interference first): the interference model's total slowdown of all tasks on the
  group's server after placing the task (the unclipped model, summed exactly from per-group sums:
  :func:`tjap.placement.interference.planning.server_interference`); least first. Uses the simulator's
  coefficients.
- **random**: uniform among the feasible groups.

**whole** (ours, an extra baseline; not in the paper; :class:`WholeJobPolicy`): each job whole on
one server when one of the partition holds it, at the server and socket split of least predicted
cost (:func:`tjap.placement.interference.planning.split_cost`: its own predicted iteration time over
ideal, plus the slowdown and transfer time it adds to the jobs already there); Tetris's per-task
placement otherwise.
"""

from __future__ import annotations

import numpy as np

from tjap.core.errors import UnknownMethodError
from tjap.core.jit import njit
from tjap.placement.interference import profiles
from tjap.placement.interference.planning import (
    Scratch,
    add_plan_flows,
    commit_scratch,
    occupy,
    running_jobs_by_server,
    server_interference,
    split_cost,
)

TETRIS, LB, LIF, RANDOM = 0, 1, 2, 3
_RULE_CODES = {"tetris": TETRIS, "lb": LB, "lif": LIF, "random": RANDOM}
#: The per-task rules, by name.
TASK_RULES = tuple(_RULE_CODES)


@njit
def _place_job(
    policy,
    candidates,
    gpu_need,
    cpu_need,
    pcie_need,
    exp_need,
    gpu_free,
    cpu_used,
    pcie_used,
    tasks,
    exp_sum,
    server_tasks,
    group_server,
    group_gpus,
    cpu_capacity,
    group_cores,
    server_first_group,
    server_groups,
    coef,
    mark,
    rand,
    out,
):
    """Place a job's tasks one by one on ``candidates`` by ``policy``, updating the state arrays;
    returns True, or False with every change undone."""
    n_tasks = gpu_need.shape[0]
    placed = 0
    for t in range(n_tasks):
        best, best_score, feasible = -1, -np.inf, 0
        if policy == 3:
            for g in candidates:
                if (
                    gpu_free[g] >= gpu_need[t]
                    and cpu_used[g] + cpu_need[t] <= cpu_capacity[g] + 1e-9
                ):
                    feasible += 1
            pick = int(rand[t] * feasible)
            feasible = 0
        for g in candidates:
            if gpu_free[g] < gpu_need[t] or cpu_used[g] + cpu_need[t] > cpu_capacity[g] + 1e-9:
                continue
            s = group_server[g]
            if policy == 0:
                fill = (
                    (group_gpus[g] - gpu_free[g] + gpu_need[t]) / group_gpus[g]
                    + (cpu_used[g] + cpu_need[t]) / cpu_capacity[g]
                ) / 2.0
                score = 2.0 * mark[s] + fill
            elif policy == 1:
                load, own = 0.0, 0.0
                for h in range(server_first_group[s], server_first_group[s] + server_groups[s]):
                    lh = (
                        (group_gpus[h] - gpu_free[h]) / group_gpus[h]
                        + cpu_used[h] / cpu_capacity[h]
                        + pcie_used[h] / 128.0
                    ) / 3.0
                    load += lh
                    if h == g:
                        own = lh
                score = -(load / server_groups[s] + 1e-3 * own)
            elif policy == 2:
                score = -server_interference(
                    s,
                    g,
                    cpu_need[t],
                    pcie_need[t],
                    exp_need[t],
                    cpu_used,
                    pcie_used,
                    tasks,
                    exp_sum,
                    server_tasks,
                    group_cores,
                    server_first_group,
                    server_groups,
                    coef,
                )
            else:
                score = 1.0 if feasible == pick else 0.0
                feasible += 1
            if score > best_score:
                best, best_score = g, score
                if policy == 3 and score == 1.0:
                    break
        if best < 0:
            break
        out[t] = best
        occupy(
            best,
            1,
            gpu_need[t],
            cpu_need[t],
            pcie_need[t],
            exp_need[t],
            gpu_free,
            cpu_used,
            pcie_used,
            exp_sum,
            tasks,
            server_tasks,
            group_server,
        )
        mark[group_server[best]] = 1
        placed += 1
    for t in range(placed):
        mark[group_server[out[t]]] = 0
    if placed == n_tasks:
        return True
    for t in range(placed):
        occupy(
            out[t],
            -1,
            gpu_need[t],
            cpu_need[t],
            pcie_need[t],
            exp_need[t],
            gpu_free,
            cpu_used,
            pcie_used,
            exp_sum,
            tasks,
            server_tasks,
            group_server,
        )
    return False


class TaskPolicy:
    """One of the per-task heuristics (``tetris``, ``lb``, ``lif``, ``random``)."""

    def __init__(self, name: str):
        if name not in _RULE_CODES:
            raise UnknownMethodError(
                f"unknown per-task heuristic {name!r}; choose one of {', '.join(_RULE_CODES)}"
            )
        self.name, self.code = name, _RULE_CODES[name]

    def reset(self, sim, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self._mark = np.zeros(sim.cluster.num_servers, np.int64)

    def place(self, sim, partition: int, jobs) -> list:
        scratch = Scratch(sim)
        return [self.place_on(sim, scratch, partition, job) for job in jobs]

    def place_on(self, sim, scratch: Scratch, partition: int, job: int):
        """One job's plan on ``partition`` given the ``scratch`` state (updated when it fits),
        or None."""
        c = sim.cluster
        lo, hi = sim.task_ptr[job], sim.task_ptr[job + 1]
        out = np.empty(hi - lo, np.int64)
        rand = self.rng.random(hi - lo) if self.code == RANDOM else _NO_RAND
        ok = _place_job(
            self.code,
            c.partition_groups[partition],
            sim.task_worker[lo:hi].astype(np.int64),
            sim.task_cpu[lo:hi],
            sim.task_pcie[lo:hi],
            sim.task_exp[lo:hi],
            scratch.gpu_free,
            scratch.cpu_used,
            scratch.pcie_used,
            scratch.tasks,
            scratch.exp_sum,
            scratch.server_tasks,
            c.group_server,
            c.group_gpus,
            sim.cpu_capacity,
            c.group_cores,
            c.server_first_group,
            c.server_groups,
            sim.coef,
            self._mark,
            rand,
            out,
        )
        return out if ok else None


_NO_RAND = np.zeros(64)


# -- whole: a job's tasks on one server, the server and socket split of least predicted cost ------
@njit
def _whole_best(
    servers,
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
    nb_ptr,
    nb_jobs,
    flow_ptr,
    flow_links,
    flow_len,
    job_volume,
    job_iter_s,
):
    """(server, a, b, cost) of least :func:`~tjap.placement.interference.planning.split_cost` over
    ``servers`` (ties: the first server, then the most workers and PSs on its first group);
    server -1 when the job fits whole on none. Empty servers of one shape are alike: only the
    first is scored."""
    best_s, best_a, best_b, best = -1, 0, 0, np.inf
    ref = -1
    for i in range(servers.shape[0]):
        s = servers[i]
        if server_tasks[s] == 0:
            g0, r0 = server_first_group[s], server_first_group[ref]
            if (
                ref >= 0
                and server_groups[s] == server_groups[ref]
                and gpu_free[g0] == gpu_free[r0]
                and group_cores[g0] == group_cores[r0]
            ):
                continue
            if ref < 0:
                ref = s
        nb = nb_jobs[nb_ptr[i] : nb_ptr[i + 1]]
        for a in range(W, -1, -1):
            for b in range(P, -1, -1):
                cost = split_cost(
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
                    nb,
                    flow_ptr,
                    flow_links,
                    flow_len,
                    job_volume,
                    job_iter_s,
                )
                if cost < best - 1e-12:
                    best_s, best_a, best_b, best = s, a, b, cost
    return best_s, best_a, best_b, best


class WholeJobPolicy:
    """``whole``: each job on one server when one of the partition holds it (every task), at the
    server and socket split of least predicted cost
    (:func:`~tjap.placement.interference.planning.split_cost`: the job's own predicted iteration time
    over its ideal one, plus the slowdown and the transfer time it adds to the jobs already
    there, the latter from the bandwidth its flows take on the server's PCIe and QPI links); a
    job no server holds whole is placed task by task as Tetris does. Ours, not the
    paper's: an extra baseline that reads the interference model and the link state."""

    name = "whole"

    def reset(self, sim, seed: int) -> None:
        self.fallback = TaskPolicy("tetris")
        self.fallback.reset(sim, seed)
        w = sim.workload
        self._volume = profiles.GRAD_MB[w.model] * 8e-3 / w.ps
        self._iter_s = profiles.ITER_S[w.model]
        self.stats = {"whole": 0, "split": 0}

    def place(self, sim, partition: int, jobs) -> list:
        c, w = sim.cluster, sim.workload
        scratch = Scratch(sim)
        link_flows = sim.link_flows.copy()
        servers = np.flatnonzero(c.server_partition == partition)
        nb_ptr, nb_jobs = running_jobs_by_server(sim, servers)
        plans = []
        for job in jobs:
            lo, hi = sim.task_ptr[job], sim.task_ptr[job + 1]
            W, P = int(w.workers[job]), int(w.ps[job])
            cw, pw, ew = sim.task_cpu[lo], sim.task_pcie[lo], sim.task_exp[lo]
            cps, eps = sim.task_cpu[hi - 1], sim.task_exp[hi - 1]
            s, a, b, _ = _whole_best(
                servers,
                W,
                P,
                cw,
                pw,
                ew,
                cps,
                eps,
                self._volume[job],
                self._iter_s[job],
                scratch.gpu_free,
                scratch.cpu_used,
                scratch.pcie_used,
                scratch.tasks,
                scratch.exp_sum,
                scratch.server_tasks,
                c.group_cores,
                sim.cpu_capacity,
                c.server_first_group,
                c.server_groups,
                c.num_groups,
                c.link_gbps,
                link_flows,
                sim.coef,
                nb_ptr,
                nb_jobs,
                sim.flow_ptr,
                sim.flow_links,
                sim.flow_len,
                self._volume,
                self._iter_s,
            )
            if s >= 0:
                g0 = c.server_first_group[s]
                g1 = g0 + 1 if c.server_groups[s] == 2 else g0
                plan = np.array([g0] * a + [g1] * (W - a) + [g0] * b + [g1] * (P - b), np.int64)
                commit_scratch(
                    scratch,
                    c,
                    plan,
                    sim.task_worker[lo:hi],
                    sim.task_cpu[lo:hi],
                    sim.task_pcie[lo:hi],
                    sim.task_exp[lo:hi],
                )
                self.stats["whole"] += 1
            else:  # Tetris, task by task (it updates the scratch state itself)
                plan = self.fallback.place_on(sim, scratch, partition, job)
                if plan is None:
                    plans.append(None)
                    continue
                self.stats["split"] += 1
            add_plan_flows(c, plan, W, P, link_flows)
            plans.append(plan)
        return plans
