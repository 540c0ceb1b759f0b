"""Seed 001's schedulers on Kubernetes: the parameter-server and worker pods of distributed
training jobs placed by the interference family's policies (``marl``, ``whole``, ``tetris``,
``lb``, ``lif`` ...), several pods per node.

**The pods.** A job is one gang of pods that carry tjap's scheduling gate (:data:`~tjap.
placement.k8s.gangs.GATE`), labelled ``tjap.io/gang`` (with ``tjap.io/gang-size``, or any gang
:func:`~tjap.placement.k8s.gangs.gangs` reads). Each pod says what it is with labels:

- ``tjap.io/role`` (:data:`ROLE`): ``worker`` (asks for exactly 1 ``nvidia.com/gpu``, the
  family's worker: one GPU and its model's CPU cores on that GPU's socket) or ``ps`` (a parameter
  server: no GPU, :data:`~tjap.placement.interference.profiles.PS_CPU_CORES` cores);
- ``tjap.io/model`` (:data:`MODEL`): the model it trains, one of
  :data:`~tjap.placement.interference.profiles.MODEL_NAMES` (the same on every pod of the job;
  it gives the job's CPU, PCIe and gradient profile);
- ``tjap.io/epochs`` (:data:`EPOCHS`, optional): the job's epochs (default 7; no policy reads it);
- ``tjap.io/scheduler`` (:data:`SCHEDULER`, optional): the rack whose scheduler the job is
  submitted to (default: a fixed hash of the gang's name).

:func:`job_pods` writes such pods. Their CPU requests are the family's cores, so kube-scheduler
sees what the model sees.

**The cluster.** The nodes are the family's servers (:func:`cluster_of`): grouped into racks by
a node label (default the nodes' top ``topology.tjap.io/level-1`` label; no label: one rack),
racks in name order, nodes in name order within a rack, drawn as the ``racks`` topology of
:func:`~tjap.placement.interference.make_cluster` (``k`` racks of ``n`` servers; racks of
unequal size are refused). A node's ``nvidia.com/gpu`` allocatable gives the server
architecture: 4 ``pcie`` (2 sockets of 2 GPUs), 6 ``hetcpu``, 8 ``dgx1``. **Each rack is one
scheduler's partition**: seed 001's testbed, 12 servers in 2 racks of 6, is the paper's two
schedulers each managing 6 servers; one rack of 12 is one scheduler.

Each pass (:meth:`InterferenceController.run_pass`):

1. **reads** the nodes and pods and builds the family's state: one
   :class:`~tjap.placement.interference.Simulator` on that cluster whose jobs are the pods' jobs,
   with every job whose pods hold nodes (bound, selected by hostname or planned) committed
   where they are: on the socket tjap planned (``tjap.io/planned-socket``), or, for pods placed by
   someone else, the socket with a free GPU and most free CPU. Other pods' GPUs are taken off
   their node's free GPUs. A node's free GPUs are its allocatable less what those pods ask; a
   node that is not Ready, cordoned, or tainted NoSchedule / NoExecute has none, and no CPU;
2. **finishes** plans a killed run left (below);
3. **decides** as the family's episode does one interval: each rack's scheduler is offered the
   complete waiting gangs submitted to it (priority, then age) with one
   :func:`tjap.place_job` call, the policy's own ``place`` on that state; the jobs it leaves are
   forwarded to the other racks, most free GPUs first
   (:func:`~tjap.placement.interference.episode.forward_order`), each once. A policy of scope
   ``cluster`` gets every waiting job in one call. Bad gangs (a pod without a role, an unknown
   model, a worker asking other than 1 GPU, a job needing more GPUs than the cluster) stay
   gated, with a one-line reason and an event;
4. **applies**: every pod of the placed jobs is annotated with its node
   (``tjap.io/planned-node``) and socket, then each is released with one patch writing
   ``spec.nodeSelector`` (``kubernetes.io/hostname``) and removing the gate; kube-scheduler binds.

**A restart loses nothing**: a gang whose every pod is planned is released where planned; a
gang planned in part, none released, is planned afresh; the pods of a gang released in part
whose planned node is gone, cordoned, not Ready or tainted meanwhile are placed as the rest of
the running job, in the rack of its running pods first, on the sockets with the most free GPUs
(a pod that finds no room waits, with the reason).
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.k8s.controller import Controller, _each

#: Pod label: ``worker`` or ``ps``.
ROLE = "tjap.io/role"
ROLES = ("worker", "ps")
#: Pod label: the model the job trains (:data:`tjap.placement.interference.profiles.MODEL_NAMES`).
MODEL = "tjap.io/model"
#: Pod label (optional): the job's epochs.
EPOCHS = "tjap.io/epochs"
DEFAULT_EPOCHS = 7
#: Pod label (optional): the rack whose scheduler the job is submitted to.
SCHEDULER = "tjap.io/scheduler"
#: Pod annotation: the socket (GPU group of its node, from 0) tjap planned the pod on.
SOCKET = "tjap.io/planned-socket"
#: Server architecture of the family per ``nvidia.com/gpu`` of a node.
ARCH_OF_GPUS = {4: "pcie", 6: "hetcpu", 8: "dgx1"}
#: Policies the CLI offers (any interference method of :mod:`tjap.registry` is accepted).
POLICIES = ("marl", "whole", "tetris", "lb", "lif")


# -- the cluster --------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeCluster:
    """The family's cluster of the nodes: ``cluster`` (``racks`` topology), ``nodes`` (server
    index -> node name), ``racks`` (partition -> rack name)."""

    cluster: Any
    nodes: tuple
    racks: tuple

    @property
    def server_of(self) -> dict:
        return {name: s for s, name in enumerate(self.nodes)}

    def group(self, node: str, socket: int) -> int:
        s = self.server_of[node]
        c = self.cluster
        if not 0 <= socket < int(c.server_groups[s]):
            raise InvalidInputError(
                f"socket {socket} of node {node} does not exist; it has {int(c.server_groups[s])}"
            )
        return int(c.server_first_group[s]) + socket

    def where(self, group: int) -> tuple[str, int]:
        """(node, socket) of a GPU group."""
        c = self.cluster
        s = int(c.group_server[group])
        return self.nodes[s], int(group - c.server_first_group[s])


def node_gpus(node: dict) -> int:
    """A node's allocatable ``nvidia.com/gpu``."""
    from tjap.placement.k8s.nodes import GPU

    return int(str((node.get("status", {}).get("allocatable") or {}).get(GPU, "0")))


