"""What Kueue's placements cost: the audit of the workloads a Kueue cluster admitted.

:func:`audit_cluster` reads, through the API server, every Kueue ``Workload``
(``kueue.x-k8s.io/v1beta2``), the nodes and the cluster's levels, and for every workload that
Kueue's topology-aware scheduling (TAS) placed, compares the nodes of its
``status.admission.podSetAssignments[].topologyAssignment`` with:

- ``optimum``: tjap's exact optimum for that job alone among the nodes free at its admission,
  under the same request (its pod set's ``topologyRequest``: a required level is the job's
  ``within``, a preferred one its ``prefer``, slices its ``segment``); ``cost`` and ``optimum``
  are both the window's objective (the CH cost, plus the ``prefer`` term where the job prefers a
  level), so ``cost - optimum`` is what a window optimiser would have saved on that job;
- ``bound``: the cheapest set of its size among those nodes, constraints dropped (the free-form
  optimum, CH cost); ``floor``: the cheapest of the empty cluster;
- ``kueue-bestfit`` and ``kueue-leastfree``: the nodes tjap's re-implementations of Kueue's
  algorithm choose from the same free nodes; how often they equal Kueue's own choice is their
  **fidelity** on this cluster's history (``summary["fidelity"]``). A workload where they
  differ is checked again with each workload whose order against it its second cannot tell (one
  admitted in the same second later in the queue order, one that finished in that second) taken
  as running at its admission, one at a time and all together: ``same_in_another_order`` (and
  ``summary["differing_by_order"]``) says the difference is only that order.

**The free nodes at an admission** are rebuilt from the workloads themselves, as Kueue's TAS cache
counts them: the nodes of every workload admitted before it (its ``QuotaReserved`` condition's
time; the same second: by creation time, then name, Kueue's queue order) and not finished
before (its ``Finished`` condition's time). Kubernetes records these times to the second; a
workload that finished in the very second others were admitted is taken as finished before the
first of them (in that order) that took one of its nodes (it must have been) and the ones after
it, and as still running for the ones before. The nodes of workloads the audit does not measure
(several pod sets, several pods on one node, one pod) still count as busy. What it cannot
see: nodes that were not Ready or cordoned then, and pods Kueue does not manage; ``fidelity``
tells how much that matters on the cluster's history.

The audit only reads. :meth:`KueueAudit.to_dict` is what ``tjap k8s audit --json`` prints;
:func:`tjap.k8s.audit_report.write_report` writes its web page (``--report DIR``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from tjap.core.errors import InvalidInputError

#: Version of the JSON layout of :meth:`KueueAudit.to_dict`.
AUDIT_FORMAT = 1
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads"
PROFILES = ("kueue-bestfit", "kueue-leastfree")
#: Why a workload is not audited (counted in ``skipped``).
REASONS = {
    "not_admitted": "no quota reserved yet (pending)",
    "no_topology": "admitted on a flavor without a topology (no topology assignment)",
    "several_pod_sets": "more than one pod set (its nodes count busy)",
    "not_at_hostname": "its assignment names domains above the nodes",
    "several_pods_per_node": "more than one pod on a node (its nodes count busy)",
    "unknown_nodes": "a node that is not in the cluster now",
    "below_min_nodes": "fewer pods than --min-nodes (its nodes count busy)",
    "bad_request": "a topology request tjap cannot read",
}


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _condition(workload: dict, kind: str) -> float | None:
    """When ``workload``'s condition ``kind`` turned True (Unix seconds), or None."""
    for c in (workload.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return _seconds(c.get("lastTransitionTime"))
    return None


def decode_assignment(assignment: dict) -> tuple[list[str], list[tuple[tuple[str, ...], int]]]:
    """Kueue's ``TopologyAssignment`` as its levels and one (values per level, pods) per domain:
    the v1beta2 form (``slices`` of ``domainCount`` domains, each level's value ``universal`` or
    ``individual`` prefix + root + suffix, ``podCounts`` universal or individual) or the v1beta1
    one (``domains`` of ``values`` and ``count``)."""
    levels = list(assignment.get("levels") or [])
    if "domains" in assignment:
        return levels, [(tuple(d["values"]), int(d["count"])) for d in assignment["domains"]]
    out = []
    for piece in assignment.get("slices") or []:
        n = int(piece["domainCount"])
        columns = []
        for value in piece["valuesPerLevel"]:
            if value.get("universal") is not None:
                columns.append([value["universal"]] * n)
                continue
            one = value["individual"]
            pre, post = one.get("prefix") or "", one.get("suffix") or ""
            roots = one["roots"]
            if len(roots) != n:
                raise InvalidInputError(
                    f"a topology assignment slice has {len(roots)} roots for {n} domains"
                )
            columns.append([pre + r + post for r in roots])
        counts = piece["podCounts"]
        per = (
            [counts["universal"]] * n
            if counts.get("universal") is not None
            else counts["individual"]
        )
        out += [(tuple(col[d] for col in columns), int(per[d])) for d in range(n)]
    return levels, out


def request_of(topology_request: dict | None, count: int, levels: list[str]) -> dict:
    """The window job (:class:`~tjap.placement.tree.jobs.Job` JSON) of a pod set of ``count`` pods
    and Kueue's ``topologyRequest``, read as the controller reads Kueue's annotations
    (:meth:`tjap.placement.k8s.gangs.Gang.job`)."""
    from tjap.placement.k8s.gangs import PREFERRED, REQUIRED, SLICE_LEVEL, SLICE_SIZE, Gang

    r = topology_request or {}
    notes = {}
    if r.get("required"):
        notes[REQUIRED] = r["required"]
    if r.get("preferred"):
        notes[PREFERRED] = r["preferred"]
    if r.get("podSetSliceRequiredTopology"):
        notes[SLICE_LEVEL] = r["podSetSliceRequiredTopology"]
    if r.get("podSetSliceSize") is not None:
        notes[SLICE_SIZE] = str(r["podSetSliceSize"])
    return Gang(("", ""), pods=[None] * count, annotations=notes).job(levels)


@dataclass
class Admission:
    """One admitted workload as the audit reads it."""

    namespace: str
    name: str
    created: float
    admitted: float
    finished: float | None
    nodes: list[int]  # node ids (empty when unknown)
    job: dict | None  # the window job, None when not audited
    reason: str = ""  # why not audited ("" when it is)
    queue: str = ""
    owner: str = ""  # the object that owns it (its Job), "" when none


@dataclass
class KueueAudit:
    """The audit's result: one row per audited workload, a summary, what was skipped."""

    tree: Any  # the Topology the nodes drew
    levels: list[str]
    jobs: list[dict] = field(default_factory=list)
    skipped: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    runtime_s: float = 0.0

    @property
    def summary(self) -> dict:
        rows = self.jobs
        out: dict = {"jobs": len(rows)}
        if not rows:
            return out
        for key in ("cost", "optimum", "bound", "floor"):
            out[key] = float(sum(r[key] for r in rows))
        floor = out["floor"]
        out["excess_ratio"] = out["cost"] / floor if floor else None
        excess = out["cost"] - floor
        out["removable_share"] = (out["cost"] - out["optimum"]) / excess if excess > 0 else None
        out["bound_share"] = (out["cost"] - out["bound"]) / excess if excess > 0 else None
        out["optimum_saving"] = 1 - out["optimum"] / out["cost"] if out["cost"] else None
        out["fidelity"] = {p: float(np.mean([r[p]["same"] for r in rows])) for p in PROFILES}
        out["differing"] = {p: [r["workload"] for r in rows if not r[p]["same"]] for p in PROFILES}
        # differing only by an order of events inside one second, which the records cannot tell
        out["differing_by_order"] = {
            p: [r["workload"] for r in rows if not r[p]["same"] and r[p]["same_in_another_order"]]
            for p in PROFILES
        }
        out["cheaper_than_kueue"] = int(sum(r["optimum"] < r["cost"] - 1e-9 for r in rows))
        return out

    def to_dict(self, *, jobs: bool = True) -> dict:
        data = {
            "format": AUDIT_FORMAT,
            "cluster": {
                "nodes": int(self.tree.num_nodes),
                "levels": list(self.levels),
            },
            "options": dict(self.options),
            "summary": self.summary,
            "skipped": dict(self.skipped),
            "runtime_s": round(self.runtime_s, 3),
        }
        if jobs:
            data["jobs"] = self.jobs
        return data

    def summary_text(self) -> str:
        s = self.summary
        skipped = sum(self.skipped.values())
        lines = [
            f"tjap k8s audit: {s['jobs']} workload(s) audited on {self.tree.num_nodes:,} nodes "
            f"(levels {', '.join(self.levels)}); {skipped} not audited"
            + (
                " (" + ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items())) + ")"
                if skipped
                else ""
            )
        ]
        if not s["jobs"]:
            return "\n".join(lines)
        lines.append(
            f"  Kueue's placements cost {s['cost']:,.1f}; the optimum of each job at its "
            f"admission {s['optimum']:,.1f} ({100 * (s['optimum_saving'] or 0):.1f} % less, "
            f"{s['cheaper_than_kueue']} of {s['jobs']} jobs cheaper); the free-form bound "
            f"{s['bound']:,.1f}; the empty cluster's floor {s['floor']:,.1f}"
        )
        fid = s["fidelity"]
        lines.append(
            "  fidelity (tjap's re-implementation chose Kueue's nodes): "
            + ", ".join(
                f"{p} {100 * fid[p]:.1f} % ({len(s['differing'][p])} differ, "
                f"{len(s['differing_by_order'][p])} of them the same in another order of their "
                "second)"
                for p in PROFILES
            )
        )
        return "\n".join(lines)


