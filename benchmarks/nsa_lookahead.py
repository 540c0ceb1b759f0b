"""How many proposals the learned look-ahead needs, and what a hand-written one does with the same
time.

On the first ``windows`` evaluation windows of a setting (window stream seed 0, as ``python -m
benchmarks.sa_tables nsa``), in the best loop (n^D = 5, T_max 25000, 500 iterations) with the setting's best-loop
weights:

- NSA with look-ahead k (``lookahead=k``; 0 = the policy's start as is), for each k of ``ks``,
  against the default SA given NSA's CPU time on that window
  (:func:`benchmarks.sa_tables.sa_for_time`);
- the hand-written look-ahead repair (:class:`tjap.heuristics.tree.operators.LookaheadRepair`) with each
  (k, temperature) of ``hand``, at 500 iterations and at the CPU time of NSA with the last k.

Gains are means over windows of (column - NSA) / column in %, with a normal 95 % interval, as in
:func:`benchmarks.sa_tables.gain_interval`; gaps are to the SCAS optimum (dp).

    python -m benchmarks.nsa_lookahead --setting paper --windows 100 [--ks 0,8,16,32,64]
        [--hand 8:0,16:300,16:1000]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, one_line_errors, parser, progress
from benchmarks.sa_tables import SETTINGS, _windows, gain_interval, sa_for_time, timed_solve
from tjap import solve
from tjap.heuristics.tree.operators import LookaheadRepair

WEIGHTS = Path(__file__).resolve().parent.parent / "learned" / "weights"


def _parse_hand(text: str) -> list[tuple[int, float]]:
    pairs = []
    for item in text.split(","):
        k, _, temperature = item.partition(":")
        pairs.append((int(k), float(temperature or 0)))
    return pairs


def sweep(
    setting="paper",
    windows=100,
    ks=(0, 8, 16, 32, 64),
    hand=((8, 0.0), (16, 300.0), (16, 1000.0)),
    seed=0,
    quiet=False,
) -> dict:
    """Rows of costs and CPU times per window, and the summary lines (see the module)."""
    conv = SETTINGS[setting]["convention"]
    weights = str(WEIGHTS / f"nsa_cnn3_best_{setting}.json")
    common = {"convention": conv, "seed": seed}
    nsa = {"preset": "best", "iterations": 500, "weights": weights}
    ws = _windows(setting, 1, windows, seed)
    for k in ks:  # compile first
        solve(ws[0], "nsa", lookahead=k, **nsa, **common)
    for k, temperature in hand:
        solve(
            ws[0],
            "sa",
            iterations=3,
            repair=LookaheadRepair(k=k, temperature=temperature),
            **common,
        )
    rows = []
    for w in progress(ws, desc=f"look-ahead/{setting}", quiet=quiet):
        row = {"opt": solve(w, "dp", convention=conv).objective}
        for k in ks:
            r, t = timed_solve(w, "nsa", lookahead=k, **nsa, **common)
            row[f"nsa{k}"], row[f"nsa{k}_cpu_s"] = r.objective, t["cpu"]
            row[f"sa_at_nsa{k}"] = sa_for_time(w, t["cpu"], {}, common)[0].objective
        budget = row[f"nsa{ks[-1]}_cpu_s"]
        for k, temperature in hand:
            repair = LookaheadRepair(k=k, temperature=temperature)
            key = f"hand{k}_{temperature:g}"
            r, t = timed_solve(w, "sa", iterations=500, repair=repair, **common)
            row[f"{key}_500"], row[f"{key}_500_cpu_s"] = r.objective, t["cpu"]
            r = sa_for_time(w, budget, {"repair": repair}, common)[0]
            row[f"{key}_same_time"], row[f"{key}_same_time_iterations"] = r.objective, r.iterations
        rows.append(row)
    return {
        "setting": setting,
        "windows": windows,
        "ks": list(ks),
        "hand": list(hand),
        "rows": rows,
        "lines": summary_lines(rows, ks, hand),
    }


def summary_lines(rows, ks, hand) -> list[str]:
    opt = np.array([r["opt"] for r in rows])

    def col(key):
        return np.array([r[key] for r in rows], float)

    def gap(key):
        return f"{100 * np.mean(col(key) / opt - 1):+.3f} %"

    def gain(nsa_key, key):
        return "{:+.3f} % ({:+.3f}, {:+.3f})".format(*gain_interval(col(key), col(nsa_key)))

    lines = []
    for k in ks:
        lines.append(
            f"NSA-500 look-ahead {k}: gap {gap(f'nsa{k}')}, "
            f"{1e3 * col(f'nsa{k}_cpu_s').mean():.1f} ms CPU; default SA at its time: "
            f"gap {gap(f'sa_at_nsa{k}')}; NSA gain {gain(f'nsa{k}', f'sa_at_nsa{k}')}"
        )
    last = f"nsa{ks[-1]}"
    for k, temperature in hand:
        key = f"hand{k}_{temperature:g}"
        lines.append(
            f"hand-written look-ahead k={k} T={temperature:g}: 500 iterations gap "
            f"{gap(key + '_500')} ({1e3 * col(key + '_500_cpu_s').mean():.1f} ms); at "
            f"NSA look-ahead {ks[-1]}'s time gap {gap(key + '_same_time')} "
            f"({col(key + '_same_time_iterations').mean():.0f} iterations), NSA gain "
            f"{gain(last, key + '_same_time')}"
        )
    return lines


def build_parser() -> argparse.ArgumentParser:
    p = parser("nsa_lookahead", __doc__)
    p.add_argument("--setting", choices=tuple(SETTINGS), default="paper")
    p.add_argument("--windows", type=int, default=100)
    p.add_argument("--ks", default="0,8,16,32,64", help="NSA look-aheads, comma-separated")
    p.add_argument(
        "--hand",
        default="8:0,16:300,16:1000",
        help="hand-written look-aheads as k:temperature, comma-separated",
    )
    p.add_argument("--seed", type=int, default=0)
    add_out(p, "the rows (nsa_lookahead_<setting>_<windows>.json)")
    p.add_argument("--quiet", action="store_true")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Run the sweep; print its lines and write its rows as JSON."""
    p = build_parser()
    args = p.parse_args(argv)
    try:
        ks = tuple(int(k) for k in args.ks.split(","))
        hand = tuple(_parse_hand(args.hand))
    except ValueError:
        p.error("--ks takes integers and --hand k:temperature pairs, comma-separated")
    res = sweep(args.setting, args.windows, ks, hand, args.seed, args.quiet)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"nsa_lookahead_{args.setting}_{args.windows}.json"
    path.write_text(json.dumps(res, indent=1) + "\n")
    print("\n".join(res["lines"]))
    print(f"rows: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