def pod_gpus(pod: dict) -> int:
    """The ``nvidia.com/gpu`` a pod asks: its containers' requests (else limits), summed."""
    from tjap.placement.k8s.nodes import GPU

    total = 0
    for c in pod.get("spec", {}).get("containers", []):
        res = c.get("resources", {}) or {}
        value = (res.get("requests") or {}).get(GPU, (res.get("limits") or {}).get(GPU, 0))
        total += int(str(value))
    return total


def rack_label(nodes: list[dict]) -> str | None:
    """The node label whose values are the racks: the top ``topology.tjap.io/level-N`` label the
    nodes carry, or None (one rack)."""
    from tjap.placement.k8s.nodes import LEVEL_PREFIX

    keys = {
        k
        for n in nodes
        for k in (n["metadata"].get("labels") or {})
        if k.startswith(LEVEL_PREFIX) and k[len(LEVEL_PREFIX) :].isdigit()
    }
    return min(keys, key=lambda k: int(k[len(LEVEL_PREFIX) :])) if keys else None


def cluster_of(nodes: list[dict], label: str | None = None) -> NodeCluster:
    """The family's cluster drawn by ``nodes`` (module docstring), racks by node ``label``
    (default :func:`rack_label`)."""
    from tjap.placement.interference import make_cluster

    if not nodes:
        raise InvalidInputError("the cluster has no node; add nodes (tjap k8s cluster up)")
    label = label if label is not None else rack_label(nodes)
    racks: dict[str, list[str]] = {}
    for n in nodes:
        meta = n["metadata"]
        rack = (meta.get("labels") or {}).get(label, "") if label else "all"
        if label and not rack:
            raise InvalidInputError(f"node {meta['name']} has no {label} label (its rack)")
        racks.setdefault(rack, []).append(meta["name"])
    sizes = {len(v) for v in racks.values()}
    if len(sizes) > 1:
        raise InvalidInputError(
            f"the racks ({label}) have {', '.join(str(len(racks[r])) for r in sorted(racks))} "
            "nodes; the family's racks topology needs racks of one size"
        )
    gpus = {node_gpus(n) for n in nodes}
    if len(gpus) > 1 or next(iter(gpus)) not in ARCH_OF_GPUS:
        raise InvalidInputError(
            f"the nodes have {', '.join(map(str, sorted(gpus)))} nvidia.com/gpu; the family's "
            "servers have one of "
            + ", ".join(f"{g} ({a})" for g, a in ARCH_OF_GPUS.items())
            + " on every node"
        )
    names = sorted(racks)
    cluster = make_cluster("racks", len(names), ARCH_OF_GPUS[gpus.pop()], sizes.pop())
    order = tuple(node for r in names for node in sorted(racks[r]))
    return NodeCluster(cluster, order, tuple(names))


