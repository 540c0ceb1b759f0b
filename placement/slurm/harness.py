"""A throw-away Slurm on this machine: one controller and one node, for tests and trace replays.

:class:`LocalSlurm` writes a ``slurm.conf`` into a temporary directory, starts ``munged`` if no
munge daemon answers, then ``slurmctld -D`` and ``slurmd -D`` as child processes (so they are
stopped by process id, never by name), and waits until ``sinfo`` reports the node idle. Every
Slurm command must see ``SLURM_CONF`` pointing at that file: use :attr:`LocalSlurm.env` or
:meth:`LocalSlurm.client`. Nothing under ``/etc/slurm`` is read or written.

The single node (named ``localhost``) claims ``cpus`` CPUs whatever the hardware has
(``SlurmdParameters=config_overrides``), and each CPU stands for one node of a trace: a job of
``n`` trace nodes is ``sbatch -n n``. Jobs are plain ``sleep`` commands, so hundreds of them run at
once on a 2-core machine.

Tested with Debian 12's ``slurm-wlm 22.05.8`` (``slurmctld -V``) and munge 0.5.15, running as
root (slurmd must be root). Install with ``apt-get install -y slurm-wlm munge`` (not the
``-emulator`` packages). Settings that matter:

- ``SlurmdParameters=config_overrides`` and ``CPUs=N`` on the node: more CPUs than the hardware.
- ``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none``,
  ``JobAcctGatherType=jobacct_gather/none``: no cgroups (none needed in containers).
- ``JobCompType=jobcomp/filetxt`` with ``JobCompLoc``: start/end times of completed jobs without
  slurmdbd (``AccountingStorageType=accounting_storage/none``). Times there have 1 s resolution,
  like every time Slurm records.
- ``EnforcePartLimits=ALL``: a job larger than the node is rejected by ``sbatch`` (otherwise it
  is queued forever with reason ``PartitionConfig``).
- ``SchedulerParameters=bf_interval=..,bf_resolution=..,sched_interval=..`` (all accepted by
  22.05) and ``batch_sched_delay=0``; ``MinJobAge`` small so that ended jobs leave ``squeue``.
- Free ports are picked for ``SlurmctldPort``/``SlurmdPort`` (not the defaults 6817/6818), so that
  several local clusters, or a system Slurm, can run side by side.
- ``PriorityType=priority/multifactor`` with every weight 0 gives every job priority 1; ties are
  broken by submit time then job id, i.e. first come first served.

Timing observed here (what a simulator must reproduce to match it):

- ``sbatch`` returns in about 10 ms, but a batch job is never started inside the submit call:
  the backfill pass (every ``bf_interval``) or the main scheduler's periodic pass
  (``sched_interval``, Slurm's default is 60 s!) starts it, typically 0.5 to 1 s later.
- When a job ends, the jobs waiting for its CPUs start about 1 s later (the next pass), not at
  once; a job waiting only on a dependency can start within milliseconds.
- slurmctld skips the main scheduler for about 3 s after it starts; :meth:`LocalSlurm.start`
  waits for its first pass (``sdiag``) so that ``sched/builtin`` starts the first jobs at once.
- All recorded times (squeue, jobcomp) are whole seconds, truncated.
- With a missing ``SLURM_CONF`` file Slurm's commands retry for 60 s (the client checks first);
  with no controller listening they fail after about ``MessageTimeout`` (10 s).

Several nodes on a switch tree
------------------------------
With :attr:`LocalSlurmConfig.node_names` set, the cluster has those nodes instead of the single
one: one ``slurmd -N NAME`` per node (Debian's build has ``MULTIPLE_SLURMD``), each on its own
port of one contiguous free range, all in one ``NodeName=`` line, so Slurm's node order (its
bitmap order, which its node selection follows) is the order given. Each node has
``cpus_per_node`` CPUs (default 1). With :attr:`LocalSlurmConfig.topology_conf` (the text of a
``topology.conf``, e.g. :meth:`tjap.placement.tree.topology.Topology.to_slurm`) the file is written
beside ``slurm.conf`` and ``TopologyPlugin=topology/tree`` is set;
:meth:`LocalSlurmConfig.for_topology` fills both from a topology. Clusters of 14 to 40 nodes
start here (every node idle, the main scheduler's first pass done) in a few seconds; each
``slurmd`` takes about 6 MB of memory. :meth:`LocalSlurm.wait_idle` waits until every node is
idle again, e.g. after cancelling jobs.

``munged`` is a system daemon: it is started (as user ``munge``, with ``/run/munge`` created)
when none answers, and left running by :meth:`LocalSlurm.stop`.

Accounting
----------
With :attr:`LocalSlurmConfig.accounting` the cluster has Slurm accounting: before slurmctld a
private MariaDB (as the ``mysql`` user, on 127.0.0.1) and ``slurmdbd`` start as child processes
(:mod:`tjap.placement.slurm.accounting_db` says what runs with which rights), ``slurm.conf`` sets
``AccountingStorageType=accounting_storage/slurmdbd`` and a ``ClusterName`` unique to the cluster
(``tjap`` and 8 hex digits; slurmctld 22.05 registers it in the database itself), and
``jobcomp/filetxt`` stays on. :meth:`LocalSlurm.sacct` runs sacct against it,
:meth:`LocalSlurm.wait_recorded` waits until slurmdbd holds every ended job (about 1 s after the
end here) and :meth:`LocalSlurm.accounting_records` writes the records ``tjap audit`` reads.
:attr:`LocalSlurmConfig.timezone` sets ``TZ`` for the daemons and the commands, so both kinds of
records print times in a known zone. Needs ``apt-get install -y mariadb-server slurmdbd``; a
6-node cluster with accounting starts here in about 6 s (3 s without), and :meth:`LocalSlurm.stop`
stops slurmdbd and MariaDB after slurmctld and deletes the database.

Which Slurm: the system's, or 24.11 with topology/block
-------------------------------------------------------
:attr:`LocalSlurmConfig.slurm` picks the Slurm: ``"system"`` (the installed package, 22.05 on
Debian 12), ``"24.11"`` (built from the upstream tarball of Debian 13's ``slurm-wlm`` source by
``.ci/build-slurm-newer`` into ``$TJAP_SLURM_NEWER``, default ``slurm-24.11`` under the cache root
:func:`tjap.core.cache.cache_root`, ``$TJAP_CACHE_ROOT`` or ``/var/cache/tjap``) or
the absolute path of another install prefix. The daemons run by full path
(``PREFIX/sbin/slurmctld``, ``PREFIX/sbin/slurmd``) and :attr:`LocalSlurm.env` puts
``PREFIX/bin`` and ``PREFIX/sbin`` first on ``PATH``, so :meth:`LocalSlurm.client` and every
command the harness runs use that Slurm's own ``sbatch``, ``squeue``, ``scontrol`` ..., never the
system's; munge is the system's either way. :func:`slurm_available`, :func:`slurm_version` take
the same choice, and :func:`newer_slurm_available` says why 24.11 cannot run (e.g. not built).
Slurm 24.11.5 accepts every setting above unchanged.

A :attr:`LocalSlurmConfig.topology_conf` with ``BlockName=``/``BlockSizes=`` lines sets
``TopologyPlugin=topology/block`` (Slurm 23.11 or later: the system's 22.05 is refused with a
one-line error); :meth:`LocalSlurmConfig.for_blocks` writes one from a block tree
(:func:`block_conf`). A 16-node cluster in 4 blocks of 4 starts here
in about 5 s, and ``scontrol show topology`` lists the base blocks, then the aggregated ones.
"""

