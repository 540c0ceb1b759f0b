"""The switch tree of a running Slurm, read with ``scontrol show topology``.

Slurm prints one line per switch of its ``topology/tree`` plugin, in its switch table's order (the
order of ``topology.conf``)::

    SwitchName=top Level=1 LinkSpeed=1 Nodes=n[01-08] Switches=s[0-1]
    SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[01-04]

A switch with ``Switches=`` is built from those (its ``Nodes=`` lists every node below it); a leaf
switch from its ``Nodes=``, which Slurm prints in its own node order (its bitmap order, the order
of ``slurm.conf``), so a leaf's nodes come back in the order Slurm's node selection walks them.
"""

from __future__ import annotations

from tjap.placement.slurm.client import SlurmClient, SlurmError
from tjap.errors import InvalidInputError


def show_topology_conf(text: str) -> str:
    """The ``topology.conf`` text equivalent to the output of ``scontrol show topology`` (read it
    with :meth:`~tjap.placement.tree.topology.Topology.from_slurm`, or call
    :meth:`~tjap.placement.tree.topology.Topology.from_scontrol`).

    Raises
    ------
    InvalidInputError
        No switch line (Slurm runs without ``topology/tree``) or a malformed line.
    """
    lines = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.lower().startswith("switchname="):
            continue
        fields = {}
        for token in line.split():
            key, sep, value = token.partition("=")
            if sep:
                fields[key.lower()] = value
        name = fields.get("switchname", "")
        if fields.get("switches"):
            lines.append(f"SwitchName={name} Switches={fields['switches']}")
        elif fields.get("nodes"):
            lines.append(f"SwitchName={name} Nodes={fields['nodes']}")
        else:
            raise InvalidInputError(f"scontrol show topology: switch {name!r} lists neither "
                                    f"nodes nor switches: {line[:120]!r}")
    if not lines:
        first = text.strip().splitlines()[0] if text.strip() else "no output"
        raise InvalidInputError(f"Slurm reports no switch tree ({first}); set "
                                "TopologyPlugin=topology/tree and write a topology.conf")
    return "\n".join(lines) + "\n"


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
        Slurm runs without a ``topology/tree`` switch tree.

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
    if "switchname=" not in proc.stdout.lower():
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


__all__ = ["show_topology_conf", "live_topology_conf"]
