"""Windows with job constraints on block clusters (tjap.placement.tree.block_windows): seeded,
valid, with the mix asked; ``tjap generate windows --constraints``; ``tjap bench exact
--constraints`` on tiny windows (its columns, its counts of unplaced jobs and broken
constraints); the ``benchmarks.blocks`` runner on a few windows. No timing is asserted."""

from __future__ import annotations

import collections
import csv
import json

import constraint_oracle as oracle
import numpy as np
import pytest

import tjap
from tjap import bench
from tjap.cli import main
from tjap.core.errors import InvalidInputError
from tjap.core.result import Status
from tjap.placement.tree.arcs import first_fit
from tjap.placement.tree.block_windows import KINDS, ConstraintMix, constrained_windows, job_kind
from tjap.placement.tree.jobs import level_domains
from tjap.placement.tree.result import Result
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window, load_windows
from tjap.registry import _REGISTRY, Method

CONF = (
    "\n".join(
        [f"BlockName=b{i} Nodes=n[{6 * i + 1:02d}-{6 * i + 6:02d}]" for i in range(8)]
        + ["BlockSizes=6,12,24,48"]
    )
    + "\n"
)
TREE = Topology.from_slurm(CONF)


def test_same_seed_same_windows_and_prefixes_agree():
    a = [w.to_dict() for w in constrained_windows(TREE, 12, seed=3)]
    assert a == [w.to_dict() for w in constrained_windows(TREE, 12, seed=3)]
    assert a[:5] == [w.to_dict() for w in constrained_windows(TREE, 5, seed=3)]
    assert a != [w.to_dict() for w in constrained_windows(TREE, 12, seed=4)]


def test_every_window_is_valid_and_has_a_placement_that_keeps_its_constraints():
    windows = constrained_windows(TREE, 40, seed=1, cap=4)
    level2 = level_domains(TREE, 2)
    full = partial = 0
    for w in windows:
        w = Window.from_dict(w.to_dict())  # its JSON form reads back
        assert 1 <= w.num_jobs <= 4 and sum(w.job_sizes) <= w.num_idle
        idle_per_block = np.bincount(TREE.node_leaf[w.idle_nodes], minlength=TREE.num_switches)
        sizes = np.bincount(TREE.node_leaf, minlength=TREE.num_switches)[TREE.leaf_switches]
        idle_per_block = idle_per_block[TREE.leaf_switches]
        full += int(np.sum(idle_per_block == 0))
        partial += int(np.sum((idle_per_block > 0) & (idle_per_block < sizes)))
        assert w.meta["busy_nodes"] == TREE.num_nodes - w.num_idle
        for job in w.jobs:
            assert job.nodes >= 2
            if job.segment is not None:
                assert job.segment in (3, 6) and job.nodes % job.segment == 0
            if job.within is not None:
                assert job.within in (1, 2)
                assert job.nodes <= (6 if job.within == 1 else np.bincount(level2).max())
        seq = first_fit(w)
        assert seq is not None and oracle.keeps(w, seq)
        best = tjap.solve(w, "dp")
        assert best.status is Status.OPTIMAL and oracle.keeps(w, best.assignment)
    assert full > 0 and partial > 0  # whole blocks busy, and blocks partly busy


def test_the_mix_asked_is_the_mix_made():
    windows = constrained_windows(TREE, 150, seed=0)
    kinds = collections.Counter(job_kind(job) for w in windows for job in w.jobs)
    total = sum(kinds.values())
    for kind, share in ConstraintMix().shares().items():
        assert abs(kinds[kind] / total - share) < 0.08, (kind, kinds)
    only = constrained_windows(TREE, 20, seed=0, mix=ConstraintMix.parse("segment=1"))
    assert {job_kind(job) for w in only for job in w.jobs} == {"segment"}
    plain = constrained_windows(TREE, 20, seed=0, mix=ConstraintMix.parse("segment=0"))
    assert {job_kind(job) for w in plain for job in w.jobs} == {"plain"}
    assert set(KINDS) == set(ConstraintMix().shares())


@pytest.mark.parametrize(
    "text, match",
    [
        ("segment=0.7,within=0.5", "sum to 1.2"),
        ("segment=2", r"in \[0, 1\]"),
        ("segmnt=0.3", "give 'mix'"),
        ("segment", "give 'mix'"),
    ],
)
def test_a_bad_mix_is_one_line(text, match):
    with pytest.raises(InvalidInputError, match=match):
        ConstraintMix.parse(text)


