"""Every window method on very large switch trees: does ``tjap solve --time-limit 5`` return
within the limit (or refuse the size in one line up front), and does it obey SIGTERM within 2 s?

Each size N is a Slurm ``topology.conf`` of N nodes ``n1 .. nN``: leaf switches of 10 nodes, 100
leaves per middle switch, one top switch (N = 100,000: 10,000 leaves; N = 1,000,000: 100,000
leaves); and one window on it, drawn by ``--seed``: about half of the nodes idle, scattered at
random, and ``--jobs`` jobs of 2-64 nodes.

    python -m benchmarks.large_trees                          # 100,000 and 1,000,000 nodes
    python -m benchmarks.large_trees --sizes 100000 --methods freeform scip --no-sigterm

Per size and method, one child process does what ``tjap solve FILE --method M --time-limit 5``
does (:func:`tjap.cli.tree.cmd_solve`): ``load_windows`` (``load_s``), the start-up solve with a
1 ms limit (``startup_s``: imports, compiled kernels, and anything the method does before its
clock starts), then the timed solve (``solve_wall_s``: the wall time of that call, the rules'
comparison after the limit included; ``runtime_s``: the result's own clock). ``within`` says
whether ``solve_wall_s`` kept ``limit + 0.5 s``; ``refused`` that the start-up solve raised a
one-line :class:`~tjap.core.errors.InvalidInputError` (the size or the tree refused up front,
which counts as keeping the limit). A child that outlives ``--timeout`` or grows past
``--max-rss-gb`` is killed (status ``KILLED``).

The SIGTERM probe (unless ``--no-sigterm``) starts ``tjap solve FILE --method M --time-limit 60``
as a process (``tjap``'s own ``main``, with a line on stderr as its timed solve starts), sends
SIGTERM 1 s into that solve (half-way through it when the timed child's took under 2 s) and
measures how long the process takes to exit (``sigterm_s``; it must exit 143 within 2 s, or
have printed its answer already: a signal after the command's work is Python's). A method that
refused the size, a solve of under 0.3 s, or a process that ended before the signal has no
probe. Timings of one process on a shared machine: run it on a quiet one.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.common import add_out, format_table, one_line_errors, parser, write_csv

#: Nodes per leaf switch and leaves per middle switch of the generated trees.
LEAF, FANOUT = 10, 100
#: The sizes measured by default.
SIZES = (100_000, 1_000_000)
#: Solves shorter than this (measured in the timed child) are not probed with SIGTERM: the
#: signal would land after the solve, while the process writes its answer and exits.
MIN_PROBED_S = 0.3


# -- the instances -------------------------------------------------------------------------------
def topology_conf(nodes: int, leaf: int = LEAF, fanout: int = FANOUT) -> str:
    """``topology.conf`` of a three-level tree of ``nodes`` nodes ``n1 .. n<nodes>``: leaf
    switches ``s0, s1, ...`` of ``leaf`` nodes, middle switches ``m0, m1, ...`` of ``fanout``
    leaves, one ``top``."""
    leaves = -(-nodes // leaf)
    middles = -(-leaves // fanout)
    lines = [f"SwitchName=top Switches=m[0-{middles - 1}]"]
    for m in range(middles):
        lines.append(
            f"SwitchName=m{m} Switches=s[{m * fanout}-{min(leaves, (m + 1) * fanout) - 1}]"
        )
    for s in range(leaves):
        lines.append(f"SwitchName=s{s} Nodes=n[{s * leaf + 1}-{min(nodes, (s + 1) * leaf)}]")
    return "\n".join(lines) + "\n"


def idle_hostlist(idle: np.ndarray) -> str:
    """The 0-based node indices ``idle`` (sorted) as a hostlist of the names ``n1 ..``."""
    if not len(idle):
        return ""
    breaks = np.flatnonzero(np.diff(idle) != 1) + 1
    starts = np.r_[idle[:1], idle[breaks]] + 1
    ends = np.r_[idle[breaks - 1], idle[-1:]] + 1
    return (
        "n["
        + ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in zip(starts.tolist(), ends.tolist()))
        + "]"
    )


def write_instance(out: Path, nodes: int, seed: int, jobs: int, idle_share: float) -> Path:
    """Write ``tree-N.conf`` and ``window-N.json`` to ``out``; return the window's path."""
    rng = np.random.default_rng([seed, nodes])
    idle = np.flatnonzero(rng.random(nodes) < idle_share)
    sizes = rng.integers(2, 65, jobs).tolist()
    conf = out / f"tree-{nodes}.conf"
    conf.write_text(topology_conf(nodes))
    path = out / f"window-{nodes}.json"
    window = {
        "topology": {"slurm": conf.name},
        "idle_nodes": idle_hostlist(idle),
        "job_sizes": sizes,
        "meta": {"seed": seed, "nodes": nodes, "idle": int(len(idle))},
    }
    path.write_text(json.dumps(window))
    return path


