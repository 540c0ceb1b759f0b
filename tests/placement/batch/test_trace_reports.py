"""Trace reports: every loader says what it read, skipped (per reason, with the
first line of each) and changed (runtimes cut, limits from runtimes, extra SWF fields, SWF field 17
dependencies and whether they are followed); ``tjap simulate`` shows the report."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import trace_reference as reference

from tjap.cli import main
from tjap.core.errors import InvalidInputError
from tjap.placement.batch.jobs import COLUMNS
from tjap.placement.batch.traces import bundled_trace, load_sacct, load_swf, load_trace

SACCT_HEADER = "JobID\tUser\tSubmit\tStart\tEnd\tTimelimit\tNNodes"


def swf_line(job_id, submit, wait, run, procs, req_time=-1, preceding=-1, user=7):
    """An 18-field SWF record with the fields the loader reads (the others unknown)."""
    fields = [
        job_id,
        submit,
        wait,
        run,
        procs,
        -1,
        -1,
        -1,
        req_time,
        -1,
        1,
        user,
        -1,
        -1,
        -1,
        -1,
        preceding,
        -1,
    ]
    return " ".join(str(f) for f in fields)


def sacct_row(job_id, start="2023-01-01T00:10:00", end="2023-01-01T01:00:00", limit="60"):
    return "\t".join([job_id, "alice", "2023-01-01T00:00:00", start, end, limit, "2"])


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def swf(tmp_path):
    """An SWF file with known bad lines, extra fields, clipped runtimes and dependencies."""
    return write(
        tmp_path / "mixed.swf",
        [
            "; MaxProcs: 64",  # 1: header
            swf_line(1, 0, 0, 10, 1),  # 2: limit from runtime
            swf_line(2, 5, 0, 500, 2, req_time=300),  # 3: runtime cut to 300
            "3 20 0 30 2 -1",  # 4: too few fields
            swf_line(4, 30, 0, 10, 2) + " 0 0 0",  # 5: 21 fields; limit
            swf_line(5, 40, 0, -1, 1, req_time=60),  # 6: unknown runtime
            "8 1 2",  # 7: too few fields
            swf_line(1, 50, 0, 10, 1, req_time=60),  # 8: duplicate job id
            swf_line(6, 60, 0, 10, 1, req_time=60, preceding=1),  # 9: dependency kept
            swf_line(7, 70, 0, 10, 1, req_time=60, preceding=7),  # 10: on itself
            swf_line(9, 80, 0, 10, 1, req_time=60, preceding=99),  # 11: on no job
            swf_line(10, 90, 0, 10, 1, req_time=60, preceding=11),  # 12: on a later job
            swf_line(11, 100, 0, 900, 1, req_time=600) + " 5",  # 13: 19 fields; cut
            swf_line(12, 110, 0, 10, 1, req_time=60, preceding=5),  # 14: on a skipped job
        ],
    )


def test_swf_report_counts_and_first_lines(swf):
    jobs, report = load_swf(swf)
    assert (report.lines, report.jobs, report.skipped) == (13, 9, 4)
    assert report.skipped_by_reason == {
        "too few fields": {"count": 2, "first_line": 4},
        "unknown runtime": {"count": 1, "first_line": 6},
        "duplicate job id": {"count": 1, "first_line": 8},
    }
    assert report.transformations == {
        "runtime_cut_to_limit": {"count": 2, "first_line": 3},
        "limit_from_runtime": {"count": 2, "first_line": 2},
        "extra_fields_ignored": {"count": 2, "first_line": 5},
    }
    assert report.dependencies == {
        "source": "SWF field 17 (preceding job)",
        "read": 5,
        "first_line": 9,
        "ignored": False,
        "followed": True,
        "kept": 1,
        "dropped": {"a job not in the trace": 2, "the job itself": 1, "a later job": 1},
    }
    assert len(report.warnings) == 1 and "2 line(s) have more than 18 fields" in report.warnings[0]
    assert "up to 21, first line 5" in report.warnings[0]
    # the table agrees with the report
    assert jobs.job_id.tolist() == [1, 2, 4, 6, 7, 9, 10, 11, 12]
    assert jobs.runtime_s.tolist()[1] == 300 and jobs.runtime_s.tolist()[7] == 600
    assert jobs.depends_on.tolist() == [-1, -1, -1, 0, -1, -1, -1, -1, -1]
    assert jobs.meta["clipped_runtimes"] == 2 and jobs.meta["limit_from_runtime"] == 2
    assert jobs.meta["dropped_dependencies"] == 4
    assert json.loads(json.dumps(report.to_dict()))["skipped_by_reason"]["too few fields"] == {
        "count": 2,
        "first_line": 4,
    }


def test_ignore_dependencies_drops_field_17_and_says_so(swf):
    jobs, report = load_trace(swf, ignore_dependencies=True)
    assert (jobs.depends_on == -1).all()
    assert report.dependencies["read"] == 5 and report.dependencies["ignored"] is True
    assert report.dependencies["followed"] is False and report.dependencies["kept"] == 0
    assert "ignored (--ignore-dependencies)" in report.text()


def test_an_swf_file_with_21_fields_is_read_with_one_warning(tmp_path):
    path = write(
        tmp_path / "wide.swf", [swf_line(i, 10 * i, 0, 5, 1) + " 1 2 3" for i in range(1, 31)]
    )
    jobs, report = load_trace(path)
    assert len(jobs) == 30 and report.skipped == 0 and len(report.warnings) == 1
    assert report.transformations["extra_fields_ignored"] == {"count": 30, "first_line": 1}
    sniffed = write(tmp_path / "wide.txt", path.read_text().splitlines())
    assert load_trace(sniffed, "swf")[1].jobs == 30


def test_many_jobs_waiting_for_one_job_are_warned_about(tmp_path):
    path = write(
        tmp_path / "chain.swf",
        [swf_line(1, 0, 0, 1000, 1)] + [swf_line(i, i, 0, 5, 1, preceding=1) for i in range(2, 32)],
    )
    jobs, report = load_swf(path)
    assert report.dependencies["kept"] == 30 and report.dependencies["followed"] is True
    assert any(
        "30 jobs wait for job 1" in w and "--ignore-dependencies" in w for w in report.warnings
    )
    assert load_swf(path, ignore_dependencies=True)[1].warnings == ()


def test_sacct_report(tmp_path):
    path = write(
        tmp_path / "jobs.tsv",
        [
            SACCT_HEADER,
            "-----",  # 1, 2
            sacct_row("10"),  # 3: kept
            sacct_row("11", limit="30"),  # 4: 3000 s cut to 1800
            sacct_row("11.batch"),  # 5: a step
            sacct_row("12", start="Unknown"),  # 6: unknown runtime
            sacct_row("13", limit="soon"),  # 7: bad Timelimit
            sacct_row("14", limit="UNLIMITED"),  # 8: limit from runtime
            sacct_row("15", limit="oops"),  # 9: bad Timelimit
            sacct_row("16") + "\textra\tmore",  # 10: 9 fields
            sacct_row("17", limit="10"),  # 11: cut to 600
        ],
    )
    jobs, report = load_sacct(path)
    assert (report.lines, report.jobs, report.skipped) == (9, 4, 4)
    assert report.skipped_by_reason == {
        "unknown runtime": {"count": 1, "first_line": 6},
        "bad Timelimit": {"count": 2, "first_line": 7},
        "wrong number of fields": {"count": 1, "first_line": 10},
    }
    assert report.transformations == {
        "runtime_cut_to_limit": {"count": 2, "first_line": 4},
        "limit_from_runtime": {"count": 1, "first_line": 8},
        "job_steps_left_out": {"count": 1, "first_line": 5},
    }
    assert report.dependencies["read"] == 0 and report.dependencies["followed"] is False
    assert report.warnings == ()
    text = report.text().splitlines()
    assert text[1] == (
        "  skipped: 1 unknown runtime (first line 6), 2 bad Timelimit (first line "
        "7), 1 wrong number of fields (first line 10)"
    )
    assert text[2].startswith("  changed: 2 runtimes cut to their limit (first line 4)")


def test_the_bundled_ls6_tsv_report_agrees_with_its_table():
    jobs, report = load_trace(bundled_trace("ls6-a100"))
    cut = report.transformations["runtime_cut_to_limit"]
    assert cut["count"] == jobs.meta["clipped_runtimes"] > 0 and cut["first_line"] > 2
    assert report.skipped == sum(r["count"] for r in report.skipped_by_reason.values())


# -- tjap simulate ---------------------------------------------------------------------------------
def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_simulate_json_includes_the_trace_report(capsys, swf):
    code, out, err = run(capsys, "simulate", "--trace", swf, "--json")
    data = json.loads(out)
    assert code == 0 and data["trace_report"] == json.loads(json.dumps(load_swf(swf)[1].to_dict()))
    assert data["skipped_lines"] == 4
    assert err.count("tjap: warning:") == 1 and "more than 18 fields" in err
    code, out, _ = run(capsys, "simulate", "--trace", swf, "--json", "--ignore-dependencies")
    assert json.loads(out)["trace_report"]["dependencies"]["ignored"] is True


def test_simulate_text_sends_the_report_to_stderr(capsys, swf):
    code, out, err = run(capsys, "simulate", "--trace", swf)
    assert code == 0
    _, as_json, _ = run(capsys, "simulate", "--trace", swf, "--json")
    keys = [key for key in json.loads(as_json) if key != "trace_report"]
    assert [line.split()[0] for line in out.splitlines()] == keys  # stdout: the summary only
    block = err.splitlines()
    assert block[0].startswith("trace mixed.swf (swf): 9 jobs from 13 lines, 4 skipped")
    assert len(block) <= 6 and "Traceback" not in err
    assert "2 too few fields (first line 4)" in block[1]
    assert (
        "dependencies: 5 read from SWF field 17 (preceding job) (first line 9); followed: "
        "1 kept" in err
    )


def test_dependencies_are_followed_unless_ignored(capsys, tmp_path):
    path = write(
        tmp_path / "chain.swf",
        [swf_line(1, 0, 0, 1000, 1)] + [swf_line(i, i, 0, 5, 1, preceding=1) for i in range(2, 6)],
    )
    _, out, _ = run(capsys, "simulate", "--trace", path, "--nodes", 8, "--json")
    _, free, _ = run(
        capsys, "simulate", "--trace", path, "--nodes", 8, "--json", "--ignore-dependencies"
    )
    assert json.loads(out)["mean_wait_s"] > 500 and json.loads(free)["mean_wait_s"] == 0


def test_textbook_backfill(capsys, swf):
    code, out, _ = run(capsys, "simulate", "--trace", swf, "--backfill", "textbook", "--json")
    assert code == 0 and json.loads(out)["backfill"] == "textbook"
    code, _, err = run(
        capsys, "simulate", "--trace", swf, "--backfill", "textbook", "--bf-resolution", 5
    )
    assert code == 2 and len(err.splitlines()) == 1 and "--bf-resolution" in err
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for fragment in (
        "textbook",
        "every 30 s",
        "rounded up to 60 s",
        "500 jobs",
        "trace_report",
        "--ignore-dependencies",
    ):
        assert fragment in text, fragment


def test_the_textbook_preset_is_the_per_job_easy_baseline():
    """``SchedulerConfig.textbook_easy`` is the configuration tests/placement/tree/test_online.py checks against
    the plain-Python textbook EASY reference."""
    from tjap.placement.batch.simulator import SchedulerConfig
    from tjap.placement.tree.online import per_job_config

    assert SchedulerConfig.textbook_easy() == per_job_config("easy")


# -- the vectorised readers against the line-by-line oracle -------------------------------------------
def _swf_text(rng) -> str:
    pieces = ["; MaxProcs: 64", "; UnixStartTime: 1000", "", "  ", "\x0c"]
    lines = []
    for _ in range(rng.randrange(1, 40)):
        fields = [
            str(rng.choice([rng.randrange(1, 12), rng.randrange(-2, 3), rng.randrange(10**6)]))
            for _ in range(18)
        ]
        roll = rng.random()
        if roll < 0.06:
            fields = fields[: rng.randrange(1, 18)]  # too few fields
        elif roll < 0.12:
            fields += ["9"] * rng.randrange(1, 4)  # extra fields
        elif roll < 0.16:
            fields[rng.randrange(18)] = rng.choice(
                ["3.75", "abc", "nan", "1e3", "+4", "1_0", "12345678901234567", "٣", "-", "2.5"]
            )
        elif roll < 0.2:
            fields[rng.randrange(18, 21) if len(fields) > 18 else 0] = "x"
        line = rng.choice([" ", "\t", "  "]).join(fields)
        lines.append(rng.choice(["", " ", "\t"]) + line if rng.random() < 0.2 else line)
        if rng.random() < 0.08:
            lines.append(rng.choice(pieces))
    return rng.choice(["\n", "\r\n", "\r"]).join(lines) + rng.choice(["", "\n"])


def _sacct_text(rng) -> str:
    delimiter = rng.choice(["\t", "|"])
    header = delimiter.join(["JobID", "User", "Submit", "Start", "End", "Timelimit", "NNodes"])
    times = [
        "2023-01-01T00:00:00",
        "2023-01-01T00:10:00",
        "2023-01-01T01:00:00",
        "2023-01-01 02:00:00",
        "2023-01-01T01:00:00+01:00",
        "Unknown",
        "None",
        "",
        "2023-13-01T00:00:00",
        "yesterday",
        "2023-01-01T00:10:0x",
    ]
    rows = []
    for _ in range(rng.randrange(1, 40)):
        job = rng.choice(
            [
                str(rng.randrange(1, 15)),
                f"{rng.randrange(1, 9)}.batch",
                f"{rng.randrange(1, 9)}_{rng.randrange(3)}",
                "",
                "007",
                "١٢",
                "12345678901234567",
            ]
        )
        fields = [
            job,
            rng.choice(["alice", "bob", "zoë"]),
            rng.choice(times[:3] + times[5:6]),
            rng.choice(times),
            rng.choice(times),
            rng.choice(["60", "1-02:03:04", "UNLIMITED", "soon", "0", "03:04", "x" * 70]),
            rng.choice(["1", "2", "0", "x", " 3 ", "99999999999999999"]),
        ]
        if rng.random() < 0.1:
            fields.append(rng.choice(["", "extra"]))
        if rng.random() < 0.05:
            fields = fields[:4]
        rows.append(" " + delimiter.join(fields) if rng.random() < 0.1 else delimiter.join(fields))
        if rng.random() < 0.05:
            rows.append(" ")
    preamble = ([str(len(rows))] if rng.random() < 0.3 else []) + [header]
    preamble += ["-" * 5 + delimiter + "-" * 5] if rng.random() < 0.5 else []
    return "\n".join(preamble + rows) + "\n"


def _outcome(load, path):
    try:
        jobs, report = load(path)
    except InvalidInputError as e:
        return str(e)
    return (
        {k: getattr(jobs, k).tolist() for k in COLUMNS},
        jobs.epoch,
        jobs.meta,
        report.to_dict(),
        report.header,
    )


@pytest.mark.parametrize("fmt", ["swf", "sacct"])
def test_vectorised_readers_match_the_line_by_line_oracle(tmp_path, fmt):
    rng = random.Random(20)
    for case in range(150):
        path = tmp_path / f"case{case}.{'swf' if fmt == 'swf' else 'tsv'}"
        path.write_bytes((_swf_text(rng) if fmt == "swf" else _sacct_text(rng)).encode())
        ours = load_swf if fmt == "swf" else load_sacct
        oracle = reference.load_swf if fmt == "swf" else reference.load_sacct
        assert _outcome(ours, path) == _outcome(oracle, path), path.read_text()


def test_jobs_build_maps_dependency_ids_to_rows():
    """Jobs.build's vectorised id -> row mapping against a dictionary."""
    import numpy as np

    from tjap.placement.batch.jobs import Jobs

    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 50):
        ids = rng.choice(np.arange(1, 4 * n + 1), size=n, replace=False)
        submit = rng.integers(0, 5, n)
        deps = rng.choice(np.concatenate([ids, [-1, 0, 10**6]]), size=n)
        jobs = Jobs.build(
            job_id=ids,
            submit_s=submit,
            nodes=np.ones(n),
            limit_s=np.ones(n),
            runtime_s=np.ones(n),
            depends_on_id=np.where(deps == ids, -1, deps),
        )
        row_of = {int(j): r for r, j in enumerate(jobs.job_id)}
        dep_of = dict(zip(ids.tolist(), np.where(deps == ids, -1, deps).tolist()))
        expected = [row_of.get(dep_of[int(j)], -1) for j in jobs.job_id]
        assert jobs.depends_on.tolist() == expected


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files in /proc")
@pytest.mark.parametrize("text, suffix", [("JobID|Foo\n1|2\n", ".tsv"), ("1 0 10 x\n", ".txt")])
def test_a_refused_file_is_closed_at_once(tmp_path, text, suffix):
    """A reader refusing a file closes it before raising: the refused file's handle was kept
    open as long as the error's traceback lived (800 of them in a fuzzing run)."""
    import os

    from tjap.placement.tree.workload import Workload

    path = tmp_path / f"bad{suffix}"
    path.write_text(text)
    read = load_trace if suffix == ".tsv" else (lambda p: Workload.from_file(p, "authors"))
    before = len(os.listdir("/proc/self/fd"))
    errors = []
    for _ in range(20):
        try:
            read(path)
        except InvalidInputError as exc:  # kept, as a test framework keeps them
            errors.append(exc)
    assert len(errors) == 20
    assert len(os.listdir("/proc/self/fd")) <= before + 2