def test_generate_windows_with_constraints(tmp_path, capsys):
    conf = tmp_path / "blocks.conf"
    conf.write_text(CONF)
    out = tmp_path / "w" / "windows.jsonl"
    code = main(
        [
            "generate",
            "windows",
            "--topology",
            str(conf),
            "--constraints",
            "mix",
            "--num-windows",
            "6",
            "--seed",
            "2",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert code == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["windows"] == 6 and summary["mix"]["segment"] == pytest.approx(1 / 3)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert all("jobs" in line and "job_sizes" not in line for line in lines)
    windows = load_windows(out)
    made = constrained_windows(TREE, 6, seed=2)
    assert [w.jobs for w in windows] == [w.jobs for w in made]
    assert all(np.array_equal(a.idle_nodes, b.idle_nodes) for a, b in zip(windows, made))
    # without the flag: the paper's stream as before, plain job sizes
    plain = tmp_path / "plain.jsonl"
    assert (
        main(
            [
                "generate",
                "windows",
                "--topology",
                str(conf),
                "--num-windows",
                "2",
                "--out",
                str(plain),
                "--quiet",
            ]
        )
        == 0
    )
    assert all("job_sizes" in json.loads(line) for line in plain.read_text().splitlines())


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--constraints", "bogus"], "give 'mix'"),
        (["--constraints", "mix", "--warmup", "3"], "drop --workload and --warmup"),
        (["--constraints", "mix", "--cap", "none"], "need one"),
    ],
)
def test_generate_errors_are_one_line(tmp_path, capsys, argv, match):
    conf = tmp_path / "blocks.conf"
    conf.write_text(CONF)
    try:
        code = main(
            [
                "generate",
                "windows",
                "--topology",
                str(conf),
                "--out",
                str(tmp_path / "w.jsonl"),
                *argv,
            ]
        )
    except SystemExit as stop:  # a usage error
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2 and match in err and len(err.strip().splitlines()) == 1


