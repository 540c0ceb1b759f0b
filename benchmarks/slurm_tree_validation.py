"""Does ``slurm-tree`` choose what a real Slurm 22.05 chooses on a switch tree?

A throw-away multi-node Slurm (one ``slurmd`` per node, ``TopologyPlugin=topology/tree``, the
``topology.conf`` written by :meth:`Topology.to_slurm`, ``slurm.conf``'s node order = the tree's
depth-first order, one CPU per node) runs on an irregular random tree of 24-40 nodes with 2-3
switch levels and uneven leaves (a new tree every ``windows / trees`` windows). For each window:

1. scattered nodes are made busy: one ``sbatch --exclusive -N k --nodelist=...`` job holding
   them, waited for until it runs;
2. the window's jobs are submitted one at a time in priority order
   (``sbatch -N n --exclusive --wrap "sleep ..."``), each waited for until it runs, so that Slurm
   places job j on the nodes left idle by the busy job and jobs 0..j-1, exactly the question
   :func:`tjap.heuristics.slurm.tree.solve_slurm_tree` answers;
3. each job's nodes are read from ``squeue``; everything is cancelled and the nodes waited for
   until idle.

A window *agrees* when Slurm and ``slurm-tree`` give every job the same node set, else when the
window's cost (paper convention) is the same; anything else is a difference, listed with the
first job that differs. As a baseline, the windows where simply taking the first idle nodes in
node order (method ``seq``) gives Slurm's sets are counted too. ``--slurm 24.11`` runs the same
windows (the same ``--seed``) on the Slurm 24.11 that ``.ci/build-slurm-newer`` builds, against
slurm-tree's 24.11 rule (``slurm="24.11"``; a Slurm older than 24.11 is compared with 22.05's).

    python -m benchmarks.slurm_tree_validation --windows 30 --seed 0   # benchmarks/out/slurm_tree_validation.json
    python -m benchmarks.slurm_tree_validation --windows 30 --seed 0 --slurm 24.11 --name slurm_tree_validation_24.11
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks.common import add_out, format_table, one_line_errors, parser, write_result
from tjap.heuristics.slurm.tree import solve_slurm_tree
from tjap.placement.slurm.client import SlurmError
from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig, slurm_version, version_tuple
from tjap.placement.tree.cost import assignment_cost
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.placement.tree.scas import solve_seq
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window

#: Seconds a job may stay pending before it counts as "Slurm did not place it".
PENDING_LIMIT_S = 20.0


def random_tree(rng: np.random.Generator, min_nodes: int = 24, max_nodes: int = 40) -> Topology:
    """An irregular tree: a root over 2-4 children, each a leaf or a switch over 2-3 leaves (so
    leaves sit at depth 1 and 2, 2 or 3 levels), leaves of 2-7 nodes, ``min_nodes``-``max_nodes``
    nodes named ``n001``... in depth-first order."""
    while True:
        lines, leaves, mids = [], 0, 0
        children, nodes = [], 0
        specs = []
        for _ in range(int(rng.integers(2, 5))):
            if rng.random() < 0.65:
                mids += 1
                kids = []
                for _ in range(int(rng.integers(2, 4))):
                    leaves += 1
                    size = int(rng.integers(2, 8))
                    specs.append((f"l{leaves}", size))
                    kids.append(f"l{leaves}")
                children.append((f"m{mids}", kids))
            else:
                leaves += 1
                size = int(rng.integers(2, 8))
                specs.append((f"l{leaves}", size))
                children.append((f"l{leaves}", None))
        nodes = sum(size for _, size in specs)
        if min_nodes <= nodes <= max_nodes and any(k for _, k in children):
            break
    sizes = dict(specs)
    counter = 0

    def leaf_line(name):
        nonlocal counter
        names = [f"n{counter + i + 1:03d}" for i in range(sizes[name])]
        counter += sizes[name]
        return f"SwitchName={name} Nodes={','.join(names)}"

    for name, kids in children:
        if kids is None:
            lines.append(leaf_line(name))
        else:
            lines.append(f"SwitchName={name} Switches={','.join(kids)}")
            lines.extend(leaf_line(k) for k in kids)
    lines.append("SwitchName=top Switches=" + ",".join(name for name, _ in children))
    return Topology.from_slurm("\n".join(lines) + "\n")


def random_window(rng: np.random.Generator, topology: Topology, max_jobs: int = 5) -> Window:
    """Scattered busy nodes (20-60 %), then 1-``max_jobs`` jobs of 1-12 nodes that fit."""
    n = topology.num_nodes
    busy = rng.random(n) < rng.uniform(0.2, 0.6)
    idle = np.flatnonzero(~busy)
    sizes, left = [], idle.size
    for _ in range(int(rng.integers(1, max_jobs + 1))):
        if left < 1:
            break
        size = int(min(left, rng.integers(1, 13)))
        sizes.append(size)
        left -= size
    return Window(topology, idle.tolist(), sizes)


class SlurmPlacer:
    """Asks a running multi-node :class:`LocalSlurm` where it puts a window's jobs."""

    def __init__(self, slurm: LocalSlurm, poll_s: float = 0.05):
        self.slurm = slurm
        self.client = slurm.client(timeout_s=20)
        self.poll_s = poll_s

    def _sbatch(self, args: list[str]) -> int:
        proc = self.client.run(
            [
                "sbatch",
                "--parsable",
                "--exclusive",
                "-o",
                "/dev/null",
                "-t",
                "60",
                *args,
                "--wrap",
                "sleep 100000",
            ]
        )
        return int(proc.stdout.strip().split(";")[0])

    def _wait_running(self, job_id: int) -> list[str] | None:
        end = time.monotonic() + PENDING_LIMIT_S
        while True:
            out = self.client.run(
                ["squeue", "-h", "-j", str(job_id), "-o", "%T|%N"], check=False
            ).stdout.strip()
            state, _, nodes = out.partition("|")
            if state == "RUNNING" and nodes:
                return expand_hostlist(nodes)
            if state not in ("PENDING", "CONFIGURING", "RUNNING") or time.monotonic() > end:
                return None
            time.sleep(self.poll_s)

    def place(self, window: Window) -> list[list[str] | None]:
        """Per job, in window order, the node names Slurm gave it (None: left pending)."""
        topology = window.topology
        busy = sorted(set(range(topology.num_nodes)) - set(window.idle_nodes.tolist()))
        ids = []
        try:
            if busy:
                names = [topology.node_names[v] for v in busy]
                ids.append(
                    self._sbatch(
                        ["-N", str(len(names)), "--nodelist=" + ",".join(names), "-J", "busy"]
                    )
                )
                if self._wait_running(ids[-1]) is None:
                    raise SlurmError("the job holding the busy nodes did not start")
            placed = []
            for j, size in enumerate(window.job_sizes):
                ids.append(self._sbatch(["-N", str(int(size)), "-J", f"job{j}"]))
                nodes = self._wait_running(ids[-1])
                placed.append(nodes)
                if nodes is None:
                    break
            placed += [None] * (window.num_jobs - len(placed))
            return placed
        finally:
            self.client.cancel(ids)
            self.slurm.wait_idle(timeout_s=60)


