"""slurm-tree against a real multi-node Slurm 22.05 (``-m slurm``; skipped without Slurm or root).

One cluster of 14 nodes on a 3-level tree with uneven leaves (leaves under a middle switch and a
leaf straight under the root), ``topology/tree``: the tree Slurm reports is the one written, and
Slurm's own choice for a handful of windows is the node set slurm-tree predicts.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from benchmarks.slurm_tree_validation import SlurmPlacer, compare, random_window
from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.client import SlurmError
from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig, slurm_available
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window

_REASON = slurm_available()
needs_slurm = pytest.mark.skipif(_REASON is not None, reason=f"no local Slurm: {_REASON}")

TREE = Topology.from_slurm("""
SwitchName=top Switches=m1,m2,c
SwitchName=m1 Switches=a,b
SwitchName=a Nodes=n[01-04]
SwitchName=b Nodes=n[05-06]
SwitchName=m2 Switches=d,e
SwitchName=d Nodes=n[07-09]
SwitchName=e Nodes=n[10-11]
SwitchName=c Nodes=n[12-14]
""")


@pytest.fixture(scope="module")
def cluster():
    with LocalSlurm(LocalSlurmConfig.for_topology(TREE)) as slurm:
        yield slurm


def test_parse_show_topology_offline():
    text = (
        "SwitchName=top Level=1 LinkSpeed=1 Nodes=n[1-3] Switches=s[0-1]\n"
        "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[1-2]\n"
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n3\n"
    )
    t = Topology.from_scontrol(text)
    assert t.switch_names == ("top", "s0", "s1") and t.node_names == ("n1", "n2", "n3")
    with pytest.raises(InvalidInputError, match="no switch tree"):
        Topology.from_scontrol("")


@pytest.mark.slurm
@needs_slurm
def test_cluster_has_every_node_idle_and_the_tree(cluster):
    nodes = cluster.client().nodes()
    assert [n.name for n in nodes] == list(TREE.node_names)
    assert all(n.state == "idle" and n.cpus_total == 1 for n in nodes)
    assert cluster.topology_path.read_text() == TREE.to_slurm()
    assert Topology.from_slurm_live(cluster.env) == TREE


@pytest.mark.slurm
@needs_slurm
@pytest.mark.parametrize(
    "idle, sizes",
    [
        (list(TREE.node_names), [2, 3, 7, 1]),  # best fit, then large jobs
        (["n01", "n02", "n03", "n04", "n05", "n08", "n09", "n12", "n13"], [6, 3]),
        (["n02", "n04", "n06", "n07", "n08", "n10", "n11", "n12", "n14"], [5, 1, 2]),
    ],
)
def test_slurm_places_like_slurm_tree(cluster, idle, sizes):
    window = Window(TREE, idle, sizes)
    row = compare(window, SlurmPlacer(cluster).place(window))
    assert row["slurm"] is not None and row["same_set"], row


@pytest.mark.slurm
@needs_slurm
def test_random_windows_agree(cluster):
    rng = np.random.default_rng(3)
    for _ in range(3):
        window = random_window(rng, TREE, max_jobs=3)
        row = compare(window, SlurmPlacer(cluster).place(window))
        assert row["same_set"], row


@pytest.mark.slurm
@needs_slurm
def test_errors_without_a_tree_or_a_controller(tmp_path):
    with LocalSlurm(LocalSlurmConfig(cpus=2)) as single:
        with pytest.raises(InvalidInputError, match="TopologyPlugin=topology/tree"):
            Topology.from_slurm_live(single.env)
        single.stop_controller()  # scontrol exits 0 then, its error on stderr
        with pytest.raises(SlurmError) as info:
            Topology.from_slurm_live(single.env)
        assert "slurmctld" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(SlurmError, match="does not exist"):
        Topology.from_slurm_live({"SLURM_CONF": str(tmp_path / "missing.conf")})


@pytest.mark.slurm
@needs_slurm
def test_stop_ends_every_daemon():
    slurm = LocalSlurm(LocalSlurmConfig(node_names=("x1", "x2", "x3")))
    slurm.start()
    procs = list(slurm._procs.values())
    assert len(procs) == 4 and slurm.running
    slurm.stop()
    assert all(p.poll() is not None for p in procs)
    assert not slurm.workdir.exists()
    time.sleep(0.1)