def read_admissions(
    workloads: list[dict], tree, levels: list[str], *, hostnames=None, min_nodes: int = 2
):
    """The admitted workloads (:class:`Admission`, in admission order) and the count of those not
    audited by reason (:data:`REASONS`; pending ones count as ``not_admitted``). ``hostnames``
    maps a node's ``kubernetes.io/hostname`` label to its name (default: the same)."""
    from tjap.placement.k8s.nodes import HOSTNAME

    index = {n: i for i, n in enumerate(tree.node_names)}
    by_name = {h: index[n] for h, n in (hostnames or {}).items() if n in index} or index
    skipped: dict[str, int] = {}
    out = []
    for w in workloads:
        meta, spec, status = w["metadata"], w.get("spec") or {}, w.get("status") or {}
        admitted = _condition(w, "QuotaReserved")
        admission = status.get("admission")
        if admitted is None or not admission:
            skipped["not_admitted"] = skipped.get("not_admitted", 0) + 1
            continue
        row = Admission(
            namespace=meta.get("namespace", ""),
            name=meta["name"],
            created=_seconds(meta.get("creationTimestamp")) or 0.0,
            admitted=admitted,
            finished=_condition(w, "Finished"),
            nodes=[],
            job=None,
            queue=admission.get("clusterQueue", ""),
            owner=next((o["name"] for o in meta.get("ownerReferences") or []), ""),
        )
        assignments = admission.get("podSetAssignments") or []
        nodes: list[int] = []
        reason = ""
        counts: list[int] = []
        for a in assignments:
            ta = a.get("topologyAssignment")
            if not ta:
                reason = reason or "no_topology"
                continue
            keys, domains = decode_assignment(ta)
            if not keys or keys[-1] != HOSTNAME:
                reason = reason or "not_at_hostname"
                continue
            for values, count in domains:
                node = by_name.get(values[-1])
                if node is None:
                    reason = reason or "unknown_nodes"
                    continue
                nodes.append(node)
                counts.append(count)
        row.nodes = sorted(set(nodes))
        pod_sets = spec.get("podSets") or []
        if not reason and len(assignments) > 1:
            reason = "several_pod_sets"
        if not reason and any(c > 1 for c in counts):
            reason = "several_pods_per_node"
        if not reason and len(row.nodes) < min_nodes:
            reason = "below_min_nodes"
        if not reason:
            try:
                row.job = request_of(pod_sets[0].get("topologyRequest"), len(row.nodes), levels)
            except (InvalidInputError, IndexError):
                reason = "bad_request"
        row.reason = reason
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
        out.append(row)
    out.sort(key=lambda r: (r.admitted, r.created, r.namespace, r.name))
    return out, skipped


