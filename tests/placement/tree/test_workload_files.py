"""Seed 002's stream on a real job list: ``Workload.from_file`` reads the
authors' published format, SWF and sacct (the last two through the batch trace loaders), reports
what it read, skipped and changed, and ``--workload FILE`` feeds ``tjap generate windows``,
``tjap online``, ``tjap bench exact`` and the paper reproductions of benchmarks/ (``python -m
benchmarks.sa_tables``, ``benchmarks.online``); bad files are one line and exit 2."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest
from cli_calls import assert_one_line_error, run

from tjap import FatTree, InvalidInputError
from tjap.cli import main
from tjap.placement.batch.traces import bundled_trace, load_trace
from tjap.placement.tree.stream import generate_windows, window_stream
from tjap.placement.tree.workload import FILE_FORMATS, Workload, WorkloadReport


def run_command(capsys, *argv):
    """``tjap argv`` in-process, or with ``argv = (benchmarks.NAME, *rest)`` that module's main;
    (exit code, stdout, stderr)."""
    if not argv[0].startswith("benchmarks."):
        return run(capsys, *argv)
    code = importlib.import_module(argv[0]).main([str(a) for a in argv[1:]])
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, lines) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def authors_file(path: Path, workload: Workload, first_id: int = 1, offset: int = 0) -> Path:
    """``workload`` in the authors' format (as their data/generate.py writes it: two spaces)."""
    return write(
        path,
        [
            f"{first_id + k}  {a + offset}  {r}  {n}"
            for k, (a, r, n) in enumerate(
                zip(
                    workload.arrival_s.tolist(),
                    workload.runtime_s.tolist(),
                    workload.requested_nodes.tolist(),
                )
            )
        ],
    )


def swf_line(job_id, submit, run, procs, req_procs=-1, preceding=-1):
    """An 18-field SWF record with the fields the loader reads (the others unknown)."""
    fields = [
        job_id,
        submit,
        0,
        run,
        procs,
        -1,
        -1,
        req_procs,
        -1,
        -1,
        1,
        7,
        -1,
        -1,
        -1,
        -1,
        preceding,
        -1,
    ]
    return " ".join(str(f) for f in fields)


def arrays(workload: Workload) -> dict:
    return {
        "arrival_s": workload.arrival_s.tolist(),
        "runtime_s": workload.runtime_s.tolist(),
        "requested_nodes": workload.requested_nodes.tolist(),
    }


# -- the authors' format -----------------------------------------------------------------------------
def test_authors_format_arrays_and_report(tmp_path):
    path = write(
        tmp_path / "jobs.txt",
        [
            "# id  submit  runtime  nodes",
            "1  25  1386  10",
            "",
            "2  39  450  4   # a comment after the job",
            "3  30  60  2",  # submitted before line 4's job: moved
            "4  45  7.0  1",  # an integral decimal is that integer
            "5  50  10",  # too few fields
            "6  x  10  3",  # not a number
            "7  51  2.5  3",  # not an integer
            "2  60  10  3",  # duplicate id
            "8  61  -1  3",  # negative runtime
            "9  62  10  0",  # no nodes
            "10  70  0  5",  # a zero runtime is kept
        ],
    )
    workload, report = Workload.from_file(path)
    assert isinstance(report, WorkloadReport) and report.format == "authors"
    assert arrays(workload) == {
        "arrival_s": [0, 5, 14, 20, 45],
        "runtime_s": [1386, 60, 450, 7, 0],
        "requested_nodes": [10, 2, 4, 1, 5],
    }
    trace = report.trace
    assert (trace.lines, trace.jobs, trace.skipped) == (11, 5, 6)
    assert trace.skipped_by_reason == {
        "wrong number of fields": {"count": 1, "first_line": 7},
        "non-numeric submit time": {"count": 1, "first_line": 8},
        "non-integer runtime": {"count": 1, "first_line": 9},
        "duplicate job id": {"count": 1, "first_line": 10},
        "negative runtime": {"count": 1, "first_line": 11},
        "no node count": {"count": 1, "first_line": 12},
    }
    assert trace.examples[0] == "line 7: wrong number of fields (expected 4, got 3): 5  50  10"
    assert report.shifted_by_s == 25 and report.jobs == 5
    assert report.changes == {"reordered_by_submit_time": {"count": 1, "first_line": 5}}
    text = report.text()
    assert "1 jobs moved to keep submit order (first line 5)" in text
    assert "nothing rescaled" in text and "6 skipped" in text
    data = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert data["workload"]["rescaled"] is False and data["skipped"] == 6


