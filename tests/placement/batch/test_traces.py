"""Trace loaders (tjap.placement.batch.traces): the two shipped traces, SWF and sacct-style parsing,
skipped-line reports, clear errors for files that are not traces, and format guessing."""

from __future__ import annotations

import calendar
import gzip
import hashlib
import json
import random
import time
from pathlib import Path

import numpy as np
import pytest

from tjap.core.errors import InvalidInputError
from tjap.placement.batch.jobs import COLUMNS
from tjap.placement.batch.traces import (
    FORMATS,
    TraceReport,
    bundled_trace,
    default_nodes,
    load_sacct,
    load_swf,
    load_trace,
)

LS6 = bundled_trace("ls6-a100")  # shipped with the package: these tests never skip
LUBLIN = bundled_trace("lublin_256")


def utc(text: str) -> int:
    """Unix seconds of an ISO time read as UTC."""
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def swf_line(job_id, submit, wait, run, procs, req_procs=-1, req_time=-1, user=7, preceding=-1):
    """An 18-field SWF record with the fields the loader reads (the others unknown)."""
    fields = [
        job_id,
        submit,
        wait,
        run,
        procs,
        -1,
        -1,
        req_procs,
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


def write(path: Path, lines) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


SACCT_HEADER = "JobID\tUser\tSubmit\tStart\tEnd\tTimelimit\tNNodes"


def sacct_row(
    job_id,
    start="2023-01-01T00:10:00",
    end="2023-01-01T01:00:00",
    limit="60",
    nodes="2",
    user="alice",
    submit="2023-01-01T00:00:00",
):
    return "\t".join([job_id, user, submit, start, end, limit, nodes])


def write_sacct(path: Path, rows, header=SACCT_HEADER) -> Path:
    return write(path, [header, "-" * 10 + " " + "-" * 10, *rows])


def columns(jobs):
    return {name: getattr(jobs, name).tolist() for name in COLUMNS}


# -- the shipped traces ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    """Both shipped traces loaded once, with their SHA-256 before and after loading."""
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (LS6, LUBLIN)}
    loaded = {LS6: load_trace(LS6), LUBLIN: load_trace(LUBLIN)}
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (LS6, LUBLIN)}
    return loaded, before, after


def test_ls6_loads(shipped):
    jobs, report = shipped[0][LS6]
    assert (report.format, report.lines, report.jobs, report.skipped) == ("sacct", 24777, 24777, 0)
    assert report.examples == () and len(jobs) == 24777
    assert jobs.epoch == 0 and jobs.source == "ls6-a100.tsv"
    assert jobs.meta["steps_skipped"] == 0 and jobs.meta["declared_count"] == 24779
    assert "raw_ids" not in jobs.meta
    assert default_nodes(jobs, report) is None
    row = int(np.flatnonzero(jobs.job_id == 478729)[0])
    assert row == 0  # the earliest submit, lowest id
    assert jobs.nodes[row] == 2
    assert jobs.limit_s[row] == 2880 * 60 == 172800
    assert jobs.submit_s[row] == utc("2022-10-05T11:52:48") == 1664970768
    assert jobs.recorded_start_s[row] == utc("2022-11-01T15:34:14")
    assert jobs.recorded_end_s[row] == utc("2022-11-03T15:34:15")
    # ran one second over its 48 h limit: clipped to the limit, and counted
    assert jobs.runtime_s[row] == 172800
    assert jobs.meta["clipped_runtimes"] > 0 and jobs.meta["limit_from_runtime"] == 0
    assert (jobs.runtime_s <= jobs.limit_s).all() and (jobs.recorded_start_s >= jobs.submit_s).all()


