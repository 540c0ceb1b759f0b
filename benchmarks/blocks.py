"""Block clusters with job constraints: the exact SCAS methods against SCIP, the free-form bound
and the schedulers' own rules, on NVLink block clusters written as Slurm ``topology/block``
configurations.

    python -m benchmarks.blocks                                   # 100 windows on each cluster
    python -m benchmarks.blocks --num-windows 100 50 --scip-time-limit 30

The clusters (their topology.conf is written to ``--out``):

- ``nvl576``: 576 nodes in 32 base blocks of 18 (NVL72-class racks), ``BlockSizes=18,36,72,144,
  288,576``;
- ``nvl4608``: 4,608 nodes in 256 base blocks of 18, block sizes doubling from 18 up to the
  whole cluster.

Windows (:func:`tjap.placement.tree.block_windows.constrained_windows`, the default mix): up to
``--cap`` multi-node jobs each on a loaded, fragmented cluster (whole, part and no base blocks
busy); a third of the jobs come in segments of 9 or 18 nodes, a quarter must fit one domain of
level 1 or 2, a tenth are exclusive, the rest plain. Every method runs on every window in the
same process, one after the other (:func:`tjap.bench.run_constrained`):

- **Table 1, dp against SCIP**: the share of windows where both are OPTIMAL and dp's objective
  equals SCIP's; median and largest time of each (the solve's own clock, model building
  included); the median over windows of SCIP's time / dp's time; dp's peak memory per window
  (tracemalloc, in a separate untimed solve: Python and NumPy allocations, the compiled DP's
  tables included); SCIP runs cut short by ``--scip-time-limit``; dp windows over 50 ms.
- **Table 2, every method against dp**: dp, the free-form bound (``freeform``, no contiguity,
  warm-started from dp, ``--freeform-time-limit``) and the anchors ``slurm-block``,
  ``kueue-bestfit`` and ``kueue-leastfree`` (each when this version registers it for windows
  with constraints; the output names those left out): the mean objective / dp's and the mean
  whole idle base blocks left (``Result.free_blocks(1)``), both on the windows where every
  method placed every job (``all_place``), with the mean proven bound / dp's objective where
  the method proves one (``bound_vs_dp``: the free-form bound cut short by its time limit may
  prove none); the windows where a job had to be asked without a
  constraint the scheduler cannot express (``within`` for Slurm's block plugin, ``exclusive``
  for Kueue: :func:`tjap.bench.solve_as_asked`); the windows where the method left a job
  unplaced (status INFEASIBLE) and the jobs left; the jobs whose placement breaks one of the
  window's constraints (dp keeps every one).
- **Table 3, the reported case**: one job of 36 nodes with ``--segment=12`` on ``nvl576``, whose
  idle nodes are 17 in b00, 17 in b01, 2 in b02, 12 in b03 and 12 in b20 (the rest busy): best
  fit by free nodes takes the two fullest blocks and tops up from the smallest block that holds
  the rest, 17 + 17 + 2, which breaks the segments; each method's nodes per block and cost,
  for the job with its segments and asked without them (as a scheduler that cannot express
  segments would be asked; ``keeps_segments`` judges the placement against segments of 12).

Prints the three tables; writes ``blocks_table1.csv``, ``blocks_table2.csv``,
``blocks_table3.csv``, the per-window rows (``blocks_rows_CLUSTER.csv``) and ``blocks.md`` (the
tables in markdown) to ``--out``. CP-SAT is left out here (seconds per window on ``nvl4608``);
``tjap bench exact --topology FILE --constraints mix`` compares it too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, format_table, one_line_errors, parser, write_csv
from tjap.api import solve
from tjap.bench import ANCHORS, constrained_methods, run_constrained
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.arcs import violations
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window

#: The clusters: name -> base blocks of 18 nodes.
CLUSTERS = {"nvl576": 32, "nvl4608": 256}
#: Base block size (nodes of one NVL72-class rack).
BASE = 18
#: Methods of table 2, dp first.
TABLE2_METHODS = ("dp", "freeform", *ANCHORS)
#: dp's time per window the benchmark checks against (reported, not asserted).
DP_TARGET_MS = 50.0
#: Table 3: idle nodes per base block of nvl576 (the rest of the cluster busy) and the job.
CASE_IDLE = {"b00": 17, "b01": 17, "b02": 2, "b03": 12, "b20": 12}
CASE_JOB = {"nodes": 36, "segment": 12}


def block_conf(num_blocks: int, base: int = BASE) -> str:
    """topology.conf text of ``num_blocks`` base blocks of ``base`` nodes (``b00``, ``b01`` ...,
    nodes ``gpu0000`` ...), with block sizes doubling up to the whole cluster."""
    digits = len(str(num_blocks - 1))
    width = len(str(num_blocks * base - 1))
    lines = [
        f"BlockName=b{b:0{digits}d} Nodes=gpu[{b * base:0{width}d}-{b * base + base - 1:0{width}d}]"
        for b in range(num_blocks)
    ]
    sizes, size = [], base
    while size <= num_blocks * base:
        sizes.append(size)
        size *= 2
    return "\n".join(lines + [f"BlockSizes={','.join(map(str, sizes))}"]) + "\n"


def table1_row(cluster: str, rows: list[dict]) -> dict:
    """dp against SCIP on one cluster's per-window rows."""
    dp = {r["window"]: r for r in rows if r["method"] == "dp"}
    scip = {r["window"]: r for r in rows if r["method"] == "scip"}
    both = [k for k in dp if dp[k]["status"] == "OPTIMAL" and scip[k]["status"] == "OPTIMAL"]
    same = [
        k
        for k in both
        if abs(dp[k]["objective"] - scip[k]["objective"])
        <= 1e-6 * max(1.0, abs(scip[k]["objective"]))
    ]
    dp_s = np.array([dp[k]["runtime_s"] for k in dp])
    scip_s = np.array([scip[k]["runtime_s"] for k in dp])
    return {
        "cluster": cluster,
        "windows": len(dp),
        "both_optimal": len(both),
        "dp_equals_scip_pct": 100.0 * len(same) / len(both) if both else None,
        "dp_median_ms": 1e3 * float(np.median(dp_s)),
        "dp_max_ms": 1e3 * float(dp_s.max()),
        "scip_median_ms": 1e3 * float(np.median(scip_s)),
        "scip_max_ms": 1e3 * float(scip_s.max()),
        "speedup_median": float(np.median(scip_s / np.maximum(dp_s, 1e-9))),
        "dp_peak_mb": max(dp[k]["peak_mb"] for k in dp),
        "scip_cut_short": sum(scip[k]["status"] == "TIME_LIMIT" for k in dp),
        "dp_over_50ms": int(np.sum(dp_s > DP_TARGET_MS / 1e3)),
    }


