"""Does ``slurm-block`` choose what a real Slurm 24.11 chooses on a ``topology/block`` cluster?

A throw-away multi-node Slurm 24.11 (built by ``.ci/build-slurm-newer``; one ``slurmd`` per
node, one CPU each, ``TopologyPlugin=topology/block``, the ``topology.conf`` written by
:func:`~tjap.placement.slurm.harness.block_conf`) runs on a random block cluster: 16-40 nodes in
base blocks of 2-8 nodes (a quarter of the clusters with some blocks larger than the base size),
and ``BlockSizes`` the base size and a random choice of its 2^k multiples (a new cluster every
``windows / clusters`` windows). For each window:

1. scattered nodes are made busy (with some whole base blocks): one job per base block,
   ``sbatch --exclusive -N g -w NODES`` (a node list must lie inside one block of the level its
   size asks for: the busy nodes of one base block do), waited for until all run;
2. the window's jobs (2-5, of 1 node to three base blocks; segments of 2 to the base block size,
   which Slurm 24.11 allows, on about a third of the multi-node jobs; ``--exclusive=topo`` on
   about one job in ten) are submitted one at a time in window order (``sbatch -N n
   [--segment=s] --exclusive[=topo] --wrap "sleep ..."``), each waited for until it runs or until
   it stays pending through two passes of the main scheduler; a pending job is recorded and
   cancelled, so that the jobs behind it see the same idle nodes as in ``slurm-block`` (where a
   pending job holds nothing); a job that ``sbatch`` refuses ("Requested node configuration is
   not available": no block of the idle cluster could hold it) counts as pending;
3. each job's nodes are read from ``squeue``; everything is cancelled and the nodes waited for
   until idle.

``tjap.solve(window, "slurm-block")`` answers the same sequence: its assignment, or for a window
with a pending job ``info["placed"]`` and ``info["unplaced"]``. A job *agrees* when both give it
the same node set or both leave it pending. Since a job that differs changes what the jobs behind
it see, each job is also compared *step by step*: slurm-block's choice for it on the nodes Slurm
itself had left idle. Every differing job is listed with the base blocks each side used and
their idle nodes at that step.

    python -m benchmarks.slurm_block_validation --windows 36 --seed 0   # benchmarks/out/slurm_block_validation.json
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import tjap
from benchmarks.common import add_out, format_table, one_line_errors, parser, write_result
from tjap.placement.slurm.client import SlurmError
from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig, block_conf, slurm_version
from tjap.placement.tree.hostlist import compress_hostlist, expand_hostlist
from tjap.placement.tree.jobs import base_block_size
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window

#: Seconds a job may take to start before the wait gives up on it (it normally starts or is
#: found pending within two main-scheduler passes, about 2 s).
START_LIMIT_S = 20.0


# --------------------------------------------------------------------------- random cases
def random_cluster(
    rng: np.random.Generator, min_nodes: int = 16, max_nodes: int = 40
) -> tuple[Topology, list[int]]:
    """A block cluster and its ``BlockSizes`` (in nodes): 2 or more base blocks of ``b`` = 2-8
    nodes (a quarter of the time some of ``b`` to ``b + 2``), ``min_nodes``-``max_nodes`` nodes
    named ``n1``... in block order; ``BlockSizes`` is ``b`` and each ``b * 2^k`` up to the first
    that holds every block, each kept with probability 0.6."""
    while True:
        base = int(rng.integers(2, 9))
        low, high = max(2, -(-min_nodes // base)), max_nodes // base
        if low > high:
            continue
        count = int(rng.integers(low, high + 1))
        sizes = [base] * count
        if rng.random() < 0.25:
            sizes = [base + int(rng.integers(0, 3)) for _ in range(count)]
            sizes[int(rng.integers(count))] = base
        if min_nodes <= sum(sizes) <= max_nodes:
            break
    top = (count - 1).bit_length()  # 2^top base blocks hold them all
    block_sizes = [base] + [base << k for k in range(1, top + 1) if rng.random() < 0.6]
    lines, first = [], 1
    for i, size in enumerate(sizes):
        lines.append(f"BlockName=b{i + 1} Nodes=n[{first}-{first + size - 1}]")
        first += size
    lines.append("BlockSizes=" + ",".join(map(str, block_sizes)))
    return Topology.from_slurm("\n".join(lines) + "\n"), block_sizes


def random_window(rng: np.random.Generator, topology: Topology, max_jobs: int = 5) -> Window:
    """Scattered busy nodes (10-50 %, and a whole base block or two a third of the time), then
    2-``max_jobs`` jobs: 40 % of 1 to ``b`` nodes, the others of ``b + 1`` to ``3 b`` (``b`` the
    base block size), at most the idle nodes the earlier jobs leave; a third of the multi-node
    jobs in segments (a divisor of the size, 2 to ``b`` and below the size), one in ten with
    ``exclusive`` (``--exclusive=topo``)."""
    n = topology.num_nodes
    base = base_block_size(topology)
    busy = rng.random(n) < rng.uniform(0.1, 0.5)
    if rng.random() < 1 / 3:
        leaves = np.asarray(topology.leaf_switches)
        for leaf in rng.choice(
            leaves, size=min(len(leaves) - 1, int(rng.integers(1, 3))), replace=False
        ):
            busy[topology.node_leaf == leaf] = True
    idle = np.flatnonzero(~busy)
    jobs, left = [], int(idle.size)
    for _ in range(int(rng.integers(2, max_jobs + 1))):
        if left < 1:
            break
        if rng.random() < 0.4:
            size = int(rng.integers(1, base + 1))
        else:
            size = int(rng.integers(base + 1, 3 * base + 1))
        size = min(size, left)
        job = {"nodes": size}
        divisors = [d for d in range(2, min(base, size - 1) + 1) if size % d == 0]
        if size > 1 and divisors and rng.random() < 1 / 3:
            job["segment"] = int(rng.choice(divisors))
        if rng.random() < 0.1:
            job["exclusive"] = True
        jobs.append(job)
        left -= size
    return Window(topology, idle.tolist(), jobs)


# --------------------------------------------------------------------------- Slurm's choice
class SlurmPlacer:
    """Asks a running multi-node :class:`LocalSlurm` (``topology/block``) where it puts a
    window's jobs."""

    def __init__(self, slurm: LocalSlurm, poll_s: float = 0.05):
        self.slurm = slurm
        self.client = slurm.client(timeout_s=20)
        self.poll_s = poll_s
        #: The jobs of the last window that ``sbatch`` refused (no block could ever hold them).
        self.refused: list[int] = []

    def _sbatch(self, args: list[str], exclusive: str = "--exclusive") -> int:
        proc = self.client.run(
            [
                "sbatch",
                "--parsable",
                exclusive,
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

    def _cycles(self) -> int:
        return self.slurm.main_scheduler_cycles()

    def _wait(self, job_id: int, cycles: int | None) -> list[str] | None:
        """The job's nodes once it runs; None once it is still pending after two passes of the
        main scheduler that began after ``cycles`` (None: wait for it to run)."""
        end = time.monotonic() + START_LIMIT_S
        while True:
            out = self.client.run(
                ["squeue", "-h", "-j", str(job_id), "-o", "%T|%N"], check=False
            ).stdout.strip()
            state, _, nodes = out.partition("|")
            if state == "RUNNING" and nodes:
                return expand_hostlist(nodes)
            if state not in ("PENDING", "CONFIGURING", "RUNNING") or time.monotonic() > end:
                return None
            if cycles is not None and state == "PENDING" and self._cycles() >= cycles + 3:
                return None
            time.sleep(self.poll_s)

    def place(self, window: Window) -> list[list[str] | None]:
        """Per job, in window order, the node names Slurm gave it (None: left pending, or
        refused at submission: listed in :attr:`refused`)."""
        topology = window.topology
        self.refused = []
        idle = np.zeros(topology.num_nodes, bool)
        idle[window.idle_nodes] = True
        ids = []
        try:
            for leaf in topology.leaf_switches:
                names = [
                    topology.node_names[v]
                    for v in np.flatnonzero((topology.node_leaf == leaf) & ~idle)
                ]
                if names:
                    ids.append(
                        self._sbatch(["-N", str(len(names)), "-w", ",".join(names), "-J", "busy"])
                    )
            for job_id in ids:
                if self._wait(job_id, None) is None:
                    raise SlurmError(f"the job {job_id} holding busy nodes did not start")
            placed = []
            for j, job in enumerate(window.jobs):
                args = ["-N", str(job.nodes), "-J", f"job{j}"]
                if job.segment is not None:
                    args.append(f"--segment={job.segment}")
                cycles = self._cycles()
                try:
                    ids.append(
                        self._sbatch(args, "--exclusive=topo" if job.exclusive else "--exclusive")
                    )
                except SlurmError as err:  # no block could ever hold it
                    if "node configuration is not available" not in str(err):
                        raise
                    self.refused.append(j)
                    placed.append(None)
                    continue
                nodes = self._wait(ids[-1], cycles)
                placed.append(nodes)
                if nodes is None:  # pending: it must hold nothing
                    self.client.cancel([ids[-1]])
            return placed
        finally:
            self.client.cancel(ids)
            self.slurm.wait_idle(timeout_s=60)


# --------------------------------------------------------------------------- the comparison
def model_sets(window: Window) -> list[list[str] | None]:
    """Per job, slurm-block's node names (None: left pending), via ``tjap.solve``."""
    result = tjap.solve(window, "slurm-block")
    topology = window.topology
    if result.has_solution:
        chosen = dict(enumerate(result.assignment))
    else:
        chosen = result.info["placed"]
    return [
        sorted(topology.node_names[v] for v in chosen[j]) if j in chosen else None
        for j in range(window.num_jobs)
    ]


def step_window(window: Window, slurm_nodes, j: int) -> Window | None:
    """Job ``j`` alone on the nodes Slurm left idle before it (the base blocks of earlier
    ``--exclusive=topo`` jobs taken out for a job that is not exclusive itself); None when
    too few are left."""
    topology = window.topology
    idle = np.zeros(topology.num_nodes, bool)
    idle[window.idle_nodes] = True
    held = np.zeros(topology.num_switches, bool)
    for job, nodes in zip(window.jobs[:j], slurm_nodes[:j]):
        if nodes is None:
            continue
        index = topology.node_indices(nodes)
        idle[index] = False
        if job.exclusive:
            held[topology.node_leaf[index]] = True
    if not window.jobs[j].exclusive:
        idle &= ~held[topology.node_leaf]
    if idle.sum() < window.jobs[j].nodes:
        return None
    return Window(topology, np.flatnonzero(idle).tolist(), [window.jobs[j]])


def describe(window: Window, slurm_nodes, j: int, slurm, model) -> str:
    """One line: the base blocks each side used for job ``j`` and their idle nodes then."""
    topology = window.topology
    step = step_window(window, slurm_nodes, j)
    idle = np.bincount(
        topology.node_leaf[step.idle_nodes] if step else [], minlength=topology.num_switches
    )

    def blocks(nodes):
        if nodes is None:
            return "pending"
        leaves = sorted(
            {int(topology.node_leaf[v]) for v in topology.node_indices(nodes)},
            key=first.__getitem__,
        )
        return (
            compress_hostlist(nodes)
            + " in "
            + ",".join(f"{topology.switch_names[s]}" for s in leaves)
        )

    first = {
        int(s): int(np.flatnonzero(topology.node_leaf == s)[0]) for s in topology.leaf_switches
    }
    job = window.jobs[j]
    what = (
        f"-N {job.nodes}"
        + (f" --segment={job.segment}" if job.segment else "")
        + (" --exclusive=topo" if job.exclusive else "")
    )
    free = " ".join(
        f"{topology.switch_names[s]}:{int(idle[s])}" for s in sorted(first, key=first.__getitem__)
    )
    return f"job {j} ({what}): Slurm {blocks(slurm)}; slurm-block {blocks(model)}; idle {free}"


def compare(window: Window, slurm_nodes) -> dict:
    """Slurm's placements of ``window``'s jobs against slurm-block's, job by job."""
    topology = window.topology
    model = model_sets(window)
    slurm = [None if nodes is None else sorted(nodes) for nodes in slurm_nodes]
    steps = [step_window(window, slurm, j) for j in range(window.num_jobs)]
    step = [None if w is None else model_sets(w)[0] for w in steps]
    same = [a == b for a, b in zip(slurm, model)]
    row = {
        "idle": [topology.node_names[v] for v in window.idle_nodes],
        "jobs": [job.to_value() for job in window.jobs],
        "slurm": slurm,
        "slurm_block": model,
        "slurm_block_step": step,
        "same": same,
        "same_step": [a == b for a, b in zip(slurm, step)],
        "differences": [
            describe(window, slurm, j, slurm[j], step[j])
            for j in range(window.num_jobs)
            if slurm[j] != step[j]
        ],
    }
    return row


def run(
    num_windows: int, seed: int, num_clusters: int, slurm: str = "24.11", quiet: bool = False
) -> dict:
    rng = np.random.default_rng(seed)
    clusters = [random_cluster(rng) for _ in range(num_clusters)]
    per_cluster = [
        num_windows // num_clusters + (c < num_windows % num_clusters) for c in range(num_clusters)
    ]
    rows = []
    started = time.perf_counter()
    for c, ((tree, sizes), count) in enumerate(zip(clusters, per_cluster)):
        with LocalSlurm(LocalSlurmConfig.for_blocks(tree, sizes, slurm=slurm)) as cluster:
            placer = SlurmPlacer(cluster)
            for _ in range(count):
                window = random_window(rng, tree)
                row = compare(window, placer.place(window))
                row["cluster"], row["refused"] = c, placer.refused
                rows.append(row)
                if not quiet:
                    print(
                        f"window {len(rows):3d} cluster {c} jobs {row['jobs']}: "
                        f"{sum(row['same'])}/{len(row['same'])} the same",
                        file=sys.stderr,
                    )
    jobs = [
        (s, m, p)
        for r in rows
        for s, m, p in zip(r["slurm"], r["slurm_block"], r["slurm_block_step"])
    ]
    summary = {
        "windows": len(rows),
        "jobs": len(jobs),
        "jobs_same": sum(s == m for s, m, _ in jobs),
        "jobs_same_step": sum(s == p for s, _, p in jobs),
        "windows_all_same": sum(all(r["same"]) for r in rows),
        "pending_both": sum(s is None and m is None for s, m, _ in jobs),
        "pending_slurm_only": sum(s is None and m is not None for s, m, _ in jobs),
        "pending_model_only": sum(s is not None and m is None for s, m, _ in jobs),
        "refused": sum(len(r["refused"]) for r in rows),
        "segmented": sum("segment" in job for r in rows for job in _dicts(r["jobs"])),
        "exclusive": sum("exclusive" in job for r in rows for job in _dicts(r["jobs"])),
        "runtime_s": time.perf_counter() - started,
    }
    return {
        "slurm_version": slurm_version(slurm),
        "seed": seed,
        "clusters": [
            {
                "topology_conf": block_conf(tree, sizes),
                "block_sizes": sizes,
                "nodes": tree.num_nodes,
            }
            for tree, sizes in clusters
        ],
        "summary": summary,
        "rows": rows,
    }


def _dicts(jobs):
    return [job for job in jobs if isinstance(job, dict)]


def build_parser() -> argparse.ArgumentParser:
    p = parser("slurm_block_validation", __doc__)
    p.add_argument("--windows", type=int, default=36)
    p.add_argument(
        "--clusters",
        type=int,
        default=6,
        help="random block clusters (one Slurm start each; default 6)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--slurm",
        default="24.11",
        help="the Slurm to run: 24.11 (built by .ci/build-slurm-newer, the default) or "
        "the absolute path of an install of 23.11 or later",
    )
    add_out(p, "the results (NAME.json)")
    p.add_argument(
        "--name",
        default="slurm_block_validation",
        help="file name of the results in --out, without .json (default slurm_block_validation)",
    )
    p.add_argument("--quiet", action="store_true")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Compare Slurm's block placements with slurm-block's; print the table, write the results."""
    p = build_parser()
    args = p.parse_args(argv)
    if args.windows < 1 or args.clusters < 1:
        p.error("--windows and --clusters must be >= 1")
    result = run(args.windows, args.seed, min(args.clusters, args.windows), args.slurm, args.quiet)
    clusters = result["clusters"]
    table = []
    for i, r in enumerate(result["rows"]):
        cluster = clusters[r["cluster"]]
        table.append(
            {
                "window": i + 1,
                "cluster": r["cluster"],
                "nodes": cluster["nodes"],
                "BlockSizes": ",".join(map(str, cluster["block_sizes"])),
                "idle": len(r["idle"]),
                "jobs": " ".join(_job_text(job) for job in r["jobs"]),
                "same": f"{sum(r['same'])}/{len(r['same'])}",
                "same step": f"{sum(r['same_step'])}/{len(r['same_step'])}",
                "pending Slurm/model": f"{sum(s is None for s in r['slurm'])}/"
                f"{sum(m is None for m in r['slurm_block'])}",
            }
        )
    print(
        format_table(
            table,
            [
                ("window", ""),
                ("cluster", ""),
                ("nodes", ""),
                ("BlockSizes", ""),
                ("idle", ""),
                ("jobs", ""),
                ("same", ""),
                ("same step", ""),
                ("pending Slurm/model", ""),
            ],
        )
    )
    print(
        "jobs: n nodes, n/s in segments of s, x --exclusive=topo; same: jobs with Slurm's node "
        "set (or pending in both); same step: slurm-block on the nodes Slurm left idle"
    )
    s = result["summary"]
    jobs = s["jobs"]
    print(
        f"{result['slurm_version']}: {s['windows']} windows, {jobs} jobs "
        f"({s['segmented']} segmented, {s['exclusive']} --exclusive=topo); "
        f"{s['jobs_same']}/{jobs} jobs the same node set ({s['jobs_same'] / jobs:.0%}), "
        f"{s['jobs_same_step']}/{jobs} step by step ({s['jobs_same_step'] / jobs:.0%}); "
        f"{s['windows_all_same']}/{s['windows']} windows all the same; {s['runtime_s']:.0f} s"
    )
    print(
        f"pending: {s['pending_both']} jobs in both ({s['refused']} of them refused by sbatch: "
        f"no block could ever hold them), {s['pending_slurm_only']} in Slurm only, "
        f"{s['pending_model_only']} in slurm-block only"
    )
    differences = [(i + 1, d) for i, r in enumerate(result["rows"]) for d in r["differences"]]
    print(f"differences (step by step): {len(differences) or 'none'}")
    for window, line in differences:
        print(f"  window {window}: {line}")
    write_result(args.out, args.name, result)
    return 0


def _job_text(job) -> str:
    if isinstance(job, int):
        return str(job)
    return (
        str(job["nodes"])
        + (f"/{job['segment']}" if "segment" in job else "")
        + ("x" if job.get("exclusive") else "")
    )


if __name__ == "__main__":
    sys.exit(main())
