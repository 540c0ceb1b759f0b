"""The placement controller on Kubernetes: whole gangs of gated pods onto the nodes tjap picks.

Each pass (:meth:`Controller.run_pass`):

1. **reads** the nodes and pods; the cluster's tree is the nodes' level labels
   (:meth:`~tjap.placement.tree.topology.Topology.from_node_labels`, the level keys top first);
   the free nodes are Ready, schedulable, untainted and held by no pod asking for GPUs
   (:func:`~tjap.placement.k8s.nodes.free_nodes`);
2. **finishes** a plan a previous run left half done (see below);
3. **decides** one window: the complete gangs that carry the gate (:func:`~tjap.placement.k8s.
   gangs.gangs`: priority, then age), each a window job with the request of its Kueue
   annotations, taken in order while their pods fit the free nodes. A gang whose request is bad
   gets an event and stays gated with the reason. The window is solved twice: tjap's exact
   SCAS optimum (``auto``) and what Kueue's topology-aware scheduling would choose for the same
   jobs (``kueue-bestfit`` or ``kueue-leastfree``, the re-implementation validated against
   Kueue's rules); the cheaper is applied, so no window costs more than Kueue's own choice, and
   both costs are logged. A window neither can place loses its last job until one can;
4. **applies** whole gangs: first every pod of the window is annotated with its planned node
   (``tjap.io/planned-node``), then, pod by pod, one patch writes ``spec.nodeSelector``
   (``kubernetes.io/hostname``) and removes the gate; kube-scheduler binds each pod to its node.

**A restart loses nothing.** The plan is on the pods before any is released. A pass that finds
gated pods with a planned node finishes their gang when every pod of the gang is planned, still
there, and its planned node still free; otherwise, when none of that gang is released yet (the
run was killed while planning, a planned node was removed or cordoned, a pod deleted), it
clears the plan and the gang is placed afresh once whole (a part of a gang never starts alone).
When some are released (the run was killed while releasing, every plan written), the rest are
released on their planned nodes, and those whose node was lost meanwhile are placed again, on
any free nodes, as the remainder of a gang that already runs.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tjap.core.errors import InvalidInputError

if TYPE_CHECKING:
    from tjap.k8s.metrics import Metrics

#: Patches in flight at once (each phase of a window's patches is sent by this many threads).
PATCHING = 8
#: The fragmentation weight of the windows by default (see :class:`Controller`): above the cost
#: difference of any two placements of a window, so a whole free domain of the top level is
#: kept whenever the guard against Kueue's choice allows it.
DEFAULT_FRAGMENTATION = 100_000.0
#: The longest one watch of the pods lasts between passes (the loop's answer time to stop()).
WATCH_S = 5.0
#: The least time limit a window's second solve gets (see :meth:`Controller._solve`).
MIN_SOLVE_S = 0.05
#: Seconds :meth:`Controller.run` waits before it tries again after an error it survives.
RETRY_S = 1.0
#: The API server's answers :meth:`Controller.run` survives: a conflict (a pod changed under the
#: pass), too many requests, and the server's own errors.
RETRIED = (409, 429, 500, 502, 503, 504)
#: The API versions of Kueue's Topology tried, newest first.
TOPOLOGY_VERSIONS = ("v1beta2", "v1beta1")
#: The Kueue profiles a window is compared with.
KUEUE_METHODS = ("kueue-bestfit", "kueue-leastfree")


def _each(fn, items) -> None:
    """``fn(item)`` for every item, :data:`PATCHING` at a time; the first error (or a Ctrl-C)
    is raised once the calls under way have returned, and no further call starts."""
    from concurrent.futures import ThreadPoolExecutor

    if len(items) <= 1:
        for item in items:
            fn(item)
        return
    pool = ThreadPoolExecutor(PATCHING)
    try:
        list(pool.map(fn, items))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@dataclass(frozen=True)
class Decision:
    """One window: the gangs placed (key -> node names, in the gangs' pod order), the costs of
    tjap's choice and of Kueue's on the same jobs, the gangs left waiting and why."""

    time: float
    placed: dict
    method: str
    cost: float | None
    kueue_cost: float | None
    waiting: dict = field(default_factory=dict)
    refused: dict = field(default_factory=dict)
    free: int = 0

    def to_dict(self) -> dict:
        return {
            "event": "window",
            "time": self.time,
            "free_nodes": self.free,
            "placed": {"/".join(k): v for k, v in self.placed.items()},
            "method": self.method,
            "cost": self.cost,
            "kueue_cost": self.kueue_cost,
            "waiting": {"/".join(k): v for k, v in self.waiting.items()},
            "refused": {"/".join(k): v for k, v in self.refused.items()},
        }


def job_floor(tree, job: dict, levels: list[str]) -> float:
    """The CH cost of window job ``job`` alone on ``tree`` with every node free, its request
    kept (the exact optimum; ``levels`` the level names, the top first): no placement of it
    costs less. Infinite when no placement meets the request."""
    import numpy as np

    import tjap
    from tjap.placement.tree.cost import job_cost

    window = tjap.Window(tree, np.arange(tree.num_nodes), [job], levels=levels[::-1])
    best = tjap.solve(window, "auto")
    return job_cost(tree, best.assignment[0]) if best.has_solution else float("inf")


class Controller:
    """Places gated gangs on one cluster through ``api`` (:class:`tjap.placement.k8s.api.Api`).

    Parameters
    ----------
    api : Api
    gate : str
        The scheduling gate that marks pods for tjap.
    levels : list of str or None
        Node-label keys of the cluster's levels, the top first (``kubernetes.io/hostname`` may
        close the list); None: the ``topology.tjap.io/level-N`` keys the nodes carry.
    topology : str or None
        The name of a Kueue ``Topology`` object in the cluster whose ``spec.levels[].nodeLabel``
        are the levels (read on every pass, ``kueue.x-k8s.io/v1beta2``, else ``v1beta1``); not
        with ``levels``.
    kueue : str
        The Kueue profile every window is compared with (:data:`KUEUE_METHODS`).
    dry_run : bool
        Decide and log, patch nothing (``tjap k8s advise``).
    log : file or None
        Where the JSON line of each window goes.
    time_limit_s : float
        The time limit of a window's decision, its solves and Kueue's choice included (default
        1 s: a window never waits longer for a better placement than Kueue's; the best found
        by then, never worse than the constructive rules, is compared; a solve always gets at
        least :data:`MIN_SOLVE_S`). Not counted: a gang's floor under ``topology_wait_s``,
        solved once per request and cluster (0.2 s for 72 pods in slices of 9 on 4,608 nodes).
    fragmentation : float
        Weight of the windows' fragmentation term: cost units per whole free domain of
        ``fragmentation_level`` that the window's jobs break into (0: none; default
        :data:`DEFAULT_FRAGMENTATION`). tjap's choice then keeps whole domains free for the
        large jobs to come where it can, and still never costs more than Kueue's choice: the
        guard compares the costs without the term (CH cost and ``prefer`` terms), and Kueue's
        choice is taken when the term made tjap's costlier. Where the gangs' pods carry
        ``activeDeadlineSeconds``, the term prices time instead: the seconds a gang keeps a
        domain from being whole, one weight per day (:mod:`tjap.placement.tree.fragmentation`):
        a long gang goes where the nodes are busy for long anyway, a short one may break a
        whole domain.
    fragmentation_level : str or None
        The level (a node-label key) whose whole free domains the term keeps; default the top
        level (a block of racks, on a cluster of blocks, racks and hosts).
    improve : bool
        Let ``guarded`` try its free-form improvement within the time limit (default False:
        on the benchmark streams it changed nothing but the decision time).
    choose : {"best", "kueue"}
        ``"best"`` (default): the cheaper of tjap's optimum and Kueue's choice, one solve of
        ``guarded`` with ``scheduler=kueue`` (the record's ``method`` is its winner: ``scas``
        for the window's optimum, or the Kueue profile); ``"kueue"``:
        Kueue's choice always (the benchmarks' baseline: Kueue's algorithm applied by the same
        controller).
    topology_wait_s : float
        Seconds a gang may wait for a placement as cheap as its floor (its CH cost alone on
        the whole cluster, every node free), as Slurm's ``--switches=N@max-time`` lets a job wait
        for its switches: a gang whose place in the window costs more is held, and the window
        placed without it, until that much time has passed since the controller first saw it
        whole (default 0: never held). The annotation :data:`~tjap.placement.k8s.gangs.
        TOPOLOGY_WAIT` on a gang's pods sets its own. The rest of a running gang is never held.
    clock : callable
        The seconds the waits are measured in, and the time each plan records
        (:data:`~tjap.placement.k8s.gangs.PLACED_AT`: with the pods' ``activeDeadlineSeconds``
        the fragmentation term knows when their nodes will be free again; default
        ``time.time``; the benchmarks give the stream's clock).
    """

    def __init__(
        self,
        api,
        *,
        gate=None,
        levels=None,
        topology=None,
        kueue="kueue-bestfit",
        dry_run=False,
        log=None,
        choose="best",
        time_limit_s: float = 1.0,
        fragmentation: float = DEFAULT_FRAGMENTATION,
        fragmentation_level: str | None = None,
        improve: bool = False,
        topology_wait_s: float = 0.0,
        clock=time.time,
    ):
        from tjap.placement.k8s.gangs import GATE

        if kueue not in KUEUE_METHODS:
            raise InvalidInputError(
                f"kueue must be one of {', '.join(KUEUE_METHODS)}, got {kueue!r}"
            )
        self.api, self.gate, self.kueue = api, gate or GATE, kueue
        self.levels = list(levels) if levels else None
        if topology is not None and self.levels is not None:
            raise InvalidInputError("give the levels or a Kueue Topology's name, not both")
        self.topology = topology
        if choose not in ("best", "kueue"):
            raise InvalidInputError(f"choose must be best or kueue, got {choose!r}")
        self.dry_run, self.log, self.choose = dry_run, log, choose
        self.time_limit_s, self.improve = time_limit_s, bool(improve)
        from tjap.core.errors import check_number

        self.fragmentation = check_number("fragmentation", fragmentation, 0)
        self.fragmentation_level = fragmentation_level
        self.topology_wait_s = check_number("topology_wait_s", topology_wait_s, 0)
        self.clock = clock
        self._first_seen: dict = {}  # gang key -> when it was first seen whole (self.clock)
        self._floors: dict = {}  # a job's request (JSON) -> its floor on the cluster of
        self._floors_of: tuple = ()  # these nodes
        self._told: set = set()  # (gang, reason) pairs already recorded as events
        import threading

        self._stop = threading.Event()
        self.last_apply_s = 0.0  # seconds the last window's patches took
        self.last_decide_s = 0.0  # seconds its decision took (the solves included)
        #: A :class:`tjap.k8s.metrics.Metrics` fed every record (None: none kept).
        self.metrics: Metrics | None = None

    # -- reading -------------------------------------------------------------------------------
    def read(self):
        from tjap.placement.k8s.gangs import has_gate, job_sizes
        from tjap.placement.k8s.nodes import HOSTNAME, LEVEL_PREFIX
        from tjap.placement.tree.topology import Topology

        nodes = self.api.items("/api/v1/nodes")
        pods = self.api.items("/api/v1/pods")
        levels = self.levels if self.topology is None else self._topology_levels()
        if levels is None:
            keys = {
                k
                for n in nodes
                for k in (n["metadata"].get("labels") or {})
                if k.startswith(LEVEL_PREFIX)
            }
            levels = sorted(
                keys,
                key=lambda k: (
                    int(k[len(LEVEL_PREFIX) :]) if k[len(LEVEL_PREFIX) :].isdigit() else 0
                ),
            )
        levels = [k for k in levels if k != HOSTNAME]
        if self.fragmentation_level is not None and self.fragmentation_level not in levels:
            raise InvalidInputError(
                f"the fragmentation level {self.fragmentation_level!r} is not a level of this "
                f"cluster; its levels are {', '.join(levels) or 'none'}"
            )
        if not nodes:
            raise InvalidInputError(
                "the cluster has no node; add nodes (tjap k8s cluster up --topology FILE)"
            )
        if not levels:
            raise InvalidInputError(
                "the nodes carry no topology level labels; give --levels KEY,KEY (the top first)"
            )
        pairs = [(n["metadata"]["name"], n["metadata"].get("labels") or {}) for n in nodes]
        tree = Topology.from_node_labels(pairs, levels, missing="skip")
        gated = [p for p in pods if has_gate(p, self.gate)]
        sizes = job_sizes(gated, self._read_job)
        return {"nodes": nodes, "pods": pods, "levels": levels, "tree": tree, "sizes": sizes}

    def _topology_levels(self) -> list[str]:
        """The levels of the Kueue ``Topology`` named :attr:`topology`, top first."""
        from tjap.placement.k8s.api import ApiError
        from tjap.placement.tree.levels import read_levels

        for version in TOPOLOGY_VERSIONS:
            try:
                found = self.api.get(f"/apis/kueue.x-k8s.io/{version}/topologies/{self.topology}")
            except ApiError as exc:
                if exc.status == 404:
                    continue  # not served in this version, or no such object
                raise
            return read_levels(found)
        raise InvalidInputError(
            f"the cluster has no Kueue Topology {self.topology!r} (kueue.x-k8s.io "
            f"{' or '.join(TOPOLOGY_VERSIONS)}): kubectl get topologies lists them; or give "
            "--levels KEY,KEY (the top first)"
        )

    def _read_job(self, namespace: str, name: str) -> dict | None:
        from tjap.placement.k8s.api import ApiError

        try:
            return self.api.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    # -- deciding ------------------------------------------------------------------------------
    def decide(self, state) -> Decision:
        import numpy as np

        import tjap
        from tjap.placement.k8s.gangs import gangs
        from tjap.placement.k8s.nodes import busy_seconds, free_nodes
        from tjap.placement.tree.jobs import Job, resolve_job
        from tjap.placement.tree.result import objective_of

        began = time.perf_counter()  # the window's time limit counts from here
        now = self.clock()
        tree, levels = state["tree"], state["levels"]
        names = set(tree.node_names)
        free = free_nodes(state["nodes"], state["pods"]) & names
        idle = np.array(sorted(tree.node_index(n) for n in free), dtype=np.int64)
        busy = {  # the busy nodes whose end is known (the fragmentation term prices by it)
            n: s
            for n, s in busy_seconds(state["pods"], now).items()
            if n in names and n not in free
        }
        waiting, refused, chosen, seen, waits = {}, {}, [], {}, {}
        left = len(free)
        released = self._released_counts(state["pods"])
        for gang in gangs(state["pods"], self.gate, state.get("sizes")):
            if any(self._planned(p) for p in gang.pods):
                continue  # a plan in flight: finished by resume()
            if gang.key in released:  # the rest of a gang a killed run released in part
                if gang.size and len(gang.pods) + released[gang.key] < gang.size:
                    waiting[gang.key] = "a part of it runs; its other pods do not all exist"
                    continue
                chosen.append((gang, {"nodes": len(gang.pods)}))  # on any free nodes
                left -= len(gang.pods)
                continue
            if not gang.complete:
                waiting[gang.key] = (
                    "its Job is gone"
                    if gang.size == 0
                    else f"{len(gang.pods)} of {gang.size} pods exist"
                )
                continue
            try:
                job = gang.job(levels)
                if job["nodes"] > tree.num_nodes:
                    raise InvalidInputError(
                        f"the job has {job['nodes']} pods and the cluster {tree.num_nodes} nodes"
                    )
                resolve_job(Job.from_value(job), tree, levels[::-1])  # the window's own check
                waits[gang.key] = self._topology_wait(gang)
            except InvalidInputError as exc:
                refused[gang.key] = str(exc)
                self._event(gang, "TjapRequestRefused", str(exc))
                continue
            seen[gang.key] = self._first_seen.get(gang.key, now)
            if job["nodes"] > left:
                waiting[gang.key] = f"{job['nodes']} pods, {left} nodes free"
                continue
            chosen.append((gang, job))
            left -= job["nodes"]
        self._first_seen = seen  # the gangs gone or placed are forgotten
        placed, method, cost, kueue_cost = {}, "", None, None
        deadline = None if self.time_limit_s is None else began + self.time_limit_s
        while chosen:
            window = tjap.Window(
                tree, idle, [job for _, job in chosen], levels=levels[::-1], busy_s=busy
            )
            best, chose, theirs = self._solve(window, deadline)
            if best is not None:
                held = self._held(tree, levels, chosen, best.assignment, waits, now)
                if held:  # placed without them; they wait for a better place
                    for i in sorted(held, reverse=True):
                        gang, _ = chosen.pop(i)
                        waiting[gang.key] = held[i]
                    continue
                method, cost, kueue_cost = chose, objective_of(window, best.assignment), theirs
                for (gang, _), nodes in zip(chosen, best.node_names()):
                    placed[gang.key] = list(nodes)
                break
            gang, _ = chosen.pop()
            waiting[gang.key] = "no placement meets its request with the others of the window"
        return Decision(time.time(), placed, method, cost, kueue_cost, waiting, refused, len(free))

    def _topology_wait(self, gang) -> float:
        """The seconds ``gang`` may wait for its floor: its annotation, else the default."""
        from tjap.placement.k8s.gangs import TOPOLOGY_WAIT

        raw = gang.annotations.get(TOPOLOGY_WAIT)
        if raw is None:
            return self.topology_wait_s
        try:
            wait = float(raw)
        except ValueError:
            wait = -1.0
        if not 0 <= wait < float("inf"):
            raise InvalidInputError(
                f"{TOPOLOGY_WAIT}: {str(raw)!r:.30} is not a number of seconds >= 0"
            )
        return wait

    def _held(self, tree, levels, chosen, assignment, waits, now) -> dict:
        """Index in ``chosen`` -> the reason, for each gang the window would place at a cost
        above its floor while it may still wait (``waits``: its topology wait; the rest of a
        running gang has none)."""
        import json

        from tjap.placement.tree.cost import job_cost

        held = {}
        for i, ((gang, job), nodes) in enumerate(zip(chosen, assignment)):
            wait = waits.get(gang.key, 0.0)
            waited = now - self._first_seen.get(gang.key, now)
            if waited >= wait:
                continue
            cost = job_cost(tree, nodes)
            if self._floors_of != tree.node_names:  # another cluster: its own floors
                self._floors, self._floors_of = {}, tree.node_names
            key = json.dumps(job, sort_keys=True)
            if key not in self._floors:
                self._floors[key] = job_floor(tree, job, levels)
            floor = self._floors[key]
            if cost > floor + 1e-6:
                held[i] = (
                    f"waits for a place as cheap as its floor: here {cost:.0f}, alone on the "
                    f"cluster {floor:.0f}; {wait - waited:.0f} s more at most"
                )
        return held

    def _solve(self, window, deadline: float | None = None):
        """One window's placement: (the Result applied or None, the method that chose it, the
        cost of Kueue's choice or None). With ``choose="best"``: one solve of ``guarded``
        against the Kueue profile on the window with the fragmentation term, taken when its
        choice costs at most Kueue's by the window's own objective (CH cost and ``prefer``
        terms); otherwise (or with no weight) one solve of ``guarded`` on the window itself.
        The solves share what is left until ``deadline`` (a ``time.perf_counter()`` reading;
        :meth:`decide` sets it at :attr:`time_limit_s` after its start, so Kueue's choice and any
        earlier try of the window count; None: :attr:`time_limit_s` each): the first leaves
        :data:`MIN_SOLVE_S` for the second, and each gets at least that, so that the exact
        optimum or Kueue's choice is still compared."""
        import tjap
        from tjap.placement.tree.result import objective_of

        kueue = tjap.solve(window, self.kueue)
        theirs = kueue.objective if kueue.has_solution else None
        if self.choose == "kueue":
            return (kueue if kueue.has_solution else None), self.kueue, theirs
        options = {"scheduler": self.kueue, "improve": self.improve}

        def left(keep: float = 0.0):
            if deadline is None:
                return None if self.time_limit_s is None else self.time_limit_s
            return max(MIN_SOLVE_S, deadline - time.perf_counter() - keep)

        if self.fragmentation:
            level = self.fragmentation_level or window.levels[-1]  # default: the top level
            priced = window.with_fragmentation(self.fragmentation, level)
            best = tjap.solve(priced, "guarded", time_limit_s=left(MIN_SOLVE_S), **options)
            if best.has_solution and (
                theirs is None or objective_of(window, best.assignment) <= theirs + 1e-9
            ):
                return best, best.info.get("winner"), theirs
        best = tjap.solve(window, "guarded", time_limit_s=left(), **options)
        return (best if best.has_solution else None), best.info.get("winner"), theirs

    # -- applying ------------------------------------------------------------------------------
    def _planned(self, pod) -> str | None:
        from tjap.placement.k8s.gangs import PLANNED

        return (pod["metadata"].get("annotations") or {}).get(PLANNED)

    def _pod_path(self, pod) -> str:
        meta = pod["metadata"]
        return f"/api/v1/namespaces/{meta.get('namespace', 'default')}/pods/{meta['name']}"

    def apply(self, decision: Decision, state) -> int:
        """Plan, then release, every gang of ``decision``; returns the pods released. Each phase
        sends its patches :data:`PATCHING` at a time, and the release starts only once every
        plan is written."""
        from tjap.placement.k8s.gangs import PLACED_AT, PLANNED, gangs

        by_key = {g.key: g for g in gangs(state["pods"], self.gate, state.get("sizes"))}
        placed_at = f"{self.clock():.3f}"
        pairs = [
            (pod, node)
            for key, nodes in decision.placed.items()
            for pod, node in zip(by_key[key].pods, nodes)
        ]

        def plan(pair) -> None:
            pod, node = pair
            answer = self.api.patch(
                self._pod_path(pod),
                {"metadata": {"annotations": {PLANNED: node, PLACED_AT: placed_at},
                              "resourceVersion": pod["metadata"]["resourceVersion"]}},
                merge="merge",
            )  # fmt: skip
            pod["metadata"] = answer["metadata"]

        began = time.perf_counter()
        _each(plan, pairs)  # 1: the plan, on every pod, before any release
        _each(self._release_one, [pod for pod, _ in pairs])  # 2: release
        self.last_apply_s = time.perf_counter() - began
        return len(pairs)

    def _release(self, pods) -> int:
        _each(self._release_one, pods)
        return len(pods)

    def _release_one(self, pod) -> None:
        from tjap.placement.k8s.nodes import HOSTNAME

        node = self._planned(pod)
        gates = [g for g in pod["spec"].get("schedulingGates") or [] if g.get("name") != self.gate]
        selector = {**(pod["spec"].get("nodeSelector") or {}), HOSTNAME: node}
        self.api.patch(
            self._pod_path(pod),
            {"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]},
             "spec": {"schedulingGates": gates or None, "nodeSelector": selector}},
            merge="merge",
        )  # fmt: skip

    def resume(self, state) -> int:
        """Finish (or undo) the plans a previous run left: see the module's documentation.
        Returns the pods released or planned again."""
        from tjap.placement.k8s.gangs import PLACED_AT, PLANNED, gangs
        from tjap.placement.k8s.nodes import free_nodes

        others = [p for p in state["pods"] if not (self._planned(p) and self._gated(p))]
        free = free_nodes(state["nodes"], others)  # the planned nodes are not held by the plan
        touched = 0
        released = self._released_counts(state["pods"])
        for gang in gangs(state["pods"], self.gate, state.get("sizes")):
            planned = [p for p in gang.pods if self._planned(p)]
            if not planned:
                continue
            good = [p for p in planned if self._planned(p) in free]
            gone = [p for p in planned if p not in good]
            started = gang.key in released
            if not started and (gone or len(planned) < len(gang.pods) or not gang.complete):
                # redo the whole gang: a planned node was lost, a pod of the gang is gone, or
                # the run was killed before it had planned every pod (a part of a gang never
                # starts alone)
                good, gone = [], planned
            if not self.dry_run:
                self._release(good)
                for pod in gone:
                    self.api.patch(
                        self._pod_path(pod),
                        {"metadata": {"annotations": {PLANNED: None, PLACED_AT: None}}},
                        merge="merge",
                    )
            self._record({"event": "resume", "gang": "/".join(gang.key), "released": len(good),
                          "replanned": len(gone)})  # fmt: skip
            touched += len(good) + len(gone)
        return touched

    def _gated(self, pod) -> bool:
        from tjap.placement.k8s.gangs import has_gate

        return has_gate(pod, self.gate)

    def _released_counts(self, pods) -> dict:
        """Gang key -> its pods released by tjap (planned, gate gone), for the gangs that still
        have gated pods (the rest of a gang whose release a killed run left half done)."""
        from tjap.placement.k8s.gangs import gang_key

        gated = {gang_key(p)[0] for p in pods if self._gated(p)}
        counts: dict = {}
        for p in pods:
            key = gang_key(p)[0]
            if key in gated and self._planned(p) and not self._gated(p):
                counts[key] = counts.get(key, 0) + 1
        return counts

    def _event(self, gang, reason: str, message: str) -> None:
        if (gang.key, message) in self._told or self.dry_run:
            return
        self._told.add((gang.key, message))
        pod = gang.pods[0]["metadata"]
        self.api.create(
            f"/api/v1/namespaces/{gang.namespace}/events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"generateName": f"{pod['name']}.", "namespace": gang.namespace},
                "involvedObject": {"kind": "Pod", "name": pod["name"], "namespace": gang.namespace,
                                   "uid": pod.get("uid"), "apiVersion": "v1"},
                "reason": reason,
                "message": message[:1000],
                "type": "Warning",
                "source": {"component": "tjap-k8s-place"},
                "firstTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "lastTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "count": 1,
            },
        )  # fmt: skip

    # -- the loop ------------------------------------------------------------------------------
    def _record(self, data: dict[str, Any]) -> None:
        if self.metrics is not None:
            self.metrics.observe(data)
        if self.log is not None:
            print(json.dumps(data, allow_nan=False, default=str), file=self.log, flush=True)

    def run_pass(self) -> Decision:
        """Read, finish what a previous run left, decide one window and apply it."""
        state = self.read()
        if self.resume(state) and not self.dry_run:
            state = self.read()
        began = time.perf_counter()
        decision = self.decide(state)
        self.last_decide_s = time.perf_counter() - began
        released = 0 if self.dry_run else self.apply(decision, state)
        self._record({**decision.to_dict(), "released_pods": released, "dry_run": self.dry_run,
                      "decide_s": round(self.last_decide_s, 6)})  # fmt: skip
        return decision

    def _alive(self) -> None:
        if self.metrics is not None:
            self.metrics.alive()

    def run(self, *, interval_s: float = 10.0, once: bool = False, lease=None) -> int:
        """Passes until Ctrl-C or SIGTERM (the pass under way finishes its patches' current
        pod); with ``once``, one pass. Between passes it watches the pods (from the version
        the pass read): a pod created, changed or deleted starts the next pass at once (0.2 s
        after the first change, so a gang created pod by pod is read whole), and a pass runs
        every ``interval_s`` seconds anyway (nodes added, cordoned or uncordoned).

        With ``lease`` (:class:`tjap.placement.k8s.lease.LeaderLease`) several replicas can
        run: only the holder of the Lease passes, renewing it while it waits; the others stand
        by, trying every :attr:`~tjap.placement.k8s.lease.LeaderLease.renew_s` seconds, and
        one takes over when the holder stops renewing (killed, cut off) or gives the Lease up
        (a clean stop: Ctrl-C or SIGTERM). Each change is an ``lease`` record (``leading``,
        ``standby`` with the holder, ``released``).

        A pass or a watch that cannot reach the API server, or that it answers with a conflict
        (a pod changed under the pass) or a server error, is logged as an ``error`` record and
        tried again after :data:`RETRY_S` seconds: nothing is lost, since the next pass reads
        the cluster afresh and finishes any plan left (:meth:`resume`). With ``once`` the
        error is raised."""
        import sys

        from tjap.placement.k8s.api import ApiError, KubernetesUnreachableError

        self._stop.clear()
        failing, role = False, None
        try:
            while not self._stop.is_set():
                try:
                    if lease is not None:
                        leading = lease.acquire_or_renew() if lease.due() else lease.leading
                        now = "leading" if leading else "standby"
                        if now != role:
                            role = now
                            self._lease_record(lease, now, holder=lease.holder)
                            if not leading:
                                print(f"tjap: standing by: the Lease {lease.namespace}/"
                                      f"{lease.name} is held by {lease.holder}", file=sys.stderr)  # fmt: skip
                        self._alive()
                        if not leading:
                            self._stop.wait(lease.renew_s)
                            continue
                    self.run_pass()
                    failing = False
                    if once:
                        return 0
                    self._wait(interval_s, lease)
                except (KubernetesUnreachableError, ApiError) as exc:
                    if once or (isinstance(exc, ApiError) and exc.status not in RETRIED):
                        raise
                    self._record({"event": "error", "time": time.time(), "error": str(exc)})
                    if not failing:  # one line on stderr per outage, however long
                        print(f"tjap: {exc}; trying again every {RETRY_S:g} s", file=sys.stderr)
                    failing = True
                    self._stop.wait(RETRY_S)
        finally:
            if lease is not None and lease.release():
                self._lease_record(lease, "released")
        return 0

    def _lease_record(self, lease, state: str, **more) -> None:
        self._record({"event": "lease", "time": time.time(), "state": state,
                      "lease": f"{lease.namespace}/{lease.name}", "identity": lease.identity,
                      **more})  # fmt: skip

    def _wait(self, interval_s: float, lease=None) -> None:
        """Until a pod changes, ``interval_s`` seconds pass, or :meth:`stop`; with ``lease``,
        renewing it when due, and until it is lost."""
        wait = getattr(self.api, "wait_for_change", None)
        until = time.monotonic() + interval_s
        while not self._stop.is_set() and (left := until - time.monotonic()) > 0:
            if lease is not None:
                if lease.due():
                    if not lease.acquire_or_renew():
                        return  # lost: run() stands by
                    self._alive()
                left = min(left, max(0.05, lease.renew_in()))
            if wait is None:
                self._stop.wait(min(left, WATCH_S))
            elif wait("/api/v1/pods", min(left, WATCH_S)):
                return  # a pod changed: the next pass now

    def stop(self) -> None:
        """End :meth:`run` after its pass under way (within :data:`WATCH_S` seconds when it
        waits)."""
        self._stop.set()