@pytest.mark.parametrize(
    "extra",
    [
        None,
        "# a comment",
        "",
        "11 5 10 3.0",
        "1 5 10 3",
        "12 5 -1 3",
        "13 5 10 99999999999999999999",
    ],
)
def test_clean_files_read_at_once_as_line_by_line(tmp_path, extra):
    """A clean file is read by NumPy at once, anything else line by line: the same result."""
    from tjap.placement.tree.workload import _authors_clean, _read_authors, _read_authors_lines

    lines = [f"{k + 1}\t{10 * k + 3}  {k * 7 % 50}  {k % 9 + 1}" for k in range(10)]
    path = write(tmp_path / "jobs.txt", lines + ([extra] if extra is not None else []))
    assert (_authors_clean(path) is None) == (extra is not None)
    fast, slow = _read_authors(path), _read_authors_lines(path)
    for a, b in zip(fast[:5], slow[:5]):
        np.testing.assert_array_equal(a, b)
    assert fast[5] == slow[5]


def test_the_generator_in_the_authors_format_gives_the_same_stream(tmp_path):
    """The paper's generator written as the authors' data file (ids from 1, first arrival not 0)
    reads back to the same jobs, and the stream on it is the generator's stream."""
    generated = Workload.generate(3_000, seed=5)
    workload, report = Workload.from_file(
        authors_file(tmp_path / "data_large.txt", generated, offset=25)
    )
    assert arrays(workload) == arrays(generated)
    assert report.shifted_by_s == 25 and report.changes == {}
    from_file = generate_windows("published", 6, seed=5, epoch_windows=3, workload=workload)
    generator = generate_windows("published", 6, seed=5, epoch_windows=3, num_jobs=3_000)
    assert [w.to_dict() for w in from_file] == [w.to_dict() for w in generator]


def test_epochs_start_on_an_empty_cluster_at_random_jobs(tmp_path):
    workload, _ = Workload.from_file(
        authors_file(tmp_path / "jobs.txt", Workload.generate(4_000, seed=1))
    )
    windows = list(
        window_stream(
            FatTree.from_layout("paper"), workload, num_windows=6, epoch_windows=2, seed=3
        )
    )
    firsts = [w for w in windows if w.meta["index"] == 0]
    assert [w.meta["epoch"] for w in firsts] == [0, 1, 2]
    assert all(w.num_idle == 1000 for w in firsts)  # every epoch starts empty
    assert len({w.meta["jobs"][0] for w in firsts}) == 3  # ... at a different job


def test_jobs_larger_than_the_cluster_are_dropped_and_reported(tmp_path):
    path = write(
        tmp_path / "jobs.txt", ["1 0 100 10", "2 5 100 1200", "3 9 100 40", "4 12 100 1001"]
    )
    workload, report = Workload.from_file(path, cluster_nodes=1000)
    assert arrays(workload) == {
        "arrival_s": [0, 9],
        "runtime_s": [100, 100],
        "requested_nodes": [10, 40],
    }
    assert report.changes == {
        "dropped_larger_than_cluster": {"count": 2, "first_job_id": 2, "largest_nodes": 1200}
    }
    assert "2 jobs dropped: more nodes than the cluster's 1000" in report.text()
    kept, _ = Workload.from_file(path)  # no cluster given: nothing dropped
    assert kept.num_jobs == 4
    with pytest.raises(InvalidInputError, match="every job requests more nodes than the cluster"):
        Workload.from_file(path, cluster_nodes=5)


