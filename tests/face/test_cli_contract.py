"""The command line's user contract for bad input and output: every
subcommand answers a bad flag, a bad value, a missing or malformed file and an evaluation of nothing
with exit status 2 and exactly one line ``tjap: error: ...`` on stderr, never a traceback or a
usage block; a closed stdout (``| head``) ends quietly with 141; progress bars go to stderr when
stderr is a terminal.

Most cases run in-process through ``tjap.cli.main`` (fast); the pipe and terminal cases run the
real program. The paper reproductions that ``tjap bench`` handed to benchmarks/ (``python -m
benchmarks.sa_tables``, ``benchmarks.online``, ``benchmarks.batch_sim``) keep the same contract:
their cases name the module first."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tjap.cli import build_parser, main
from tjap.cli.common import EXIT_CLOSED_STDOUT
from tjap.placement.batch.traces import bundled_trace

LS6 = str(bundled_trace("ls6-a100"))
TINY = {"num_nodes": 16, "nodes_per_switch": 2, "switches_per_pod": 2}
WINDOW = {"topology": TINY, "idle_nodes": [0, 4, 5, 6, 7, 15], "job_sizes": [4, 2]}


def leaf_commands(parser=None, path=()) -> list[tuple[str, ...]]:
    """Every runnable ``tjap`` command (a path of subcommand names), read from the parser."""
    parser = parser or build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [path]
    return [
        leaf for name, sp in subs[0].choices.items() for leaf in leaf_commands(sp, path + (name,))
    ]


LEAVES = leaf_commands()


def command_of(argv) -> tuple:
    """``tjap``'s main and ``argv``; for ``argv = [benchmarks.NAME, *rest]``, that module's main
    and ``rest``."""
    if argv and str(argv[0]).startswith("benchmarks."):
        return importlib.import_module(argv[0]).main, argv[1:]
    return main, argv


def run_bad(capsys, argv) -> str:
    """Run ``tjap argv`` (or a benchmarks module, see :func:`command_of`) in-process and check the
    one-line error contract; return the line."""
    command, rest = command_of(argv)
    try:
        code = command([str(a) for a in rest])
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    assert code == 2, f"tjap {' '.join(map(str, argv))}: exit {code}, stderr {err!r}"
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    assert len(lines) == 1, f"tjap {' '.join(map(str, argv))}: stderr {err!r}"
    assert lines[0].startswith("tjap: error: "), lines[0]
    assert "usage:" not in err and out == "", (out, err)
    return lines[0]


@pytest.fixture
def files(tmp_path) -> dict:
    """Bad and good input files, by name."""
    paths = {}
    for name, text in {
        "window": json.dumps(WINDOW),
        "malformed": '{"topology": {"num_nodes": 16,',
        "empty": "",
        "too_big": json.dumps(WINDOW | {"job_sizes": [4, 4]}),
        "negative": json.dumps(WINDOW | {"job_sizes": [-1]}),
        "not_a_window": json.dumps({"hello": "world"}),
        "binary": "\x00\x01\x02 not a trace\n" * 30,
        "topology": "SwitchName=s1 Nodes=a[1-\n",
    }.items():
        paths[name] = tmp_path / (f"{name}.json" if name != "topology" else "topology.conf")
        paths[name].write_text(text)
    paths["missing"] = tmp_path / "no_such_file.json"
    paths["tmp"] = tmp_path
    return paths


def test_every_command_is_found():
    names = {" ".join(leaf) for leaf in LEAVES}
    assert {
        "solve",
        "simulate",
        "provision evaluate",
        "network evaluate",
        "interference evaluate",
        "bench exact",
        "train nsa",
        "methods",
    } <= names and len(names) >= 20


@pytest.mark.parametrize("leaf", LEAVES, ids=" ".join)
def test_unknown_flag_is_one_line(capsys, leaf):
    line = run_bad(capsys, [*leaf, "--no-such-flag"])
    assert "--no-such-flag" in line or "required" in line  # a missing argument comes first
    assert line.endswith(f"(see tjap {' '.join(leaf)} --help)")


@pytest.mark.parametrize("leaf", LEAVES, ids=" ".join)
def test_bad_seed_is_one_line(capsys, leaf):
    line = run_bad(capsys, [*leaf, "--seed", "twelve"])
    assert "--seed" in line and "twelve" in line


# (argv with {name} for a file of the fixture, a fragment of the message)
CASES = [
    # solve: values, files, windows
    (["solve", "{window}", "--time-limit", "-1"], "--time-limit"),
    (["solve", "{window}", "--time-limit", "soon"], "--time-limit"),
    (["solve", "{window}", "--method", "magic"], "magic"),
    (["solve", "{window}", "--convention", "metric"], "--convention"),
    (["solve", "{missing}"], "no_such_file"),
    (["solve", "{malformed}"], "malformed"),
    (["solve", "{empty}"], "empty"),
    (["solve", "{too_big}"], ""),
    (["solve", "{negative}"], ""),
    (["solve", "{not_a_window}"], ""),
    (["solve"], "file"),
    # generate, online, demo, topology
    (["generate", "windows", "--out", "{tmp}/w.jsonl", "--num-windows", "0"], "--num-windows"),
    (["generate", "windows", "--out", "{tmp}/w.jsonl", "--topology", "{missing}"], "no_such_file"),
    (["generate", "windows", "--out", "{tmp}/w.jsonl", "--cap", "many"], "cap"),
    (["generate", "windows"], "--out"),
    (["generate"], "WHAT"),
    (["online", "--num-jobs", "0"], "--num-jobs"),
    (["online", "--policy", "lottery"], "--policy"),
    (["online", "--method", "magic", "--num-jobs", "1"], "magic"),
    (["demo", "--time-limit", "0"], "--time-limit"),
    (["topology", "show", "{missing}"], "no_such_file"),
    (["topology", "show", "{topology}"], ""),
    # bench
    (["bench", "exact", "--num-windows", "-3"], "--num-windows"),
    (["bench", "exact", "--topology", "{missing}"], "no_such_file"),
    (["bench", "table3", "--epochs", "0"], "run python -m benchmarks.sa_tables table3 ..."),
    (["bench", "batch", "--sizes", "ten"], "run python -m benchmarks.batch_sim ..."),
    # the paper reproductions of benchmarks/
    (["benchmarks.batch_sim", "--trace", "{missing}"], "no_such_file"),
    (["benchmarks.batch_sim", "--sizes", "ten"], "--sizes"),
    (["benchmarks.batch_sim", "--start", "2030-01-01"], "2022-10-05"),
    (["benchmarks.sa_tables", "table3", "--epochs", "0"], "--epochs"),
    (["benchmarks.sa_tables", "nsa", "--lookahead", "-2"], "--lookahead"),
    (["benchmarks.sa_tables", "table4", "--workload", "{missing}"], "no_such_file"),
    (["benchmarks.sa_tables", "table5"], "table5"),
    (["benchmarks.online", "--method", "magic"], "magic"),
    (
        ["benchmarks.online", "--epochs", "1", "--no-such-flag"],
        "--no-such-flag (see python -m benchmarks.online --help)",
    ),
    # simulate: files, values, periods outside the trace
    (["simulate", "--trace", "{missing}"], "no_such_file"),
    (["simulate", "--trace", "{binary}"], "binary"),
    (["simulate", "--trace", "{empty}"], "empty"),
    (["simulate", "--trace", LS6, "--nodes", "0"], "--nodes"),
    (["simulate", "--trace", LS6, "--format", "csv"], "--format"),
    (["simulate", "--trace", LS6, "--nodes", "76", "--start", "2023-13-45"], "--start"),
    (
        ["simulate", "--trace", LS6, "--nodes", "76", "--start", "2030-01-01", "--days", "2"],
        "2022-10-05T11:52:48 .. 2023-03-31T23:54:55",
    ),
    (
        ["simulate", "--trace", LS6, "--nodes", "76", "--start", "2030-01-01", "--warm-start"],
        "nothing to simulate",
    ),
    (
        [
            "simulate",
            "--trace",
            LS6,
            "--nodes",
            "76",
            "--start",
            "2021-01-01",
            "--days",
            "3",
            "--warm-start",
        ],
        "2023-03-31",
    ),
    (["simulate"], "--trace"),
    # provision
    (
        ["provision", "evaluate", "--trace", LS6, "--from", "2030-01-01", "--to", "2030-02-01"],
        "2022-10-05T11:52:48 .. 2023-03-31T23:54:55",
    ),
    (
        ["provision", "evaluate", "--trace", LS6, "--from", "2023-13-45", "--to", "2023-03-02"],
        "--from must be",
    ),
    (
        ["provision", "evaluate", "--trace", LS6, "--from", "2023-03-01", "--to", "2023-02-01"],
        "empty",
    ),
    (
        [
            "provision",
            "evaluate",
            "--trace",
            LS6,
            "--from",
            "2023-03-01",
            "--to",
            "2023-03-08",
            "--load",
            "heavy",
            "--pairs",
            "1",
            "--max-tries",
            "1",
            "--seed",
            "3",
        ],
        "heavy load",
    ),
    (
        [
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
        ],
        "oracle",
    ),
    (
        [
            "provision",
            "evaluate",
            "--trace",
            "{missing}",
            "--from",
            "2023-03-01",
            "--to",
            "2023-03-08",
        ],
        "no_such_file",
    ),
    (
        [
            "provision",
            "evaluate",
            "--trace",
            LS6,
            "--from",
            "2023-03-01",
            "--to",
            "2023-03-08",
            "--load",
            "extreme",
        ],
        "--load",
    ),
    (["provision", "calibrate", "--trace", LS6, "--weights", "0"], "--weights"),
    (["provision", "live", "--compress", "0"], "--compress"),
    # network, interference, train, methods
    (["network", "evaluate", "--servers", "100"], "--servers"),
    (["network", "evaluate", "--requests", "0"], "--requests"),
    (["network", "evaluate", "--policy", "oracle", "--requests", "1", "--seeds", "1"], "oracle"),
    (["interference", "evaluate", "--topology", "torus"], "--topology"),
    (
        ["interference", "evaluate", "--k", "4", "--intervals", "1", "--rate", "0.0001"],
        "no job arrives",
    ),
    (["interference", "evaluate", "--trace", LS6], "--arrivals trace"),
    (
        ["interference", "evaluate", "--arrivals", "trace", "--trace", "{missing}", "--k", "4"],
        "no_such_file",
    ),
    (["interference", "fit", "--samples", "0"], "--samples"),
    (["train", "nsa", "--arch", "rnn"], "--arch"),
    (["train", "network", "--envs", "0"], "--envs"),
    (["train", "interference", "--expert", "oracle"], "--expert"),
    (["methods", "--system", "quantum"], "--system"),
    # slurm: refused before any Slurm command runs
    (["slurm", "place", "--interval", "-1"], "interval"),
    (["slurm", "place", "--interval", "soon"], "--interval"),
    (["slurm", "place", "--method", "magic", "--once"], "magic"),
    (["slurm", "place", "--cap", "zero"], "--cap"),
    (["slurm", "place", "--backfill", "conservative"], "--backfill"),
    (["slurm", "place", "--retries", "-2"], "retries"),
    (["slurm", "place", "--users", ","], "user name"),
    (["slurm", "place", "--time-limit", "-3"], "time limit"),
    (["slurm", "advise", "--method", "magic"], "magic"),
    (["frobnicate"], "frobnicate"),
    ([], "COMMAND"),
]


@pytest.mark.parametrize(
    "argv, fragment", CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else None
)
def test_bad_input_is_one_line(capsys, files, argv, fragment):
    line = run_bad(capsys, [a.format(**files) for a in argv])
    assert fragment.format(**files) in line


def test_there_are_at_least_30_bad_inputs():
    assert len(CASES) + 2 * len(LEAVES) >= 30 and len(CASES) >= 30


# -- a closed stdout, progress bars on stderr (real processes) -------------------------------------
#: ``tjap`` as the console script runs it
TJAP = [sys.executable, "-c", "import sys; from tjap.cli import main; sys.exit(main())"]


#: a benchmarks module (``python -m benchmarks.NAME``), run from the repository's root
MODULE = [sys.executable, "-m"]
ROOT = Path(__file__).resolve().parents[2]


def tjap_process(*argv, program=TJAP, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [*program, *map(str, argv)],
        cwd=ROOT,
        stderr=kwargs.pop("stderr", subprocess.PIPE),
        **kwargs,
    )


@pytest.mark.parametrize("argv", [["methods"], ["solve", "{window}", "--json"]])
def test_closed_stdout_exits_quietly(files, argv):
    """The reader is gone before tjap writes a byte: exit 141, nothing on stderr."""
    proc = tjap_process(*[a.format(**files) for a in argv], stdout=subprocess.PIPE)
    proc.stdout.close()  # what `| head` does once it has its line
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_CLOSED_STDOUT, err.decode()
    assert err.decode() == ""


def test_head_of_a_long_output(tmp_path):
    """`tjap solve many.jsonl --json | head -1`, with head itself: quiet, exit 0 or 141."""
    windows = tmp_path / "many.jsonl"
    windows.write_text("".join(json.dumps(WINDOW) + "\n" for _ in range(300)))
    import shlex

    script = (
        f"{shlex.join(TJAP)} solve {windows} --method seq --json | head -1; "
        'echo "status=${PIPESTATUS[0]}" >&2'
    )
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.stdout == "[\n"
    err = proc.stderr.strip().splitlines()
    assert err in (["status=0"], [f"status={EXIT_CLOSED_STDOUT}"]), proc.stderr


def on_a_terminal(*argv, program=TJAP) -> tuple[subprocess.Popen, bytes, bytes]:
    """Run ``tjap argv`` with stdout to a pipe and stderr a terminal 80 columns wide; the
    process, its stdout and what it drew on the terminal."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    # a terminal 80 columns wide (a fresh pseudo-terminal has 0, where tqdm draws nothing)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        proc = tjap_process(*argv, program=program, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        out, _ = proc.communicate(timeout=120)
        drawn = b""
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal closed: everything was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(master)
    return proc, out, drawn


