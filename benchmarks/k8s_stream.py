"""A stream of GPU gang jobs on a real local Kubernetes: kube-scheduler alone, Kueue's algorithm
and tjap, each applied to the same jobs on the same fake NVL72-class cluster.

    python -m benchmarks.k8s_stream --nodes 576 --jobs 120

The control plane is :class:`tjap.placement.k8s.harness.LocalKubernetes` (etcd, kube-apiserver,
kube-scheduler of Kubernetes 1.35.4, built by ``.ci/build-k8s``), its nodes fake: racks of 18
nodes (an NVLink domain), 8 racks to a block, levels block / rack / host (``--nodes`` 576: 32
racks; 4,608: 256 racks), each node 4 GPUs. The jobs are the multi-node jobs of the LS6 A100
trace shipped with tjap (``ls6-a100``: runtimes as recorded, sizes times 4 to span racks, at
most 72 nodes), in the trace's order, arriving as a Poisson stream that offers ``--load``
(default 0.9) of the cluster's node-seconds, on a clock of ticks: each tick of the harness
(0.25 s of wall time for kube-scheduler to bind) advances the stream by ``--compress`` times its
length (default 3,600: an hour of the trace a second), however long the controller's pass took,
and after a window that placed gangs the clock waits (at most 60 s; the row counts the waits
cut short, ``bind_waits_cut``) until kube-scheduler has bound their pods, so waits measure
placement, not the controller's or kube-scheduler's speed (reported apart), and two arms'
streams part only where their placements differ; one job in three asks for slices of 4, 6, 8
or 9 pods, each inside one rack (Kueue's ``podset-slice-size`` and ``podset-slice-required-topology``),
the others prefer one rack (``podset-preferred-topology``); with ``--topology-wait S`` the
segmented jobs' pods also carry ``tjap.io/topology-wait-seconds: S`` (they may wait that long for
a place as cheap as their floor; the controller's clock is the stream's); with ``--deadlines``
every pod carries its job's time limit from the trace as ``activeDeadlineSeconds`` (the
trace's ``TimelimitRaw``; every runtime is at most its limit), which tjap's fragmentation term
reads (the seconds a job keeps a domain from being whole) and Kueue does not; ``--fragmentation W``
and ``--fragmentation-level block|rack`` set the tjap arm's fragmentation term (``tjap k8s place``'s
options: W per whole free domain of that level a window breaks into; default 100,000 per whole
block). Every pod asks for a whole node's GPUs. The harness ends a job when its runtime has
passed since its last pod was bound (it deletes its pods).

With ``--offline`` the kueue and tjap arms run on the control plane's in-memory twin
(:class:`tjap.placement.k8s.memory.MemoryApi`: kube-scheduler's part done at once) with the same
controller, in seconds an arm: for trying a policy (``run_arm(..., controller_options=...)``).
The stream is a function of the placements alone, so the twin gives the live run's figures
(tests/benchmarks/test_k8s_stream.py holds it to that on a real control plane); the
kube-scheduler arm, the patch rate and the binding rate need the live one.

Three arms, one after the other, each on a fresh cluster (and a fourth, ``window``, on request):

- ``kube-scheduler``: the pods carry no gate; kube-scheduler places each pod on its own (its
  default scoring), with no gang rule: a job starts when its last pod is bound.
- ``kueue``: the pods carry tjap's gate; :class:`tjap.k8s.controller.Controller` applies what
  Kueue's topology-aware scheduling chooses for each window (``choose="kueue"``: the
  re-implementation of ``kueue-bestfit``, validated against Kueue's rules).
- ``tjap``: the same controller applying the cheaper of tjap's exact optimum and Kueue's choice.
- ``window`` (only when named in ``--arms``): the first ``--window`` jobs (default 50) created
  gated at once, one pass of the controller: seconds to read the cluster, decide and patch.

Per arm: mean CH cost per job (tjap's hop cost of the nodes each job got, paper convention; also
apart for the segmented jobs and the others; every job's row, its nodes included, is in the
JSON), the floor of each (``floor_segmented``, ``floor_other``: the mean of the jobs' costs
alone on the empty cluster), the windows placed and those that cost more than Kueue's choice
of the same jobs (``windows_above_kueue``, 0 when the guard holds),
the share of jobs of at most 18 nodes inside one rack, the share of slices kept inside one rack,
the mean number of whole racks free (sampled every tick), the mean wait (arrival to the last
pod bound, in trace seconds), the jobs that ever started whole (``started``: without a gang rule,
kube-scheduler can bind part of several jobs and fill the cluster with none of them whole; an
arm stops after ``--arm-timeout`` seconds), the controller's decision time per window (mean and largest: reading the jobs, both solves;
``mean_pass_s`` the whole pass, reading the cluster and the patches included), and pods bound per
second: ``placed_per_s`` the pods the controller released over the time its patches took (plan and
release, :data:`tjap.k8s.controller.PATCHING` at a time), ``bound_per_s`` kube-scheduler's
binding rate on the same cluster (a burst of ungated pods, first creation to last binding). Writes ``k8s_stream.json`` and
prints a table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.common import one_line_errors, parser

RACK = 18
RACKS_PER_BLOCK = 8
TICK_S = 0.25
#: An arm whose jobs have all arrived stops when none started or ended for this many ticks
#: (kube-scheduler alone can bind part of several gangs and leave none of them whole).
STUCK_TICKS = 200
#: The longest the clock waits, after a window, for kube-scheduler to bind its released pods
#: (a wait cut short lets the stream part from the twin's: the row counts them,
#: ``bind_waits_cut``; 10 s was too short once, with the test suite beside a live run).
BIND_WAIT_S = 60.0


def cluster(num_nodes: int):
    from tjap.placement.tree.topology import Topology

    if num_nodes % RACK:
        raise SystemExit(f"--nodes must be a multiple of {RACK}")
    pairs = [
        (f"gpu{i:05d}", {"block": f"b{i // RACK // RACKS_PER_BLOCK}", "rack": f"r{i // RACK}"})
        for i in range(num_nodes)
    ]
    return Topology.from_node_labels(pairs, ["block", "rack"])


def workload(count: int, seed: int, largest: int, nodes: int, load: float) -> list[dict]:
    """The first ``count`` multi-node jobs of the LS6 A100 trace: sizes times 4 (at most
    ``largest``), runtimes as recorded, arriving in the trace's order as a Poisson stream that
    offers ``load`` of the cluster's node-seconds, each with its time limit (``limit_s``, at
    least its runtime); every third job with a slice size (4, 6, 8 or 9 pods dividing its size,
    below it)."""
    from tjap.placement.batch.traces import bundled_trace, load_trace

    trace, _ = load_trace(bundled_trace("ls6-a100"))
    rows = np.flatnonzero((trace.nodes >= 2) & (trace.runtime_s > 0))[:count]
    limits = trace.limit_s[rows].astype(int)
    rng = np.random.default_rng(seed)
    sizes = np.minimum(4 * trace.nodes[rows], largest).astype(int)
    runtimes = trace.runtime_s[rows].astype(int)
    rate = load * nodes / float(np.mean(sizes * runtimes))  # jobs per trace second
    arrivals = np.cumsum(rng.exponential(1 / rate, rows.size)).astype(int)
    jobs = []
    for k in range(rows.size):
        size = int(sizes[k])
        job = {"name": f"j{k:04d}", "size": size, "arrival_s": int(arrivals[k]),
               "runtime_s": int(runtimes[k]), "limit_s": int(limits[k])}  # fmt: skip
        slices = [x for x in (9, 8, 6, 4) if size % x == 0 and size > x]
        if k % 3 == 0 and slices:
            job["slice"] = int(rng.choice(slices))
        jobs.append(job)
    return jobs


def annotations(job: dict, levels: list[str], *, tjap_names: bool = False) -> dict:
    """Kueue's pod-set annotations of a stream job: slices inside a rack (the last of
    ``levels``), or prefer one rack; with ``tjap_names``, under tjap's names (for a Kueue
    flavor without a topology, where Kueue would refuse the request)."""
    from tjap.placement.k8s.gangs import PREFERRED, SLICE_LEVEL, SLICE_SIZE, TJAP_ALIAS

    if "slice" in job:
        notes = {SLICE_SIZE: str(job["slice"]), SLICE_LEVEL: levels[-1]}
    else:
        notes = {PREFERRED: levels[-1]}
    return {TJAP_ALIAS[k]: v for k, v in notes.items()} if tjap_names else notes


def create_job(
    api, job, levels, gated: bool, topology_wait_s: float = 0.0, deadlines: bool = False
) -> None:
    from tjap.placement.k8s.gangs import GATE, TOPOLOGY_WAIT

    notes = {"tjap.io/gang-size": str(job["size"]), **annotations(job, levels)}
    if topology_wait_s and "slice" in job:  # a segmented job may wait for its floor
        notes[TOPOLOGY_WAIT] = f"{topology_wait_s:g}"
    for r in range(job["size"]):
        spec = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}  # fmt: skip
        if gated:
            spec["schedulingGates"] = [{"name": GATE}]
        if deadlines:
            spec["activeDeadlineSeconds"] = job["limit_s"]
        api.create("/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{job['name']}-{r:03d}", "labels": {"tjap.io/gang": job["name"]},
                         "annotations": notes},
            "spec": spec,
        })  # fmt: skip


def run_arm(
    arm: str,
    num_nodes: int,
    jobs: list[dict],
    compress: float,
    kueue: str,
    timeout_s: float,
    fragmentation: float | None = None,
    *,
    offline: bool = False,
    controller_options: dict | None = None,
    topology_wait_s: float = 0.0,
    fragmentation_level: str | None = None,
    deadlines: bool = False,
) -> dict:
    from tjap.k8s.controller import Controller
    from tjap.placement.k8s.nodes import level_keys

    tree = cluster(num_nodes)
    levels = level_keys(tree)[:-1]
    racks = sorted({int(r) for r in tree.node_leaf})
    ticks = [0]  # the stream's clock, read by the offline twin's creation times
    stream_s = [0.0]  # the same in trace seconds: the controller's clock (its waits)
    with _control_plane(tree, offline, lambda: ticks[0]) as (api, bound_per_s, settle):
        controller = None
        if arm != "kube-scheduler":
            options: dict = {"clock": lambda: stream_s[0]}
            if fragmentation is not None:
                options["fragmentation"] = fragmentation
            if fragmentation_level is not None:  # the key of that level: block top, rack last
                options["fragmentation_level"] = levels[0 if fragmentation_level == "block" else -1]
            options.update(controller_options or {})
            controller = Controller(
                api, kueue=kueue, choose="kueue" if arm == "kueue" else "best", **options
            )
        book = StreamBook(jobs)
        free_racks, decide_s, pass_s, placed, place_s = [], [], [], 0, 0.0
        windows, above = 0, 0  # windows placed; those that cost more than Kueue's choice
        cut = 0  # windows after which the clock's wait for the bindings ran out
        t0, tick, progress = time.monotonic(), 0, 0
        while not book.finished and time.monotonic() - t0 < timeout_s:
            if book.all_arrived and tick - progress > STUCK_TICKS:
                break  # every job arrived, and none started or ended for a long while
            now = tick * TICK_S * compress  # the stream's clock: ticks, not wall time
            tick += 1
            ticks[0], stream_s[0] = tick, now
            for job in book.arrivals(now):
                create_job(api, job, levels, gated=arm != "kube-scheduler",
                           topology_wait_s=topology_wait_s, deadlines=deadlines)  # fmt: skip
            if controller is not None:
                began = time.perf_counter()
                decision = controller.run_pass()
                took = time.perf_counter() - began
                if decision.placed:
                    windows += 1
                    above += (
                        decision.kueue_cost is not None
                        and decision.cost > decision.kueue_cost + 1e-9
                    )
                    decide_s.append(controller.last_decide_s)
                    pass_s.append(took)
                    n = sum(len(v) for v in decision.placed.values())
                    placed += n
                    place_s += controller.last_apply_s
                    cut += settle() is False
            pods = api.items("/api/v1/namespaces/default/pods")
            busy = {p["spec"].get("nodeName") for p in pods if p["spec"].get("nodeName")}
            free_racks.append(sum(all(n not in busy for n in tree.nodes_of(r)) for r in racks))
            nodes_of: dict[str, list] = {}
            for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
                gang = pod["metadata"]["labels"]["tjap.io/gang"]
                nodes_of.setdefault(gang, []).append(pod["spec"].get("nodeName"))
            if book.bound(nodes_of, now):
                progress = tick
            for job in book.due(now):
                for r in range(job["size"]):
                    api.request("DELETE", f"/api/v1/namespaces/default/pods/{job['name']}-{r:03d}",
                                query={"gracePeriodSeconds": 0})  # fmt: skip
                progress = tick
            if not offline:
                time.sleep(TICK_S)
    return {
        "arm": arm,
        "nodes": num_nodes,
        "jobs": len(jobs),
        "started": len(book.started),
        **figures(tree, book),
        "mean_free_racks": float(np.mean(free_racks)),
        "mean_decide_s": float(np.mean(decide_s)) if decide_s else None,
        "max_decide_s": float(np.max(decide_s)) if decide_s else None,
        "mean_pass_s": float(np.mean(pass_s)) if pass_s else None,
        "placed_per_s": placed / place_s if place_s and not offline else None,
        "bound_per_s": bound_per_s,
        "windows": windows,
        "windows_above_kueue": above,
        "bind_waits_cut": cut,
    }


class StreamBook:
    """What the harness knows of one stream on the stream's clock: the jobs arrived (the
    harness creates them), started whole (every pod bound: their nodes in pod order, the start)
    and ended (the harness deletes them once their runtime has passed since the start). The
    tick loops of this benchmark and of ``benchmarks.kueue_live`` keep their books with it."""

    def __init__(self, jobs: list[dict]):
        self.jobs = sorted(jobs, key=lambda j: j["arrival_s"])
        self.created: set[str] = set()
        self.started: dict[str, dict] = {}  # name -> {"nodes": [...], "start": trace s}
        self.done: set[str] = set()

    @property
    def all_arrived(self) -> bool:
        return len(self.created) == len(self.jobs)

    @property
    def finished(self) -> bool:
        return len(self.done) == len(self.jobs)

    def arrivals(self, now: float) -> list[dict]:
        """The jobs arrived by ``now`` and not created yet (now counted as created)."""
        new = [j for j in self.jobs if j["name"] not in self.created and j["arrival_s"] <= now]
        self.created.update(j["name"] for j in new)
        return new

    def bound(self, nodes_of: dict[str, list], now: float) -> list[str]:
        """The jobs that start at ``now``: every pod of theirs bound (``nodes_of``: job name ->
        its pods' nodes in pod order, None for a pod not bound)."""
        new = []
        for job in self.jobs:
            name = job["name"]
            if name in self.started or name not in self.created:
                continue
            nodes = nodes_of.get(name, [])
            if len(nodes) == job["size"] and all(nodes):
                self.started[name] = {"nodes": list(nodes), "start": now}
                new.append(name)
        return new

    def due(self, now: float) -> list[dict]:
        """The jobs to end at ``now`` (their runtime has passed since their start), now done."""
        due = [
            j
            for j in self.jobs
            if j["name"] in self.started
            and j["name"] not in self.done
            and now - self.started[j["name"]]["start"] >= j["runtime_s"]
        ]
        self.done.update(j["name"] for j in due)
        return due


def figures(tree, book: StreamBook) -> dict:
    """The figures of the jobs of ``book`` that started whole: mean CH cost per job (all,
    segmented, the others) and the floors beside them (:func:`floor`), the share of jobs of at
    most a rack's nodes inside one rack, the share of slices kept inside one rack, the mean wait
    (arrival to start, trace seconds), and every job's row (``per_job``: its nodes, cost and
    wait)."""
    from tjap.placement.tree.cost import job_cost

    leaf = {name: int(tree.node_leaf[i]) for i, name in enumerate(tree.node_names)}
    inside, kept, slices, per_job = [], 0, 0, []
    for job in book.jobs:
        got = book.started.get(job["name"])
        if got is None:  # never whole: stuck behind partly bound gangs, or late
            continue
        cost = job_cost(tree, [tree.node_index(n) for n in got["nodes"]])
        per_job.append({**job, "cost": cost, "wait_s": got["start"] - job["arrival_s"],
                        "nodes": got["nodes"]})  # fmt: skip
        if job["size"] <= RACK:
            inside.append(len({leaf[n] for n in got["nodes"]}) == 1)
        if "slice" in job:
            s = job["slice"]
            for k in range(0, job["size"], s):
                slices += 1
                kept += len({leaf[n] for n in got["nodes"][k : k + s]}) == 1
    segmented = [j for j in per_job if "slice" in j]
    others = [j for j in per_job if "slice" not in j]
    return {
        "mean_cost": _mean([j["cost"] for j in per_job]),
        "mean_cost_segmented": _mean([j["cost"] for j in segmented]),
        "mean_cost_other": _mean([j["cost"] for j in others]),
        "floor_segmented": _mean([floor(tree, j) for j in segmented]),
        "floor_other": _mean([floor(tree, j) for j in others]),
        "one_rack_share": float(np.mean(inside)) if inside else None,
        "slices_kept_share": kept / slices if slices else None,
        "mean_wait_s": _mean([j["wait_s"] for j in per_job]),
        "per_job": per_job,
    }


@contextlib.contextmanager
def _control_plane(tree, offline: bool, clock):
    """(api, kube-scheduler's binding rate or None, a call that waits for the bindings): a
    fresh local control plane with ``tree``'s nodes, or with ``offline`` its in-memory twin
    (:class:`tjap.placement.k8s.memory.MemoryApi`, which binds at once and stamps creation
    times with ``clock``)."""
    if offline:
        from tjap.placement.k8s.memory import MemoryApi

        api = MemoryApi(tree, clock=clock)
        yield api, None, api.bind
        return
    from tjap.placement.k8s.harness import LocalKubernetes

    with LocalKubernetes() as k8s:
        k8s.add_nodes(tree)
        with k8s.api() as api:
            bound_per_s = binding_rate(api, min(200, tree.num_nodes))
            yield api, bound_per_s, lambda: wait_bound(api, BIND_WAIT_S)


def window_arm(num_nodes: int, jobs: list[dict], size: int, kueue: str) -> dict:
    """One window of ``size`` jobs on a fresh cluster: the first jobs of the stream created
    gated at once, then one pass of the controller (tjap's choice): the seconds to read the
    cluster, to decide and to patch, the window's cost against Kueue's choice, and pods released
    per second against kube-scheduler's binding rate on the same cluster."""
    from tjap.k8s.controller import Controller
    from tjap.placement.k8s.harness import LocalKubernetes
    from tjap.placement.k8s.nodes import level_keys

    tree = cluster(num_nodes)
    levels = level_keys(tree)[:-1]
    window = jobs[:size]
    with LocalKubernetes() as k8s:
        k8s.add_nodes(tree)
        with k8s.api() as api:
            bound_per_s = binding_rate(api, min(200, num_nodes))
            for job in window:
                create_job(api, job, levels, gated=True)
            controller = Controller(api, kueue=kueue)
            began = time.perf_counter()
            decision = controller.run_pass()
            pass_s = time.perf_counter() - began
            wait_bound(api, 60.0)
    pods = sum(len(v) for v in decision.placed.values())
    return {
        "arm": "window", "nodes": num_nodes, "jobs": len(window), "pods": sum(j["size"] for j in window),
        "placed_jobs": len(decision.placed), "placed_pods": pods, "cost": decision.cost,
        "kueue_cost": decision.kueue_cost, "method": decision.method,
        "decide_s": controller.last_decide_s, "apply_s": controller.last_apply_s,
        "read_s": pass_s - controller.last_decide_s - controller.last_apply_s, "pass_s": pass_s,
        "placed_per_s": pods / controller.last_apply_s if controller.last_apply_s else None,
        "bound_per_s": bound_per_s,
    }  # fmt: skip


def wait_bound(api, timeout_s: float) -> bool:
    """Until kube-scheduler has bound every pod the controller released (a hostname selector,
    no gate), at most ``timeout_s`` seconds: the stream's clock does not run on while the
    pods of a placed gang wait for their binding, so the arms' streams part only where their
    placements differ. False when ``timeout_s`` passed first."""
    from tjap.placement.k8s.nodes import HOSTNAME

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pods = api.items("/api/v1/namespaces/default/pods")
        if all(
            p["spec"].get("nodeName")
            for p in pods
            if HOSTNAME in (p["spec"].get("nodeSelector") or {})
            and not p["spec"].get("schedulingGates")
        ):
            return True
        time.sleep(0.05)
    return False


_FLOORS: dict = {}


def floor(tree, job: dict) -> float:
    """A stream job's CH cost alone on the empty cluster (its request as the stream writes it:
    slices inside a rack, or prefer one rack): no placement of it costs less
    (:func:`tjap.k8s.controller.job_floor`)."""
    from tjap.k8s.controller import job_floor

    key = (tree.num_nodes, job["size"], job.get("slice"))
    if key not in _FLOORS:
        request = {"nodes": job["size"]}
        if "slice" in job:
            request.update(segment=job["slice"], segment_level="rack")
        else:
            request["prefer"] = "rack"
        _FLOORS[key] = job_floor(tree, request, ["block", "rack"])
    return _FLOORS[key]


def _mean(values) -> float | None:
    return float(np.mean(values)) if values else None


def binding_rate(api, count: int) -> float:
    """kube-scheduler's binding rate on this cluster: ``count`` ungated pods created at once,
    pods bound per second from the first creation to the last binding (then deleted)."""
    began = time.monotonic()
    for r in range(count):
        api.create("/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"burst-{r:04d}"},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
        })  # fmt: skip
    while True:
        pods = api.items("/api/v1/namespaces/default/pods")
        if all(p["spec"].get("nodeName") for p in pods):
            break
        time.sleep(0.05)
    rate = count / (time.monotonic() - began)
    for r in range(count):
        api.request(
            "DELETE",
            f"/api/v1/namespaces/default/pods/burst-{r:04d}",
            query={"gracePeriodSeconds": 0},
        )
    while api.items("/api/v1/namespaces/default/pods"):
        time.sleep(0.1)
    return rate


