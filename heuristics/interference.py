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
  (:class:`OptPolicy`): minimises the sum over the partition's jobs, the batch's and the running
  ones, of their predicted iteration time over their ideal one (the slowest worker's slowdown by
  the interference model, the slowest flow at the shared link bandwidths), so the slowdown and the
  bandwidth the batch takes from running jobs count. Starts from Tetris's plans (or another
  rule's, ``start``).
- **whole** (ours, an extra baseline; not in the paper): each job whole on one server when one of
  the partition holds it, at the server and socket split of least predicted cost (its own
  predicted iteration time over ideal, plus the slowdown and transfer time it adds to the jobs
  already there); Tetris's per-task placement otherwise (:class:`WholeJobPolicy`).
"""

from __future__ import annotations

import math

import numpy as np

from placement.interference import _kernels as sim_kern
from placement.interference import profiles
from tjap._jit import njit, njit_inline
from tjap.errors import InvalidInputError, UnknownMethodError

TETRIS, LB, LIF, RANDOM = 0, 1, 2, 3
_CODES = {"tetris": TETRIS, "lb": LB, "lif": LIF, "random": RANDOM}
PCIE_REF_GBPS = 128.0



@njit_inline
def _occupy(g, sign, gpu, cpu, pcie, exp, gpu_free, cpu_used, pcie_used, exp_sum, tasks,
            server_tasks, group_server):
    """Put one task on GPU group ``g`` (sign +1) or take it off (sign -1)."""
    gpu_free[g] -= sign * gpu
    cpu_used[g] += sign * cpu
    pcie_used[g] += sign * pcie
    exp_sum[g] += sign * exp
    tasks[g] += sign
    server_tasks[group_server[g]] += sign

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
        _occupy(best, 1, gpu_need[t], cpu_need[t], pcie_need[t], exp_need[t], gpu_free,
                cpu_used, pcie_used, exp_sum, tasks, server_tasks, group_server)
        mark[group_server[best]] = 1
        placed += 1
    for t in range(placed):
        mark[group_server[out[t]]] = 0
    if placed == n_tasks:
        return True
    for t in range(placed):
        _occupy(out[t], -1, gpu_need[t], cpu_need[t], pcie_need[t], exp_need[t], gpu_free,
                cpu_used, pcie_used, exp_sum, tasks, server_tasks, group_server)
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
        scratch = Scratch(sim)
        return [self.place_on(sim, scratch, partition, job) for job in jobs]

    def place_on(self, sim, scratch: Scratch, partition: int, job: int):
        """One job's plan on ``partition`` given the ``scratch`` state (updated when it fits),
        or None."""
        c = sim.cluster
        lo, hi = sim.task_ptr[job], sim.task_ptr[job + 1]
        out = np.empty(hi - lo, np.int64)
        rand = self.rng.random(hi - lo) if self.code == RANDOM else _NO_RAND
        ok = _place_job(self.code, c.partition_groups[partition],
                        sim.task_worker[lo:hi].astype(np.int64), sim.task_cpu[lo:hi],
                        sim.task_pcie[lo:hi], sim.task_exp[lo:hi], scratch.gpu_free,
                        scratch.cpu_used, scratch.pcie_used, scratch.tasks, scratch.exp_sum,
                        scratch.server_tasks, c.group_server, c.group_gpus, sim.cpu_capacity,
                        c.group_cores, c.server_first_group, c.server_groups, sim.coef,
                        self._mark, rand, out)
        return out if ok else None


_NO_RAND = np.zeros(64)


def make_policy(name: str, **options):
    """A fresh policy by name (options go to its constructor)."""
    if name in _CODES:
        if options:
            raise InvalidInputError(f"policy {name} takes no options, got {sorted(options)}")
        return TaskPolicy(name)
    if name == "opt":
        return OptPolicy(**options)
    if name == "whole":
        if options:
            raise InvalidInputError(f"policy whole takes no options, got {sorted(options)}")
        return WholeJobPolicy()
    if name in ("marl", "single", "marl-server"):   # the learned schedulers (torch); weights=PATH
        from learned.interference.policy import MarlPolicy, ServerLevelPolicy, SingleAgentPolicy

        unknown = set(options) - {"weights"}
        if unknown:
            raise InvalidInputError(f"policy {name} takes only weights=PATH, got "
                                    f"{sorted(unknown)}")
        return {"marl": MarlPolicy, "single": SingleAgentPolicy,
                "marl-server": ServerLevelPolicy}[name](**options)
    raise UnknownMethodError(f"unknown interference policy {name!r}; choose one of "
                             f"{', '.join(POLICIES)}")


#: Policy names of :func:`make_policy`.
POLICIES = ("tetris", "lb", "lif", "random", "opt", "whole", "marl", "single", "marl-server")


@njit
def _batch_objective(n_jobs, job_model, job_workers, job_ps, bt_ptr, bt_group, bt_cpu, bt_pcie,
                     bt_flow_ptr, flow_links, flow_len, link_flows, link_gbps, cpu_used,
                     pcie_used, tasks, exp_sum, server_tasks, group_server, group_cores,
                     server_first_group, server_groups, iter_s, grad_gbit, coef,
                     nb_jobs, nb_flow_ptr, nb_flow_links, nb_flow_len, job_volume, job_iter_s,
                     nb_task_ptr, nb_task_group, nb_task_cpu, nb_task_pcie, nb_workers):
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
            sd = sim_kern.slowdown(bt_cpu[t], bt_pcie[t], cpu_used[g] - bt_cpu[t], over,
                                   pcie_used[g] - bt_pcie[t], server_tasks[s] <= 1, coef)
            if sd > worst:
                worst = sd
        comm = sim_kern.comm_time(grad_gbit[m] / job_ps[j], bt_flow_ptr[j], bt_flow_ptr[j + 1],
                                  flow_len, flow_links, link_gbps, link_flows)
        total += 1.0 + worst + comm / iter_s[m]
    for j in nb_jobs:   # running jobs: their slowest worker's slowdown with the batch placed
        worst = 0.0
        for t in range(nb_task_ptr[j], nb_task_ptr[j] + nb_workers[j]):
            sd = sim_kern.task_slowdown(t, nb_task_group, nb_task_cpu, nb_task_pcie,
                                        group_server, server_first_group, server_groups,
                                        group_cores, cpu_used, pcie_used, server_tasks, coef)
            if sd > worst:
                worst = sd
        total += worst
    if nb_jobs.shape[0]:
        total += _jobs_comm(nb_jobs, nb_flow_ptr, nb_flow_links, nb_flow_len, job_volume,
                            job_iter_s, link_gbps, link_flows)
    return total


@njit
def _move_task(t, g_new, bt_group, bt_gpu, bt_cpu, bt_pcie, bt_exp, gpu_free, cpu_used,
               pcie_used, tasks, exp_sum, server_tasks, group_server):
    for g, sign in ((bt_group[t], -1), (g_new, 1)):
        _occupy(g, sign, bt_gpu[t], bt_cpu[t], bt_pcie[t], bt_exp[t], gpu_free, cpu_used,
                pcie_used, exp_sum, tasks, server_tasks, group_server)
    bt_group[t] = g_new


@njit
def _anneal_batch(seed, iterations, t_start, t_end, candidates, n_jobs, job_model, job_workers,
                  job_ps, bt_job, bt_ptr, bt_group, bt_gpu, bt_cpu, bt_pcie, bt_exp, bt_flow_ptr,
                  flow_links, flow_len, link_flows, link_gbps, gpu_free, cpu_used, pcie_used,
                  tasks, exp_sum, server_tasks, group_server, group_cores, cpu_capacity,
                  server_first_group, server_groups, iter_s, grad_gbit, coef, num_groups,
                  kind, server_tor, nic_link, tor_path, tor_path_len, bcube_n, bcube_levels,
                  port_base, nb_jobs, nb_flow_ptr, nb_flow_links, nb_flow_len, job_volume,
                  job_iter_s, nb_task_ptr, nb_task_group, nb_task_cpu, nb_task_pcie, nb_workers):
    """Simulated annealing over moves of one batch task to another feasible group of
    ``candidates``; leaves the best plan found in ``bt_group`` (and the state arrays in line with
    it). Returns (initial objective, best objective, accepted moves)."""
    np.random.seed(seed)
    n_tasks = bt_ptr[n_jobs]
    current = _batch_objective(n_jobs, job_model, job_workers, job_ps, bt_ptr, bt_group, bt_cpu,
                               bt_pcie, bt_flow_ptr, flow_links, flow_len, link_flows, link_gbps,
                               cpu_used, pcie_used, tasks, exp_sum, server_tasks, group_server,
                               group_cores, server_first_group, server_groups, iter_s, grad_gbit,
                               coef, nb_jobs, nb_flow_ptr,
                               nb_flow_links, nb_flow_len, job_volume, job_iter_s,
                                 nb_task_ptr, nb_task_group, nb_task_cpu, nb_task_pcie, nb_workers)
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
                                 iter_s, grad_gbit, coef, nb_jobs, nb_flow_ptr,
                                 nb_flow_links, nb_flow_len, job_volume, job_iter_s,
                                 nb_task_ptr, nb_task_group, nb_task_cpu, nb_task_pcie, nb_workers)
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
        if start not in _CODES and start != "whole":
            raise InvalidInputError(f"opt start must be one of {', '.join(_CODES)}, whole; got "
                                    f"{start!r}")
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
        return (np.unique(nb_jobs), sim.flow_ptr, sim.flow_links, sim.flow_len,
                profiles.GRAD_MB[w.model] * 8e-3 / w.ps, profiles.ITER_S[w.model], sim.task_ptr,
                sim.task_group, sim.task_cpu, sim.task_pcie, w.workers)

    def _batch(self, sim, partition: int, ids: np.ndarray, bt_group: np.ndarray) -> dict:
        """Arrays of the batch ``ids`` planned on ``bt_group`` (their tasks, in order): its
        tasks, its flows, and the scratch state with the whole batch placed."""
        c, w = sim.cluster, sim.workload
        workers, ps = w.workers[ids], w.ps[ids]
        bt_ptr = np.concatenate([[0], np.cumsum(workers + ps)]).astype(np.int64)
        bt_flow_ptr = np.concatenate([[0], np.cumsum(workers * ps)]).astype(np.int64)
        task_index = np.concatenate([np.arange(sim.task_ptr[j], sim.task_ptr[j + 1]) for j in ids])
        bt_gpu = sim.task_worker[task_index].astype(np.int64)
        bt_cpu, bt_pcie, bt_exp = (sim.task_cpu[task_index], sim.task_pcie[task_index],
                                   sim.task_exp[task_index])
        scratch = Scratch(sim)
        _commit_scratch(scratch, c, bt_group, bt_gpu, bt_cpu, bt_pcie, bt_exp)
        flow_links = np.full((bt_flow_ptr[-1], c.max_path_len), -1, np.int64)
        flow_len = np.zeros(bt_flow_ptr[-1], np.int64)
        link_flows = sim.link_flows.copy()
        for j in range(len(ids)):
            sim_kern.fill_job_flows(bt_group[bt_ptr[j]:bt_ptr[j + 1]], int(workers[j]),
                                    int(ps[j]), *c.path_arrays(), flow_links, flow_len,
                                    int(bt_flow_ptr[j]))
        sim_kern.add_flows(flow_links, flow_len, 0, int(bt_flow_ptr[-1]), link_flows, 1)
        return {"workers": workers, "ps": ps, "bt_ptr": bt_ptr, "bt_flow_ptr": bt_flow_ptr,
                "bt_job": np.repeat(np.arange(len(ids)), workers + ps), "bt_gpu": bt_gpu,
                "bt_cpu": bt_cpu, "bt_pcie": bt_pcie, "bt_exp": bt_exp, "scratch": scratch,
                "flow_links": flow_links, "flow_len": flow_len, "link_flows": link_flows}

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
        return float(_batch_objective(
            len(ids), w.model[ids], b["workers"], b["ps"], b["bt_ptr"], bt_group, b["bt_cpu"],
            b["bt_pcie"], b["bt_flow_ptr"], b["flow_links"], b["flow_len"], b["link_flows"],
            c.link_gbps, sc.cpu_used, sc.pcie_used, sc.tasks, sc.exp_sum, sc.server_tasks,
            c.group_server, c.group_cores, c.server_first_group, c.server_groups,
            profiles.ITER_S, profiles.GRAD_MB * 8e-3, sim.coef, *nb))

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
            int(self.rng.integers(2**31)), self.iterations, self.t_start, self.t_end,
            c.partition_groups[partition], len(ids), w.model[ids], b["workers"], b["ps"],
            b["bt_job"], b["bt_ptr"], bt_group, b["bt_gpu"], b["bt_cpu"], b["bt_pcie"],
            b["bt_exp"], b["bt_flow_ptr"], b["flow_links"], b["flow_len"], b["link_flows"],
            c.link_gbps, sc.gpu_free, sc.cpu_used, sc.pcie_used, sc.tasks, sc.exp_sum,
            sc.server_tasks, c.group_server, c.group_cores, sim.cpu_capacity,
            c.server_first_group, c.server_groups, profiles.ITER_S, profiles.GRAD_MB * 8e-3,
            sim.coef, *c.path_arrays()[1:], *self._neighbours(sim, partition))
        self.stats["batches"] += 1
        self.stats["objective_start"] += initial
        self.stats["objective_best"] += best
        bt_ptr = b["bt_ptr"]
        for k, i in enumerate(chosen):
            plans[i] = bt_group[bt_ptr[k]:bt_ptr[k + 1]].copy()
        return plans


# -- whole: a job's tasks on one server, the server and socket split of least predicted cost ------
@njit
def _jobs_comm(jobs, flow_ptr, flow_links, flow_len, job_volume, job_iter_s, link_gbps,
               link_flows):
    """Sum over ``jobs`` of their slowest flow's transfer time over their ideal iteration time,
    with the link shares of ``link_flows``."""
    total = 0.0
    for j in jobs:
        total += sim_kern.comm_time(job_volume[j], flow_ptr[j], flow_ptr[j + 1], flow_len,
                                    flow_links, link_gbps, link_flows) / job_iter_s[j]
    return total


@njit
def _split_cost(s, a, b, W, P, cw, pw, ew, cps, eps, volume, iter_s, gpu_free, cpu_used,
                pcie_used, tasks, exp_sum, server_tasks, group_cores, cpu_capacity,
                server_first_group, server_groups, num_groups, link_gbps, link_flows, coef,
                nb_jobs, flow_ptr, flow_links, flow_len, job_volume, job_iter_s):
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
            sd = sim_kern.slowdown(cw, pw, cpu_after[i] - cw, over_after[i], pcie_after[i] - pw,
                                   alone_after, coef)
            if sd > worst:
                worst = sd
    # co-runners' added interference (the unclipped model, as lif and opt count it)
    others = 0.0
    if server_tasks[s] > 0:
        for i in range(ng):
            g = g0 + i
            if tasks[g] == 0:
                continue
            after = (coef[0] * math.exp(coef[1] * (cpu_after[i] + over_after[i])) * exp_sum[g]
                     + coef[4] * (tasks[g] * pcie_after[i] - pcie_used[g]))
            before = 0.0
            if server_tasks[s] > 1:
                before = (coef[0] * math.exp(coef[1] * (cpu_used[g] + over_before[i])) * exp_sum[g]
                          + coef[4] * (tasks[g] - 1) * pcie_used[g])
            else:   # it ran alone: no slowdown before, the whole model after
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
        before_comm = _jobs_comm(nb_jobs, flow_ptr, flow_links, flow_len, job_volume, job_iter_s,
                                 link_gbps, link_flows)
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
        share = min(link_gbps[g0] / link_flows[g0], link_gbps[g1] / link_flows[g1],
                    link_gbps[qpi] / link_flows[qpi])
        comm = max(comm, volume / share)
    after_comm = 0.0
    if nb_jobs.shape[0]:
        after_comm = _jobs_comm(nb_jobs, flow_ptr, flow_links, flow_len, job_volume, job_iter_s,
                                link_gbps, link_flows)
    link_flows[g0] -= add0
    if two:
        link_flows[g1] -= add1
        link_flows[qpi] -= addq
    return 1.0 + worst + comm / iter_s + others + (after_comm - before_comm)


@njit
def _whole_best(servers, W, P, cw, pw, ew, cps, eps, volume, iter_s, gpu_free, cpu_used,
                pcie_used, tasks, exp_sum, server_tasks, group_cores, cpu_capacity,
                server_first_group, server_groups, num_groups, link_gbps, link_flows, coef,
                nb_ptr, nb_jobs, flow_ptr, flow_links, flow_len, job_volume, job_iter_s):
    """(server, a, b, cost) of least :func:`_split_cost` over ``servers`` (ties: the first
    server, then the most workers and PSs on its first group); server -1 when the job fits whole
    on none. Empty servers of one shape are alike: only the first is scored."""
    best_s, best_a, best_b, best = -1, 0, 0, np.inf
    ref = -1
    for i in range(servers.shape[0]):
        s = servers[i]
        if server_tasks[s] == 0:
            g0, r0 = server_first_group[s], server_first_group[ref]
            if ref >= 0 and server_groups[s] == server_groups[ref] \
                    and gpu_free[g0] == gpu_free[r0] and group_cores[g0] == group_cores[r0]:
                continue
            if ref < 0:
                ref = s
        nb = nb_jobs[nb_ptr[i]:nb_ptr[i + 1]]
        for a in range(W, -1, -1):
            for b in range(P, -1, -1):
                cost = _split_cost(s, a, b, W, P, cw, pw, ew, cps, eps, volume, iter_s, gpu_free,
                                   cpu_used, pcie_used, tasks, exp_sum, server_tasks, group_cores,
                                   cpu_capacity, server_first_group, server_groups, num_groups,
                                   link_gbps, link_flows, coef, nb, flow_ptr, flow_links,
                                   flow_len, job_volume, job_iter_s)
                if cost < best - 1e-12:
                    best_s, best_a, best_b, best = s, a, b, cost
    return best_s, best_a, best_b, best


def running_jobs_by_server(sim, servers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (ptr, jobs) of the running jobs with a task on each of ``servers``."""
    from placement.interference.simulator import RUNNING

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