def test_a_short_file_says_how_many_windows_it_gave(tmp_path):
    workload, _ = Workload.from_file(
        authors_file(tmp_path / "jobs.txt", Workload.generate(30, seed=0))
    )
    with pytest.raises(
        InvalidInputError,
        match=r"ran out of jobs in epoch 0 .* after \d+ of its "
        r"50 windows: \d+ of the 50 windows asked",
    ):
        generate_windows("paper", 50, workload=workload)


# -- SWF and sacct, through the batch loaders ------------------------------------------------------
def test_swf_file(tmp_path):
    path = write(
        tmp_path / "trace.swf",
        [
            "; MaxNodes: 64",
            swf_line(1, 100, 50, 4),
            swf_line(2, 130, 20, 8, req_procs=6),  # requested processors win over allocated
            swf_line(3, 120, 70, 2, preceding=1),  # earlier submit: the loader sorts it first
            swf_line(4, 140, -1, 2),  # unknown runtime: skipped by the loader
        ],
    )
    workload, report = Workload.from_file(path)
    assert report.format == "swf"
    assert arrays(workload) == {
        "arrival_s": [0, 20, 30],
        "runtime_s": [50, 70, 20],
        "requested_nodes": [4, 2, 6],
    }
    jobs, trace = load_trace(path)
    assert report.trace == trace  # the loader's own report
    assert trace.skipped_by_reason == {"unknown runtime": {"count": 1, "first_line": 5}}
    assert report.order.startswith("the trace loader's")
    assert any("dependencies (SWF field 17) are not followed" in w for w in report.warnings)


def test_sacct_file(tmp_path):
    path = write(
        tmp_path / "jobs.tsv",
        [
            "JobID\tUser\tSubmit\tStart\tEnd\tTimelimit\tNNodes",
            "10\talice\t2023-01-01T00:00:00\t2023-01-01T00:10:00\t2023-01-01T01:00:00\t120\t2",
            "11\tbob\t2023-01-01T00:05:00\t2023-01-01T00:20:00\t2023-01-01T00:30:00\t60\t16",
            "11.batch\tbob\t2023-01-01T00:05:00\t2023-01-01T00:20:00\t2023-01-01T00:30:00\t60\t1",
            "12\tbob\t2023-01-01T00:06:00\t2023-01-01T00:20:00\t2023-01-01T02:30:00\t60\t1",
        ],
    )
    workload, report = Workload.from_file(path)
    assert report.format == "sacct"
    # job 12 ran 2 h 10 min with a 60 min limit: the loader cuts it to the limit (and says so)
    assert arrays(workload) == {
        "arrival_s": [0, 300, 360],
        "runtime_s": [3000, 600, 3600],
        "requested_nodes": [2, 16, 1],
    }
    assert report.trace.transformations["runtime_cut_to_limit"]["count"] == 1
    assert report.trace.transformations["job_steps_left_out"]["count"] == 1


@pytest.mark.parametrize("name", ["lublin_256", "ls6-a100"])
def test_bundled_traces_load_as_workloads(name):
    path = bundled_trace(name)
    workload, report = Workload.from_file(path, cluster_nodes=1000)
    jobs, trace = load_trace(path)
    big = int((jobs.nodes > 1000).sum())
    assert workload.num_jobs == trace.jobs - big == report.jobs
    assert workload.arrival_s[0] == 0 and (np.diff(workload.arrival_s) >= 0).all()
    assert report.format == {"lublin_256": "swf", "ls6-a100": "sacct"}[name]