def seed_list(value: str) -> list[int]:
    try:
        seeds = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        seeds = []
    if not seeds or any(v < 0 for v in seeds):
        raise argparse.ArgumentTypeError(f"expected seeds >= 0 separated by commas, got {value!r}")
    return seeds


def build_parser() -> argparse.ArgumentParser:
    from tjap.cli.common import non_negative

    p = parser("k8s_stream", __doc__)
    p.add_argument("--nodes", type=int, default=576, help="fake nodes, racks of 18 (default 576)")
    p.add_argument("--jobs", type=int, default=120, help="jobs of the stream (default 120)")
    p.add_argument("--compress", type=float, default=3600.0,
                   help="trace seconds per wall second (default 3600)")  # fmt: skip
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the arrivals and slices (default 0)"
    )
    p.add_argument("--seeds", type=seed_list, metavar="S,S,...",
                   help="several streams, one per seed (instead of --seed), each arm on each; "
                   "a summary averages them")  # fmt: skip
    p.add_argument("--load", type=float, default=0.9,
                   help="share of the cluster's node-seconds the stream offers (default 0.9)")  # fmt: skip
    p.add_argument("--kueue", default="kueue-bestfit", choices=("kueue-bestfit", "kueue-leastfree"),
                   help="the Kueue profile (default kueue-bestfit)")  # fmt: skip
    p.add_argument("--arms", default="kube-scheduler,kueue,tjap",
                   help="comma-separated: kube-scheduler, kueue, tjap (default these three), "
                   "window (one window of --window jobs created at once)")  # fmt: skip
    p.add_argument("--window", type=int, default=50,
                   help="jobs of the window arm (default 50)")  # fmt: skip
    p.add_argument("--arm-timeout", type=float, default=900.0,
                   help="seconds an arm may run; jobs never whole by then are counted apart (default 900)")  # fmt: skip
    p.add_argument("--topology-wait", type=non_negative, default=0.0, metavar="S",
                   help="the segmented jobs' pods carry tjap.io/topology-wait-seconds: S (they "
                   "may wait S trace seconds for a place as cheap as their floor; tjap's "
                   "controller reads it, Kueue has no such request; default 0: none)")  # fmt: skip
    p.add_argument("--fragmentation", type=non_negative, default=None, metavar="W",
                   help="the tjap arm's fragmentation weight (tjap k8s place --fragmentation; "
                   "default the controller's)")  # fmt: skip
    p.add_argument("--fragmentation-level", choices=("block", "rack"), default=None,
                   help="the level whose whole free domains the term keeps (default the top "
                   "one, block)")  # fmt: skip
    p.add_argument("--deadlines", action="store_true",
                   help="every pod carries its job's time limit from the trace as "
                   "activeDeadlineSeconds (tjap's fragmentation term reads it; Kueue does not)")  # fmt: skip
    p.add_argument("--offline", action="store_true",
                   help="the kueue and tjap arms on the in-memory twin of the control plane "
                   "(tjap.placement.k8s.memory; binds at once): seconds a stream, for design, "
                   "the live figures unchanged")  # fmt: skip
    p.add_argument("--out", default="benchmarks/out", metavar="DIR",
                   help="folder of k8s_stream.json (default benchmarks/out)")  # fmt: skip
    return p