def test_lublin_loads(shipped):
    jobs, report = shipped[0][LUBLIN]
    assert (report.format, report.lines, report.jobs, report.skipped) == ("swf", 10000, 10000, 0)
    assert report.header["MaxNodes"] == 256 and report.header["Version"] == 2
    assert default_nodes(jobs, report) == 256
    assert jobs.epoch is None  # no UnixStartTime header
    first = (jobs.job_id[0], jobs.submit_s[0], jobs.runtime_s[0], jobs.nodes[0])
    assert first == (1, 5094, 12072, 16)
    # no requested times: every limit is the runtime (at least 1 s)
    assert jobs.meta["limit_from_runtime"] == 10000 and jobs.meta["clipped_runtimes"] == 0
    assert (jobs.limit_s == np.maximum(jobs.runtime_s, 1)).all()
    assert (jobs.recorded_start_s == -1).all() and (jobs.depends_on == -1).all()


def test_loading_does_not_modify_the_files(shipped):
    _, before, after = shipped
    assert before == after


# -- SWF -------------------------------------------------------------------------------------------
def test_swf_gz_gives_the_same_table(tmp_path):
    lines = [
        "; MaxProcs: 64",
        "; UnixStartTime: 1000000",
        *(swf_line(i, 10 * i, i % 3, 100 + i, 1 + i % 4, req_time=200) for i in range(1, 30)),
    ]
    plain = write(tmp_path / "small.swf", lines)
    packed = tmp_path / "small.swf.gz"
    with gzip.open(packed, "wt") as f:
        f.write(plain.read_text())
    jobs, report = load_trace(plain)
    gz_jobs, gz_report = load_trace(packed)
    assert columns(gz_jobs) == columns(jobs) and gz_jobs.epoch == jobs.epoch == 1000000
    assert gz_report.header == report.header and gz_report.jobs == report.jobs == 29


def test_swf_skips_bad_lines_and_reports_them(tmp_path):
    path = write(
        tmp_path / "bad.swf",
        [
            "; UnixStartTime: 1000000",
            "; MaxProcs: 64",
            swf_line(1, 0, 5, 100, 4, req_procs=4, req_time=200),  # kept
            "",
            swf_line(2, 10, -1, 50, 8),  # kept: limit from runtime
            "3 20 0 30 2 -1",  # line 6: 6 fields
            swf_line(4, 30, 0, 10, 2).replace(" 10 ", " abc ", 1),  # line 7: non-numeric run time
            swf_line(1, 40, 0, 10, 1, req_time=60),  # line 8: duplicate id
            swf_line(5, 50, 0, -1, 1, req_time=60),  # line 9: unknown runtime
            swf_line(6, 60, 0, 10, -1, req_time=60),  # line 10: no processors
            swf_line(7, 70, 2, 500, 2, req_time=300, user=-1),  # kept: runtime clipped to 300
            swf_line(8, 80, 0, 5, 1, req_time=0),  # kept: limit from runtime
        ],
    )
    jobs, report = load_swf(path)
    assert jobs.job_id.tolist() == [1, 2, 7, 8]
    assert jobs.nodes.tolist() == [4, 8, 2, 1]
    assert jobs.limit_s.tolist() == [200, 50, 300, 5]
    assert jobs.runtime_s.tolist() == [100, 50, 300, 5]
    assert jobs.recorded_start_s.tolist() == [5, -1, 72, 80]
    assert jobs.recorded_end_s.tolist() == [105, -1, 572, 85]
    assert jobs.num_users == 2 and jobs.user[0] == jobs.user[3] != jobs.user[2]
    assert jobs.meta["limit_from_runtime"] == 2 and jobs.meta["clipped_runtimes"] == 1
    assert (report.lines, report.jobs, report.skipped) == (9, 4, 5)
    assert [e.split(":")[0] for e in report.examples] == [f"line {n}" for n in (6, 7, 8, 9, 10)]
    assert "wrong number of fields (expected 18, got 6): 3 20 0 30 2 -1" in report.examples[0]
    assert "non-numeric run time 'abc'" in report.examples[1]
    assert "duplicate job id" in report.examples[2]
    assert "unknown runtime" in report.examples[3]
    assert "no processor count" in report.examples[4]
    assert jobs.epoch == 1000000 and default_nodes(jobs, report) == 64
    assert "5 skipped" in report.summary()