# -- the timed child -----------------------------------------------------------------------------
def child(path: str, method: str, limit: float, spawned: float) -> None:
    """In a child process: ``tjap solve PATH --method METHOD --time-limit LIMIT``'s steps, timed;
    one JSON line on stdout. ``spawned`` is the parent's ``time.time()`` when it started us."""
    began = time.time()
    from tjap.api import solve
    from tjap.core.errors import InvalidInputError
    from tjap.placement.tree.window import load_windows

    row: dict = {"python_s": began - spawned, "import_s": time.time() - began}
    started = time.perf_counter()
    window = load_windows(path)[0]
    row["load_s"] = time.perf_counter() - started
    started = time.perf_counter()
    try:
        solve(window, method, time_limit_s=1e-3)
    except InvalidInputError as exc:
        row.update(startup_s=time.perf_counter() - started, refused=str(exc), status="REFUSED")
        print(json.dumps(row), flush=True)
        return
    row["startup_s"] = time.perf_counter() - started
    row["ready_s"] = time.time() - spawned
    print("solving", file=sys.stderr, flush=True)
    started = time.perf_counter()
    result = solve(window, method, time_limit_s=limit)
    row["solve_wall_s"] = time.perf_counter() - started
    info = result.info
    row.update(
        runtime_s=result.runtime_s,
        status=result.status.value,
        objective=result.objective if result.has_solution else None,
        feasible=bool(result.is_feasible()) if result.has_solution else False,
        stopped=str(info.get("stopped") or ""),
        fallback=str(info.get("fallback") or (info.get("auto") or {}).get("chose") or ""),
        rules_skipped=",".join(info.get("rules_skipped", ())),
    )
    print(json.dumps(row), flush=True)


def _rss_gb(pid: int) -> float:
    """Resident memory of ``pid`` and its children, in GB (0 when gone)."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for kid in (task / "children").read_text().split():
                total += int(_rss_gb(int(kid)) * 2**30)
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return total / 2**30


def _watch(proc: subprocess.Popen, timeout_s: float, max_rss_gb: float) -> tuple[str, float]:
    """Wait for ``proc``; kill it past ``timeout_s`` or ``max_rss_gb``. Returns (why killed or
    "", peak RSS in GB)."""
    deadline, peak = time.monotonic() + timeout_s, 0.0
    while proc.poll() is None:
        peak = max(peak, _rss_gb(proc.pid))
        if time.monotonic() > deadline or peak > max_rss_gb:
            why = "timeout" if time.monotonic() > deadline else f"rss>{max_rss_gb:g}GB"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return why, peak
        time.sleep(0.1)
    return "", peak


def run_timed(path: Path, method: str, limit: float, timeout_s: float, max_rss_gb: float) -> dict:
    """One child process: the steps of ``tjap solve`` timed (see :func:`child`). ``ready_s`` (from
    the process start to the timed solve) is read from the child's stderr as it comes, so it is
    known for a child killed in its solve too."""
    spawned, began = time.time(), time.monotonic()
    code = (
        "import sys; from benchmarks.large_trees import child; "
        "child(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path), method, str(limit), repr(spawned)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    err: list[str] = []
    ready: list[float] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.strip() == "solving" and not ready:
                ready.append(time.monotonic() - began)
            else:
                err.append(line)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    killed, peak = _watch(proc, timeout_s, max_rss_gb)
    out = proc.stdout.read() if proc.stdout else ""
    reader.join(5.0)
    row: dict = {"method": method, "rss_gb": peak}
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if killed:
        row.update(status="KILLED", error=killed)
        if ready:
            row["ready_s"] = ready[0]
    elif lines:
        row.update(json.loads(lines[-1]))
    else:
        tail = [line for line in "".join(err).strip().splitlines() if line.strip()]
        row.update(status="ERROR", error=tail[-1][:200] if tail else f"exit {proc.returncode}")
    wall = row.get("solve_wall_s")
    row["within"] = (
        True if row["status"] == "REFUSED" else (wall is not None and wall <= limit + 0.5)
    )
    return row


#: ``tjap solve ...`` (the arguments follow) with one line ``solving`` on stderr as its timed
#: solve starts (the second call of ``tjap.api.solve``: the first is the start-up solve), so
#: that the probe signals it a known time into the solve.
MARKED_TJAP = """import sys
import tjap.api as api
real, calls = api.solve, []
def solve(*args, **kwargs):
    calls.append(1)
    if len(calls) == 2:
        print("solving", file=sys.stderr, flush=True)
    return real(*args, **kwargs)
