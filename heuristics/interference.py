"""Placement baselines of seed 001 behind :class:`placement.interference.PlacementPolicy`:
``place(sim, partition, jobs)`` returns one plan (a GPU group per task, workers first) or None per
queued job, and the simulator commits the plans in order (:mod:`placement.interference.simulator`).

The four per-task heuristics place a job's tasks one at a time on the feasible GPU group of the
partition with the best score (ties to the lowest group id), updating a scratch copy of the state
after each task so later tasks and jobs of the batch see it; a job whose next task fits nowhere is
rolled back and forwarded. Scores (Sec. VI-A of the paper):

- **tetris**: multi-resource packing that follows locality. 2 if the group's server already holds
  a task of this job, plus the mean of the group's GPU and CPU fill fractions after placing the task
  (best fit: the fullest group that still fits). Jobs are packed onto as few servers as possible.
- **lb** (load balancing): the server load, the mean over its groups of (used GPUs / GPUs + used
  CPU / CPU capacity + PCIe traffic / PCIe bandwidth) / 3; least loaded server first, then least
  loaded group.
- **lif** (least interference first): the interference model's total slowdown of all tasks on the
  group's server after placing the task (the unclipped model, summed exactly from per-group sums);
  least first. Uses the simulator's coefficients.
- **random**: uniform among the feasible groups.
- **opt**: the batch of one scheduler at once, by simulated annealing over task-to-group moves
  (:class:`OptPolicy`): minimises the predicted iteration time of the batch's jobs over their ideal
  one (interference model for compute, shared-bandwidth paths for communication) plus the added
  slowdown of the tasks already running on the servers it touches. Starts from the LIF plan.
"""

from __future__ import annotations

import math

import numpy as np

from placement.interference import _kernels as sim_kern
from placement.interference import profiles
from tjap._jit import njit
from tjap.errors import InvalidInputError, UnknownMethodError

TETRIS, LB, LIF, RANDOM = 0, 1, 2, 3
_CODES = {"tetris": TETRIS, "lb": LB, "lif": LIF, "random": RANDOM}
PCIE_REF_GBPS = 128.0


@njit
def _server_interference(s, g_add, cpu_add, pcie_add, exp_add, cpu_used, pcie_used, tasks,
                         exp_sum, server_tasks, group_cores, server_first_group, server_groups,
                         coef):
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
        total += (coef[0] * math.exp(coef[1] * (cpu_h + over)) * exp_h
                  + n_h * (coef[3] + coef[6]) + coef[4] * (n_h - 1) * pcie_h + coef[5] * pcie_h)
    return total


@njit
def _place_job(policy, candidates, gpu_need, cpu_need, pcie_need, exp_need, gpu_free, cpu_used,
               pcie_used, tasks, exp_sum, server_tasks, group_server, group_gpus, cpu_capacity,
               group_cores, server_first_group, server_groups, coef, mark, rand, out):
    """Place a job's tasks one by one on ``candidates`` by ``policy``, updating the state arrays;
    returns True, or False with every change undone."""
    n_tasks = gpu_need.shape[0]
    placed = 0
    for t in range(n_tasks):
        best, best_score, feasible = -1, -np.inf, 0
        if policy == 3:
            for g in candidates:
                if gpu_free[g] >= gpu_need[t] and cpu_used[g] + cpu_need[t] <= cpu_capacity[g] + 1e-9:
                    feasible += 1
            pick = int(rand[t] * feasible)
            feasible = 0
        for g in candidates:
            if gpu_free[g] < gpu_need[t] or cpu_used[g] + cpu_need[t] > cpu_capacity[g] + 1e-9:
                continue
            s = group_server[g]
            if policy == 0:
                fill = ((group_gpus[g] - gpu_free[g] + gpu_need[t]) / group_gpus[g]
                        + (cpu_used[g] + cpu_need[t]) / cpu_capacity[g]) / 2.0
                score = 2.0 * mark[s] + fill
            elif policy == 1:
                load, own = 0.0, 0.0
                for h in range(server_first_group[s], server_first_group[s] + server_groups[s]):
                    lh = ((group_gpus[h] - gpu_free[h]) / group_gpus[h]
                          + cpu_used[h] / cpu_capacity[h] + pcie_used[h] / 128.0) / 3.0
                    load += lh
                    if h == g:
                        own = lh
                score = -(load / server_groups[s] + 1e-3 * own)
            elif policy == 2:
                score = -_server_interference(s, g, cpu_need[t], pcie_need[t], exp_need[t],
                                              cpu_used, pcie_used, tasks, exp_sum, server_tasks,
                                              group_cores, server_first_group, server_groups, coef)
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
        gpu_free[best] -= gpu_need[t]
        cpu_used[best] += cpu_need[t]
        pcie_used[best] += pcie_need[t]
        exp_sum[best] += exp_need[t]
        tasks[best] += 1
        server_tasks[group_server[best]] += 1
        mark[group_server[best]] = 1
        placed += 1
    for t in range(placed):
        mark[group_server[out[t]]] = 0
    if placed == n_tasks:
        return True
    for t in range(placed):
        g = out[t]
        gpu_free[g] += gpu_need[t]
        cpu_used[g] -= cpu_need[t]
        pcie_used[g] -= pcie_need[t]
        exp_sum[g] -= exp_need[t]
        tasks[g] -= 1
        server_tasks[group_server[g]] -= 1
    return False


