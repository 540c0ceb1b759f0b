"""A live Kueue on the local control plane, audited: Kueue's own manager admits and places a
stream of Jobs with Kueue's pod-set annotations, then ``tjap k8s audit`` measures what each of
its placements cost and whether tjap's re-implementations chose the same nodes; beside it, the
same stream on a flavor without a topology, placed by tjap's controller.

    python -m benchmarks.kueue_live --nodes 288 --jobs 80

The control plane is :class:`tjap.placement.k8s.harness.LocalKubernetes` (with the Job
controller), Kueue's manager :class:`tjap.placement.k8s.kueue.LocalKueue` (Kueue v0.17.0's own
controllers, scheduler, TAS and webhooks, ``.ci/build-kueue-manager``; Kueue's default feature
gates). The cluster and the jobs are those of ``benchmarks.k8s_stream``: racks of 18 fake
nodes of 4 GPUs, 8 racks to a block, Kueue levels block / rack / host; the multi-node jobs of
the LS6 A100 trace (sizes times 4, at most 72), one in three with slices of 4-9 pods inside a
rack (``podset-slice-size`` / ``-slice-required-topology``), the others preferring one rack
(``podset-preferred-topology``). Each job is an indexed batch/v1 Job with the LocalQueue's
``kueue.x-k8s.io/queue-name`` label, created when it arrives (``--compress`` trace seconds per
wall second); Kueue's webhook suspends it, Kueue admits it when quota and nodes allow, the Job
controller makes its pods, Kueue's topology ungater releases them with a node selector,
kube-scheduler binds them. The harness ends a Job when its runtime has passed since its last pod
was bound (``activeDeadlineSeconds: 1``: the Job fails, Kueue finishes its Workload and frees
its nodes) and removes deleted pods as a kubelet would.

Two arms, each on a fresh cluster:

- ``kueue``: a TAS flavor (``topologyName``): Kueue places; then :func:`tjap.k8s.audit.
  audit_cluster` audits every admitted Workload: the cost of Kueue's placement against tjap's
  optimum for that job at its admission, the free-form bound and the empty cluster's floor, and
  the fidelity of ``kueue-bestfit`` and ``kueue-leastfree`` (the same nodes as Kueue chose, from
  the free nodes rebuilt from the Workloads' admission and finish times). Its figures per job
  are checked against a recomputation from the recorded nodes.
- ``tjap``: a flavor without ``topologyName`` (Kueue admits by quota only), the pods carrying
  tjap's gate, :class:`tjap.k8s.controller.Controller` placing them (the cheaper of tjap's
  optimum and Kueue's choice per window).

Per arm (``benchmarks.k8s_stream.figures``): jobs started, mean CH cost per job (all, segmented,
the others) and the floors beside them, the shares of small jobs in one rack and of slices kept in
one rack, mean wait (arrival to last pod bound, trace seconds). Writes ``kueue_live.json``.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.common import add_out, one_line_errors, parser, write_result

TICK_S = 0.25


def run_stream(
    arm: str, tree, jobs: list[dict], *, compress: float, timeout_s: float, folder=None
) -> dict:
    """One arm (``kueue`` or ``tjap``) of the stream on a fresh cluster of ``tree``; with
    ``kueue``, the audit of its Workloads is in the row (``audit``)."""
    from benchmarks.k8s_stream import StreamBook, annotations, figures
    from tjap.k8s.controller import Controller
    from tjap.placement.k8s.harness import LocalKubernetes
    from tjap.placement.k8s.kueue import (
        POOL_LABEL,
        LocalKueue,
        end_job,
        kueue_job,
        remove_terminating,
    )
    from tjap.placement.k8s.nodes import level_keys

    levels = level_keys(tree)[:-1]
    audit = None
    with LocalKubernetes(folder, controllers=True) as k8s:
        k8s.add_nodes(tree, labels={POOL_LABEL: "gpu"})
        with LocalKueue(k8s) as kueue, k8s.api() as api:
            q = kueue.queue(levels if arm == "kueue" else None, gpus=4 * tree.num_nodes)
            gate = None
            controller = None
            if arm == "tjap":
                from tjap.placement.k8s.gangs import GATE

                gate = GATE
                controller = Controller(api)
            book = StreamBook(jobs)
            t0, tick, stuck = time.monotonic(), 0, 0
            while not book.finished and time.monotonic() - t0 < timeout_s:
                now = tick * TICK_S * compress
                tick += 1
                for job in book.arrivals(now):
                    api.create("/apis/batch/v1/namespaces/default/jobs", kueue_job(
                        job["name"], job["size"], queue=q, gate=gate,
                        annotations=annotations(job, levels, tjap_names=gate is not None)))  # fmt: skip
                if controller is not None:
                    controller.run_pass()
                pods = api.items("/api/v1/namespaces/default/pods")
                remove_terminating(api, pods)
                nodes_of: dict[str, list] = {}
                for pod in sorted(pods, key=_index):
                    if pod["metadata"].get("deletionTimestamp"):
                        continue
                    name = (pod["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name")
                    nodes_of.setdefault(name, []).append(pod["spec"].get("nodeName"))
                progress = bool(book.bound(nodes_of, now))
                for job in book.due(now):
                    end_job(api, job["name"])
                    progress = True
                stuck = 0 if progress or not book.all_arrived else stuck + 1
                if stuck > 400:
                    break
                time.sleep(TICK_S)
            if arm == "kueue":
                from tjap.k8s.audit import audit_cluster

                time.sleep(2.0)  # the last Workloads' Finished conditions
                audit = audit_cluster(api).to_dict()
    return {
        "arm": arm,
        "nodes": tree.num_nodes,
        "jobs": len(jobs),
        "started": len(book.started),
        **figures(tree, book),
        "audit": audit,
    }


def _index(pod: dict) -> int:
    labels = pod["metadata"].get("labels") or {}
    return int(labels.get("batch.kubernetes.io/job-completion-index", 0))


def check_audit(row: dict, tree) -> dict:
    """The audit's figures per job against a recomputation: the CH cost of the nodes it names,
    and those nodes against the nodes the harness saw the job's pods bound to."""
    from tjap.placement.tree.cost import job_cost

    seen = {f"default/{j['name']}": sorted(j["nodes"]) for j in row["per_job"]}
    jobs = row["audit"]["jobs"]
    cost_ok = [
        abs(job_cost(tree, [tree.node_index(n) for n in j["nodes"]]) - j["ch_cost"]) < 1e-9
        for j in jobs
    ]
    nodes_ok = [seen.get(j["job"]) == sorted(j["nodes"]) for j in jobs]
    return {
        "audited": len(jobs),
        "cost_recomputed_share": float(np.mean(cost_ok)) if jobs else None,
        "nodes_as_bound_share": float(np.mean(nodes_ok)) if jobs else None,
    }


