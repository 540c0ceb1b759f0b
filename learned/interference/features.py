"""What a partition's scheduler sees when it places one task (seed 001's learned schedulers).

A scheduler's partition is a graph (:class:`PartitionGraph`): its GPU groups (a group is one CPU
socket with its GPUs, so group nodes stand for the GPUs and the CPU together), its servers (the
QPI hub joining the sockets) and the switches its servers reach by their first two network tiers
(ToR and the pod's fused aggregation node on a fat-tree). Edges are the links between them, both
directions, with features ``log2(Gbps) / 8``, ``flows on the link / 8`` and a one-hot of the tier
(0 PCIe, 1 QPI, 2.. network tiers bottom-up).

The planning state (:class:`Planning`) is a scratch copy of the simulator's per-group arrays that
the scheduler updates as it places a job's tasks one by one (so the batch's later tasks see the
earlier ones), plus the partial plan of the current job. :func:`observe` turns it into the
observation of :class:`tjap.learned.interference.env.InterferenceEnv` (a dict of arrays, see ``NODE_FEATURES``,
``JOB_FEATURES``, ``PARTITION_FEATURES``). Group features include the two scores the heuristics
use (Tetris's locality + fill and the interference model's added slowdown of the server, computed
by one Numba kernel), so imitation of Tetris is learnable and interference is visible, and the
score of the ``whole`` rule (:class:`tjap.heuristics.interference.rules.WholeJobPolicy`):
``whole_ok`` whether some plan that keeps the job on one server (consistent with its tasks placed
so far) puts the current task on the group, ``whole_gap`` that plan's least predicted cost minus
the best group's (clipped to [0, 2]; 2 where no such plan exists).

Two levels (seed 001, Sec. VI "Server-level" / "Device-level"). ``level="device"`` (the default)
is the graph above: the action nodes are the GPU groups, so a scheduler picks the socket of each
task. ``level="server"`` drops the group nodes (and the group-server PCIe edges): the nodes are the
partition's servers, then the switches, and the action nodes are the servers; the task then goes
to a GPU group of the chosen server drawn uniformly at random among those that can take it
(:func:`choose_group`, from a generator the env and the simulator policy seed with the run's
seed). A server node's features aggregate its groups' device-level ones
(:data:`SERVER_AGGREGATES`).
"""

from __future__ import annotations

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.core.jit import njit
from tjap.placement.interference import profiles
from tjap.placement.interference.cluster import CLUSTER
from tjap.placement.interference.planning import (
    Scratch,
    add_plan_flows,
    running_jobs_by_server,
    server_interference,
    split_cost,
)

NODE_FEATURES = (
    "is_group",
    "is_server",
    "is_switch",
    "free_gpu",
    "cpu_used",
    "pcie_used",
    "tasks",
    "feasible",
    "job_on_server",
    "job_on_tor",
    "tetris_fill",
    "added_slowdown",
    "gpus",
    "job_tasks_on_server",
    "whole_ok",
    "whole_gap",
)
EDGE_FEATURES = ("log_gbps", "flows", "tier0", "tier1", "tier2", "tier3", "tier4")
JOB_FEATURES = (
    "is_worker",
    "cpu",
    "pcie",
    "grad",
    "workers",
    "ps",
    "placed",
    "left",
    "iter_s",
    "visited",
)
PARTITION_FEATURES = ("free_gpu", "cpu_used", "pcie_used", "queue", "visited")
MAX_TIER = 4
#: The "partition" of the single-agent variant: the whole cluster.
ALL = CLUSTER
#: What a scheduler picks: a GPU group ("device", the default) or a server ("server").
LEVELS = ("device", "server")
#: How a server node's features come from its groups' at ``level="server"`` (the device level's
#: server nodes already had ``free_gpu``, ``tasks``, ``job_on_server``, ``job_on_tor`` and
#: ``job_tasks_on_server``, computed the same way).
SERVER_AGGREGATES = {
    "is_server": "1 (there are no group nodes)",
    "free_gpu": "free GPUs of its groups summed over their GPUs summed",
    "cpu_used": "mean over its groups of CPU used / capacity",
    "pcie_used": "mean over its groups of PCIe used / 128 Gbps",
    "tasks": "tasks on the server / 16",
    "feasible": "1 when any of its groups can take the task",
    "tetris_fill": "the most Tetris fill over its feasible groups (0: none)",
    "added_slowdown": "the least added slowdown over its feasible groups (0: none)",
    "gpus": "GPUs of the server / 8",
    "whole_ok": "1 when the whole rule's plan may put the task on any of its groups",
    "whole_gap": "the least whole_gap over those groups (2: none)",
}