# -- the jobs -----------------------------------------------------------------------------------
@dataclass
class DLJob:
    """One training job of pods: ``pods`` workers first, then parameter servers (rank order)."""

    key: tuple
    pods: list
    model: int
    workers: int
    ps: int
    epochs: int
    home: int
    gang: object = None

    @property
    def name(self) -> str:
        return "/".join(self.key)


def role_of(pod: dict) -> str | None:
    return (pod["metadata"].get("labels") or {}).get(ROLE)


def dl_job(key, pods: list[dict], racks: tuple, total_gpus: int, gang=None) -> DLJob:
    """The job of a gang's ``pods``; a one-line :class:`InvalidInputError` when they do not
    describe one (module docstring)."""
    from tjap.placement.interference import profiles

    workers: list[dict] = []
    ps: list[dict] = []
    models: set[str] = set()
    epochs: set[int] = set()
    home: set[int] = set()
    for pod in pods:
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        name, role = meta["name"], labels.get(ROLE)
        if role not in ROLES:
            raise InvalidInputError(
                f"pod {name} has {ROLE}={role!r}; label it {ROLE}=worker or {ROLE}=ps"
            )
        gpus = pod_gpus(pod)
        if role == "worker" and gpus != 1:
            raise InvalidInputError(
                f"worker pod {name} asks {gpus} nvidia.com/gpu; a worker takes exactly 1"
            )
        if role == "ps" and gpus:
            raise InvalidInputError(
                f"parameter-server pod {name} asks {gpus} nvidia.com/gpu; a ps takes none"
            )
        model = labels.get(MODEL)
        if model not in profiles.MODEL_NAMES:
            raise InvalidInputError(
                f"pod {name} has {MODEL}={model!r}; choose one of {', '.join(profiles.MODEL_NAMES)}"
            )
        models.add(model)
        raw = str(labels.get(EPOCHS, DEFAULT_EPOCHS))
        if not raw.isdigit() or not 1 <= int(raw) <= 10**4:
            raise InvalidInputError(
                f"pod {name} has {EPOCHS}={raw!r}; give a whole number in 1..10000"
            )
        epochs.add(int(raw))
        if SCHEDULER in labels:
            if labels[SCHEDULER] not in racks:
                raise InvalidInputError(
                    f"pod {name} has {SCHEDULER}={labels[SCHEDULER]!r}; the racks are "
                    f"{', '.join(racks)}"
                )
            home.add(racks.index(labels[SCHEDULER]))
        (workers if role == "worker" else ps).append(pod)
    job = "/".join(key)
    for what, values in ((MODEL, models), (EPOCHS, epochs), (SCHEDULER, home)):
        if len(values) > 1:
            raise InvalidInputError(f"the pods of {job} differ in {what}: {sorted(values)}")
    if not workers or not ps:
        raise InvalidInputError(
            f"{job} has {len(workers)} workers and {len(ps)} parameter servers; a job needs "
            "at least one of each"
        )
    if len(workers) > 64 or len(ps) > 64:
        raise InvalidInputError(
            f"{job} has {len(workers)} workers and {len(ps)} parameter servers; the family's "
            "jobs have at most 64 of each"
        )
    if len(workers) > total_gpus:
        raise InvalidInputError(f"{job} needs {len(workers)} GPUs and the cluster has {total_gpus}")
    return DLJob(
        tuple(key),
        workers + ps,
        profiles.MODEL_NAMES.index(models.pop()),
        len(workers),
        len(ps),
        epochs.pop(),
        home.pop() if home else zlib.crc32(job.encode()) % len(racks),
        gang,
    )