def _busy_at_admissions(admissions, num_nodes: int):
    """For each admission of ``admissions`` (in Kueue's order, admitted times never decreasing):
    ``(row, busy, unsure)``. ``busy`` marks the nodes of the workloads admitted
    before it and not finished before it; a workload that finished in the second others were
    admitted finished before the first of them (in Kueue's order) that took one of its nodes,
    and after the ones before that. ``unsure`` holds the node lists of the workloads whose
    order against this one its second cannot tell: admitted in the same second after it, or
    finished in that second before it. One sweep over the admissions (a heap of finish times),
    not a scan of all earlier ones for each."""
    import bisect
    import heapq

    admitted = [q.admitted for q in admissions]
    freed_by: dict[int, int] = {}  # finished in a second -> the first admission then on its nodes
    for i, q in enumerate(admissions):
        if q.finished is None:
            continue
        mine = set(q.nodes)
        k = bisect.bisect_left(admitted, q.finished, lo=i + 1)
        while k < len(admissions) and admitted[k] == q.finished:
            if mine & set(admissions[k].nodes):
                freed_by[i] = k
                break
            k += 1
    count = np.zeros(num_nodes, dtype=np.int64)  # workloads holding each node
    ends: list = []  # (finished, i) of the workloads counted
    due: list[int] = []  # counted, finished by now, not yet free (finished in this second)
    freed: list[int] = []  # finished in this second and free for the admissions since
    second = None
    for k, row in enumerate(admissions):
        if k:
            q = admissions[k - 1]
            np.add.at(count, np.asarray(q.nodes, dtype=np.int64), 1)
            if q.finished is not None:
                heapq.heappush(ends, (q.finished, k - 1))
        if row.admitted != second:
            second, freed = row.admitted, []
        while ends and ends[0][0] <= row.admitted:
            due.append(heapq.heappop(ends)[1])
        still = []
        for i in due:
            q = admissions[i]
            if q.finished < row.admitted or freed_by.get(i, k + 1) <= k:
                np.subtract.at(count, np.asarray(q.nodes, dtype=np.int64), 1)
                if q.finished == row.admitted:
                    freed.append(i)
            else:
                still.append(i)
        due = still
        busy = count > 0
        busy[row.nodes] = False  # its own nodes were free for it
        later = range(k + 1, bisect.bisect_right(admitted, row.admitted))
        unsure = [admissions[i].nodes for i in sorted(freed)] + [admissions[i].nodes for i in later]
        yield row, busy, unsure