def table2_rows(cluster: str, summary: list[dict]) -> list[dict]:
    """Each method of table 2 on one cluster, from the run's summary."""
    return [
        {"cluster": cluster, **{key: s[key] for key, _ in TABLE2[1:]}}
        for s in summary
        if s["method"] in TABLE2_METHODS
    ]


def case_window(tree: Topology) -> Window:
    """Table 3's window: :data:`CASE_JOB` on the idle nodes of :data:`CASE_IDLE`."""
    idle = []
    for block, count in CASE_IDLE.items():
        leaf = tree.switch_index(block)
        idle += np.flatnonzero(tree.node_leaf == leaf)[-count:].tolist()
    return Window(tree, idle, [CASE_JOB])


def per_block(window: Window, nodes) -> str:
    """``b00:12 b01:12 b03:12``: the job's nodes per base block."""
    tree = window.topology
    blocks, counts = np.unique(tree.node_leaf[np.asarray(nodes, np.int64)], return_counts=True)
    return " ".join(f"{tree.switch_names[b]}:{c}" for b, c in zip(blocks, counts))


def table3_rows(tree: Topology, names, freeform_time_limit_s: float) -> list[dict]:
    """What each method does with the reported case, the job with its segments and without."""
    window = case_window(tree)
    plain = Window(tree, window.idle_nodes, [CASE_JOB["nodes"]])
    rows = []
    for w, job in ((window, "36 nodes, segment 12"), (plain, "36 nodes")):
        for name in ("dp", "scip", *names):
            options = {"time_limit_s": freeform_time_limit_s} if name == "freeform" else {}
            r = solve(w, name, **options)
            rows.append(
                {
                    "job": job,
                    "method": name,
                    "status": r.status.value,
                    "nodes_per_block": per_block(w, r.assignment[0])
                    if r.assignment
                    else "(not placed)",
                    "cost": r.objective if r.has_solution else None,
                    "keeps_segments": (not violations(window, r.assignment))
                    if r.has_solution
                    else None,
                    "free_blocks": r.free_blocks(1) if r.has_solution else None,
                }
            )
    return rows


TABLE1 = [
    ("cluster", ""),
    ("windows", "d"),
    ("both_optimal", "d"),
    ("dp_equals_scip_pct", ".1f"),
    ("dp_median_ms", ".2f"),
    ("dp_max_ms", ".2f"),
    ("scip_median_ms", ".1f"),
    ("scip_max_ms", ".1f"),
    ("speedup_median", ".1f"),
    ("dp_peak_mb", ".2f"),
    ("scip_cut_short", "d"),
    ("dp_over_50ms", "d"),
]
TABLE2 = [
    ("cluster", ""),
    ("method", ""),
    ("all_place", "d"),
    ("cost_vs_dp", ".4f"),
    ("bound_vs_dp", ".4f"),
    ("free_blocks", ".2f"),
    ("asked_without", "d"),
    ("unplaced_windows", "d"),
    ("unplaced_jobs", "d"),
    ("broken_jobs", "d"),
    ("cut_short", "d"),
]
TABLE3 = [
    ("job", ""),
    ("method", ""),
    ("status", ""),
    ("nodes_per_block", ""),
    ("cost", ".1f"),
    ("keeps_segments", ""),
    ("free_blocks", "d"),
]