def assign_groups(sim, job: int, servers, fixed=None) -> np.ndarray:
    """GPU groups for ``job``'s tasks (workers first) on the given ``servers``, one per task, on
    ``sim``'s free resources: a task with a ``fixed`` group (not None) keeps it; a worker goes to
    the server's group with a free GPU and most free CPU, a parameter server to the one with most
    free CPU. How the sockets of pods that someone else placed are read (Kubernetes knows only
    the node)."""
    gpus, cpus, _ = sim.task_demands(job)
    c = sim.cluster
    gpu_free = sim.gpu_free.astype(float)
    room = sim.cpu_capacity - sim.cpu_used
    fixed = fixed if fixed is not None else [None] * len(servers)
    out = np.empty(len(servers), np.int64)
    for t in sorted(range(len(servers)), key=lambda t: (-gpus[t], -cpus[t], t)):
        s = int(servers[t])
        if fixed[t] is not None:
            g = int(fixed[t])
        else:
            first = int(c.server_first_group[s])
            groups = list(range(first, first + int(c.server_groups[s])))
            fits = [h for h in groups if gpu_free[h] >= gpus[t]] or groups
            g = max(fits, key=lambda h: (room[h], -h))
        gpu_free[g] -= gpus[t]
        room[g] -= cpus[t]
        out[t] = g
    return out


def job_pods(
    name: str,
    model: str,
    workers: int,
    ps: int,
    *,
    epochs: int = DEFAULT_EPOCHS,
    scheduler: str | None = None,
    gate: str | None = None,
    namespace: str = "default",
    image: str = "registry.k8s.io/pause:3.10",
) -> list[dict]:
    """The pods of one job (module docstring): ``workers`` pods ``NAME-worker-I`` asking 1
    ``nvidia.com/gpu`` and the model's CPU cores, ``ps`` pods ``NAME-ps-I`` asking
    :data:`~tjap.placement.interference.profiles.PS_CPU_CORES`; gated with ``gate`` (default
    tjap's; ``""``: not gated, for kube-scheduler alone)."""
    from tjap.placement.interference import profiles
    from tjap.placement.k8s.gangs import GANG_LABEL, GANG_SIZE, GATE
    from tjap.placement.k8s.nodes import GPU

    if model not in profiles.MODEL_NAMES:
        raise InvalidInputError(
            f"unknown model {model!r}; choose one of {', '.join(profiles.MODEL_NAMES)}"
        )
    cores = float(profiles.CPU_CORES[profiles.MODEL_NAMES.index(model)])
    gate = GATE if gate is None else gate
    labels = {GANG_LABEL: name, GANG_SIZE: str(workers + ps), MODEL: model, EPOCHS: str(epochs)}
    if scheduler is not None:
        labels[SCHEDULER] = scheduler
    pods = []
    for role, count in (("worker", workers), ("ps", ps)):
        for i in range(count):
            cpu = cores if role == "worker" else profiles.PS_CPU_CORES
            resources = {"cpu": f"{round(cpu * 1000)}m"}
            if role == "worker":
                resources[GPU] = "1"
            spec: dict[str, Any] = {"containers": [{"name": role, "image": image,
                                    "resources": {"requests": resources, "limits": resources}}]}  # fmt: skip
            if gate:
                spec["schedulingGates"] = [{"name": gate}]
            pods.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-{role}-{i}", "namespace": namespace,
                             "labels": {**labels, ROLE: role}},
                "spec": spec,
            })  # fmt: skip
    return pods


