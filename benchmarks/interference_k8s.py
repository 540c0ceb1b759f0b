"""Seed 001's Kubernetes testbed (Sec. VII, Fig. 11b) on a real local control plane: DL jobs'
parameter-server and worker pods placed by kube-scheduler alone, and by each of the
interference family's policies through tjap's controller (:mod:`tjap.k8s.interference`).

    python -m benchmarks.interference_k8s --intervals 8 --rate 2

The cluster is the paper's: 12 servers of 4 GPUs (fake nodes of
:class:`tjap.placement.k8s.harness.LocalKubernetes`: etcd, kube-apiserver, kube-scheduler of
Kubernetes 1.35.4), two racks of 6, one scheduler each (the paper's two schedulers of 6
servers); the family draws it as ``racks`` k=2 n=6 with ``pcie`` servers (2 sockets of 8 cores
and 2 GPUs); each node offers 32 CPUs (the family's 2 x 16 hyperthreads), so kube-scheduler sees
the CPU the family's model allows. The jobs: the family's workload (``--pattern``, default
Poisson, ``--rate`` jobs per interval per scheduler, ``--intervals`` intervals of arrivals, the
eight models of Table I, U{2..12} epochs), with the testbed's sizes: U{2..4} workers and U{1..2}
parameter servers per job (Sec. VII-A). Each worker pod asks 1 ``nvidia.com/gpu`` and its model's
CPU cores, each parameter server 1 CPU.

Arms, one after the other on the same control plane (emptied between them):

- ``kube-scheduler``: ungated pods; kube-scheduler binds each pod where its default scoring
  says (no gang rule: a job starts once all its pods are bound);
- one arm per ``--policies`` (default marl, whole, tetris, lb, lif): gated pods; each
  scheduling interval one pass of :class:`tjap.k8s.interference.InterferenceController`.

The clock is the family's: intervals of 30 minutes. In interval i the jobs arriving in it are
created; the arm places (the controller's pass, or kube-scheduler for up to ``--settle`` seconds
without a new binding); every job whose pods are all bound starts in interval i, on the servers
and sockets they were bound to (the controller's planned socket; for kube-scheduler, which knows
only the node, the socket with a free GPU and most free CPU), in the family's
:class:`~tjap.placement.interference.Simulator`, which runs the interval (its interference and
link models) and ends the jobs that finish, whose pods are then deleted. JCT is finish minus
arrival in intervals, the family's, apart as ``mean_wait`` (arrival to start) and ``mean_run``
(start to finish). ``sim_jct`` is the same policy on the same jobs in the
family's simulator alone (no Kubernetes): equal to ``mean_jct`` when the controller did what the
simulator's episode does. Writes ``interference_k8s.csv`` and prints a table with the mean JCT
per arm and its ratio to kube-scheduler's.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, format_table, one_line_errors, parser, write_csv

TESTBED_SLURM = "SwitchName=r0 Nodes=g[01-06]\nSwitchName=r1 Nodes=g[07-12]"
NODE_CPUS = "32"
POLICIES = ("marl", "whole", "tetris", "lb", "lif")
NS = "/api/v1/namespaces/default/pods"


def testbed_workload(intervals: int, rate: float, seed: int, pattern: str):
    """The family's workload for 2 schedulers with the testbed's job sizes."""
    from tjap.placement.interference import Workload

    base = Workload.generate(2, intervals, pattern, seed, rate=rate)
    rng = np.random.default_rng([seed, 1])
    n = len(base)
    return Workload(
        base.arrival,
        base.home,
        base.model,
        rng.integers(2, 5, size=n),
        rng.integers(1, 3, size=n),
        base.epochs,
        pattern,
        seed,
    )


def add_nodes(k8s, tree) -> list[str]:
    """The testbed's nodes: 4 GPUs and :data:`NODE_CPUS` CPUs each, Ready."""
    from tjap.placement.k8s.nodes import node_manifests, ready_status

    names = []
    with k8s.api() as api:
        for node in node_manifests(tree, gpus=4, cpu=NODE_CPUS):
            status = node.pop("status")
            api.create("/api/v1/nodes", node)
            name = node["metadata"]["name"]
            api.patch(f"/api/v1/nodes/{name}/status", ready_status(status["capacity"]))
            api.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": None}}, merge="merge")
            names.append(name)
    return names