def test_bench_exact_on_constrained_windows(tmp_path, capsys):
    conf = tmp_path / "blocks.conf"
    conf.write_text(CONF)
    code = main(
        [
            "bench",
            "exact",
            "--topology",
            str(conf),
            "--constraints",
            "mix",
            "--num-windows",
            "3",
            "--freeform-time-limit",
            "1",
            "--time-limit",
            "20",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    header = next(line for line in out.splitlines() if line.split()[:1] == ["method"])
    assert header.split() == [key for key, _ in bench.CONSTRAINED_COLUMNS]
    data = json.loads(
        _run_json(
            capsys,
            [
                "bench",
                "exact",
                "--topology",
                str(conf),
                "--constraints",
                "mix",
                "--num-windows",
                "3",
                "--freeform-time-limit",
                "1",
                "--out",
                str(tmp_path),
                "--quiet",
                "--json",
            ],
        )
    )
    compared, notes = bench.constrained_methods(bench.CONSTRAINED_METHODS + bench.ANCHORS)
    rows = {r["method"]: r for r in data["summary"]}
    assert list(rows) == compared == data["methods"] and data["notes"] == notes
    assert compared[:3] == ["dp", "scip", "cpsat"]
    assert len(notes) + len(compared) == len(bench.CONSTRAINED_METHODS + bench.ANCHORS)
    dp = rows["dp"]
    assert dp["same_as_scip_pct"] == 100.0 and dp["optimal_pct"] == 100.0
    assert dp["unplaced_windows"] == 0 and dp["broken_jobs"] == 0 and dp["peak_mb"] > 0
    assert dp["cost_vs_dp"] == 1.0 and rows["scip"]["cost_vs_dp"] == pytest.approx(1.0)
    # the per-window rows agree with the windows solved again here
    with open(data["files"]["rows_csv"]) as f:
        per_window = [r for r in csv.DictReader(f) if r["method"] == "dp"]
    for row, w in zip(per_window, constrained_windows(TREE, 3, seed=0)):
        again = tjap.solve(w, "dp")
        assert oracle.keeps(w, again.assignment)
        assert float(row["objective"]) == pytest.approx(again.objective)
        assert int(row["free_blocks"]) == again.free_blocks(1)
    assert np.mean([int(r["free_blocks"]) for r in per_window]) == pytest.approx(dp["free_blocks"])


def _run_json(capsys, argv) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _ignores_constraints(window, *, convention, time_limit_s, seed):
    """An anchor that places the jobs as plain node counts (dp without their constraints)."""
    plain = Window(window.topology, window.idle_nodes, list(window.job_sizes))
    r = tjap.solve(plain, "dp", convention=convention)
    return Result.from_assignment(
        window,
        r.assignment,
        status=Status.FEASIBLE,
        method="ignores",
        convention=convention,
        runtime_s=r.runtime_s,
    )


def _gives_up(window, *, convention, time_limit_s, seed):
    """An anchor that leaves every window of more than two jobs unplaced."""
    if window.num_jobs > 2:
        return Result.from_assignment(
            window,
            (),
            status=Status.INFEASIBLE,
            method="gives-up",
            convention=convention,
            runtime_s=0.0,
            info={"unplaced": list(range(window.num_jobs))},
        )
    return tjap.solve(window, "dp", convention=convention)


def _no_within(window, *, convention, time_limit_s, seed):
    """An anchor that cannot express 'within' and says so in one line, as the anchors do."""
    for j, job in enumerate(window.jobs):
        if job.within is not None:
            raise InvalidInputError(
                f"jobs[{j}]: method 'no-within' does not take 'within'; drop it or use dp"
            )
    return _ignores_constraints(window, convention=convention, time_limit_s=time_limit_s, seed=seed)


def test_a_constraint_the_anchor_cannot_express_is_dropped_and_judged(monkeypatch):
    monkeypatch.setitem(
        _REGISTRY,
        ("tree", "no-within"),
        Method("no-within", "tree", _no_within, builtin=True, constraints=True),
    )
    idle = [f"n{i:02d}" for i in (1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12)]
    window = Window(TREE, idle, [{"nodes": 6, "within": 1}, {"nodes": 4, "within": 1}])
    result, dropped = bench.solve_as_asked(window, "no-within")
    assert dropped == ["jobs[0].within", "jobs[1].within"]
    assert all(job.within is None for job in result.window.jobs)
    assert bench.solve_as_asked(window, "dp")[1] == []
    with pytest.raises(InvalidInputError, match="bogus_option"):  # not a constraint: raised
        bench.solve_as_asked(
            Window(TREE, idle, [{"nodes": 4, "within": 1}]), "no-within", bogus_option=1
        )


def test_unplaced_windows_and_broken_constraints_are_counted(tmp_path, monkeypatch):
    for name, fn in (("ignores", _ignores_constraints), ("gives-up", _gives_up)):
        monkeypatch.setitem(
            _REGISTRY, ("tree", name), Method(name, "tree", fn, builtin=True, constraints=True)
        )
    conf = tmp_path / "blocks.conf"
    conf.write_text(CONF)
    mix = ConstraintMix.parse("segment=0.6,exclusive=0.2")
    result = bench.run_constrained(
        conf, 8, seed=5, mix=mix, quiet=True, methods=("dp", "scip", "ignores", "gives-up")
    )
    windows = constrained_windows(TREE, 8, seed=5, mix=mix)
    summary = {s["method"]: s for s in result["summary"]}
    rows = {(r["window"], r["method"]): r for r in result["rows"]}
    broken = [
        not oracle.keeps(
            w, _ignores_constraints(w, convention="paper", time_limit_s=None, seed=0).assignment
        )
        for w in windows
    ]
    assert any(broken)  # the mix makes segments worth breaking
    assert [rows[k, "ignores"]["broken_jobs"] > 0 for k in range(8)] == broken
    assert summary["ignores"]["broken_jobs"] >= sum(broken)
    assert summary["ignores"]["unplaced_windows"] == 0
    gave_up = [w.num_jobs > 2 for w in windows]
    assert summary["gives-up"]["unplaced_windows"] == sum(gave_up) > 0
    assert summary["gives-up"]["broken_jobs"] == 0
    assert summary["dp"]["all_place"] == 8 - sum(gave_up) == summary["ignores"]["all_place"]
    placed = [k for k in range(8) if not gave_up[k]]
    assert summary["ignores"]["cost_vs_dp"] == pytest.approx(
        np.mean([rows[k, "ignores"]["objective"] / rows[k, "dp"]["objective"] for k in placed])
    )


def test_blocks_runner_on_a_few_windows(tmp_path, capsys):
    from benchmarks import blocks

    assert "BlockSizes=18,36,72,144,288,576" in blocks.block_conf(32)
    assert Topology.from_slurm(blocks.block_conf(256)).num_nodes == 4608
    code = blocks.main(
        [
            "--clusters",
            "nvl576",
            "--num-windows",
            "2",
            "--freeform-time-limit",
            "0.5",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "Table 3" in out
    assert {p.name for p in tmp_path.iterdir()} >= {
        "blocks_table1.csv",
        "blocks_table2.csv",
        "blocks_table3.csv",
        "blocks.md",
        "blocks_rows_nvl576.csv",
        "blocks_nvl576.conf",
    }
    with open(tmp_path / "blocks_table1.csv") as f:
        (t1,) = list(csv.DictReader(f))
    assert t1["windows"] == "2" and float(t1["dp_equals_scip_pct"]) == 100.0
    with open(tmp_path / "blocks_table3.csv") as f:
        t3 = {(r["job"], r["method"]): r for r in csv.DictReader(f)}
    dp = t3["36 nodes, segment 12", "dp"]
    assert dp["keeps_segments"] == "True"
    assert [int(part.split(":")[1]) for part in dp["nodes_per_block"].split()] == [12, 12, 12]
    plain = t3["36 nodes", "dp"]  # asked without its segments: 17 + 17 + 2
    assert plain["nodes_per_block"] == "b00:17 b01:17 b02:2" and plain["keeps_segments"] == "False"
    assert float(plain["cost"]) < float(dp["cost"])
    window = blocks.case_window(Topology.from_slurm(blocks.block_conf(32)))
    assert window.num_idle == sum(blocks.CASE_IDLE.values())