def compare(window: Window, slurm_nodes, convention: str = "paper", rule: str = "22.05") -> dict:
    """Slurm's placement of ``window`` against slurm-tree's (the ``rule`` of that release)."""
    topology = window.topology
    model = solve_slurm_tree(window, convention=convention, slurm=rule)
    model_sets = [sorted(topology.node_names[v] for v in nodes) for nodes in model.assignment]
    row = {
        "idle": [topology.node_names[v] for v in window.idle_nodes],
        "job_sizes": list(window.job_sizes),
        "slurm": slurm_nodes,
        "slurm_tree": model_sets,
        "slurm_tree_status": model.status.value,
    }
    if any(nodes is None for nodes in slurm_nodes):
        row.update(
            same_set=False,
            same_cost=False,
            slurm_cost=None,
            slurm_tree_cost=model.objective if model.has_solution else None,
            first_difference=next(j for j, n in enumerate(slurm_nodes) if n is None),
        )
        return row
    slurm_sets = [sorted(nodes) for nodes in slurm_nodes]
    seq = solve_seq(window, convention=convention)
    row["seq_same_set"] = slurm_sets == [
        sorted(topology.node_names[v] for v in nodes) for nodes in seq.assignment
    ]
    slurm_cost = assignment_cost(
        topology, [topology.node_indices(s) for s in slurm_sets], convention
    )
    same_set = model.has_solution and slurm_sets == model_sets
    row.update(
        same_set=bool(same_set),
        slurm_cost=slurm_cost,
        slurm_tree_cost=model.objective if model.has_solution else None,
    )
    row["same_cost"] = bool(model.has_solution and abs(slurm_cost - model.objective) < 1e-9)
    if not same_set:
        row["first_difference"] = next(
            (j for j, (a, b) in enumerate(zip(slurm_sets, model_sets)) if a != b), None
        )
    return row


