"""The online replay on any switch tree (tjap.placement.tree.online, ``tjap online --topology``):
every policy and placement on a Slurm topology/tree and a topology/block cluster, the same answers
as the paper's switch-and-pod formula on fat-trees (re-implemented in tree_cost_oracle), and the
command line's ``--topology`` with its one-line errors."""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from functools import partial

import numpy as np
import pytest
from cli_calls import assert_one_line_error, run
from tree_cost_oracle import fat_tree_block_costs, fat_tree_cost, set_cost_bruteforce

from tjap import FatTree, solve
from tjap.placement.tree.online import place_job, replay, window_ticks
from tjap.placement.tree.stream import tree_load
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.workload import Workload

#: A Slurm topology/tree cluster of 20 nodes: leaves of uneven sizes at uneven depths.
TREE_CONF = """\
SwitchName=l1 Nodes=a[1-5]
SwitchName=l2 Nodes=b[1-3]
SwitchName=l3 Nodes=c[1-4]
SwitchName=l4 Nodes=d[1-6]
SwitchName=l5 Nodes=e[1-2]
SwitchName=agg1 Switches=l[1-2]
SwitchName=agg2 Switches=l[3-4]
SwitchName=top Switches=agg[1-2],l5
"""
#: A Slurm topology/block cluster: 4 base blocks of 4 nodes.
BLOCK_CONF = """\
BlockName=b1 Nodes=g[01-04]
BlockName=b2 Nodes=g[05-08]
BlockName=b3 Nodes=g[09-12]
BlockName=b4 Nodes=g[13-16]
BlockSizes=4,8,16
"""
CONFS = {"tree": TREE_CONF, "block": BLOCK_CONF}
#: (policy, placement, window method) of the replays below.
CASES = [
    ("window", "firstfit", "dp"),
    ("window", "firstfit", "sa"),
    ("fcfs", "firstfit", "dp"),
    ("fcfs", "contiguous", "dp"),
    ("fcfs", "freeform", "dp"),
    ("easy", "firstfit", "dp"),
    ("easy", "contiguous", "dp"),
    ("easy", "freeform", "dp"),
]
TOL = 1e-6


@pytest.fixture(params=sorted(CONFS))
def conf(request, tmp_path):
    path = tmp_path / f"{request.param}.conf"
    path.write_text(CONFS[request.param])
    return path


def workload_for(tree: Topology, num_jobs: int = 40, seed: int = 2) -> Workload:
    """The paper's generator scaled to the tree, as ``tjap online --topology`` scales it."""
    return Workload.generate(num_jobs, seed, **tree_load(tree.num_nodes))


def method_of(name: str):
    return partial(solve, method="sa", iterations=60) if name == "sa" else name


def assert_valid(tree, workload, schedule) -> None:
    """Every job once, after its arrival, on its node count of distinct nodes of the tree, and no
    node running two jobs at once."""
    spans = defaultdict(list)
    for j in range(workload.num_jobs):
        nodes, start = schedule.nodes[j], schedule.start_s[j]
        assert start >= workload.arrival_s[j]
        assert len(nodes) == len(set(nodes)) == workload.requested_nodes[j]
        assert all(0 <= v < tree.num_nodes for v in nodes)
        for v in nodes:
            spans[v].append((start, start + int(workload.runtime_s[j])))
    for intervals in spans.values():
        intervals.sort()
        assert all(b[0] >= a[1] for a, b in zip(intervals, intervals[1:]))


def in_start_order(workload, schedule):
    """(job, nodes idle at its start) in start order, jobs starting together in arrival order,
    ends before starts."""
    busy_until = np.zeros(schedule.topology.num_nodes, dtype=np.int64)
    for j in sorted(range(workload.num_jobs), key=lambda j: (schedule.start_s[j], j)):
        t = schedule.start_s[j]
        yield j, np.flatnonzero(busy_until <= t)
        busy_until[schedule.nodes[j]] = t + workload.runtime_s[j]


# -- any Topology: a topology/tree and a topology/block cluster -----------------------------------
@pytest.mark.parametrize("policy, placement, method", CASES)
def test_every_policy_and_placement_on_slurm_clusters(conf, policy, placement, method):
    tree = Topology.from_file(conf)
    workload = workload_for(tree)
    run_once = partial(
        replay, tree, workload, policy=policy, placement=placement, method=method_of(method)
    )
    schedule = run_once(seed=3)
    assert_valid(tree, workload, schedule)
    again = run_once(seed=3)
    assert again.to_dict() == schedule.to_dict()  # the same seed, the same replay
    data = schedule.to_dict()
    assert data["jobs"][0]["names"] == [tree.node_names[v] for v in data["jobs"][0]["nodes"]]
    metrics = schedule.metrics()
    multi = [j for j in range(workload.num_jobs) if workload.requested_nodes[j] > 1]
    for convention in ("paper", "published"):
        pairs = [
            set_cost_bruteforce(tree.switch_parent, tree.node_leaf, schedule.nodes[j], convention)
            for j in multi
        ]
        assert metrics[f"mean_cost_{convention}"] == pytest.approx(np.mean(pairs), rel=1e-12)


