"""TJAP inside a real Slurm: one job stream, three ways, Slurm's own records.

One job stream, time-compressed, is replayed on a throw-away multi-node Slurm 22.05 (one
``slurmd`` per node, ``sched/backfill``, ``topology/tree``; :class:`LocalSlurm`) three ways:

- ``slurm``: Slurm alone; each job ``sbatch -N n --exclusive``, Slurm places it best-fit on the
  switch tree when its backfill or main scheduler starts it;
- ``tjap``: every job submitted held (``--hold``); ``tjap slurm place`` (the in-process
  :class:`~tjap.slurm.service.PlacementService`, method ``guarded``, a window every
  ``--interval`` wall seconds) picks each window's jobs in the paper's order and their nodes,
  sets ``ReqNodeList`` and releases them;
- ``switches``: Slurm alone, each job with ``--switches=K@WAIT``, K the fewest leaf switches
  that can hold its size (largest leaves first), WAIT ``--switch-wait`` wall seconds;
- ``tjap-multi`` (a variant, ``--ways slurm,tjap-multi``): as ``tjap``, but one-node jobs are
  not held (their CH cost is 0 wherever they run): Slurm's backfill starts them.
- ``tjap-prefix`` (a variant): as ``tjap``, but the service's windows take the paper's greedy
  prefix only (``backfill="none"``; ``tjap`` uses the service's default EASY backfilling).
- ``tjap-local`` (a variant): as ``tjap``, and a multi-node job whose best idle nodes cost more
  than ``1 + --locality-slack`` times its best on the empty cluster is held for up to
  ``--locality-wait`` wall seconds after its submission (``tjap slurm place --locality-slack``).

From Slurm's records (``jobcomp/filetxt``: submit, start, end, node list) each way gets the mean
CH cost per job (the paper's Eq. (1) on the nodes Slurm reports; beside it the floor, every job on
its cheapest nodes of the empty cluster, and the excess over it), mean and p95 wait (start minus
submit) and the makespan (first submit to last end), in wall seconds and in trace seconds
(times the compression). Beside them, the batch simulator's prediction for ``slurm``: its
``sched/backfill`` model (node counts; bf_interval = bf_resolution = 1 s, Slurm's 30 s will-run
batches, 1 s release delay) from the submit times Slurm recorded, and the CH cost of placing its
starts, in its order, with ``slurm-tree`` (Slurm's own selection re-implemented): the simulator
itself places on fat-trees only.

The stream (``--workload paper``): seed 002's workload (arrivals every 5-30 s, runtimes 10-1800
s, 1-40 nodes; :meth:`Workload.generate`) scaled to the emulated cluster: sizes ``ceil(s * M /
40)`` (``--max-nodes`` M, default 12 of 40 nodes), runtimes divided by ``--compression`` (default
60: 10-1800 s become 1-30 wall seconds, at least 1), arrivals stretched so that the offered load
(node-seconds asked over node-seconds available until the last arrival) is ``--load`` (default
0.85), then compressed alike. ``--workload ls6``: a slice of the bundled LS6 A100 trace (sizes
scaled the same way from its 1-``max`` nodes), compressed, arrivals as recorded. Time limits are
the runtime rounded up to whole minutes (Slurm's resolution): 1 min for every paper job.

The cluster (``--nodes``, default 40): an irregular three-level tree (core, spines of 2-3 leaf
switches, leaves of 3-8 nodes; :func:`benchmarks.topologies.irregular_tree`, seeded).

On a ``topology/block`` cluster (``--blocks COUNTxSIZE``, e.g. ``16x4``: 16 base blocks of 4
nodes, ``n1`` ..., with ``BlockSizes`` the base size times 1, 2, 4 ... up to the whole cluster;
Slurm 24.11, ``--slurm 24.11``, the default with ``--blocks``): the same stream, and a share of
the multi-node jobs (``--segmented``, default a third, drawn with ``--seed``) asks for
``--segment=S``, S a divisor of its size of 2 up to the base block size (never the whole job),
written as ``#SBATCH --segment=S`` in its batch script, so that Slurm and the service both read
it. The ways are ``slurm`` (Slurm's own block placement) and the service's (``tjap``,
``tjap-local``, ...; the service keeps Slurm's block rule, pins with ``ReqNodeList`` and steers
segmented jobs with ``ExcNodeList``); ``switches`` is for ``topology/tree`` only, and the
simulator's prediction is left out (it models ``topology/tree``). Each way also reports, costs
with the aggregated blocks as tree levels: the mean CH cost of the segmented jobs and of the
unsegmented multi-node jobs apart, the share of multi-node jobs inside one base block, the
segment requests kept (every segment inside one base block: the job's node count in each base
block a multiple of S), mean wait by kind, and beside them the floors: each job's cheapest nodes
on the empty cluster under Slurm's block rule (its segments included) and without it
(:func:`block_summary`). The service's breakdown adds the jobs steered with ``ExcNodeList``, the
steers Slurm refused, and why held jobs waited: the window entries left held, by reason, and
how often a held job was left out of a window (:func:`service_breakdown`).

The three ways run side by side (three Slurms, ``--sequential`` for one after another)::

    python -m benchmarks.slurm_topology --jobs 150 --seed 2     # benchmarks/out/slurm_topology.json
    python -m benchmarks.slurm_topology --blocks 16x4 --jobs 120 --interval 0.25 --name blocks_16x4

Where the gain and the wait come from is in the result: per way the cost and wait by job size,
the share of multi-node jobs on the fewest leaves their size allows, and for ``tjap`` the service's
windows (their cost beside Slurm's would-be cost on the same idle nodes, the winner, the time a
job spent held before its window placed it).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, one_line_errors, parser
from benchmarks.topologies import irregular_tree
from tjap.api import solve
from tjap.core.errors import InvalidInputError
from tjap.heuristics.slurm.tree import slurm_tree_nodes
from tjap.placement.batch import Jobs, SchedulerConfig, Simulator
from tjap.placement.slurm.client import SlurmClient, SlurmError
from tjap.placement.slurm.harness import (
    NEWER_SLURM,
    LocalSlurm,
    LocalSlurmConfig,
    block_conf,
    newer_slurm_available,
    slurm_prefix,
)
from tjap.placement.tree.cost import job_cost
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.placement.tree.jobs import Job
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window
from tjap.placement.tree.workload import REQUESTED_NODES, Workload
from tjap.slurm.service import PlacementService, ServiceConfig

WAYS = ("slurm", "tjap", "switches")
#: the ways on a topology/block cluster by default
BLOCK_WAYS = ("slurm", "tjap")
#: a variant of ``tjap``: only multi-node jobs are held (a one-node job costs 0 wherever it runs)
EXTRA_WAYS = ("tjap-multi", "tjap-prefix", "tjap-local")
#: the service's ways and their window backfilling
SERVICE_WAYS = {"tjap": "easy", "tjap-multi": "easy", "tjap-prefix": "none", "tjap-local": "easy"}
WAY_LABELS = {
    "slurm": "(a) Slurm alone (backfill + topology/tree)",
    "tjap": "(b) Slurm + tjap slurm place (guarded)",
    "switches": "(c) Slurm alone + --switches hints",
    "tjap-multi": "(b') as (b), one-node jobs not held",
    "tjap-prefix": "(b'') as (b), windows without backfill (the paper's prefix)",
    "tjap-local": "(b3) as (b), jobs held for locality",
}
#: Slurm 22.05's will-run batch width (the fidelity benchmark's node-level rule)
WILL_RUN_WINDOW_S = 30


# -- the cluster and the stream (pure) ----------------------------------------------------------
def cluster_topology(nodes: int = 40, seed: int = 1) -> Topology:
    """The emulated cluster: an irregular three-level tree of ``nodes`` nodes (leaves of 3-8
    nodes under spines of 2-3 leaves)."""
    if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 6:
        raise InvalidInputError(f"the cluster needs at least 6 nodes, got {nodes!r}")
    return irregular_tree(int(nodes), leaf_sizes=(3, 8), leaves_per_spine=(2, 3), seed=seed)


def scale_sizes(sizes, max_nodes: int, source_max: int = REQUESTED_NODES[1]) -> np.ndarray:
    """Job sizes of a stream whose sizes go up to ``source_max``, scaled to ``1..max_nodes``:
    ``ceil(s * max_nodes / source_max)`` (uniform sizes stay nearly uniform)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, (int, np.integer)) or max_nodes < 1:
        raise InvalidInputError(f"max_nodes must be a positive integer, got {max_nodes!r}")
    if sizes.size and (sizes.min() < 1 or sizes.max() > source_max):
        raise InvalidInputError(
            f"sizes must lie in 1..{source_max}, got {int(sizes.min())}..{int(sizes.max())}"
        )
    return np.clip(-(-sizes * int(max_nodes) // int(source_max)), 1, int(max_nodes))


def leaves_needed(topology: Topology, size: int) -> int:
    """The fewest leaf switches that can hold a job of ``size`` nodes (largest leaves first)."""
    leaf = np.sort(np.asarray(topology.leaf_sizes))[::-1]
    if not 1 <= int(size) <= int(leaf.sum()):
        raise InvalidInputError(
            f"size must lie in 1..{int(leaf.sum())} (the cluster's nodes), got {size!r}"
        )
    return int(np.searchsorted(np.cumsum(leaf), int(size)) + 1)


def switches_option(topology: Topology, size: int, wait_s: int) -> str:
    """``--switches=K@M:SS`` for a job of ``size`` nodes: K = :func:`leaves_needed`, waiting at
    most ``wait_s`` seconds for them."""
    wait_s = int(wait_s)
    if wait_s < 0:
        raise InvalidInputError(f"the switch wait must be >= 0 s, got {wait_s}")
    return f"--switches={leaves_needed(topology, size)}@{wait_s // 60}:{wait_s % 60:02d}"


def limit_minutes(runtime_s) -> int:
    """A job's time limit: its runtime rounded up to whole minutes (at least 1)."""
    return max(1, math.ceil(float(runtime_s) / 60))


def paper_rows(
    num_jobs: int,
    seed: int,
    topology: Topology,
    *,
    max_nodes: int = 12,
    load: float = 0.85,
    compression: float = 60.0,
) -> list[dict]:
    """Seed 002's workload scaled to ``topology`` (see the module docstring): replay rows ``id``,
    ``submit_s`` (wall), ``cpus`` (nodes), ``limit_min``, ``runtime_s`` (wall), ``trace_nodes``."""
    if not 0 < load <= 2:
        raise InvalidInputError(f"load must lie in (0, 2], got {load!r}")
    if not compression > 0:
        raise InvalidInputError(f"compression must be positive, got {compression!r}")
    if max_nodes > topology.num_nodes:
        raise InvalidInputError(
            f"max_nodes {max_nodes} exceeds the cluster's {topology.num_nodes} nodes"
        )
    w = Workload.generate(num_jobs, seed)
    sizes = scale_sizes(w.requested_nodes, max_nodes)
    runtime = np.maximum(1, np.rint(w.runtime_s / compression)).astype(np.int64)
    arrival = w.arrival_s.astype(float) / compression
    span = float(arrival[-1]) if num_jobs > 1 else 1.0
    work = float((sizes * runtime).sum())
    stretch = work / (load * topology.num_nodes * span) if span > 0 else 1.0
    submit = np.rint(arrival * stretch).astype(np.int64)
    return [
        {
            "id": i,
            "submit_s": int(submit[i]),
            "cpus": int(sizes[i]),
            "limit_min": limit_minutes(runtime[i]),
            "runtime_s": int(runtime[i]),
            "trace_nodes": int(w.requested_nodes[i]),
        }
        for i in range(num_jobs)
    ]


def ls6_rows(
    start: str, count: int, topology: Topology, *, max_nodes: int = 12, compression: float = 300.0
) -> list[dict]:
    """A slice of the bundled LS6 A100 trace (``count`` jobs from ``start``), compressed, sizes
    scaled to ``1..max_nodes`` from the slice's own largest size."""
    from benchmarks.slurm_fidelity import trace_slice
    from tjap.placement.batch.traces import bundled_trace

    rows = trace_slice(str(bundled_trace("ls6-a100")), start, count, compression)
    top = max(r["cpus"] for r in rows)
    sizes = scale_sizes([r["cpus"] for r in rows], min(max_nodes, topology.num_nodes), top)
    for r, s in zip(rows, sizes):
        r["trace_nodes"], r["cpus"] = r["cpus"], int(s)
        r["runtime_s"] = max(1, int(r["runtime_s"]))
        r["limit_min"] = max(int(r["limit_min"]), limit_minutes(r["runtime_s"]))
    return rows


def parse_blocks(text: str) -> tuple[int, int]:
    """``"16x4"`` -> ``(16, 4)``: base blocks and nodes per base block."""
    parts = str(text).lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise InvalidInputError(
            f"--blocks must be COUNTxSIZE, e.g. 16x4 (16 base blocks of 4 nodes), got {text!r}"
        )
    count, size = int(parts[0]), int(parts[1])
    if count < 2 or count * size > 512:
        raise InvalidInputError(
            f"--blocks {text}: give 2 or more base blocks and at most 512 "
            f"nodes in all, e.g. 16x4 or 8x8"
        )
    return count, size


def block_topology(count: int, size: int) -> Topology:
    """A ``topology/block`` cluster of ``count`` base blocks of ``size`` nodes (``b1`` ... over
    ``n1`` ...), ``BlockSizes`` the base size times 1, 2, 4 ... up to the whole cluster, read as
    Slurm reads it (:meth:`Topology.from_slurm`: aggregated blocks as tree levels)."""
    levels = max(1, (int(count) - 1).bit_length())
    text = "".join(
        f"BlockName=b{b + 1} Nodes=n[{b * size + 1}-{(b + 1) * size}]\n" for b in range(int(count))
    )
    text += "BlockSizes=" + ",".join(str(size << k) for k in range(levels + 1)) + "\n"
    return Topology.from_slurm(text)


def segment_sizes(size: int, base: int) -> list[int]:
    """The ``--segment`` values a job of ``size`` nodes may ask for on base blocks of ``base``
    nodes: the divisors of ``size`` from 2 to ``base``, the whole job left out."""
    return [s for s in range(2, min(int(base), int(size) - 1) + 1) if size % s == 0]


def add_segments(rows: list[dict], base: int, share: float = 1 / 3, seed: int = 0) -> list[dict]:
    """``rows`` with a ``segment`` each (None: unsegmented): ``round(share *`` multi-node jobs``)``
    of the jobs that may ask for one (:func:`segment_sizes`), drawn with ``seed``, each a size
    drawn from its admissible ones."""
    if not 0 <= share <= 1:
        raise InvalidInputError(f"the segmented share must lie in [0, 1], got {share!r}")
    rng = np.random.default_rng([int(seed), 0x5E6])
    multi = sum(r["cpus"] > 1 for r in rows)
    able = [i for i, r in enumerate(rows) if segment_sizes(r["cpus"], base)]
    want = int(round(share * multi))
    if want > len(able):
        raise InvalidInputError(
            f"only {len(able)} of the {multi} multi-node jobs can ask for a "
            f"segment of 2..{base} nodes dividing their size; lower "
            f"--segmented to {len(able) / max(multi, 1):.2f} or less"
        )
    chosen = set(rng.choice(able, size=want, replace=False).tolist()) if want else set()
    return [
        {**r, "segment": int(rng.choice(segment_sizes(r["cpus"], base))) if i in chosen else None}
        for i, r in enumerate(rows)
    ]


def segment_script(command: str, segment: int) -> str:
    """The batch script of a job of ``--segment=segment`` running ``command``: the segment is an
    ``#SBATCH`` directive, where Slurm and the placement service both read it."""
    return f"#!/bin/sh\n#SBATCH --segment={int(segment)}\n{command}\n"


# -- Slurm's records to figures (pure) ----------------------------------------------------------
def job_rows(rows: list[dict], records, topology: Topology, t0: float) -> list[dict]:
    """One row per replayed job from Slurm's records: input fields, ``slurm_job_id``,
    ``submit``/``start``/``end`` (wall seconds from ``t0``), ``wait``, ``nodes`` (names),
    ``cost`` (the paper's Eq. (1) on them) and ``leaves`` (leaf switches used)."""
    by_id = {r.job_id: r for r in records}
    out = []
    for row in rows:
        rec = by_id.get(row.get("slurm_job_id"))
        if rec is None:
            raise InvalidInputError(
                f"job {row.get('id')} (Slurm job "
                f"{row.get('slurm_job_id')}) has no completion record"
            )
        names = expand_hostlist(rec.node_list) if rec.node_list else []
        if len(names) != row["cpus"]:
            raise InvalidInputError(
                f"job {row['id']} ran on {len(names)} nodes "
                f"({rec.node_list!r}), asked for {row['cpus']}"
            )
        ids = topology.node_indices(names)
        out.append(
            {
                **{
                    k: row[k]
                    for k in ("id", "cpus", "runtime_s", "limit_min", "segment")
                    if k in row
                },
                "slurm_job_id": rec.job_id,
                "state": rec.state,
                "submit": float(rec.submit_time - t0),
                "start": float(rec.start_time - t0),
                "end": float(rec.end_time - t0),
                "wait": float(rec.start_time - rec.submit_time),
                "nodes": list(names),
                "cost": job_cost(topology, ids, "paper"),
                "leaves": int(np.unique(np.asarray(topology.node_leaf)[ids]).size),
            }
        )
    return out


def cost_floor(topology: Topology, size: int) -> float:
    """The least CH cost of a job of ``size`` nodes on the empty cluster (no placement can do
    better)."""
    from tjap.placement.tree.freeform import best_single_job_nodes

    nodes = best_single_job_nodes(topology, np.arange(topology.num_nodes), int(size))
    return job_cost(topology, nodes, "paper")


def summarize(per_job: list[dict], topology: Topology, compression: float = 1.0) -> dict:
    """Mean CH cost per job, its floor (every job at :func:`cost_floor`) and the excess over it,
    mean / p95 wait and makespan (wall s, and trace s = wall times ``compression``), the share
    of multi-node jobs on the fewest leaves their size allows, and cost and wait by job size."""
    if not per_job:
        raise InvalidInputError("no jobs to summarize")
    cost = np.array([r["cost"] for r in per_job], float)
    wait = np.array([r["wait"] for r in per_job], float)
    size = np.array([r["cpus"] for r in per_job])
    makespan = max(r["end"] for r in per_job) - min(r["submit"] for r in per_job)
    multi = [r for r in per_job if r["cpus"] > 1]
    packed = [r["leaves"] == leaves_needed(topology, r["cpus"]) for r in multi]
    floors = {int(s): cost_floor(topology, int(s)) for s in np.unique(size)}
    floor = np.array([floors[int(s)] for s in size])
    by_size = {}
    for s in np.unique(size):
        pick = size == s
        by_size[int(s)] = {
            "jobs": int(pick.sum()),
            "mean_cost": float(cost[pick].mean()),
            "mean_wait_s": float(wait[pick].mean()),
        }
    return {
        "jobs": len(per_job),
        "mean_cost": float(cost.mean()),
        "mean_cost_floor": float(floor.mean()),
        "mean_excess": float((cost - floor).mean()),
        "at_floor_pct": 100 * float(np.mean(cost <= floor + 1e-6)),
        "mean_cost_multi": float(cost[size > 1].mean()) if (size > 1).any() else 0.0,
        "mean_wait_s": float(wait.mean()),
        "p95_wait_s": float(np.percentile(wait, 95)),
        "max_wait_s": float(wait.max()),
        "makespan_s": float(makespan),
        "mean_wait_trace_s": float(wait.mean() * compression),
        "p95_wait_trace_s": float(np.percentile(wait, 95) * compression),
        "makespan_trace_s": float(makespan * compression),
        "fewest_leaves_pct": 100 * float(np.mean(packed)) if packed else 100.0,
        "by_size": by_size,
    }


def block_floor(topology: Topology, size: int, segment: int | None = None) -> float:
    """The least CH cost of a job of ``size`` nodes (and ``segment``) on the empty block cluster
    under Slurm's block rule (:class:`~tjap.placement.tree.jobs.Job` with ``slurm_rule``)."""
    job = Job(int(size), segment=segment, slurm_rule=True)
    result = solve(Window(topology, np.arange(topology.num_nodes), [job]), "dp")
    if not result.has_solution:
        raise InvalidInputError(
            f"no block of this cluster holds a job of {size} nodes"
            + (f" in segments of {segment}" if segment else "")
        )
    return job_cost(topology, result.assignment[0], "paper")


def segments_kept(topology: Topology, node_ids, segment: int) -> bool:
    """Whether a node set keeps ``--segment=segment``: it splits into segments each inside one
    base block (its node count in every base block a multiple of ``segment``)."""
    counts = np.unique(
        np.asarray(topology.node_leaf)[np.asarray(node_ids, np.int64)], return_counts=True
    )[1]
    return bool(np.all(counts % int(segment) == 0))


def block_summary(per_job: list[dict], topology: Topology) -> dict:
    """The block cluster's measures of per-job rows (``cpus``, ``segment``, ``nodes``, ``cost``,
    ``leaves``, ``wait``): mean CH cost and wait of the segmented jobs and of the unsegmented
    multi-node jobs apart, the share of multi-node jobs inside one base block, the segmented
    jobs that kept their segments (:func:`segments_kept`), and the floors of both kinds: each
    job's cheapest nodes on the empty cluster under Slurm's block rule (:func:`block_floor`)
    and without it (:func:`cost_floor`)."""
    rule, free = {}, {}
    out: dict = {}
    for kind, pick in (
        ("segmented", lambda r: r.get("segment") is not None),
        ("unsegmented", lambda r: r.get("segment") is None and r["cpus"] > 1),
    ):
        jobs = [r for r in per_job if pick(r)]
        for r in jobs:
            key = (int(r["cpus"]), r.get("segment"))
            if key not in rule:
                rule[key] = block_floor(topology, *key)
            if key[0] not in free:
                free[key[0]] = cost_floor(topology, key[0])

        def mean(values):
            return float(np.mean(values)) if jobs else None

        out |= {
            f"{kind}_jobs": len(jobs),
            f"mean_cost_{kind}": mean([r["cost"] for r in jobs]),
            f"mean_wait_{kind}_s": mean([r["wait"] for r in jobs]),
            f"floor_rule_{kind}": mean([rule[(int(r["cpus"]), r.get("segment"))] for r in jobs]),
            f"floor_free_{kind}": mean([free[int(r["cpus"])] for r in jobs]),
        }
    multi = [r for r in per_job if r["cpus"] > 1]
    out["one_block_pct"] = (
        100 * float(np.mean([r["leaves"] == 1 for r in multi])) if multi else 100.0
    )
    out["segments_kept"] = sum(
        segments_kept(topology, topology.node_indices(r["nodes"]), r["segment"])
        for r in per_job
        if r.get("segment") is not None
    )
    return out


def simulate_starts(per_job: list[dict], num_nodes: int) -> tuple:
    """The batch simulator's schedule on ``num_nodes`` nodes for jobs with ``submit`` (s),
    ``cpus``, ``limit_min`` and ``runtime_s``: ``sched/backfill`` on node counts (Slurm's
    will-run batches, 1 s passes, 1 s release delay). Per job: start and end (s, in the submits'
    frame) and the rank of its start among the pass's starts."""
    n = len(per_job)
    origin = 10**9  # will-run batches are aligned on Unix time: any whole second
    jobs = Jobs.build(
        submit_s=[int(r["submit"]) + origin for r in per_job],
        nodes=[r["cpus"] for r in per_job],
        limit_s=[60 * r["limit_min"] for r in per_job],
        runtime_s=[r["runtime_s"] for r in per_job],
        job_id=list(range(n)),
    )
    config = SchedulerConfig(
        backfill="slurm",
        bf_interval_s=1,
        bf_resolution_s=1,
        bf_max_job_test=1000,
        release_delay_s=1,
        bf_will_run_window_s=WILL_RUN_WINDOW_S,
    )
    res = Simulator(jobs, num_nodes, config).run()
    start = np.empty(n, np.int64)
    end = np.empty(n, np.int64)
    seq = np.empty(n, np.int64)
    start[jobs.job_id], end[jobs.job_id] = res.start_s - origin, res.end_s - origin
    seq[jobs.job_id] = res.start_seq
    if (start < -origin // 2).any():
        raise InvalidInputError("the simulator left jobs unstarted")
    return start, end, seq


def place_in_order(topology: Topology, sizes, start, end, seq, place) -> list:
    """Node ids per job: the starts taken in order (ends, plus the 1 s release delay, first),
    each job given ``place(topology, free_mask, size)`` of the nodes free then."""
    free = np.ones(topology.num_nodes, bool)
    running: list = []
    nodes: list = [None] * len(sizes)
    for j in np.lexsort((seq, start)):
        for k in [k for k in running if end[k] + 1 <= start[j]]:
            free[nodes[k]] = True
            running.remove(k)
        nodes[j] = np.asarray(place(topology, free, int(sizes[j])))
        free[nodes[j]] = False
        running.append(int(j))
    return nodes


def predict_slurm(per_job: list[dict], topology: Topology, compression: float = 1.0) -> dict:
    """The batch simulator's prediction for ``slurm`` from the submit times Slurm recorded
    (:func:`simulate_starts`), its starts placed in its order by ``slurm-tree`` on the nodes free
    then (:func:`place_in_order`); summarized like :func:`summarize`."""
    start, end, seq = simulate_starts(per_job, topology.num_nodes)
    sizes = [int(r["cpus"]) for r in per_job]
    nodes = place_in_order(topology, sizes, start, end, seq, slurm_tree_nodes)
    leaf = np.asarray(topology.node_leaf)
    sim = [
        {
            "cpus": per_job[j]["cpus"],
            "submit": float(per_job[j]["submit"]),
            "start": float(start[j]),
            "end": float(end[j]),
            "wait": float(start[j] - per_job[j]["submit"]),
            "cost": job_cost(topology, nodes[j], "paper"),
            "leaves": int(np.unique(leaf[nodes[j]]).size),
        }
        for j in range(len(per_job))
    ]
    return summarize(sim, topology, compression)


def service_breakdown(log_path: Path, per_job: list[dict], t0: float) -> dict:
    """From the service's JSON lines: windows, placements per winner, the service's cost beside
    Slurm's would-be cost (``slurm-tree``; on a block cluster ``slurm-block``) on the same
    windows, and how long jobs stayed held (submit to the window that placed them) versus
    released to start; on a block cluster also the jobs steered with ``ExcNodeList`` and the
    steers Slurm refused (undone by the service). Why jobs waited: ``held_in_window`` counts
    the window entries that stayed held, by reason (numbers as ``N``), ``left_out_of_windows``
    the held jobs left out of a window (its prefix and backfill did not take them)."""
    windows = [json.loads(line) for line in Path(log_path).read_text().splitlines() if line.strip()]
    windows = [w for w in windows if w.get("event") == "window"]
    placed_at: dict[int, float] = {}
    winners: dict[str, int] = {}
    ours = theirs = 0.0
    compared = 0
    backfilled = 0
    held_for_locality: set = set()
    steered = unsteered = waiting = 0
    reasons: dict[str, int] = {}
    for w in windows:
        waiting += len(w.get("waiting", []))
        for e in w["jobs"]:
            if e["outcome"] == "held":
                why = re.sub(r"\d+", "N", str(e.get("reason")))
                reasons[why] = reasons.get(why, 0) + 1
        held_for_locality.update(int(h["job_id"]) for h in w.get("held_for_locality", []))
        done = [e for e in w["jobs"] if e["outcome"] == "placed"]
        backfilled += sum(int(e["job_id"]) in set(w.get("backfilled", [])) for e in done)
        for e in done:
            placed_at[int(e["job_id"])] = float(w["time"]) - t0
        steered += sum(e.get("mechanism") == "excnodelist" for e in done)
        unsteered += sum(e["outcome"] == "unsteered" for e in w["jobs"]) + len(
            w.get("unsteered", [])
        )
        if done:
            winners[str(w.get("winner"))] = winners.get(str(w.get("winner")), 0) + 1
        slurms = w.get("slurm_block_cost" if w.get("topology") == "block" else "slurm_tree_cost")
        if w.get("cost") is not None and slurms is not None and len(done) == len(w["jobs"]):
            ours += float(w["cost"])
            theirs += float(slurms)
            compared += 1
    held = [
        placed_at[r["slurm_job_id"]] - r["submit"]
        for r in per_job
        if r["slurm_job_id"] in placed_at
    ]
    to_start = [
        r["start"] - placed_at[r["slurm_job_id"]] for r in per_job if r["slurm_job_id"] in placed_at
    ]
    return {
        "windows": len(windows),
        "windows_placing": sum(any(e["outcome"] == "placed" for e in w["jobs"]) for w in windows),
        "winners": winners,
        "windows_compared": compared,
        "jobs_placed": len(placed_at),
        "jobs_backfilled": backfilled,
        "jobs_held_for_locality": len(held_for_locality),
        "jobs_steered_excnodelist": steered,
        "steers_undone": unsteered,
        "held_in_window": reasons,
        "left_out_of_windows": waiting,
        "mean_solve_s": float(
            np.mean([w["solve_s"] for w in windows if w.get("solve_s")] or [0.0])
        ),
        "window_cost_sum": ours,
        "window_slurm_tree_cost_sum": theirs,
        "window_cost_ratio": ours / theirs if theirs else None,
        "mean_held_s": float(np.mean(held)) if held else None,
        "mean_placed_to_start_s": float(np.mean(to_start)) if to_start else None,
    }


# -- running the ways (live Slurm) --------------------------------------------------------------
class _WayClient(SlurmClient):
    """Submits every job on whole nodes (``-N n --exclusive``) plus the way's options; a job
    named in :attr:`segments` is submitted as a batch script whose ``#SBATCH --segment=S``
    asks for its segment (:func:`segment_script`, written into its working directory)."""

    extra = staticmethod(lambda n: [])
    #: job name -> its ``--segment``
    segments: dict = {}

    def submit(self, *, nodes_or_tasks: int, extra_args=(), **options) -> int:
        n = int(nodes_or_tasks)
        args = ["-N", str(n), "--exclusive", *self.extra(n), *extra_args]
        segment = self.segments.get(options.get("name"))
        if segment is None:
            return super().submit(nodes_or_tasks=n, extra_args=args, **options)
        folder = Path(options.get("chdir") or ".")
        script = folder / f"{options['name']}.sh"
        script.write_text(segment_script(options["command"], segment))
        argv = [
            "sbatch",
            "--parsable",
            "-n",
            str(n),
            "-t",
            str(int(options["time_limit_min"])),
            "-J",
            options["name"],
            "-o",
            options.get("output") or "/dev/null",
            "--chdir",
            str(folder),
            *args,
            str(script),
        ]
        out = self.run(argv).stdout.strip().splitlines()
        if not out or not out[-1].split(";")[0].isdigit():
            raise SlurmError(f"sbatch printed no job id for {options['name']}: {out!r}")
        return int(out[-1].split(";")[0])


class _WaySlurm(LocalSlurm):
    """A multi-node :class:`LocalSlurm` whose :meth:`client` submits the way's jobs."""

    extra = staticmethod(lambda n: [])
    segments: dict = {}

    def client(self, timeout_s: float = 30) -> SlurmClient:
        c = _WayClient(self.env, timeout_s=timeout_s)
        c.extra, c.segments = self.extra, self.segments
        return c


def slurm_config(
    topology: Topology, slurm: str = "system", blocks: bool = False
) -> LocalSlurmConfig:
    """The local cluster of every way: ``topology`` with ``topology/tree`` (``blocks``:
    ``topology/block``, :meth:`LocalSlurmConfig.for_blocks`), run by the Slurm ``slurm`` names,
    ``sched/backfill`` (bf_interval = bf_resolution = sched_interval = 1 s, Slurm's default
    reservation depth)."""
    make = LocalSlurmConfig.for_blocks if blocks else LocalSlurmConfig.for_topology
    return make(
        topology,
        slurm=slurm,
        scheduler="backfill",
        cpus=topology.num_nodes,
        cpus_per_node=1,
        bf_interval_s=1,
        bf_resolution_s=1,
        sched_interval_s=1,
    )


def run_way(
    way: str,
    rows: list[dict],
    topology: Topology,
    *,
    interval_s: float = 1.0,
    switch_wait_s: int = 10,
    time_limit_s: float | None = 0.3,
    compression: float = 1.0,
    keep: bool = False,
    locality_slack: float = 0.5,
    locality_wait_s: float = 12.0,
    slurm: str = "system",
    blocks: bool = False,
) -> dict:
    """Replay ``rows`` on a fresh local Slurm (``slurm``: which one) the ``way`` given; the
    summary, per-job rows and (``tjap``) the service's breakdown. With ``blocks`` the cluster
    is ``topology/block``, rows with a ``segment`` ask for it in their batch scripts, and the
    summary has :func:`block_summary`'s measures."""
    from benchmarks.slurm_replay import replay_on_slurm

    if way not in WAYS + EXTRA_WAYS:
        raise InvalidInputError(f"way must be one of {', '.join(WAYS + EXTRA_WAYS)}, got {way!r}")
    if blocks and way == "switches":
        raise InvalidInputError(
            "way switches (--switches hints) is for topology/tree; on a "
            "block cluster choose among slurm, " + ", ".join(SERVICE_WAYS)
        )
    slurm = _WaySlurm(slurm_config(topology, slurm, blocks))
    slurm.segments = {
        f"replay-{r['id']}": int(r["segment"]) for r in rows if r.get("segment") is not None
    }
    slurm.keep_workdir = keep
    if way in ("tjap", "tjap-prefix", "tjap-local"):
        slurm.extra = staticmethod(lambda n: ["--hold"])
    elif way == "tjap-multi":
        slurm.extra = staticmethod(lambda n: ["--hold"] if n > 1 else [])
    elif way == "switches":
        slurm.extra = staticmethod(lambda n: [switches_option(topology, n, switch_wait_s)])
    service = thread = None
    started = time.time()
    with slurm:
        log = slurm.workdir / "tjap-service.jsonl"
        if way in SERVICE_WAYS:
            config = ServiceConfig(
                interval_s=interval_s,
                time_limit_s=time_limit_s,
                retries=None,
                backfill=SERVICE_WAYS[way],
                locality_slack=locality_slack if way == "tjap-local" else None,
                locality_wait_s=locality_wait_s,
            )
            service = PlacementService(
                config, client=SlurmClient(slurm.env), log_path=log, report=lambda msg: None
            )
            thread = threading.Thread(target=service.run, daemon=True)
            thread.start()
        try:
            done = replay_on_slurm([dict(r) for r in rows], slurm)
        finally:
            if service is not None:
                service.stop()
                thread.join(timeout=60)
        records = slurm.completed()
        t0 = _replay_origin(done, records)
        per_job = job_rows(done, records, topology, t0)
        label = WAY_LABELS[way]
        out = {
            "way": way,
            "label": label.replace("topology/tree", "topology/block") if blocks else label,
            **summarize(per_job, topology, compression),
            **(block_summary(per_job, topology) if blocks else {}),
            "wall_s": time.time() - started,
        }
        if service is not None:
            out["service"] = service_breakdown(log, per_job, t0)
    out["per_job"] = per_job
    return out


def _replay_origin(done: list[dict], records) -> float:
    """The replay's ``t0`` (Unix s): Slurm's absolute submit minus the replay's relative one."""
    by_id = {r.job_id: r for r in records}
    for row in done:
        rec = by_id.get(row.get("slurm_job_id"))
        if rec is not None and rec.submit_time is not None and row.get("slurm_submit") is not None:
            return float(rec.submit_time - row["slurm_submit"])
    raise InvalidInputError("no replayed job has a completion record")


def benchmark(
    rows: list[dict], topology: Topology, *, ways=WAYS, parallel: bool = True, **options
) -> dict:
    """Every way's run (side by side with ``parallel``), the simulator's prediction for
    ``slurm`` (not on a block cluster) and the ratios of the other ways to ``slurm`` (on a
    block cluster also of the segmented and unsegmented jobs' mean costs)."""
    results: dict[str, dict] = {}
    errors: list[BaseException] = []

    def work(way):
        try:
            results[way] = run_way(way, rows, topology, **options)
        except BaseException as exc:  # re-raised below, in the caller's thread
            errors.append(exc)

    if parallel:
        threads = [threading.Thread(target=work, args=(w,)) for w in ways]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for w in ways:
            work(w)
    if errors:
        raise errors[0]
    out = {"ways": [results[w] for w in ways]}
    if "slurm" in results:
        base = results["slurm"]
        if not options.get("blocks"):
            out["simulator"] = predict_slurm(
                base["per_job"], topology, options.get("compression", 1.0)
            )
        out["ratios"] = {
            w: {
                "cost": _ratio(results[w]["mean_cost"], base["mean_cost"]),
                "cost_multi": _ratio(results[w]["mean_cost_multi"], base["mean_cost_multi"]),
                "excess": _ratio(results[w]["mean_excess"], base["mean_excess"]),
                "mean_wait": _ratio(results[w]["mean_wait_s"], base["mean_wait_s"]),
                "p95_wait": _ratio(results[w]["p95_wait_s"], base["p95_wait_s"]),
                "makespan": _ratio(results[w]["makespan_s"], base["makespan_s"]),
                **(
                    {
                        k: _ratio(results[w][f"mean_cost_{k}"], base[f"mean_cost_{k}"])
                        for k in ("segmented", "unsegmented")
                    }
                    if options.get("blocks")
                    else {}
                ),
            }
            for w in ways
            if w != "slurm"
        }
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return float(a / b) if a is not None and b else None


def table(result: dict) -> str:
    """The result as a text table (wall seconds; trace seconds in brackets)."""
    head = (
        f"{'way':46s} {'jobs':>5s} {'CH cost':>9s} {'excess':>7s} {'fewest':>7s} "
        f"{'mean wait':>16s} {'p95 wait':>16s} {'makespan':>17s}"
    )
    lines = [head, "-" * len(head)]

    def line(label, s):
        return (
            f"{label:46s} {s['jobs']:5d} {s['mean_cost']:9.0f} {s['mean_excess']:7.0f} "
            f"{s['fewest_leaves_pct']:6.0f}% "
            f"{s['mean_wait_s']:6.1f} ({s['mean_wait_trace_s']:6.0f})  "
            f"{s['p95_wait_s']:6.1f} ({s['p95_wait_trace_s']:6.0f})  "
            f"{s['makespan_s']:6.0f} ({s['makespan_trace_s']:7.0f})"
        )

    for r in result["ways"]:
        lines.append(line(r["label"], r))
    if "simulator" in result:
        lines.append(line("simulator's prediction for (a)", result["simulator"]))
    for way, q in result.get("ratios", {}).items():
        lines.append(
            f"{way}/slurm: CH cost {q['cost']:.3f} (excess over the floor "
            f"{q['excess']:.3f}), "
            f"mean wait {q['mean_wait']:.3f}, p95 wait {q['p95_wait']:.3f}, "
            f"makespan {q['makespan']:.3f}"
        )
    if result["ways"]:
        lines.append(
            f"floor (every job on its cheapest nodes of the empty cluster): mean CH "
            f"cost {result['ways'][0]['mean_cost_floor']:.0f}"
        )
    for r in result["ways"]:
        if "service" in r:
            s = r["service"]
            theirs = "slurm-block" if "segmented_jobs" in r else "slurm-tree"
            lines.append(
                f"service ({r['way']}): {s['windows']} windows "
                f"({s['windows_placing']} placing, {s.get('jobs_backfilled', 0)} of "
                f"{s.get('jobs_placed', 0)} jobs backfilled, "
                f"{s.get('jobs_held_for_locality', 0)} held for locality), "
                f"winners {s['winners']}, window cost / {theirs}'s on the same "
                f"windows {s['window_cost_ratio']}, mean held {s['mean_held_s']} s, "
                f"placed to start {s['mean_placed_to_start_s']} s"
            )
    if "segmented_jobs" in result["ways"][0]:
        lines += ["", block_table(result)]
    return "\n".join(lines)


def block_table(result: dict) -> str:
    """The block cluster's measures (:func:`block_summary`) of every way, the floors and the
    ratios to Slurm alone."""
    first = result["ways"][0]
    seg, multi = first["segmented_jobs"], first["unsegmented_jobs"]
    head = (
        f"{'way':46s} {'seg. cost':>9s} {'unseg. cost':>11s} {'one block':>9s} "
        f"{'segs kept':>9s} {'wait seg.':>9s} {'wait unseg.':>11s} {'mean wait':>9s} "
        f"{'p95 wait':>8s}"
    )
    lines = [
        f"block cluster: {seg} segmented jobs, {multi} unsegmented multi-node jobs "
        f"(CH cost, paper convention, aggregated blocks as levels; wait in wall s)",
        head,
        "-" * len(head),
    ]

    def num(x, width, digits=0):
        return f"{x:{width}.{digits}f}" if x is not None else f"{'-':>{width}s}"

    for r in result["ways"]:
        lines.append(
            f"{r['label']:46s} {num(r['mean_cost_segmented'], 9)} "
            f"{num(r['mean_cost_unsegmented'], 11)} {r['one_block_pct']:8.0f}% "
            f"{r['segments_kept']:4d}/{seg:<4d} "
            f"{num(r['mean_wait_segmented_s'], 9, 1)} "
            f"{num(r['mean_wait_unsegmented_s'], 11, 1)} {r['mean_wait_s']:9.1f} "
            f"{r['p95_wait_s']:8.1f}"
        )
    lines.append(
        f"{'floor under Slurm' + chr(39) + 's block rule':46s} "
        f"{num(first['floor_rule_segmented'], 9)} "
        f"{num(first['floor_rule_unsegmented'], 11)}"
    )
    lines.append(
        f"{'floor without it':46s} {num(first['floor_free_segmented'], 9)} "
        f"{num(first['floor_free_unsegmented'], 11)}"
    )
    for way, q in result.get("ratios", {}).items():
        lines.append(
            f"{way}/slurm: segmented cost {num(q.get('segmented'), 5, 3)}, "
            f"unsegmented multi-node cost {num(q.get('unsegmented'), 5, 3)}, "
            f"mean wait {num(q['mean_wait'], 5, 3)}, p95 wait {num(q['p95_wait'], 5, 3)}"
        )
    for r in result["ways"]:
        if "service" in r:
            s = r["service"]
            lines.append(
                f"service ({r['way']}): {s.get('jobs_steered_excnodelist', 0)} jobs "
                f"steered with ExcNodeList, {s.get('steers_undone', 0)} steers refused "
                f"by Slurm and undone; mean solve {s.get('mean_solve_s', 0):.3f} s; "
                f"{s.get('left_out_of_windows', 0)} times a held job was left out of "
                f"a window; held in a window: {s.get('held_in_window', {})}"
            )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = parser("slurm_topology", __doc__)
    p.add_argument("--workload", choices=("paper", "ls6"), default="paper")
    p.add_argument("--jobs", type=int, default=150)
    p.add_argument("--seed", type=int, default=2, help="the paper workload's seed")
    p.add_argument("--start", default="2023-02-10", help="LS6 slice start (--workload ls6)")
    p.add_argument(
        "--nodes",
        type=int,
        default=None,
        help="nodes of the emulated cluster (default 40; with --blocks, theirs)",
    )
    p.add_argument(
        "--slurm",
        default=None,
        help="which Slurm: system (default) or 24.11 (the default with --blocks; "
        "built by .ci/build-slurm-newer)",
    )
    p.add_argument(
        "--blocks",
        default=None,
        metavar="COUNTxSIZE",
        help="a topology/block cluster of COUNT base blocks of SIZE nodes, e.g. "
        "16x4 or 8x8 (Slurm 24.11)",
    )
    p.add_argument(
        "--segmented",
        type=float,
        default=1 / 3,
        help="with --blocks: share of the multi-node jobs asking for --segment (default 1/3)",
    )
    p.add_argument("--tree-seed", type=int, default=1)
    p.add_argument("--max-nodes", type=int, default=12, help="largest job after scaling")
    p.add_argument("--load", type=float, default=0.85, help="offered load (paper workload)")
    p.add_argument(
        "--compression",
        type=float,
        default=None,
        help="trace seconds per wall second (default 60 paper, 300 ls6)",
    )
    p.add_argument("--interval", type=float, default=1.0, help="service interval (wall s)")
    p.add_argument(
        "--time-limit", type=float, default=0.3, help="the service's time limit per window (s)"
    )
    p.add_argument("--switch-wait", type=int, default=10, help="--switches wait (wall s)")
    p.add_argument(
        "--locality-slack",
        type=float,
        default=0.5,
        help="tjap-local: hold jobs whose nodes cost over 1+F times their best",
    )
    p.add_argument(
        "--locality-wait",
        type=float,
        default=12.0,
        help="tjap-local: most wall seconds a job is held for locality",
    )
    p.add_argument(
        "--ways",
        default=None,
        help=f"comma-separated, of {', '.join(WAYS + EXTRA_WAYS)} (default "
        f"{','.join(WAYS)}; with --blocks {','.join(BLOCK_WAYS)})",
    )
    p.add_argument("--sequential", action="store_true", help="one Slurm after another")
    add_out(p, "the results (NAME.json)")
    p.add_argument(
        "--name",
        default="slurm_topology",
        help="file name of the results in --out, without .json (default slurm_topology)",
    )
    return p


def cluster_choice(
    slurm: str | None, blocks: str | None, nodes: int | None, ways=WAYS
) -> tuple[str, tuple[int, int] | None]:
    """``(slurm, (count, size) or None)`` from ``--slurm``, ``--blocks``, ``--nodes`` and the
    ways, checked: a block cluster runs on Slurm 24.11 (or another install, never the system's
    22.05), has the nodes it is made of and no ``switches`` way."""
    if slurm is not None:
        slurm_prefix(slurm)  # one line naming the choices
    if blocks is None:
        return slurm or "system", None
    count, size = parse_blocks(blocks)
    slurm = slurm or NEWER_SLURM
    if slurm == "system":
        raise InvalidInputError(
            "--blocks needs topology/block, which the system's Slurm (22.05) "
            f"lacks: use --slurm {NEWER_SLURM}"
        )
    if nodes is not None and nodes != count * size:
        raise InvalidInputError(
            f"--nodes {nodes} disagrees with --blocks {blocks} "
            f"({count * size} nodes): leave --nodes out"
        )
    if "switches" in ways:
        raise InvalidInputError(
            "way switches (--switches hints) is for topology/tree; with "
            "--blocks choose --ways among slurm, " + ", ".join(SERVICE_WAYS)
        )
    if slurm == NEWER_SLURM:
        reason = newer_slurm_available()
        if reason:
            raise SlurmError(reason)
    return slurm, (count, size)


@one_line_errors
def main(argv=None) -> int:
    """Replay the stream every way on a real Slurm; print the table, write the results."""
    args = build_parser().parse_args(argv)
    ways = (
        tuple(w for w in args.ways.split(",") if w)
        if args.ways is not None
        else BLOCK_WAYS
        if args.blocks is not None
        else WAYS
    )
    slurm, blocks = cluster_choice(args.slurm, args.blocks, args.nodes, ways)
    if blocks is None:
        topology = cluster_topology(40 if args.nodes is None else args.nodes, args.tree_seed)
    else:
        topology = block_topology(*blocks)
    if args.workload == "paper":
        compression = args.compression or 60.0
        rows = paper_rows(
            args.jobs,
            args.seed,
            topology,
            max_nodes=args.max_nodes,
            load=args.load,
            compression=compression,
        )
    else:
        compression = args.compression or 300.0
        rows = ls6_rows(
            args.start, args.jobs, topology, max_nodes=args.max_nodes, compression=compression
        )
    if blocks is not None:
        rows = add_segments(rows, blocks[1], args.segmented, args.seed)
    res = benchmark(
        rows,
        topology,
        ways=ways,
        parallel=not args.sequential,
        interval_s=args.interval,
        switch_wait_s=args.switch_wait,
        time_limit_s=args.time_limit,
        compression=compression,
        locality_slack=args.locality_slack,
        locality_wait_s=args.locality_wait,
        slurm=slurm,
        blocks=blocks is not None,
    )
    res["setup"] = {
        "workload": args.workload,
        "jobs": args.jobs,
        "seed": args.seed,
        "start": args.start if args.workload == "ls6" else None,
        "nodes": topology.num_nodes,
        "topology": block_conf(topology) if blocks else topology.to_slurm(),
        "max_nodes": args.max_nodes,
        "load": args.load,
        "compression": compression,
        "interval_s": args.interval,
        "time_limit_s": args.time_limit,
        "switch_wait_s": args.switch_wait,
        "locality_slack": args.locality_slack,
        "locality_wait_s": args.locality_wait,
        "slurm": slurm,
        "blocks": args.blocks if blocks is not None else None,
        "segmented": args.segmented if blocks is not None else None,
        "segments": (
            {r["id"]: r["segment"] for r in rows if r["segment"]} if blocks is not None else None
        ),
        "parallel": not args.sequential,
        "argv": sys.argv[1:] if argv is None else list(argv),
    }
    out = Path(args.out) / f"{args.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
