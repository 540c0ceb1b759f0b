"""``tjap simulate`` and ``python -m benchmarks.batch_sim`` end to end on the shipped traces and
crafted files."""

from __future__ import annotations

import json

from tjap.cli import main
from tjap.placement.batch.traces import bundled_trace

LS6 = bundled_trace("ls6-a100")  # shipped with the package: these tests never skip
LUBLIN = bundled_trace("lublin_256")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err, fragment):
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("tjap: error:") and fragment in err, err


def test_simulate_json_on_both_traces(capsys, tmp_path):
    code, out, _ = run(
        capsys,
        "simulate",
        "--trace",
        LUBLIN,
        "--backfill",
        "conservative",
        "--json",
        "--plot",
        tmp_path / "p.png",
        "--per-job",
        tmp_path / "jobs.csv",
    )
    data = json.loads(out)
    assert code == 0 and data["jobs"] == 10_000 and data["skipped_lines"] == 0
    assert data["nodes"] == 256 and 0 < data["utilization"] <= 1 and data["makespan_s"] > 0
    for key in ("mean_wait_s", "runtime_s", "p95_wait_s", "mean_bounded_slowdown"):
        assert key in data
    assert (tmp_path / "p.png").stat().st_size > 0
    assert len((tmp_path / "jobs.csv").read_text().splitlines()) == 10_001
    code, out, _ = run(
        capsys,
        "simulate",
        "--trace",
        LS6,
        "--nodes",
        76,
        "--start",
        "2023-03-01",
        "--days",
        7,
        "--json",
    )
    assert code == 0 and 0 < json.loads(out)["jobs"] < 3000


def test_simulate_warm_start_reports_months(capsys):
    code, out, _ = run(
        capsys,
        "simulate",
        "--trace",
        LS6,
        "--nodes",
        76,
        "--start",
        "2023-02-01",
        "--days",
        30,
        "--warm-start",
        "--json",
    )
    months = json.loads(out)["months"]
    assert code == 0 and "2023-02" in [m["month"] for m in months]
    assert all(m["simulated_mean_wait_h"] >= 0 and m["recorded_mean_wait_h"] >= 0 for m in months)


def test_simulate_bad_input(capsys, tmp_path):
    one_line_error(*run(capsys, "simulate", "--trace", LS6)[::2], "pass --nodes N")
    one_line_error(*run(capsys, "simulate", "--trace", LS6, "--nodes", 8)[::2], "--nodes 64")
    one_line_error(
        *run(capsys, "simulate", "--trace", LUBLIN, "--start", "2020-01-01")[::2], "UnixStartTime"
    )
    one_line_error(
        *run(capsys, "simulate", "--trace", LS6, "--nodes", 76, "--start", "March")[::2], "ISO date"
    )
    one_line_error(
        *run(capsys, "simulate", "--trace", LS6, "--nodes", 76, "--backfill", "eager")[::2],
        "backfill must be one of",
    )
    one_line_error(*run(capsys, "simulate", "--trace", tmp_path / "nope.swf")[::2], "not found")
    junk = tmp_path / "junk.swf"
    junk.write_text('{"jobs": []}\n')
    one_line_error(*run(capsys, "simulate", "--trace", junk)[::2], "not an SWF trace")


def test_bench_batch_small(capsys, tmp_path):
    from benchmarks import batch_sim

    code = batch_sim.main(
        [
            str(a)
            for a in (
                "--trace",
                LS6,
                "--repeats",
                1,
                "--sizes",
                "2000,4000",
                "--out",
                tmp_path,
                "--json",
            )
        ]
    )
    out = capsys.readouterr().out
    data = json.loads(out)
    assert code == 0 and [r["backfill"] for r in data["speed"]][:4] == [
        "none",
        "easy",
        "slurm",
        "conservative",
    ]
    assert [r["jobs"] for r in data["scaling"]] == [2000, 4000]
    assert (tmp_path / "batch_months.png").exists() and (tmp_path / "batch_speed.csv").exists()


def test_provision_evaluate_json(capsys):
    code, out, _ = run(
        capsys,
        "provision",
        "evaluate",
        "--trace",
        LS6,
        "--from",
        "2023-03-01",
        "--to",
        "2023-03-08",
        "--nodes",
        8,
        "--policy",
        "avg",
        "--pairs",
        2,
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and data["pairs"] == 2 and data["policy"] == "avg"
    for key in ("mean_interruption_h", "mean_overlap_h", "zero_interruption_fraction"):
        assert data[key] >= 0
    one_line_error(
        *run(
            capsys,
            "provision",
            "evaluate",
            "--trace",
            LS6,
            "--from",
            "2023-03-01",
            "--to",
            "2023-03-08",
            "--policy",
            "oracle",
        )[::2],
        "unknown provisioner",
    )