@pytest.mark.parametrize("placement", ["contiguous", "freeform"])
@pytest.mark.parametrize("policy", ["fcfs", "easy"])
def test_per_job_placements_are_the_cheapest_by_the_pair_loop(conf, policy, placement):
    """Each job's nodes are the cheapest block of the nodes idle at its start (contiguous) or the
    cheapest node set of them (freeform), by the plain pair loop of tree_cost_oracle."""
    tree = Topology.from_file(conf)
    workload = workload_for(tree, num_jobs=30, seed=5)
    schedule = replay(tree, workload, policy=policy, placement=placement, convention="published")

    def cost(nodes):
        return set_cost_bruteforce(tree.switch_parent, tree.node_leaf, nodes, "published")

    for j, idle in in_start_order(workload, schedule):
        size, nodes = int(workload.requested_nodes[j]), schedule.nodes[j]
        assert sorted(nodes) == sorted(place_job(tree, idle, size, placement, "published"))
        m = idle.size
        if placement == "contiguous":
            blocks = [[int(idle[(p + i) % m]) for i in range(size)] for p in range(m)]
            assert nodes in blocks
            assert cost(nodes) == min(cost(b) for b in blocks)
        elif math.comb(m, size) <= 5000:
            best = min(cost(list(c)) for c in itertools.combinations(idle.tolist(), size))
            assert cost(nodes) == pytest.approx(best, abs=TOL)


# -- fat-trees: the paper's switch-and-pod formula as the oracle ----------------------------------
FAT_TREES = [(16, 2, 2), (18, 2, 3), (20, 5, 4), (14, 3, 3)]


def fat(layout) -> FatTree:
    n, per_switch, per_pod = layout
    return FatTree(num_nodes=n, nodes_per_switch=per_switch, switches_per_pod=per_pod)