def test_progress_bar_goes_to_a_terminal_stderr(files):
    """stdout to a file (--json > out.json), stderr a terminal: the bar is drawn on stderr and
    the JSON on stdout stays clean."""
    proc, out, drawn = on_a_terminal("solve", files["window"], "--json")
    assert proc.returncode == 0
    assert json.loads(out)["status"] == "OPTIMAL"
    assert b"auto" in drawn and b"0/1" in drawn, drawn  # tqdm's bar, desc = the method


@pytest.mark.parametrize(
    "argv, bar",
    [
        (
            [
                "simulate",
                "--trace",
                LS6,
                "--nodes",
                "76",
                "--start",
                "2023-03-01",
                "--days",
                "3",
                "--json",
            ],
            b"simulate",
        ),
        (["online", "--num-jobs", "200", "--json"], b"window"),
        (
            ["generate", "windows", "--num-windows", "20", "--out", "{tmp}/w.jsonl", "--json"],
            b"windows",
        ),
        (
            [
                "benchmarks.batch_sim",
                "--trace",
                LS6,
                "--repeats",
                "1",
                "--sizes",
                "2000",
                "--out",
                "{tmp}/batch",
                "--json",
            ],
            b"batch",
        ),
    ],
    ids=["simulate", "online", "generate", "benchmarks-batch_sim"],
)
def test_commands_that_loop_draw_a_bar_on_a_terminal(files, argv, bar):
    """Commands that can run for many seconds report as they go (a simulation's jobs done, a
    replay's jobs started, the windows made, a benchmark's parts), on stderr only."""
    program = MODULE if argv[0].startswith("benchmarks.") else TJAP
    proc, out, drawn = on_a_terminal(*[a.format(**files) for a in argv], program=program)
    assert proc.returncode == 0, drawn
    json.loads(out)  # stdout: the JSON alone
    assert bar + b":" in drawn and b"it/s" in drawn, drawn


