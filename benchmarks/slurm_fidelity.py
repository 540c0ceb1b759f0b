"""Fidelity of the batch simulator against a real Slurm (issue 5).

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

Order agreement: a pair of jobs is *discordant* when Slurm starts one more than ``tie_s`` seconds
before the other and the simulator starts it strictly later. A job "starts in the same order" when
it is in no discordant pair. Wait error: simulated minus Slurm's wait, in real seconds.

    python -m benchmarks.slurm_fidelity --start 2023-02-10 --jobs 200 --compression 300
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from placement.batch import Jobs, SchedulerConfig, Simulator, load_trace
from placement.batch.slurm_local import LocalSlurm, LocalSlurmConfig

MODES = {"fcfs": ({"scheduler": "builtin"}, "none"),
         "easy": ({"scheduler": "backfill", "bf_job_part_count_reserve": 1}, "easy"),
         "slurm": ({"scheduler": "backfill"}, "slurm")}


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
        rows.append({"id": int(jobs.job_id[r]), "submit_s": int((jobs.submit_s[r] - base) // compression),
                     "cpus": int(jobs.nodes[r]), "limit_min": limit_min, "runtime_s": runtime})
    return rows


def simulate_rows(rows: list[dict], cpus: int, backfill: str, release_delay_s: int = 0) -> np.ndarray:
    """Simulated starts (relative seconds) of the replayed rows, from Slurm's recorded submits;
    ``release_delay_s`` models Slurm's COMPLETING time (nodes return that long after a job ends)."""
    runtime = [r["runtime_s"] for r in rows]
    jobs = Jobs.build(submit_s=[r["slurm_submit"] for r in rows], nodes=[r["cpus"] for r in rows],
                      limit_s=[60 * r["limit_min"] for r in rows], runtime_s=runtime,
                      job_id=list(range(len(rows))))
    # all the replayed CPUs are one Slurm node, and Slurm's backfill reserves whole nodes
    config = SchedulerConfig(backfill=backfill, bf_interval_s=1, bf_resolution_s=1,
                             bf_max_job_test=1000, release_delay_s=release_delay_s,
                             reserve_whole_node=True)
    result = Simulator(jobs, cpus, config).run()
    starts = np.empty(len(rows), np.int64)
    starts[jobs.job_id] = result.start_s
    return starts


def agreement(slurm_start, sim_start, submit, tie_s: float = 1.0) -> dict:
    slurm_start, sim_start = np.asarray(slurm_start, float), np.asarray(sim_start, float)
    d_slurm = slurm_start[:, None] - slurm_start[None, :]
    d_sim = sim_start[:, None] - sim_start[None, :]
    discordant = (d_slurm < -tie_s) & (d_sim > 0)
    bad = discordant | discordant.T
    pairs = int(np.triu(np.abs(d_slurm) > tie_s, 1).sum())
    error = (sim_start - submit) - (slurm_start - submit)
    discordant_pairs = int(np.triu(bad, 1).sum())
    return {"jobs": len(submit), "same_order_pct": 100 * float((~bad.any(axis=1)).mean()),
            "discordant_pairs": discordant_pairs, "ordered_pairs": pairs,
            "concordant_pairs_pct": 100 * (1 - discordant_pairs / pairs) if pairs else 100.0,
            "mean_wait_slurm_s": float((slurm_start - submit).mean()),
            "mean_wait_sim_s": float((sim_start - submit).mean()),
            "mean_wait_error_s": float(error.mean()),
            "mean_abs_wait_error_s": float(np.abs(error).mean()),
            "max_abs_wait_error_s": float(np.abs(error).max())}


def run_mode(rows: list[dict], mode: str, cpus: int, release_delay_s: int = 1) -> dict:
    from benchmarks.slurm_replay import replay_on_slurm

    slurm_kw, backfill = MODES[mode]
    with LocalSlurm(LocalSlurmConfig(cpus=cpus, **slurm_kw)) as slurm:
        done = replay_on_slurm([dict(r) for r in rows], slurm)
    done.sort(key=lambda r: r["slurm_submit"])
    sim = simulate_rows(done, cpus, backfill, release_delay_s)
    submit = np.array([r["slurm_submit"] for r in done], float)
    slurm_start = [r["start"] for r in done]
    out = {"mode": mode, "release_delay_s": release_delay_s, **agreement(slurm_start, sim, submit)}
    other = 1 - min(release_delay_s, 1)
    measured = simulate_rows(done, cpus, backfill, other)
    out[f"with_release_delay_{other}s"] = agreement(slurm_start, measured, submit)
    out["per_job"] = [{"id": r["id"], "submit": r["slurm_submit"], "cpus": r["cpus"],
                       "limit_min": r["limit_min"], "runtime_s": r["runtime_s"],
                       "slurm_start": r["start"], "slurm_end": r["end"], "sim_start": int(s),
                       f"sim_start_release_delay_{other}s": int(m)}
                      for r, s, m in zip(done, sim, measured)]
    return out


def fidelity(trace: str, start: str, count: int = 200, compression: float = 300, cpus: int = 76,
             modes=("fcfs", "easy"), release_delay_s: int = 1) -> list[dict]:
    """Every mode's replay, run side by side (separate local Slurms)."""
    rows = trace_slice(trace, start, count, compression)
    results: dict[str, dict] = {}
    errors: list[BaseException] = []

    def work(mode):
        try:
            results[mode] = run_mode(rows, mode, cpus, release_delay_s)
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trace", default="../shared/traces/ls6-a100.tsv")
    p.add_argument("--start", default="2023-02-10")
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--compression", type=float, default=300)
    p.add_argument("--cpus", type=int, default=76)
    p.add_argument("--modes", default="fcfs,easy")
    p.add_argument("--out", default="benchmarks/out/slurm_fidelity.json")
    args = p.parse_args(argv)
    res = fidelity(args.trace, args.start, args.jobs, args.compression, args.cpus,
                   tuple(args.modes.split(",")))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    for r in res:
        print(json.dumps({k: v for k, v in r.items() if k != "per_job"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
