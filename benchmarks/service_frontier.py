"""The placement service's own rules on a simulated cluster: CH cost against wait.

Item 4 asks ``tjap slurm place`` for a mean CH cost at most 0.85 of Slurm alone's with a mean
wait within +10 %. A live run takes minutes per setting and Slurm alone's own cost moves by a
few per cent between runs, so this benchmark maps the trade between cost and wait off-line,
with the service's own code: :class:`SimulatedService` is the real
:class:`~tjap.slurm.service.PlacementService` (window order, EASY backfilling from time limits,
the ``guarded`` solve, windows waited, holding jobs for locality) in dry-run mode, whose
:meth:`read_state` returns the state of a simulated cluster instead of asking Slurm. Every job
the service would place starts at once on the nodes it chose and ends ``runtime_s`` later.

The stream and cluster are :mod:`benchmarks.slurm_topology`'s (seed 002's workload scaled to
1-12 of 40 nodes on an irregular three-level tree, offered load 0.85, 60x compressed; time
limits of 1 min for runtimes of 1-30 s). The reference is the batch simulator's schedule for
Slurm alone (``sched/backfill`` on node counts, 1 s passes, 1 s release delay;
:func:`benchmarks.slurm_topology.simulate_starts`), placed by ``slurm-tree`` (Slurm's own best
fit): the "simulator's prediction" of the live tables. The service sees a job ``--visible-after``
seconds (default 1, the reference's release delay) after its submission, and passes every
``--tick`` seconds (default 1).

Settings: ``--slack`` values (``none``: never hold for locality) times ``--wait`` values (the
most a job is held for locality, wall seconds). Each row: mean CH cost and mean wait of the
service over the reference's, per seed and their mean::

    python -m benchmarks.service_frontier --seeds 2 3 4 5      # rows to benchmarks/out/service_frontier.json
    python -m benchmarks.service_frontier --replot benchmarks/out/service_frontier.json --plot PNG --live LIVE.json ...

Every simulated placement is checked (no node held twice, every job its size).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, one_line_errors, parser
from benchmarks.slurm_topology import cluster_topology, paper_rows, place_in_order, simulate_starts
from tjap.core.errors import InvalidInputError
from tjap.core.report import format_table
from tjap.heuristics.slurm.tree import slurm_tree_nodes
from tjap.placement.slurm.client import PendingJob
from tjap.placement.slurm.readers import State, running_timing
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.placement.tree.topology import Topology
from tjap.slurm.service import PlacementService, ServiceConfig

PARTITION = "main"


class SimulatedService(PlacementService):
    """The placement service reading a simulated cluster (:meth:`read_state`) instead of Slurm;
    run it in dry-run mode, so that nothing else of Slurm is asked for."""

    def __init__(self, config: ServiceConfig, topology: Topology, **kw):
        super().__init__(config, **kw)
        self.topology = topology
        self.sim_state: State | None = None

    def read_state(self) -> State:
        return self.sim_state


def _job(
    job_id: int,
    nodes: int,
    submit: float,
    limit_s: int,
    *,
    running_since=None,
) -> PendingJob:
    return PendingJob(
        job_id=job_id,
        job_text=str(job_id),
        state="PENDING" if running_since is None else "RUNNING",
        reason="JobHeldUser" if running_since is None else "None",
        nodes=nodes,
        submit_time=int(submit),
        user="sim",
        account="",
        partition=PARTITION,
        priority=0,
        req_nodes="",
        exc_nodes="",
        features="",
        name="sim",
        start_time=None if running_since is None else int(running_since),
        time_limit_s=int(limit_s),
    )


def simulate_service(
    rows: list[dict],
    topology: Topology,
    config: ServiceConfig,
    *,
    tick_s: float = 1.0,
    visible_after_s: float = 1.0,
    max_time_s: float = 1e6,
) -> list[dict]:
    """Replay ``rows`` (:func:`benchmarks.slurm_topology.paper_rows`) under the service's rules
    on a simulated cluster: per job ``submit``, ``start``, ``end``, ``wait``, ``nodes`` (names)
    and ``cost``. Jobs the service places start at once on its nodes."""
    if not tick_s > 0:
        raise InvalidInputError(f"tick must be positive, got {tick_s!r}")
    cfg = ServiceConfig(**{**config.__dict__, "dry_run": True, "partition": PARTITION})
    service = SimulatedService(cfg, topology, report=lambda msg: None)
    names = list(topology.node_names)
    free = dict.fromkeys(names, True)
    n = len(rows)
    start: dict[int, float] = {}
    nodes_of: dict[int, list] = {}
    running: list[int] = []
    t = 0.0
    while len(start) < n:
        if t > max_time_s:
            raise InvalidInputError(
                f"the simulated service left {n - len(start)} jobs unstarted after {max_time_s:g} s"
            )
        for j in [j for j in running if start[j] + rows[j]["runtime_s"] <= t]:
            running.remove(j)
            for v in nodes_of[j]:
                free[v] = True
        held = [
            _job(j, r["cpus"], r["submit_s"], 60 * r["limit_min"])
            for j, r in enumerate(rows)
            if j not in start and r["submit_s"] + visible_after_s <= t
        ]
        runs = [
            _job(
                j,
                len(nodes_of[j]),
                rows[j]["submit_s"],
                60 * rows[j]["limit_min"],
                running_since=start[j],
            )
            for j in running
        ]
        releases, limits = running_timing(held + runs, t)
        service.sim_state = State(
            PARTITION,
            topology,
            [v for v in names if free[v]],
            held,
            read_at=t,
            releases=releases,
            limits=limits,
            nodes=names,
        )
        rec = service.run_pass() if held else None
        for e in (rec or {}).get("jobs", []):
            if e["outcome"] != "dry-run":
                continue
            j = int(e["job_id"])
            chosen = expand_hostlist(e["nodes"])
            if len(chosen) != rows[j]["cpus"] or not all(free[v] for v in chosen):
                raise AssertionError(
                    f"job {j}: placed on {e['nodes']}, not {rows[j]['cpus']} free nodes"
                )
            for v in chosen:
                free[v] = False
            start[j], nodes_of[j] = t, chosen
            running.append(j)
        t += tick_s
    return [
        {
            "cpus": r["cpus"],
            "submit": float(r["submit_s"]),
            "start": start[j],
            "end": start[j] + r["runtime_s"],
            "wait": start[j] - r["submit_s"],
            "nodes": nodes_of[j],
            "cost": job_cost(topology, nodes_of[j]),
        }
        for j, r in enumerate(rows)
    ]


def reference(rows: list[dict], topology: Topology) -> dict:
    """Slurm alone as the batch simulator predicts it: mean CH cost and mean wait."""
    per_job = [
        {
            "submit": r["submit_s"],
            "cpus": r["cpus"],
            "limit_min": r["limit_min"],
            "runtime_s": r["runtime_s"],
        }
        for r in rows
    ]
    start, end, seq = simulate_starts(per_job, topology.num_nodes)
    sizes = [r["cpus"] for r in rows]
    nodes = place_in_order(topology, sizes, start, end, seq, slurm_tree_nodes)
    return {
        "mean_cost": float(np.mean([job_cost(topology, v) for v in nodes])),
        "mean_wait_s": float(np.mean(start - np.array([r["submit_s"] for r in rows]))),
    }


def frontier(
    seeds,
    slacks,
    waits,
    *,
    jobs: int = 150,
    nodes: int = 40,
    tick_s: float = 1.0,
    visible_after_s: float = 1.0,
    time_limit_s: float | None = None,
) -> list[dict]:
    """One row per setting (slack None once, else slack x wait): cost and wait ratios per seed
    and their means. ``time_limit_s`` is the window method's (``guarded``); None, the default,
    keeps the results independent of the machine's speed (the cheaper of the SCAS optimum and
    ``slurm-tree``, without the free-form improvement a time limit allows)."""
    topology = cluster_topology(nodes)
    streams = {s: paper_rows(jobs, s, topology) for s in seeds}
    refs = {s: reference(rows, topology) for s, rows in streams.items()}
    settings = [(None, None)] + [(g, w) for g in slacks if g is not None for w in waits]
    out = []
    for slack, wait in settings:
        row = {"slack": "none" if slack is None else slack, "wait_s": wait or "-"}
        costs, waits_ = [], []
        for s, rows in streams.items():
            cfg = ServiceConfig(
                time_limit_s=time_limit_s, locality_slack=slack, locality_wait_s=wait or 300.0
            )
            done = simulate_service(
                rows, topology, cfg, tick_s=tick_s, visible_after_s=visible_after_s
            )
            c = float(np.mean([d["cost"] for d in done])) / refs[s]["mean_cost"]
            w = float(np.mean([d["wait"] for d in done])) / refs[s]["mean_wait_s"]
            row[f"cost_s{s}"], row[f"wait_s{s}"] = c, w
            costs.append(c)
            waits_.append(w)
        row["cost"], row["wait"] = float(np.mean(costs)), float(np.mean(waits_))
        out.append(row)
        print(
            f"slack {row['slack']} wait {row['wait_s']}: cost {row['cost']:.3f} wait "
            f"{row['wait']:.2f}x",
            file=sys.stderr,
            flush=True,
        )
    return out


def plot(rows: list[dict], png, live=()) -> Path:
    """Mean CH cost against mean wait (both over Slurm alone's) of every setting, the slacks
    joined by their waits, the target's corner marked; ``live``: ``(label, wait, cost)`` points
    measured on a real Slurm, drawn beside."""
    from tjap.core.report import pyplot, save_figure

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for slack in dict.fromkeys(r["slack"] for r in rows):
        pts = [r for r in rows if r["slack"] == slack]
        label = "service as before" if slack == "none" else f"slack {slack}"
        ax.plot(
            [r["wait"] for r in pts], [r["cost"] for r in pts], marker="o", ms=4, lw=1, label=label
        )
        for r in pts:
            if r["wait_s"] != "-":
                ax.annotate(
                    f"{r['wait_s']:g} s",
                    (r["wait"], r["cost"]),
                    fontsize=6,
                    xytext=(3, 2),
                    textcoords="offset points",
                )
    for label, wait, cost in live:
        ax.scatter([wait], [cost], marker="x", color="k", zorder=3)
        ax.annotate(label, (wait, cost), fontsize=7, xytext=(4, -9), textcoords="offset points")
    ax.axhline(0.85, color="tab:red", lw=0.8, ls="--")
    ax.axvline(1.10, color="tab:red", lw=0.8, ls="--")
    ax.fill_between([0, 1.10], 0, 0.85, color="tab:red", alpha=0.08, label="target")
    ax.set_xlim(left=0.4)
    ax.set_ylim(0.8, 1.02)
    ax.set_xlabel("mean wait / Slurm alone's")
    ax.set_ylabel("mean CH cost / Slurm alone's")
    ax.set_title("placement service: cost against wait (simulated; x: live runs)", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    return save_figure(fig, png)


def _live_points(paths) -> list:
    """``(label, wait ratio, cost ratio)`` of each service way in saved
    :mod:`benchmarks.slurm_topology` results."""
    out = []
    for path in paths:
        res = json.loads(Path(path).read_text())
        seed = res.get("setup", {}).get("seed")
        for way, q in res.get("ratios", {}).items():
            if way.startswith("tjap"):
                out.append((f"{way} s{seed}", q["mean_wait"], q["cost"]))
    return out


def _slack(text: str):
    return None if text.lower() == "none" else float(text)


def build_parser() -> argparse.ArgumentParser:
    p = parser("service_frontier", __doc__)
    p.add_argument(
        "--seed",
        "--seeds",
        dest="seeds",
        type=int,
        nargs="+",
        default=[2, 3, 4, 5],
        help="workload seeds, one stream each (default 2 3 4 5)",
    )
    p.add_argument("--jobs", type=int, default=150, help="jobs of each stream (default 150)")
    p.add_argument(
        "--slack",
        type=_slack,
        nargs="+",
        default=[None, 1.0, 0.5, 0.3, 0.2],
        help="locality slacks ('none': never hold)",
    )
    p.add_argument(
        "--wait",
        type=float,
        nargs="+",
        default=[8, 12, 16, 24],
        help="most seconds a job is held for locality",
    )
    p.add_argument("--tick", type=float, default=1.0, help="seconds between passes")
    p.add_argument(
        "--visible-after",
        type=float,
        default=1.0,
        help="seconds after its submission a job is seen by the service",
    )
    add_out(p, "the rows (service_frontier.json)")
    p.add_argument("--plot", default=None, metavar="PNG", help="draw the frontier")
    p.add_argument(
        "--live",
        nargs="*",
        default=[],
        metavar="JSON",
        help="benchmarks.slurm_topology results whose service ways are drawn beside",
    )
    p.add_argument(
        "--replot",
        default=None,
        metavar="JSON",
        help="draw --plot from a saved service_frontier.json instead of simulating",
    )
    return p


@one_line_errors
def main(argv=None) -> int:
    """Simulate every setting (or redraw a saved run); print the table, write the rows."""
    p = build_parser()
    args = p.parse_args(argv)
    if args.replot:
        if not args.plot:
            p.error("--replot needs --plot PNG")
        rows = json.loads(Path(args.replot).read_text())["rows"]
        print(plot(rows, args.plot, _live_points(args.live)))
        return 0
    rows = frontier(
        args.seeds,
        args.slack,
        args.wait,
        jobs=args.jobs,
        tick_s=args.tick,
        visible_after_s=args.visible_after,
    )
    cols = [("slack", ""), ("wait_s", "")]
    cols += [(f"cost_s{s}", ".3f") for s in args.seeds] + [("cost", ".3f")]
    cols += [(f"wait_s{s}", ".2f") for s in args.seeds] + [("wait", ".2f")]
    print(
        "the service's mean CH cost and mean wait over Slurm alone's (simulated), per seed "
        "and mean (target: cost 0.85 at wait 1.10)"
    )
    print(format_table(rows, cols))
    if args.plot:
        plot(rows, args.plot, _live_points(args.live))
    path = Path(args.out) / "service_frontier.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"argv": sys.argv[1:] if argv is None else argv, "rows": rows}, indent=1)
    )
    print(f"rows: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
