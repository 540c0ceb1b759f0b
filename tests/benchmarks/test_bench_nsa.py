"""``python -m benchmarks.sa_tables nsa``: NSA-500 against SA at equal iterations and at equal
time (SA given as many iterations as fit in NSA's time on each window), with the SCAS optimum
beside them."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from benchmarks import sa_tables
from benchmarks.sa_tables import (
    PILOT_ITERATIONS,
    iteration_cost,
    main,
    nsa_columns,
    nsa_table,
    nsa_window,
    sa_for_time,
    same_time_iterations,
)

#: The columns whose cost does not depend on a measured time: the same for the same seed.
UNTIMED = ["nsa500", "seq", "sa500", "sa1000", "sa500_best", "scas_opt"]


@pytest.fixture(scope="module")
def table():
    return nsa_table("published", epochs=1, windows_per_epoch=2, seed=3, quiet=True)


def test_same_time_iterations_is_the_floor_of_what_fits():
    assert same_time_iterations(1.0, 0.3) == 3
    assert same_time_iterations(1.0, 0.1, fixed_s=0.35) == 6
    assert same_time_iterations(0.01, 0.3) == 1  # at least one iteration
    assert same_time_iterations(0.2, 0.1, fixed_s=0.5) == 1  # budget below the fixed time
    assert same_time_iterations(1e-3, 0.0) >= 1  # no division by zero


def test_iteration_cost_from_two_runs():
    per, fixed = iteration_cost((500, 0.5e-3 + 500 * 2e-6), (8000, 0.5e-3 + 8000 * 2e-6))
    assert per == pytest.approx(2e-6) and fixed == pytest.approx(0.5e-3)
    # too close together to separate the fixed time, or noise made the long one faster: the
    # long run's time per iteration, no fixed time (fewer iterations, never more)
    assert iteration_cost((500, 1e-3), (600, 1.2e-3)) == (pytest.approx(2e-6), 0.0)
    assert iteration_cost((500, 3e-3), (4000, 2e-3)) == (pytest.approx(5e-7), 0.0)


class _FakeResult:
    def __init__(self, iterations, seconds):
        self.iterations, self.runtime_s, self.objective = iterations, seconds, 1.0


def test_sa_for_time_sizes_its_runs_as_specified(monkeypatch):
    """With a fake SA costing exactly 0.4 ms + 2 us per iteration, a 50 ms budget: the pilot
    (500), a calibration of a quarter of the budget at the pilot's rate, then
    floor((budget - fixed) / per iteration), run without a time limit."""
    calls = []

    def fake(w, method, **options):
        calls.append(options)
        seconds = 0.4e-3 + options["iterations"] * 2e-6
        return _FakeResult(options["iterations"], seconds), {"cpu": seconds, "wall": seconds}

    monkeypatch.setattr(sa_tables, "timed_solve", fake)
    r, times, per, fixed, calibration = sa_for_time(
        None, 50e-3, {"preset": "paper"}, {"seed": 0}, clock="cpu"
    )
    pilot_rate = (0.4e-3 + PILOT_ITERATIONS * 2e-6) / PILOT_ITERATIONS
    assert [c["iterations"] for c in calls[:2]] == [
        PILOT_ITERATIONS,
        math.floor(0.25 * 50e-3 / pilot_rate),
    ]
    assert per == pytest.approx(2e-6) and fixed == pytest.approx(0.4e-3)
    assert r.iterations == calls[2]["iterations"] == same_time_iterations(50e-3, per, fixed)
    assert abs(r.iterations - (50e-3 - 0.4e-3) / 2e-6) <= 1  # 24800, up to rounding
    assert times["cpu"] == pytest.approx(50e-3, rel=1e-3)
    assert all("time_limit_s" not in c and c["preset"] == "paper" for c in calls)
    assert calibration == calls[1]["iterations"]
    with pytest.raises(Exception, match="clock"):
        sa_for_time(None, 1.0, {}, {}, clock="sundial")


def test_sa_for_time_skips_the_calibration_when_the_budget_is_small(monkeypatch):
    calls = []

    def fake(w, method, **options):
        calls.append(options["iterations"])
        seconds = options["iterations"] * 20e-6  # a slow repair: 10 ms per pilot
        return _FakeResult(options["iterations"], seconds), {"cpu": seconds, "wall": seconds}

    monkeypatch.setattr(sa_tables, "timed_solve", fake)
    r, _, per, fixed, calibration = sa_for_time(None, 30e-3, {}, {})
    assert calls[0] == PILOT_ITERATIONS and len(calls) == 2 and calibration == PILOT_ITERATIONS
    assert fixed == 0.0 and r.iterations == same_time_iterations(30e-3, per)


def test_nsa_table_rows(table):
    rows = table["rows"]
    assert len(rows) == 2 and table["clock"] == "cpu" and table["preset"] == "published"
    names = nsa_columns("published")
    assert names[0] == "nsa500" and set(UNTIMED) <= set(names)
    assert {"sa_default_same_time", "sa_paper_same_time"} <= set(names)
    # the library's default SA is the best preset, so no separate best column at equal time
    assert ("sa_best_same_time" in names) == (sa_tables.default_sa_preset() != "best")
    for row in rows:
        for name in names:
            assert row[name] > 0 and row[f"{name}_s"] > 0 and row[f"{name}_cpu_s"] > 0
        assert row["nsa500"] <= row["seq"] and row["nsa500_iterations"] == 500
        assert row["sa500_iterations"] == 500 and row["sa1000_iterations"] == 1000
        for name in ("sa_default_same_time", "sa_paper_same_time"):
            expected = same_time_iterations(
                row["nsa500_cpu_s"],
                row[f"{name}_per_iteration_us"] / 1e6,
                row[f"{name}_fixed_ms"] / 1e3,
            )
            assert abs(row[f"{name}_iterations"] - expected) <= 1  # up to the units' rounding
            assert row[f"{name}_cpu_ratio"] == pytest.approx(
                row[f"{name}_cpu_s"] / row["nsa500_cpu_s"]
            )
    summary = {s["column"]: s for s in table["summary"]}
    assert list(summary) == names and "nsa_gain_pct" not in summary["nsa500"]
    assert summary["scas_opt"]["gap_to_scas_pct"] == 0.0 and summary["seq"]["nsa_gain_pct"] >= 0
    for s in list(summary.values())[1:]:
        assert s["ci95_low"] <= s["nsa_gain_pct"] <= s["ci95_high"]
        assert s["nsa_better_pct"] + s["nsa_worse_pct"] <= 100
    assert "cpu_ratio" in summary["sa_paper_same_time"] and "cpu_ratio" not in summary["sa500"]


def test_nsa_columns_that_do_not_depend_on_timing_are_reproducible(table):
    again = nsa_window(
        "published", sa_tables._windows("published", 1, 2, 3)[1].to_dict(), 3, None, None, "wall"
    )
    first = table["rows"][1]
    assert [again[n] for n in UNTIMED] == [first[n] for n in UNTIMED]


def test_bench_nsa_cli(tmp_path, capsys):
    code = main(
        [
            "nsa",
            "--setting",
            "paper",
            "--epochs",
            "1",
            "--windows-per-epoch",
            "2",
            "--weights",
            "learned/weights/nsa_cnn3_paper.json",
            "--out",
            str(tmp_path),
            "--quiet",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["setting"] == data["nsa_preset"] == "paper" and data["windows"] == 2
    assert [s["column"] for s in data["summary"]] == nsa_columns("paper")
    assert Path(data["csv"]).name == "nsa_paper_nsa_cnn3_paper_s0.csv"
    assert json.loads(Path(data["json"]).read_text())["summary"] == data["summary"]
    with open(data["csv"]) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 and {"nsa500", "sa_paper_same_time_cpu_ratio"} <= set(rows[0])
    assert not list(tmp_path.glob("*.partial.csv"))


@pytest.mark.parametrize("flag", [["--weights", "none.json"], ["--preset", "hot"]])
def test_bench_nsa_bad_weights_or_preset_is_one_line(tmp_path, capsys, flag):
    code = main(
        [
            "nsa",
            "--epochs",
            "1",
            "--windows-per-epoch",
            "1",
            *flag,
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("tjap: error")
    assert flag[1] in err and not list(tmp_path.glob("*.csv"))


def test_interrupted_nsa_table_leaves_a_partial_csv(tmp_path, monkeypatch):
    """Ctrl-C after the first window: its row is in NAME.partial.csv (named in the line tjap
    prints), and no NAME.csv."""
    from tjap.core import executor

    monkeypatch.setattr(executor, "PARTIAL_OUTPUTS", [])

    class Interrupted:
        def map(self, fn, tasks, **_):
            yield fn(*tasks[0])
            raise KeyboardInterrupt

    path = tmp_path / "nsa.csv"
    with pytest.raises(KeyboardInterrupt):
        nsa_table(
            "published",
            epochs=1,
            windows_per_epoch=2,
            quiet=True,
            executor=Interrupted(),
            csv_path=path,
        )
    assert not path.exists()
    with open(tmp_path / "nsa.partial.csv") as f:
        assert len(list(csv.DictReader(f))) == 1
    assert executor.PARTIAL_OUTPUTS == [tmp_path / "nsa.partial.csv"]


def test_bench_nsa_on_a_workload_file(tmp_path, capsys):
    from tjap.placement.tree.workload import Workload

    jobs = Workload.generate(500, seed=2)
    path = tmp_path / "jobs.txt"
    path.write_text(
        "".join(
            f"{k + 1}  {a}  {r}  {n}\n"
            for k, (a, r, n) in enumerate(
                zip(jobs.arrival_s.tolist(), jobs.runtime_s.tolist(), jobs.requested_nodes.tolist())
            )
        )
    )
    code = main(
        [
            "nsa",
            "--workload",
            str(path),
            "--epochs",
            "1",
            "--windows-per-epoch",
            "1",
            "--out",
            str(tmp_path),
            "--quiet",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert Path(data["csv"]).name == "nsa_published_jobs_s0.csv"  # beside the generator's
    assert data["workload"] == str(path) and data["trace_report"]["jobs"] == 500
