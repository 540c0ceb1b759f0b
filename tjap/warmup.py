"""Compile the Numba kernels now, so that no first call pays for it later.

Every kernel is compiled with ``cache=True`` (:mod:`tjap._jit`): the machine code is written
beside the source (``__pycache__``) the first time a kernel runs with a given argument type, and
read back by every later process. In a fresh clone that first time costs minutes of CPU in all,
spread over whichever solve, simulation or test comes first. ``python -m tjap.warmup`` pays it
at once, on every core: small runs of each family's compiled paths (the window methods on a
fat-tree, a switch tree and a block cluster with job constraints; the batch simulator on a
bundled trace; the audit's measuring loop; the network and interference kernels). The Makefile's
set-up runs it, so ``make demo`` and ``make test`` start warm. Running it again is quick: the
kernels load from the cache.
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

#: The examples the runs read (shipped with the repository).
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _tree_methods(which: str) -> None:
    import tjap
    from tjap.placement.tree.window import load_windows

    if which == "fat-tree":
        tree = tjap.FatTree(k=20, num_nodes=1000)
        windows = [tjap.Window(tree, idle_nodes=range(100, 400), job_sizes=[12, 7, 30, 25])]
    else:
        windows = load_windows(EXAMPLES / f"{which}.json")
    for window in windows:
        for method in tjap.methods():
            try:
                tjap.solve(window, method=method, time_limit_s=2, seed=0)
            except tjap.InvalidInputError:
                pass  # a method that refuses this kind of window


def _batch() -> None:
    from tjap.cli import main

    trace = Path(__file__).resolve().parent / "placement" / "batch" / "data" / "ls6-a100.tsv"
    main(["simulate", "--trace", str(trace), "--nodes", "76", "--backfill", "easy", "--quiet"])


def _audit() -> None:
    from tjap.cli import main

    audit = EXAMPLES / "audit"
    for records in ("sacct.txt", "jobcomp.txt"):
        main(
            ["audit", str(audit / records), "--topology", str(audit / "topology.conf")]
            + ["--timezone", "Etc/UTC", "--json", "--quiet"]
        )


def _network() -> None:
    from tjap.cli import main

    for policy in ("tetris", "nalb", "exact"):
        main(["network", "evaluate", "--policy", policy, "--servers", "64", "--quiet", "--json"])


def _interference() -> None:
    from tjap.cli import main

    for policy in ("tetris", "whole"):
        main(["interference", "evaluate", "--policy", policy, "--quiet", "--json"])


#: The runs, costliest first, so the pool's cores stay busy to the end.
RUNS = {
    "tree: fat-tree window": lambda: _tree_methods("fat-tree"),
    "tree: switch-tree window": lambda: _tree_methods("window"),
    "tree: block window": lambda: _tree_methods("blocks-window"),
    "batch simulator": _batch,
    "audit": _audit,
    "network": _network,
    "interference": _interference,
}


def _run(name: str) -> tuple[str, float, str | None]:
    import contextlib
    import io

    start = time.perf_counter()
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            RUNS[name]()
    except SystemExit:
        pass
    except Exception as exc:  # a warm-up never stops the set-up: it says what it skipped
        return name, time.perf_counter() - start, f"{type(exc).__name__}: {exc}"
    return name, time.perf_counter() - start, None


def main(argv: list[str] | None = None) -> int:
    """Run every warm-up on ``os.cpu_count()`` processes; print one line per run."""
    import argparse

    argparse.ArgumentParser(
        prog="python -m tjap.warmup",
        description="Compile and cache the Numba kernels now, on every core.",
    ).parse_args(argv)
    workers = max(1, min(len(RUNS), os.cpu_count() or 1))
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        for name, seconds, problem in pool.map(_run, list(RUNS)):
            print(f"tjap.warmup: {name}: {seconds:.1f} s" + (f" ({problem})" if problem else ""))
    print(f"tjap.warmup: Numba kernels compiled and cached in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