def markdown(rows: list[dict], columns) -> str:
    """A markdown table of ``rows`` (cells formatted as :func:`format_table` does)."""

    def cell(row, key, spec):
        value = row.get(key)
        if value is None or value == "":
            return "-"
        return format(value, spec) if spec and not isinstance(value, (str, bool)) else str(value)

    lines = ["| " + " | ".join(k for k, _ in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r, k, s) for k, s in columns) + " |" for r in rows]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = parser("blocks", __doc__)
    p.add_argument(
        "--clusters",
        nargs="+",
        choices=sorted(CLUSTERS),
        default=list(CLUSTERS),
        help="clusters to run (default both: nvl576 nvl4608)",
    )
    p.add_argument(
        "--num-windows",
        type=int,
        nargs="+",
        default=[100],
        metavar="N",
        help="windows per cluster: one number for every cluster, or one per cluster "
        "in --clusters order (default 100)",
    )
    p.add_argument("--cap", type=int, default=5, help="most multi-node jobs per window (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the windows (default 0)")
    p.add_argument(
        "--scip-time-limit",
        type=float,
        default=60.0,
        metavar="S",
        help="SCIP's time limit per window in seconds (default 60); runs cut short "
        "are counted in table 1",
    )
    p.add_argument(
        "--freeform-time-limit",
        type=float,
        default=2.0,
        metavar="S",
        help="the free-form bound's time limit per window in seconds (default 2)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_out(p, "the tables (CSV and markdown), the per-window rows and the clusters' topology.conf")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Run the clusters' windows, then the reported case; print and write the three tables."""
    args = build_parser().parse_args(argv)
    counts = args.num_windows
    if len(counts) == 1:
        counts = counts * len(args.clusters)
    if len(counts) != len(args.clusters) or min(counts) < 1:
        raise InvalidInputError(
            f"--num-windows takes one positive number or one per cluster "
            f"({len(args.clusters)}), got {' '.join(map(str, counts))}"
        )
    if args.cap < 1 or args.scip_time_limit <= 0 or args.freeform_time_limit <= 0:
        raise InvalidInputError("--cap and the time limits must be positive")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table1, table2, notes, trees = [], [], [], {}
    for cluster, count in zip(args.clusters, counts):
        conf = out / f"blocks_{cluster}.conf"
        conf.write_text(block_conf(CLUSTERS[cluster]))
        trees[cluster] = Topology.from_slurm(conf)
        result = run_constrained(
            conf,
            count,
            args.seed,
            cap=args.cap,
            methods=("dp", "scip", *TABLE2_METHODS[1:]),
            time_limit_s=args.scip_time_limit,
            freeform_time_limit_s=args.freeform_time_limit,
            quiet=args.quiet,
            csv_path=out / f"blocks_rows_{cluster}.csv",
        )
        table1.append(table1_row(cluster, result["rows"]))
        table2 += table2_rows(cluster, result["summary"])
        notes = result["notes"]
        if not args.quiet:
            print(f"{cluster}: {count} windows done", file=sys.stderr, flush=True)
    tree = trees.get("nvl576") or Topology.from_slurm(block_conf(CLUSTERS["nvl576"]))
    names, _ = constrained_methods(("dp", "scip", *TABLE2_METHODS[1:]))
    table3 = table3_rows(
        tree, [n for n in names if n not in ("dp", "scip")], args.freeform_time_limit
    )
    titles = [
        f"Table 1: dp against SCIP (peak memory: tracemalloc; dp target {DP_TARGET_MS:g} ms)",
        "Table 2: each method against dp (cost_vs_dp and free_blocks on the windows every "
        "method places, all_place)",
        f"Table 3: one job of 36 nodes, --segment=12, on nvl576 with idle "
        f"{', '.join(f'{b}:{n}' for b, n in CASE_IDLE.items())}",
    ]
    tables = [(table1, TABLE1), (table2, TABLE2), (table3, TABLE3)]
    text = []
    for k, (title, (rows, columns)) in enumerate(zip(titles, tables), 1):
        write_csv(out / f"blocks_table{k}.csv", rows)
        print(title)
        print(format_table(rows, columns))
        print()
        text += [f"**{title}**", "", markdown(rows, columns), ""]
    for note in notes:
        print(note)
    text += notes
    (out / "blocks.md").write_text("\n".join(text) + "\n")
    print(f"files: {out}/blocks_table[1-3].csv, blocks_rows_*.csv, blocks.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