class WholeJobPolicy:
    """``whole``: each job on one server when one of the partition holds it (every task), at the
    server and socket split of least predicted cost (:func:`_split_cost`: the job's own predicted
    iteration time over its ideal one, plus the slowdown and the transfer time it adds to the jobs
    already there, the latter from the bandwidth its flows take on the server's PCIe and QPI
    links); a job no server holds whole is placed task by task as Tetris does. Ours, not the
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
            s, a, b, _ = _whole_best(servers, W, P, cw, pw, ew, cps, eps, self._volume[job],
                                     self._iter_s[job], scratch.gpu_free, scratch.cpu_used,
                                     scratch.pcie_used, scratch.tasks, scratch.exp_sum,
                                     scratch.server_tasks, c.group_cores, sim.cpu_capacity,
                                     c.server_first_group, c.server_groups, c.num_groups,
                                     c.link_gbps, link_flows, sim.coef, nb_ptr, nb_jobs,
                                     sim.flow_ptr, sim.flow_links, sim.flow_len, self._volume,
                                     self._iter_s)
            if s >= 0:
                g0 = c.server_first_group[s]
                g1 = g0 + 1 if c.server_groups[s] == 2 else g0
                plan = np.array([g0] * a + [g1] * (W - a) + [g0] * b + [g1] * (P - b), np.int64)
                _commit_scratch(scratch, c, plan, sim.task_worker[lo:hi], sim.task_cpu[lo:hi],
                                sim.task_pcie[lo:hi], sim.task_exp[lo:hi])
                self.stats["whole"] += 1
            else:   # Tetris, task by task (it updates the scratch state itself)
                plan = self.fallback.place_on(sim, scratch, partition, job)
                if plan is None:
                    plans.append(None)
                    continue
                self.stats["split"] += 1
            _add_plan_flows(c, plan, W, P, link_flows)
            plans.append(plan)
        return plans


def _commit_scratch(scratch, cluster, plan, gpu, cpu, pcie, exp) -> None:
    np.subtract.at(scratch.gpu_free, plan, gpu.astype(np.int64))
    np.add.at(scratch.cpu_used, plan, cpu)
    np.add.at(scratch.pcie_used, plan, pcie)
    np.add.at(scratch.exp_sum, plan, exp)
    np.add.at(scratch.tasks, plan, 1)
    np.add.at(scratch.server_tasks, cluster.group_server[plan], 1)


def _add_plan_flows(cluster, plan, W, P, link_flows) -> None:
    links = np.full((W * P, cluster.max_path_len), -1, np.int64)
    length = np.zeros(W * P, np.int64)
    sim_kern.fill_job_flows(plan, W, P, *cluster.path_arrays(), links, length, 0)
    sim_kern.add_flows(links, length, 0, W * P, link_flows, 1)