def test_no_progress_bar_when_stderr_is_not_a_terminal(files):
    proc = tjap_process("solve", files["window"], "--json", stdout=subprocess.PIPE)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == b"" and json.loads(out)["status"] == "OPTIMAL"


# -- Slurm that cannot be reached: exit 3 ----------------------------------------------------------
#: What Slurm's commands print when slurmctld does not answer (squeue, sinfo, scontrol ...), and
#: what ``scontrol ping`` prints then.
UNREACHABLE = "{name}: error: Unable to contact slurm controller (connect failure)"
PING_DOWN = "Slurmctld(primary) at ctl01 is DOWN"


@pytest.fixture
def dead_slurm(tmp_path, monkeypatch) -> Path:
    """A cluster whose controller is not running: a slurm.conf naming it, and Slurm commands on
    PATH that answer as real ones do when slurmctld is down (no real Slurm needed)."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=dead\nSlurmctldHost=ctl01\nSlurmctldPort=1\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("squeue", "sinfo", "scontrol", "sbatch", "scancel"):
        tool = bin_dir / name
        tool.write_text(
            "#!/bin/sh\n"
            f'if [ "$1" = ping ]; then echo "{PING_DOWN}"; exit 1; fi\n'
            f'echo "{UNREACHABLE.format(name=name)}" >&2\nexit 1\n'
        )
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("SLURM_CONF", str(conf))
    return conf


def run_unreachable(capsys, argv) -> str:
    """Run ``tjap argv`` in-process: exit 3 and one line on stderr; return the line."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 3, f"tjap {' '.join(map(str, argv))}: exit {code}, stderr {err!r}"
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("tjap: error: "), err
    return err.strip()


