"""The exact SCAS methods on any switch tree: windows over a Topology against a brute-force
oracle on tiny irregular trees (2-4 switch levels, uneven leaf depths and sizes), dp against SCIP
on random trees, the paper's fat-tree as a Topology, names in and out, the methods that refuse a
general tree, and the window's JSON."""

from __future__ import annotations

import json

import pytest
from conftest import make_window
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_cases import IRREGULAR, random_window, scas_oracle, tree_cost

from tjap import InvalidInputError, Status, solve
from tjap.placement.tree.cost import assignment_cost, job_cost
from tjap.placement.tree.scas import is_scas
from tjap.placement.tree.window import Window, load_windows

CONVENTIONS = ("paper", "published")
SCAS_EXACT = ("dp", "scip", "cpsat")
TOL = 1e-6


def check_tree_result(w: Window, r, convention: str) -> None:
    assert r.window is w and r.has_solution and r.is_feasible()
    assert is_scas(w, r.assignment)
    assert r.objective == pytest.approx(
        sum(tree_cost(w, nodes, convention) for nodes in r.assignment), abs=TOL
    )
    assert r.objective == pytest.approx(
        assignment_cost(w.topology, r.assignment, convention), abs=TOL
    )


# -- the exact methods against the oracle ---------------------------------------------------------
def test_random_trees_are_irregular():
    """The random trees do have several levels and leaves at uneven depths."""
    trees = [random_window(seed).topology for seed in range(40)]
    assert {t.num_levels for t in trees} >= {2, 3, 4}
    assert any(len(set(t.switch_depth[t.leaf_switches].tolist())) > 1 for t in trees)
    assert any(len(set(t.leaf_sizes.tolist())) > 1 for t in trees)


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(40))
def test_scas_methods_match_oracle_on_irregular_trees(seed, convention):
    w = random_window(seed)
    best = scas_oracle(w, convention)
    for method in SCAS_EXACT:
        r = solve(w, method, convention=convention, seed=seed)
        assert r.status == Status.OPTIMAL, method
        assert r.objective == pytest.approx(best, abs=TOL), method
        check_tree_result(w, r, convention)


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(100, 115))
def test_dp_many_jobs_matches_oracle_on_irregular_trees(seed, convention):
    w = random_window(seed, max_idle=11, max_jobs=5)
    r = solve(w, "dp", convention=convention)
    assert r.objective == pytest.approx(scas_oracle(w, convention), abs=TOL)
    check_tree_result(w, r, convention)


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_hand_written_tree_every_method(convention):
    w = Window(IRREGULAR, ["a2", "e1", "b1", "b3", "b4", "c1", "d2", "a1", "c2"], [3, 2, 2])
    best = scas_oracle(w, convention)
    for method in ("dp", "scip", "cpsat", "scip-paper", "cpsat-paper", "auto"):
        r = solve(w, method, convention=convention)
        assert r.objective == pytest.approx(best, abs=TOL), method
        check_tree_result(w, r, convention)
    seq = solve(w, "seq", convention=convention)
    check_tree_result(w, seq, convention)
    assert seq.objective >= best - TOL


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from(CONVENTIONS))
def test_dp_equals_scip_on_random_trees(seed, convention):
    w = random_window(seed, max_idle=14, max_jobs=4)
    dp = solve(w, "dp", convention=convention)
    scip = solve(w, "scip", convention=convention)
    assert dp.objective == pytest.approx(scip.objective, abs=TOL)
    assert dp.is_feasible() and scip.is_feasible()


# -- the paper's fat-tree as a Topology ---------------------------------------------------------
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("seed", range(20))
def test_fat_tree_as_switch_tree_gives_the_same_optimum(seed, convention):
    fat = make_window(seed)
    t = fat.topology
    tree = t.as_tree()
    w = Window(tree, fat.idle_nodes, fat.job_sizes)
    assert (w.idle_nodes == fat.idle_nodes).all()
    for size in set(fat.job_sizes):
        assert (w.block_costs(size, convention) == fat.block_costs(size, convention)).all()
    for method in ("dp", "scip"):
        a = solve(fat, method, convention=convention)
        b = solve(w, method, convention=convention)
        assert b.objective == pytest.approx(a.objective, abs=TOL), method
        assert job_cost(tree, b.assignment[0], convention) == job_cost(
            t, b.assignment[0], convention
        )