# -- the state ------------------------------------------------------------------------------------
@dataclass
class FamilyState:
    """One pass's reading: the nodes and pods, the family's cluster (:class:`NodeCluster`), the
    simulator with the running jobs committed, the job objects by simulator id, the waiting job
    ids (in gang order), the gangs left waiting or refused with their reasons, and the plans of
    the pods that complete a running job (committed too)."""

    nodes: list
    pods: list
    view: NodeCluster
    sim: Any
    jobs: list
    waiting: list
    held: dict = field(default_factory=dict)
    refused: dict = field(default_factory=dict)
    skipped: list = field(default_factory=list)
    rest: dict = field(default_factory=dict)  # job id -> pod name -> GPU group (rest of a job)


def read_state(nodes, pods, *, gate: str, label: str | None = None) -> FamilyState:
    """The family's state of ``nodes`` and ``pods`` (module docstring, step 1)."""
    from tjap.placement.interference import Simulator, Workload
    from tjap.placement.k8s.gangs import PLANNED, gang_key, gangs
    from tjap.placement.k8s.nodes import free_nodes, holds

    view = cluster_of(nodes, label)
    c = view.cluster
    server_of = view.server_of
    total = c.total_gpus
    # running: the pods of role that hold a node, by gang; other GPU pods are foreign
    running: dict = {}
    foreign: list[tuple[Any, int]] = []
    skipped: list[str] = []
    for pod in pods:
        node = holds(pod)
        if node is None:
            continue
        if node not in server_of:
            skipped.append(f"pod {pod['metadata']['name']} holds unknown node {node}")
            continue
        if role_of(pod) is None:
            if pod_gpus(pod):
                foreign.append((node, pod_gpus(pod)))
            continue
        running.setdefault(gang_key(pod)[0], []).append(pod)
    gated = gangs(pods, gate)
    in_flight = {
        g.key for g in gated if any((p["metadata"].get("annotations") or {}).get(PLANNED) for p in g.pods)
    }  # fmt: skip
    # the rest of a job that runs: its other pods hold nodes, these are gated with no plan (a
    # killed run released part of the job, and the planned node of these was lost meanwhile)
    rest_of = {g.key: g for g in gated if g.key in running and g.key not in in_flight}
    held, refused = {}, {}
    jobs: list[DLJob] = []
    for key in sorted(running):
        if key in rest_of:
            continue
        running[key].sort(key=lambda p: p["metadata"]["name"])
        try:
            jobs.append(dl_job(key, running[key], view.racks, total))
        except InvalidInputError as exc:
            skipped.append(f"{'/'.join(key)}: {exc}")
            foreign += [(holds(p), pod_gpus(p)) for p in running[key]]
    num_running = len(jobs)
    for key, gang in rest_of.items():
        mine = sorted(running[key] + gang.pods, key=lambda p: p["metadata"]["name"])
        why = None
        if gang.size and len(mine) < gang.size:
            why = f"a part of it runs; {len(mine)} of its {gang.size} pods exist"
        else:
            try:
                jobs.append(dl_job(key, mine, view.racks, total, gang))
                continue
            except InvalidInputError as exc:
                why = f"a part of it runs; {exc}"
        held[key] = why
        foreign += [(holds(p), pod_gpus(p)) for p in running[key]]  # what runs holds its GPUs
    num_rest = len(jobs) - num_running
    for gang in gated:
        if gang.key in in_flight or gang.key in rest_of:
            continue  # a plan in flight (resume() finishes it), or the rest of a running job
        if not gang.complete:
            held[gang.key] = f"{len(gang.pods)} of {gang.size} pods exist"
            continue
        try:
            jobs.append(dl_job(gang.key, gang.pods, view.racks, total, gang))
        except InvalidInputError as exc:
            refused[gang.key] = str(exc)
    n = len(jobs)
    ints = lambda values: np.array(values, np.int64)  # noqa: E731
    workload = Workload(
        ints([0] * n),
        ints([j.home for j in jobs]),
        ints([j.model for j in jobs]),
        ints([j.workers for j in jobs]),
        ints([j.ps for j in jobs]),
        ints([j.epochs for j in jobs]),
        "kubernetes",
    )
    sim = Simulator(c, workload)
    for j in range(num_running):
        job = jobs[j]
        servers, fixed = [], []
        for pod in job.pods:
            node = str(holds(pod))  # every pod of a running job holds a known node
            servers.append(server_of[node])
            socket = (pod["metadata"].get("annotations") or {}).get(SOCKET)
            fixed.append(
                view.group(node, int(socket))
                if socket is not None and str(socket).isdigit()
                else None
            )
        groups = assign_groups(sim, j, servers, fixed)
        if sim.fits(j, groups):
            sim.commit(j, groups)
        else:
            skipped.append(
                f"{job.name}: its pods exceed the sockets of their nodes; counted as GPUs only"
            )
            foreign += [(holds(p), pod_gpus(p)) for p in job.pods]
    for node, count in foreign:  # GPUs held outside the family's jobs
        s = server_of[node]
        for g in range(
            int(c.server_first_group[s]), int(c.server_first_group[s] + c.server_groups[s])
        ):
            take = min(count, int(sim.gpu_free[g]))
            sim.gpu_free[g] -= take
            count -= take
    usable = free_nodes(nodes, [])  # Ready, not cordoned, no NoSchedule / NoExecute taint
    rest = {}
    for j in range(num_running, num_running + num_rest):
        plan = _rest_plan(sim, view, j, jobs[j], usable)
        if plan is None:
            held[jobs[j].key] = "a part of it runs; no node has room for the rest of its pods now"
        else:
            rest[j] = plan
    for node, s in server_of.items():  # a node no new pod may take: all its GPUs and CPU held
        if node not in usable:
            first = int(c.server_first_group[s])
            span = slice(first, first + int(c.server_groups[s]))
            sim.gpu_free[span] = 0
            sim.cpu_used[span] = sim.cpu_capacity[span]
    return FamilyState(
        nodes, pods, view, sim, jobs, list(range(num_running + num_rest, n)), held, refused,
        skipped, rest,
    )  # fmt: skip