def run(
    num_windows: int,
    seed: int,
    num_trees: int,
    convention: str = "paper",
    quiet: bool = False,
    slurm: str = "system",
) -> dict:
    version = slurm_version(slurm)
    rule = "24.11" if version_tuple(version) >= (24, 11) else "22.05"
    rng = np.random.default_rng(seed)
    trees = [random_tree(rng) for _ in range(num_trees)]
    per_tree = [num_windows // num_trees + (t < num_windows % num_trees) for t in range(num_trees)]
    rows = []
    started = time.perf_counter()
    for t, (tree, count) in enumerate(zip(trees, per_tree)):
        with LocalSlurm(LocalSlurmConfig.for_topology(tree, slurm=slurm)) as cluster:
            placer = SlurmPlacer(cluster)
            for _ in range(count):
                window = random_window(rng, tree)
                row = compare(window, placer.place(window), convention, rule)
                row["tree"] = t
                rows.append(row)
                if not quiet:
                    print(
                        f"window {len(rows):3d} tree {t} jobs {row['job_sizes']}: "
                        f"{'same set' if row['same_set'] else 'same cost' if row['same_cost'] else 'DIFFERENT'}",
                        file=sys.stderr,
                    )
    n = len(rows)
    same_set = sum(r["same_set"] for r in rows)
    same_cost = sum(r["same_set"] or r["same_cost"] for r in rows)
    jobs = sum(len(r["job_sizes"]) for r in rows)
    jobs_same = sum(
        a == b
        for r in rows
        if all(x is not None for x in r["slurm"])
        for a, b in zip((sorted(x) for x in r["slurm"]), r["slurm_tree"])
    )
    seq_same = sum(bool(r.get("seq_same_set")) for r in rows)
    older = {}
    if rule != "22.05":  # what the 22.05 rule would have said
        same = 0
        for r in rows:
            if all(x is not None for x in r["slurm"]):
                tree = trees[r["tree"]]
                old = solve_slurm_tree(Window(tree, r["idle"], r["job_sizes"]), slurm="22.05")
                same += sum(
                    sorted(a) == sorted(tree.node_names[v] for v in b)
                    for a, b in zip(r["slurm"], old.assignment)
                )
        older["jobs_same_set_22_05_rule"] = same
    return {
        "slurm_version": version,
        "rule": rule,
        "seed": seed,
        "windows": n,
        "trees": [t.to_slurm() for t in trees],
        "convention": convention,
        "summary": {
            "same_set": same_set,
            "same_set_or_cost": same_cost,
            "fraction_same_set": same_set / n,
            "fraction_same_set_or_cost": same_cost / n,
            "jobs": jobs,
            "jobs_same_set": jobs_same,
            "baseline_seq_same_set": seq_same,
            **older,
            "runtime_s": time.perf_counter() - started,
        },
        "rows": rows,
    }


def build_parser() -> argparse.ArgumentParser:
    p = parser("slurm_tree_validation", __doc__)
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--trees", type=int, default=3, help="random trees (one Slurm start each)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--convention", default="paper")
    p.add_argument(
        "--slurm",
        default="system",
        help="the Slurm to run: system (the installed one, the default), 24.11 (built "
        "by .ci/build-slurm-newer) or the absolute path of an install",
    )
    add_out(p, "the results (NAME.json)")
    p.add_argument(
        "--name",
        default="slurm_tree_validation",
        help="file name of the results in --out, without .json (default slurm_tree_validation)",
    )
    p.add_argument("--quiet", action="store_true")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Compare Slurm's placements with slurm-tree's; print the table, write the results."""
    p = build_parser()
    args = p.parse_args(argv)
    if args.windows < 1 or args.trees < 1:
        p.error("--windows and --trees must be >= 1")
    result = run(
        args.windows,
        args.seed,
        min(args.trees, args.windows),
        args.convention,
        args.quiet,
        args.slurm,
    )
    table = [
        {
            "window": i + 1,
            "tree": r["tree"],
            "jobs": ",".join(map(str, r["job_sizes"])),
            "idle": len(r["idle"]),
            "same set": "yes" if r["same_set"] else "no",
            "same cost": "yes" if r["same_set"] or r["same_cost"] else "no",
            "Slurm cost": r["slurm_cost"],
            "slurm-tree cost": r["slurm_tree_cost"],
        }
        for i, r in enumerate(result["rows"])
    ]
    print(
        format_table(
            table,
            [
                ("window", ""),
                ("tree", ""),
                ("jobs", ""),
                ("idle", ""),
                ("same set", ""),
                ("same cost", ""),
                ("Slurm cost", ".0f"),
                ("slurm-tree cost", ".0f"),
            ],
        )
    )
    s = result["summary"]
    print(
        f"{result['slurm_version']} against slurm-tree's {result['rule']} rule: "
        f"{s['same_set']}/{result['windows']} windows the same node "
        f"sets ({s['fraction_same_set']:.0%}), {s['same_set_or_cost']}/{result['windows']} the "
        f"same sets or cost ({s['fraction_same_set_or_cost']:.0%}); {s['jobs_same_set']}/"
        f"{s['jobs']} jobs the same set; {s['runtime_s']:.0f} s"
    )
    print(
        f"baseline: the first idle nodes in node order (seq) give Slurm's sets in "
        f"{s['baseline_seq_same_set']}/{result['windows']} windows"
    )
    if "jobs_same_set_22_05_rule" in s:
        print(
            f"slurm-tree's 22.05 rule gives Slurm's set for {s['jobs_same_set_22_05_rule']}/"
            f"{s['jobs']} jobs"
        )
    write_result(args.out, args.name, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
