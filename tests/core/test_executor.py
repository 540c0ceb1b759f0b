"""The sweep executor: serial == pool == Ray, ordered streaming, failures kept, partial CSV."""

import argparse
import builtins
import csv
import time
from pathlib import Path

import numpy as np
import pytest

from tjap.cli.common import add_executor_arguments, executor_from_args
from tjap.core.errors import MissingDependencyError
from tjap.core.executor import (
    CsvRows,
    Executor,
    TaskFailure,
    make_executor,
)


def seeded_draw(seed: int, size: int) -> dict:
    """A seeded task: the same arguments give the same row in any process."""
    rng = np.random.default_rng(seed)
    values = rng.random(size)
    return {"seed": seed, "size": size, "sum": float(values.sum()), "max": float(values.max())}


def late_first(index: int, delay_s: float) -> tuple[int, float]:
    time.sleep(delay_s)
    return index, time.monotonic()


def fails_on_three(seed: int) -> int:
    if seed == 3:
        raise ValueError("three is bad")
    return seed * seed


def thread_count() -> int:
    import torch

    return torch.get_num_threads()


TASKS = [(seed, 50 + seed) for seed in range(12)]


@pytest.fixture(scope="module")
def serial_rows():
    return make_executor(1).results(seeded_draw, TASKS, quiet=True)


def test_serial_equals_pool(serial_rows):
    assert make_executor(1).backend == "serial"
    pool = make_executor(2)
    assert pool.backend == "pool"
    assert pool.results(seeded_draw, TASKS, quiet=True) == serial_rows
    assert [r["seed"] for r in serial_rows] == list(range(12))


def test_serial_equals_ray(serial_rows, monkeypatch):
    ray = pytest.importorskip("ray")
    # Ray's workers import the tasks' module by name: let them find this test file
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    import signal

    sigterm = signal.getsignal(signal.SIGTERM)
    try:
        executor = make_executor(2, ray="local")
        assert executor.backend == "ray"
        assert executor.results(seeded_draw, TASKS, quiet=True) == serial_rows
        assert signal.getsignal(signal.SIGTERM) == sigterm  # ray.init's handler not left here
        out = list(executor.map(fails_on_three, [(s,) for s in range(5)], quiet=True, report=False))
        assert isinstance(out[3], TaskFailure) and "three is bad" in out[3].error
        assert out[:3] == [0, 1, 4] and out[4] == 16
    finally:
        ray.shutdown()


def test_results_stream_in_order_even_when_finished_out_of_order():
    # task 0 sleeps longest, so it finishes last; it still comes first, and the others arrive
    # (are yielded) right after it rather than one by one after their own finish
    tasks = [(0, 0.6), (1, 0.0), (2, 0.0), (3, 0.0)]
    got = list(make_executor(2).map(late_first, tasks, quiet=True))
    assert [index for index, _ in got] == [0, 1, 2, 3]
    finished = [t for _, t in got]
    assert min(finished[1:]) < finished[0]  # later tasks really finished earlier


def test_dict_tasks_are_keyword_arguments(serial_rows):
    tasks = [{"size": size, "seed": seed} for seed, size in TASKS]
    assert make_executor(2).results(seeded_draw, tasks, quiet=True) == serial_rows


@pytest.mark.parametrize("workers", [1, 2])
def test_failure_reported_with_arguments_and_others_kept(workers, capsys):
    executor = make_executor(workers)
    out = list(executor.map(fails_on_three, [(s,) for s in range(6)], quiet=True))
    assert [r for r in out if not isinstance(r, TaskFailure)] == [0, 1, 4, 16, 25]
    failure = out[3]
    assert isinstance(failure, TaskFailure) and failure.index == 3 and failure.args == (3,)
    assert executor.failures == [failure]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "tjap: task 3 (3,) failed: ValueError: three is bad (test_executor.py:"
        f"{fails_on_three.__code__.co_firstlineno + 2})"
    ]


def test_workers_pin_torch_to_one_thread():
    pytest.importorskip("torch")
    assert make_executor(2).results(thread_count, [()] * 2, quiet=True) == [1, 1]


def test_partial_csv_is_valid_after_an_exception(tmp_path):
    path = tmp_path / "out" / "rows.csv"

    def boom():
        with CsvRows(path) as out:
            for k, row in enumerate(make_executor(2).map(seeded_draw, TASKS, quiet=True)):
                if k == 5:
                    raise RuntimeError("crash mid-sweep")
                out.write(row)
                # every row is on disk as soon as it is written (as NAME.partial.csv until done)
                assert len(list(csv.DictReader(out.partial_path.open()))) == k + 1

    with pytest.raises(RuntimeError):
        boom()
    assert not path.exists()  # a sweep cut short keeps the .partial.csv name
    rows = list(csv.DictReader((path.parent / "rows.partial.csv").open()))
    assert [int(r["seed"]) for r in rows] == [0, 1, 2, 3, 4]
    assert list(rows[0]) == ["seed", "size", "sum", "max"]


def test_csv_header_widens_when_a_new_key_arrives(tmp_path):
    path = tmp_path / "rows.csv"
    with CsvRows(path) as out:
        out.write({"a": 1})
        out.write({"a": 2, "b": "x"})
        out.write({"b": "y"})
    rows = list(csv.DictReader(path.open()))
    assert rows == [{"a": "1", "b": ""}, {"a": "2", "b": "x"}, {"a": "", "b": "y"}]
    assert not (tmp_path / "rows.csv.tmp").exists()