def check_level(level) -> str:
    """``level`` if it is one of :data:`LEVELS`, else a one-line error."""
    if level not in LEVELS:
        raise InvalidInputError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    return level


def partition_servers(cluster, p: int) -> np.ndarray:
    """Server ids of partition ``p`` (every server for :data:`ALL`)."""
    if p == ALL:
        return np.arange(cluster.num_servers)
    return np.flatnonzero(cluster.server_partition == p)


class PartitionGraph:
    """Static structure of partition ``p`` of ``cluster`` (:data:`ALL`: the whole cluster, for
    the single-agent variant): ``groups`` (global ids; the first nodes at ``level="device"``,
    no nodes at ``level="server"``), ``servers``, then the switches; ``edge_index`` (2, E) over
    local node ids and ``edge_link`` (E,) the cluster link of each directed edge. The first
    ``num_actions`` nodes are the action nodes (the groups, or the servers at server level);
    ``group_action`` (groups,) is the action of each group's node (itself, or its server's)."""

    def __init__(self, cluster, p: int, level: str = "device"):
        self.level = check_level(level)
        self.groups = np.asarray(
            cluster.partition_groups[p] if p != ALL else np.arange(cluster.num_groups), np.int64
        )
        self.servers = partition_servers(cluster, p)
        graph = cluster.graph
        device = level == "device"
        nodes = ([("group", int(g)) for g in self.groups] if device else []) + [
            ("server", int(s)) for s in self.servers
        ]
        index = {n: i for i, n in enumerate(nodes)}
        edges = []
        for g in self.groups if device else ():
            edges.append(
                (index[("group", int(g))], index[("server", int(cluster.group_server[g]))], int(g))
            )
        frontier = [("server", int(s)) for s in self.servers]
        for _ in range(2):  # the switches of the first two network tiers above the servers
            nxt = []
            for a in frontier:
                for b, data in graph[a].items():
                    if b[0] in ("server", "group") or data["tier"] > 3:
                        continue
                    if b not in index:
                        index[b] = len(nodes)
                        nodes.append(b)
                        nxt.append(b)
                    edges.append((index[a], index[b], int(data["link"])))
            frontier = nxt
        self.num_nodes = len(nodes)
        self.num_groups = len(self.groups)
        self.num_servers = len(self.servers)
        self.num_actions = self.num_groups if device else self.num_servers
        e = np.array(edges, np.int64).reshape(-1, 3)
        self.edge_index = np.concatenate([e[:, :2].T, e[:, 1::-1].T], axis=1)
        self.edge_link = np.concatenate([e[:, 2], e[:, 2]])
        self.node_server = np.full(self.num_nodes, -1, np.int64)
        first = self.num_groups if device else 0  # the first server node
        if device:
            self.node_server[:first] = cluster.group_server[self.groups]
        self.node_server[first : first + self.num_servers] = self.servers
        self.group_action = (
            np.arange(self.num_groups)
            if device
            else np.searchsorted(self.servers, cluster.group_server[self.groups])
        )
        if not device and not np.all(np.diff(self.group_action) >= 0):
            raise ValueError("a partition's groups must be ordered by server")
        # each server's first group in ``groups`` (its groups are contiguous there)
        self.server_group_start = (
            np.searchsorted(self.group_action, np.arange(self.num_servers)) if not device else None
        )
        gbps = cluster.link_gbps[self.edge_link]
        tier = cluster.link_tier[self.edge_link]
        self.edge_static = np.zeros((self.edge_index.shape[1], len(EDGE_FEATURES)), np.float32)
        self.edge_static[:, 0] = np.log2(gbps) / 8.0
        self.edge_static[np.arange(len(tier)), 2 + np.minimum(tier, MAX_TIER)] = 1.0