def test_swf_tolerates_decimals_crlf_and_a_byte_order_mark(tmp_path):
    path = tmp_path / "pwa.swf"
    text = "; MaxNodes: 8\r\n" + swf_line(1, 0, 0, 10, 2).replace(" -1 -1 ", " 3.75 -1 ", 1)
    path.write_bytes(b"\xef\xbb\xbf" + (text + "\r\n").encode())
    jobs, report = load_swf(path)
    assert report.header == {"MaxNodes": 8} and (report.jobs, report.skipped) == (1, 0)
    assert (jobs.runtime_s[0], jobs.nodes[0]) == (10, 2)


def test_swf_examples_are_truncated_and_capped(tmp_path):
    path = write(
        tmp_path / "long.swf",
        [swf_line(1, 0, 0, 10, 1)] + [f"{i} " + "x" * 200 for i in range(2, 12)],
    )
    jobs, report = load_swf(path)
    assert len(jobs) == 1 and report.skipped == 10 and len(report.examples) == 5
    assert all(e.endswith("x" * 10) and len(e.split(": ", 2)[2]) == 80 for e in report.examples)


def test_swf_dependencies(tmp_path):
    path = write(
        tmp_path / "deps.swf",
        [
            swf_line(1, 0, 0, 10, 1),
            swf_line(2, 5, 0, 10, 1, preceding=1),  # kept
            swf_line(3, 6, 0, 10, 1, preceding=3),  # on itself: dropped
            swf_line(4, 7, 0, 10, 1, preceding=5),  # on a later job: dropped
            swf_line(5, 8, 0, 10, 1, preceding=99),  # on an unknown job: dropped
        ],
    )
    jobs, _ = load_swf(path)
    assert jobs.depends_on.tolist() == [-1, 0, -1, -1, -1]
    assert jobs.meta["dropped_dependencies"] == 3


def test_default_nodes_passes_over_a_header_smaller_than_the_jobs(tmp_path):
    path = write(
        tmp_path / "procs.swf", ["; MaxNodes: 4", "; MaxProcs: 32", swf_line(1, 0, 0, 10, 16)]
    )
    assert default_nodes(*load_swf(path)) == 32
    path = write(
        tmp_path / "small.swf", ["; MaxNodes: 4", "; MaxProcs: 8", swf_line(1, 0, 0, 10, 16)]
    )
    assert default_nodes(*load_swf(path)) == 8  # neither fits: the larger, for the caller to reject
    path = write(tmp_path / "none.swf", [swf_line(1, 0, 0, 10, 16)])
    assert default_nodes(*load_swf(path)) is None


def test_not_swf_files_raise_helpful_errors(tmp_path):
    as_json = tmp_path / "trace.swf"
    as_json.write_text(json.dumps({"jobs": [{"id": 1, "nodes": 2}]}, indent=1))
    with pytest.raises(InvalidInputError, match=r"trace\.swf is not an SWF trace.*JSON"):
        load_swf(as_json)
    noise = tmp_path / "noise.swf"
    noise.write_bytes(b"\0" + random.Random(4).randbytes(20000))
    with pytest.raises(InvalidInputError, match=r"noise\.swf is not an SWF trace.*binary data"):
        load_swf(noise)
    sacct = write_sacct(tmp_path / "sacct.swf", [sacct_row(str(i)) for i in range(3)])
    with pytest.raises(InvalidInputError, match=r"not an SWF trace.*use --format sacct"):
        load_swf(sacct)
    only_header = write(tmp_path / "header.swf", ["; MaxNodes: 4"])
    with pytest.raises(InvalidInputError, match="header.swf has no job lines"):
        load_swf(only_header)
    unusable = write(tmp_path / "unusable.swf", [swf_line(1, 0, 0, -1, 1)])
    with pytest.raises(InvalidInputError, match="no usable jobs.*unknown runtime"):
        load_swf(unusable)


def test_sacct_trace_as_swf_gives_up_early():
    with pytest.raises(
        InvalidInputError, match=r"ls6-a100\.tsv is not an SWF trace.*--format sacct"
    ):
        load_swf(LS6)