class Scratch:
    """Copies of the simulator's per-group state that a policy updates while it plans a batch."""

    def __init__(self, sim):
        self.gpu_free = sim.gpu_free.copy()
        self.cpu_used = sim.cpu_used.copy()
        self.pcie_used = sim.pcie_used.copy()
        self.tasks = sim.tasks.copy()
        self.exp_sum = sim.exp_sum.copy()
        self.server_tasks = sim.server_tasks.copy()


class TaskPolicy:
    """One of the per-task heuristics (``tetris``, ``lb``, ``lif``, ``random``)."""

    def __init__(self, name: str):
        if name not in _CODES:
            raise UnknownMethodError(f"unknown per-task heuristic {name!r}; choose one of "
                                     f"{', '.join(_CODES)}")
        self.name, self.code = name, _CODES[name]

    def reset(self, sim, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self._mark = np.zeros(sim.cluster.num_servers, np.int64)

    def place(self, sim, partition: int, jobs) -> list:
        c = sim.cluster
        scratch = Scratch(sim)
        candidates = c.partition_groups[partition]
        plans = []
        for job in jobs:
            lo, hi = sim.task_ptr[job], sim.task_ptr[job + 1]
            out = np.empty(hi - lo, np.int64)
            rand = self.rng.random(hi - lo) if self.code == RANDOM else _NO_RAND
            ok = _place_job(self.code, candidates, sim.task_worker[lo:hi].astype(np.int64),
                            sim.task_cpu[lo:hi], sim.task_pcie[lo:hi], sim.task_exp[lo:hi],
                            scratch.gpu_free, scratch.cpu_used, scratch.pcie_used, scratch.tasks,
                            scratch.exp_sum, scratch.server_tasks, c.group_server, c.group_gpus,
                            sim.cpu_capacity, c.group_cores, c.server_first_group,
                            c.server_groups, sim.coef, self._mark, rand, out)
            plans.append(out if ok else None)
        return plans


_NO_RAND = np.zeros(64)


def make_policy(name: str, **options):
    """A fresh policy by name (options go to its constructor)."""
    if name in _CODES:
        if options:
            raise InvalidInputError(f"policy {name} takes no options, got {sorted(options)}")
        return TaskPolicy(name)
    if name == "opt":
        return OptPolicy(**options)
    if name == "marl":   # the learned schedulers (needs torch); options: weights=PATH
        from learned.interference.policy import MarlPolicy

        unknown = set(options) - {"weights"}
        if unknown:
            raise InvalidInputError(f"policy marl takes only weights=PATH, got {sorted(unknown)}")
        return MarlPolicy(**options)
    raise UnknownMethodError(f"unknown interference policy {name!r}; choose one of "
                             f"{', '.join(POLICIES)}")


#: Policy names of :func:`make_policy`.
POLICIES = ("tetris", "lb", "lif", "random", "opt", "marl")


@njit
def _batch_objective(n_jobs, job_model, job_workers, job_ps, bt_ptr, bt_group, bt_cpu, bt_pcie,
                     bt_flow_ptr, flow_links, flow_len, link_flows, link_gbps, cpu_used,
                     pcie_used, tasks, exp_sum, server_tasks, group_server, group_cores,
                     server_first_group, server_groups, iter_s, grad_gbit, coef, mark):
    """Sum over the batch's jobs of predicted iteration time over ideal compute time, plus the
    total (unclipped) interference of the servers the batch uses."""
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
            sd = sim_kern.slowdown(bt_cpu[t], bt_pcie[t], cpu_used[g] - bt_cpu[t], over,
                                   pcie_used[g] - bt_pcie[t], server_tasks[s] <= 1, coef)
            if sd > worst:
                worst = sd
        comm = sim_kern.comm_time(grad_gbit[m] / job_ps[j], bt_flow_ptr[j], bt_flow_ptr[j + 1],
                                  flow_len, flow_links, link_gbps, link_flows)
        total += 1.0 + worst + comm / iter_s[m]
    for t in range(bt_ptr[n_jobs]):
        s = group_server[bt_group[t]]
        if mark[s] == 0:
            mark[s] = 1
            total += _server_interference(s, -1, 0.0, 0.0, 0.0, cpu_used, pcie_used, tasks,
                                          exp_sum, server_tasks, group_cores,
                                          server_first_group, server_groups, coef)
    for t in range(bt_ptr[n_jobs]):
        mark[group_server[bt_group[t]]] = 0
    return total


@njit
def _move_task(t, g_new, bt_group, bt_gpu, bt_cpu, bt_pcie, bt_exp, gpu_free, cpu_used,
               pcie_used, tasks, exp_sum, server_tasks, group_server):
    g = bt_group[t]
    gpu_free[g] += bt_gpu[t]
    cpu_used[g] -= bt_cpu[t]
    pcie_used[g] -= bt_pcie[t]
    exp_sum[g] -= bt_exp[t]
    tasks[g] -= 1
    server_tasks[group_server[g]] -= 1
    gpu_free[g_new] -= bt_gpu[t]
    cpu_used[g_new] += bt_cpu[t]
    pcie_used[g_new] += bt_pcie[t]
    exp_sum[g_new] += bt_exp[t]
    tasks[g_new] += 1
    server_tasks[group_server[g_new]] += 1
    bt_group[t] = g_new


@njit
def _anneal_batch(seed, iterations, t_start, t_end, candidates, n_jobs, job_model, job_workers,
                  job_ps, bt_job, bt_ptr, bt_group, bt_gpu, bt_cpu, bt_pcie, bt_exp, bt_flow_ptr,
                  flow_links, flow_len, link_flows, link_gbps, gpu_free, cpu_used, pcie_used,
                  tasks, exp_sum, server_tasks, group_server, group_cores, cpu_capacity,
                  server_first_group, server_groups, iter_s, grad_gbit, coef, mark, num_groups,
                  kind, server_tor, nic_link, tor_path, tor_path_len, bcube_n, bcube_levels,
                  port_base):
    """Simulated annealing over moves of one batch task to another feasible group of
    ``candidates``; leaves the best plan found in ``bt_group`` (and the state arrays in line with
    it). Returns (initial objective, best objective, accepted moves)."""
    np.random.seed(seed)
    n_tasks = bt_ptr[n_jobs]
    current = _batch_objective(n_jobs, job_model, job_workers, job_ps, bt_ptr, bt_group, bt_cpu,
                               bt_pcie, bt_flow_ptr, flow_links, flow_len, link_flows, link_gbps,
                               cpu_used, pcie_used, tasks, exp_sum, server_tasks, group_server,
                               group_cores, server_first_group, server_groups, iter_s, grad_gbit,
                               coef, mark)
    initial, best = current, current
    best_group = bt_group.copy()
    accepted = 0
    saved_links = np.empty((16, flow_links.shape[1]), np.int64)
    saved_len = np.empty(16, np.int64)
    for it in range(iterations):
        temp = t_start * (t_end / t_start) ** (it / max(iterations - 1, 1))
        t = np.random.randint(n_tasks)
        g_new = candidates[np.random.randint(candidates.shape[0])]
        g_old = bt_group[t]
        if g_new == g_old or gpu_free[g_new] < bt_gpu[t] \
                or cpu_used[g_new] + bt_cpu[t] > cpu_capacity[g_new] + 1e-9:
            continue
        j = bt_job[t]
        f0, nf = bt_flow_ptr[j], bt_flow_ptr[j + 1] - bt_flow_ptr[j]
        sim_kern.add_flows(flow_links, flow_len, f0, nf, link_flows, -1)
        for f in range(nf):
            saved_len[f] = flow_len[f0 + f]
            saved_links[f] = flow_links[f0 + f]
        _move_task(t, g_new, bt_group, bt_gpu, bt_cpu, bt_pcie, bt_exp, gpu_free, cpu_used,
                   pcie_used, tasks, exp_sum, server_tasks, group_server)
        sim_kern.fill_job_flows(bt_group[bt_ptr[j]:bt_ptr[j + 1]], job_workers[j], job_ps[j],
                                group_server, num_groups, kind, server_tor, nic_link, tor_path,
                                tor_path_len, bcube_n, bcube_levels, port_base, flow_links,
                                flow_len, f0)
        sim_kern.add_flows(flow_links, flow_len, f0, nf, link_flows, 1)
        value = _batch_objective(n_jobs, job_model, job_workers, job_ps, bt_ptr, bt_group,
                                 bt_cpu, bt_pcie, bt_flow_ptr, flow_links, flow_len, link_flows,
                                 link_gbps, cpu_used, pcie_used, tasks, exp_sum, server_tasks,
                                 group_server, group_cores, server_first_group, server_groups,
                                 iter_s, grad_gbit, coef, mark)
        if value <= current or np.random.random() < math.exp((current - value) / temp):
            current = value
            accepted += 1
            if value < best - 1e-12:
                best = value
                best_group[:] = bt_group
        else:
            sim_kern.add_flows(flow_links, flow_len, f0, nf, link_flows, -1)
            _move_task(t, g_old, bt_group, bt_gpu, bt_cpu, bt_pcie, bt_exp, gpu_free, cpu_used,
                       pcie_used, tasks, exp_sum, server_tasks, group_server)
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

    def __init__(self, iterations: int = 2000, t_start: float = 0.5, t_end: float = 0.005,
                 start: str = "tetris"):
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) \
                or not 0 <= iterations <= 10**7:
            raise InvalidInputError(f"opt iterations must be an integer in [0, 1e7], got "
                                    f"{iterations!r}")
        for name, value in (("t_start", t_start), ("t_end", t_end)):
            if not isinstance(value, (int, float)) or not value > 0:
                raise InvalidInputError(f"opt {name} must be a positive number, got {value!r}")
        if start not in _CODES:
            raise InvalidInputError(f"opt start must be one of {', '.join(_CODES)}, got {start!r}")
        self.iterations, self.t_start, self.t_end = int(iterations), float(t_start), float(t_end)
        self.start = TaskPolicy(start)

    def reset(self, sim, seed: int) -> None:
        self.start.reset(sim, seed)
        self.rng = np.random.default_rng(seed)
        self._mark = np.zeros(sim.cluster.num_servers, np.int64)
        self.stats = {"batches": 0, "objective_start": 0.0, "objective_best": 0.0}

    def place(self, sim, partition: int, jobs) -> list:
        plans = self.start.place(sim, partition, jobs)
        chosen = [i for i, plan in enumerate(plans) if plan is not None]
        if not chosen or self.iterations == 0:
            return plans
        c, w = sim.cluster, sim.workload
        ids = np.array([jobs[i] for i in chosen], np.int64)
        workers, ps = w.workers[ids], w.ps[ids]
        bt_ptr = np.concatenate([[0], np.cumsum(workers + ps)]).astype(np.int64)
        bt_flow_ptr = np.concatenate([[0], np.cumsum(workers * ps)]).astype(np.int64)
        task_index = np.concatenate([np.arange(sim.task_ptr[j], sim.task_ptr[j + 1]) for j in ids])
        bt_group = np.concatenate([plans[i] for i in chosen]).astype(np.int64)
        bt_job = np.repeat(np.arange(len(ids)), workers + ps)
        bt_gpu = sim.task_worker[task_index].astype(np.int64)
        bt_cpu, bt_pcie, bt_exp = (sim.task_cpu[task_index], sim.task_pcie[task_index],
                                   sim.task_exp[task_index])
        scratch = Scratch(sim)
        for t, g in enumerate(bt_group):   # the state with the whole batch placed
            scratch.gpu_free[g] -= bt_gpu[t]
            scratch.cpu_used[g] += bt_cpu[t]
            scratch.pcie_used[g] += bt_pcie[t]
            scratch.exp_sum[g] += bt_exp[t]
            scratch.tasks[g] += 1
            scratch.server_tasks[c.group_server[g]] += 1
        flow_links = np.full((bt_flow_ptr[-1], c.max_path_len), -1, np.int64)
        flow_len = np.zeros(bt_flow_ptr[-1], np.int64)
        link_flows = sim.link_flows.copy()
        for j in range(len(ids)):
            sim_kern.fill_job_flows(bt_group[bt_ptr[j]:bt_ptr[j + 1]], int(workers[j]),
                                    int(ps[j]), *c.path_arrays(), flow_links, flow_len,
                                    int(bt_flow_ptr[j]))
        sim_kern.add_flows(flow_links, flow_len, 0, int(bt_flow_ptr[-1]), link_flows, 1)
        initial, best, _ = _anneal_batch(
            int(self.rng.integers(2**31)), self.iterations, self.t_start, self.t_end,
            c.partition_groups[partition], len(ids), w.model[ids], workers, ps, bt_job, bt_ptr,
            bt_group, bt_gpu, bt_cpu, bt_pcie, bt_exp, bt_flow_ptr, flow_links, flow_len,
            link_flows, c.link_gbps, scratch.gpu_free, scratch.cpu_used, scratch.pcie_used,
            scratch.tasks, scratch.exp_sum, scratch.server_tasks, c.group_server, c.group_cores,
            sim.cpu_capacity, c.server_first_group, c.server_groups, profiles.ITER_S,
            profiles.GRAD_MB * 8e-3, sim.coef, self._mark, *c.path_arrays()[1:])
        self.stats["batches"] += 1
        self.stats["objective_start"] += initial
        self.stats["objective_best"] += best
        for k, i in enumerate(chosen):
            plans[i] = bt_group[bt_ptr[k]:bt_ptr[k + 1]].copy()
        return plans
