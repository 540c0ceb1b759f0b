"""Offline parts of the Slurm fidelity replay (no Slurm needed): the node-level helpers of
benchmarks/slurm_fidelity.py and the two Slurm rules the simulator can model for it (Slurm's
will-run batching of running jobs, reservations on named nodes)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.slurm_fidelity import (
    agreement,
    local_slurm,
    longest_common_order,
    node_names,
    out_of_order,
    replay_origin,
    single_switch_conf,
)
from tjap.core.errors import InvalidInputError
from tjap.placement.batch import Jobs, SchedulerConfig, Simulator
from tjap.placement.batch import _kernels as k


def test_node_names_keep_slurm_order_and_reject_bad_counts():
    assert node_names(3) == ("n001", "n002", "n003")
    names = node_names(1200)
    assert names[0] == "n0001" and names == tuple(sorted(names))
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InvalidInputError):
            node_names(bad)
    assert single_switch_conf(("a", "b")) == "SwitchName=s0 Nodes=a,b\n"


def test_out_of_order_lists_each_discordant_job_with_its_partners():
    rows = [
        {"id": i, "submit": 0, "cpus": 1, "slurm_start": s, "sim_start": m}
        for i, (s, m) in enumerate([(0, 0), (5, 20), (10, 9), (11, 30), (30, 30)])
    ]
    out = out_of_order(rows)
    # job 1 started before 2 in Slurm but after it here
    assert [r["id"] for r in out] == [1, 2]
    assert out[0]["discordant_with"] == [2] and out[1]["discordant_with"] == [1]
    assert out_of_order([]) == []
    # within tie_s Slurm's order does not count
    tie = [
        {"id": 0, "submit": 0, "cpus": 1, "slurm_start": 3, "sim_start": 5},
        {"id": 1, "submit": 0, "cpus": 1, "slurm_start": 4, "sim_start": 4},
    ]
    assert out_of_order(tie) == []


def _longest_common_order_brute(slurm, sim, tie_s):
    """The largest subset with no discordant pair, by trying every subset."""
    n = len(slurm)
    for size in range(n, 0, -1):
        for subset in itertools.combinations(range(n), size):
            if not any(
                (slurm[i] < slurm[j] - tie_s and sim[i] > sim[j])
                or (slurm[j] < slurm[i] - tie_s and sim[j] > sim[i])
                for i, j in itertools.combinations(subset, 2)
            ):
                return size
    return 0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=0, max_size=8),
    st.sampled_from([0.0, 1.0, 2.0]),
)
def test_longest_common_order_matches_brute_force(starts, tie_s):
    slurm = [a for a, _ in starts]
    sim = [b for _, b in starts]
    got = longest_common_order(slurm, sim, tie_s)
    assert got["longest_common_order"] == _longest_common_order_brute(slurm, sim, tie_s)
    assert got["jobs"] == len(starts)


def test_longest_common_order_examples():
    # one job moved from first to last: the other four keep their order
    assert (
        longest_common_order([0, 10, 20, 30, 40], [50, 10, 20, 30, 40])["longest_common_order_pct"]
        == 80.0
    )
    # a whole chain shifted behind one job: only that job is out, where every chain job is out of
    # "same start order" (each forms a discordant pair with it)
    slurm, sim = [0, 10, 12, 14, 16], [18, 0, 2, 4, 6]
    assert longest_common_order(slurm, sim)["longest_common_order"] == 4
    assert agreement(slurm, sim, np.zeros(5))["same_order_pct"] == 0.0
    assert agreement(slurm, sim, np.zeros(5))["longest_common_order_pct"] == 80.0
    # Slurm starts 1 s apart are ties under tie_s = 1, not under tie_s = 0
    assert longest_common_order([0, 1], [5, 4])["longest_common_order"] == 2
    assert longest_common_order([0, 1], [5, 4], tie_s=0)["longest_common_order"] == 1
    assert longest_common_order([], [])["longest_common_order_pct"] == 100.0
    with pytest.raises(InvalidInputError):
        longest_common_order([0, 1], [0])


def test_debug_logs_keep_the_workdir_with_backfill_logging(tmp_path):
    slurm = local_slurm("easy", 4, "slurm-nodes", tmp_path)
    assert slurm.workdir == (tmp_path / "easy").resolve() and slurm.keep_workdir
    conf = slurm.conf_lines()
    assert "SlurmctldDebug=debug2" in conf and "DebugFlags=Backfill" in conf
    plain = local_slurm("easy", 4, "slurm-nodes")
    assert "DebugFlags=Backfill" not in plain.conf_lines() and not plain.keep_workdir
    plain.stop()  # removes its temporary work directory


def test_replay_origin_from_slurm_records():
    done = [{"slurm_job_id": 7, "start": 12.0}, {"slurm_job_id": 8, "start": None}]
    recs = [
        SimpleNamespace(job_id=7, start_time=1_000_012),
        SimpleNamespace(job_id=9, start_time=5),
    ]
    assert replay_origin(done, recs) == 1_000_000
    assert replay_origin(done, []) is None


def _will_run_reference(now, free, ends, sizes, need, window):
    """Slurm's will-run batching written plainly: batches of ends up to barrier + window, the
    window doubling after each batch; the start is the last end of the batch the job fits after."""
    if free >= need:
        return now
    order = sorted(range(len(ends)), key=lambda i: ends[i])
    if not order:
        return k.INF
    e1 = ends[order[0]]
    barrier = e1 + window - e1 % window
    w, i = window, 0
    while i < len(order):
        batch = [order[i]]
        i += 1
        while i < len(order) and ends[order[i]] <= barrier + w:
            batch.append(order[i])
            i += 1
        free += sum(sizes[b] for b in batch)
        w *= 2
        while i < len(order) and ends[order[i]] > barrier + w:
            w *= 2
        if free >= need:
            last = ends[batch[-1]]
            return last if last > now else now + 1
    return k.INF


def test_will_run_start_on_the_logged_case():
    # seen in a slurmctld log: 8 one-node jobs ending (by limit) at these Unix seconds, one node
    # free, a 2-node job: Slurm planned it at the LAST end (all in one batch), not at 139
    ends = np.array([139, 143, 143, 149, 151, 151, 152, 152], np.int64) + 1_795_623_540
    running = np.arange(8, dtype=np.int64)
    got = k.will_run_start(
        ends[0] - 120,
        1,
        running,
        8,
        ends - 60,
        np.full(8, 60, np.int64),
        np.ones(8, np.int64),
        2,
        30,
    )
    assert got == ends[-1]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(101, 400), st.integers(1, 3)), min_size=0, max_size=8),
    st.integers(0, 3),
    st.integers(1, 12),
    st.sampled_from([1, 7, 30]),
)
def test_will_run_start_matches_the_reference(jobs, free, need, window):
    ends = [e for e, _ in jobs]
    sizes = [s for _, s in jobs]
    n = len(jobs)
    got = k.will_run_start(
        100,
        free,
        np.arange(n, dtype=np.int64),
        n,
        np.array(ends, np.int64).reshape(n) - 50,
        np.full(n, 50, np.int64),
        np.array(sizes, np.int64).reshape(n),
        need,
        window,
    )
    assert got == _will_run_reference(100, free, ends, sizes, need, window)


def _node_case():
    # 4 nodes. X (node 0) ends at 5; A, B, D hold nodes 1-3 until 100. H (3 nodes) waits for
    # them; C (1 node, limit 150) could run on node 0 from 5 by counts (4 free at 100, 3 reserved)
    # but Slurm reserves the lowest nodes free at 100, node 0 among them, so C waits
    return Jobs.build(
        submit_s=[0, 0, 0, 0, 1, 1],
        nodes=[1, 1, 1, 1, 3, 1],
        limit_s=[10, 100, 100, 100, 60, 150],
        runtime_s=[5, 100, 100, 100, 10, 10],
        job_id=[0, 1, 2, 3, 4, 5],
    )


def test_named_node_reservation_keeps_backfill_off_reserved_idle_nodes():
    base = dict(backfill="easy", bf_interval_s=1, bf_resolution_s=1)
    counts = Simulator(_node_case(), 4, SchedulerConfig(**base)).run()
    named = Simulator(_node_case(), 4, SchedulerConfig(**base, bf_reserve_nodes=True)).run()
    assert counts.start_s[5] == 6 and counts.start_s[4] == 100  # the backfill pass after 5
    assert named.start_s[5] == 100 and named.start_s[4] == 100


def test_new_options_default_off_and_validated():
    c = SchedulerConfig()
    assert c.bf_will_run_window_s == 0 and c.bf_reserve_nodes is False
    with pytest.raises(InvalidInputError):
        SchedulerConfig(backfill="slurm", bf_reserve_nodes=True)
    with pytest.raises(InvalidInputError):
        SchedulerConfig(backfill="easy", bf_reserve_nodes=True, reserve_whole_node=True)
    with pytest.raises(InvalidInputError):
        SchedulerConfig(bf_will_run_window_s=-1)


def test_plot_marks_the_out_of_order_jobs(tmp_path):
    from benchmarks.slurm_fidelity import main, plot

    rows = [
        {"id": i, "slurm_start": s, "sim_start": t, "submit": 0, "cpus": 1}
        for i, (s, t) in enumerate([(0, 0), (10, 30), (20, 12), (30, 31)])
    ]
    result = [
        {"mode": "easy", "same_order_pct": 50.0, "longest_common_order_pct": 75.0, "per_job": rows}
    ]
    png = plot(result, tmp_path / "f.png")
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    saved = tmp_path / "r.json"
    saved.write_text(__import__("json").dumps(result))
    assert main(["--replot", str(saved), "--plot", str(tmp_path / "g.png")]) == 0
    assert (tmp_path / "g.png").exists()
    with pytest.raises(SystemExit) as err:  # argparse's one-line error, exit 2
        main(["--replot", str(tmp_path / "f.png"), "--plot", str(tmp_path / "h.png")])
    assert err.value.code == 2


# -- jobs that end on a whole second (--end-on-second) ---------------------------------------------
def _run_job_script(command: str, tmp_path, squeue_prints: str | None) -> tuple[float, float]:
    """Run a job script as sbatch --wrap would (sh), with a stand-in ``squeue`` on PATH that
    prints ``squeue_prints`` (or fails); returns (wall time before, wall time after)."""
    import os
    import subprocess
    import time

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "squeue"
    body = f"echo '{squeue_prints}'" if squeue_prints is not None else "exit 1"
    fake.write_text(f"#!/bin/sh\n{body}\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", SLURM_JOB_ID="7")
    before = time.time()
    subprocess.run(["sh", "-c", command], env=env, check=True, timeout=10)
    return before, time.time()


def test_whole_second_job_ends_on_its_recorded_start_plus_runtime(tmp_path):
    """The script reads the start Slurm recorded (squeue %S with SLURM_TIME_FORMAT=%s) and ends
    just after that second + runtime, wherever in the second it began; without squeue, from its
    own start second."""
    import time

    from benchmarks.slurm_replay import END_AFTER_S, whole_second_command

    time.sleep(1.0 - time.time() % 1.0 + 0.3)  # begin 0.3 s into a second
    recorded = int(time.time()) - 1  # Slurm "started" it a second earlier
    _, after = _run_job_script(whole_second_command(2), tmp_path, str(recorded))
    assert recorded + 2 + END_AFTER_S <= after < recorded + 2 + END_AFTER_S + 0.25
    before, after = _run_job_script(whole_second_command(1), tmp_path, None)
    assert int(before) + 1 + END_AFTER_S <= after < int(before) + 1 + END_AFTER_S + 0.25
    for bad in (0, 1.5, -2):
        with pytest.raises(ValueError):
            whole_second_command(bad)


def test_resimulate_compares_a_saved_run_again():
    """A saved run's Slurm side goes through the current simulator again: FCFS on one node, jobs
    back to back (each ended on a whole second), matches at release delay 0 and not at 1; the
    end-on-second rule passes backfill in the second of a change."""
    from benchmarks.slurm_fidelity import resimulate

    per_job = [
        {
            "id": 10 + i,
            "slurm_job_id": i + 1,
            "submit": 0.0,
            "cpus": 1,
            "limit_min": 1,
            "runtime_s": 2,
            "slurm_start": 2.0 * i,
            "slurm_end": 2.0 * i + 2,
        }
        for i in range(4)
    ]
    saved = {
        "mode": "fcfs",
        "nodes": 1,
        "nodes_as": "slurm-nodes",
        "release_delay_s": 0,
        "end_on_second": True,
        "t0_unix": 1_700_000_000,
        "per_job": per_job,
    }
    again = resimulate(saved)
    assert again["bf_interval_s"] == 0 and again["ran_their_runtime"] == 4
    assert again["same_order_pct"] == 100.0 and again["mean_abs_wait_error_s"] == 0.0
    assert [r["sim_start"] for r in again["per_job"]] == [0, 2, 4, 6]
    late = resimulate(saved, release_delay_s=1)
    assert [r["sim_start"] for r in late["per_job"]] == [0, 3, 6, 9]
    assert late["mean_abs_wait_error_s"] > 0
    assert resimulate(dict(saved, end_on_second=False))["bf_interval_s"] == 1