class Planning(Scratch):
    """Scratch per-group state of one ``place`` call (a
    :class:`~tjap.placement.interference.planning.Scratch` copy of the simulator's) and the partial
    plan of the job being placed."""

    def __init__(self, sim, partition: int | None = None, exclude=()):
        super().__init__(sim)
        self.server_job = np.zeros(sim.cluster.num_servers, np.int64)  # current job's tasks
        self.plan: list[int] = []
        self.link_flows = sim.link_flows.copy()  # with the flows of the jobs planned so far
        self.partition = partition
        if partition is not None:  # the running jobs of each server of the partition
            self.servers = partition_servers(sim.cluster, partition)
            self.nb_ptr, self.nb_jobs = running_jobs_by_server(sim, self.servers)
            if len(exclude):  # jobs of the same batch count as planned, not as running
                keep = ~np.isin(self.nb_jobs, np.asarray(exclude, np.int64))
                where = np.repeat(np.arange(len(self.servers)), np.diff(self.nb_ptr))[keep]
                self.nb_jobs = self.nb_jobs[keep]
                self.nb_ptr = np.concatenate(
                    [[0], np.cumsum(np.bincount(where, minlength=len(self.servers)))]
                ).astype(np.int64)
            w = sim.workload
            self.job_volume = profiles.GRAD_MB[w.model] * 8e-3 / w.ps
            self.job_iter_s = profiles.ITER_S[w.model]

    def start(self, sim, job: int) -> None:
        """Begin planning ``job`` (the previous job's tasks stay in the scratch state)."""
        c, w = sim.cluster, sim.workload
        if self.plan:
            self.server_job[c.group_server[self.plan]] = 0
            if self.done:  # the previous job was planned in full: its flows now share links
                add_plan_flows(
                    c,
                    np.array(self.plan, np.int64),
                    int(w.workers[self.job]),
                    int(w.ps[self.job]),
                    self.link_flows,
                )
        self.job, self.plan = job, []
        lo, hi = sim.task_ptr[job], sim.task_ptr[job + 1]
        self.gpu = sim.task_worker[lo:hi].astype(np.int64)
        self.cpu, self.pcie, self.exp = (
            sim.task_cpu[lo:hi],
            sim.task_pcie[lo:hi],
            sim.task_exp[lo:hi],
        )
        self.base = (
            self.gpu_free.copy(),
            self.cpu_used.copy(),
            self.pcie_used.copy(),
            self.tasks.copy(),
            self.exp_sum.copy(),
            self.server_tasks.copy(),
        )

    @property
    def task(self) -> int:
        return len(self.plan)

    @property
    def done(self) -> bool:
        return len(self.plan) == len(self.gpu)

    def feasible(self, sim, groups: np.ndarray) -> np.ndarray:
        t = self.task
        return (self.gpu_free[groups] >= self.gpu[t]) & (
            self.cpu_used[groups] + self.cpu[t] <= sim.cpu_capacity[groups] + 1e-9
        )

    def add(self, sim, g: int, sign: int = 1) -> None:
        t = self.task if sign > 0 else self.task - 1
        s = sim.cluster.group_server[g]
        self.gpu_free[g] -= sign * self.gpu[t]
        self.cpu_used[g] += sign * self.cpu[t]
        self.pcie_used[g] += sign * self.pcie[t]
        self.exp_sum[g] += sign * self.exp[t]
        self.tasks[g] += sign
        self.server_tasks[s] += sign
        self.server_job[s] += sign
        if sign > 0:
            self.plan.append(int(g))
        else:
            self.plan.pop()

    def rollback(self, sim) -> None:
        while self.plan:
            self.add(sim, self.plan[-1], -1)


