"""The published code's Table III counting (benchmarks/table3_accounting.py): its SA loop and
its per-period epoch figures."""

from __future__ import annotations

import numpy as np

from benchmarks import table3_accounting as acc
from tjap import solve
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.window import Window
from tjap.placement.tree.workload import Workload


def _window(seed=0):
    rng = np.random.default_rng(seed)
    tree = FatTree.from_layout("published")
    idle = np.sort(rng.choice(tree.num_nodes, 300, replace=False))
    return Window(tree, idle, [int(n) for n in rng.integers(2, 41, 5)])


def test_published_walk_starts_from_seq_and_is_seeded():
    w = _window()
    seq = solve(w, "seq", convention="published").objective
    assert acc.published_walk(w, 0) == seq
    best = acc.published_walk(w, 300, seed=3)
    assert best <= seq and best == acc.published_walk(w, 300, seed=3)
    assert best >= solve(w, "freeform", convention="published", time_limit_s=5).bound - 1e-6


def test_epoch_figures_are_the_sum_over_periods_and_the_mean_over_windows():
    workload = Workload.generate(3000, seed=1)
    result = acc.run("published", epochs=2, seed=1, periods=30, workload=workload, quiet=True)
    for epoch in result["epochs"][:-1]:
        rows = [r for r in result["rows"] if r["epoch"] == epoch["epoch"]]
        assert 0 < len(rows) == epoch["windows"] <= 30
        for name in acc.COLUMNS:
            costs = [r[name] for r in rows]
            assert epoch[f"{name}_periods"] == sum(costs) // 30
            assert np.isclose(epoch[f"{name}_windows"], np.mean(costs))
    for r in result["rows"]:
        assert r["scas_opt"] <= r["seq"] + 1e-6 and r["sa500_published"] <= r["seq"]
