"""Fidelity of the batch simulator against a real Slurm.

A slice of consecutive jobs of a real trace is compressed in time (``compression`` trace seconds
per real second: submit times and runtimes divided, limits rounded up to whole minutes as sbatch
needs), replayed on a throw-away local Slurm (one node whose CPUs stand for the trace's nodes:
``sbatch -n <nodes> -t <limit> --wrap "sleep <runtime>"``), and simulated with the same
configuration from the submit times Slurm recorded:

- ``fcfs``: Slurm ``sched/builtin``; simulator ``backfill="none"``.
- ``easy``: Slurm ``sched/backfill`` with ``bf_job_part_count_reserve=1``; simulator ``"easy"``.
- ``slurm``: Slurm ``sched/backfill`` with its default (reserve for every job); simulator ``"slurm"``.

Both use bf_interval = bf_resolution = 1 s and equal (zero) priority weights. The replayed CPUs
are one Slurm node, and Slurm's backfill reserves whole nodes, so the simulator runs with
``reserve_whole_node=True``: a reservation keeps every CPU from its start to its end. The simulator's
``release_delay_s`` (default 1 here) models the second a local Slurm takes to release a finished
job's CPUs (its COMPLETING state, measured: under FCFS every next job starts 1 s after its
predecessor ends); the result also gives the figures without it.

Two ways to stand for the trace's nodes (``--nodes-as``):

- ``cpus`` (default): one Slurm node whose ``nodes`` CPUs are the trace's nodes, each job
  ``sbatch -n <nodes>``. Slurm's backfill reserves whole nodes, so the simulator runs with
  ``reserve_whole_node=True`` (see below).
- ``slurm-nodes``: a multi-node Slurm with one ``slurmd`` per trace node (1 CPU each,
  no topology plugin: Slurm's node order is the simulator's first fit), each job
  ``sbatch -N <nodes> -n <nodes> --exclusive``, all nodes on one switch of ``topology/tree`` so
  that Slurm takes a job's nodes as the first idle ones in node order (the simulator's first fit).
  A backfill reservation then holds the job's own nodes only (``reserve_whole_node=False``), and
  the simulator models two rules read in Slurm 22.05 and seen in its logs: the will-run test
  removes running jobs in batches of ends 30 s wide (aligned on Unix time, so the simulation runs
  on Unix seconds from the replay's ``t0_unix``) and plans the job at the last end of the batch it
  fits after (``bf_will_run_window_s=30``), and the reservation holds named nodes, the lowest free
  then, so a backfilled job that outlasts its start must avoid them even if they are idle now
  (``bf_reserve_nodes=True``, EASY). The result also gives the figures with node counts and the
  earliest start (``node_counts_release_delay_*``).

Order agreement: a pair of jobs is *discordant* when Slurm starts one more than ``tie_s`` seconds
before the other and the simulator starts it strictly later. A job "starts in the same order" when
it is in no discordant pair. That count is harsh on a chain: one job started late makes every job
it passed "out of order". :func:`longest_common_order` gives the second measure, the largest set
of jobs whose order agrees (no discordant pair among them), as ``longest_common_order_pct``.
Wait error: simulated minus Slurm's wait, in real seconds.

``--debug-logs DIR`` keeps each mode's Slurm work directory under ``DIR/<mode>`` with slurmctld
at ``debug2`` and ``DebugFlags=Backfill`` (which pass started each job, every reservation), to
explain the out-of-order jobs one by one; off by default (the logs are large).

    python -m benchmarks.slurm_fidelity --start 2023-02-10 --jobs 200 --compression 300
    python -m benchmarks.slurm_fidelity --nodes-as slurm-nodes --start 2023-02-20 --jobs 200 \
        --compression 600 --nodes 16

:func:`out_of_order` lists the jobs that are not in the same order, each with the jobs it is
discordant with, from a result's ``per_job`` rows.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import networkx as nx
import numpy as np

from benchmarks.common import add_out, one_line_errors, parser
from tjap.core.errors import InvalidInputError
from tjap.placement.batch import Jobs, SchedulerConfig, Simulator, load_trace
from tjap.placement.batch.traces import bundled_trace
from tjap.placement.slurm.client import SlurmClient
from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig

#: Slurm 22.05's will-run batch width (select/cons_tres), used by the node-level replay
WILL_RUN_WINDOW_S = 30

#: how the trace's nodes are stood for in Slurm (see the module docstring)
NODES_AS = ("cpus", "slurm-nodes")

MODES = {
    "fcfs": ({"scheduler": "builtin"}, "none"),
    "easy": ({"scheduler": "backfill", "bf_job_part_count_reserve": 1}, "easy"),
    "slurm": ({"scheduler": "backfill"}, "slurm"),
}


def trace_slice(trace: str, start: str, count: int, compression: float) -> list[dict]:
    """``count`` consecutive jobs from the first submitted at or after ``start``, compressed."""
    jobs, _ = load_trace(trace)
    t0 = int(datetime.fromisoformat(start).replace(tzinfo=timezone.utc).timestamp())
    first = int(np.searchsorted(jobs.to_unix(jobs.submit_s), t0))
    rows = []
    base = int(jobs.submit_s[first])
    for r in range(first, min(first + count, len(jobs))):
        limit_min = max(1, math.ceil(jobs.limit_s[r] / compression / 60))
        runtime = min(max(1, round(jobs.runtime_s[r] / compression)), limit_min * 60 - 2)
        rows.append(
            {
                "id": int(jobs.job_id[r]),
                "submit_s": int((jobs.submit_s[r] - base) // compression),
                "cpus": int(jobs.nodes[r]),
                "limit_min": limit_min,
                "runtime_s": runtime,
            }
        )
    return rows


def node_names(count: int) -> tuple:
    """Names of ``count`` Slurm nodes standing for trace nodes, in the simulator's node order
    (``n001``, ``n002``, ...; zero-padded so that Slurm's order is the same)."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise InvalidInputError(f"the node count must be a positive integer, got {count!r}")
    width = max(3, len(str(int(count))))
    return tuple(f"n{i:0{width}d}" for i in range(1, int(count) + 1))


def check_nodes_as(nodes_as: str) -> str:
    if nodes_as not in NODES_AS:
        raise InvalidInputError(f"nodes_as must be one of {', '.join(NODES_AS)}, got {nodes_as!r}")
    return nodes_as


class _WholeNodeClient(SlurmClient):
    """Submits every job as ``-N n -n n --exclusive``: n whole Slurm nodes."""

    def submit(self, *, nodes_or_tasks: int, extra_args=(), **options) -> int:
        n = str(int(nodes_or_tasks))
        return super().submit(
            nodes_or_tasks=nodes_or_tasks,
            extra_args=["-N", n, "--exclusive", *extra_args],
            **options,
        )


class WholeNodeSlurm(LocalSlurm):
    """A multi-node :class:`LocalSlurm` whose :meth:`client` submits jobs on whole nodes."""

    def client(self, timeout_s: float = 30) -> SlurmClient:
        return _WholeNodeClient(self.env, timeout_s=timeout_s)


#: slurm.conf lines of a replay run with ``debug_dir``: slurmctld's scheduling decisions logged
DEBUG_LOG_SETTINGS = {"SlurmctldDebug": "debug2", "DebugFlags": "Backfill"}


def local_slurm(mode: str, nodes: int, nodes_as: str = "cpus", debug_dir=None) -> LocalSlurm:
    """The (not yet started) local Slurm for ``mode`` with ``nodes`` trace nodes. With
    ``debug_dir``, its work directory is ``debug_dir/<mode>`` and is kept (slurm.conf,
    ``slurmctld.log``, ``jobcomp.txt``), and slurmctld logs at ``debug2`` with the ``Backfill``
    debug flag (every backfill decision, the main scheduler's starts), for reading job by job
    why a job started when it did."""
    slurm_kw, _ = MODES[mode]
    extra = dict(DEBUG_LOG_SETTINGS) if debug_dir is not None else {}
    where = {} if debug_dir is None else {"workdir": Path(debug_dir) / mode, "keep_workdir": True}
    if check_nodes_as(nodes_as) == "cpus":
        return LocalSlurm(LocalSlurmConfig(cpus=nodes, extra=extra, **slurm_kw), **where)
    names = node_names(nodes)
    # one switch over every node: topology/tree then takes a job's nodes as the first idle ones
    # in node order (tjap.heuristics.slurm.tree), the simulator's first fit; without a topology
    # plugin cons_tres picks a best-fitting run of consecutive nodes instead
    return WholeNodeSlurm(
        LocalSlurmConfig(
            cpus=nodes,
            node_names=names,
            cpus_per_node=1,
            topology_conf=single_switch_conf(names),
            extra=extra,
            **slurm_kw,
        ),
        **where,
    )


def single_switch_conf(names) -> str:
    """A ``topology.conf`` with one switch over ``names``."""
    return f"SwitchName=s0 Nodes={','.join(names)}\n"


def simulate_rows(
    rows: list[dict],
    cpus: int,
    backfill: str,
    release_delay_s: int = 0,
    reserve_whole_node: bool = True,
    *,
    origin: int = 0,
    will_run_window_s: int = 0,
    reserve_nodes: bool = False,
    bf_interval_s: int = 1,
) -> np.ndarray:
    """Simulated starts (relative seconds) of the replayed rows, from Slurm's recorded submits;
    ``release_delay_s`` models Slurm's COMPLETING time (nodes return that long after a job ends).
    ``reserve_whole_node``: True when the trace's nodes are the CPUs of one Slurm node (its
    backfill reserves whole nodes), False when each is a Slurm node. ``origin``: the replay's
    start in Unix seconds (Slurm's will-run batches are aligned on absolute time);
    ``will_run_window_s`` and ``reserve_nodes``: the simulator's ``bf_will_run_window_s`` and
    ``bf_reserve_nodes`` (the latter under EASY only); ``bf_interval_s``: 1, a backfill pass in
    the second after a change, or 0, in the second of the change (see :func:`compare`)."""
    runtime = [r["runtime_s"] for r in rows]
    origin = int(origin or 0)
    jobs = Jobs.build(
        submit_s=[int(r["slurm_submit"]) + origin for r in rows],
        nodes=[r["cpus"] for r in rows],
        limit_s=[60 * r["limit_min"] for r in rows],
        runtime_s=runtime,
        job_id=list(range(len(rows))),
    )
    config = SchedulerConfig(
        backfill=backfill,
        bf_interval_s=bf_interval_s,
        bf_resolution_s=1,
        bf_max_job_test=1000,
        release_delay_s=release_delay_s,
        reserve_whole_node=reserve_whole_node,
        bf_will_run_window_s=will_run_window_s,
        bf_reserve_nodes=bool(reserve_nodes and backfill == "easy"),
    )
    result = Simulator(jobs, cpus, config).run()
    starts = np.empty(len(rows), np.int64)
    starts[jobs.job_id] = result.start_s - origin
    return starts


def agreement(slurm_start, sim_start, submit, tie_s: float = 1.0) -> dict:
    slurm_start, sim_start = np.asarray(slurm_start, float), np.asarray(sim_start, float)
    discordant = _discordant_before(slurm_start, sim_start, tie_s)
    bad = discordant | discordant.T
    pairs = int(np.triu(np.abs(slurm_start[:, None] - slurm_start[None, :]) > tie_s, 1).sum())
    error = (sim_start - submit) - (slurm_start - submit)
    discordant_pairs = int(np.triu(bad, 1).sum())
    return {
        "jobs": len(submit),
        "same_order_pct": 100 * float((~bad.any(axis=1)).mean()),
        "discordant_pairs": discordant_pairs,
        "ordered_pairs": pairs,
        "concordant_pairs_pct": 100 * (1 - discordant_pairs / pairs) if pairs else 100.0,
        "mean_wait_slurm_s": float((slurm_start - submit).mean()),
        "mean_wait_sim_s": float((sim_start - submit).mean()),
        "mean_wait_error_s": float(error.mean()),
        "mean_abs_wait_error_s": float(np.abs(error).mean()),
        "max_abs_wait_error_s": float(np.abs(error).max()),
        "longest_common_order_pct": longest_common_order(slurm_start, sim_start, tie_s)[
            "longest_common_order_pct"
        ],
    }


def _discordant_before(slurm_start, sim_start, tie_s: float) -> np.ndarray:
    """``m[i, j]``: Slurm starts job ``i`` more than ``tie_s`` before ``j`` and the simulator
    starts it strictly later (the discordant pairs of :func:`agreement`, oriented)."""
    slurm_start, sim_start = np.asarray(slurm_start, float), np.asarray(sim_start, float)
    return (slurm_start[:, None] - slurm_start[None, :] < -tie_s) & (
        sim_start[:, None] - sim_start[None, :] > 0
    )


def longest_common_order(slurm_start, sim_start, tie_s: float = 1.0) -> dict:
    """The largest set of jobs whose start order agrees between Slurm and the simulator: no two
    of them form a discordant pair (Slurm starts one more than ``tie_s`` seconds before the other
    and the simulator strictly after it). Without ties this is the longest non-decreasing
    subsequence of simulated starts taken in Slurm's start order; Slurm starts within ``tie_s``
    count as ties (either order agrees).

    "Discordant, i before j" is a strict partial order (transitive: the Slurm gaps add up, the
    simulated starts keep decreasing), so the largest agreeing set is its largest antichain,
    which by Dilworth's theorem has ``n - M`` jobs, ``M`` a maximum matching of the bipartite
    graph of its pairs (Hopcroft-Karp, networkx). Returns ``jobs``,
    ``longest_common_order`` (the set's size) and ``longest_common_order_pct`` (its share)."""
    slurm_start, sim_start = np.asarray(slurm_start, float), np.asarray(sim_start, float)
    if slurm_start.shape != sim_start.shape or slurm_start.ndim != 1:
        raise InvalidInputError(
            "slurm_start and sim_start must be 1-D arrays of one length, got "
            f"shapes {slurm_start.shape} and {sim_start.shape}"
        )
    n = len(slurm_start)
    if n == 0:
        return {"jobs": 0, "longest_common_order": 0, "longest_common_order_pct": 100.0}
    before = np.nonzero(_discordant_before(slurm_start, sim_start, tie_s))
    left = [("i", i) for i in range(n)]
    graph = nx.Graph()
    graph.add_nodes_from(left)
    graph.add_nodes_from(("j", j) for j in range(n))
    graph.add_edges_from((("i", int(i)), ("j", int(j))) for i, j in zip(*before))
    # the matching maps both ways: each matched pair appears twice
    matched = len(nx.bipartite.hopcroft_karp_matching(graph, top_nodes=left)) // 2
    size = n - matched
    return {"jobs": n, "longest_common_order": size, "longest_common_order_pct": 100 * size / n}


def out_of_order(per_job: list[dict], sim_key: str = "sim_start", tie_s: float = 1.0) -> list[dict]:
    """The jobs not in the same start order (as :func:`agreement` counts them), in Slurm's start
    order: each row's ``id``, ``submit``, ``cpus``, ``slurm_start``, ``sim_start`` and
    ``discordant_with`` (the ids of the jobs it forms a discordant pair with)."""
    if not per_job:
        return []
    slurm = np.array([r["slurm_start"] for r in per_job], float)
    discordant = _discordant_before(slurm, [r[sim_key] for r in per_job], tie_s)
    bad = discordant | discordant.T
    rows = []
    for i in np.flatnonzero(bad.any(axis=1)):
        partners = np.flatnonzero(bad[i])
        partners = partners[np.argsort(slurm[partners], kind="stable")]
        r = per_job[i]
        rows.append(
            {
                "id": r["id"],
                "submit": r["submit"],
                "cpus": r["cpus"],
                "slurm_start": r["slurm_start"],
                "sim_start": r[sim_key],
                "discordant_with": [per_job[j]["id"] for j in partners],
            }
        )
    rows.sort(key=lambda r: (r["slurm_start"], r["submit"]))
    return rows


def replay_origin(done: list[dict], records) -> int | None:
    """The Unix second the replay's relative times count from (Slurm's absolute start minus the
    relative one), or None if no record matches."""
    starts = {r.job_id: r.start_time for r in records if r.start_time is not None}
    for row in done:
        if row.get("slurm_job_id") in starts and row.get("start") is not None:
            return int(round(starts[row["slurm_job_id"]] - row["start"]))
    return None


def run_mode(
    rows: list[dict],
    mode: str,
    cpus: int,
    release_delay_s: int = 1,
    nodes_as: str = "cpus",
    debug_dir=None,
    end_on_second: bool = False,
) -> dict:
    """Replay ``rows`` on a fresh local Slurm in ``mode`` and compare (:func:`compare`)."""
    from benchmarks.slurm_replay import replay_on_slurm

    with local_slurm(mode, cpus, check_nodes_as(nodes_as), debug_dir) as slurm:
        done = replay_on_slurm([dict(r) for r in rows], slurm, end_on_second=end_on_second)
        origin = replay_origin(done, slurm.completed())
    return compare(done, mode, cpus, release_delay_s, nodes_as, end_on_second, origin)


def compare(
    done: list[dict],
    mode: str,
    cpus: int,
    release_delay_s: int,
    nodes_as: str,
    end_on_second: bool,
    origin,
) -> dict:
    """The simulator on the jobs Slurm ran (rows of :func:`benchmarks.slurm_replay
    .replay_on_slurm`: ``slurm_submit``, ``start``, ``end`` and the input fields) against
    Slurm's starts. With ``end_on_second`` every job ended early in its start second +
    runtime, before the scheduling passes of that second, so each second's backfill pass sees
    that second's ends and submissions: the simulator runs its backfill pass in the second of
    each change (``bf_interval_s=0``) instead of the next one (``1``, the right rule when a job
    ends runtime seconds after the sub-second pass that started it, just after that pass's
    phase)."""
    _, backfill = MODES[mode]
    whole = check_nodes_as(nodes_as) == "cpus"
    done = sorted(done, key=lambda r: r["slurm_submit"])
    # node level: Slurm's will-run batching and reservations on named nodes (see the docstring)
    rules = dict(
        origin=origin or 0,
        will_run_window_s=0 if whole else WILL_RUN_WINDOW_S,
        reserve_nodes=not whole,
        bf_interval_s=0 if end_on_second else 1,
    )
    sim = simulate_rows(done, cpus, backfill, release_delay_s, whole, **rules)
    submit = np.array([r["slurm_submit"] for r in done], float)
    slurm_start = [r["start"] for r in done]
    ran = sum(1 for r in done if r["end"] - r["start"] == r["runtime_s"])
    out = {
        "mode": mode,
        "nodes_as": nodes_as,
        "nodes": cpus,
        "release_delay_s": release_delay_s,
        "end_on_second": bool(end_on_second),
        "bf_interval_s": rules["bf_interval_s"],
        "t0_unix": origin,
        "will_run_window_s": rules["will_run_window_s"],
        "reserve_nodes": rules["reserve_nodes"] and backfill == "easy",
        "ran_their_runtime": ran,
        **agreement(slurm_start, sim, submit),
    }
    other = 1 - min(release_delay_s, 1)
    measured = simulate_rows(done, cpus, backfill, other, whole, **rules)
    out[f"with_release_delay_{other}s"] = agreement(slurm_start, measured, submit)
    if not whole:  # the same without the two Slurm rules: node counts, earliest start
        for delay in (release_delay_s, other):
            plain = simulate_rows(
                done,
                cpus,
                backfill,
                delay,
                whole,
                origin=origin or 0,
                bf_interval_s=rules["bf_interval_s"],
            )
            out[f"node_counts_release_delay_{delay}s"] = agreement(slurm_start, plain, submit)
    out["per_job"] = [
        {
            "id": r["id"],
            "slurm_job_id": r.get("slurm_job_id"),
            "submit": r["slurm_submit"],
            "cpus": r["cpus"],
            "limit_min": r["limit_min"],
            "runtime_s": r["runtime_s"],
            "slurm_start": r["start"],
            "slurm_end": r["end"],
            "sim_start": int(s),
            f"sim_start_release_delay_{other}s": int(m),
        }
        for r, s, m in zip(done, sim, measured)
    ]
    out["out_of_order"] = out_of_order(out["per_job"])
    return out


def resimulate(result: dict, release_delay_s: int | None = None) -> dict:
    """:func:`compare` again on the Slurm side of a saved result of :func:`run_mode` (its
    ``per_job`` rows), with the current simulator: no new replay."""
    done = [
        {
            "id": r["id"],
            "slurm_job_id": r.get("slurm_job_id"),
            "slurm_submit": r["submit"],
            "cpus": r["cpus"],
            "limit_min": r["limit_min"],
            "runtime_s": r["runtime_s"],
            "start": r["slurm_start"],
            "end": r["slurm_end"],
        }
        for r in result["per_job"]
    ]
    delay = result["release_delay_s"] if release_delay_s is None else release_delay_s
    return compare(
        done,
        result["mode"],
        result["nodes"],
        delay,
        result["nodes_as"],
        result.get("end_on_second", False),
        result["t0_unix"],
    )


def fidelity(
    trace: str,
    start: str,
    count: int = 200,
    compression: float = 300,
    cpus: int = 76,
    modes=("fcfs", "easy"),
    release_delay_s: int = 1,
    nodes_as: str = "cpus",
    debug_dir=None,
    end_on_second: bool = False,
) -> list[dict]:
    """Every mode's replay, run side by side (separate local Slurms). ``cpus``: the number of
    trace nodes, as CPUs of one Slurm node or as Slurm nodes (``nodes_as``). ``debug_dir``: keep
    each mode's Slurm work directory there with debug logs (see :func:`local_slurm`).
    ``end_on_second``: every job ends on a whole second, its recorded start + runtime
    (:func:`benchmarks.slurm_replay.whole_second_command`)."""
    check_nodes_as(nodes_as)
    rows = trace_slice(trace, start, count, compression)
    results: dict[str, dict] = {}
    errors: list[BaseException] = []

    def work(mode):
        try:
            results[mode] = run_mode(
                rows, mode, cpus, release_delay_s, nodes_as, debug_dir, end_on_second
            )
        except BaseException as exc:  # re-raised below, in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(m,)) for m in modes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [results[m] for m in modes]


def plot(results: list[dict], png) -> Path:
    """One panel per mode: each job's simulated start against Slurm's (real seconds), the jobs
    not in the same start order (:func:`out_of_order`) marked, the diagonal for agreement."""
    from tjap.core.report import pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(5.2 * len(results), 4.6), squeeze=False)
    for ax, r in zip(axes[0], results):
        rows = r["per_job"]
        slurm = np.array([row["slurm_start"] for row in rows], float)
        sim = np.array([row["sim_start"] for row in rows], float)
        bad = {row["id"] for row in out_of_order(rows)}
        off = np.array([row["id"] in bad for row in rows], bool)
        top = float(max(slurm.max(), sim.max())) if len(rows) else 1.0
        ax.plot([0, top], [0, top], color="0.7", lw=1, zorder=0)
        ax.scatter(slurm[~off], sim[~off], s=10, label="same start order")
        ax.scatter(slurm[off], sim[off], s=14, marker="x", color="tab:red", label="out of order")
        ax.set_xlabel("Slurm's start (s)")
        ax.set_ylabel("simulated start (s)")
        delay = f", release delay {r['release_delay_s']} s" if "release_delay_s" in r else ""
        ax.set_title(
            f"{r['mode']}{delay}: {r['same_order_pct']:.1f} % same order, longest "
            f"common order {r.get('longest_common_order_pct', float('nan')):.1f} %",
            fontsize=9,
        )
        ax.legend(fontsize=8, loc="upper left")
    return save_figure(fig, png)


