"""Seed 002's Fig. 6: window-based scheduling for tau in 10..60 s against per-job FCFS and EASY
backfilling, topology-blind (first-fit) and topology-aware (contiguous, free-form) placement.

Each epoch replays ``jobs_per_epoch`` consecutive jobs of the paper's workload from a random index
on an empty cluster; figures are means over epochs.
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import format_table, progress, pyplot, save_figure
from tjap.online import replay
from tjap.stream import Workload
from tjap.topology import FatTree

TAUS = (10, 20, 30, 40, 50, 60)
PER_JOB = (("fcfs", "firstfit"), ("easy", "firstfit"), ("fcfs", "contiguous"),
           ("easy", "contiguous"), ("fcfs", "freeform"), ("easy", "freeform"))


def run(layout="paper", epochs=10, jobs_per_epoch=300, seed=0, method="dp", convention="paper",
        cap=5, quiet=False) -> list[dict]:
    topology = FatTree.from_layout(layout)
    workload = Workload.generate(100_000, seed)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    starts = rng.integers(0, workload.num_jobs - jobs_per_epoch, epochs)
    configs = [("window", "-", tau) for tau in TAUS] + [(p, pl, None) for p, pl in PER_JOB]
    rows = []
    for policy, placement, tau in progress(configs, desc="online", quiet=quiet):
        per_epoch = []
        for start in starts:
            jobs = range(int(start), int(start) + jobs_per_epoch)
            sched = replay(topology, workload, policy=policy,
                           placement=placement if placement != "-" else "firstfit",
                           tau_s=tau or 60, cap=cap, method=method, convention=convention,
                           seed=seed, jobs=jobs)
            per_epoch.append(sched.metrics())
        row = {"policy": policy if tau is None else f"window tau={tau}s", "placement": placement}
        for key in ("mean_cost_paper", "mean_cost_published", "mean_wait_s", "p95_wait_s",
                    "utilisation", "makespan_s"):
            row[key] = float(np.mean([m[key] for m in per_epoch]))
        rows.append(row)
    return rows


COLUMNS = [("policy", ""), ("placement", ""), ("mean_cost_paper", ".1f"),
           ("mean_cost_published", ".1f"), ("mean_wait_s", ".1f"), ("p95_wait_s", ".1f"),
           ("utilisation", ".3f"), ("makespan_s", ".0f")]


def plot(rows, path, convention="paper"):
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    window = [r for r in rows if r["policy"].startswith("window")]
    taus = [int(r["policy"].split("=")[1].rstrip("s")) for r in window]
    key = f"mean_cost_{convention}"
    ax1.plot(taus, [r[key] for r in window], "o-", label="window (dp)")
    ax2.plot(taus, [r["mean_wait_s"] for r in window], "o-", label="window (dp)")
    per_job = [r for r in rows if not r["policy"].startswith("window")]
    for k, r in enumerate(per_job):
        label = f"{r['policy'].upper()} {r['placement']}"
        style = {"ls": "--" if r["policy"] == "fcfs" else ":", "lw": 1.5, "color": f"C{k // 2 + 1}"}
        ax1.axhline(r[key], label=label, **style)
        ax2.axhline(r["mean_wait_s"], label=label, **style)
    ax1.set_xlabel("tau (s)")
    ax1.set_ylabel(f"mean CH cost per multi-node job ({convention})")
    ax2.set_xlabel("tau (s)")
    ax2.set_ylabel("mean wait (s)")
    ax2.legend(fontsize=7)
    fig.suptitle("Window-based scheduling against per-job FCFS / EASY (seed 002, Fig. 6)")
    return save_figure(fig, path)


def table(rows) -> str:
    return format_table(rows, COLUMNS)
