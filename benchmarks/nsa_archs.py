"""Seed 002 Figs. 4 and 5: the six NSA actor architectures of Table II.

- :func:`curves` (Fig. 4): the learning curve of each architecture from its
  ``learned/weights/nsa_<arch>_curve.csv`` (behaviour-cloning loss per epoch; the PPO reward
  curve where a PPO stage exists), one panel each.
- :func:`budgets` (Fig. 5): on the first ``windows`` evaluation windows of the published setting,
  NSA-b with each architecture against SA-b with the paper's repair (equal iterations) and against
  SA with the paper's repair given NSA-b's time (as many iterations as fit NSA-b's CPU time on
  that window, cooling over all of them: :func:`benchmarks.sa_tables.sa_for_time`), for budgets
  b = 500..1000. Also SA-2b, the
  paper's own Fig. 5 comparison (it gives SA twice NSA's iterations as "the same solving time").

    python -m benchmarks.nsa_archs [--windows 30] [--archs fcn1,...,cnn3] [--quiet]

Improvement of NSA over SA is the mean over windows of ``(SA - NSA) / SA`` in %, as
:func:`benchmarks.sa_tables.nsa_table` computes it.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

from benchmarks.common import (
    add_out,
    format_table,
    one_line_errors,
    parser,
    progress,
    pyplot,
    save_figure,
    write_csv,
)
from benchmarks.sa_tables import SETTINGS, _windows, sa_for_time, timed_solve
from tjap import solve

ARCHS = ("fcn1", "fcn2", "fcn3", "cnn1", "cnn2", "cnn3")
BUDGETS = (500, 600, 700, 800, 900, 1000)
WEIGHTS = Path(__file__).resolve().parent.parent / "learned" / "weights"
FIGURES = Path(__file__).resolve().parent / "figures"
OUT = Path(__file__).resolve().parent / "out"


def _weights(arch: str) -> Path:
    return WEIGHTS / f"nsa_{arch}.json"


def _read_curve(arch: str) -> list[dict]:
    with (WEIGHTS / f"nsa_{arch}_curve.csv").open() as f:
        return list(csv.DictReader(f))


def curves(archs=ARCHS, png=FIGURES / "nsa_fig4_curves.png") -> Path:
    """Fig. 4: behaviour-cloning loss per epoch of each architecture (and, on a second axis,
    the PPO mean reward of the last 100 episodes against timesteps where a PPO stage exists)."""
    plt = pyplot()
    rows = {a: _read_curve(a) for a in archs if (WEIGHTS / f"nsa_{a}_curve.csv").exists()}
    has_ppo = any(
        r.get("stage", "ppo") == "ppo" and r.get("mean_reward_100")
        for rs in rows.values()
        for r in rs
    )
    fig, axes = plt.subplots(
        1, 2 if has_ppo else 1, figsize=(11 if has_ppo else 6, 4), squeeze=False
    )
    ax = axes[0][0]
    for arch, rs in rows.items():
        bc = [r for r in rs if r.get("stage") == "imitation"]
        if bc:
            ax.plot(
                [int(r["bc_epoch"]) for r in bc],
                [float(r["bc_loss"]) for r in bc],
                marker="o",
                ms=3,
                label=arch.upper(),
            )
    ax.set_xlabel("behaviour-cloning epoch")
    ax.set_ylabel("training loss (soft cross-entropy + 0.5 critic MSE)")
    ax.set_title("NSA imitation warm start, Table II architectures")
    ax.grid(alpha=0.3)
    ax.legend()
    if has_ppo:
        ax = axes[0][1]
        for arch, rs in rows.items():
            ppo = [r for r in rs if r.get("stage", "ppo") == "ppo" and r.get("mean_reward_100")]
            if ppo:
                ax.plot(
                    [int(r["timesteps"]) for r in ppo],
                    [float(r["mean_reward_100"]) for r in ppo],
                    label=arch.upper(),
                )
        ax.set_xlabel("PPO timesteps")
        ax.set_ylabel("mean episode reward (last 100)")
        ax.set_title("PPO stage")
        ax.grid(alpha=0.3)
        ax.legend()
    return save_figure(fig, png)


def budgets(
    archs=ARCHS,
    windows=50,
    budgets=BUDGETS,
    seed=0,
    setting="published",
    quiet=False,
    csv_path=OUT / "nsa_fig5.csv",
    png=FIGURES / "nsa_fig5_budgets.png",
) -> dict:
    """Fig. 5: per architecture and budget b, the mean window cost of NSA-b, of SA-b (paper's
    repair, equal iterations) and of SA (paper's repair) with NSA-b's wall time, and NSA's
    improvement over both. Returns ``{"rows", "csv", "png", "wall_s"}``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # batch-1 inference of a small net: one thread is fastest here
    try:
        return _budgets(archs, windows, budgets, seed, setting, quiet, csv_path, png)
    finally:
        torch.set_num_threads(threads)


def _budgets(archs, windows, budgets, seed, setting, quiet, csv_path, png) -> dict:
    started = time.perf_counter()
    s = SETTINGS[setting]
    ws = _windows(setting, 1, windows, seed)
    common = {"convention": s["convention"], "seed": seed}
    paper_sa = {"preset": setting}  # the paper's repair (SA) in the setting's loop (SA and NSA)
    solve(ws[0], "sa", iterations=1, **paper_sa, **common)  # compile first
    for arch in archs:
        solve(ws[0], "nsa", iterations=1, weights=str(_weights(arch)), **paper_sa, **common)
    raw = {
        (a, b): {"nsa": [], "nsa_s": [], "sa": [], "sa_2x": [], "sa_time": [], "sa_time_it": []}
        for a in archs
        for b in budgets
    }
    for w in progress(ws, desc="nsa fig5", quiet=quiet):
        sa_iter = {b: solve(w, "sa", iterations=b, **paper_sa, **common).objective for b in budgets}
        sa_2x = {
            b: solve(w, "sa", iterations=2 * b, **paper_sa, **common).objective for b in budgets
        }
        for arch in archs:
            for b in budgets:
                nsa, nsa_time = timed_solve(
                    w, "nsa", iterations=b, weights=str(_weights(arch)), **paper_sa, **common
                )
                # SA given as many iterations as fit NSA's CPU time, cooling over all of them
                same = sa_for_time(w, nsa_time["cpu"], paper_sa, common)[0]
                r = raw[(arch, b)]
                r["nsa"].append(nsa.objective)
                r["nsa_s"].append(nsa.runtime_s)
                r["sa"].append(sa_iter[b])
                r["sa_2x"].append(sa_2x[b])
                r["sa_time"].append(same.objective)
                r["sa_time_it"].append(same.iterations)
    rows = []
    for (arch, b), r in raw.items():
        nsa, sa, sa2, sat = (
            np.asarray(r[k], dtype=float) for k in ("nsa", "sa", "sa_2x", "sa_time")
        )
        rows.append(
            {
                "arch": arch,
                "budget": b,
                "windows": len(nsa),
                "nsa": float(nsa.mean()),
                "sa": float(sa.mean()),
                "sa_same_time": float(sat.mean()),
                "impr_equal_iter_pct": 100 * float(np.mean((sa - nsa) / sa)),
                "impr_equal_time_pct": 100 * float(np.mean((sat - nsa) / sat)),
                "sa_2x": float(sa2.mean()),
                "impr_vs_sa_2x_pct": 100 * float(np.mean((sa2 - nsa) / sa2)),
                "nsa_ms": 1000 * float(np.mean(r["nsa_s"])),
                "sa_same_time_iterations": float(np.mean(r["sa_time_it"])),
            }
        )
    out = {"rows": rows, "csv": str(write_csv(Path(csv_path), rows))}
    out["png"] = str(plot_budgets(rows, png))
    out["wall_s"] = time.perf_counter() - started
    return out


def plot_budgets(rows, png=FIGURES / "nsa_fig5_budgets.png") -> Path:
    """The two panels of Fig. 5 from :func:`budgets`' rows (or its CSV read back)."""
    plt = pyplot()
    archs = list(dict.fromkeys(r["arch"] for r in rows))
    budgets = sorted({int(r["budget"]) for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=False)
    for ax, key, title in (
        (axes[0], "impr_equal_iter_pct", "equal iterations"),
        (axes[1], "impr_equal_time_pct", "equal wall time"),
    ):
        for arch in archs:
            pts = sorted((int(r["budget"]), float(r[key])) for r in rows if r["arch"] == arch)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=arch.upper())
        ax.axhline(0, color="k", lw=0.8)
        ax.set_xticks(list(budgets))
        ax.set_xlabel("iterations of NSA (budget)")
        ax.set_ylabel("NSA improvement over SA (%)")
        ax.set_title(f"NSA vs SA (paper's repair), {title}")
        ax.grid(alpha=0.3)
    axes[0].legend()
    return save_figure(fig, png)


def build_parser() -> argparse.ArgumentParser:
    p = parser("nsa_archs", __doc__)
    p.add_argument("--archs", default=",".join(ARCHS))
    p.add_argument("--windows", type=int, default=50)
    p.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    p.add_argument("--seed", type=int, default=0)
    add_out(p, "Fig. 5's CSV (its figures go to benchmarks/figures)")
    p.add_argument("--quiet", action="store_true")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Draw Fig. 4, run Fig. 5's comparison; print its table."""
    args = build_parser().parse_args(argv)
    archs = [a for a in args.archs.split(",") if a]
    print("Fig. 4:", curves(archs))
    res = budgets(
        archs,
        args.windows,
        tuple(int(b) for b in args.budgets.split(",")),
        seed=args.seed,
        quiet=args.quiet,
        csv_path=Path(args.out) / "nsa_fig5.csv",
    )
    print(
        format_table(
            res["rows"],
            [
                ("arch", ""),
                ("budget", ""),
                ("nsa", ".1f"),
                ("sa", ".1f"),
                ("sa_same_time", ".1f"),
                ("impr_equal_iter_pct", ".2f"),
                ("impr_equal_time_pct", ".2f"),
                ("sa_2x", ".1f"),
                ("impr_vs_sa_2x_pct", ".2f"),
                ("nsa_ms", ".1f"),
                ("sa_same_time_iterations", ".0f"),
            ],
        )
    )
    print(
        f"Fig. 5: {res['png']}  csv: {res['csv']}  wall {res['wall_s']:.0f} s, "
        f"{args.windows} windows"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
