"""Slurm accounting in the local harness: a private MariaDB and slurmdbd beside a multi-node Slurm
(``-m slurm``; skipped with the reason without Slurm, MariaDB, slurmdbd or root).

One 6-node ``topology/tree`` cluster with ``accounting=True`` runs a few whole-node jobs; sacct
must list each one with its node list, and the jobcomp log must hold the same jobs with the same
nodes, start and end. The database must run as ``mysql`` on 127.0.0.1 only, slurmdbd's database
user must have rights on its own database only, and no daemon may outlive :meth:`LocalSlurm.stop`
(also when the start fails halfway).
"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

from tjap.placement.slurm import accounting_db
from tjap.placement.slurm.accounting_db import (
    ACCOUNTING_INSTALL_HINT,
    DATABASE,
    SACCT_FORMAT,
    sacct_records_argv,
)
from tjap.placement.slurm.client import SlurmError, parse_jobcomp_line
from tjap.placement.slurm.harness import (
    LocalSlurm,
    LocalSlurmConfig,
    accounting_available,
    slurm_available,
)
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.placement.tree.topology import Topology

_REASON = slurm_available("system") or accounting_available("system")
needs_accounting = pytest.mark.skipif(_REASON is not None, reason=f"no accounting: {_REASON}")

TREE = Topology.from_slurm("""
SwitchName=top Switches=a,b
SwitchName=a Nodes=n[1-3]
SwitchName=b Nodes=n[4-6]
""")
SIZES = (2, 3, 1, 4, 2, 6)


def config(**options) -> LocalSlurmConfig:
    return LocalSlurmConfig.for_topology(
        TREE, slurm="system", accounting=True, timezone="UTC", **options
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_missing_packages_name_the_install_command(monkeypatch):
    real = accounting_db.mariadb_program
    monkeypatch.setattr(
        accounting_db, "mariadb_program", lambda n: None if n == "mariadbd" else real(n)
    )
    reason = accounting_available("system")
    assert reason is not None and "mariadbd" in reason and ACCOUNTING_INSTALL_HINT in reason
    assert "\n" not in reason
    if slurm_available("system") is None:  # Slurm itself is there: start says why
        slurm = LocalSlurm(config())
        with pytest.raises(SlurmError, match="apt-get install -y mariadb-server slurmdbd"):
            slurm.start()
        slurm.stop()
        assert not slurm.workdir.exists()


def test_sacct_command_is_the_documented_one():
    argv = sacct_records_argv("2026-10-01")
    assert " ".join(argv) == (
        "sacct --allusers --allocations --duplicates --parsable2 --starttime 2026-10-01 "
        f"--endtime now --format {SACCT_FORMAT}"
    )


def test_no_accounting_without_the_option():
    slurm = LocalSlurm(LocalSlurmConfig.for_topology(TREE))
    try:
        assert slurm.cluster_name == "tjap"
        assert "AccountingStorageType=accounting_storage/none" in slurm.conf_lines()
        with pytest.raises(SlurmError, match="accounting=True"):
            slurm.sacct("--version")
    finally:
        slurm.stop()


@pytest.fixture(scope="module")
def cluster():
    slurm = LocalSlurm(config())
    slurm.start()
    try:
        yield slurm
    finally:
        slurm.stop()


@pytest.fixture(scope="module")
def ran(cluster):
    """The jobs' ids (sbatch -N k --exclusive, in SIZES order), once all are recorded."""
    ids = []
    for size in SIZES:
        proc = subprocess.run(
            [
                "sbatch",
                "--parsable",
                "-N",
                str(size),
                "--exclusive",
                "-o",
                "/dev/null",
                "--wrap",
                "sleep 1",
            ],
            env=cluster.env,
            capture_output=True,
            text=True,
            check=True,
        )
        ids.append(proc.stdout.strip().split(";")[0])
    cluster.wait_recorded(ids, timeout_s=90)
    return ids


