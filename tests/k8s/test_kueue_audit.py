"""The audit of Kueue's Workloads on recorded objects (no cluster): decoding Kueue's topology
assignments, rebuilding the free nodes at each admission, and the figures per workload."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tjap
from tjap.core.errors import InvalidInputError
from tjap.k8s.audit import (
    PROFILES,
    audit_admissions,
    decode_assignment,
    read_admissions,
    request_of,
)
from tjap.placement.tree.cost import job_cost

TREE = tjap.Topology.from_node_labels(
    [(f"n{i:02d}", {"block": f"b{i // 8}", "rack": f"r{i // 4}"}) for i in range(16)],
    ["block", "rack"],
)
LEVELS = ["block", "rack"]
HOST = "kubernetes.io/hostname"


def workload(name, nodes, admitted, finished=None, request=None, created=None, counts=None):
    """A Workload as Kueue v1beta2 stores it, admitted at second ``admitted`` on ``nodes`` (the
    compressed form: one slice, hostnames as prefix + roots)."""

    def stamp(s):
        return f"2026-12-04T10:{s // 60:02d}:{s % 60:02d}Z"

    conditions = [
        {"type": "QuotaReserved", "status": "True", "lastTransitionTime": stamp(admitted)}
    ]
    if finished is not None:
        conditions.append({"type": "Finished", "status": "True",
                           "lastTransitionTime": stamp(finished)})  # fmt: skip
    return {
        "metadata": {"name": name, "namespace": "default",
                     "creationTimestamp": stamp(admitted if created is None else created)},
        "spec": {"podSets": [{"name": "main", "count": len(nodes),
                              "topologyRequest": request or {}}]},
        "status": {
            "conditions": conditions,
            "admission": {"clusterQueue": "tas", "podSetAssignments": [{
                "name": "main",
                "topologyAssignment": {"levels": [HOST], "slices": [{
                    "domainCount": len(nodes),
                    "valuesPerLevel": [{"individual": {"prefix": "n", "roots": [n[1:] for n in nodes]}}],
                    "podCounts": {"individual": counts} if counts else {"universal": 1},
                }]},
            }]},
        },
    }  # fmt: skip


def test_decode_assignment_reads_both_forms():
    keys, domains = decode_assignment({
        "levels": ["rack", HOST],
        "slices": [{"domainCount": 2,
                    "valuesPerLevel": [{"universal": "r0"},
                                       {"individual": {"prefix": "n0", "suffix": "x",
                                                       "roots": ["1", "2"]}}],
                    "podCounts": {"individual": [2, 1]}}],
    })  # fmt: skip
    assert keys == ["rack", HOST]
    assert domains == [(("r0", "n01x"), 2), (("r0", "n02x"), 1)]
    assert decode_assignment({"levels": [HOST], "domains": [{"values": ["a"], "count": 3}]}) == (
        [HOST],
        [(("a",), 3)],
    )
    with pytest.raises(InvalidInputError, match="3 roots for 2 domains"):
        decode_assignment({"levels": [HOST], "slices": [{
            "domainCount": 2, "valuesPerLevel": [{"individual": {"roots": ["a", "b", "c"]}}],
            "podCounts": {"universal": 1}}]})  # fmt: skip


def test_request_of_reads_kueue_topology_requests():
    assert request_of({"required": "rack"}, 4, LEVELS) == {"nodes": 4, "within": "rack"}
    assert request_of({"preferred": "block"}, 4, LEVELS) == {"nodes": 4, "prefer": "block"}
    assert request_of(
        {"preferred": "block", "podSetSliceRequiredTopology": "rack", "podSetSliceSize": 2},
        4,
        LEVELS,
    ) == {"nodes": 4, "prefer": "block", "segment": 2, "segment_level": "rack"}
    with pytest.raises(InvalidInputError, match="not a level"):
        request_of({"required": "zone"}, 4, LEVELS)


def test_free_nodes_are_rebuilt_from_admission_and_finish_times():
    rows = [
        workload("a", ["n00", "n01", "n02", "n03"], 10, finished=20),
        workload("b", ["n04", "n05"], 12, request={"required": "rack"}),
        # admitted in the second a finished: a counts as finished first (its nodes free)
        workload("c", ["n00", "n01", "n02"], 20, request={"preferred": "rack"}, created=14),
        # the same second as c, created later: c is before it in Kueue's order (busy)
        workload("d", ["n08", "n09"], 20, created=15),
        workload("pending", [], 0),
    ]
    rows[-1]["status"] = {}
    admissions, skipped = read_admissions(rows, TREE, LEVELS)
    assert skipped == {"not_admitted": 1}
    assert [a.name for a in admissions] == ["a", "b", "c", "d"]
    audited = {r["workload"][8:]: r for r in audit_admissions(admissions, TREE, LEVELS)}
    assert audited["b"]["busy"] == ["n00", "n01", "n02", "n03"]
    assert audited["c"]["busy"] == ["n04", "n05"]
    assert audited["d"]["busy"] == ["n00", "n01", "n02", "n04", "n05"]
    for r in audited.values():
        ids = [TREE.node_index(n) for n in r["nodes"]]
        assert r["ch_cost"] == pytest.approx(job_cost(TREE, ids))
        assert r["floor"] <= r["bound"] + 1e-9
        assert r["optimum"] <= r["cost"] + 1e-9
        assert set(r) >= set(PROFILES)


def test_the_optimum_is_the_cheapest_feasible_set_by_brute_force():
    # a 3-node job that prefers a rack, on a cluster where racks 0 and 1 are part busy
    rows = [
        workload("busy", ["n00", "n01", "n04"], 1),
        workload("job", ["n02", "n05", "n08"], 2, request={"preferred": "rack"}),
    ]
    admissions, _ = read_admissions(rows, TREE, LEVELS)
    row = audit_admissions(admissions, TREE, LEVELS)[1]
    assert row["workload"] == "default/job"
    idle = [i for i in range(16) if TREE.node_names[i] not in {"n00", "n01", "n04"}]
    window = tjap.Window(TREE, idle, [{"nodes": 3, "prefer": "rack"}], levels=LEVELS[::-1])
    from tjap.placement.tree.result import objective_of

    best = min(objective_of(window, [list(c)]) for c in itertools.combinations(idle, 3))
    assert row["optimum"] == pytest.approx(best)
    assert row["cost"] == pytest.approx(objective_of(window, [[2, 5, 8]]))


def test_workloads_the_audit_cannot_measure_are_counted_and_still_busy():
    rows = [
        workload("two-per-node", ["n00", "n01"], 1, counts=[2, 1]),
        workload("single", ["n02"], 2),
        workload("later", ["n03", "n04"], 3),
    ]
    admissions, skipped = read_admissions(rows, TREE, LEVELS)
    assert skipped == {"several_pods_per_node": 1, "below_min_nodes": 1}
    (row,) = audit_admissions(admissions, TREE, LEVELS)
    assert row["busy"] == ["n00", "n01", "n02"]


def test_tjap_names_of_kueue_request_annotations():
    from tjap.placement.k8s.gangs import (
        GATE,
        PREFERRED,
        SLICE_LEVEL,
        SLICE_SIZE,
        TJAP_ALIAS,
        Gang,
        gangs,
    )

    # the pods' own annotations, as the controller reads them
    pods = [
        {"metadata": {"name": f"p{r}", "namespace": "default",
                      "labels": {"tjap.io/gang": "g", "tjap.io/gang-size": "4"},
                      "annotations": {TJAP_ALIAS[SLICE_SIZE]: "2", TJAP_ALIAS[SLICE_LEVEL]: "rack",
                                      "other.io/note": "x"}},
         "spec": {"schedulingGates": [{"name": GATE}]}}
        for r in range(4)
    ]  # fmt: skip
    (gang,) = gangs(pods)
    assert gang.job(LEVELS) == {"nodes": 4, "segment": 2, "segment_level": "rack"}

    gang = Gang(("default", "g"), pods=[None] * 4, annotations={TJAP_ALIAS[PREFERRED]: "rack"})
    assert gang.job(LEVELS) == {"nodes": 4, "prefer": "rack"}
    both = {TJAP_ALIAS[PREFERRED]: "rack", PREFERRED: "block"}
    with pytest.raises(InvalidInputError, match="differ; give one of them"):
        Gang(("default", "g"), pods=[None] * 4, annotations=both).job(LEVELS)


def test_a_difference_only_in_the_order_of_one_second_is_told_apart():
    # x and y are admitted in the same second; the records put x first (created first), but
    # Kueue admitted y first: x's choice then avoided y's rack, which the audit counted free
    rows = [
        workload("x", ["n04", "n05", "n06", "n07"], 5, request={"required": "rack"}, created=1),
        workload("y", ["n00", "n01", "n02", "n03"], 5, request={"required": "rack"}, created=2),
    ]
    admissions, _ = read_admissions(rows, TREE, LEVELS)
    x = audit_admissions(admissions, TREE, LEVELS)[0]
    assert x["workload"] == "default/x" and x["busy"] == []
    for p in PROFILES:  # on an empty cluster both would take rack r0
        assert not x[p]["same"] and x[p]["same_in_another_order"]


def test_the_report_page_of_an_audit(tmp_path):
    from tjap.k8s.audit import KueueAudit
    from tjap.k8s.audit_report import write_report

    rows = [
        workload("<b>busy</b>", ["n00", "n01", "n04"], 1),
        workload("job", ["n02", "n05", "n08"], 2, request={"preferred": "rack"}),
    ]
    admissions, skipped = read_admissions(rows, TREE, LEVELS)
    result = KueueAudit(
        tree=TREE,
        levels=[*LEVELS, HOST],
        jobs=audit_admissions(admissions, TREE, LEVELS),
        skipped={"not_admitted": 1},
        options={"workloads": 3, "min_nodes": 2, "convention": "paper"},
    )
    page = write_report(result, tmp_path / "report").read_text()
    assert "What Kueue's placements cost" in page and "The costliest choices" in page
    assert "<b>busy</b>" not in page and "&lt;b&gt;busy&lt;/b&gt;" in page  # escaped
    assert "not_admitted" in page and "<svg" in page
    assert not (tmp_path / "report" / "index.html.partial").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInputError, match="is a file"):
        write_report(result, tmp_path / "file")


def brute_force_busy(admissions, num_nodes):
    """The audit's rule read literally, every earlier workload scanned for each admission: the
    oracle of its one-sweep rebuild."""
    freed_by = {}
    for i, q in enumerate(admissions):
        if q.finished is None:
            continue
        for k in range(i + 1, len(admissions)):
            other = admissions[k]
            if other.admitted > q.finished:
                break
            if other.admitted == q.finished and set(q.nodes) & set(other.nodes):
                freed_by[i] = k
                break
    out = []
    for k, row in enumerate(admissions):
        busy = np.zeros(num_nodes, dtype=bool)
        for i, q in enumerate(admissions[:k]):
            if (
                q.finished is None
                or q.finished > row.admitted
                or (q.finished == row.admitted and freed_by.get(i, k + 1) > k)
            ):
                busy[q.nodes] = True
        busy[row.nodes] = False
        unsure = [
            q.nodes
            for i, q in enumerate(admissions)
            if q is not row
            and ((i > k and q.admitted == row.admitted)
                 or (i < k and q.finished == row.admitted and freed_by.get(i, k + 1) <= k))
        ]  # fmt: skip
        out.append((busy, unsure))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_free_nodes_rebuilt_in_one_sweep_are_the_brute_force_rule(seed):
    from tjap.k8s.audit import Admission, _busy_at_admissions

    rng = np.random.default_rng(seed)
    n, count = 8, int(rng.integers(1, 30))
    times = np.sort(rng.integers(0, 12, count))  # few seconds: many ties
    admissions = []
    for i, t in enumerate(times):
        nodes = sorted(int(v) for v in rng.choice(n, int(rng.integers(0, 4)), replace=False))
        finished = None if rng.random() < 0.2 else float(t + rng.integers(0, 5))
        admissions.append(
            Admission("ns", f"w{i}", float(i), float(t), finished, nodes, {"nodes": 1})
        )
    swept = [(busy, unsure) for _, busy, unsure in _busy_at_admissions(admissions, n)]
    for (busy, unsure), (want, want_unsure) in zip(swept, brute_force_busy(admissions, n)):
        assert busy.tolist() == want.tolist() and unsure == want_unsure