def _rest_plan(sim, view: NodeCluster, j: int, job: DLJob, usable: set) -> dict | None:
    """Commit job ``j`` of ``sim`` (the rest of a running job, :func:`read_state`): its running
    pods where they are, each other pod on a socket of a ``usable`` node with a free GPU (a
    worker) and room for its CPU, in the rack where most of its running pods are first, then the
    most free GPUs, the most free CPU; returns the other pods' names -> GPU group, or None when
    some pod finds no room (nothing committed)."""
    from tjap.placement.k8s.nodes import holds

    gpus, cpus, _ = sim.task_demands(j)
    c = sim.cluster
    gpu_free = sim.gpu_free.astype(float)
    room = (sim.cpu_capacity - sim.cpu_used).astype(float)
    groups = np.full(len(job.pods), -1, np.int64)
    for t, pod in enumerate(job.pods):
        node = holds(pod)
        if node is None:
            continue
        socket = str((pod["metadata"].get("annotations") or {}).get(SOCKET, ""))
        s = view.server_of[node]
        first = int(c.server_first_group[s])
        own = range(first, first + int(c.server_groups[s]))
        g = view.group(node, int(socket)) if socket.isdigit() else max(
            own, key=lambda h: (gpu_free[h] >= gpus[t], room[h], -h)
        )  # fmt: skip
        groups[t] = g
        gpu_free[g] -= gpus[t]
        room[g] -= cpus[t]
    for node, s in view.server_of.items():  # the other pods go to nodes that take pods only
        if node not in usable:
            first = int(c.server_first_group[s])
            room[first : first + int(c.server_groups[s])] = -1.0
    fixed = groups[groups >= 0]
    home = int(np.bincount(c.group_partition[fixed]).argmax()) if fixed.size else 0
    plan = {}
    for t in sorted(map(int, np.flatnonzero(groups < 0)), key=lambda t: (-gpus[t], -cpus[t], t)):
        fits = np.flatnonzero((gpu_free >= gpus[t]) & (room >= cpus[t] - 1e-9))
        if not fits.size:
            return None
        g = int(min(fits, key=lambda h: (c.group_partition[h] != home, -gpu_free[h], -room[h], h)))
        groups[t] = g
        gpu_free[g] -= gpus[t]
        room[g] -= cpus[t]
        plan[job.pods[t]["metadata"]["name"]] = g
    if not sim.fits(j, groups):
        return None
    sim.commit(j, groups)
    return plan