@pytest.mark.parametrize(
    "argv",
    [
        ["slurm", "advise"],
        ["slurm", "place", "--once"],
        ["slurm", "place", "--once", "--dry-run", "--json"],
        ["provision", "live", "--policy", "reactive"],
    ],
    ids=" ".join,
)
def test_an_unreachable_slurmctld_exits_3(dead_slurm, capsys, argv):
    line = run_unreachable(capsys, argv)
    assert "cannot reach slurmctld" in line and "is Slurm running?" in line, line
    assert f"SLURM_CONF={dead_slurm}" in line, line


@pytest.mark.parametrize(
    "argv",
    [
        ["slurm", "advise"],
        ["slurm", "place", "--once"],
        ["provision", "live", "--policy", "reactive"],
    ],
    ids=" ".join,
)
def test_slurm_commands_missing_from_path_exit_3(tmp_path, monkeypatch, capsys, argv):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("SLURM_CONF", raising=False)
    line = run_unreachable(capsys, argv)
    assert "not found on PATH" in line and "apt-get install slurm-wlm" in line, line


def test_the_client_raises_the_unreachable_error(dead_slurm):
    from tjap.core.errors import SlurmUnreachableError
    from tjap.placement.slurm.client import SlurmClient, SlurmError

    client = SlurmClient()
    for call in (client.queue, client.nodes, client.ping, client.show_topology):
        with pytest.raises(SlurmUnreachableError, match="cannot reach slurmctld") as info:
            call()
        assert isinstance(info.value, SlurmError)  # still a SlurmError: retried by the service