def fitting_groups(sim, job: int, servers) -> np.ndarray:
    """The sockets of a job kube-scheduler bound (it knows only the nodes): the greedy choice
    (:func:`tjap.k8s.interference.assign_groups`), else the first assignment of sockets that
    fits (every task has 2 or 1 to choose from; kube-scheduler kept each node's GPUs and CPUs)."""
    from tjap.k8s.interference import assign_groups

    groups = assign_groups(sim, job, servers)
    if sim.fits(job, groups):
        return groups
    c = sim.cluster
    choices = [
        range(int(c.server_first_group[s]), int(c.server_first_group[s] + c.server_groups[s]))
        for s in servers
    ]
    for combo in itertools.product(*choices):
        if sim.fits(job, list(combo)):
            return np.array(combo, np.int64)
    raise RuntimeError(f"job {job}'s pods fit no sockets of their nodes")


def empty(api) -> None:
    for pod in api.items(NS):
        api.request("DELETE", f"{NS}/{pod['metadata']['name']}", query={"gracePeriodSeconds": 0})
    deadline = time.monotonic() + 60
    while api.items(NS) and time.monotonic() < deadline:
        time.sleep(0.1)


def wait_bound(api, names: set, settle_s: float, timeout_s: float) -> dict:
    """Pod name -> node for the pods bound, once ``names`` are all bound or no new pod was bound
    for ``settle_s`` seconds (at most ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    last, count = time.monotonic(), -1
    while True:
        pods = api.items(NS)
        bound = {p["metadata"]["name"]: p for p in pods if p["spec"].get("nodeName")}
        if names <= set(bound) or time.monotonic() > deadline:
            return bound
        if len(bound) != count:
            count, last = len(bound), time.monotonic()
        elif time.monotonic() - last > settle_s:
            return bound
        time.sleep(0.1)


def run_arm(k8s, arm: str, workload, view, *, settle_s: float, max_intervals: int) -> dict:
    from tjap.k8s.interference import SOCKET, InterferenceController, job_pods
    from tjap.placement.interference import Simulator, profiles

    sim = Simulator(view.cluster, workload)
    gated = arm != "kube-scheduler"
    names = [f"j{j:03d}" for j in range(len(workload))]
    pods_of = {}
    running: list[int] = []
    pass_s = []
    buffers = (np.zeros(len(workload)), np.zeros(len(workload)), np.zeros(len(workload)))
    with k8s.api() as api:
        empty(api)
        controller = InterferenceController(api, arm) if gated else None
        next_job = 0
        for i in range(max_intervals):
            sim.interval = i
            while next_job < len(workload) and workload.arrival[next_job] <= i:
                j = next_job
                pods = job_pods(
                    names[j],
                    profiles.MODEL_NAMES[int(workload.model[j])],
                    int(workload.workers[j]),
                    int(workload.ps[j]),
                    epochs=int(workload.epochs[j]),
                    scheduler=view.racks[int(workload.home[j])],
                    gate=None if gated else "",
                )
                pods_of[j] = [p["metadata"]["name"] for p in pods]
                for pod in pods:
                    api.create(NS, pod)
                next_job += 1
            waiting = [j for j in pods_of if sim.state[j] == 0]
            wanted = {n for j in waiting for n in pods_of[j]}
            if gated and waiting:
                began = time.perf_counter()
                decision = controller.run_pass()
                pass_s.append(time.perf_counter() - began)
                wanted = {n for key in decision.pods for n in decision.pods[key]}
                bound = wait_bound(api, wanted, settle_s, 30.0)
            else:
                bound = wait_bound(api, wanted, settle_s, 30.0) if waiting else {}
            for j in waiting:
                if not all(n in bound for n in pods_of[j]):
                    continue
                pods = [bound[n] for n in pods_of[j]]  # workers first, as the plans
                servers = [view.server_of[p["spec"]["nodeName"]] for p in pods]
                notes = [(p["metadata"].get("annotations") or {}).get(SOCKET) for p in pods]
                if gated:
                    groups = np.array(
                        [view.group(p["spec"]["nodeName"], int(s)) for p, s in zip(pods, notes)]
                    )
                else:
                    groups = fitting_groups(sim, j, servers)
                sim.commit(j, groups)
            running = sim.advance(running, buffers)
            for j in np.flatnonzero(np.isfinite(sim.finish)):
                for n in pods_of.pop(int(j), []):
                    api.request("DELETE", f"{NS}/{n}", query={"gracePeriodSeconds": 0})
            if next_job == len(workload) and not pods_of:
                break
        empty(api)
    done = np.isfinite(sim.finish)
    jct = (sim.finish - workload.arrival)[done]
    return {
        "arm": arm,
        "jobs": len(workload),
        "completed": int(done.sum()),
        "mean_jct": float(jct.mean()) if done.any() else float("nan"),
        # JCT = waiting (arrival to start) + running (start to finish: interference, links)
        "mean_wait": float((sim.start - workload.arrival)[done].mean()) if done.any() else None,
        "mean_run": float((sim.finish - sim.start)[done].mean()) if done.any() else None,
        "intervals": int(sim.interval + 1),
        "mean_pass_s": float(np.mean(pass_s)) if pass_s else float("nan"),
    }


def build_parser():
    p = parser("interference_k8s", __doc__)
    p.add_argument("--intervals", type=int, default=8,
                   help="intervals of arrivals (default 8)")  # fmt: skip
    p.add_argument("--rate", type=float, default=2.0,
                   help="jobs per interval per scheduler (default 2)")  # fmt: skip
    p.add_argument("--pattern", default="poisson", choices=("uniform", "poisson", "trace"),
                   help="the family's arrival pattern (default poisson)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="seed of the jobs (default 0)")
    p.add_argument("--policies", default=",".join(POLICIES),
                   help=f"comma-separated interference policies (default {','.join(POLICIES)})")  # fmt: skip
    p.add_argument("--settle", type=float, default=1.5,
                   help="seconds without a new binding that end kube-scheduler's turn (default 1.5)")  # fmt: skip
    p.add_argument("--max-intervals", type=int, default=200,
                   help="intervals an arm may run at most (default 200)")  # fmt: skip
    add_out(p, "interference_k8s.csv")
    return p


@one_line_errors
def main(argv=None) -> int:
    import tempfile

    import tjap
    from tjap.core.errors import InvalidInputError
    from tjap.k8s.interference import cluster_of
    from tjap.placement.interference import simulate
    from tjap.placement.k8s.harness import LocalKubernetes, missing_programs
    from tjap.registry import make

    args = build_parser().parse_args(argv)
    missing = missing_programs()
    if missing:
        raise InvalidInputError(
            f"no Kubernetes control plane built ({', '.join(missing)}): bash .ci/build-k8s"
        )
    policies = [p for p in args.policies.split(",") if p]
    workload = testbed_workload(args.intervals, args.rate, args.seed, args.pattern)
    tree = tjap.Topology.from_slurm(TESTBED_SLURM)
    rows = []
    with tempfile.TemporaryDirectory() as folder, LocalKubernetes(Path(folder)) as k8s:
        add_nodes(k8s, tree)
        with k8s.api() as api:
            view = cluster_of(api.items("/api/v1/nodes"))
        for arm in ["kube-scheduler", *policies]:
            began = time.monotonic()
            row = run_arm(k8s, arm, workload, view, settle_s=args.settle,
                          max_intervals=args.max_intervals)  # fmt: skip
            if arm != "kube-scheduler":
                row["sim_jct"] = simulate(
                    view.cluster, workload, make("interference", arm)
                ).objective
            row["wall_s"] = time.monotonic() - began
            rows.append(row)
            print(
                {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}, flush=True
            )
    base = rows[0]["mean_jct"]
    for row in rows:
        row["jct_ratio"] = row["mean_jct"] / base
        row["reduction_pct"] = 100.0 * (1.0 - row["jct_ratio"])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "interference_k8s.csv", rows)
    print(format_table(rows, [("arm", ""), ("jobs", "d"), ("completed", "d"), ("mean_jct", ".3f"),
                              ("jct_ratio", ".3f"), ("reduction_pct", ".1f"), ("mean_wait", ".3f"),
                              ("mean_run", ".3f"), ("sim_jct", ".3f"),
                              ("intervals", "d"), ("mean_pass_s", ".3f"), ("wall_s", ".0f")]))  # fmt: skip
    print("seed 001 (Fig. 11b): the learned scheduler at least 18.9 % below Kubernetes' default "
          "placement in mean JCT")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
