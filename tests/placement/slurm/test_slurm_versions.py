"""The local cluster on either Slurm: the system's (22.05 on Debian 12) or 24.11 built by
``.ci/build-slurm-newer``, and Slurm 24.11's ``topology/block``.

Tests marked ``slurm`` start real daemons (``-m slurm``); each Slurm's tests skip with the reason
when it is missing (24.11: not built yet) or we are not root. The others check the choice of
binaries, the generated configuration and :func:`~tjap.placement.slurm.harness.block_conf`
without any Slurm.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.client import SlurmError
from tjap.placement.slurm.harness import (
    LocalSlurm,
    LocalSlurmConfig,
    block_conf,
    is_block_conf,
    newer_slurm_available,
    slurm_available,
    slurm_binary,
    slurm_prefix,
    slurm_version,
    version_tuple,
)
from tjap.placement.tree.topology import Topology

ROOT = Path(__file__).resolve().parents[3]

#: 16 nodes in 4 base blocks of 4; Slurm plans blocks of 4, 8 and 16 nodes.
BLOCKS_CONF = (
    "".join(f"BlockName=b{i} Nodes=n[{4 * i - 3}-{4 * i}]\n" for i in range(1, 5))
    + "BlockSizes=4,8,16\n"
)
BLOCKS = Topology.from_slurm(BLOCKS_CONF)

VERSIONS = [
    pytest.param(
        "system",
        marks=pytest.mark.skipif(
            slurm_available() is not None, reason=f"no system Slurm: {slurm_available()}"
        ),
    ),
    pytest.param(
        "24.11",
        marks=pytest.mark.skipif(
            newer_slurm_available() is not None, reason=f"no Slurm 24.11: {newer_slurm_available()}"
        ),
    ),
]
needs_newer = pytest.mark.skipif(
    newer_slurm_available() is not None, reason=f"no Slurm 24.11: {newer_slurm_available()}"
)


def fake_slurm(prefix: Path, version: str) -> Path:
    """An install prefix whose Slurm programs are scripts (slurmctld -V prints ``version``)."""
    for sub, names in (
        ("sbin", ("slurmctld", "slurmd")),
        ("bin", ("sbatch", "squeue", "sinfo", "scancel", "scontrol", "sdiag")),
    ):
        (prefix / sub).mkdir(parents=True, exist_ok=True)
        for name in names:
            path = prefix / sub / name
            path.write_text(f"#!/bin/sh\necho '{version}'\n")
            path.chmod(0o755)
    return prefix


# -- without Slurm -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        (ROOT / "examples" / "blocks.conf").read_text(),
        BLOCKS_CONF,
        "".join(f"BlockName=b{i} Nodes=n[{3 * i - 2}-{3 * i}]\n" for i in range(1, 4)),
        "".join(f"BlockName=r{i} Nodes=n[{2 * i - 1}-{2 * i}]\n" for i in range(1, 17)),
        "BlockName=a Nodes=x[1-4]\nBlockName=b Nodes=x[5-10]\nBlockName=c Nodes=x[11-14]\n"
        "BlockSizes=4\n",
    ],
)
def test_block_conf_reads_back_to_the_same_tree(text):
    tree = Topology.from_slurm(text)
    written = block_conf(tree)
    assert is_block_conf(written) and "SwitchName" not in written
    assert Topology.from_slurm(written) == tree


def test_block_conf_writes_the_sizes_given_and_derives_them():
    assert block_conf(BLOCKS).splitlines()[-1] == "BlockSizes=4,8,16"
    assert block_conf(BLOCKS, [4, 8, 16]).splitlines() == [
        "BlockName=b1 Nodes=n[1-4]",
        "BlockName=b2 Nodes=n[5-8]",
        "BlockName=b3 Nodes=n[9-12]",
        "BlockName=b4 Nodes=n[13-16]",
        "BlockSizes=4,8,16",
    ]
    # the same blocks with other sizes build another tree: refused, not written wrongly
    with pytest.raises(InvalidInputError, match="BlockSizes=4,16"):
        block_conf(BLOCKS, [4, 16])
    with pytest.raises(InvalidInputError, match="block_sizes: BlockSizes=4,six holds 'six'"):
        block_conf(BLOCKS, [4, "six"])
    # two aggregates under the implicit root: a size holding all four would join them in a block
    pairs = Topology.from_slurm(BLOCKS_CONF.replace("4,8,16", "4,8"))
    assert pairs.switch_names[0] == "(root)" and block_conf(pairs).endswith("BlockSizes=4,8\n")
    with pytest.raises(InvalidInputError, match="not the block topology"):
        block_conf(pairs, [4, 8, 16])


def test_block_conf_refuses_a_tree_slurm_would_not_build():
    # a middle switch over 3 leaves and one over 1: Slurm's blocks pair neighbours instead
    tree = Topology.from_slurm(
        "SwitchName=top Switches=m1,m2\nSwitchName=m1 Switches=a,b,c\n"
        "SwitchName=m2 Switches=d\n" + "".join(f"SwitchName={s} Nodes={s}[1-2]\n" for s in "abcd")
    )
    with pytest.raises(InvalidInputError, match="not the block topology"):
        block_conf(tree)
    # a switch tree that happens to be a block tree is written (aggregate names aside)
    flat = Topology.from_slurm(
        "SwitchName=top Switches=a,b\nSwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n[3-4]\n"
    )
    assert block_conf(flat) == (
        "BlockName=a Nodes=n[1-2]\nBlockName=b Nodes=n[3-4]\nBlockSizes=2,4\n"
    )


def test_topology_plugin_follows_the_text(tmp_path):
    assert LocalSlurmConfig.for_blocks(BLOCKS).topology_plugin == "topology/block"
    tree = Topology.from_slurm("SwitchName=s Nodes=n[1-2]\n")
    assert LocalSlurmConfig.for_topology(tree).topology_plugin == "topology/tree"
    assert LocalSlurmConfig().topology_plugin is None
    lines = LocalSlurm(LocalSlurmConfig.for_blocks(BLOCKS, slurm="24.11"), tmp_path).conf_lines()
    assert "TopologyPlugin=topology/block" in lines
    assert lines[-2].startswith("NodeName=n1,n2,n3,") and ",n16 " in lines[-2]
    assert is_block_conf("  blocksizes=4,8\n") and not is_block_conf(tree.to_slurm())


def test_slurm_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("TJAP_SLURM_NEWER", str(tmp_path / "newer"))
    assert slurm_prefix() is None and slurm_prefix("system") is None
    assert slurm_prefix("24.11") == tmp_path / "newer"
    assert slurm_prefix(str(tmp_path)) == tmp_path
    for bad in ("23.02", "relative/path", ""):
        with pytest.raises(SlurmError, match="slurm must be 'system', '24.11' or the absolute"):
            slurm_prefix(bad)
    with pytest.raises(SlurmError, match="slurm must be"):
        LocalSlurm(LocalSlurmConfig(slurm="newest"))
    # not built: a one-line reason naming the build script
    for reason in (slurm_available("24.11"), newer_slurm_available()):
        assert reason.startswith("Slurm 24.11 is not built (no ")
        assert str(tmp_path / "newer" / "sbin" / "slurmctld") in reason
        assert ".ci/build-slurm-newer" in reason and "\n" not in reason
    assert "no Slurm installed under" in slurm_available(str(tmp_path / "other"))


def test_a_prefix_is_used_for_every_program(tmp_path, monkeypatch):
    prefix = fake_slurm(tmp_path / "slurm", "slurm 24.11.5")
    monkeypatch.setenv("TJAP_SLURM_NEWER", str(prefix))
    assert slurm_binary("slurmctld", "24.11") == str(prefix / "sbin" / "slurmctld")
    assert slurm_binary("sbatch", "24.11") == str(prefix / "bin" / "sbatch")
    assert slurm_binary("munged", "24.11") == slurm_binary("munged")  # munge: the system's
    assert slurm_version("24.11") == "slurm 24.11.5"
    assert version_tuple("slurm-wlm 22.05.8") == (22, 5, 8)
    slurm = LocalSlurm(LocalSlurmConfig(node_names=("a", "b"), slurm="24.11"), tmp_path / "w")
    path = slurm.env["PATH"].split(os.pathsep)
    assert path[:2] == [str(prefix / "bin"), str(prefix / "sbin")]
    assert shutil.which("sbatch", path=slurm.env["PATH"]) == str(prefix / "bin" / "sbatch")
    assert slurm.client().env["PATH"] == slurm.env["PATH"]
    assert slurm.binary("slurmd") == str(prefix / "sbin" / "slurmd")
    assert slurm.version == (24, 11, 5)
    # the system's Slurm leaves PATH as it is
    system = LocalSlurm(LocalSlurmConfig(), tmp_path / "s")
    assert system.env["PATH"] == os.environ["PATH"]


def test_block_topology_needs_23_11(tmp_path):
    old = fake_slurm(tmp_path / "old", "slurm-wlm 22.05.8")
    work = tmp_path / "w"
    with pytest.raises(SlurmError) as err:
        LocalSlurm(LocalSlurmConfig.for_blocks(BLOCKS, slurm=str(old)), work).check_topology()
    assert str(err.value) == (
        f"topology/block needs Slurm 23.11 or later, and the {old} Slurm is 22.05; build "
        "24.11 with .ci/build-slurm-newer (as root) and pass slurm='24.11'"
    )
    new = fake_slurm(tmp_path / "new", "slurm 24.11.5")
    LocalSlurm(LocalSlurmConfig.for_blocks(BLOCKS, slurm=str(new)), work).check_topology()
    # the same tree as switches runs on 22.05
    LocalSlurm(LocalSlurmConfig.for_topology(BLOCKS, slurm=str(old)), work).check_topology()


# -- on a real Slurm ---------------------------------------------------------------------------


def daemons_of(conf_path) -> list[int]:
    """PIDs of the slurmctld/slurmd processes started with this slurm.conf."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and Path(argv[0].decode(errors="replace")).name in ("slurmctld", "slurmd")
            and str(conf_path).encode() in argv
        ):
            found.append(int(entry.name))
    return found


