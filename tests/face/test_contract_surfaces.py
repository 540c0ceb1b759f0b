"""The error and limits contract on the newer surfaces (block and label windows with job
constraints, large trees, the audit, seeds): one test per cause of a traceback, an overrun or a
silent result found by probing them; each failed before its fix."""

from __future__ import annotations

import json

import pytest
from cli_calls import assert_one_line_error, run

import tjap
from tjap.placement.tree.jobs import MAX_WEIGHT

BLOCKS = "examples/blocks-window.json"


# -- weights every exact model takes ----------------------------------------------------------
@pytest.mark.parametrize("weight", ["1e20", "1e308", str(MAX_WEIGHT * 10)])
@pytest.mark.parametrize("method", ["scip", "cpsat", "dp"])
def test_a_weight_no_exact_model_takes_is_refused_up_front(capsys, method, weight):
    code, out, err = run(capsys, "solve", BLOCKS, "--method", method, "--fragmentation", weight)
    assert_one_line_error(code, out, err, "fragmentation weight", "1e+09")


def test_a_prefer_cost_above_the_bound_is_refused_in_python():
    tree = tjap.Topology.from_slurm("BlockName=b1 Nodes=n[1-4]\nBlockSizes=4")
    with pytest.raises(tjap.InvalidInputError, match="prefer_cost must be a number from 0 to"):
        tjap.Window(tree, range(4), [{"nodes": 2, "prefer": 1, "prefer_cost": 1e20}])


def test_at_the_bound_every_exact_model_gives_the_same_optimum(capsys):
    found = {}
    for method in ("scip", "cpsat", "dp", "freeform"):
        code, out, _ = run(
            capsys,
            "solve",
            BLOCKS,
            "--method",
            method,
            "--fragmentation",
            str(MAX_WEIGHT),
            "--time-limit",
            "20",
            "--json",
        )
        assert code == 0
        found[method] = json.loads(out)["objective"]
    assert len(set(found.values())) == 1, found


# -- Slurm's tree selection on large trees ----------------------------------------------------
def _wide_tree(leaves: int):
    lines = [f"SwitchName=l{i} Nodes=n[{10 * i:07d}-{10 * i + 9:07d}]" for i in range(leaves)]
    lines += [f"SwitchName=s{j} Switches=l[{100 * j}-{100 * j + 99}]" for j in range(leaves // 100)]
    lines += [f"SwitchName=top Switches=s[0-{leaves // 100 - 1}]"]
    return tjap.Topology.from_slurm("\n".join(lines))


def test_slurm_tree_keeps_no_leaves_by_switches_table():
    """The table of links from every leaf to every switch was 74.5 GiB on 1,000,000 nodes; the
    links now follow from each switch's ancestors (switches x depth)."""
    from tjap.heuristics.slurm.tree import switch_distance, switch_table

    tree = _wide_tree(2_000)  # 20,000 nodes, 2,021 switches
    table = switch_table(tree)
    assert table.ancestors.shape == (table.num_switches, 3)
    assert all(
        a.nbytes < 10 * table.num_switches * 8 for a in vars(table).values() if hasattr(a, "nbytes")
    )
    leaf, other_spine_leaf = int(table.leaves[0]), int(table.leaves[150])
    assert switch_distance(table.ancestors, leaf, leaf) == 0
    assert switch_distance(table.ancestors, leaf, int(table.leaves[1])) == 2
    assert switch_distance(table.ancestors, leaf, other_spine_leaf) == 4
    window = tjap.Window(tree, range(0, tree.num_nodes, 2), [64, 200, 12])
    result = tjap.solve(window, "slurm-tree")
    assert result.is_feasible() and result.has_solution


# -- seeds ------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", ["-1", "4294967296", "99999999999999999999999"])
@pytest.mark.parametrize(
    "command",
    [
        ["generate", "windows", "--count", "2"],
        ["bench", "exact", "--num-windows", "2"],
        ["solve", "examples/window.json", "--method", "sa"],
        ["interference", "evaluate"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_a_seed_out_of_range_is_one_line_everywhere(capsys, command, seed):
    with pytest.raises(SystemExit) as stop:  # argparse's own exit
        run(capsys, *command, "--seed", seed)
    out, err = capsys.readouterr()
    code = stop.value.code
    assert_one_line_error(code, out, err, "--seed", "4294967295")


@pytest.mark.parametrize("seed", [-1, 2**32, 10**23, True])
def test_solve_refuses_a_seed_out_of_range(seed):
    window = tjap.Window(tjap.FatTree(k=4, num_nodes=16), range(16), [3, 2])
    with pytest.raises(tjap.InvalidInputError, match="seed must be a whole number from 0 to"):
        tjap.solve(window, "sa", seed=seed)
