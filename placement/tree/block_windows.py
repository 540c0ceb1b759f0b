"""Windows with job constraints on a loaded, fragmented cluster: any
:class:`~tjap.placement.tree.topology.Topology`, a Slurm block cluster (``BlockName=`` /
``BlockSizes=``) above all.

Each window is drawn afresh (no replay of a workload):

- **Busy nodes.** Each leaf switch (a base block on a block cluster) is wholly busy, wholly idle
  or partly busy, the shares of the first two drawn per window from :data:`FULL_BLOCKS` and
  :data:`FREE_BLOCKS`; a partly busy block has 1 to size - 1 busy nodes drawn at random among
  its own. The idle nodes left are the window's idle sequence Q.
- **Jobs.** Up to ``cap`` multi-node jobs, each of a kind drawn with the shares of a
  :class:`ConstraintMix`: ``segment`` (segments of b or b / 2 nodes, b the smallest leaf size,
  the base block size: 18 or 9 on an NVL72 cluster; 1 to :data:`MAX_SEGMENTS` segments),
  ``within`` (all nodes inside one domain of a level drawn from ``within_levels``; at most that
  domain's size and 2b nodes), ``exclusive`` (its base blocks its own; 2 to b nodes) and
  ``plain`` (2 to 2b nodes).
- **Every window has a placement.** A job is kept only when the constrained Seq
  (:func:`~tjap.placement.tree.arcs.first_fit`) still places it after the jobs before it;
  otherwise it is tried smaller (fewer segments, or half the nodes, never below 2) and, when no
  size of its kind fits, the window ends there and that kind opens the next window (whose busy
  nodes are drawn again until its first job fits). So every method that keeps the constraints
  has a solution, and the jobs' kinds over all windows are one sequence drawn with the shares
  asked: a kind that fits less often (segments need whole segments idle in one block) is
  never dropped or swapped for another.

The same seed gives the same windows, and the first k of n windows are the k windows asked
alone. ``tjap generate windows --topology FILE --constraints mix`` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tjap.core.errors import InvalidInputError, check_int, check_number, is_int
from tjap.placement.tree.arcs import first_fit
from tjap.placement.tree.jobs import Job, base_block_size, level_domains, top_level
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window

#: Range of the share of leaf switches (base blocks) wholly busy; drawn per window.
FULL_BLOCKS = (0.2, 0.45)
#: Range of the share of leaf switches wholly idle; drawn per window (the rest are partly busy).
FREE_BLOCKS = (0.05, 0.2)
#: The most segments a segmented job asks for.
MAX_SEGMENTS = 4
#: The job kinds, in the order :class:`ConstraintMix` lists their shares.
KINDS = ("segment", "within", "exclusive", "plain")
#: Windows drawn again at most this many times when not even their first job fits.
MAX_REDRAWS = 200


@dataclass(frozen=True)
class ConstraintMix:
    """The share of each job kind among a window's jobs: ``segment``, ``within`` and
    ``exclusive`` (each in [0, 1], summing to at most 1); the rest are ``plain``.
    ``within_levels``: the levels a ``within`` job names, one drawn per job (capped at the
    tree's top level).

    The default, ``ConstraintMix()`` (``--constraints mix``), is a third segmented, a quarter
    ``within``, a tenth ``exclusive`` and the rest (about 32 %) plain.

    >>> ConstraintMix.parse("segment=0.5,within=0.5").plain
    0.0
    """

    segment: float = 1 / 3
    within: float = 0.25
    exclusive: float = 0.1
    within_levels: tuple = (1, 2)

    def __post_init__(self):
        for kind in KINDS[:3]:
            check_number(f"the share of {kind} jobs", getattr(self, kind), 0, 1)
        if self.segment + self.within + self.exclusive > 1 + 1e-9:
            raise InvalidInputError(
                f"the shares of segment, within and exclusive jobs sum to "
                f"{self.segment + self.within + self.exclusive:.3g}, above 1; lower them (the "
                "rest of the jobs are plain)"
            )
        levels = tuple(self.within_levels)
        if not levels or any(not is_int(v) or v < 1 for v in levels):
            raise InvalidInputError(f"within_levels must list levels >= 1, got {levels!r:.40}")
        object.__setattr__(self, "within_levels", tuple(int(v) for v in levels))

    @property
    def plain(self) -> float:
        """The share of plain jobs (no constraint)."""
        return max(0.0, 1.0 - self.segment - self.within - self.exclusive)

    def shares(self) -> dict:
        """``{kind: share}`` for every kind of :data:`KINDS`."""
        return {
            "segment": self.segment,
            "within": self.within,
            "exclusive": self.exclusive,
            "plain": self.plain,
        }

    @classmethod
    def parse(cls, text: str) -> "ConstraintMix":
        """``"mix"``: the default shares; ``"segment=0.4,within=0.2,exclusive=0.1"``: those shares,
        a kind left out getting none (the rest are plain)."""
        text = str(text).strip()
        if text == "mix":
            return cls()
        shares = {"segment": 0.0, "within": 0.0, "exclusive": 0.0}
        seen: set[str] = set()
        for part in text.split(","):
            key, eq, value = part.partition("=")
            key = key.strip()
            try:
                number = float(value)
            except ValueError:
                number = None
            if key not in shares or not eq or number is None:
                raise InvalidInputError(
                    f"constraints {text!r:.60}: give 'mix' or shares such as "
                    "'segment=0.4,within=0.2,exclusive=0.1' (the rest of the jobs are plain)"
                )
            if key in seen:
                raise InvalidInputError(
                    f"constraints {text!r:.60}: {key} is given twice; give each kind once"
                )
            seen.add(key)
            shares[key] = number
        return cls(**shares)


def job_kind(job: Job) -> str:
    """The kind of ``job`` (one of :data:`KINDS`): its first constraint of segment, within and
    exclusive, or ``"plain"``."""
    if job.segment is not None:
        return "segment"
    if job.within is not None:
        return "within"
    if job.exclusive is not None:
        return "exclusive"
    return "plain"


class _Sizes:
    """The node counts each kind may ask for on one tree (largest first, for shrinking)."""

    def __init__(self, topology: Topology, mix: ConstraintMix):
        self.base = base_block_size(topology, "block windows")
        self.segments = sorted(
            {self.base, *([self.base // 2] if self.base % 2 == 0 and self.base >= 4 else [])}
        )
        top = top_level(topology)
        self.levels = sorted({min(level, top) for level in mix.within_levels})
        self.domain_size = {
            level: int(np.bincount(level_domains(topology, level)).max()) for level in self.levels
        }
        self.num_nodes = topology.num_nodes

    def draw(self, kind: str, rng) -> list[Job]:
        """One job of ``kind`` and its smaller versions, the drawn one first."""
        if kind == "segment":
            segment = int(rng.choice(self.segments))
            count = int(rng.integers(1, MAX_SEGMENTS + 1))
            return [Job(segment * k, segment=segment) for k in range(count, 0, -1)]
        if kind == "within":
            level = int(rng.choice(self.levels))
            most = min(self.domain_size[level], 2 * self.base)
            return [Job(n, within=level) for n in _halving(int(rng.integers(2, max(most, 2) + 1)))]
        if kind == "exclusive":
            return [
                Job(n, exclusive=1) for n in _halving(int(rng.integers(2, max(self.base, 2) + 1)))
            ]
        most = min(2 * self.base, self.num_nodes)
        return [Job(n) for n in _halving(int(rng.integers(2, max(most, 2) + 1)))]


def _halving(n: int) -> list[int]:
    """n, n // 2, n // 4 ... down to 2."""
    out = [n]
    while out[-1] // 2 >= 2:
        out.append(out[-1] // 2)
    return out


def _busy_nodes(topology: Topology, rng) -> np.ndarray:
    """A fragmented busy set: whole leaf switches busy, some wholly idle, the rest partly."""
    leaves = topology.leaf_switches
    full_share = rng.uniform(*FULL_BLOCKS)
    free_share = rng.uniform(*FREE_BLOCKS)
    state = rng.random(leaves.size)  # < full: busy; < full + free: idle; else partly
    busy = np.zeros(topology.num_nodes, bool)
    for leaf, u in zip(leaves, state):
        nodes = np.flatnonzero(topology.node_leaf == leaf)
        if u < full_share:
            busy[nodes] = True
        elif u >= full_share + free_share and nodes.size > 1:
            count = int(rng.integers(1, nodes.size))
            busy[rng.choice(nodes, count, replace=False)] = True
    return busy


def constrained_windows(
    topology: Topology,
    num_windows: int = 100,
    seed: int = 0,
    *,
    cap: int = 5,
    mix: ConstraintMix | None = None,
    progress=None,
) -> list[Window]:
    """``num_windows`` windows of up to ``cap`` multi-node jobs with the kinds of
    ``mix`` (default :class:`ConstraintMix`), on ``topology`` loaded and fragmented as the
    module describes. Each window's ``meta`` holds its ``index`` and ``busy_nodes``.
    ``progress(made, num_windows)``, if given, is called after each window."""
    if not isinstance(topology, Topology):
        raise InvalidInputError(f"topology must be a tjap.Topology, got {type(topology).__name__}")
    check_int("num_windows", num_windows, 1)
    check_int(
        "cap", cap, 1, must="a positive number of jobs (windows with job constraints need one)"
    )
    if topology.num_nodes < 2:
        raise InvalidInputError("a window of multi-node jobs needs a tree of at least 2 nodes")
    mix = ConstraintMix() if mix is None else mix
    sizes = _Sizes(topology, mix)
    kinds, weights = list(KINDS), np.array(list(mix.shares().values()))
    weights = weights / weights.sum()
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    kind = str(rng.choice(kinds, p=weights))  # the next job's kind, kept until it fits
    windows = []
    while len(windows) < num_windows:
        for _ in range(MAX_REDRAWS):
            busy = _busy_nodes(topology, rng)
            idle = np.flatnonzero(~busy)
            jobs: list[Job] = []
            while len(jobs) < cap:
                job = _fitting(topology, idle, jobs, sizes.draw(kind, rng))
                if job is None:
                    break
                jobs.append(job)
                kind = str(rng.choice(kinds, p=weights))
            if jobs:
                break
        else:
            raise InvalidInputError(
                f"no {kind} job fits the tree ({topology.num_nodes} nodes, smallest leaf "
                f"{sizes.base}) in {MAX_REDRAWS} draws of its busy nodes; give a larger tree or "
                "another mix"
            )
        windows.append(
            Window(topology, idle, jobs, {"index": len(windows), "busy_nodes": int(busy.sum())})
        )
        if progress is not None:
            progress(len(windows), num_windows)
    return windows


def _fitting(topology, idle, jobs: list[Job], versions: list[Job]) -> Job | None:
    """The first of ``versions`` (one job, largest first) that the constrained Seq places after
    ``jobs``; None when none does."""
    for job in versions:
        if sum(j.nodes for j in jobs) + job.nodes > idle.size:
            continue
        if first_fit(Window(topology, idle, [*jobs, job])) is not None:
            return job
    return None