api.solve = solve
from tjap.cli import main
sys.exit(main())
"""


def sigterm_probe(path: Path, method: str, into_s: float, timeout_s: float) -> dict:
    """``tjap solve PATH --method METHOD --time-limit 60``, SIGTERM ``into_s`` s into its timed
    solve (seen by :data:`MARKED_TJAP`'s line): the seconds until it exits, its exit code and
    stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-c", MARKED_TJAP, "solve", str(path), "--method", method]
        + ["--time-limit", "60", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    marked, err = threading.Event(), []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.strip() == "solving":
                marked.set()
            elif line.strip():
                err.append(line.rstrip())

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    out: list[str] = []
    writer = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    writer.start()
    while not marked.wait(0.05):
        if proc.poll() is not None:
            return {"sigterm_s": None, "sigterm_note": f"exited {proc.returncode} before its solve"}
    try:
        proc.wait(timeout=into_s)
        return {"sigterm_s": None, "sigterm_note": f"the solve ended within {into_s:.2f} s"}
    except subprocess.TimeoutExpired:
        pass
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return {"sigterm_s": timeout_s, "sigterm_rc": None, "sigterm_note": "killed"}
    latency = time.monotonic() - sent
    reader.join(5.0)
    writer.join(5.0)
    answered = bool(out and out[0].strip())  # the answer was printed: the signal came after
    note = "the answer was printed before the signal" if answered else ""
    if len(err) > 1 or (err and proc.returncode != 143):
        note = (note + "; " if note else "") + f"stderr: {' | '.join(err)[-300:]}"
    return {
        "sigterm_into_s": into_s,
        "sigterm_s": latency,
        "sigterm_rc": proc.returncode,
        "sigterm_ok": (proc.returncode == 143 or answered) and latency <= 2.0,
        "sigterm_note": note,
    }


def tree_methods() -> list[str]:
    from tjap.registry import entries

    return [m.name for m in entries("tree") if m.is_available()]


COLUMNS = [
    ("nodes", ","),
    ("method", ""),
    ("load_s", ".2f"),
    ("startup_s", ".2f"),
    ("solve_wall_s", ".2f"),
    ("runtime_s", ".2f"),
    ("within", ""),
    ("status", ""),
    ("fallback", ""),
    ("sigterm_s", ".2f"),
    ("sigterm_rc", ""),
]


def build_parser() -> argparse.ArgumentParser:
    p = parser("large_trees", __doc__)
    p.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=list(SIZES),
        help="tree sizes in nodes (default 100000 1000000; at most 1,000,000)",
    )
    p.add_argument(
        "--methods", nargs="*", default=None, help="window methods (default every installed one)"
    )
    p.add_argument(
        "--time-limit", type=float, default=5.0, help="the timed solve's limit in s (default 5)"
    )
    p.add_argument("--jobs", type=int, default=40, help="jobs per window (default 40)")
    p.add_argument(
        "--idle-share", type=float, default=0.5, help="share of idle nodes (default 0.5)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the windows (default 0)")
    p.add_argument(
        "--timeout",
        type=float,
        default=180.0,
        help="seconds after which a timed child is killed (default 180)",
    )
    p.add_argument(
        "--max-rss-gb",
        type=float,
        default=12.0,
        help="resident memory past which a child is killed (default 12 GB)",
    )
    p.add_argument("--no-sigterm", action="store_true", help="skip the SIGTERM probes")
    add_out(p, "the trees, the windows and large_trees.csv / .json")
    return p


@one_line_errors
def main(argv=None) -> int:
    """Generate the trees and windows, time every method on each, probe SIGTERM; print the
    table, write ``large_trees.csv`` and ``large_trees.json``."""
    from tjap.core.errors import InvalidInputError
    from tjap.placement.tree.topology import MAX_NODES

    args = build_parser().parse_args(argv)
    if any(not 1000 <= n <= MAX_NODES for n in args.sizes):
        raise InvalidInputError(f"--sizes must be from 1,000 to {MAX_NODES:,} nodes")
    if not 2 <= args.jobs <= 10_000 or not 0 < args.idle_share < 1:
        raise InvalidInputError("--jobs must be from 2 to 10000 and --idle-share in (0, 1)")
    names = args.methods or tree_methods()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for nodes in args.sizes:
        path = write_instance(out, nodes, args.seed, args.jobs, args.idle_share)
        print(f"{nodes:,} nodes: {path}", file=sys.stderr, flush=True)
        for method in names:
            row = {"nodes": nodes, "limit_s": args.time_limit}
            row |= run_timed(path, method, args.time_limit, args.timeout, args.max_rss_gb)
            wall = row.get("solve_wall_s", args.timeout)
            if args.no_sigterm or "ready_s" not in row:
                pass
            elif wall < MIN_PROBED_S:
                row["sigterm_note"] = f"not probed: the solve took {wall:.2f} s"
            else:  # 1 s into the solve, or half-way through a shorter one
                row |= sigterm_probe(path, method, min(1.0, wall / 2), 30.0)
            rows.append(row)
            print(format_table(rows[-1:], COLUMNS).splitlines()[-1], file=sys.stderr, flush=True)
            (out / "large_trees.json").write_text(json.dumps(rows, indent=1))
    write_csv(out / "large_trees.csv", rows)
    print(
        f"limit {args.time_limit:g} s; within: solve wall <= limit + 0.5 s (start-up apart); "
        "SIGTERM 1 s into the solve, must exit 143 within 2 s"
    )
    print(format_table(rows, COLUMNS))
    for row in rows:
        if row.get("refused"):
            print(f"{row['nodes']:,} {row['method']}: refused: {row['refused']}")
        elif row.get("error"):
            print(f"{row['nodes']:,} {row['method']}: {row['status']}: {row['error']}")
        if row.get("sigterm_note"):
            print(f"{row['nodes']:,} {row['method']}: SIGTERM probe: {row['sigterm_note']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