def test_stopping_early_stops_the_pool():
    executor = make_executor(2)
    start = time.monotonic()
    for _ in executor.map(late_first, [(k, 0.0 if k == 0 else 5.0) for k in range(4)], quiet=True):
        break
    assert time.monotonic() - start < 4.0  # the 5-second tasks were not waited for


def test_missing_ray_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(MissingDependencyError, match=r"pip install 'tjap\[ray\]'"):
        make_executor(ray="auto")


def test_argparse_helper_builds_the_executor():
    parser = argparse.ArgumentParser()
    add_executor_arguments(parser)
    assert executor_from_args(parser.parse_args(["--workers", "1"])).backend == "serial"
    pool = executor_from_args(parser.parse_args(["--workers", "3"]))
    assert (pool.backend, pool.workers) == ("pool", 3)
    assert executor_from_args(parser.parse_args([])).backend in ("pool", "serial")
    with pytest.raises(SystemExit):
        parser.parse_args(["--workers", "0"])
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        Executor(0)


CTRL_C_SCRIPT = """
import os, sys, time
from tjap.core.executor import CsvRows, make_executor

def task(k):
    time.sleep(0.05 if k < 2 else 30)
    return {"k": k, "pid": os.getpid()}

with CsvRows(sys.argv[1]) as out:
    for row in make_executor(2).map(task, [(k,) for k in range(6)], quiet=True):
        out.write(row)
        print(row["pid"], flush=True)
"""


def test_ctrl_c_stops_the_workers_and_leaves_a_valid_csv(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from processes import default_sigint

    path = tmp_path / "rows.csv"
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_SCRIPT, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    pids = {int(proc.stdout.readline()) for _ in range(2)}  # two rows written
    time.sleep(0.3)  # the 30-second tasks are running
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"still running 10 s after Ctrl-C; its stderr: {proc.communicate()[1][-2000:]}")
    assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr.read()
    partial = tmp_path / "rows.partial.csv"  # marked as interrupted
    assert not path.exists() and [r["k"] for r in csv.DictReader(partial.open())] == ["0", "1"]
    time.sleep(0.2)
    for pid in pids:  # the workers are gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_cli_sweeps_match_serial(tmp_path, capsys):
    import json

    from tjap.cli import main

    def run(*argv):
        assert main([str(a) for a in argv]) == 0
        return json.loads(capsys.readouterr().out)

    net = [
        run(
            "network",
            "evaluate",
            "--topology",
            "8:1-8",
            "--requests",
            16,
            "--seeds",
            3,
            "--per-seed",
            "--json",
            "--quiet",
            "--workers",
            w,
        )
        for w in (1, 2)
    ]
    for out in net:
        out.pop("mean_runtime_s")
        for ep in out["episodes"]:
            ep.pop("runtime_s")
    assert net[0] == net[1] and [ep["seed"] for ep in net[1]["episodes"]] == [0, 1, 2]

    base = ("interference", "evaluate", "--k", 4, "--intervals", 2, "--json", "--quiet")
    both = run(*base, "--seed", 5, "--seeds", 2, "--workers", 2)
    one = [run(*base, "--seed", s) for s in (5, 6)]
    assert both["seeds"] == 2
    assert both["avg_jct"] == pytest.approx((one[0]["avg_jct"] + one[1]["avg_jct"]) / 2, rel=1e-12)

    from benchmarks.online import main as online_main

    online = []
    for w in (1, 2):
        assert (
            online_main(
                [
                    str(a)
                    for a in (
                        "--epochs",
                        2,
                        "--jobs-per-epoch",
                        20,
                        "--quiet",
                        "--json",
                        "--out",
                        tmp_path / f"w{w}",
                        "--workers",
                        w,
                    )
                ]
            )
            == 0
        )
        capsys.readouterr()
        online.append((tmp_path / f"w{w}" / "online_paper_s0.csv").read_text())
    assert online[0] == online[1]


def test_unreachable_ray_address_is_a_one_line_error():
    pytest.importorskip("ray")
    from tjap.core.errors import InvalidInputError

    executor = make_executor(ray="127.0.0.1:1")
    with pytest.raises(InvalidInputError, match="cannot reach a Ray cluster at --ray 127.0.0.1:1"):
        executor.results(fails_on_three, [(1,)], quiet=True)


def test_speedup_benchmark_runs_and_rows_match(tmp_path, capsys):
    from benchmarks.executor_speedup import main

    assert main(["--seeds", "1", "--requests", "8", "--no-ray", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "36 tasks" in out and "pool2" in out and "False" not in out
    assert len((tmp_path / "executor_speedup_pool2.csv").read_text().splitlines()) == 37


POOLS_UNDER_A_PARENT_HANDLER = """
import os, signal, sys, threading, time
from tjap.core.executor import make_executor

signal.signal(signal.SIGTERM, lambda *_: None)    # a SIGTERM handler some library left behind

def watchdog():
    time.sleep(30)
    print("hung", flush=True)
    os._exit(3)

threading.Thread(target=watchdog, daemon=True).start()
for _ in range(400):                              # pools terminated as soon as their work is done
    assert make_executor(2).results(abs, [(-1,), (-2,)], quiet=True) == [1, 2]
print("ok", flush=True)
"""


def test_a_pool_terminated_while_a_worker_starts_never_hangs():
    """Workers start with SIGINT and SIGTERM blocked until their own handlers are set: a pool
    terminated at once used to leave a starting worker alive (the SIGTERM met the handler it
    inherited from the parent) and its parent waiting for it forever (1 in 3 runs of 100)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", POOLS_UNDER_A_PARENT_HANDLER],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "ok", done.stdout + done.stderr