@pytest.mark.parametrize("fmt", FILE_FORMATS)
def test_format_is_told_from_the_content_and_can_be_forced(tmp_path, fmt):
    lines = {
        "authors": ["1 0 10 2", "2 5 10 3"],
        "swf": [swf_line(1, 0, 10, 2), swf_line(2, 5, 10, 3)],
        "sacct": [
            "JobID|User|Submit|Start|End|Timelimit|NNodes",
            "1|a|2023-01-01T00:00:00|2023-01-01T00:00:00|2023-01-01T00:00:10|1|2",
            "2|a|2023-01-01T00:00:05|2023-01-01T00:00:05|2023-01-01T00:00:15|1|3",
        ],
    }
    path = write(tmp_path / "jobs.dat", lines[fmt])  # a name that says nothing
    auto, report = Workload.from_file(path)
    forced, _ = Workload.from_file(path, fmt)
    assert report.format == fmt
    assert (
        arrays(auto)
        == arrays(forced)
        == {"arrival_s": [0, 5], "runtime_s": [10, 10], "requested_nodes": [2, 3]}
    )


@pytest.mark.parametrize(
    "name,lines,match",
    [
        ("missing.txt", None, "not found"),
        ("empty.txt", [], "is empty"),
        ("comments.txt", ["# nothing", "# here"], "has no job lines"),
        ("three.txt", ["1 2 3", "4 5 6"], "not in the authors' format"),
        ("words.dat", ["hello world", "foo"], "cannot tell the format"),
        ("all_skipped.txt", ["1 0 -5 2", "2 1 -5 2"], "no usable jobs"),
    ],
)
def test_bad_files(tmp_path, name, lines, match):
    path = tmp_path / name
    if lines is not None:
        write(path, lines) if lines else path.write_text("")
    with pytest.raises(InvalidInputError, match=match):
        Workload.from_file(path)


def test_unknown_format_name(tmp_path):
    with pytest.raises(InvalidInputError, match="unknown workload format"):
        Workload.from_file(write(tmp_path / "jobs.txt", ["1 0 10 2"]), "csv")


# -- the command line --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jobs_file(tmp_path_factory) -> Path:
    return authors_file(
        tmp_path_factory.mktemp("workload") / "jobs.txt",
        Workload.generate(2_000, seed=2),
        offset=25,
    )


def test_generate_windows_from_a_file(capsys, tmp_path, jobs_file):
    out = tmp_path / "w.jsonl"
    code, stdout, err = run(
        capsys,
        "generate",
        "windows",
        "--workload",
        jobs_file,
        "--num-windows",
        3,
        "--out",
        out,
        "--json",
    )
    assert code == 0, err
    data = json.loads(stdout)
    assert data["windows"] == 3 and data["workload"] == str(jobs_file)
    assert data["trace_report"]["format"] == "authors"
    assert data["trace_report"]["workload"]["shifted_by_s"] == 25
    assert len(out.read_text().splitlines()) == 3
    workload, _ = Workload.from_file(jobs_file)
    expected = generate_windows("paper", 3, seed=0, workload=workload)
    assert out.read_text() == "".join(w.to_json() + "\n" for w in expected)
    code, stdout, err = run(
        capsys, "generate", "windows", "--workload", jobs_file, "--num-windows", 3, "--out", out
    )  # the report on stderr
    assert code == 0 and "workload jobs.txt (authors, 2000 jobs)" in stdout
    assert err.startswith("trace jobs.txt (authors): 2000 jobs from 2000 lines")


def test_online_from_a_file(capsys, jobs_file):
    code, stdout, err = run(
        capsys, "online", "--workload", jobs_file, "--num-jobs", 40, "--first-job", 5, "--json"
    )
    assert code == 0, err
    data = json.loads(stdout)
    assert data["jobs"] == 40 and data["trace_report"]["jobs"] == 2000
    code, stdout, err = run(
        capsys, "online", "--workload", jobs_file, "--first-job", 1990, "--policy", "easy", "--json"
    )  # default: the rest of the file
    assert code == 0, err
    assert json.loads(stdout)["jobs"] == 10
    assert_one_line_error(
        *run(capsys, "online", "--workload", jobs_file, "--first-job", 1990, "--num-jobs", 20),
        "ask for at most 10",
    )