#: The figures averaged over the seeds in the summary (one row per arm).
AVERAGED = ("mean_cost", "mean_cost_segmented", "mean_cost_other", "floor_segmented",
            "floor_other", "one_rack_share",
            "mean_free_racks", "mean_wait_s", "max_decide_s", "placed_per_s", "bound_per_s")  # fmt: skip


def summary(rows: list[dict]) -> list[dict]:
    """One row per stream arm: each of :data:`AVERAGED` averaged over the seeds it ran (the
    ``max_`` figures: their largest)."""
    out = []
    for arm in dict.fromkeys(r["arm"] for r in rows if r["arm"] != "window"):
        mine = [r for r in rows if r["arm"] == arm]
        row = {"arm": arm, "seeds": len(mine), "started": sum(r["started"] for r in mine),
               "jobs": sum(r["jobs"] for r in mine)}  # fmt: skip
        for key in AVERAGED:  # the largest of the largest, the mean of the rest
            values = [r[key] for r in mine if r.get(key) is not None]
            reduce = np.max if key.startswith("max_") else np.mean
            row[key] = float(reduce(values)) if values else None
        out.append(row)
    return out


@one_line_errors
def main(argv=None) -> int:
    from tjap.core.report import format_table

    args = build_parser().parse_args(argv)
    seeds = [args.seed] if args.seeds is None else args.seeds
    arms = args.arms.split(",")
    unknown = [a for a in arms if a not in ("kube-scheduler", "kueue", "tjap", "window")]
    if unknown:
        raise SystemExit(
            f"unknown arm {unknown[0]!r}: the arms are kube-scheduler, kueue, tjap, window"
        )
    if args.offline and {"kube-scheduler", "window"} & set(arms):
        raise SystemExit(
            "--offline runs the kueue and tjap arms only (kube-scheduler's scoring and the "
            "patch rate need the live control plane); drop it or give --arms kueue,tjap"
        )
    rows = []
    for seed in seeds:
        jobs = workload(args.jobs, seed, 72, args.nodes, args.load)
        for arm in arms:
            began = time.monotonic()
            if arm == "window":
                row = window_arm(args.nodes, jobs, args.window, args.kueue)
            else:
                row = run_arm(arm, args.nodes, jobs, args.compress, args.kueue, args.arm_timeout,
                              args.fragmentation, offline=args.offline,
                              topology_wait_s=args.topology_wait,
                              fragmentation_level=args.fragmentation_level,
                              deadlines=args.deadlines)  # fmt: skip
            row["wall_s"], row["seed"] = time.monotonic() - began, seed
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "per_job"}), flush=True)
    args.out = Path(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "k8s_stream.json").write_text(
        json.dumps(
            {"args": vars(args) | {"out": str(args.out)}, "rows": rows, "summary": summary(rows)},
            indent=1,
        )  # fmt: skip
    )
    streams = [row for row in rows if row["arm"] != "window"]
    if not streams:
        return 0
    print(format_table(streams, [("arm", ""), ("seed", "d"), ("nodes", "d"), ("jobs", "d"),
                              ("started", "d"), ("mean_cost", ".1f"), ("mean_cost_segmented", ".1f"),
                              ("mean_cost_other", ".1f"), ("floor_segmented", ".1f"),
                              ("floor_other", ".1f"), ("windows", "d"),
                              ("windows_above_kueue", "d"),
                              ("one_rack_share", ".3f"), ("slices_kept_share", ".3f"),
                              ("mean_free_racks", ".2f"), ("mean_wait_s", ".0f"),
                              ("mean_decide_s", ".3f"), ("max_decide_s", ".3f"),
                              ("mean_pass_s", ".3f"), ("placed_per_s", ".1f"),
                              ("bound_per_s", ".1f"), ("wall_s", ".0f")]))  # fmt: skip
    if len(seeds) > 1:
        print(format_table(summary(rows), [("arm", ""), ("seeds", "d"), ("started", "d"),
                                           *((key, ".3f" if "share" in key or "decide" in key
                                              else ".1f") for key in AVERAGED)]))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
