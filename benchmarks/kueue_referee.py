"""Does tjap's re-implementation of Kueue's topology-aware scheduling choose what Kueue's own code
chooses?

The referee (:mod:`tjap.k8s.referee`: Kueue v0.17.0's ``FindTopologyAssignmentsForFlavor`` in
the Go program ``go/kueue-referee``, built by ``bash .ci/build-kueue-referee``) and tjap's
methods ``kueue-bestfit`` (Kueue with the ``TASProfileMixed`` gate off) and ``kueue-leastfree``
(gate on, Kueue's default) answer the same random windows
(:func:`~tjap.k8s.referee.random_windows`: block/rack trees of 1-3 blocks of 1-4 racks of 1-5
nodes, a fifth racks only, 0-60 % of the nodes busy, 1-4 jobs each unconstrained, required or
preferred at a level, or in slices). The referee runs once for all windows and profiles; its
pod sets are admitted one after another, each seeing the earlier ones' nodes taken. A job
*agrees* when both give it the same nodes, or both leave it out (Kueue's failure, tjap's
``info["unplaced"]``); a window agrees when all its jobs do.

Prints, per profile, the windows and jobs that agree and the jobs left out, then every differing
window with its jobs and the difference, and writes them (each differing window as a tjap window
JSON, tjap's and Kueue's nodes per job) to ``--out``:

    python -m benchmarks.kueue_referee --cases 2000 --seed 0   # benchmarks/out/kueue_referee.json
"""

from __future__ import annotations

import argparse
import sys
import time

from benchmarks.common import add_out, format_table, one_line_errors, parser, write_result
from tjap.k8s.referee import KUEUE, PROFILES, judge, kueue_case, random_windows, run_referee


def _job_text(job) -> str:
    text = str(job.nodes)
    if job.segment:
        text += f"/{job.segment}@L{job.segment_level}"
    if job.within is not None:
        text += f" within L{job.within}"
    if job.prefer is not None:
        text += f" prefer L{job.prefer}"
    return text


def run(cases: int, seed: int, profiles) -> dict:
    """The comparison of ``cases`` random windows (seed ``seed``) under each of ``profiles``."""
    windows = random_windows(seed, cases)
    started = time.perf_counter()
    requests = [kueue_case(w, p, name=f"w{i}-{p}") for i, w in enumerate(windows) for p in profiles]
    answers = iter(run_referee(requests))
    referee_s = time.perf_counter() - started
    started = time.perf_counter()
    rows = {p: {"windows_same": 0, "jobs": 0, "jobs_same": 0, "kueue_out": 0} for p in profiles}
    differences = []
    for i, window in enumerate(windows):
        for p in profiles:
            c = judge(window, p, next(answers))
            row = rows[p]
            row["windows_same"] += c.same
            row["jobs"] += window.num_jobs
            row["jobs_same"] += sum(
                (isinstance(a, str) and isinstance(b, str)) or a == b
                for a, b in zip(c.tjap, c.kueue)
            )
            row["kueue_out"] += sum(isinstance(b, str) for b in c.kueue)
            if not c.same:
                differences.append(
                    {
                        "case": i,
                        "jobs": [_job_text(job) for job in window.jobs],
                        "window": window.to_dict(),
                        **c.to_dict(),
                    }
                )
    return {
        "kueue": KUEUE,
        "cases": cases,
        "seed": seed,
        "profiles": rows,
        "differences": differences,
        "referee_s": referee_s,
        "tjap_s": time.perf_counter() - started,
    }


def build_parser() -> argparse.ArgumentParser:
    p = parser("kueue_referee", __doc__)
    p.add_argument("--cases", type=int, default=2000, help="random windows (default 2000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--profiles",
        nargs="+",
        choices=PROFILES,
        default=list(PROFILES),
        help="tjap's Kueue methods to compare (default both)",
    )
    add_out(p, "the results (NAME.json)")
    p.add_argument(
        "--name",
        default="kueue_referee",
        help="file name of the results in --out, without .json (default kueue_referee)",
    )
    return p


@one_line_errors
def main(argv=None) -> int:
    """Compare tjap's Kueue methods with Kueue's own code; print the table, write the results."""
    p = build_parser()
    args = p.parse_args(argv)
    if args.cases < 1:
        p.error("--cases must be >= 1")
    result = run(args.cases, args.seed, args.profiles)
    table = []
    for profile, row in result["profiles"].items():
        table.append(
            {
                "profile": profile,
                "windows same": f"{row['windows_same']}/{args.cases}",
                "share": f"{row['windows_same'] / args.cases:.1%}",
                "jobs same": f"{row['jobs_same']}/{row['jobs']}",
                "jobs Kueue left out": row["kueue_out"],
            }
        )
    print(
        format_table(
            table,
            [
                ("profile", ""),
                ("windows same", ""),
                ("share", ""),
                ("jobs same", ""),
                ("jobs Kueue left out", ""),
            ],
        )
    )
    print(
        f"Kueue {result['kueue']} (go/kueue-referee) against tjap on {args.cases} random windows, "
        f"seed {args.seed}: referee {result['referee_s']:.1f} s, tjap {result['tjap_s']:.1f} s"
    )
    differences = result["differences"]
    print(f"differences: {len(differences) or 'none'}")
    for d in differences:
        print(
            f"  window {d['case']} ({d['profile']}; jobs {', '.join(d['jobs'])}): {d['difference']}"
        )
    write_result(args.out, args.name, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