from __future__ import annotations

import getpass
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tjap.core.cache import cache_root
from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.accounting_db import (
    AccountingDaemons,
    missing_accounting,
    sacct_records_argv,
)
from tjap.placement.slurm.client import INSTALL_HINT, SlurmClient, SlurmError

#: Binaries a local cluster needs.
REQUIRED_BINARIES = (
    "slurmctld",
    "slurmd",
    "sbatch",
    "squeue",
    "sinfo",
    "scancel",
    "scontrol",
    "sdiag",
    "munged",
    "munge",
)
#: Where Debian puts the daemons (not always on a non-root PATH).
_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")
#: Slurm's programs that an install keeps in ``sbin`` (the client tools are in ``bin``).
_DAEMONS = ("slurmctld", "slurmd", "slurmstepd", "slurmdbd")
#: munge comes from the system whichever Slurm runs.
_MUNGE = ("munged", "munge", "mungekey")
#: The Slurm that ``.ci/build-slurm-newer`` builds, and the variable that moves its prefix.
NEWER_SLURM = "24.11"
NEWER_SLURM_ENV = "TJAP_SLURM_NEWER"
#: The folder of the cache root (:func:`tjap.core.cache.cache_root`) it goes to by default.
NEWER_SLURM_FOLDER = "slurm-24.11"
BUILD_HINT = "run .ci/build-slurm-newer as root (about 3 minutes)"