def build_parser():
    p = parser("kueue_live", __doc__)
    p.add_argument("--nodes", type=int, default=288, help="fake nodes, racks of 18 (default 288)")
    p.add_argument("--jobs", type=int, default=80, help="jobs of the stream (default 80)")
    p.add_argument("--compress", type=float, default=3600.0,
                   help="trace seconds per wall second (default 3600)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="seed of the arrivals (default 0)")
    p.add_argument("--load", type=float, default=0.9,
                   help="share of the cluster's node-seconds the stream offers (default 0.9)")  # fmt: skip
    p.add_argument(
        "--arms", default="kueue,tjap", help="comma-separated: kueue, tjap (default both)"
    )
    p.add_argument("--arm-timeout", type=float, default=900.0,
                   help="seconds an arm may run (default 900)")  # fmt: skip
    add_out(p, "kueue_live.json")
    return p


@one_line_errors
def main(argv=None) -> int:
    from benchmarks.k8s_stream import cluster, workload
    from tjap.core.report import format_table
    from tjap.placement.k8s.kueue import missing

    args = build_parser().parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    if not arms or set(arms) - {"kueue", "tjap"}:
        raise SystemExit(f"--arms: kueue and/or tjap, got {args.arms!r}")
    reason = missing()
    if reason:
        raise SystemExit(reason)
    tree = cluster(args.nodes)
    jobs = workload(args.jobs, args.seed, 72, args.nodes, args.load)
    rows = []
    for arm in arms:
        began = time.monotonic()
        row = run_stream(arm, tree, jobs, compress=args.compress, timeout_s=args.arm_timeout)
        row["wall_s"] = time.monotonic() - began
        if row["audit"] is not None:
            row["audit_check"] = check_audit(row, tree)
            summary = row["audit"]["summary"]
            print(f"kueue arm audit: {summary['jobs']} audited, skipped {row['audit']['skipped']}, "
                  f"fidelity {summary.get('fidelity')}, optimum saving "
                  f"{summary.get('optimum_saving')}, check {row['audit_check']}")  # fmt: skip
        rows.append(row)
    write_result(args.out, "kueue_live", {"args": vars(args), "rows": rows})
    print(format_table(rows, [("arm", ""), ("nodes", "d"), ("jobs", "d"), ("started", "d"),
                              ("mean_cost", ".1f"), ("mean_cost_segmented", ".1f"),
                              ("mean_cost_other", ".1f"), ("slices_kept_share", ".3f"),
                              ("mean_wait_s", ".0f"), ("wall_s", ".0f")]))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