def build_parser() -> argparse.ArgumentParser:
    p = parser("slurm_fidelity", __doc__)
    p.add_argument("--trace", default=str(bundled_trace("ls6-a100")))
    p.add_argument("--start", default="2023-02-10")
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--compression", type=float, default=300)
    p.add_argument(
        "--nodes",
        "--cpus",
        dest="cpus",
        type=int,
        default=76,
        help="trace nodes replayed (CPUs of one Slurm node, or Slurm nodes)",
    )
    p.add_argument(
        "--nodes-as",
        choices=NODES_AS,
        default="cpus",
        help="cpus: one Slurm node, a CPU per trace node (default); slurm-nodes: one "
        "slurmd per trace node, jobs on whole nodes",
    )
    p.add_argument(
        "--release-delay",
        type=int,
        default=None,
        help="simulator's release delay in seconds (0 or 1; the other is reported "
        "too; default 1, or with --resimulate the saved run's)",
    )
    p.add_argument("--modes", default="fcfs,easy")
    p.add_argument(
        "--end-on-second",
        action="store_true",
        help="each job ends on a whole second, its recorded start + runtime, instead "
        "of runtime seconds after the sub-second pass that started it (the "
        "simulator's rule, without the race against the passes' phases; use "
        "with --release-delay 0)",
    )
    add_out(p, "the results (NAME.json)")
    p.add_argument(
        "--name",
        default="slurm_fidelity",
        help="file name of the results in --out, without .json (default slurm_fidelity)",
    )
    p.add_argument(
        "--debug-logs",
        metavar="DIR",
        default=None,
        help="keep each mode's Slurm work directory under DIR/<mode> with slurmctld "
        "logging at debug2 and DebugFlags=Backfill (off by default; the logs "
        "are large, keep them out of git, e.g. under benchmarks/out/)",
    )
    p.add_argument(
        "--plot",
        metavar="PNG",
        default=None,
        help="also draw each job's simulated start against Slurm's to PNG",
    )
    p.add_argument(
        "--replot",
        metavar="JSON",
        default=None,
        help="no replay: read the results a run wrote to JSON and draw --plot from them",
    )
    p.add_argument(
        "--resimulate",
        metavar="JSON",
        default=None,
        help="no replay: run the current simulator again on the Slurm side of the "
        "results a run wrote to JSON (its release delay unless --release-delay "
        "is given) and write the new results to --out",
    )
    return p


