"""What Kueue's topology-aware scheduling (TAS) does with a window's jobs: each job one pod set of
``nodes`` pods, admitted in window (priority) order on the nodes the earlier ones left idle
(methods ``"kueue-bestfit"`` and ``"kueue-leastfree"``: :func:`solve_kueue_bestfit`,
:func:`solve_kueue_leastfree`).

The rules are re-written from a reading of ``findTopologyAssignment`` and its helpers
(``fillInCounts``, ``findLevelWithFitDomains``, ``findBestFitDomainForSlices``,
``updateCountsToMinimumGeneric``, ``sortedDomains``) in Kueue's
``pkg/cache/scheduler/tas_flavor_snapshot.go`` (``pkg/cache/tas_flavor_snapshot.go`` in
earlier releases) and from Kueue's TAS documentation. The mapping:

- **Levels.** Kueue lists its levels from the top down, the hostname level last; here they are
  the tree's levels from the top (tjap counts them up from 1, the leaf switches: see
  :mod:`tjap.placement.tree.jobs`) and then the nodes themselves. The root tjap adds above
  several top-level switches (the implicit root) is no Kueue level. A level's domains are
  :func:`~tjap.placement.tree.jobs.level_domains`; each node holds one pod (the window's nodes
  are whole), so a domain's capacity is its count of nodes still idle.
- **Requests.** A job is a pod set of ``nodes`` pods. ``within=L`` is a *required* topology at
  level L, ``prefer=L`` a *preferred* one (``prefer_cost`` is tjap's own price and plays no
  part in Kueue's choice); ``segment=S`` with ``segment_level=L`` makes slices of S pods, each
  required within one domain of level L (``podset-slice-size`` and
  ``podset-slice-required-topology``). A job with neither ``within`` nor ``prefer`` is Kueue's
  unconstrained request, placed at the hostname level; one with slices only is placed from the
  top level down (Kueue's slice-only request, also unconstrained).
- **Profiles.** ``kueue-bestfit`` uses BestFit everywhere (Kueue with the ``TASProfileMixed``
  gate off); ``kueue-leastfree`` uses LeastFreeCapacity for unconstrained requests and BestFit
  for the others (``TASProfileMixed``, Kueue's default since v0.15). The MostFreeCapacity
  profile of early releases is not offered.

The algorithm, per job:

1. **Counts.** Every domain's capacity in pods, summed up the levels; at the slice level its
   slice capacity (pods // S), summed above it (0 below).
2. **The domain.** At the requested level, the domains are sorted by slice capacity (BestFit:
   most first; LeastFreeCapacity: least first), then by pod capacity (least first), then by
   their label values (here: the names of the domain's switches from the top, and the node's
   name, compared as strings). BestFit takes the domain with the fewest slices that still holds
   every slice (the first in that order on a tie); LeastFreeCapacity the first in its order
   that holds them. If none holds them: a required request fails; a preferred one tries the
   level above; at the top level, and for unconstrained requests at their own level, the
   domains are taken greedily in sorted order (BestFit replacing the last by the best-fitting
   remaining one) until the slices are covered, or the request fails.
3. **Down the levels.** Above the slice level the chosen domains' children are pooled, sorted and
   filled greedily again (slices; BestFit picks the best-fitting domain for the last part); at
   and below the slice level each domain's pods are shared out among its own children the same
   way, pod by pod, down to the nodes.

A job Kueue cannot place holds nothing (the later jobs are still tried) and the result has no
solution (status ``INFEASIBLE``), with ``info["unplaced"]`` the window indices of the jobs left
out and ``info["placed"]`` the others' nodes by job index.

Refused in one line, as Kueue has no equivalent: ``exclusive``, ``slurm_rule``, a fragmentation
term, ``within`` together with ``prefer`` (a pod set has one topology request), a slice level
above the requested level (Kueue refuses it), and a level that is the implicit root.

Simplified: one pod set per workload (no leader pod set, no pod-set groups); no taints, node
selectors or affinities; the ``TASBalancedPlacement`` and ``TASMultiLayerTopology`` paths and
node replacement are not modelled. Note that for whole-node pods an unconstrained request takes
the first idle nodes in hostname order under both profiles (every node holds one pod), so the
two methods differ only for slice-only requests.

**Checked against Kueue's own code.** :mod:`tjap.k8s.referee` runs Kueue v0.17.0's
``FindTopologyAssignmentsForFlavor`` (the Go program ``go/kueue-referee``, built by
``bash .ci/build-kueue-referee``) on the same windows, the nodes not idle taken by pods outside
TAS and the jobs admitted one after another: on 2,000 random windows of block/rack trees
(``python -m benchmarks.kueue_referee --cases 2000 --seed 0``) both methods chose Kueue's nodes
for every job and left out the jobs Kueue could not place; ``tests/k8s/test_kueue_referee.py``
keeps it so. One modelling limit the referee shows, which a window cannot express: Kueue
orders a domain's nodes by their ``kubernetes.io/hostname`` label, tjap by the node's
name (its trees keep no other). On a cluster whose hostname labels sort otherwise than the node
names the two differ: nodes ``n1``, ``n2``, ``n3`` of one rack labelled ``c``, ``b``, ``a`` and
one unconstrained pod: Kueue takes ``n3``, tjap ``n1``. Nodes that share a hostname label are one
domain to Kueue (their capacity added up), two to tjap.

``time_limit_s`` and ``seed`` are accepted for the common solver signature: the rule is
deterministic and fast.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.heuristics.slurm.block import window_result
from tjap.placement.tree.jobs import level_domains, switch_levels
from tjap.placement.tree.topology import IMPLICIT_ROOT
from tjap.placement.tree.window import Window

PROFILES = {"kueue-bestfit": "bestfit", "kueue-leastfree": "leastfree"}


# --------------------------------------------------------------------------- the domain tree
class KueueTree:
    """A tree's domains as Kueue's TAS snapshot holds them: level ``k`` = 0 (the top) .. ``H``
    (the nodes). Per level: ``node_index[k]`` (each node's domain, an index 0..size-1),
    ``parent[k]`` (each domain's parent at level k-1), ``children[k]`` (each domain's children
    at level k+1) and ``rank[k]`` (each domain's place in the order of its label values)."""

    def __init__(self, topology):
        top = int(switch_levels(topology)[0])
        implicit = topology.switch_names[0] == IMPLICIT_ROOT and len(topology.children(0)) > 1
        self.tjap_levels = list(range(top - 1 if implicit else top, 0, -1))
        self.implicit_level = top if implicit else None
        self.hostname = len(self.tjap_levels)
        n = topology.num_nodes
        self.node_index, self.parent, self.children, self.rank = [], [], [], []
        values = []  # per level: each domain's label values from the top
        for k, level in enumerate(self.tjap_levels + [None]):
            if level is None:
                ids, names = np.arange(n), topology.node_names
            else:
                ids, names = level_domains(topology, level), topology.switch_names
            switch_ids, first_node, local = np.unique(ids, return_index=True, return_inverse=True)
            order = np.argsort(first_node, kind="stable")  # domains in the tree's node order
            position = np.empty_like(order)
            position[order] = np.arange(order.size)
            local = position[local].astype(np.int64)
            switch_ids, first_node = switch_ids[order], first_node[order]
            own = [names[int(s)] for s in switch_ids]
            if k == 0:
                path = [(name,) for name in own]
                self.parent.append(np.full(switch_ids.size, -1, np.int64))
            else:
                above = self.node_index[k - 1][first_node]
                path = [values[k - 1][int(p)] + (name,) for p, name in zip(above, own)]
                parent = np.empty(switch_ids.size, np.int64)
                parent[local] = self.node_index[k - 1]
                self.parent.append(parent)
                kids = [[] for _ in range(len(values[k - 1]))]
                for d, p in enumerate(parent):
                    kids[int(p)].append(d)
                self.children.append([np.array(c, np.int64) for c in kids])
            values.append(path)
            rank = np.empty(len(path), np.int64)
            rank[sorted(range(len(path)), key=path.__getitem__)] = np.arange(len(path))
            self.node_index.append(local)
            self.rank.append(rank)
        self.children.append([np.zeros(0, np.int64)] * n)  # nodes have no children
        self.sizes = [len(v) for v in values]

    def index_of(self, level: int) -> int:
        """Kueue's index of tjap level ``level``."""
        return self.tjap_levels.index(level)


@functools.lru_cache(maxsize=16)
def kueue_tree(topology) -> KueueTree:
    """The :class:`KueueTree` of ``topology`` (built once per topology, then cached)."""
    return KueueTree(topology)


# --------------------------------------------------------------------------- one pod set
def _holding(domains: np.ndarray, capacity: np.ndarray, needed: int) -> np.ndarray:
    """``domains`` (in order) less those of no capacity, when ``needed`` > 0: Kueue's loops
    give such a domain nothing (the best fit only looks for one that holds what is missing, and
    a domain of no capacity takes no pods) and the nodes chosen do not change without them;
    leaving them out keeps a loop over a level of a million nodes to the few that hold some."""
    if needed <= 0:
        return domains
    return domains[capacity[domains] > 0]


class _Placement:
    """One run of ``findTopologyAssignment`` for a pod set (see the module docstring)."""

    def __init__(
        self,
        tree: KueueTree,
        capacity: np.ndarray,
        count: int,
        slice_size: int,
        slice_index: int,
        request_index: int,
        required: bool,
        unconstrained: bool,
        profile: str,
    ):
        self.tree, self.count, self.size = tree, count, slice_size
        self.slice_index, self.required, self.unconstrained = slice_index, required, unconstrained
        self.leastfree = profile == "leastfree" and unconstrained
        self.request_index = request_index
        h = tree.hostname
        state = [None] * (h + 1)
        state[h] = capacity.astype(np.int64)
        for k in range(h - 1, -1, -1):
            state[k] = np.bincount(
                tree.parent[k + 1], weights=state[k + 1], minlength=tree.sizes[k]
            ).astype(np.int64)
        slices = [np.zeros(tree.sizes[k], np.int64) for k in range(h + 1)]
        slices[slice_index] = state[slice_index] // slice_size
        for k in range(slice_index - 1, -1, -1):
            slices[k] = np.bincount(
                tree.parent[k + 1], weights=slices[k + 1], minlength=tree.sizes[k]
            ).astype(np.int64)
        self.state, self.slices = state, slices
        self.assigned = [dict() for _ in range(h + 1)]

    def sorted(self, k: int, domains) -> np.ndarray:
        """``sortedDomains``: slice capacity (most first; least first for LeastFreeCapacity),
        then pod capacity (least first), then label values."""
        domains = np.asarray(domains, np.int64)
        slices = self.slices[k][domains]
        order = np.lexsort(
            (
                self.tree.rank[k][domains],
                self.state[k][domains],
                slices if self.leastfree else -slices,
            )
        )
        return domains[order]

    @staticmethod
    def best_fit(domains, needed: int, capacity) -> int:
        """``findBestFitDomainBy``: the first domain with the least capacity >= needed (the
        first domain when none has, or when the first has the least)."""
        domains = np.asarray(domains, np.int64)
        held = capacity[domains]
        if held[0] < needed:  # no later domain is both >= needed and below the first
            return int(domains[0])
        return int(domains[int(np.argmin(np.where(held >= needed, held, np.iinfo(np.int64).max)))])

    def fit_level(self, k: int):
        """``findLevelWithFitDomains``: (level, domains) or (None, reason)."""
        needed = self.count // self.size
        slices = self.slices[k]
        order = self.sorted(k, np.arange(self.tree.sizes[k]))
        top = int(order[0])
        if not self.leastfree and slices[top] >= needed:
            top = self.best_fit(order, needed, slices)
        if self.leastfree:
            hits = np.flatnonzero(slices[order] >= needed)
            if hits.size:
                return k, [int(order[hits[0]])]
        if slices[top] >= needed:
            return k, [top]
        if self.required:
            return None, f"no domain of the required level holds {needed} slice(s)"
        if k > 0 and not self.unconstrained:
            return self.fit_level(k - 1)
        chosen, left = [], needed
        order = _holding(order, slices, left)
        for i in range(order.size):
            if left <= 0:
                break
            d = int(order[i])
            if not self.leastfree and slices[d] >= left:
                d = self.best_fit(order[i:], left, slices)
            chosen.append(d)
            left -= slices[d]
        if left > 0:
            return None, f"the idle nodes hold only {needed - left} of {needed} slice(s)"
        return k, chosen

    def fill(self, k: int, domains, count: int, by_slices: bool) -> list:
        """``updateCountsToMinimumGeneric``: share ``count`` pods (in whole slices when
        ``by_slices``) among ``domains`` in order, recording each domain's pods."""
        unit = self.size if by_slices else 1
        capacity = self.slices[k] if by_slices else self.state[k]
        left = count // unit
        chosen = []
        domains = _holding(np.asarray(domains, np.int64), capacity, left)
        for i in range(len(domains)):
            d = int(domains[i])
            if not self.leastfree and capacity[d] >= left:
                d = self.best_fit(domains[i:], left, capacity)
            chosen.append(d)
            if capacity[d] >= left:
                self.assigned[k][d] = left * unit
                return chosen
            self.assigned[k][d] = int(capacity[d]) * unit
            left -= capacity[d]
        raise AssertionError("the domains hold fewer pods than their parents counted")

    def nodes(self):
        """The node ids of the assignment, or None and a reason."""
        tree = self.tree
        k, chosen = self.fit_level(self.request_index)
        if k is None:
            return None, chosen
        chosen = self.fill(k, chosen, self.count, True)
        while k < min(tree.hostname, self.slice_index):  # above the slice level: pooled
            kids = np.concatenate([tree.children[k][d] for d in chosen])
            k += 1
            chosen = self.fill(k, self.sorted(k, kids), self.count, True)
        while k < tree.hostname:  # at and below it: domain by domain
            below = []
            for d in chosen:
                below += self.fill(
                    k + 1, self.sorted(k + 1, tree.children[k][d]), self.assigned[k][d], False
                )
            chosen, k = below, k + 1
        nodes = sorted(d for d in chosen if self.assigned[k][d] > 0)
        return nodes, ""


# --------------------------------------------------------------------------- the window
def refuse_unkueuelike(window: Window, method: str) -> None:
    """Refuse, in one line, a constraint Kueue's topology-aware scheduling cannot express."""
    takes = "dp, scip, cpsat, seq or auto"
    if window.fragmentation[0]:
        raise InvalidInputError(
            f"method {method!r} does not take a fragmentation term (Kueue's "
            f"placement has none); drop 'fragmentation' or use {takes}"
        )
    tree = kueue_tree(window.topology)
    for j, job in enumerate(window.jobs):
        where = f"jobs[{j}]"
        if job.exclusive is not None:
            raise InvalidInputError(
                f"{where}: method {method!r} does not take 'exclusive' (Kueue "
                f"has no exclusive domains); drop it or use {takes} or "
                "slurm-block"
            )
        if job.slurm_rule:
            raise InvalidInputError(
                f"{where}: method {method!r} does not take 'slurm_rule'; drop "
                f"it or use {takes} or slurm-block"
            )
        if job.within is not None and job.prefer is not None:
            raise InvalidInputError(
                f"{where}: a Kueue pod set has one topology request, required "
                "or preferred; give 'within' or 'prefer', not both"
            )
        named = {
            key: getattr(job, key)
            for key in ("within", "prefer", "segment_level")
            if getattr(job, key) is not None and (key != "segment_level" or job.segment)
        }
        for key, level in named.items():
            if level == tree.implicit_level:
                raise InvalidInputError(
                    f"{where}: {key}: level {level} is the root tjap adds above the tree's "
                    f"top-level switches, not a Kueue level; name a level up to {level - 1}"
                )
        level = job.within if job.within is not None else job.prefer
        if job.segment and level is not None and level < job.segment_level:
            raise InvalidInputError(
                f"{where}: Kueue refuses slices required at level {job.segment_level}, above "
                f"the pod set's level {level}; give segment_level <= {level}"
            )


def solve_kueue(window: Window, method: str, *, convention="paper", seed=0):
    """Place the window's jobs one after another as Kueue's TAS does under ``method``'s profile
    (see the module docstring)."""
    if not isinstance(window, Window):
        raise InvalidInputError(f"window must be a Window, got {type(window).__name__}")
    refuse_unkueuelike(window, method)
    started = time.perf_counter()
    tree = kueue_tree(window.topology)
    free = np.zeros(window.topology.num_nodes, np.int64)
    free[window.idle_nodes] = 1
    placed, unplaced, reasons = {}, [], []
    for j, job in enumerate(window.jobs):
        level = job.within if job.within is not None else job.prefer
        if level is not None:
            request, unconstrained = tree.index_of(level), False
        else:
            request, unconstrained = (0 if job.segment else tree.hostname), True
        slice_index = tree.index_of(job.segment_level) if job.segment else tree.hostname
        run = _Placement(
            tree,
            free,
            job.nodes,
            job.segment or 1,
            slice_index,
            request,
            job.within is not None,
            unconstrained,
            PROFILES[method],
        )
        nodes, reason = run.nodes()
        if nodes is None:
            unplaced.append(j)
            reasons.append(reason)
            continue
        placed[j] = tuple(nodes)
        free[nodes] = 0
    return window_result(
        window,
        method,
        placed,
        unplaced,
        convention=convention,
        seed=seed,
        runtime_s=time.perf_counter() - started,
        reason=reasons[0] if reasons else "",
    )


def solve_kueue_bestfit(window: Window, *, convention="paper", time_limit_s=None, seed=0):
    """Kueue's TAS placement with the BestFit profile everywhere (method ``"kueue-bestfit"``).

    Status ``FEASIBLE``; ``INFEASIBLE`` when a job cannot be placed, with ``info["unplaced"]``
    and ``info["placed"]`` (see the module docstring)."""
    return solve_kueue(window, "kueue-bestfit", convention=convention, seed=seed)


def solve_kueue_leastfree(window: Window, *, convention="paper", time_limit_s=None, seed=0):
    """Kueue's TAS placement with LeastFreeCapacity for unconstrained requests and BestFit for
    the others (``TASProfileMixed``, Kueue's default; method ``"kueue-leastfree"``)."""
    return solve_kueue(window, "kueue-leastfree", convention=convention, seed=seed)


__all__ = [
    "KueueTree",
    "kueue_tree",
    "refuse_unkueuelike",
    "solve_kueue",
    "solve_kueue_bestfit",
    "solve_kueue_leastfree",
]