@pytest.mark.slurm
@needs_accounting
def test_daemons_run_with_least_privilege(cluster):
    a = cluster.accounting
    conf = cluster.workdir / "slurmdbd.conf"
    assert conf.stat().st_mode & 0o777 == 0o600
    assert "StoragePass=" in conf.read_text()
    assert "StoragePass" not in cluster.conf_path.read_text()
    assert f"AccountingStoragePort={a.dbd_port}" in cluster.conf_path.read_text()
    # MariaDB runs as mysql and listens on 127.0.0.1 only
    status = Path(f"/proc/{cluster._procs['mariadbd'].pid}/status").read_text()
    uid = next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:"))
    assert int(uid) == pwd.getpwnam("mysql").pw_uid
    listening = [
        line.split()[1]
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
        if line.split()[3] == "0A"
    ]  # state LISTEN
    ours = [addr for addr in listening if int(addr.split(":")[1], 16) == a.db_port]
    assert ours == ["0100007F:%04X" % a.db_port]
    assert not any(
        addr.endswith(":%04X" % a.db_port) for addr in Path("/proc/net/tcp6").read_text().split()
    )
    grants = " ".join(a.grants())
    assert f"ALL PRIVILEGES ON `{DATABASE}`.*" in grants
    assert "ON *.*" in grants and "GRANT USAGE ON *.*" in grants  # no global right
    assert grants.count(" ON ") == 2


@pytest.mark.slurm
@needs_accounting
def test_sacct_and_jobcomp_hold_the_same_jobs(cluster, ran, tmp_path):
    path = cluster.accounting_records(tmp_path / "sacct.txt")
    lines = path.read_text().splitlines()
    assert lines[0] == SACCT_FORMAT.replace(",", "|")
    rows = {
        r["JobID"]: r
        for r in (dict(zip(lines[0].split("|"), line.split("|"))) for line in lines[1:])
    }
    assert sorted(rows) == sorted(ran)
    comp = {
        f["JobId"]: f
        for f in map(parse_jobcomp_line, cluster.jobcomp_path.read_text().splitlines())
    }
    assert sorted(comp) == sorted(ran)
    for job_id, size in zip(ran, SIZES):
        row, f = rows[job_id], comp[job_id]
        assert row["State"] == "COMPLETED" and int(row["NNodes"]) == size
        nodes = expand_hostlist(row["NodeList"])
        assert len(nodes) == size and set(nodes) <= set(TREE.node_names)
        assert expand_hostlist(f["NodeList"]) == nodes
        assert (row["Start"], row["End"]) == (f["StartTime"], f["EndTime"])
        assert row["Submit"] == f["SubmitTime"] and row["Start"] < row["End"]
    # the 6-node job ran alone: it started when every other job had ended
    last = rows[ran[-1]]
    assert all(rows[j]["End"] <= last["Start"] for j in ran[:-1])


@pytest.mark.slurm
@needs_accounting
def test_stop_leaves_no_daemon(cluster, ran):
    pids = {name: p.pid for name, p in cluster._procs.items()}
    assert {"mariadbd", "slurmdbd", "slurmctld"} <= set(pids)
    base = cluster.accounting.base
    cluster.stop()
    assert [name for name, pid in pids.items() if alive(pid)] == []
    assert not base.exists()


@pytest.mark.slurm
@needs_accounting
def test_failed_start_stops_the_database(monkeypatch):
    def fail(self):
        raise SlurmError("no database today")

    monkeypatch.setattr(accounting_db.AccountingDaemons, "create_database", fail)
    slurm = LocalSlurm(config())
    spawned = {}
    real_spawn = slurm._spawn

    def spawn(name, argv):
        real_spawn(name, argv)
        spawned[name] = slurm._procs[name].pid

    monkeypatch.setattr(slurm, "_spawn", spawn)
    with pytest.raises(SlurmError, match="no database today"):
        slurm.start()
    assert list(spawned) == ["mariadbd"] and not alive(spawned["mariadbd"])
    assert slurm.accounting.base is None and not slurm.workdir.exists()