# -- the controller -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Placement:
    """One pass: the jobs placed (key -> ``node/socket`` of each pod, workers first), the policy,
    the jobs left waiting and those refused, with their reasons, and the free GPUs it saw."""

    time: float
    placed: dict
    method: str
    waiting: dict = field(default_factory=dict)
    refused: dict = field(default_factory=dict)
    free_gpus: int = 0
    pods: dict = field(default_factory=dict)  # key -> pod names, in the order of ``placed``

    def to_dict(self) -> dict:
        return {
            "event": "interference",
            "time": self.time,
            "free_gpus": self.free_gpus,
            "method": self.method,
            "placed": {"/".join(k): v for k, v in self.placed.items()},
            "waiting": {"/".join(k): v for k, v in self.waiting.items()},
            "refused": {"/".join(k): v for k, v in self.refused.items()},
        }


class InterferenceController(Controller):
    """Places gated DL jobs through ``api`` with the interference family's ``policy``.

    Parameters
    ----------
    api : Api
    policy : str
        A method of ``tjap.registry.methods("interference")`` (:data:`POLICIES` and the others).
    gate : str, optional
        The scheduling gate of tjap's pods.
    rack_label : str, optional
        The node label of the racks (each one scheduler's partition); default the nodes' top
        ``topology.tjap.io/level-N`` label.
    seed : int
        The seed the policy is reset with on every decision.
    dry_run, log
        As :class:`tjap.k8s.controller.Controller`'s.
    """

    def __init__(
        self, api, policy: str = "tetris", *, gate=None, rack_label=None, seed: int = 0,
        dry_run=False, log=None, **options,
    ):  # fmt: skip
        from tjap.registry import get, methods

        super().__init__(api, gate=gate, dry_run=dry_run, log=log)
        names = methods("interference")
        if policy not in names:
            raise InvalidInputError(
                f"unknown interference policy {policy!r}; choose one of {', '.join(names)}"
            )
        self.policy = get("interference", policy).make(policy, **options)
        self.policy_name, self.rack_label, self.seed = policy, rack_label, int(seed)

    def read(self) -> FamilyState:
        nodes = self.api.items("/api/v1/nodes")
        pods = self.api.items("/api/v1/pods")
        return read_state(nodes, pods, gate=self.gate, label=self.rack_label)

    def decide(self, state: FamilyState) -> Placement:  # type: ignore[override]
        from tjap.api import place_job
        from tjap.placement.interference import CLUSTER
        from tjap.placement.interference.episode import forward_order

        sim, view = state.sim, state.view
        free = int(sim.gpu_free.sum())
        for key, why in state.refused.items():
            gang = next(g for g in _gangs(state, self.gate) if g.key == key)
            self._event(gang, "TjapRequestRefused", why)
        plans: dict[int, np.ndarray] = {}
        waiting = list(state.waiting)
        if waiting:
            queues: list[list[int]] = [[] for _ in view.racks]
            for j in waiting:
                queues[int(sim.workload.home[j])].append(j)
            sim.begin_interval(queues)
            if getattr(self.policy, "scope", "partition") == "cluster":
                turns = [(CLUSTER, [j for q in queues for j in q])]
            else:
                turns = [(p, q) for p, q in enumerate(queues) if q]
            left = []
            for partition, queue in turns:
                result = place_job(
                    sim, queue, self.policy, partition=partition, seed=self.seed, commit=True
                )
                for job, plan in zip(result.jobs, result.plans):
                    if plan is None:
                        left.append(job)
                    else:
                        plans[job] = plan
            if left and turns[0][0] != CLUSTER:  # forwarded, as the episode does
                free_gpu, free_cpu = sim.free_by_partition()
                for job in left:
                    gpus, cpus, _ = sim.task_demands(job)
                    for q in forward_order(sim, job, free_gpu, free_cpu):
                        sim.forwarded[job] += 1
                        result = place_job(
                            sim, [job], self.policy, partition=q, seed=self.seed, commit=True
                        )
                        if result.plan is not None:
                            plans[job] = result.plan
                            free_gpu[q] -= gpus.sum()
                            free_cpu[q] -= cpus.sum()
                            break
        placed, names, held = {}, {}, dict(state.held)
        for j, plan in state.rest.items():  # the rest of a running job, first
            key = state.jobs[j].key
            placed[key] = ["/".join(map(str, view.where(int(g)))) for g in plan.values()]
            names[key] = list(plan)
        for j in waiting:
            job = state.jobs[j]
            if j in plans:
                where = [view.where(int(g)) for g in plans[j]]
                placed[job.key] = [f"{node}/{socket}" for node, socket in where]
                names[job.key] = [p["metadata"]["name"] for p in job.pods]
            else:
                held[job.key] = (
                    f"{job.workers} GPUs asked; no rack's scheduler placed it "
                    f"({int(sim.gpu_free.sum())} GPUs free)"
                )
        return Placement(
            time.time(), placed, self.policy_name, held, dict(state.refused), free, names
        )

    def apply(self, decision: Placement, state: FamilyState) -> int:  # type: ignore[override]
        from tjap.placement.k8s.gangs import PLANNED

        by_name = {(p["metadata"].get("namespace", "default"), p["metadata"]["name"]): p
                   for p in state.pods}  # fmt: skip
        pairs = []
        for key, where in decision.placed.items():
            for name, spot in zip(decision.pods[key], where):
                pod = by_name[(key[0], name)]
                node, socket = spot.rsplit("/", 1)
                pairs.append((pod, node, socket))

        def plan(item) -> None:
            pod, node, socket = item
            answer = self.api.patch(
                self._pod_path(pod),
                {"metadata": {"annotations": {PLANNED: node, SOCKET: socket},
                              "resourceVersion": pod["metadata"]["resourceVersion"]}},
                merge="merge",
            )  # fmt: skip
            pod["metadata"] = answer["metadata"]

        began = time.perf_counter()
        _each(plan, pairs)  # 1: the plan (node and socket) on every pod, before any release
        _each(self._release_one, [pod for pod, _, _ in pairs])  # 2: release
        self.last_apply_s = time.perf_counter() - began
        return len(pairs)

    def resume(self, state: FamilyState) -> int:
        """Release the gated pods of gangs whose every pod is planned on a node that still
        takes pods (Ready, not cordoned, untainted); clear the plans of the other planned gangs
        none of whose pods was released, and of the pods of a gang released in part whose node
        was lost (:func:`read_state` places them as the rest of the running job)."""
        from tjap.placement.k8s.gangs import PLANNED, gang_key
        from tjap.placement.k8s.nodes import free_nodes

        # a planned node that is gone, cordoned, not Ready or tainted takes no pod any more
        present = set(state.view.nodes) & free_nodes(state.nodes, [])
        touched = 0
        for gang in _gangs(state, self.gate):
            planned = [p for p in gang.pods if self._planned(p)]
            if not planned:
                continue
            released = [
                p for p in state.pods
                if gang_key(p)[0] == gang.key and self._planned(p) and not self._gated(p)
            ]  # fmt: skip
            whole = (
                len(planned) == len(gang.pods)
                and gang.complete
                and all(self._planned(p) in present for p in planned)
            )
            good = planned if whole or released else []
            good = [p for p in good if self._planned(p) in present]
            gone = [p for p in planned if p not in good]
            if not self.dry_run:
                self._release(good)
                for pod in gone:
                    self.api.patch(
                        self._pod_path(pod),
                        {"metadata": {"annotations": {PLANNED: None, SOCKET: None}}},
                        merge="merge",
                    )
            self._record({"event": "resume", "gang": "/".join(gang.key), "released": len(good),
                          "replanned": len(gone)})  # fmt: skip
            touched += len(good) + len(gone)
        return touched


def _gangs(state: FamilyState, gate: str) -> list:
    from tjap.placement.k8s.gangs import gangs

    return gangs(state.pods, gate)


def say(decision: Placement) -> list[str]:
    """The lines ``tjap k8s place --system interference`` prints for a pass."""
    lines = [
        f"{decision.method}: {len(decision.placed)} jobs placed, {decision.free_gpus} GPUs were free"
    ]
    for key, where in decision.placed.items():
        lines.append(f"  {'/'.join(key)}: {' '.join(where)}")
    for key, why in {**decision.waiting, **decision.refused}.items():
        lines.append(f"  {'/'.join(key)}: waits ({why})")
    return lines
