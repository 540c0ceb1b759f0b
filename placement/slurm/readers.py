"""What a running Slurm reports, read into the models: its switch tree (``scontrol show topology``)
and one window's worth of a partition (:func:`read_state`: idle nodes, held jobs, running jobs' ends).

Slurm prints one line per switch of its ``topology/tree`` plugin, in its switch table's order (the
order of ``topology.conf``)::

    SwitchName=top Level=1 LinkSpeed=1 Nodes=n[01-08] Switches=s[0-1]
    SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[01-04]

A switch with ``Switches=`` is built from those (its ``Nodes=`` lists every node below it); a leaf
switch from its ``Nodes=``, which Slurm prints in its own node order (its bitmap order, the order
of ``slurm.conf``), so a leaf's nodes come back in the order Slurm's node selection walks them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tjap.placement.slurm.client import SlurmClient, SlurmError
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.errors import InvalidInputError


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
                raise InvalidInputError(f"scontrol show topology: a block line lacks Nodes= or "
                                        f"BlockSize=: {line[:120]!r}")
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
            raise InvalidInputError(f"scontrol show topology: switch {name!r} lists neither "
                                    f"nodes nor switches: {line[:120]!r}")
    if blocks:
        kept = sorted(s for s in sizes if s >= base)
        return "\n".join(blocks + ["BlockSizes=" + ",".join(map(str, kept))]) + "\n"
    if not lines:
        first = text.strip().splitlines()[0] if text.strip() else "no output"
        raise InvalidInputError(f"Slurm reports no switch tree nor blocks ({first}); set "
                                "TopologyPlugin=topology/tree or topology/block and write a "
                                "topology.conf")
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
            client.ping()              # raises the one-line "cannot reach slurmctld" error
        if "no switches" in text.lower() or "no topology" in text.lower() or not text.strip():
            raise InvalidInputError("Slurm reports no switch tree; set "
                                    "TopologyPlugin=topology/tree and write a topology.conf "
                                    f"(SLURM_CONF={client.slurm_conf})")
        raise SlurmError(f"scontrol show topology failed (exit {proc.returncode}): "
                         f"{text.strip().splitlines()[0] if text.strip() else 'no output'}")
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


def read_state(client: SlurmClient, partition: str, topology, *, easy: bool = True,
               users=(), accounts=()) -> State:
    """What a window of the placement service starts from: the partition's idle nodes on
    ``topology`` (a :class:`~tjap.placement.tree.topology.Topology`, which imports this module
    to read a live tree: hence no import of it here) and its pending jobs (of ``users`` / ``accounts`` when given), as Slurm reports
    them now, with one ``squeue``. Idle-looking nodes that a released, not yet started job asks
    for (``ReqNodeList``) are left out (``State.reserved``). With ``easy``, also the running
    jobs' ends and the jobs' time limits (``State.releases``, ``State.limits``)."""
    names = set(topology.node_names)
    nodes = client.partition_nodes(partition)
    # one squeue per pass: the held jobs, and with EASY the running jobs' starts and limits
    queued = client.pending(partition=partition,
                            states=f"PENDING,{HOLDING}" if easy else "PENDING")
    pending = [j for j in queued if j.state == "PENDING"]
    # nodes named by pending jobs that are not held (e.g. released by the last window but
    # not started yet) are spoken for, idle as they may look
    reserved = set()
    for job in pending:
        if job.req_nodes and job.reason not in ("JobHeldUser", "JobHeldAdmin"):
            try:
                reserved.update(expand_hostlist(job.req_nodes))
            except InvalidInputError:
                pass
    idle = [n.name for n in nodes if n.state == "idle" and n.name in names]
    held_back = [n for n in idle if n in reserved]
    idle = [n for n in idle if n not in reserved]
    read_at = time.time()
    releases, limits = [], {}
    if easy:
        releases, limits = running_timing(queued, read_at)
        for job in pending:        # released with its nodes named, about to start
            if job.req_nodes and job.reason not in ("JobHeldUser", "JobHeldAdmin"):
                limit = limits.get(job.job_id)
                releases.append((None if limit is None else read_at + limit, job.nodes))
    users, accounts = set(users), set(accounts)
    pending = [j for j in pending if (not users or j.user in users)
               and (not accounts or j.account in accounts)]
    return State(partition, topology, idle, pending, read_at=read_at, reserved=held_back,
                 releases=releases, limits=limits,
                 nodes=[n.name for n in nodes if n.name in names])


__all__ = ["HOLDING", "State", "aggregated_blocks", "live_topology_conf", "read_state",
           "running_timing", "show_topology_conf"]