@njit
def _group_scores(
    groups,
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
    out_fill,
    out_slow,
):
    """Per group: Tetris's fill after placing the task and the added server interference."""
    for i in range(groups.shape[0]):
        g = groups[i]
        s = group_server[g]
        out_fill[i] = (
            (group_gpus[g] - gpu_free[g] + gpu_need) / group_gpus[g]
            + (cpu_used[g] + cpu_need) / cpu_capacity[g]
        ) / 2.0
        before = server_interference(
            s,
            -1,
            0.0,
            0.0,
            0.0,
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
        after = server_interference(
            s,
            g,
            cpu_need,
            pcie_need,
            exp_need,
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
        out_slow[i] = after - before


@njit
def _whole_group_costs(
    servers,
    plan_server,
    placed,
    is_worker,
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
    group_gpus,
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
    out,
):
    """``out[g]``: the least predicted cost (:func:`tjap.placement.interference.planning.split_cost`,
    on the state before the job) of a plan keeping the job whole on one server that puts the current
    task on group g and agrees with the tasks placed so far (``placed``: workers on the server's
    first / second group, PSs on the first / second; all on ``plan_server``, -1 before the first
    task). Empty servers of one shape share the first one's costs (as the rule scores them)."""
    ref = -1
    for i in range(servers.shape[0]):
        s = servers[i]
        if plan_server >= 0 and s != plan_server:
            continue
        g0 = server_first_group[s]
        two = server_groups[s] == 2
        if plan_server < 0 and server_tasks[s] == 0:
            if (
                ref >= 0
                and server_groups[s] == server_groups[ref]
                and group_gpus[g0] == group_gpus[server_first_group[ref]]
                and group_cores[g0] == group_cores[server_first_group[ref]]
            ):
                r0 = server_first_group[ref]
                for h in range(server_groups[s]):
                    out[g0 + h] = out[r0 + h]
                continue
            if ref < 0:
                ref = s
        nb = nb_jobs[nb_ptr[i] : nb_ptr[i + 1]]
        for a in range(W, -1, -1):
            if a < placed[0] or W - a < placed[1]:
                continue
            for b in range(P, -1, -1):
                if b < placed[2] or P - b < placed[3]:
                    continue
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
                if cost == np.inf:
                    continue
                if is_worker:
                    if a > placed[0] and cost < out[g0]:
                        out[g0] = cost
                    if two and W - a > placed[1] and cost < out[g0 + 1]:
                        out[g0 + 1] = cost
                else:
                    if b > placed[2] and cost < out[g0]:
                        out[g0] = cost
                    if two and P - b > placed[3] and cost < out[g0 + 1]:
                        out[g0 + 1] = cost


def whole_costs(sim, plan: Planning, groups: np.ndarray) -> np.ndarray:
    """Per group of ``groups``: the ``whole`` rule's least predicted cost of a one-server plan for
    the job that puts the current task there (inf: none); see :func:`_whole_group_costs`."""
    c, w = sim.cluster, sim.workload
    out = np.full(c.num_groups, np.inf)
    if plan.partition is None:
        raise ValueError("Planning needs its partition for the whole-rule costs")
    plan_servers = set(c.group_server[plan.plan]) if plan.plan else set()
    if len(plan_servers) > 1:
        return out[groups]
    plan_server = plan_servers.pop() if plan_servers else -1
    placed = np.zeros(4, np.int64)
    W, P = int(w.workers[plan.job]), int(w.ps[plan.job])
    for t, g in enumerate(plan.plan):
        second = int(g != c.server_first_group[plan_server])
        placed[(0 if t < W else 2) + second] += 1
    gpu_free, cpu_used, pcie_used, tasks, exp_sum, server_tasks = plan.base
    _whole_group_costs(
        plan.servers,
        plan_server,
        placed,
        bool(plan.gpu[plan.task]),
        W,
        P,
        float(plan.cpu[0]),
        float(plan.pcie[0]),
        float(plan.exp[0]),
        float(plan.cpu[-1]),
        float(plan.exp[-1]),
        float(plan.job_volume[plan.job]),
        float(plan.job_iter_s[plan.job]),
        gpu_free,
        cpu_used,
        pcie_used,
        tasks,
        exp_sum,
        server_tasks,
        c.group_gpus,
        c.group_cores,
        sim.cpu_capacity,
        c.server_first_group,
        c.server_groups,
        c.num_groups,
        c.link_gbps,
        plan.link_flows,
        sim.coef,
        plan.nb_ptr,
        plan.nb_jobs,
        sim.flow_ptr,
        sim.flow_links,
        sim.flow_len,
        plan.job_volume,
        plan.job_iter_s,
        out,
    )
    return out[groups]


def added_slowdown(sim, plan: Planning, g: int) -> float:
    """Added (unclipped) interference of server(g) when the current task joins group g."""
    fill, slow = np.empty(1), np.empty(1)
    _scores(sim, plan, np.array([g], np.int64), fill, slow)
    return float(slow[0])


def _scores(sim, plan, groups, fill, slow):
    c, t = sim.cluster, plan.task
    _group_scores(
        groups,
        float(plan.gpu[t]),
        float(plan.cpu[t]),
        float(plan.pcie[t]),
        float(plan.exp[t]),
        plan.gpu_free,
        plan.cpu_used,
        plan.pcie_used,
        plan.tasks,
        plan.exp_sum,
        plan.server_tasks,
        c.group_server,
        c.group_gpus,
        sim.cpu_capacity,
        c.group_cores,
        c.server_first_group,
        c.server_groups,
        sim.coef,
        fill,
        slow,
    )


def observe(sim, plan: Planning, graph: PartitionGraph, partition: int) -> tuple[dict, np.ndarray]:
    """(observation, action mask) for the current task of ``plan``'s job at ``partition``.
    The mask has one entry per action node of the partition (group, or at ``graph.level ==
    "server"`` server: allowed when one of its groups can take the task) and a last one for
    forwarding, which is allowed only before the job's first task and while an unvisited
    partition remains.

    The queue features are the simulator's record of the interval (``sim.queue_len``: each
    scheduler's queue when the interval began; ``sim.offered(job)``: the partitions the job was
    offered to so far, every one for the single agent :data:`ALL`), so the env and the ``marl``
    policy in the simulator read them from the same place."""
    c, w = sim.cluster, sim.workload
    visited = np.ones(c.num_partitions, bool) if partition == ALL else sim.offered(plan.job)
    queue_len = sim.queue_len
    groups, G, t = graph.groups, graph.num_groups, plan.task
    feasible = plan.feasible(sim, groups)
    fill, slow = np.empty(G), np.empty(G)
    _scores(sim, plan, groups, fill, slow)
    device = graph.level == "device"
    # the device level's nodes (groups, servers, switches); the server level keeps the last two
    nodes = np.zeros((graph.num_nodes + (0 if device else G), len(NODE_FEATURES)), np.float32)
    nodes[:G, 0] = 1.0
    nodes[G : G + graph.num_servers, 1] = 1.0
    nodes[G + graph.num_servers :, 2] = 1.0
    gg = c.group_gpus[groups]
    nodes[:G, 3] = plan.gpu_free[groups] / gg
    nodes[:G, 4] = plan.cpu_used[groups] / sim.cpu_capacity[groups]
    nodes[:G, 5] = plan.pcie_used[groups] / 128.0
    nodes[:G, 6] = plan.tasks[groups] / 8.0
    nodes[:G, 7] = feasible
    servers = np.concatenate([c.group_server[groups], graph.servers])
    on_server = plan.server_job[servers] > 0
    nodes[: G + graph.num_servers, 8] = on_server
    tors = c.server_tor[servers] if c.kind == 0 else servers
    job_tors = (
        set(c.server_tor[c.group_server[plan.plan]])
        if (plan.plan and c.kind == 0)
        else set(c.group_server[plan.plan])
    )
    nodes[: G + graph.num_servers, 9] = np.isin(tors, list(job_tors)) if job_tors else 0.0
    nodes[:G, 10] = np.where(feasible, fill, 0.0)
    nodes[:G, 11] = np.where(feasible, np.clip(slow, -2.0, 2.0), 0.0)
    nodes[:G, 12] = gg / 8.0
    nodes[: G + graph.num_servers, 13] = plan.server_job[servers] / 8.0
    whole = np.where(feasible, whole_costs(sim, plan, groups), np.inf)
    ok = np.isfinite(whole)
    nodes[:G, 14] = ok
    nodes[:G, 15] = np.clip(whole - whole[ok].min(), 0.0, 2.0) if ok.any() else 2.0
    s_first = G
    s_ids = graph.servers
    nodes[s_first : s_first + len(s_ids), 3] = np.bincount(
        c.group_server[groups], weights=plan.gpu_free[groups], minlength=c.num_servers
    )[s_ids] / np.maximum(
        np.bincount(c.group_server[groups], weights=gg, minlength=c.num_servers)[s_ids], 1
    )
    nodes[s_first : s_first + len(s_ids), 6] = plan.server_tasks[s_ids] / 16.0
    if not device:
        nodes = _server_nodes(nodes, graph, feasible)
        feasible = nodes[: graph.num_servers, 7] > 0
    edges = graph.edge_static.copy()
    edges[:, 1] = plan.link_flows[graph.edge_link] / 8.0  # with the batch planned so far
    m = w.model[plan.job]
    job = np.array(
        [
            plan.gpu[t],
            plan.cpu[t] / 8.0,
            plan.pcie[t] / 64.0,
            profiles.GRAD_MB[m] / 500.0,
            w.workers[plan.job] / 4.0,
            w.ps[plan.job] / 4.0,
            t / 8.0,
            (len(plan.gpu) - t) / 8.0,
            profiles.ITER_S[m],
            visited.mean(),
        ],
        np.float32,
    )
    P = c.num_partitions
    free_gpu = np.bincount(c.group_partition, weights=plan.gpu_free, minlength=P)
    total_gpu = np.bincount(c.group_partition, weights=c.group_gpus, minlength=P)
    cap = np.bincount(c.group_partition, weights=sim.cpu_capacity, minlength=P)
    parts = np.stack(
        [
            free_gpu / total_gpu,
            np.bincount(c.group_partition, weights=plan.cpu_used, minlength=P) / cap,
            np.bincount(c.group_partition, weights=plan.pcie_used, minlength=P)
            / (128.0 * np.bincount(c.group_partition, minlength=P)),
            queue_len / 16.0,
            visited,
        ],
        axis=1,
    ).astype(np.float32)
    own = np.zeros(P, np.float32)
    if partition != ALL:
        own[partition] = 1.0
    A = graph.num_actions
    mask = np.zeros(A + 1, bool)
    mask[:A] = feasible
    mask[A] = t == 0 and not visited.all()
    obs = {
        "nodes": nodes,
        "edge_index": graph.edge_index.copy(),
        "edges": edges,
        "job": job,
        "partitions": parts,
        "own": own,
    }
    return obs, mask


def _server_nodes(nodes: np.ndarray, graph: PartitionGraph, feasible: np.ndarray) -> np.ndarray:
    """Server-level node features (:data:`SERVER_AGGREGATES`) from the device level's ``nodes``
    (groups, then servers, then switches): the group rows go, the server rows get aggregates."""
    G, S = graph.num_groups, graph.num_servers
    group, start = nodes[:G], graph.server_group_start
    out = nodes[G:].copy()
    col = NODE_FEATURES.index
    out[:S, col("is_server")] = 1.0
    count = np.diff(np.append(start, G))
    for name in ("cpu_used", "pcie_used"):
        out[:S, col(name)] = np.add.reduceat(group[:, col(name)], start) / count
    any_feasible = np.logical_or.reduceat(feasible, start)
    out[:S, col("feasible")] = any_feasible
    fill = np.maximum.reduceat(np.where(feasible, group[:, col("tetris_fill")], -np.inf), start)
    out[:S, col("tetris_fill")] = np.where(any_feasible, fill, 0.0)
    slow = np.minimum.reduceat(np.where(feasible, group[:, col("added_slowdown")], np.inf), start)
    out[:S, col("added_slowdown")] = np.where(any_feasible, slow, 0.0)
    out[:S, col("gpus")] = np.add.reduceat(group[:, col("gpus")], start)
    ok = group[:, col("whole_ok")] > 0
    any_ok = np.logical_or.reduceat(ok, start)
    out[:S, col("whole_ok")] = any_ok
    gap = np.minimum.reduceat(np.where(ok, group[:, col("whole_gap")], np.inf), start)
    out[:S, col("whole_gap")] = np.where(any_ok, gap, 2.0)
    return out


def choose_group(sim, plan: Planning, graph: PartitionGraph, action: int, rng) -> int:
    """The GPU group (global id) of action node ``action`` for the current task: the group
    itself at device level; at server level one of the server's groups that can take the task,
    drawn uniformly with ``rng`` (a :class:`numpy.random.Generator`; one draw per decision)."""
    if graph.level == "device":
        return int(graph.groups[action])
    lo = graph.server_group_start[action]
    hi = (
        graph.server_group_start[action + 1] if action + 1 < graph.num_servers else graph.num_groups
    )
    candidates = graph.groups[lo:hi][plan.feasible(sim, graph.groups[lo:hi])]
    if not len(candidates):
        raise InvalidInputError(
            f"server action {action} has no group that can take the task; "
            "pick one allowed by the action mask"
        )
    return int(candidates[rng.integers(len(candidates))])