def test_bench_table3_from_a_file(capsys, tmp_path, jobs_file):
    code, stdout, err = run_command(
        capsys,
        "benchmarks.sa_tables",
        "table3",
        "--workload",
        jobs_file,
        "--epochs",
        1,
        "--windows-per-epoch",
        2,
        "--freeform-time-limit",
        0.5,
        "--out",
        tmp_path,
        "--quiet",
        "--json",
    )
    assert code == 0, err
    data = json.loads(stdout)
    assert Path(data["csv"]).name == "table3_published_jobs_s0.csv"  # beside the generator's
    assert data["workload"] == str(jobs_file) and data["trace_report"]["jobs"] == 2000
    assert len(Path(data["csv"]).read_text().splitlines()) == 3


def test_bench_online_from_a_file(capsys, tmp_path, jobs_file):
    code, stdout, err = run_command(
        capsys,
        "benchmarks.online",
        "--workload",
        jobs_file,
        "--epochs",
        1,
        "--jobs-per-epoch",
        20,
        "--out",
        tmp_path,
        "--quiet",
    )
    assert code == 0, err
    assert stdout.startswith("workload: jobs.txt (authors, 2000 jobs)")
    assert (tmp_path / "online_paper_jobs_s0.csv").exists()


WORKLOAD_COMMANDS = [
    ("generate", "windows", "--out", "OUT/w.jsonl"),
    ("online",),
    ("bench", "exact", "--num-windows", "1", "--out", "OUT"),
    ("benchmarks.sa_tables", "table3", "--epochs", "1", "--windows-per-epoch", "1", "--out", "OUT"),
    ("benchmarks.sa_tables", "table4", "--epochs", "1", "--windows-per-epoch", "1", "--out", "OUT"),
    ("benchmarks.sa_tables", "nsa", "--epochs", "1", "--windows-per-epoch", "1", "--out", "OUT"),
    ("benchmarks.online", "--epochs", "1", "--out", "OUT"),
]


@pytest.mark.parametrize("command", WORKLOAD_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_bad_workload_files_are_one_line(capsys, tmp_path, command):
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in command]
    bad = {
        "missing.txt": None,
        "empty.txt": "",
        "junk.dat": "hello world\n",
        "three.txt": "1 2 3\n4 5 6\n",
    }
    for name, text in bad.items():
        if text is not None:
            (tmp_path / name).write_text(text)
        assert_one_line_error(
            *run_command(capsys, *argv, "--workload", tmp_path / name, "--quiet"), name
        )
    assert_one_line_error(
        *run_command(capsys, *argv, "--workload-format", "swf", "--quiet"),
        "--workload-format needs --workload FILE",
    )


def test_forced_format_that_does_not_fit_names_the_right_flag(capsys, tmp_path, jobs_file):
    assert_one_line_error(
        *run(capsys, "online", "--workload", jobs_file, "--workload-format", "sacct"),
        str(jobs_file),
    )
    with pytest.raises(SystemExit) as exit_:  # argparse's usage error, as one line
        main(["online", "--workload", str(jobs_file), "--workload-format", "csv"])
    assert_one_line_error(exit_.value.code, *capsys.readouterr(), "--workload-format")


def test_a_short_file_is_one_error_line_after_its_report(capsys, tmp_path):
    path = authors_file(tmp_path / "short.txt", Workload.generate(30, seed=0))
    code, out, err = run(
        capsys,
        "generate",
        "windows",
        "--workload",
        path,
        "--num-windows",
        50,
        "--out",
        tmp_path / "w.jsonl",
    )
    assert code == 2 and "Traceback" not in err
    last = err.splitlines()[-1]
    assert last.startswith("tjap: error: the workload (30 jobs) ran out of jobs")
    assert "of the 50 windows asked were made" in last
    assert not (tmp_path / "w.jsonl").exists()


def test_bench_online_weights_are_for_nsa(capsys, tmp_path):
    assert_one_line_error(
        *run_command(
            capsys,
            "benchmarks.online",
            "--method",
            "dp",
            "--weights",
            "x.json",
            "--epochs",
            1,
            "--out",
            tmp_path,
        ),
        "does not take --weights",
    )