def _which(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in _SBIN:
        p = Path(d) / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def newer_slurm_prefix() -> Path:
    """Where ``.ci/build-slurm-newer`` installs Slurm 24.11 (``$TJAP_SLURM_NEWER``, default
    ``slurm-24.11`` under :func:`tjap.core.cache.cache_root`)."""
    return Path(os.environ.get(NEWER_SLURM_ENV) or cache_root() / NEWER_SLURM_FOLDER)


#: The environment variable that picks the Slurm of a :class:`LocalSlurmConfig` (and of
#: :func:`slurm_available`) when none is given: ``system`` (the default) or ``24.11``; the
#: slurm-marked tree tests run once per Slurm this way (``make test-slurm``).
SLURM_CHOICE_ENV = "TJAP_SLURM"


def default_slurm() -> str:
    """The Slurm a cluster runs when none is named: ``$TJAP_SLURM``, else ``"system"``."""
    return os.environ.get(SLURM_CHOICE_ENV) or "system"


def slurm_prefix(slurm: str = "system") -> Path | None:
    """The install prefix of the Slurm that ``slurm`` names: None for ``"system"`` (the
    daemons and tools found on PATH and in ``/usr/sbin``), :func:`newer_slurm_prefix` for
    ``"24.11"``, or the folder itself for an absolute path (holding ``sbin/slurmctld`` and
    ``bin/sbatch``)."""
    if slurm is None or slurm == "system":
        return None
    if slurm == NEWER_SLURM:
        return newer_slurm_prefix()
    if isinstance(slurm, (str, os.PathLike)) and Path(slurm).is_absolute():
        return Path(slurm)
    raise SlurmError(
        f"slurm must be 'system', {NEWER_SLURM!r} or the absolute path of a Slurm "
        f"install (the folder holding sbin/slurmctld), got {slurm!r}"
    )


def slurm_binary(name: str, slurm: str = "system") -> str | None:
    """The full path of Slurm's program ``name`` in the Slurm that ``slurm`` names (see
    :func:`slurm_prefix`), or None when it is missing. munge's programs always come from the
    system."""
    prefix = slurm_prefix(slurm)
    if prefix is None or name in _MUNGE:
        return _which(name)
    path = prefix / ("sbin" if name in _DAEMONS else "bin") / name
    return str(path) if path.is_file() and os.access(path, os.X_OK) else None


def slurm_available(slurm: str | None = None) -> str | None:
    """None if a local Slurm (the one ``slurm`` names, see :func:`slurm_prefix`; by default
    :func:`default_slurm`) can be started here, else a one-line reason."""
    slurm = default_slurm() if slurm is None else slurm
    prefix = slurm_prefix(slurm)
    missing = [b for b in REQUIRED_BINARIES if slurm_binary(b, slurm) is None]
    ours = [b for b in missing if b not in _MUNGE]
    if prefix is not None and ours:
        where = f"{prefix}/{'sbin' if ours[0] in _DAEMONS else 'bin'}/{ours[0]}"
        if slurm == NEWER_SLURM:
            return f"Slurm {NEWER_SLURM} is not built (no {where}; {BUILD_HINT})"
        return f"no Slurm installed under {prefix} (missing {where})"
    if missing:
        return f"Slurm is not installed (missing {', '.join(missing)}; {INSTALL_HINT})"
    if os.geteuid() != 0:
        return "a local Slurm needs root (slurmd runs jobs as their users)"
    return None


def accounting_available(slurm: str | None = None) -> str | None:
    """None if a local cluster of the Slurm ``slurm`` names (by default :func:`default_slurm`)
    can run with accounting here (MariaDB, slurmdbd, sacct and sacctmgr installed), else a
    one-line reason naming what to install."""
    slurm = default_slurm() if slurm is None else slurm
    reason = missing_accounting(lambda name: slurm_binary(name, slurm))
    prefix = slurm_prefix(slurm)
    if (
        reason is None
        and prefix is not None
        and not (prefix / "lib" / "slurm" / "accounting_storage_mysql.so").is_file()
    ):
        return (
            f"the Slurm in {prefix} was built without accounting_storage/mysql (install "
            "libmariadb-dev before building it) and cannot store accounting"
        )
    return reason


def newer_slurm_available() -> str | None:
    """None if the Slurm 24.11 that ``.ci/build-slurm-newer`` builds can be started here, else a
    one-line reason (e.g. not built yet)."""
    reason = slurm_available(NEWER_SLURM)
    if reason:
        return reason
    found = slurm_version(NEWER_SLURM)
    if version_tuple(found)[:2] != (24, 11):
        return (
            f"{newer_slurm_prefix()}/sbin/slurmctld reports {found!r}, not Slurm "
            f"{NEWER_SLURM} ({BUILD_HINT})"
        )
    return None


def slurm_version(slurm: str = "system") -> str:
    """``slurmctld -V`` of the Slurm that ``slurm`` names (e.g. ``slurm-wlm 22.05.8``,
    ``slurm 24.11.5``)."""
    exe = slurm_binary("slurmctld", slurm)
    if exe is None:
        hint = BUILD_HINT if slurm == NEWER_SLURM else INSTALL_HINT
        raise SlurmError(f"slurmctld not found in the {slurm} Slurm ({hint})")
    proc = subprocess.run([exe, "-V"], capture_output=True, text=True, timeout=10)
    return (proc.stdout or proc.stderr).strip()


def version_tuple(text: str) -> tuple[int, ...]:
    """``"slurm 24.11.5"`` -> ``(24, 11, 5)``."""
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        raise SlurmError(f"cannot read a Slurm version from {text!r}")
    return tuple(int(g) for g in m.groups() if g is not None)


def is_block_conf(text: str) -> bool:
    """Whether ``topology.conf`` text is for ``topology/block`` (``BlockName=``/``BlockSizes=``
    lines) rather than ``topology/tree``."""
    return any(re.match(r"\s*(blockname|blocksizes)\s*=", line, re.I) for line in text.splitlines())


def block_conf(topology, block_sizes=None) -> str:
    """A block tree (a :class:`~tjap.placement.tree.topology.Topology` whose leaf switches are base
    blocks and whose higher switches are aggregated blocks, as ``Topology.from_slurm`` builds from
    ``BlockName=`` lines) as ``topology.conf`` text for Slurm's ``topology/block`` plugin: one
    ``BlockName=`` line per leaf switch in the tree's order, then ``BlockSizes=``.

    ``block_sizes`` (in nodes, e.g. ``[4, 8, 16]``) is written as given; None derives it from the
    tree: the smallest block's node count, times the number of base blocks each aggregate plans
    for (a power of two). The text is checked to build the same tree again (the aggregates' names
    aside, which Slurm does not read).

    Raises
    ------
    InvalidInputError
        The tree is not one that Slurm's block rules build from its leaf switches and those sizes.

    Examples
    --------
    >>> from tjap.placement.tree.topology import Topology
    >>> tree = Topology.from_slurm("BlockName=b1 Nodes=n[1-2]\\nBlockName=b2 Nodes=n[3-4]\\n"
    ...                            "BlockSizes=2,4\\n")
    >>> print(block_conf(tree), end="")
    BlockName=b1 Nodes=n[1-2]
    BlockName=b2 Nodes=n[3-4]
    BlockSizes=2,4
    """
    from tjap.placement.tree.blocks import parse_block_sizes
    from tjap.placement.tree.hostlist import compress_hostlist
    from tjap.placement.tree.topology import IMPLICIT_ROOT

    leaves = [int(s) for s in topology.leaf_switches]
    if block_sizes is None:
        base = int(min(topology.leaf_sizes))
        under = {}  # aggregate switch -> base blocks below it
        for leaf in leaves:
            s = int(topology.switch_parent[leaf])
            while s >= 0:
                under[s] = under.get(s, 0) + 1
                s = int(topology.switch_parent[s])
        implicit = topology.switch_names[0] == IMPLICIT_ROOT
        factors = {1} | {
            1 << (count - 1).bit_length() for s, count in under.items() if not (s == 0 and implicit)
        }
        block_sizes = [base * f for f in sorted(factors)]
    else:
        block_sizes = parse_block_sizes(",".join(map(str, block_sizes)), "block_sizes")
    sizes = ",".join(map(str, block_sizes))
    lines = [
        f"BlockName={topology.switch_names[s]} Nodes={compress_hostlist(topology.nodes_of(s))}"
        for s in leaves
    ]
    text = "\n".join(lines + [f"BlockSizes={sizes}"]) + "\n"

    def shape(tree):  # everything but the aggregates' names
        return (
            tree.node_names,
            tree.switch_names[0] == IMPLICIT_ROOT,
            tree.switch_parent.tolist(),
            tree.node_leaf.tolist(),
            [tree.switch_names[s] for s in tree.leaf_switches],
        )

    if shape(type(topology).from_slurm(text)) != shape(topology):
        raise InvalidInputError(
            f"this tree is not the block topology Slurm builds from its {len(leaves)} leaf "
            f"switches with BlockSizes={sizes}: give the block sizes it was built with, or build "
            "it with Topology.from_slurm from BlockName= lines"
        )
    return text


@dataclass
class LocalSlurmConfig:
    """The knobs of a local cluster (see the module docstring for the fixed settings)."""

    #: Which Slurm runs it: "system" (the installed package), "24.11" (built by
    #: ``.ci/build-slurm-newer``) or the absolute path of an install prefix; by default
    #: ``$TJAP_SLURM`` or "system" (:func:`default_slurm`).
    slurm: str = field(default_factory=default_slurm)
    #: CPUs of the single node; each trace node is one CPU.
    cpus: int = 256
    #: "backfill" -> sched/backfill; "builtin" -> sched/builtin (strict priority order, FCFS).
    scheduler: str = "backfill"
    bf_interval_s: int = 1
    bf_resolution_s: int = 1
    #: None: Slurm's default (reserve resources for every job tested); 1 = EASY-like.
    bf_job_part_count_reserve: int | None = None
    bf_max_job_test: int = 1000
    #: None: Slurm's default backfill window (1 day); raise it for time limits over a day.
    bf_window_min: int | None = None
    #: Seconds between the main scheduler's periodic full passes (Slurm's default is 60).
    sched_interval_s: int = 1
    #: More SchedulerParameters items, e.g. ["bf_continue", "default_queue_depth=1000"].
    scheduler_parameters: list[str] = field(default_factory=list)
    priority_weight_age: int = 0
    priority_weight_job_size: int = 0
    priority_max_age: str = "7-0"
    priority_favor_small: bool = False
    #: PriorityCalcPeriod in minutes (None: Slurm's default, 5).
    priority_calc_period_min: int | None = None
    #: Seconds an ended job stays visible in squeue (Slurm requires >= 2).
    min_job_age_s: int = 2
    node_name: str = "localhost"
    #: Several nodes, by name, in Slurm's node order (empty: the one node ``node_name`` with
    #: ``cpus`` CPUs). Each runs its own slurmd.
    node_names: tuple = ()
    #: CPUs of each node when ``node_names`` is given.
    cpus_per_node: int = 1
    #: Text of a topology.conf; when given, ``TopologyPlugin=topology/tree`` uses it, or
    #: ``topology/block`` when it has ``BlockName=``/``BlockSizes=`` lines (Slurm 23.11 or later).
    topology_conf: str | None = None
    partition: str = "main"
    #: None: pick free ports.
    slurmctld_port: int | None = None
    slurmd_port: int | None = None
    #: Extra slurm.conf lines, Key -> Value; a key that is generated anyway is replaced.
    extra: dict[str, str] = field(default_factory=dict)
    #: Slurm accounting: a private MariaDB and slurmdbd start with the cluster (see
    #: :mod:`tjap.placement.slurm.accounting_db`), so ``sacct`` prints its jobs.
    accounting: bool = False
    #: ``TZ`` for the daemons and every command of this cluster (e.g. ``"UTC"``): the zone
    #: that sacct and the jobcomp log print times in. None: this process's own.
    timezone: str | None = None

    @classmethod
    def for_topology(cls, topology, **options) -> "LocalSlurmConfig":
        """A config whose nodes are ``topology``'s (a :class:`~tjap.placement.tree.topology.Topology`)
        in its depth-first order, with its ``topology.conf`` and ``topology/tree``; ``options``
        set the other fields."""
        return cls(
            node_names=tuple(topology.node_names), topology_conf=topology.to_slurm(), **options
        )

    @classmethod
    def for_blocks(cls, topology, block_sizes=None, **options) -> "LocalSlurmConfig":
        """A config for a block tree (base blocks as leaf switches, e.g. read by
        ``Topology.from_slurm`` from ``BlockName=`` lines) under ``topology/block``: its nodes in
        order and :func:`block_conf`'s text (``block_sizes`` in nodes; None: derived from the
        tree). Needs ``slurm="24.11"`` (or another Slurm of 23.11 or later) among ``options``."""
        return cls(
            node_names=tuple(topology.node_names),
            topology_conf=block_conf(topology, block_sizes),
            **options,
        )

    @property
    def topology_plugin(self) -> str | None:
        """``topology/block``, ``topology/tree`` or None, from :attr:`topology_conf`."""
        if self.topology_conf is None:
            return None
        return "topology/block" if is_block_conf(self.topology_conf) else "topology/tree"

    @property
    def multi_node(self) -> bool:
        return bool(self.node_names)

    def all_node_names(self) -> tuple:
        """The cluster's node names, in Slurm's node order."""
        return tuple(self.node_names) if self.node_names else (self.node_name,)

    def scheduler_type(self) -> str:
        types = {"backfill": "sched/backfill", "builtin": "sched/builtin"}
        if self.scheduler not in types:
            raise SlurmError(f"scheduler must be one of {sorted(types)}, got {self.scheduler!r}")
        return types[self.scheduler]

    def scheduler_parameter_list(self) -> list[str]:
        params = [f"sched_interval={int(self.sched_interval_s)}", "batch_sched_delay=0"]
        if self.scheduler == "backfill":
            params += [
                f"bf_interval={int(self.bf_interval_s)}",
                f"bf_resolution={int(self.bf_resolution_s)}",
                f"bf_max_job_test={int(self.bf_max_job_test)}",
            ]
            if self.bf_job_part_count_reserve is not None:
                params.append(f"bf_job_part_count_reserve={int(self.bf_job_part_count_reserve)}")
            if self.bf_window_min is not None:
                params.append(f"bf_window={int(self.bf_window_min)}")
        return params + list(self.scheduler_parameters)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ephemeral_start() -> int:
    """First port of the kernel's ephemeral range (32768 when it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _free_port_range(count: int, avoid: int = 0, tries: int = 200) -> int:
    """The first of ``count`` consecutive free TCP ports on 127.0.0.1 (none of them ``avoid``)."""
    rng = random.Random()
    low, high = 20000, _ephemeral_start()  # below the kernel's ephemeral ports: an outgoing
    if high - low < 4 * count:  # connection cannot take one between check and bind
        low, high = 20000, 60000
    for _ in range(tries):
        base = rng.randrange(low, high - count)
        if base <= avoid < base + count:
            continue
        held = []
        try:
            for port in range(base, base + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                held.append(s)
                s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
        return base
    raise SlurmError(f"found no {count} consecutive free ports for the slurmd daemons")


def _free_port_outside(taken) -> int:
    """A free TCP port on 127.0.0.1 (below the ephemeral range) that is none of ``taken``."""
    taken = set(taken)
    for _ in range(100):
        port = _free_port_range(1)
        if port not in taken:
            return port
    raise SlurmError("found no free port for the accounting daemons")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no {path.name})"
    return "\n".join(text[-lines:])


class LocalSlurm:
    """A local Slurm cluster, started by :meth:`start` (or ``with LocalSlurm(...) as slurm:``) and
    stopped by :meth:`stop`. ``workdir`` (default: a new temporary directory, removed by
    :meth:`stop` unless ``keep_workdir``) holds slurm.conf, state, logs and ``jobcomp.txt``."""

    def __init__(
        self, config: LocalSlurmConfig | None = None, workdir=None, *, keep_workdir: bool = False
    ):
        self.config = config or LocalSlurmConfig()
        self.config.scheduler_type()  # validate early
        #: The Slurm install prefix (None: the system's Slurm).
        self.prefix = slurm_prefix(self.config.slurm)
        self._version: tuple | None = None
        if int(self.config.cpus) < 1:
            raise SlurmError(f"cpus must be >= 1, got {self.config.cpus!r}")
        names = self.config.node_names
        if isinstance(names, str):
            raise SlurmError(f"node_names must be a list of names, got the string {names!r}")
        if names:
            if len(set(names)) != len(names):
                raise SlurmError("node_names lists a node twice; give each node once")
            bad = [n for n in names if not n or re.search(r"[\s,\[\]=#]", n)]
            if bad:
                raise SlurmError(
                    f"node name {bad[0]!r} is not usable in slurm.conf (no spaces, "
                    "commas, brackets, '=' or '#')"
                )
            if int(self.config.cpus_per_node) < 1:
                raise SlurmError(f"cpus_per_node must be >= 1, got {self.config.cpus_per_node!r}")
        self._own_workdir = workdir is None
        self.workdir = Path(
            tempfile.mkdtemp(prefix="tjap-slurm-") if workdir is None else workdir
        ).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.keep_workdir = keep_workdir
        self.conf_path = self.workdir / "slurm.conf"
        self.topology_path = self.workdir / "topology.conf"
        self.jobcomp_path = self.workdir / "jobcomp.txt"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf_path))
        if self.config.timezone is not None:
            self.env["TZ"] = str(self.config.timezone)
        #: ``ClusterName``: unique per cluster with accounting (they may share a slurmdbd's
        #: naming space), else ``tjap``.
        self.cluster_name = str(
            self.config.extra.get("ClusterName")
            or ("tjap" + secrets.token_hex(4) if self.config.accounting else "tjap")
        )
        #: The accounting daemons' files and ports (with ``accounting``, once started).
        self.accounting: AccountingDaemons | None = None
        self.started_at: float | None = None
        if self.prefix is not None:  # this Slurm's client tools first, never the system's
            self.env["PATH"] = os.pathsep.join(
                [str(self.prefix / "bin"), str(self.prefix / "sbin")]
                + [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
            )
        self._procs: dict[str, subprocess.Popen] = {}
        self._finalizer = None
        self.ports: tuple[int, int] | None = None

    @property
    def node_names(self) -> tuple:
        """The cluster's node names, in Slurm's node order."""
        return self.config.all_node_names()

    @property
    def version(self) -> tuple:
        """The version of the Slurm this cluster runs, e.g. ``(24, 11, 5)``."""
        if self._version is None:
            self._version = version_tuple(slurm_version(self.config.slurm))
        return self._version

    def binary(self, name: str) -> str:
        """The full path of Slurm's program ``name`` in this cluster's Slurm."""
        path = slurm_binary(name, self.config.slurm)
        if path is None:
            raise SlurmError(
                slurm_available(self.config.slurm)
                or f"{name} not found in the {self.config.slurm} Slurm"
            )
        return path

    def check_topology(self) -> None:
        """Refuse a block topology on a Slurm older than 23.11 (one line, with the fix)."""
        if self.config.topology_plugin == "topology/block" and self.version < (23, 11):
            raise SlurmError(
                f"topology/block needs Slurm 23.11 or later, and the {self.config.slurm} Slurm "
                f"is {self.version[0]}.{self.version[1]:02d}; build 24.11 with "
                ".ci/build-slurm-newer "
                "(as root) and pass slurm='24.11'"
            )

    # -- configuration -----------------------------------------------------------------------
    def conf_lines(self) -> list[str]:
        """The slurm.conf this cluster runs with (ports must have been chosen)."""
        c = self.config
        w = self.workdir
        user = getpass.getuser()
        ctld_port, d_port = self.ports or (c.slurmctld_port or 6817, c.slurmd_port or 6818)
        settings = {
            "ClusterName": self.cluster_name,
            "SlurmctldHost": "localhost",
            "SlurmUser": user,
            "SlurmdUser": "root",
            "SlurmctldPort": str(ctld_port),
            "SlurmdPort": str(d_port),
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "StateSaveLocation": str(w / "state"),
            "SlurmdSpoolDir": str(w / "spool"),
            "SlurmctldPidFile": str(w / "slurmctld.pid"),
            "SlurmdPidFile": str(w / "slurmd.pid"),
            "SlurmctldLogFile": str(w / "slurmctld.log"),
            "SlurmdLogFile": str(w / "slurmd.log"),
            "SlurmctldDebug": "info",
            "SlurmdDebug": "info",
            "ProctrackType": "proctrack/linuxproc",
            "TaskPlugin": "task/none",
            "JobAcctGatherType": "jobacct_gather/none",
            "MpiDefault": "none",
            "MailProg": "/bin/true",
            "ReturnToService": "2",
            "SlurmdParameters": "config_overrides",
            "SchedulerType": c.scheduler_type(),
            "SchedulerParameters": ",".join(c.scheduler_parameter_list()),
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_CPU",
            "PriorityType": "priority/multifactor",
            "PriorityWeightAge": str(int(c.priority_weight_age)),
            "PriorityWeightJobSize": str(int(c.priority_weight_job_size)),
            "PriorityWeightFairshare": "0",
            "PriorityWeightPartition": "0",
            "PriorityWeightQOS": "0",
            "PriorityWeightAssoc": "0",
            "PriorityMaxAge": c.priority_max_age,
            "PriorityFavorSmall": "YES" if c.priority_favor_small else "NO",
            "AccountingStorageType": "accounting_storage/none",
            "JobCompType": "jobcomp/filetxt",
            "JobCompLoc": str(self.jobcomp_path),
            "MinJobAge": str(max(2, int(c.min_job_age_s))),
            "KillWait": "2",
            "InactiveLimit": "0",
            "EnforcePartLimits": "ALL",
            "MessageTimeout": "10",
        }
        if c.priority_calc_period_min is not None:
            settings["PriorityCalcPeriod"] = str(int(c.priority_calc_period_min))
        if self.accounting is not None:
            settings.update(
                {
                    "AccountingStorageType": "accounting_storage/slurmdbd",
                    "AccountingStorageHost": "localhost",
                    "AccountingStoragePort": str(self.accounting.dbd_port),
                }
            )
        if c.multi_node:
            settings.update(
                {
                    "SlurmdSpoolDir": str(w / "spool" / "%n"),
                    "SlurmdPidFile": str(w / "slurmd.%n.pid"),
                    "SlurmdLogFile": str(w / "log" / "slurmd.%n.log"),
                }
            )
        if c.topology_conf is not None:
            settings["TopologyPlugin"] = c.topology_plugin
        settings.update({str(k): str(v) for k, v in c.extra.items()})
        lines = [f"{k}={v}" for k, v in settings.items()]
        if c.multi_node:
            first = d_port
            names = ",".join(c.node_names)
            ports = (
                f"[{first}-{first + len(c.node_names) - 1}]"
                if len(c.node_names) > 1
                else str(first)
            )
            lines.append(
                f"NodeName={names} NodeAddr=127.0.0.1 NodeHostname=localhost "
                f"Port={ports} CPUs={int(c.cpus_per_node)} RealMemory=1 State=UNKNOWN"
            )
            lines.append(
                f"PartitionName={c.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
            )
        else:
            lines.append(
                f"NodeName={c.node_name} NodeAddr=127.0.0.1 NodeHostname=localhost "
                f"CPUs={int(c.cpus)} RealMemory=1 State=UNKNOWN"
            )
            lines.append(
                f"PartitionName={c.partition} Nodes={c.node_name} Default=YES "
                "MaxTime=INFINITE State=UP"
            )
        return lines

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return bool(self._procs) and all(p.poll() is None for p in self._procs.values())

    def client(self, timeout_s: float = 30) -> SlurmClient:
        return SlurmClient(self.env, timeout_s=timeout_s)

    def completed(self):
        """Jobs recorded in this cluster's jobcomp log."""
        return self.client().completed(self.jobcomp_path)

    # -- accounting (LocalSlurmConfig.accounting) --------------------------------------------
    def sacct(self, *args: str, timeout_s: float = 30) -> str:
        """The output of ``sacct ARGS`` for this cluster (its ``SLURM_CONF`` and ``TZ``, times in
        Slurm's default format whatever ``SLURM_TIME_FORMAT`` this process has)."""
        if self.accounting is None:
            raise SlurmError(
                "this cluster has no accounting: start it with LocalSlurmConfig(accounting=True)"
            )
        env = {k: v for k, v in self.env.items() if k != "SLURM_TIME_FORMAT"}
        argv = [self.binary("sacct"), *args]
        try:
            proc = subprocess.run(
                argv,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise SlurmError(
                f"sacct timed out after {timeout_s:g} s (is slurmdbd running? "
                f"{self.workdir / 'slurmdbd.log'})"
            ) from None
        if proc.returncode != 0:
            raise SlurmError(
                f"sacct failed (status {proc.returncode}): {(proc.stderr or proc.stdout).strip()}"
            )
        return proc.stdout

    def accounting_start_date(self) -> str:
        """A ``--starttime`` early enough for every job of this cluster: the UTC date of the day
        before it started (``YYYY-MM-DD``; before its start in every time zone)."""
        started = self.started_at if self.started_at is not None else time.time()
        day_before = datetime.fromtimestamp(started - 86400, UTC)
        return day_before.strftime("%Y-%m-%d")

    def accounting_records(self, path, *, starttime: str | None = None) -> Path:
        """Write the records ``tjap audit`` reads to ``path``: the output of ``sacct --allusers
        --allocations --duplicates --parsable2 --starttime DATE --endtime now --format
        JobID,Partition,Submit,Start,End,NNodes,NodeList,State``
        (:func:`~tjap.placement.slurm.accounting_db.sacct_records_argv`; ``DATE`` by default
        :meth:`accounting_start_date`). Call :meth:`wait_recorded` first: slurmdbd records an
        ended job a moment after it ends."""
        argv = sacct_records_argv(starttime or self.accounting_start_date())
        path = Path(path)
        path.write_text(self.sacct(*argv[1:]))
        return path

    def wait_recorded(self, job_ids, timeout_s: float = 60) -> None:
        """Wait until sacct shows every job of ``job_ids`` ended (an allocation record with an
        end time; slurmctld sends it to slurmdbd shortly after the job ends)."""
        ids = [str(j) for j in job_ids]
        if not ids:
            return
        wanted = set(ids)

        def recorded() -> bool:
            out = self.sacct(
                "--allocations",
                "--duplicates",
                "--parsable2",
                "--noheader",
                "--starttime",
                self.accounting_start_date(),
                "--jobs",
                ",".join(ids),
                "--format",
                "JobID,State,End",
            )
            done = {
                row[0]
                for row in (line.split("|") for line in out.splitlines())
                if len(row) == 3
                and row[2] not in ("", "Unknown")
                and row[1].split()[0] not in ("PENDING", "RUNNING", "REQUEUED")
            }
            return wanted <= done

        self._wait(
            recorded, time.monotonic() + timeout_s, f"slurmdbd to record {len(ids)} ended jobs"
        )

    def start(self, timeout_s: float = 60, *, wait_scheduler: bool = True) -> "LocalSlurm":
        """Start munged (if needed), slurmctld and slurmd; wait until the node is idle and (with
        ``wait_scheduler``) until the main scheduler has run once: slurmctld skips it for about
        3 s after starting, which would delay the first jobs under ``sched/builtin``."""
        if self._procs:
            raise SlurmError("this LocalSlurm is already started")
        reason = slurm_available(self.config.slurm)
        if not reason and self.config.accounting:
            reason = accounting_available(self.config.slurm)
        if reason:
            raise SlurmError(reason)
        self.check_topology()
        self.started_at = time.time()
        deadline = time.monotonic() + timeout_s
        ensure_munged()
        c = self.config
        names = c.all_node_names()
        ctld_port = c.slurmctld_port or (_free_port_range(1) if c.multi_node else _free_port())
        if c.multi_node:
            d_port = c.slurmd_port or _free_port_range(len(names), avoid=ctld_port)
        else:
            d_port = c.slurmd_port or _free_port()
            if d_port == ctld_port:
                d_port = _free_port()
        self.ports = (ctld_port, d_port)
        if c.accounting:
            taken = [ctld_port, *range(d_port, d_port + len(names))]
            db_port = _free_port_outside(taken)
            self.accounting = AccountingDaemons(
                self.workdir, getpass.getuser(), db_port, _free_port_outside(taken + [db_port])
            )
        for d in ("state", "spool", "log"):
            (self.workdir / d).mkdir(exist_ok=True)
        if c.multi_node:
            for name in names:
                (self.workdir / "spool" / name).mkdir(exist_ok=True)
        self.jobcomp_path.touch()
        if c.topology_conf is not None:
            self.topology_path.write_text(c.topology_conf)
        self.conf_path.write_text("\n".join(self.conf_lines()) + "\n")
        # stop the daemons if the interpreter exits without stop()
        self._finalizer = weakref.finalize(self, _shutdown, self._procs, self.env, self.accounting)
        try:
            if self.accounting is not None:
                self._start_accounting(deadline)
            self._spawn("slurmctld", self._controller_argv())
            self._wait(lambda: self._ping(), deadline, "slurmctld to answer")
            if self.accounting is not None:
                self._register_cluster()
            if c.multi_node:
                for name in names:
                    self._spawn(
                        f"slurmd.{name}",
                        [self.binary("slurmd"), "-D", "-f", str(self.conf_path), "-N", name],
                    )
                self._wait(self._nodes_idle, deadline, f"all {len(names)} nodes to become idle")
            else:
                self._spawn(
                    "slurmd",
                    [self.binary("slurmd"), "-D", "-f", str(self.conf_path), "-N", c.node_name],
                )
                self._wait(self._node_idle, deadline, f"node {c.node_name} to become idle")
            if wait_scheduler:
                self._wait(
                    lambda: self.main_scheduler_cycles() > 0,
                    deadline,
                    "the main scheduler's first pass",
                )
        except BaseException:
            self.stop()
            raise
        return self

    def _start_accounting(self, deadline: float) -> None:
        """MariaDB, the accounting database and its user, then slurmdbd."""
        a = self.accounting
        a.prepare(timeout_s=max(5.0, deadline - time.monotonic()))
        self._spawn("mariadbd", a.mariadbd_argv())
        self._wait(a.database_ready, deadline, "MariaDB to answer")
        a.create_database()
        a.write_conf()
        self._spawn("slurmdbd", [self.binary("slurmdbd"), "-D"])
        self._wait(self._dbd_ready, deadline, "slurmdbd to answer")

    def _register_cluster(self, wait_s: float = 5) -> None:
        """slurmctld adds its cluster to the accounting database when it starts (Slurm 22.05
        does); ``sacctmgr -i add cluster`` if it has not within ``wait_s``."""
        end = time.monotonic() + wait_s
        while self.cluster_name not in self._registered_clusters():
            if time.monotonic() > end:
                self._sacctmgr("-i", "add", "cluster", self.cluster_name)
                return
            time.sleep(0.2)

    def _sacctmgr(self, *args: str) -> str:
        return self.client(timeout_s=10).run([self.binary("sacctmgr"), *args]).stdout

    def _registered_clusters(self) -> list[str]:
        return self._sacctmgr("-n", "-P", "list", "cluster", "format=Cluster").split()

    def _dbd_ready(self) -> bool:
        try:
            self._registered_clusters()
        except SlurmError:
            return False
        return True

    def _controller_argv(self) -> list[str]:
        return [self.binary("slurmctld"), "-D", "-i", "-f", str(self.conf_path)]

    def _spawn(self, name: str, argv: list[str]) -> None:
        out = open(self.workdir / f"{name}.out", "ab")
        try:
            self._procs[name] = subprocess.Popen(
                argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
            )
        finally:
            out.close()

    def _ping(self) -> bool:
        proc = self.client(timeout_s=5).run(["scontrol", "ping"], check=False)
        return proc.returncode == 0 and "UP" in proc.stdout

    def _node_idle(self) -> bool:
        try:
            nodes = self.client(timeout_s=5).nodes()
        except SlurmError:
            return False
        return any(n.name == self.config.node_name and n.state == "idle" for n in nodes)

    def _nodes_idle(self) -> bool:
        try:
            nodes = self.client(timeout_s=5).nodes()
        except SlurmError:
            return False
        idle = {n.name for n in nodes if n.state == "idle"}
        return idle.issuperset(self.node_names)

    def stop_controller(self, timeout_s: float = 15) -> None:
        """Stop slurmctld alone (SIGTERM by process id, SIGKILL after ``timeout_s``); the
        slurmds and the saved state stay, so :meth:`start_controller` picks the jobs up again.
        For tests of what a client does while the controller is down."""
        proc = self._procs.get("slurmctld")
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def start_controller(self, timeout_s: float = 30) -> None:
        """Start slurmctld again after :meth:`stop_controller` (same slurm.conf and state) and
        wait until it answers."""
        proc = self._procs.get("slurmctld")
        if proc is not None and proc.poll() is None:
            raise SlurmError("slurmctld is already running")
        if not self._procs:
            raise SlurmError("this LocalSlurm is not started")
        self._spawn("slurmctld", self._controller_argv())
        self._wait(lambda: self._ping(), time.monotonic() + timeout_s, "slurmctld to answer")

    def restart_controller(self, down_s: float = 0.0, timeout_s: float = 30) -> None:
        """:meth:`stop_controller`, wait ``down_s`` seconds, :meth:`start_controller`."""
        self.stop_controller()
        time.sleep(max(0.0, down_s))
        self.start_controller(timeout_s)

    def wait_idle(self, timeout_s: float = 30) -> None:
        """Wait until every node of the cluster is idle (e.g. after cancelling jobs)."""
        self._wait(self._nodes_idle, time.monotonic() + timeout_s, "every node to become idle")

    def main_scheduler_cycles(self) -> int:
        """Passes of the main scheduler so far (``sdiag``), or 0 if unknown."""
        proc = self.client(timeout_s=5).run(["sdiag"], check=False)
        m = re.search(r"Main schedule statistics.*?Total cycles:\s*(\d+)", proc.stdout, re.S)
        return int(m.group(1)) if (proc.returncode == 0 and m) else 0

    def _wait(self, ready, deadline: float, what: str) -> None:
        while True:
            for name, proc in self._procs.items():
                if proc.poll() is not None:
                    raise SlurmError(
                        f"{name} exited with status {proc.returncode} while waiting "
                        f"for {what}:\n{self.log_tail(name)}"
                    )
            if ready():
                return
            if time.monotonic() > deadline:
                raise SlurmError(
                    f"timed out waiting for {what} (SLURM_CONF={self.conf_path}):\n"
                    + "\n".join(self.log_tail(n) for n in list(self._procs)[:3])
                )
            time.sleep(0.2)

    def log_tail(self, name: str, lines: int = 15) -> str:
        """The last lines of a daemon's log and console output (``name``: ``slurmctld``,
        ``slurmd``, or ``slurmd.NODE`` on a multi-node cluster)."""
        log = self.workdir / f"{name}.log"
        if name.startswith("slurmd.") and self.config.multi_node:
            log = self.workdir / "log" / f"{name}.log"
        if name == "mariadbd" and self.accounting is not None:
            return (
                f"{self.accounting.error_tail(lines)}\n"
                f"--- {name}.out:\n{_tail(self.workdir / f'{name}.out', 5)}"
            )
        return (
            f"--- {name}.log:\n{_tail(log, lines)}\n"
            f"--- {name}.out:\n{_tail(self.workdir / f'{name}.out', 5)}"
        )

    def stop(self) -> None:
        """Cancel every job, stop the daemons this object started, remove an own workdir.
        Idempotent; never raises for a cluster that is already gone."""
        if self._procs:
            if self.running:
                client = self.client(timeout_s=10)
                try:
                    ids = [j.job_id for j in client.queue()]
                    client.cancel(ids)
                    end = time.monotonic() + 10
                    while ids and time.monotonic() < end:
                        if not [j for j in client.queue() if j.running]:
                            break
                        time.sleep(0.2)
                except SlurmError:
                    pass
            _kill_all(self._procs)
        if self.accounting is not None:
            self.accounting.remove()
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._own_workdir and not self.keep_workdir and self.workdir.exists():
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "LocalSlurm":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        if self.config.multi_node:
            return (
                f"LocalSlurm({state}, nodes={len(self.config.node_names)}, "
                f"SLURM_CONF={self.conf_path})"
            )
        return f"LocalSlurm({state}, cpus={self.config.cpus}, SLURM_CONF={self.conf_path})"


def _kill_all(procs: dict) -> None:
    """SIGTERM every slurmd, then slurmctld, then slurmdbd, then MariaDB (the processes this
    LocalSlurm started, by process id), each SIGKILLed when it has not exited in 10 s."""
    slurmds = [p for name, p in procs.items() if name == "slurmd" or name.startswith("slurmd.")]
    for group in (
        slurmds,
        [procs.get("slurmctld")],
        [procs.get("slurmdbd")],
        [procs.get("mariadbd")],
    ):
        live = [p for p in group if p is not None and p.poll() is None]
        for proc in live:
            proc.send_signal(signal.SIGTERM)
        end = time.monotonic() + 10
        for proc in live:
            try:
                proc.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
    procs.clear()


def _shutdown(procs: dict, env: dict, accounting: AccountingDaemons | None = None) -> None:
    """Cancel the jobs, stop the daemons and delete the accounting database (run when a started
    LocalSlurm is garbage collected or the interpreter exits without :meth:`LocalSlurm.stop`)."""
    if procs and all(p.poll() is None for p in procs.values()):
        client = SlurmClient(env, timeout_s=5)
        try:
            client.cancel([j.job_id for j in client.queue()])
            time.sleep(1)
        except SlurmError:
            pass
    _kill_all(procs)
    if accounting is not None:
        accounting.remove()


def munge_works() -> bool:
    exe = _which("munge")
    if exe is None:
        return False
    try:
        proc = subprocess.run([exe, "-n"], capture_output=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


_MUNGE_LOCK = threading.Lock()


def ensure_munged(timeout_s: float = 10) -> None:
    """Start munged (as user ``munge``) unless a munge daemon already answers. Threads of one
    process take turns; a munged that another process started at the same moment is taken."""
    with _MUNGE_LOCK:
        _ensure_munged(timeout_s)


def _ensure_munged(timeout_s: float) -> None:
    if munge_works():
        return
    munged = _which("munged")
    if munged is None:
        raise SlurmError(f"munged not found ({INSTALL_HINT})")
    if os.geteuid() != 0:
        raise SlurmError("munged is not running and only root can start it")
    if not Path("/etc/munge/munge.key").exists():
        mungekey = _which("mungekey")
        if mungekey is None:
            raise SlurmError("no /etc/munge/munge.key and no mungekey to create one")
        subprocess.run([mungekey, "--create"], check=True, capture_output=True, timeout=30)
        shutil.chown("/etc/munge/munge.key", "munge", "munge")
    run_dir = Path("/run/munge")
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.chown(run_dir, "munge", "munge")
    run_dir.chmod(0o755)
    runuser = _which("runuser")
    argv = (
        [runuser, "-u", "munge", "--", munged, "--force"]
        if runuser
        else ["su", "-s", "/bin/sh", "munge", "-c", f"{munged} --force"]
    )
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        end = time.monotonic() + 2  # lost a race with another process starting it?
        while time.monotonic() < end:
            if munge_works():
                return
            time.sleep(0.1)
        raise SlurmError(f"cannot start munged: {(proc.stderr or proc.stdout).strip()}")
    end = time.monotonic() + timeout_s
    while not munge_works():
        if time.monotonic() > end:
            raise SlurmError("munged started but `munge -n` still fails")
        time.sleep(0.1)
