"""What a running Slurm reports, read into the models: its switch tree (``scontrol show topology``),
one window's worth of a partition (:func:`read_state`: idle nodes, held jobs, running jobs' ends)
and, on a ``topology/block`` cluster, the held jobs' segments (:func:`read_segments`).

Slurm prints one line per switch of its ``topology/tree`` plugin, in its switch table's order (the
order of ``topology.conf``)::

    SwitchName=top Level=1 LinkSpeed=1 Nodes=n[01-08] Switches=s[0-1]
    SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[01-04]

A switch with ``Switches=`` is built from those (its ``Nodes=`` lists every node below it); a leaf
switch from its ``Nodes=``, which Slurm prints in its own node order (its bitmap order, the order
of ``slurm.conf``), so a leaf's nodes come back in the order Slurm's node selection walks them.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.client import SlurmClient, SlurmError
from tjap.placement.tree.hostlist import expand_hostlist

if TYPE_CHECKING:  # topology.py imports this module
    from tjap.placement.tree.topology import Topology


def _fields(line: str) -> dict:
    fields = {}
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep:
            fields[key.lower()] = value
    return fields


def show_topology_conf(text: str) -> str:
    """The ``topology.conf`` text equivalent to the output of ``scontrol show topology`` (read it
    with :meth:`~tjap.placement.tree.topology.Topology.from_slurm`, or call
    :meth:`~tjap.placement.tree.topology.Topology.from_scontrol`).

    Under ``topology/tree`` Slurm prints one ``SwitchName=`` line per switch; under
    ``topology/block`` one ``BlockName=... Nodes=... BlockSize=N`` line per base block, then one
    ``AggregatedBlock=... Nodes=... BlockSize=N`` line per aggregated block. A block cluster comes
    back as its ``BlockName=`` lines and ``BlockSizes=`` (the base size, then every aggregated
    size Slurm printed), from which the tree model builds the same aggregated blocks
    (:func:`aggregated_blocks` lists Slurm's own, to check that they agree).

    Raises
    ------
    InvalidInputError
        No switch or block line (Slurm runs with neither plugin) or a malformed line.
    """
    lines, sizes, blocks = [], set(), []
    for raw in text.splitlines():
        line = raw.strip()
        lower = line.lower()
        if lower.startswith("blockname=") or lower.startswith("aggregatedblock="):
            fields = _fields(line)
            size = fields.get("blocksize", "")
            if not size.isdigit() or not fields.get("nodes"):
                raise InvalidInputError(
                    f"scontrol show topology: a block line lacks Nodes= or "
                    f"BlockSize=: {line[:120]!r}"
                )
            sizes.add(int(size))
            if lower.startswith("blockname="):
                blocks.append(f"BlockName={fields['blockname']} Nodes={fields['nodes']}")
                base = int(size)
            continue
        if not lower.startswith("switchname="):
            continue
        fields = _fields(line)
        name = fields.get("switchname", "")
        if fields.get("switches"):
            lines.append(f"SwitchName={name} Switches={fields['switches']}")
        elif fields.get("nodes"):
            lines.append(f"SwitchName={name} Nodes={fields['nodes']}")
        else:
            raise InvalidInputError(
                f"scontrol show topology: switch {name!r} lists neither "
                f"nodes nor switches: {line[:120]!r}"
            )
    if blocks:
        kept = sorted(s for s in sizes if s >= base)
        return "\n".join(blocks + ["BlockSizes=" + ",".join(map(str, kept))]) + "\n"
    if not lines:
        first = text.strip().splitlines()[0] if text.strip() else "no output"
        raise InvalidInputError(
            f"Slurm reports no switch tree nor blocks ({first}); set "
            "TopologyPlugin=topology/tree or topology/block and write a "
            "topology.conf"
        )
    return "\n".join(lines) + "\n"


def aggregated_blocks(text: str) -> list[tuple[str, str]]:
    """``(name, nodes hostlist)`` of every ``AggregatedBlock=`` line of ``scontrol show
    topology`` (empty under ``topology/tree``)."""
    found = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.lower().startswith("aggregatedblock="):
            fields = _fields(line)
            found.append((fields["aggregatedblock"], fields.get("nodes", "")))
    return found


def is_block_topology(text: str) -> bool:
    """Whether ``scontrol show topology``'s text is that of ``topology/block`` (it lists
    ``BlockName=`` lines) rather than ``topology/tree``."""
    return any(line.strip().lower().startswith("blockname=") for line in text.splitlines())


def live_topology_conf(env: dict | None = None, *, timeout_s: float = 30) -> str:
    """The switch tree of the Slurm that ``env`` points at (``{"SLURM_CONF": path}``, merged
    over the environment; None: this process's environment), as Slurm itself sees it, in
    ``topology.conf`` form (:meth:`~tjap.placement.tree.topology.Topology.from_slurm_live` reads
    it).

    Raises
    ------
    SlurmError
        Slurm is not installed or not reachable (one line, naming ``SLURM_CONF``).
    InvalidInputError
        Slurm runs with neither a ``topology/tree`` switch tree nor ``topology/block`` blocks.

    Examples
    --------
    >>> from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig  # doctest: +SKIP
    >>> with LocalSlurm(LocalSlurmConfig.for_topology(tree)) as slurm:        # doctest: +SKIP
    ...     Topology.from_slurm_live(slurm.env) == tree
    True
    """
    client = SlurmClient(env, timeout_s=timeout_s)
    proc = client.run(["scontrol", "show", "topology"], check=False)
    text = proc.stdout + proc.stderr
    # scontrol exits 0 when slurmctld is down (the error goes to stderr): a missing switch line
    # is checked whatever the exit status, and a controller that does not answer named first
    listed = proc.stdout.lower()
    if "switchname=" not in listed and "blockname=" not in listed:
        err = client.run(["scontrol", "ping"], check=False)
        if err.returncode != 0 or "DOWN" in err.stdout:
            client.ping()  # raises the one-line "cannot reach slurmctld" error
        if "no switches" in text.lower() or "no topology" in text.lower() or not text.strip():
            raise InvalidInputError(
                "Slurm reports no switch tree; set "
                "TopologyPlugin=topology/tree and write a topology.conf "
                f"(SLURM_CONF={client.slurm_conf})"
            )
        raise SlurmError(
            f"scontrol show topology failed (exit {proc.returncode}): "
            f"{text.strip().splitlines()[0] if text.strip() else 'no output'}"
        )
    return show_topology_conf(text)


# -- one window's worth of a partition -----------------------------------------------------------
@dataclass
class State:
    """What one pass read from Slurm."""

    partition: str
    topology: Topology
    idle: list
    pending: list
    read_at: float = field(default_factory=time.time)
    #: idle-looking nodes left out because a released, not yet started job asks for them
    reserved: list = field(default_factory=list)
    #: ``(end time, nodes)`` of the partition's running jobs (end None: no time limit) and of
    #: released jobs not started yet (from now), for EASY backfilling
    releases: list = field(default_factory=list)
    #: time limit in seconds of each pending job (None: no limit)
    limits: dict = field(default_factory=dict)
    #: every node of the partition on the tree (idle or not)
    nodes: list = field(default_factory=list)
    #: every node of the partition, on the tree or not (empty: ``nodes``)
    partition_nodes: list = field(default_factory=list)
    #: the cluster runs ``topology/block`` (the tree's leaf switches are its base blocks)
    blocks: bool = False
    #: job id -> the ``--segment`` a held job asks for (:func:`read_segments`; absent: none)
    segments: dict = field(default_factory=dict)


#: squeue states of jobs that hold their nodes (they free them at start + time limit at the latest)
HOLDING = "RUNNING,COMPLETING,CONFIGURING,SUSPENDED"


def running_timing(queued, now: float) -> tuple[list, dict]:
    """``(releases, limits)`` of :class:`State` from the partition's pending and running jobs:
    ``(end, nodes)`` of each running job (end None when its limit is unlimited; a start Slurm
    did not report is taken as ``now``) and every job's time limit in seconds."""
    releases, limits = [], {}
    for job in queued:
        limits[job.job_id] = job.time_limit_s
        if job.state in HOLDING.split(","):
            start = job.start_time if job.start_time is not None else now
            end = None if job.time_limit_s is None else start + job.time_limit_s
            releases.append((end, job.nodes))
    return releases, limits


def read_state(
    client: SlurmClient, partition: str, topology, *, easy: bool = True, users=(), accounts=()
) -> State:
    """What a window of the placement service starts from: the partition's idle nodes on
    ``topology`` (a :class:`~tjap.placement.tree.topology.Topology`, which imports this module
    to read a live tree: hence no import of it here) and its pending jobs (of ``users`` / ``accounts`` when given), as Slurm reports
    them now, with one ``squeue``. Idle-looking nodes that a released, not yet started job asks
    for (:func:`pinned_nodes`: its ``ReqNodeList``, or what its ``ExcNodeList`` leaves it) are
    left out (``State.reserved``). With ``easy``, also the running
    jobs' ends and the jobs' time limits (``State.releases``, ``State.limits``)."""
    names = set(topology.node_names)
    nodes = client.partition_nodes(partition)
    # one squeue per pass: the held jobs, and with EASY the running jobs' starts and limits
    queued = client.pending(partition=partition, states=f"PENDING,{HOLDING}" if easy else "PENDING")
    pending = [j for j in queued if j.state == "PENDING"]
    # nodes named by pending jobs that are not held (e.g. released by the last window but
    # not started yet) are spoken for, idle as they may look: a ReqNodeList, or an ExcNodeList
    # that leaves the job just its node count of the partition
    everyone = [n.name for n in nodes]
    reserved = set()
    for job in pending:
        if job.reason not in ("JobHeldUser", "JobHeldAdmin"):
            reserved.update(pinned_nodes(job, everyone))
    idle = [n.name for n in nodes if n.state == "idle" and n.name in names]
    held_back = [n for n in idle if n in reserved]
    idle = [n for n in idle if n not in reserved]
    read_at = time.time()
    releases, limits = [], {}
    if easy:
        releases, limits = running_timing(queued, read_at)
        for job in pending:  # released with its nodes named, about to start
            if job.reason not in ("JobHeldUser", "JobHeldAdmin") and pinned_nodes(job, everyone):
                limit = limits.get(job.job_id)
                releases.append((None if limit is None else read_at + limit, job.nodes))
    users, accounts = set(users), set(accounts)
    pending = [
        j
        for j in pending
        if (not users or j.user in users) and (not accounts or j.account in accounts)
    ]
    return State(
        partition,
        topology,
        idle,
        pending,
        read_at=read_at,
        reserved=held_back,
        releases=releases,
        limits=limits,
        nodes=[n.name for n in nodes if n.name in names],
        partition_nodes=everyone,
    )


def pinned_nodes(job, partition_nodes) -> list:
    """The nodes a pending job is pinned to: its ``ReqNodeList``, or the nodes of the partition
    its ``ExcNodeList`` leaves when they are just its node count (how the placement service
    steers a segmented job); empty when neither (or a list cannot be read)."""
    try:
        if job.req_nodes:
            return expand_hostlist(job.req_nodes)
        if job.exc_nodes:
            excluded = set(expand_hostlist(job.exc_nodes))
            left = [n for n in partition_nodes if n not in excluded]
            return left if len(left) == job.nodes else []
    except InvalidInputError:
        pass
    return []


# -- segments (topology/block) --------------------------------------------------------------------
def script_segment(script: str) -> int | None:
    """The ``--segment`` a batch script asks for in its ``#SBATCH`` directives (None: none).

    Slurm 24.11 shows a job's ``--segment`` nowhere a client reads it (no ``squeue`` field, none
    in ``scontrol show job``): its job records do not carry it. The batch script does, when the
    segment is one of its directives. Directives are read as ``sbatch`` reads them: lines that
    begin with ``#SBATCH`` (or ``#SLURM``) before the first command, words split as a shell
    would, the last ``--segment`` winning; a ``hetjob`` separator ends the first component. A
    segment given on ``sbatch``'s command line instead is not in the script: such a job reads
    as unsegmented (the placement service then pins it with a node list, which Slurm refuses
    with ``BadConstraints`` when it has several segments; the service undoes that at once).
    """
    found = None
    for line in script.splitlines():
        magic = next((m for m in ("#SBATCH", "#SLURM") if line.startswith(m)), None)
        if magic is None:
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                break  # the first command ends the directives
            continue
        try:
            words = shlex.split(line[len(magic) :])
        except ValueError:
            continue
        if words[:1] and words[0].lower() in ("hetjob", "packjob"):
            break
        for k, word in enumerate(words):
            value = None
            if word.startswith("--segment="):
                value = word.split("=", 1)[1]
            elif word == "--segment" and k + 1 < len(words):
                value = words[k + 1]
            if value is not None and value.isdigit() and int(value) > 0:
                found = int(value)
    return found


def read_segments(client: SlurmClient, jobs, cache: dict | None = None) -> dict:
    """job id -> ``--segment`` of each of ``jobs`` that asks for one, read from its batch script
    (:func:`script_segment`; ``scontrol write batch_script``). ``cache`` (job id -> segment or
    None) keeps what was read across passes: a job's script does not change. A job whose
    script cannot be read (not a batch job, or not this account's to read) counts as
    unsegmented; an unreachable controller raises."""
    cache = {} if cache is None else cache
    found = {}
    for job in jobs:
        if job.job_id not in cache:
            text = client.batch_script(job.job_id)
            cache[job.job_id] = None if text is None else script_segment(text)
        if cache[job.job_id] is not None:
            found[job.job_id] = cache[job.job_id]
    return found


__all__ = [
    "HOLDING",
    "State",
    "aggregated_blocks",
    "is_block_topology",
    "live_topology_conf",
    "pinned_nodes",
    "read_segments",
    "read_state",
    "running_timing",
    "script_segment",
    "show_topology_conf",
]
