"""``tjap k8s ...``: tjap inside Kubernetes.

- ``tjap k8s cluster up --dir DIR --topology FILE``: a throw-away local Kubernetes (etcd,
  kube-apiserver, kube-scheduler built by ``.ci/build-k8s``) with one fake GPU node per node of
  any topology tjap reads; ``DIR/kubeconfig`` is its administrator's kubeconfig. ``tjap k8s
  cluster down --dir DIR`` stops it (by the process ids it recorded).
- ``tjap k8s place``: the placement controller (:mod:`tjap.k8s.controller`): whole gangs of the
  pods gated with ``--gate`` placed on the nodes tjap picks, never worse than Kueue's choice per
  window; ``--once`` one pass, ``--json`` one line per window on stdout.
- ``tjap k8s place --system interference --policy marl|whole|tetris|lb|lif``: seed 001's
  schedulers (:mod:`tjap.k8s.interference`): the parameter-server and worker pods of gated DL
  jobs placed by the interference family's policy, one scheduler per rack (``--rack-label``).
- ``tjap k8s advise``: what it would place now; patches nothing.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from tjap.cli.common import add_common, check_output, non_negative, positive
from tjap.k8s.controller import DEFAULT_FRAGMENTATION


def add_parser(sub) -> None:
    k8s = sub.add_parser(
        "k8s", help="tjap inside Kubernetes: a local cluster, the placement controller"
    )
    what = k8s.add_subparsers(dest="what", required=True, metavar="WHAT")
    cluster = what.add_parser("cluster", help="a throw-away local Kubernetes with fake GPU nodes")
    action = cluster.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = action.add_parser("up", help="start it (returns once the nodes are Ready)")
    up.add_argument("--dir", required=True, type=Path, help="its folder: kubeconfig, logs, state")
    up.add_argument(
        "--topology",
        required=True,
        help="the cluster's tree: topology.conf (tree or blocks), topology.yaml, JSON, node list",
    )
    up.add_argument("--gpus", type=int, default=4, help="nvidia.com/gpu per node (default 4)")
    up.add_argument("--kueue", action="store_true",
                    help="also run Kueue's own manager (v0.17.0, .ci/build-kueue-manager) with a "
                    "topology-aware queue `tas` (a Topology of the cluster's levels, a flavor, a "
                    "ClusterQueue with every GPU as quota, a LocalQueue in default)")  # fmt: skip
    add_common(up)
    up.set_defaults(run=run_up)
    down = action.add_parser("down", help="stop the cluster started in --dir")
    down.add_argument("--dir", required=True, type=Path, help="the folder given to cluster up")
    add_common(down)
    down.set_defaults(run=run_down)
    for name, helps in (
        ("place", "place gated gangs of pods (the controller)"),
        ("advise", "what the controller would place now (patches nothing)"),
    ):
        p = what.add_parser(name, help=helps)
        p.add_argument(
            "--kubeconfig", type=Path, help="default: $KUBECONFIG, in-cluster, ~/.kube/config"
        )
        p.add_argument(
            "--gate",
            default=None,
            help="the scheduling gate of tjap's pods (default tjap.io/placement)",
        )
        where = p.add_mutually_exclusive_group()
        where.add_argument("--levels", help="node-label keys of the levels, the top first, comma-separated, "
                       "or FILE: a Kueue Topology (kubectl get topology NAME -o yaml) whose "
                       "spec.levels[].nodeLabel are the keys (default: the topology.tjap.io/level-N "
                       "labels of the nodes)")  # fmt: skip
        where.add_argument("--topology-name", metavar="NAME",
                       help="read the levels from the cluster's Kueue Topology NAME (not with "
                       "--levels)")  # fmt: skip
        p.add_argument("--fragmentation", type=non_negative, default=DEFAULT_FRAGMENTATION, metavar="W",
                       help="weight per whole free domain of the top level (or "
                       "--fragmentation-level) a window breaks into, so that tjap keeps them "
                       "whole where that costs no more than Kueue's choice (default "
                       f"{DEFAULT_FRAGMENTATION:g}; 0: none); for gangs whose pods carry "
                       "activeDeadlineSeconds, W per day the gang keeps a domain from being whole")  # fmt: skip
        p.add_argument("--fragmentation-level", metavar="KEY",
                       help="the level whose whole free domains are kept (default the top one)")  # fmt: skip
        p.add_argument("--kueue", default="kueue-bestfit", choices=("kueue-bestfit", "kueue-leastfree"),
                       help="the Kueue profile each window is compared with (default kueue-bestfit)")  # fmt: skip
        p.add_argument("--time-limit", type=positive(float, 3600), default=1.0, metavar="S",
                       help="seconds a window's decision may take, Kueue's choice and "
                       "tjap's solves together (default 1)")  # fmt: skip
        p.add_argument("--topology-wait", type=non_negative, default=0.0, metavar="S",
                       help="seconds a gang may wait for a place as cheap as its floor (its "
                       "cost alone on the whole cluster), as Slurm's --switches=N@time; its "
                       "pods' tjap.io/topology-wait-seconds sets its own (default 0: none)")  # fmt: skip
        p.add_argument("--system", choices=("topology", "interference"), default="topology",
                       help="topology (default): whole gangs, one pod per node, never worse "
                       "than Kueue; interference: seed 001's DL jobs (ps and worker pods, "
                       "several per node) placed by --policy")  # fmt: skip
        p.add_argument("--policy", choices=_policies(), default=None,
                       help="with --system interference: the family's policy (default tetris)")  # fmt: skip
        p.add_argument("--weights", type=Path, metavar="FILE", default=None,
                       help="with --system interference and a learned --policy (marl, single, "
                       "marl-server): its trained weights (.json; default the shipped ones)")  # fmt: skip
        p.add_argument("--rack-label", metavar="KEY", default=None,
                       help="with --system interference: the node label of the racks, one "
                       "scheduler each (default the nodes' topology.tjap.io/level-1)")  # fmt: skip
        add_common(p)  # --json: one JSON line per window on stdout
        if name == "place":
            p.add_argument("--once", action="store_true", help="one pass, then exit")
            p.add_argument(
                "--interval",
                type=positive(float, 3600),
                default=10.0,
                metavar="S",
                help="seconds between passes when no pod changes (default 10; a pod created, "
                "changed or deleted starts a pass at once)",
            )
            p.add_argument("--metrics-address", metavar="HOST:PORT", default=None,
                           help="serve /metrics (Prometheus) and /healthz there, e.g. "
                           "0.0.0.0:9090 (default none)")  # fmt: skip
            p.add_argument("--leader-elect", action="store_true",
                           help="for several replicas: only the holder of a coordination.k8s.io "
                           "Lease places; the others stand by and take over when it stops "
                           "renewing it (within --lease-duration) or gives it up on a clean stop")  # fmt: skip
            p.add_argument("--lease", default="tjap-placement", metavar="NAME",
                           help="with --leader-elect: the Lease's name (default tjap-placement)")  # fmt: skip
            p.add_argument("--lease-namespace", metavar="NS", default=None,
                           help="with --leader-elect: the Lease's namespace (default the pod's "
                           "own in-cluster, else default)")  # fmt: skip
            p.add_argument("--lease-duration", type=positive(float, 3600), default=15.0,
                           metavar="S", help="with --leader-elect: seconds a Lease unrenewed "
                           "lasts before a standby takes it over (default 15; the holder "
                           "renews every third of it)")  # fmt: skip
        p.set_defaults(run=run_place if name == "place" else run_advise)
    audit = what.add_parser(
        "audit", help="what Kueue's placements cost: its admitted Workloads against the optimum"
    )
    audit.add_argument(
        "--kubeconfig", type=Path, help="default: $KUBECONFIG, in-cluster, ~/.kube/config"
    )
    where = audit.add_mutually_exclusive_group()
    where.add_argument("--levels", help="node-label keys of the levels, the top first, "
                       "comma-separated, or FILE: a Kueue Topology (default: the cluster's one "
                       "Kueue Topology)")  # fmt: skip
    where.add_argument("--topology-name", metavar="NAME",
                       help="the cluster's Kueue Topology NAME (when it has several)")  # fmt: skip
    audit.add_argument("--min-nodes", type=positive(int, 10**6), default=2, metavar="N",
                       help="audit workloads of at least N pods (default 2)")  # fmt: skip
    audit.add_argument("--report", type=Path, metavar="DIR",
                       help="also write the audit's web page, DIR/index.html")  # fmt: skip
    add_common(audit)  # --json: the audit's JSON on stdout
    audit.set_defaults(run=run_audit)


def _policies() -> list[str]:
    """The interference policies ``--policy`` takes (the family's registered methods)."""
    from tjap.registry import methods

    return list(methods("interference"))


# -- the local cluster --------------------------------------------------------------------------
def run_up(args) -> int:
    from tjap.placement.k8s.harness import LocalKubernetes
    from tjap.placement.tree.topology import Topology

    check_output(args.dir, "--dir", folder=True)
    tree = Topology.from_file(args.topology)
    state = args.dir / "cluster.json"
    if state.exists():
        from tjap.core.errors import InvalidInputError

        raise InvalidInputError(
            f"a cluster already runs in {args.dir} (its {state.name}); stop it with "
            f"tjap k8s cluster down --dir {args.dir}, or give another --dir"
        )
    if args.kueue:
        from tjap.core.errors import MissingDependencyError
        from tjap.placement.k8s.kueue import missing

        if missing():
            raise MissingDependencyError(missing())
    args.dir.mkdir(parents=True, exist_ok=True)
    cluster = LocalKubernetes(args.dir, controllers=args.kueue)
    cluster.start()
    queue = ""
    try:
        if args.kueue:
            from tjap.placement.k8s.kueue import POOL_LABEL, LocalKueue
            from tjap.placement.k8s.nodes import level_keys

            names = cluster.add_nodes(tree, gpus=args.gpus, labels={POOL_LABEL: "gpu"})
            queue = LocalKueue(cluster).start().queue(level_keys(tree), gpus=args.gpus * len(names))
        else:
            names = cluster.add_nodes(tree, gpus=args.gpus)
    except BaseException:
        cluster.stop()
        raise
    programs = {name: str(cluster.program(name)) for name in cluster.procs}
    state.write_text(json.dumps({
        "pids": {name: proc.pid for name, proc in cluster.procs.items()},
        "programs": programs,
        "kubeconfig": str(cluster.kubeconfig), "nodes": len(names), "port": cluster.port,
    }, indent=1))  # fmt: skip
    print(f"tjap: a local Kubernetes with {len(names):,} nodes; KUBECONFIG={cluster.kubeconfig}")
    if queue:
        print(f"tjap: Kueue's manager runs; jobs labelled kueue.x-k8s.io/queue-name={queue} are "
              "admitted and placed by Kueue's topology-aware scheduling")  # fmt: skip
    return 0


def run_down(args) -> int:
    from tjap.core.errors import InvalidInputError

    state = args.dir / "cluster.json"
    if not state.is_file():
        raise InvalidInputError(f"no cluster runs in {args.dir} (no {state.name} there)")
    data = json.loads(state.read_text())
    stopped = []
    for name, pid in data["pids"].items():
        if _is(pid, data["programs"][name]):
            os.kill(pid, signal.SIGTERM)
            stopped.append(pid)
    deadline = time.monotonic() + 10
    while stopped and time.monotonic() < deadline:
        stopped = [pid for pid in stopped if _is(pid, "")]
        time.sleep(0.1)
    for pid in stopped:
        os.kill(pid, signal.SIGKILL)
    state.unlink()
    print(f"tjap: the local Kubernetes in {args.dir} is stopped")
    return 0


def _is(pid: int, program: str) -> bool:
    """Whether process ``pid`` runs and (when ``program`` is given) is that program (a reused
    process id is never signalled)."""
    try:
        line = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z" and (not program or line == program)


# -- the controller -----------------------------------------------------------------------------
def controller_levels(given: str | None) -> list[str] | None:
    """``--levels``: None (the nodes' own level labels), a file holding a Kueue ``Topology`` (its
    ``spec.levels[].nodeLabel``, top first), or comma-separated label keys."""
    from pathlib import Path

    from tjap.placement.tree.levels import read_levels

    if not given:
        return None
    if Path(given).is_file():
        return read_levels(Path(given))
    return [key.strip() for key in given.split(",") if key.strip()]


def _controller(args, dry_run: bool):
    from tjap.core.errors import InvalidInputError
    from tjap.k8s.controller import Controller
    from tjap.placement.k8s.api import Api

    if args.system == "interference":
        from tjap.k8s.interference import InterferenceController

        if args.levels or args.topology_name or args.topology_wait:
            raise InvalidInputError(
                "--levels, --topology-name and --topology-wait are for --system topology"
            )
        from tjap.registry import get

        policy = args.policy or "tetris"
        options = {}
        if args.weights is not None:
            if not get("interference", policy).learned:
                raise InvalidInputError(
                    f"--weights needs a learned --policy (marl, single, marl-server), not {policy}"
                )
            options["weights"] = args.weights
        return InterferenceController(
            Api(args.kubeconfig),
            policy,
            gate=args.gate,
            rack_label=args.rack_label,
            seed=args.seed,
            dry_run=dry_run,
            log=sys.stdout if args.json else None,
            **options,
        )
    if args.policy is not None or args.rack_label is not None or args.weights is not None:
        raise InvalidInputError(
            "--policy, --weights and --rack-label are for --system interference (the topology "
            "controller places with tjap's window solver)"
        )
    return Controller(
        Api(args.kubeconfig),
        gate=args.gate,
        levels=controller_levels(args.levels),
        topology=args.topology_name,
        kueue=args.kueue,
        fragmentation=args.fragmentation,
        fragmentation_level=args.fragmentation_level,
        time_limit_s=args.time_limit,
        topology_wait_s=args.topology_wait,
        dry_run=dry_run,
        log=sys.stdout if args.json else None,
    )


def _say(decision) -> None:
    if getattr(decision, "free_gpus", None) is not None:  # the interference controller's pass
        from tjap.k8s.interference import say

        print("\n".join(say(decision)))
        return
    if decision.placed:
        saving = (
            f"; Kueue's choice {decision.kueue_cost:.1f}" if decision.kueue_cost is not None else ""
        )
        print(f"window: {len(decision.placed)} gangs on {decision.free} free nodes, cost "
              f"{decision.cost:.1f} ({decision.method}){saving}")  # fmt: skip
    for key, nodes in decision.placed.items():
        from tjap.placement.tree.hostlist import compress_hostlist

        print(f"  {'/'.join(key)}: {compress_hostlist(nodes)}")
    for key, why in {**decision.waiting, **decision.refused}.items():
        print(f"  {'/'.join(key)}: waits ({why})")


def run_advise(args) -> int:
    decision = _controller(args, dry_run=True).run_pass()
    if not args.json:
        _say(decision)
    return 0


def run_place(args) -> int:
    from tjap.core.errors import InvalidInputError

    if args.once and args.leader_elect:
        raise InvalidInputError(
            "--leader-elect is for the controller's loop; drop --once (one pass needs no election)"
        )
    if args.once and args.metrics_address:
        raise InvalidInputError(
            "--metrics-address is for the controller's loop; drop --once (one pass has none)"
        )
    controller = _controller(args, dry_run=False)
    if args.once:
        decision = controller.run_pass()
        if not args.json:
            _say(decision)
        return 0
    server = None
    if args.metrics_address:
        from tjap.k8s.metrics import Metrics, serve

        controller.metrics = Metrics()
        server = serve(controller.metrics, args.metrics_address,
                       max_age_s=max(60.0, 3 * args.interval))  # fmt: skip
    lease = None
    if args.leader_elect:
        from tjap.placement.k8s.lease import LeaderLease

        lease = LeaderLease(
            controller.api, args.lease, args.lease_namespace, duration_s=args.lease_duration
        )
    try:
        return controller.run(interval_s=args.interval, lease=lease)
    finally:
        if server is not None:
            server.shutdown()


# -- the audit ----------------------------------------------------------------------------------
def run_audit(args) -> int:
    from tjap.k8s.audit import audit_cluster
    from tjap.placement.k8s.api import Api

    if args.min_nodes < 2:
        from tjap.core.errors import InvalidInputError

        raise InvalidInputError("--min-nodes must be at least 2 (a single pod has no network cost)")
    if args.report is not None:
        check_output(args.report, "--report", folder=True)
    with Api(args.kubeconfig) as api:
        result = audit_cluster(
            api,
            levels=controller_levels(args.levels),
            topology=args.topology_name,
            min_nodes=args.min_nodes,
        )
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(result.summary_text())
    if args.report is not None:
        from tjap.k8s.audit_report import write_report

        path = write_report(result, args.report)
        print(f"tjap: the report is {path}", file=sys.stderr if args.json else sys.stdout)
    return 0