def wait_running(client, job_id: int, timeout_s: float = 15) -> str:
    """The nodes (hostlist) of a job once it runs."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        state = client.run(["squeue", "-h", "-j", str(job_id), "-o", "%T %N"]).stdout.split()
        if state and state[0] == "RUNNING":
            return state[1]
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not start: {state}")


def submit(client, *args) -> int:
    out = client.run(
        ["sbatch", "--parsable", "-t", "1", "-o", "/dev/null", *args, "--wrap", "sleep 60"]
    ).stdout
    return int(out.strip().split(";")[0])


@pytest.mark.slurm
@pytest.mark.parametrize("slurm", VERSIONS)
def test_cluster_runs_a_job_and_stops(slurm):
    names = ("n1", "n2", "n3", "n4")
    cluster = LocalSlurm(LocalSlurmConfig(node_names=names, slurm=slurm))
    cluster.start()
    pids = []
    try:
        want = slurm_version(slurm).split()[-1]
        prefix = slurm_prefix(slurm)
        for proc in cluster._procs.values():  # the chosen Slurm's daemons, by full path
            exe = os.readlink(f"/proc/{proc.pid}/exe")
            assert prefix is None or exe.startswith(str(prefix) + "/sbin/"), exe
        client = cluster.client()
        assert client.run(["sbatch", "--version"]).stdout.split()[-1] == want
        config = client.run(["scontrol", "show", "config"]).stdout
        assert f"SLURM_VERSION           = {want}" in config
        assert [n.name for n in client.nodes()] == list(names)
        job = submit(client, "-N", "2", "-w", "n2,n4")
        assert wait_running(client, job) == "n[2,4]"
        pids = daemons_of(cluster.conf_path)
        assert sorted(pids) == sorted(p.pid for p in cluster._procs.values())
        assert len(pids) == 1 + len(names)
    finally:
        conf = cluster.conf_path
        cluster.stop()
    assert daemons_of(conf) == []
    assert all(not Path(f"/proc/{pid}").exists() for pid in pids)
    assert not cluster.running and not cluster.workdir.exists()


@pytest.mark.slurm
@pytest.mark.skipif(slurm_available() is not None, reason=f"no system Slurm: {slurm_available()}")
def test_system_slurm_refuses_blocks_when_it_is_older(tmp_path):
    cluster = LocalSlurm(LocalSlurmConfig.for_blocks(BLOCKS), tmp_path)
    if cluster.version >= (23, 11):
        pytest.skip(f"the system Slurm is {slurm_version()}, which has topology/block")
    with pytest.raises(
        SlurmError,
        match=r"topology/block needs Slurm 23.11 or later.*"
        r"\.ci/build-slurm-newer",
    ):
        cluster.start()
    assert not cluster.running and daemons_of(cluster.conf_path) == []


@pytest.fixture(scope="module")
def blocks_cluster():
    with LocalSlurm(LocalSlurmConfig.for_blocks(BLOCKS, slurm="24.11")) as cluster:
        yield cluster


@pytest.mark.slurm
@needs_newer
def test_slurm_lists_the_blocks_and_tjap_reads_the_same_tree(blocks_cluster):
    text = blocks_cluster.client().run(["scontrol", "show", "topology"]).stdout
    listed = [(line.split()[0], line.split()[2]) for line in text.splitlines() if line.strip()]
    assert listed == [
        ("BlockName=b1", "Nodes=n[1-4]"),
        ("BlockName=b2", "Nodes=n[5-8]"),
        ("BlockName=b3", "Nodes=n[9-12]"),
        ("BlockName=b4", "Nodes=n[13-16]"),
        ("AggregatedBlock=b[1-2]", "Nodes=n[1-8]"),
        ("AggregatedBlock=b[3-4]", "Nodes=n[9-16]"),
        ("AggregatedBlock=b[1-4]", "Nodes=n[1-16]"),
    ]
    assert Topology.from_scontrol(text) == BLOCKS
    assert Topology.from_slurm_live(blocks_cluster.env) == BLOCKS


@pytest.mark.slurm
@needs_newer
def test_block_placements_on_the_empty_cluster(blocks_cluster):
    client = blocks_cluster.client()
    try:
        job = submit(client, "-N", "8", "--segment=4")
        assert wait_running(client, job) == "n[9-16]"
        client.cancel([job])
        blocks_cluster.wait_idle()
        # a node list must lie in one block of the level the job's size asks for
        with pytest.raises(SlurmError, match="Requested node configuration is not available"):
            submit(client, "-N", "2", "-w", "n3,n6")
        job = submit(client, "-N", "2", "-w", "n3,n4")
        assert wait_running(client, job) == "n[3-4]"
    finally:
        client.cancel([j.job_id for j in client.queue()])
        blocks_cluster.wait_idle()