def test_file_errors(tmp_path):
    with pytest.raises(InvalidInputError, match=r"trace file .*missing\.swf not found"):
        load_trace(tmp_path / "missing.swf")
    with pytest.raises(InvalidInputError, match="is a directory"):
        load_swf(tmp_path)
    (tmp_path / "empty.tsv").write_text("")
    with pytest.raises(InvalidInputError, match=r"empty\.tsv is empty"):
        load_trace(tmp_path / "empty.tsv")
    broken = tmp_path / "broken.swf.gz"
    broken.write_bytes(b"\x1f\x8b" + bytes(range(200)))
    with pytest.raises(InvalidInputError, match=r"cannot read trace file .*broken\.swf\.gz"):
        load_trace(broken)


# -- sacct -----------------------------------------------------------------------------------------
def test_sacct_limits_unknown_times_steps_and_arrays(tmp_path):
    path = write_sacct(
        tmp_path / "jobs.tsv",
        [
            sacct_row("10", limit="1-02:03:04"),
            sacct_row("11", limit="02:03:04", user="bob"),
            sacct_row("12", limit="03:04"),  # 184 s: the 3000 s runtime is clipped
            sacct_row("13", limit="UNLIMITED"),  # limit = runtime
            sacct_row("14", limit="30"),  # minutes
            sacct_row("14.batch"),  # a step: not a job
            sacct_row("15", start="Unknown"),  # line 9
            sacct_row("16", end="None"),  # line 10
            sacct_row("17_1", nodes="1"),
            sacct_row("17_2", nodes="1", start="2023-01-01T00:20:00"),
            sacct_row("18", limit="soon"),  # line 13
            sacct_row("19") + "\textra",  # line 14
            sacct_row("20", submit="yesterday"),  # line 15
        ],
    )
    jobs, report = load_sacct(path)
    assert (report.lines, report.jobs, report.skipped) == (13, 7, 5)
    assert jobs.meta["steps_skipped"] == 1
    assert report.lines == report.jobs + report.skipped + jobs.meta["steps_skipped"]
    assert jobs.job_id.tolist() == [10, 11, 12, 13, 14, 15, 16]  # fresh ids after the largest kept
    assert jobs.meta["raw_ids"] == ["10", "11", "12", "13", "14", "17_1", "17_2"]
    assert jobs.limit_s.tolist() == [93784, 7384, 184, 3000, 1800, 3600, 3600]
    assert jobs.runtime_s.tolist() == [3000, 3000, 184, 3000, 1800, 3000, 2400]
    assert jobs.meta["limit_from_runtime"] == 1 and jobs.meta["clipped_runtimes"] == 2
    assert jobs.submit_s[0] == utc("2023-01-01T00:00:00") and jobs.epoch == 0
    assert jobs.recorded_start_s[0] == utc("2023-01-01T00:10:00")
    assert jobs.num_users == 2 and jobs.nodes.tolist() == [2, 2, 2, 2, 2, 1, 1]
    assert report.header["columns"] == tuple(SACCT_HEADER.split("\t"))
    assert [e.split(":")[0] for e in report.examples] == [f"line {n}" for n in (9, 10, 13, 14, 15)]
    assert "unknown runtime" in report.examples[0] and "unknown runtime" in report.examples[1]
    assert "bad Timelimit 'soon'" in report.examples[2]
    assert "wrong number of fields (expected 7, got 8)" in report.examples[3]
    assert "bad Submit time 'yesterday'" in report.examples[4]


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("1-02:03:04", 93784),
        ("2-00", 172800),
        ("1-01:30", 91800),
        ("02:03:04", 7384),
        ("03:04", 184),
        ("2880", 172800),
        ("0", 1),
        ("UNLIMITED", None),
        ("Partition_Limit", None),
        ("-1", "bad"),
        ("1:2:3:4", "bad"),
        ("1-", "bad"),
        ("soon", "bad"),
        ("", "bad"),
    ],
)
def test_sacct_time_limit_forms(tmp_path, text, seconds):
    """Slurm's time limit forms; UNLIMITED takes the runtime (3000 s), 0 becomes 1 s."""
    path = write_sacct(
        tmp_path / "limits.tsv", [sacct_row("1", limit="60"), sacct_row("2", limit=text)]
    )
    jobs, report = load_sacct(path)
    if seconds == "bad":
        assert report.skipped == 1 and f"bad Timelimit {text!r}" in report.examples[0]
    else:
        assert jobs.limit_s[1] == (3000 if seconds is None else seconds)
        assert jobs.meta["limit_from_runtime"] == (seconds is None)