def test_other_slurm_failures_keep_their_exit_code(dead_slurm, capsys):
    """A bad argument is still bad input (2), not an unreachable Slurm."""
    run_bad(capsys, ["slurm", "place", "--interval", "0"])


# -- output paths: checked before the work, folders created ----------------------------------------
def _must_not_run(*args, **kwargs):
    raise AssertionError("the work started before the output path was checked")


def test_simulate_creates_the_folders_of_its_outputs(tmp_path, capsys):
    plot, per_job = tmp_path / "missing" / "dir" / "a.png", tmp_path / "other" / "jobs.csv"
    code = main(
        [
            "simulate",
            "--trace",
            LS6,
            "--nodes",
            "76",
            "--start",
            "2023-03-01",
            "--days",
            "1",
            "--json",
            "--plot",
            str(plot),
            "--per-job",
            str(per_job),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["jobs"] > 0
    assert plot.stat().st_size > 0 and per_job.read_text().startswith("job")


@pytest.mark.parametrize(
    "argv, stage",
    [
        (
            ["simulate", "--trace", LS6, "--nodes", "76", "--plot", "{blocker}/a.png"],
            "tjap.placement.batch.replay.replay_trace",
        ),
        (
            ["simulate", "--trace", LS6, "--nodes", "76", "--per-job", "{blocker}/sub/jobs.csv"],
            "tjap.placement.batch.replay.replay_trace",
        ),
        (
            ["simulate", "--trace", LS6, "--nodes", "76", "--plot", "{tmp}"],
            "tjap.placement.batch.replay.replay_trace",
        ),
        (
            ["generate", "windows", "--num-windows", "1", "--out", "{blocker}/w.jsonl"],
            "tjap.placement.tree.stream.generate_windows",
        ),
        (["bench", "exact", "--num-windows", "1", "--out", "{blocker}"], "tjap.bench.run"),
        (
            [
                "benchmarks.sa_tables",
                "table3",
                "--epochs",
                "1",
                "--windows-per-epoch",
                "1",
                "--out",
                "{blocker}",
            ],
            "benchmarks.sa_tables.table3",
        ),
        (["benchmarks.batch_sim", "--out", "{blocker}/sub"], "benchmarks.batch_sim.speed"),
        (["benchmarks.online", "--epochs", "1", "--out", "{blocker}"], "benchmarks.online.run"),
        (["train", "nsa", "--out", "{blocker}/w/nsa"], "tjap.learned.tree.train.train_nsa"),
    ],
    ids=[
        "simulate-plot",
        "simulate-per-job",
        "simulate-plot-folder",
        "generate",
        "bench-exact",
        "benchmarks-sa_tables-table3",
        "benchmarks-batch_sim",
        "benchmarks-online",
        "train-nsa",
    ],
)
def test_an_unwritable_output_fails_before_the_work(tmp_path, monkeypatch, capsys, argv, stage):
    blocker = tmp_path / "afile"
    blocker.write_text("")
    module, _, name = stage.rpartition(".")
    monkeypatch.setattr(__import__(module, fromlist=[name]), name, _must_not_run)
    line = run_bad(capsys, [a.format(blocker=blocker, tmp=tmp_path) for a in argv])
    flag = next(a for a in argv if "{" in a and a != argv[0])  # the path's value
    option = argv[argv.index(flag) - 1]
    assert f"cannot write {option} " in line and ("afile" in line or "folder" in line), line


def test_the_service_log_folder_is_created(dead_slurm, tmp_path, capsys):
    log = tmp_path / "logs" / "service" / "place.jsonl"
    run_unreachable(capsys, ["slurm", "place", "--once", "--log", log])
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert events == ["start", "stop"]