def audit_admissions(admissions, tree, levels: list[str], *, convention: str = "paper") -> list:
    """The audited rows of :func:`read_admissions`' list (see the module's docstring)."""
    import tjap
    from tjap.placement.tree.cost import job_cost
    from tjap.placement.tree.result import objective_of
    from tjap.placement.tree.single_job import SingleJobTables

    names = tree.node_names
    tables = SingleJobTables(tree)
    everything = np.ones(tree.num_nodes, dtype=bool)
    floors: dict[int, float] = {}
    window_levels = levels[::-1]
    rows = []
    for row, busy, unsure in _busy_at_admissions(admissions, tree.num_nodes):
        if row.job is None:
            continue
        idle = np.flatnonzero(~busy)
        window = tjap.Window(tree, idle, [row.job], levels=window_levels)
        recorded = list(row.nodes)
        cost = objective_of(window, [recorded], convention)
        best = tjap.solve(window, "auto")
        optimum_nodes = sorted(int(v) for v in best.assignment[0]) if best.has_solution else []
        optimum = objective_of(window, best.assignment, convention) if best.has_solution else cost
        size = len(recorded)
        s, bound_nodes = tables.bound(~busy, size)
        if size not in floors:
            floors[size] = tables.cost(size, tables.bound(everything, size)[0], convention)
        entry = {
            "workload": f"{row.namespace}/{row.name}",
            "job": f"{row.namespace}/{row.owner or row.name}",
            "queue": row.queue,
            "admitted": datetime.fromtimestamp(row.admitted, timezone.utc).isoformat(),
            "finished": None
            if row.finished is None
            else datetime.fromtimestamp(row.finished, timezone.utc).isoformat(),
            "size": size,
            "request": row.job,
            "idle": int(idle.size),
            "nodes": [names[i] for i in recorded],
            "busy": [names[i] for i in np.flatnonzero(busy)],
            "ch_cost": job_cost(tree, recorded, convention),
            "cost": float(cost),
            "optimum": float(min(optimum, cost)),
            "optimum_nodes": [names[i] for i in optimum_nodes],
            "bound": float(tables.cost(size, s, convention)),
            "bound_nodes": [names[int(i)] for i in bound_nodes],
            "floor": float(floors[size]),
        }
        for profile in PROFILES:
            chosen = _choice(window, profile)
            same = chosen == recorded
            entry[profile] = {
                "same": same,
                "nodes": [names[i] for i in chosen],
                "cost": float(objective_of(window, [chosen], convention)) if chosen else None,
                "same_in_another_order": same
                or _agrees_in_another_order(tree, busy, row, unsure, window_levels, profile),
            }
        rows.append(entry)
    return rows