def test_sacct_pipe_separated_with_count_and_aliases(tmp_path):
    path = write(
        tmp_path / "dump.sacct",
        [
            "2",
            "JobIDRaw|UID|Submit|Start|End|TimelimitRaw|AllocNodes|",
            "5|1001|2023-01-01T00:00:00|2023-01-01T00:00:10|2023-01-01T00:01:10|2|3|",
            "6|1002|2023-01-01T00:00:00|2023-01-01T00:00:10|2023-01-01T00:00:20|2|1|",
        ],
    )
    jobs, report = load_trace(path)
    assert report.format == "sacct" and jobs.meta["declared_count"] == 2
    assert jobs.nodes.tolist() == [3, 1] and jobs.runtime_s.tolist() == [60, 10]
    assert jobs.limit_s.tolist() == [120, 120] and jobs.num_users == 2


def test_sacct_errors(tmp_path):
    missing = write_sacct(tmp_path / "missing.tsv", [], header="JobID\tSubmit\tStart\tNNodes")
    with pytest.raises(InvalidInputError, match=r"missing\.tsv.*lacks column.*UID or User.*End"):
        load_sacct(missing)
    swf = write(tmp_path / "trace.tsv", ["; MaxNodes: 4", swf_line(1, 0, 0, 10, 1)])
    with pytest.raises(
        InvalidInputError, match=r"trace\.tsv is not a sacct-style trace.*use --format swf"
    ):
        load_sacct(swf)
    no_rows = write_sacct(tmp_path / "norows.tsv", [])
    with pytest.raises(InvalidInputError, match=r"norows\.tsv has no job lines"):
        load_sacct(no_rows)
    garbage = write_sacct(tmp_path / "garbage.tsv", ["a b c"] * 25 + [sacct_row("1")])
    with pytest.raises(InvalidInputError, match=r"is not a sacct-style trace.*wrong number"):
        load_sacct(garbage)


# -- format guessing -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, expected",
    [
        ("a.swf", "swf"),
        ("a.SWF", "swf"),
        ("a.tsv", "sacct"),
        ("a.txt", "sacct"),
        ("a.sacct", "sacct"),
    ],
)
def test_format_from_name(tmp_path, name, expected):
    if expected == "swf":
        path = write(tmp_path / name, [swf_line(1, 0, 0, 10, 1)])
    else:
        path = write_sacct(tmp_path / name, [sacct_row("1")])
    assert load_trace(path)[1].format == expected


def test_format_from_content_and_errors(tmp_path):
    swf = write(tmp_path / "trace.log", ["; Version: 2", swf_line(1, 0, 0, 10, 1)])
    sacct = write_sacct(tmp_path / "trace.dat", [sacct_row("1")])
    assert load_trace(swf)[1].format == "swf"
    assert load_trace(sacct)[1].format == "sacct"
    assert load_trace(sacct, "SACCT")[1].format == "sacct"
    prose = write(tmp_path / "notes.md", ["# a note", "nothing to see"])
    with pytest.raises(
        InvalidInputError, match=r"cannot tell the format .*notes\.md.*--format swf"
    ):
        load_trace(prose)
    with pytest.raises(InvalidInputError, match=r"unknown trace format 'csv'; allowed: swf, sacct"):
        load_trace(swf, "csv")
    assert FORMATS == ("swf", "sacct")


def test_report_is_a_frozen_value(tmp_path):
    _, report = load_trace(write(tmp_path / "a.swf", [swf_line(1, 0, 0, 10, 1)]))
    assert isinstance(report, TraceReport) and hash(report) is not None
    with pytest.raises(AttributeError):
        report.jobs = 2
