"""Demonstration of the live mode of seed 004's provisioner: one predecessor/successor pair on a
real (localhost) Slurm, with a compressed slice of the LS6 trace as background load.

A demonstration, not a benchmark: one pair, one run, wall-clock timing on a shared machine.

What it does:

1. connects to a Slurm (``$SLURM_CONF`` or ``--slurm-conf``), or with ``--local`` starts a
   throw-away one on this machine (:class:`placement.batch.slurm_local.LocalSlurm`, 76 CPUs: one
   per LS6 node; needs root and ``bash .ci/install-slurm``);
2. with ``--trace``: replays the trace from ``--warmup-h`` before ``--at`` on, ``--compress`` times
   faster (``sbatch -n <nodes> -t <limit> --wrap "sleep <runtime>"`` per job, in a background
   thread, as the fidelity replay does): first the jobs the trace had running or queued at that
   moment (their remaining runtime), then each later job at its compressed submit time;
3. records the warm-up history, submits the predecessor at ``--at`` and runs the provisioner
   (:func:`learned.provision.live.run_live`) every 10 trace minutes until it submits the successor
   (or the predecessor ends); prints every decision and Slurm's outcome; cancels what it started.

    python -m benchmarks.provision_live_demo --local --policy moe --trace ../shared/traces/ls6-a100.tsv --at 2023-03-02T12:00
    tjap provision live --local --policy moe --trace ../shared/traces/ls6-a100.tsv --at 2023-03-02T12:00

Without ``--trace`` only the pair is submitted; with ``--pred-job ID`` an existing job is watched
as the predecessor (nothing else is submitted but the successor).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

DEFAULT_TRACE = "../shared/traces/ls6-a100.tsv"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``tjap provision live`` and of this script."""
    p.add_argument("--policy", default="moe",
                   help="reactive | avg | rf | xgb | transformer | moe | transformer_dqn | moe_dqn "
                        "| transformer_pg | moe_pg (default moe)")
    p.add_argument("--compress", type=float, default=720,
                   help="trace seconds per wall second (default 720: 10 trace minutes = 0.83 s, "
                        "a 48 h job = 4 min; Slurm limits are whole minutes, so 2880/compress "
                        "should be whole)")
    p.add_argument("--nodes", type=int, default=1, help="nodes (CPUs) of each pair job (default 1)")
    p.add_argument("--runtime-h", type=float, default=48.0, help="pair runtime, trace hours")
    p.add_argument("--limit-h", type=float, default=48.0, help="pair time limit, trace hours")
    p.add_argument("--local", action="store_true",
                   help="start a throw-away localhost Slurm (76 CPUs) for this run")
    p.add_argument("--cpus", type=int, default=76, help="CPUs of the --local cluster (default 76)")
    p.add_argument("--slurm-conf", metavar="PATH", help="slurm.conf of the cluster (default: "
                   "$SLURM_CONF)")
    p.add_argument("--jobcomp", metavar="PATH", help="its jobcomp/filetxt log (default: "
                   "JobCompLoc from scontrol show config)")
    p.add_argument("--pred-job", type=int, metavar="ID",
                   help="watch this existing job as the predecessor instead of submitting one")
    p.add_argument("--trace", metavar="FILE", help=f"background load from this trace (e.g. "
                   f"{DEFAULT_TRACE}); none without it")
    p.add_argument("--at", default="2023-03-02T12:00", metavar="ISO",
                   help="trace time of the predecessor's submission (default 2023-03-02T12:00, "
                        "a busy day of LS6)")
    p.add_argument("--warmup-h", type=float, default=24.0,
                   help="trace hours replayed (and recorded as history) before --at (default 24)")
    p.add_argument("--cancel-successor", action="store_true",
                   help="cancel the successor once it has started (its start is the outcome)")


# -- background load ----------------------------------------------------------------------------

def background_rows(trace: str, at: str, warmup_h: float, horizon_h: float,
                    compress: float, cpus: int) -> list[dict]:
    """Jobs of ``trace`` around ``at``, compressed: the jobs running or queued at ``at -
    warmup_h`` (submitted at 0 with what remains of their runtime and limit, running ones first),
    then those submitted until ``at + horizon_h`` at their compressed times. Rows as
    :func:`benchmarks.slurm_replay.replay_on_slurm` takes them; ``submit_s`` in wall seconds."""
    import numpy as np

    from learned.provision.live import slurm_limit_min, slurm_runtime_s
    from placement.batch import load_trace
    from placement.batch.replay import parse_date

    jobs, _ = load_trace(trace)
    at_s = int(jobs.from_unix(parse_date(at)))
    start = at_s - int(warmup_h * 3600)
    end = at_s + int(horizon_h * 3600)
    rec_start, sub = jobs.recorded_start_s, jobs.submit_s
    rec_end = rec_start + jobs.runtime_s
    fits = jobs.nodes <= cpus
    running = fits & (sub < start) & (rec_start >= 0) & (rec_start <= start) & (rec_end > start)
    queued = fits & (sub < start) & (rec_start > start)
    later = fits & (sub >= start) & (sub < end)
    rows = []
    for rows_of, kind in ((np.flatnonzero(running), "running"), (np.flatnonzero(queued), "queued"),
                          (np.flatnonzero(later), "later")):
        for r in rows_of:
            used = start - rec_start[r] if kind == "running" else 0
            limit = int(jobs.limit_s[r] - used)
            runtime = int(jobs.runtime_s[r] - used)
            limit_min = slurm_limit_min(max(limit, 1), compress)
            rows.append({"id": int(jobs.job_id[r]), "cpus": int(jobs.nodes[r]),
                         "submit_s": 0.0 if kind != "later" else (sub[r] - start) / compress,
                         "limit_min": limit_min,
                         "runtime_s": max(1.0, slurm_runtime_s(max(runtime, 0), max(limit, 1),
                                                               compress))})
    return rows