@pytest.mark.parametrize("convention", ["paper", "published"])
@pytest.mark.parametrize("policy", ["fcfs", "easy"])
@pytest.mark.parametrize("layout", FAT_TREES)
def test_contiguous_on_fat_trees_is_the_first_cheapest_block_by_the_formula(
    layout, policy, convention
):
    """The batch simulator's contiguous placement takes, at every start, the first cheapest block
    of the idle sequence by the fat-tree formula, and the metrics' mean costs are its."""
    tree = fat(layout)
    workload = Workload.generate(60, 11, max_nodes=tree.num_nodes // 2)
    schedule = replay(tree, workload, policy=policy, placement="contiguous", convention=convention)
    assert_valid(tree, workload, schedule)
    for j, idle in in_start_order(workload, schedule):
        size = int(workload.requested_nodes[j])
        costs = fat_tree_block_costs(tree.switch_of[idle], tree.pod_of[idle], size, convention)
        first = int(np.argmin(costs))
        assert schedule.nodes[j] == [int(idle[(first + i) % idle.size]) for i in range(size)]
    multi = [j for j in range(workload.num_jobs) if workload.requested_nodes[j] > 1]
    metrics = schedule.metrics()
    for conv in ("paper", "published"):
        formula = [
            fat_tree_cost(tree.switch_of[schedule.nodes[j]], tree.pod_of[schedule.nodes[j]], conv)
            for j in multi
        ]
        assert metrics[f"mean_cost_{conv}"] == float(np.mean(formula))


def scas_optimum_by_formula(tree: FatTree, window, convention: str) -> float:
    """The cheapest tuple of pairwise disjoint blocks of Q, one per job, each priced by the
    fat-tree formula: a plain enumeration."""
    q, m = window.idle_nodes, window.num_idle
    best = math.inf
    for starts in itertools.product(range(m), repeat=window.num_jobs):
        used, total = set(), 0.0
        for start, size in zip(starts, window.job_sizes):
            cover = {(start + i) % m for i in range(size)}
            if used & cover:
                break
            used |= cover
            block = q[sorted(cover, key=lambda p: (p - start) % m)]
            total += fat_tree_cost(tree.switch_of[block], tree.pod_of[block], convention)
        else:
            best = min(best, total)
    return best


@pytest.mark.parametrize("convention", ["paper", "published"])
@pytest.mark.parametrize("layout", [(16, 2, 2), (14, 3, 3)])
def test_window_dp_on_fat_trees_is_the_optimum_by_the_formula(layout, convention):
    tree = fat(layout)
    workload = Workload.generate(80, 4, max_nodes=6)
    windows = 0
    for tick in window_ticks(
        tree, workload, 0, 40, tau_s=30, cap=3, method="dp", convention=convention, seed=0
    ):
        if tick.window is None:
            continue
        windows += 1
        r = tick.result
        formula = sum(
            fat_tree_cost(tree.switch_of[list(nodes)], tree.pod_of[list(nodes)], convention)
            for nodes in r.assignment
        )
        assert r.objective == pytest.approx(formula, rel=1e-12)
        assert r.objective == pytest.approx(
            scas_optimum_by_formula(tree, tick.window, convention), rel=1e-12
        )
    assert windows > 5


# -- the command line -----------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["window", "fcfs", "easy"])
def test_cli_online_topology_is_the_replay_on_that_tree(conf, policy, capsys):
    placement = [] if policy == "window" else ["--placement", "contiguous"]
    code, out, err = run(
        capsys, "online", "--topology", conf, "--policy", policy, *placement,
        "--num-jobs", "40", "--seed", "6", "--json", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    tree = Topology.from_file(conf)
    workload = Workload.generate(100_000, 6, **tree_load(tree.num_nodes))
    schedule = replay(
        tree,
        workload,
        policy=policy,
        placement=placement[1] if placement else "firstfit",
        seed=6,
        jobs=range(40),
    )
    assert data == {**json.loads(json.dumps(schedule.metrics())), "topology": str(conf)}


def authors_workload(path, num_jobs=60, seed=8, max_nodes=30):
    """A job list in the seed-002 authors' format (job id, submit s, runtime s, nodes)."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.integers(0, 40, num_jobs))
    lines = [
        f"{j} {int(submit[j])} {int(rng.integers(10, 900))} {int(rng.integers(1, max_nodes))}"
        for j in range(num_jobs)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "policy, placement", [("window", "firstfit"), ("fcfs", "contiguous"), ("easy", "freeform")]
)
def test_cli_a_fat_tree_as_topology_conf_replays_as_its_layout(tmp_path, policy, placement, capsys):
    """The paper's layout written as a topology.conf and read back is the same cluster: the same
    replay, number for number, as --layout paper."""
    conf = tmp_path / "paper.conf"
    conf.write_text(FatTree.from_layout("paper").to_slurm())
    jobs = authors_workload(tmp_path / "jobs.txt")
    common = ["--workload", jobs, "--policy", policy, "--placement", placement]
    common += ["--num-jobs", "60", "--json", "--quiet"]
    code, out, err = run(capsys, "online", "--layout", "paper", *common)
    assert code == 0, err
    by_layout = json.loads(out)
    code, out, err = run(capsys, "online", "--topology", conf, *common)
    assert code == 0, err
    by_file = json.loads(out)
    assert by_file.pop("topology") == str(conf)
    assert by_file == by_layout


def test_cli_online_reads_a_node_list_at_its_levels(tmp_path, capsys):
    items = [
        {
            "kind": "Node",
            "metadata": {"name": f"n{r}{i}", "labels": {"zone": f"z{r // 2}", "rack": f"r{r}"}},
        }
        for r in range(4)
        for i in range(5)
    ]
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    argv = ["online", "--topology", nodes, "--policy", "easy", "--placement", "contiguous"]
    code, out, err = run(capsys, *argv, "--levels", "zone,rack", "--num-jobs", "30", "--json")
    assert code == 0, err
    tree = Topology.from_node_labels(nodes, ["zone", "rack"])
    workload = Workload.generate(100_000, 0, **tree_load(tree.num_nodes))
    schedule = replay(tree, workload, policy="easy", placement="contiguous", jobs=range(30))
    assert json.loads(out)["mean_cost_paper"] == schedule.metrics()["mean_cost_paper"]
    assert_one_line_error(*run(capsys, *argv, "--num-jobs", "5"), "--levels KEY,KEY")


def test_cli_online_topology_errors(tmp_path, capsys):
    good = tmp_path / "tree.conf"
    good.write_text(TREE_CONF)
    assert_one_line_error(
        *run(capsys, "online", "--topology", good, "--layout", "paper", "--num-jobs", "5"),
        "not both",
    )
    missing = tmp_path / "missing.conf"
    assert_one_line_error(
        *run(capsys, "online", "--topology", missing, "--num-jobs", "5"), str(missing)
    )
    bad = tmp_path / "bad.conf"
    bad.write_text("SwitchName=s1 Nodes=n[1-4]\nthis is no topology\n")
    assert_one_line_error(*run(capsys, "online", "--topology", bad, "--num-jobs", "5"), str(bad))
    broken = tmp_path / "broken.json"
    broken.write_text('{"switches": 3}')
    assert_one_line_error(
        *run(capsys, "online", "--topology", broken, "--num-jobs", "5"), str(broken)
    )
    assert_one_line_error(
        *run(capsys, "online", "--topology", good, "--levels", "rack", "--num-jobs", "5"),
        "--levels is for a node list",
    )
    assert_one_line_error(
        *run(capsys, "online", "--levels", "rack", "--num-jobs", "5"), "--levels needs"
    )