# -- names in, names out --------------------------------------------------------------------------
def test_names_in_names_out():
    w = Window(IRREGULAR, ["c2", "b1", "a1", "b2"], [2, 2])
    assert w.idle_nodes.tolist() == [IRREGULAR.node_index(v) for v in ("a1", "b1", "b2", "c2")]
    assert Window(IRREGULAR, w.idle_nodes.tolist(), [2, 2]) == w  # indices work too
    r = solve(w, "dp")
    assert r.node_names() == tuple(
        tuple(IRREGULAR.node_names[v] for v in nodes) for nodes in r.assignment
    )
    assert set(r.node_names()[0]) == {"b1", "b2"}
    data = r.to_dict()
    assert data["nodes"] == [list(names) for names in r.node_names()]
    assert data["assignment"] == [list(nodes) for nodes in r.assignment]
    assert job_cost(IRREGULAR, ["b1", "b2"]) == job_cost(IRREGULAR, r.assignment[0])


def test_fat_tree_results_keep_their_json():
    r = solve(make_window(3), "dp")
    assert "nodes" not in r.to_dict()
    assert r.node_names() == tuple(tuple(str(v) for v in nodes) for nodes in r.assignment)


@pytest.mark.parametrize(
    "idle, match",
    [
        (["a1", "zz9"], "idle_nodes: unknown node 'zz9'"),
        (["a1", "a1"], "repeats node 'a1'"),
        ([0, 99], "node index 99 is out of range"),
        (42, "must be a list"),
        ("a[2-1]", "reversed"),
    ],
)
def test_bad_idle_nodes_raise_one_line_errors(idle, match):
    with pytest.raises(InvalidInputError, match=match) as info:
        Window(IRREGULAR, idle, [1])
    assert "\n" not in str(info.value)


# -- every method on a general tree ----------------------------------------------------------------
@pytest.mark.parametrize(
    "method",
    [
        "dp",
        "scip",
        "cpsat",
        "scip-paper",
        "cpsat-paper",
        "seq",
        "auto",
        "freeform",
        "freeform-greedy",
        "sa",
        "lns",
        "slurm-tree",
    ],
)
def test_every_method_places_a_general_tree_window(method):
    w = Window(IRREGULAR, ["a1", "a2", "b1", "b2", "c1"], [2, 2])
    r = solve(w, method, seed=0)
    assert r.is_feasible() and sorted(map(len, r.assignment)) == [2, 2]
    assert r.objective == pytest.approx(sum(job_cost(IRREGULAR, nodes) for nodes in r.assignment))


def test_nsa_refuses_a_general_tree_saying_why():
    w = Window(IRREGULAR, ["a1", "a2", "b1", "b2"], [2, 2])
    with pytest.raises(InvalidInputError) as info:
        solve(w, "nsa")
    message = str(info.value)
    assert "needs a fat-tree" in message and "'sa' or 'lns'" in message and "\n" not in message


# -- JSON -----------------------------------------------------------------------------------------
def test_switch_tree_window_json_round_trip(tmp_path):
    w = Window(IRREGULAR, ["e1", "a3", "b2", "c1"], [1, 2], meta={"epoch": 4})
    data = json.loads(w.to_json())
    assert data["topology"] == {"tree": IRREGULAR.to_dict()}
    assert data["idle_nodes"] == ["a3", "e1", "b2", "c1"]  # depth-first order
    back = Window.from_json(w.to_json())
    assert back == w and back.meta == w.meta
    path = tmp_path / "windows.jsonl"
    path.write_text(w.to_json() + "\n" + make_window(1).to_json() + "\n")
    assert load_windows(path) == [w, make_window(1)]


def test_window_reads_a_slurm_topology_next_to_its_file(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "topology.conf").write_text(IRREGULAR.to_slurm())
    window = {
        "topology": {"slurm": "conf/topology.conf"},
        "idle_nodes": ["b1", "b2", "d1"],
        "job_sizes": [2],
    }
    (tmp_path / "w.json").write_text(json.dumps(window))
    [w] = load_windows(tmp_path / "w.json")
    assert w.topology == IRREGULAR
    assert solve(w, "dp").node_names() == (("b1", "b2"),)
    with pytest.raises(InvalidInputError, match="cannot read topology file"):
        Window.from_dict({**window, "topology": {"slurm": "missing.conf"}}, base_dir=tmp_path)
    with pytest.raises(InvalidInputError, match="takes one key"):
        Window.from_dict({**window, "topology": {"slurm": 3}})