class BackgroundLoad(threading.Thread):
    """Submits ``rows`` at ``t0 + submit_s`` (wall) until stopped; :meth:`stop` cancels them."""

    def __init__(self, client, rows: list[dict], t0: float, workdir: str | None = None):
        super().__init__(daemon=True)
        self.client, self.rows, self.t0, self.workdir = client, rows, t0, workdir
        self.job_ids: list[int] = []
        self.error: Exception | None = None
        self._stop_event = threading.Event()

    def run(self) -> None:
        from benchmarks.slurm_replay import _sleep_command
        from placement.batch.slurm import SlurmError

        try:
            for row in self.rows:
                if self._stop_event.wait(max(0.0, self.t0 + row["submit_s"] - time.time())):
                    return
                self.job_ids.append(self.client.submit(
                    nodes_or_tasks=row["cpus"], time_limit_min=row["limit_min"],
                    command=_sleep_command(round(row["runtime_s"], 3)),
                    name=f"trace-{row['id']}", output="/dev/null", chdir=self.workdir))
        except SlurmError as exc:
            self.error = exc

    def stop(self) -> None:
        from placement.batch.slurm import SlurmError

        self._stop_event.set()
        self.join(timeout=30)
        try:
            self.client.cancel(self.job_ids)
        except SlurmError:
            pass


# -- the run ------------------------------------------------------------------------------------

def run(args) -> int:
    """``tjap provision live``: returns the exit code; errors raise TjapError (one line)."""
    from learned.provision import make_provisioner
    from learned.provision.live import START_HINT, format_decisions, run_live
    from placement.batch.chained import Pair
    from placement.batch.slurm import SlurmClient, SlurmError
    from placement.batch.slurm_local import LocalSlurm, LocalSlurmConfig
    from tjap.errors import InvalidInputError

    if not 0 < args.compress <= 1e6:
        raise InvalidInputError(f"--compress must lie in (0, 1e6], got {args.compress}")
    if args.local and (args.slurm_conf or args.jobcomp):
        raise InvalidInputError("--local starts its own Slurm: drop --slurm-conf / --jobcomp")
    pair = Pair(nodes=args.nodes, runtime_s=int(args.runtime_h * 3600),
                limit_s=int(args.limit_h * 3600))
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, flush=True))
    slurm = None
    load = None
    if not args.local:   # a missing Slurm is reported before anything is loaded
        client = SlurmClient({"SLURM_CONF": args.slurm_conf} if args.slurm_conf else None)
        try:
            client.ping()
        except SlurmError as exc:
            raise SlurmError(f"{exc}; {START_HINT}") from None
    provisioner = make_provisioner(args.policy, **({} if args.policy in ("reactive", "avg")
                                                    else {"seed": args.seed}))
    try:
        if args.local:
            say(f"starting a localhost Slurm with {args.cpus} CPUs ...")
            slurm = LocalSlurm(LocalSlurmConfig(cpus=args.cpus)).start()
            client, jobcomp, workdir = slurm.client(), str(slurm.jobcomp_path), str(slurm.workdir)
        else:
            jobcomp, workdir = args.jobcomp, None
        rows = []
        if args.trace and args.pred_job is None:
            horizon_h = args.runtime_h + 3 * args.limit_h
            cpus = args.cpus if args.local else sum(n.cpus_total for n in client.nodes())
            rows = background_rows(args.trace, args.at, args.warmup_h, horizon_h, args.compress,
                                   cpus)
            say(f"background: {len(rows)} jobs of {args.trace} from {args.warmup_h:g} h before "
                f"{args.at}, {args.compress:g}x faster")
        warmup_s = int(args.warmup_h * 3600) if (rows and args.pred_job is None) else 0
        t0 = time.time()
        if rows:
            load = BackgroundLoad(client, rows, t0, workdir)
            load.start()
        say(f"policy {args.policy}: {warmup_s / args.compress:.0f} s of warm-up, then the "
            f"predecessor ({pair.nodes} node(s), {args.runtime_h:g} h, limit {args.limit_h:g} h); "
            f"a decision every {600 / args.compress:.2f} s")

        def show(d):
            pw = ("" if d.predicted_wait_h is None
                  else f", predicted wait {d.predicted_wait_h:.2f} h")
            say(f"  {time.time() - t0:7.1f} s  trace +{d.trace_h:6.2f} h  predecessor "
                f"{d.pred_state:8s} remaining {d.remaining_h:6.2f} h{pw}: {d.action}")
        result = run_live(client, provisioner, pair=pair, compress=args.compress,
                          pred_job_id=args.pred_job, jobcomp_path=jobcomp, warmup_s=warmup_s,
                          cancel_successor=args.cancel_successor, workdir=workdir,
                          on_decision=show)
        if load is not None and load.error is not None:
            raise load.error
    finally:
        if load is not None:
            load.stop()
        if slurm is not None:
            slurm.stop()
    out = result.to_dict()
    out["background_jobs"] = len(rows)
    if args.json:
        print(json.dumps(out, indent=1, default=float))
    else:
        print(format_decisions(result, decisions=False))   # the decisions were printed above
        t = result.pred_submit or 0
        print(f"Slurm's records (wall s after the predecessor's submission): predecessor started "
              f"{result.pred_start - t}, ended {result.pred_end - t}; successor submitted "
              f"{result.succ_submit - t}, started {result.succ_start - t}")
    return 0


def main(argv=None) -> int:
    from tjap.errors import TjapError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except TjapError as exc:
        print(f"provision_live_demo: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("provision_live_demo: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