@one_line_errors
def main(argv=None) -> int:
    """Replay on Slurm and simulate (or resimulate, or redraw a saved run); write the results."""
    p = build_parser()
    args = p.parse_args(argv)
    out = Path(args.out) / f"{args.name}.json"
    if args.resimulate:
        try:
            saved = json.loads(Path(args.resimulate).read_text())
            res = [resimulate(r, args.release_delay) for r in saved]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            p.error(f"--resimulate {args.resimulate}: not a result of this benchmark ({exc})")
        return _report(res, out, args.plot)
    if args.replot:
        if not args.plot:
            p.error("--replot needs --plot PNG")
        try:
            res = json.loads(Path(args.replot).read_text())
            print(plot(res, args.plot))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            p.error(f"--replot {args.replot}: not a result of this benchmark ({exc})")
        return 0
    res = fidelity(
        args.trace,
        args.start,
        args.jobs,
        args.compression,
        args.cpus,
        tuple(args.modes.split(",")),
        1 if args.release_delay is None else args.release_delay,
        args.nodes_as,
        args.debug_logs,
        args.end_on_second,
    )
    return _report(res, out, args.plot)


def _report(res: list[dict], out, png) -> int:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(res, indent=1))
    if png:
        print(plot(res, png))
    for r in res:
        print(json.dumps({k: v for k, v in r.items() if k not in ("per_job", "out_of_order")}))
        for row in r["out_of_order"]:
            print(f"  {r['mode']} out of order: {json.dumps(row)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
