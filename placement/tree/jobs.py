"""The jobs of a window and the placement constraints they may carry: segments, a required or
preferred level, exclusive domains, and Slurm's block rule.

A job is a node count, or a :class:`Job` with constraints. Each constraint names a **level** of
the tree: 1 is the lowest (a node's leaf switch, the base block of a Slurm block cluster, the
lowest label level of a Kueue topology), 2 the switches or aggregated blocks above, and so on.
A switch's level is one more than the longest way down from it to a leaf switch, so every
aggregated block of one ``BlockSizes`` entry has the same level. The **domain** of a node at
level ``L`` is its highest switch whose level is at most ``L``: a node whose leaf block is in no
aggregate of level 2 (a block at the tail of the order that Slurm leaves alone) is its own
level-2 domain, never part of a larger one. A level is given by number or by name: ``"leaf"``
and ``"block"`` are 1, ``"top"`` the highest level, and a window may name its levels (its
``levels`` field, lowest first, e.g. ``["block", "rack", "zone"]``).

The constraints (JSON keys of a job object; every key but ``nodes`` optional):

``nodes``
    Nodes the job asks for (an integer >= 1).
``segment``, ``segment_level``
    The job's nodes come in groups of ``segment`` nodes, each inside one domain of
    ``segment_level`` (default 1): Slurm's ``--segment``, Kueue's slices. ``nodes`` must be a
    multiple of ``segment``.
``within``
    All the job's nodes inside one domain of this level: Kueue's *required* level, Slurm's
    ``--switches=1`` at a level.
``prefer``, ``prefer_cost``
    A soft ``within``: each domain of this level the job touches beyond the first adds
    ``prefer_cost`` (default :data:`PREFER_COST`, one hop unit of the cost model) to the
    objective: Kueue's *preferred* level.
``exclusive``
    ``true`` (level 1) or a level: no other job of the window gets a node in the domains of
    that level the job touches (Slurm's ``--exclusive=topo``). Busy nodes outside the window
    are not the window's to move.
``runtime_s``
    The seconds the job is expected to hold its nodes (its time limit, e.g. a pod's
    ``activeDeadlineSeconds``): the fragmentation term prices a domain by how long the job keeps
    it from being whole (:mod:`tjap.placement.tree.fragmentation`); no other part of the model
    reads it.
``slurm_rule``
    ``true``: the placement Slurm's ``topology/block`` accepts for the job. Its nodes lie inside
    one domain of the lowest level whose largest domain has at least ceil(nodes / b) leaf blocks,
    b the smallest leaf size (Slurm's base block size); with ``segment``, each segment inside one
    domain of the level its own size asks for, and the segments anywhere.

SCAS with constraints keeps the model's rule as far as the constraints allow: a job takes one
contiguous run D(p, n) of the idle sequence Q; ``within`` and ``slurm_rule`` forbid the runs that
cross a domain; ``prefer`` and the fragmentation term price a run; ``exclusive`` makes a run
hold, for the other jobs, the idle nodes of every domain it touches. A segmented job walks Q
from p instead: each domain it meets gives it as many whole segments as its idle nodes from
there allow, and the few idle nodes left in a domain (fewer than a segment) are skipped and
held, so its nodes come in whole segments and its stretch of Q is still one run
(:mod:`tjap.placement.tree.arcs`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tjap.core.errors import InvalidInputError, check_int, check_number

#: The largest weight a window takes (a fragmentation weight, a job's ``prefer_cost``): every
#: exact model accepts the objective it gives on the largest tree admitted (SCIP refuses
#: coefficients at its infinity, 1e20; CP-SAT needs the whole objective in 64-bit integers).
MAX_WEIGHT = 1e9


def check_weight(value, what: str) -> float:
    """``value`` as a float from 0 to :data:`MAX_WEIGHT`, or one line naming ``what``."""
    return check_number(
        what,
        value,
        0,
        MAX_WEIGHT,
        must=f"a number from 0 to {MAX_WEIGHT:.0e} (the most every exact model takes)",
    )


#: Default price of each domain beyond the first that a job with ``prefer`` touches: one hop
#: unit c of the paper's cost (a pair of nodes one switch apart costs 2c / n in the paper's
#: convention).
PREFER_COST = 1000.0
#: The keys a job object may have.
JOB_KEYS = (
    "nodes",
    "segment",
    "segment_level",
    "within",
    "prefer",
    "prefer_cost",
    "exclusive",
    "slurm_rule",
    "runtime_s",
)
#: Level names every tree knows (a window's own ``levels`` names come first).
LEVEL_ALIASES = {"leaf": 1, "block": 1}


def _needs(given: bool, other, key: str, needed: str) -> None:
    """Refuse a key that does nothing without another (``segment_level`` without ``segment``)."""
    if given and other is None:
        raise InvalidInputError(
            f"{key} applies to a job with {needed!r} and this one has none; give {needed} "
            f"or drop {key}"
        )


@dataclass(frozen=True)
class Job:
    """One job of a window: ``nodes`` and its constraints (see the module's documentation).

    Levels may be given by number or name; :class:`~tjap.placement.tree.window.Window` resolves
    names against its tree and keeps the job with numbers.

    >>> Job(36, segment=12).constrained
    True
    >>> Job(8).constrained
    False
    """

    nodes: int
    segment: int | None = None
    segment_level: int | str = 1
    within: int | str | None = None
    prefer: int | str | None = None
    prefer_cost: float = PREFER_COST
    exclusive: int | str | None = None
    slurm_rule: bool = False
    runtime_s: float | None = None

    def __post_init__(self):
        check_int("a job's nodes", self.nodes, 1)
        if self.segment is not None:
            segment = check_int("segment", self.segment, 1)
            if self.nodes % segment:
                raise InvalidInputError(
                    f"a job of {self.nodes} nodes cannot come in segments of {segment}; give a "
                    f"segment size that divides the node count (e.g. {_divisor(self.nodes)})"
                )
        check_weight(self.prefer_cost, "prefer_cost")
        if self.runtime_s is not None:
            runtime = check_number(
                "runtime_s",
                self.runtime_s,
                0,
                MAX_WEIGHT,
                must=f"a number of seconds from 0 to {MAX_WEIGHT:.0e}",
            )
            object.__setattr__(self, "runtime_s", runtime)
        _needs(self.segment_level != 1, self.segment, "segment_level", "segment")
        _needs(self.prefer_cost != PREFER_COST, self.prefer, "prefer_cost", "prefer")
        if not isinstance(self.slurm_rule, (bool, np.bool_)):
            raise InvalidInputError(
                f"slurm_rule must be true or false, got {self.slurm_rule!r:.40}"
            )
        if self.exclusive is True:
            object.__setattr__(self, "exclusive", 1)
        elif self.exclusive is False:
            object.__setattr__(self, "exclusive", None)

    @property
    def constrained(self) -> bool:
        """True when the job carries any constraint (a plain node count otherwise)."""
        return (
            self.segment is not None
            or self.within is not None
            or self.prefer is not None
            or self.exclusive is not None
            or bool(self.slurm_rule)
        )

    def to_value(self):
        """The JSON form: the node count alone when unconstrained, else an object of the keys
        that differ from their defaults."""
        if not self.constrained and self.runtime_s is None:
            return self.nodes
        out = {"nodes": self.nodes}
        for key in JOB_KEYS[1:]:
            value = getattr(self, key)
            if value != getattr(_DEFAULT, key):
                out[key] = bool(value) if key == "slurm_rule" else value
        return out

    @classmethod
    def from_value(cls, value, where: str = "jobs[0]") -> "Job":
        """A job from its JSON form: an integer (the node count) or an object of
        :data:`JOB_KEYS`; a :class:`Job` is returned as it is."""
        if isinstance(value, Job):
            return value
        try:
            if isinstance(value, dict):
                unknown = sorted(map(str, set(value) - set(JOB_KEYS)))
                if unknown:
                    raise InvalidInputError(
                        f"unknown key(s) {', '.join(map(repr, unknown[:4]))}; "
                        f"a job's keys are {', '.join(JOB_KEYS)}"
                    )
                if "nodes" not in value:
                    raise InvalidInputError(
                        'a job object needs \'nodes\', e.g. {"nodes": 36, "segment": 12}'
                    )
                _needs("segment_level" in value, value.get("segment"), "segment_level", "segment")
                _needs("prefer_cost" in value, value.get("prefer"), "prefer_cost", "prefer")
                return cls(**value)
            check_int("a job", value, 1)
            return cls(int(value))
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: {exc}") from None
        except TypeError:
            raise InvalidInputError(
                f"{where}: a job is a node count or an object such as "
                '{"nodes": 36, "segment": 12}'
            ) from None


_DEFAULT = Job(1)


def _divisor(n: int) -> int:
    return next((d for d in range(2, n) if n % d == 0), n)


# -------------------------------------------------------------------------------- levels
def switch_levels(topology) -> np.ndarray:
    """The level of every switch: 1 for a leaf switch, else one more than its highest child."""
    parent = topology.switch_parent
    level = np.ones(topology.num_switches, np.int64)
    for s in range(topology.num_switches - 1, 0, -1):  # children come after their parent
        p = parent[s]
        level[p] = max(level[p], level[s] + 1)
    return level


def top_level(topology) -> int:
    """The highest level of the tree (the root's)."""
    return int(switch_levels(topology)[0])


def level_domains(topology, level: int) -> np.ndarray:
    """The domain of every node at ``level``: the index of its highest switch whose level is at
    most ``level`` (its leaf switch at level 1)."""
    levels = switch_levels(topology)
    parent = topology.switch_parent
    lift = np.arange(topology.num_switches, dtype=np.int64)
    for s in range(topology.num_switches):  # parents first: one pass suffices
        p = parent[s]
        if p >= 0 and levels[p] <= level:
            lift[s] = lift[p]
    return lift[topology.node_leaf]


def resolve_level(topology, value, names=(), where: str = "level") -> int:
    """A level given by number (1 = lowest) or by name (``names``, lowest first, then
    :data:`LEVEL_ALIASES` and ``"top"``) as a number within the tree."""
    top = top_level(topology)
    if isinstance(value, str):
        if value in names:
            number = list(names).index(value) + 1
        elif value in LEVEL_ALIASES:
            number = LEVEL_ALIASES[value]
        elif value == "top":
            number = top
        else:
            known = [*names, *LEVEL_ALIASES, "top"]
            raise InvalidInputError(
                f"{where}: unknown level {value!r:.40}; give a number 1..{top} "
                f"or one of {', '.join(dict.fromkeys(known))} (a window names "
                "its own levels in its 'levels' field, lowest first)"
            )
    else:
        number = check_int(where, value, 1)
    if number > top:
        raise InvalidInputError(f"{where}: level {number} is above the tree's top level {top}")
    return number


def base_block_size(topology, what: str = "Slurm's block rule") -> int:
    """The base block size of a Slurm ``topology/block`` cluster; a one-line
    :class:`InvalidInputError` for a switch tree, to which ``what`` does not apply."""
    if topology.block_size is None:
        raise InvalidInputError(
            f"{what} is Slurm's topology/block rule, and this cluster is a switch tree "
            "(topology/tree, labels or a fat-tree): drop it, or read the cluster from its "
            "BlockName= lines (or a block: topology.yaml)"
        )
    return int(topology.block_size)


def slurm_level(topology, count: int) -> int | None:
    """The level Slurm's block rule puts ``count`` nodes in: the lowest whose largest domain has
    at least ceil(count / b) leaf blocks, b the base block size (:func:`base_block_size`); None
    when no level has."""
    need = -(-count // base_block_size(topology))
    levels = switch_levels(topology)
    leaves = np.zeros(topology.num_switches, np.int64)
    leaves[topology.leaf_switches] = 1
    for s in range(topology.num_switches - 1, 0, -1):
        leaves[topology.switch_parent[s]] += leaves[s]
    for level in range(1, int(levels[0]) + 1):
        if leaves[levels <= level].max() >= need:
            return level
    return None


def resolve_job(job: Job, topology, names=(), where: str = "jobs[0]") -> Job:
    """``job`` with its levels as numbers of ``topology``, checked (one line naming ``where``)."""
    if not job.constrained:
        return job
    fields = {}
    for key in ("segment_level", "within", "prefer", "exclusive"):
        value = getattr(job, key)
        if value is not None:
            fields[key] = resolve_level(topology, value, names, f"{where}: {key}")
    if job.slurm_rule:
        count = job.segment or job.nodes
        base_block_size(topology, f"{where}: slurm_rule")
        if slurm_level(topology, count) is None:
            raise InvalidInputError(
                f"{where}: slurm_rule: no block of this tree holds "
                f"{count} nodes; drop slurm_rule or the job"
            )
    return replace(job, **fields)


def refuse_constraints(window, method: str) -> None:
    """Refuse, in one line, a window with job constraints or a fragmentation term for
    ``method``, a method that does not honour them."""
    if getattr(window, "constrained", False):
        raise InvalidInputError(
            f"method {method!r} does not take job constraints (segment, within, prefer, "
            "exclusive, slurm_rule) or a fragmentation term; use a method with the "
            "'constraints' flag in `tjap methods` (auto, dp, scip, cpsat, seq ...), or give "
            "plain job sizes"
        )
