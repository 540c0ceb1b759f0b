"""``tjap bench exact``, the paper reproductions of benchmarks/ (``python -m
benchmarks.sa_tables``, ``benchmarks.online``, ...) and ``tjap train nsa`` run end to end on tiny
inputs and write what they say; the experiments that left ``tjap bench`` name their new command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import online, sa_tables
from tjap.cli import main


def run_json(capsys, *argv, command=main):
    """Run ``command`` (default ``tjap``'s main) with ``argv``; its JSON output."""
    code = command([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    "name, command",
    [
        ("table3", "python -m benchmarks.sa_tables table3"),
        ("table4", "python -m benchmarks.sa_tables table4"),
        ("nsa", "python -m benchmarks.sa_tables nsa"),
        ("online", "python -m benchmarks.online"),
        ("batch", "python -m benchmarks.batch_sim"),
    ],
)
def test_moved_experiments_name_their_new_command(capsys, name, command):
    """``tjap bench NAME`` of an experiment that moved to benchmarks/ is one line naming the
    command that runs it now, exit 2, whatever follows (its old options, --help)."""
    for extra in ([], ["--epochs", "1", "--quiet"], ["--help"]):
        code = main(["bench", name, *extra])
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and len(err.splitlines()) == 1
        assert err.startswith(f"tjap: error: tjap bench {name} is ") and command in err, err


def test_bench_lists_only_exact(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    listed = capsys.readouterr().out
    assert "exact" in listed and not any(n in listed for n in ("table3", "nsa", "online", "batch"))
    with pytest.raises(SystemExit) as stop:
        main(["bench", "table5"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "invalid choice: 'table5' (choose from 'exact')" in err


def test_bench_table3(tmp_path, capsys):
    data = run_json(
        capsys,
        "table3",
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
        command=sa_tables.main,
    )
    assert Path(data["csv"]).exists()
    gaps = data["gap_to_scas_pct"]
    assert gaps["seq"] >= -1e-9 and gaps["freeform"] <= 1e-9  # seq never beats the optimum


@pytest.mark.parametrize(
    "setting, loop",
    [
        ("published", {"t_max": 25000.0, "reinsert": "window-order"}),
        ("paper", {"t_max": 2500.0, "reinsert": "largest-first"}),
    ],
)
def test_table3_columns_name_their_settings(setting, loop):
    """Table III's SA and LNS columns pass their settings explicitly: the same figures as the
    options written out, whatever the library's defaults are."""
    from benchmarks.sa_tables import SETTINGS, _windows, table3_window
    from tjap import solve

    w = _windows(setting, 1, 1, 0)[0]
    common = {"convention": SETTINGS[setting]["convention"], "seed": 0}
    paper_sa = dict(repair="paper", q=100, max_remove=2, t_min=2.5, initial="seq", **loop)
    row = table3_window(setting, w.to_dict(), 0, 0.2)
    expected = {
        "sa500": solve(w, "sa", iterations=500, **paper_sa, **common),
        "sa1000": solve(w, "sa", iterations=1000, **paper_sa, **common),
        "sa1000_best": solve(
            w,
            "sa",
            iterations=1000,
            repair="greedy",
            q=100,
            max_remove=5,
            t_max=25000.0,
            t_min=2.5,
            reinsert="largest-first",
            initial="seq",
            **common,
        ),
        "lns500": solve(
            w, "lns", iterations=500, repair="greedy", max_remove=2, initial="auto", **common
        ),
    }
    for name, r in expected.items():
        assert row[name] == r.objective, name


@pytest.mark.parametrize("table", ["table3", "table4"])
def test_tables_keep_the_rows_of_an_interrupted_run(tmp_path, monkeypatch, table):
    """Rows reach NAME.partial.csv as windows finish; Ctrl-C leaves them there, complete, and
    never a NAME.csv that looks finished."""
    import csv

    one_window = getattr(sa_tables, f"{table}_window")
    calls = []

    def stop_at_the_third(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return one_window(*args)

    monkeypatch.setattr(sa_tables, f"{table}_window", stop_at_the_third)
    path = tmp_path / f"{table}.csv"
    extra = (
        {"freeform_time_limit_s": 0.2}
        if table == "table3"
        else {"limit_s": 5.0, "paper_windows": 0}
    )
    with pytest.raises(KeyboardInterrupt):
        getattr(sa_tables, table)("paper", 1, 5, 0, quiet=True, csv_path=path, **extra)
    assert not path.exists()
    rows = list(csv.DictReader((tmp_path / f"{table}.partial.csv").open()))
    assert [int(r["window"]) for r in rows] == [0, 1]
    objective = "scas_opt" if table == "table3" else "sp_nolimit"
    assert all(float(r[objective]) > 0 for r in rows)


def test_bench_table4(tmp_path, capsys):
    data = run_json(
        capsys,
        "table4",
        "--epochs",
        1,
        "--windows-per-epoch",
        2,
        "--paper-windows",
        1,
        "--limit",
        5,
        "--out",
        tmp_path,
        "--quiet",
        "--json",
        command=sa_tables.main,
    )
    assert data["windows"] == 2 and data["paper_windows"] == 1
    assert data["set_packing_optimal_pct"] == 100.0


def test_sa_speed_benchmark(capsys):
    from benchmarks.sa_speed import main

    rows = run_json(capsys, "--windows", 2, "--setting", "paper", "--json", command=main)["rows"]
    assert {r["repair"] for r in rows} == {"paper", "greedy"}
    assert all(r["median_ratio"] > 1 for r in rows)
    paper = next(r for r in rows if r["repair"] == "paper")
    assert paper["same_result"] == paper["windows"]  # both sides ran the same search


def test_bench_online(tmp_path, capsys):
    import csv

    data = run_json(
        capsys,
        "--epochs",
        2,
        "--jobs-per-epoch",
        30,
        "--out",
        tmp_path,
        "--quiet",
        "--json",
        command=online.main,
    )
    assert len(data["rows"]) == 12 and all(r["epochs"] == 2 for r in data["rows"])
    assert Path(data["csv"]).exists() and Path(data["png"]).exists()
    epochs = list(csv.DictReader(Path(data["epochs_csv"]).open()))
    assert len(epochs) == 24
    # each configuration's row is the mean of its epochs' rows
    for row in data["rows"]:
        mine = [
            float(e["mean_wait_s"])
            for e in epochs
            if e["policy"] == row["policy"] and e["placement"] == row["placement"]
        ]
        assert len(mine) == 2 and row["mean_wait_s"] == pytest.approx(sum(mine) / 2)


def test_bench_online_keeps_the_epochs_of_an_interrupted_run(tmp_path, monkeypatch):
    import csv

    calls = []
    one_epoch = online.replay_epoch

    def stop_at_the_fourth(*args):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return one_epoch(*args)

    monkeypatch.setattr(online, "replay_epoch", stop_at_the_fourth)
    path = tmp_path / "online_epochs.csv"
    with pytest.raises(KeyboardInterrupt):
        online.run("paper", 2, 30, 0, quiet=True, epochs_csv=path)
    assert not path.exists()
    rows = list(csv.DictReader((tmp_path / "online_epochs.partial.csv").open()))
    assert [(r["policy"], r["epoch"]) for r in rows] == [
        ("window tau=10s", "0"),
        ("window tau=10s", "1"),
        ("window tau=20s", "0"),
    ]
    assert all(float(r["makespan_s"]) > 0 for r in rows)


def test_train_nsa_cli(tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    data = run_json(
        capsys,
        "train",
        "nsa",
        "--arch",
        "fcn1",
        "--timesteps",
        64,
        "--windows",
        3,
        "--n-steps",
        64,
        "--batch-size",
        32,
        "--out",
        tmp_path / "p",
        "--quiet",
        "--json",
    )
    meta = json.loads(Path(data["metadata"]).read_text())
    assert meta["architecture"] == "fcn1" and meta["training"]["ppo"]["n_steps"] == 64


def test_nsa_archs_budgets_and_curves(tmp_path):
    pytest.importorskip("torch")
    from benchmarks.nsa_archs import budgets, curves

    res = budgets(
        ["cnn3"],
        windows=1,
        budgets=(5,),
        quiet=True,
        csv_path=tmp_path / "f5.csv",
        png=tmp_path / "f5.png",
    )
    assert len(res["rows"]) == 1
    assert {
        "arch",
        "budget",
        "nsa",
        "sa",
        "sa_same_time",
        "impr_equal_iter_pct",
        "impr_equal_time_pct",
    } <= set(res["rows"][0])
    assert Path(res["csv"]).exists() and Path(res["png"]).exists()
    assert curves(["cnn3"], png=tmp_path / "f4.png").exists()


@pytest.mark.parametrize("bound", ["freeform", "per-job"])
def test_bench_exact_on_a_topology_file(tmp_path, capsys, bound):
    conf = tmp_path / "topology.conf"
    conf.write_text(
        "SwitchName=l1 Nodes=a[01-12]\nSwitchName=l2 Nodes=b[01-20]\n"
        "SwitchName=l3 Nodes=c[01-09]\nSwitchName=l4 Nodes=d[01-30]\n"
        "SwitchName=s1 Switches=l[1-2]\nSwitchName=s2 Switches=l[3-4]\n"
        "SwitchName=top Switches=s[1-2]\n"
    )
    data = run_json(
        capsys,
        "bench",
        "exact",
        "--topology",
        conf,
        "--num-windows",
        3,
        "--bound",
        bound,
        "--freeform-time-limit",
        1,
        "--out",
        tmp_path,
        "--quiet",
        "--json",
    )
    rows = {r["method"]: r for r in data["summary"]}
    assert set(rows) == {"dp", "scip", "slurm-tree"} | (
        {"freeform"} if bound == "freeform" else set()
    )
    assert data["nodes"] == 71 and data["bound"] == bound and data["max_rss_mb"] > 0
    assert rows["dp"]["same_as_scip_pct"] == 100.0 and rows["dp"]["peak_mb"] > 0
    assert rows["dp"]["above_bound_pct"] >= -1e-9 and rows["slurm-tree"]["above_bound_pct"] >= -1e-9
    assert all(Path(p).exists() for p in data["files"].values())


def test_bench_exact_topology_errors_are_one_line(tmp_path, capsys):
    code = main(
        ["bench", "exact", "--topology", str(tmp_path / "none.conf"), "--out", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert code != 0 and "no such topology file" in err and len(err.strip().splitlines()) == 1