def _choice(window, profile: str) -> list[int]:
    """The node ids ``profile`` gives the one job of ``window`` (empty when it places none)."""
    import tjap

    theirs = tjap.solve(window, profile)
    return sorted(int(v) for v in theirs.assignment[0]) if theirs.has_solution else []


def _agrees_in_another_order(tree, busy, row, unsure, levels, profile: str) -> bool:
    """Whether ``profile`` chooses ``row``'s nodes when one of the ``unsure`` workloads (node
    lists), or all of them, ran at its admission: another order of events within its second,
    which records to the second cannot rule out."""
    import tjap

    trials = [[u] for u in unsure] + ([unsure] if len(unsure) > 1 else [])
    for trial in trials:
        taken = busy.copy()
        for nodes in trial:
            taken[nodes] = True
        taken[row.nodes] = False
        window = tjap.Window(tree, np.flatnonzero(~taken), [row.job], levels=levels)
        if _choice(window, profile) == list(row.nodes):
            return True
    return False


def cluster_levels(api, *, levels=None, topology: str | None = None) -> list[str]:
    """The levels of the audit (top first, ``kubernetes.io/hostname`` last): ``levels`` as
    given, else the Kueue ``Topology`` named ``topology``, else the only one in the cluster."""
    from tjap.placement.k8s.api import ApiError
    from tjap.placement.k8s.nodes import HOSTNAME
    from tjap.placement.tree.levels import read_levels

    if levels:
        keys = list(levels)
    else:
        try:
            found = api.items("/apis/kueue.x-k8s.io/v1beta2/topologies")
        except ApiError as exc:
            if exc.status == 404:
                raise InvalidInputError(
                    "the cluster serves no Kueue topologies (kueue.x-k8s.io/v1beta2): is Kueue "
                    "installed? Or give --levels KEY,KEY (the top first)"
                ) from None
            raise
        if topology is not None:
            found = [t for t in found if t["metadata"]["name"] == topology]
            if not found:
                raise InvalidInputError(
                    f"the cluster has no Kueue Topology {topology!r}; kubectl get topologies "
                    "lists them"
                )
        if len(found) != 1:
            raise InvalidInputError(
                f"the cluster has {len(found)} Kueue Topologies; name one with --topology-name"
                if found
                else "the cluster has no Kueue Topology; give --levels KEY,KEY (the top first)"
            )
        keys = read_levels(found[0])
    return [k for k in keys if k != HOSTNAME] + [HOSTNAME]


def audit_cluster(
    api,
    *,
    levels=None,
    topology: str | None = None,
    min_nodes: int = 2,
    convention: str = "paper",
) -> KueueAudit:
    """Audit the workloads Kueue admitted on the cluster behind ``api``
    (:class:`tjap.placement.k8s.api.Api`); see the module's docstring."""
    from tjap.core.errors import check_int
    from tjap.placement.k8s.nodes import HOSTNAME
    from tjap.placement.tree.cost import convention_code
    from tjap.placement.tree.topology import Topology

    began = time.perf_counter()
    check_int("min_nodes", min_nodes, 2)
    convention_code(convention)
    keys = cluster_levels(api, levels=levels, topology=topology)
    nodes = api.items("/api/v1/nodes")
    if not nodes:
        raise InvalidInputError("the cluster has no node")
    pairs = [(n["metadata"]["name"], n["metadata"].get("labels") or {}) for n in nodes]
    tree = Topology.from_node_labels(pairs, keys[:-1], missing="skip")
    workloads = api.items(WORKLOADS)
    hostnames = {
        (n["metadata"].get("labels") or {}).get(HOSTNAME, n["metadata"]["name"]): n["metadata"][
            "name"
        ]
        for n in nodes
    }
    admissions, skipped = read_admissions(
        workloads, tree, keys[:-1], hostnames=hostnames, min_nodes=min_nodes
    )
    rows = audit_admissions(admissions, tree, keys[:-1], convention=convention)
    return KueueAudit(
        tree=tree,
        levels=keys,
        jobs=rows,
        skipped=skipped,
        options={"min_nodes": min_nodes, "convention": convention, "workloads": len(workloads)},
        runtime_s=time.perf_counter() - began,
    )
