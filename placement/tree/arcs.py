"""Where each job of a window may go under SCAS, with its constraints: the job's **arcs**.

An arc of job j is a start position p of the idle sequence Q (the job takes the run D(p, n_j),
wrapping to Q's head) that its constraints allow, with

- its **nodes**: the run D(p, n_j); for a segmented job, the walk from p along Q in which each
  domain of the segment level gives the job as many whole segments as its idle nodes from there
  allow (or what the job still needs), the rest of that domain's idle nodes (fewer than a
  segment) skipped; the walk starts with a segment at p and ends at its last node
  (:func:`arc_nodes`);
- its **cost**: the nodes' CH cost, plus ``prefer_cost`` per extra domain of the preferred level,
  plus the window's fragmentation term (its weight per whole idle domain the run breaks into);
- its **region** (``first``, ``length``): the positions of Q the arc holds for itself, so that
  no other job of the window takes them. That is the run (for a segmented job, from its first
  node to its last, the skipped nodes included), or for an ``exclusive`` job every idle node of
  the domains it touches (the domains of a level are contiguous in Q, so the region is one run
  of Q too).

Every exact method reads these arcs: the DP (:mod:`tjap.placement.tree.csp`) walks them along Q,
SCIP and CP-SAT (:mod:`tjap.placement.tree.scas`) choose one per job with the regions disjoint,
and :func:`first_fit` is the constrained Seq. An unconstrained job's arcs are all m starts, its
costs :meth:`Window.block_costs`, its regions the runs themselves.

:func:`violations` checks a placement against the constraints from the node sets alone (no Q,
no arcs), as the model-free definition: a segmented job's nodes must split into groups of
``segment`` nodes each inside one domain, which for node counts means every domain holds a
multiple of ``segment`` of the job's nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.placement.tree import _arc_kernels
from tjap.placement.tree.fragmentation import domain_prices, position_prices
from tjap.placement.tree.jobs import Job, level_domains, slurm_level
from tjap.placement.tree.tree_cost import convention_code


@dataclass(frozen=True)
class Arcs:
    """A job's allowed starts (``start``, positions of Q), their costs and their regions
    (``first``, ``length``: the region is positions first .. first + length - 1 of Q, wrapping)."""

    start: np.ndarray
    cost: np.ndarray
    first: np.ndarray
    length: np.ndarray

    @property
    def count(self) -> int:
        return int(self.start.size)


class _Runs:
    """Domain changes along Q (cyclic) at one level: how many domain boundaries a run crosses."""

    def __init__(self, domains_q: np.ndarray):
        m = domains_q.size
        change = np.empty(m, bool)
        change[0] = domains_q[0] != domains_q[-1]
        change[1:] = domains_q[1:] != domains_q[:-1]
        self.domains = domains_q
        self.change = change
        self.prefix = np.concatenate([[0], np.cumsum(np.concatenate([change, change]))])

    def crossings(self, p: np.ndarray, length: int) -> np.ndarray:
        """Domain boundaries inside the runs of ``length`` starting at ``p`` (0 <= p < m)."""
        return self.prefix[p + length] - self.prefix[p + 1]


def _domains_q(window, level: int, cache: dict) -> _Runs:
    key = ("runs", level)
    if key not in cache:
        cache[key] = _Runs(level_domains(window.topology, level)[window.idle_nodes])
    return cache[key]


def job_arcs(window, job: Job, convention: str = "paper") -> Arcs:
    """The arcs of ``job`` (a job of ``window``, levels resolved) under SCAS (cached per window)."""
    cache = window._block_cost_cache
    key = ("arcs", job, convention)
    if key in cache:
        return cache[key]
    m, n = window.num_idle, job.nodes
    p = np.arange(m, dtype=np.int64)
    weight, frag_level = window.fragmentation
    if n > m:
        ok, cost, length = np.zeros(m, bool), np.zeros(m), np.full(m, n, np.int64)
    elif job.segment is not None:
        ok, cost, length = _segmented(window, job, cache, convention)
    else:
        ok, length = np.ones(m, bool), np.full(m, n, np.int64)
        cost = np.array(window.block_costs(n, convention), dtype=np.float64)
        if job.prefer is not None:
            cost += job.prefer_cost * _touched(
                window, _domains_q(window, job.prefer, cache), p, n, extra=True
            )
        if weight:
            cost += weight * _opened(window, job, cache, p, n)
    if n <= m:
        for level in _within_levels(window, job):
            ok &= _domains_q(window, level, cache).crossings(p, length) == 0
    first = p.copy()
    if job.exclusive is not None and n <= m:
        first, length = _exclusive_regions(_domains_q(window, job.exclusive, cache), p, length)
    keep = np.flatnonzero(ok)
    arcs = Arcs(p[keep], cost[keep], first[keep], length[keep])
    for array in (arcs.start, arcs.cost, arcs.first, arcs.length):
        array.setflags(write=False)
    cache[key] = arcs
    return arcs


def _within_levels(window, job: Job) -> list[int]:
    """The levels of which one domain must hold all the job's nodes."""
    levels = [job.within] if job.within is not None else []
    if job.slurm_rule and job.segment is None:
        levels.append(slurm_level(window.topology, job.nodes))
    return levels


def segment_level(window, job: Job) -> int:
    """The level whose domains must each hold whole segments of ``job``: its segment level, or
    with ``slurm_rule`` the lower of that and the level Slurm sizes from the segment (levels
    nest, so a segment inside a domain of the lower level is inside one of the higher too)."""
    if job.slurm_rule:
        return min(job.segment_level, slurm_level(window.topology, job.segment))
    return job.segment_level


def _segmented(window, job: Job, cache: dict, convention: str):
    """(allowed, cost, walk length) of every start of a segmented job (:func:`segment_walk`)."""
    m = window.num_idle
    form = window.topology.count_form
    weight, frag_level = window.fragmentation
    levels = ([job.prefer] if job.prefer is not None else []) + ([frag_level] if weight else [])
    rows = np.zeros((max(len(levels), 1), m), np.int64)
    prices = np.zeros((max(len(levels), 1), m))
    for r, level in enumerate(levels):
        rows[r] = _domains_q(window, level, cache).domains
    if weight:
        prices[len(levels) - 1] = position_prices(window, job)
    length, cost, distinct, priced = _arc_kernels.segment_arcs(
        _domains_q(window, segment_level(window, job), cache).domains,
        job.nodes,
        job.segment,
        form.group_of,
        form.top_level,
        window.idle_nodes,
        form.num_groups,
        convention_code(convention),
        rows,
        prices,
    )
    ok = length >= 0
    cost = np.where(ok, cost, 0.0)
    if job.prefer is not None:
        cost += job.prefer_cost * (distinct[0] - 1)
    if weight:
        cost += weight * priced[len(levels) - 1]
    return ok, cost, np.where(ok, length, job.nodes)


def arc_nodes(window, job: Job, start: int) -> list[int]:
    """The node ids ``job`` takes from start position ``start`` of Q: the run D(start, n), or a
    segmented job's walk (:func:`segment_walk`)."""
    if job.segment is None:
        return window.block(int(start), job.nodes).tolist()
    positions = np.empty(job.nodes, np.int64)
    cache = window._block_cost_cache
    steps = _arc_kernels.segment_walk(
        _domains_q(window, segment_level(window, job), cache).domains,
        job.nodes,
        job.segment,
        int(start),
        positions,
    )
    if steps < 0:
        raise InvalidInputError(
            f"no segmented run of {job.nodes} nodes starts at position {start} of Q"
        )
    return window.idle_nodes[positions].tolist()


segment_walk = _arc_kernels.segment_walk


def _touched(window, runs: _Runs, p, n: int, extra: bool = False) -> np.ndarray:
    """Distinct domains the runs D(p, n) touch (minus one with ``extra``)."""
    if n >= window.num_idle:
        touched = np.full(p.size, np.unique(runs.domains).size)
    else:
        crossings = runs.crossings(p, n)
        touched = crossings + 1 - _back_home(window, runs, p, n, crossings)
    return touched - 1 if extra else touched


def _back_home(window, runs: _Runs, p, n: int, crossings) -> np.ndarray:
    """1 where a run that wraps from Q's tail to its head ends in the domain it began in (having
    left it): that domain was counted twice."""
    m = window.num_idle
    last = (p + n - 1) % m
    return ((p + n > m) & (crossings > 0) & (runs.domains[p] == runs.domains[last])).astype(
        np.int64
    )


def _opened(window, job: Job, cache: dict, p, n: int) -> np.ndarray:
    """The fragmentation prices (:func:`~tjap.placement.tree.fragmentation.position_prices`,
    in units of the weight) of the distinct domains of the term's level each run touches."""
    level = window.fragmentation[1]
    price = position_prices(window, job)
    key = ("opened", level, job.runtime_s)
    runs = _domains_q(window, level, cache)
    if key not in cache:
        starts = price.copy() if window.num_idle == 1 else np.where(runs.change, price, 0.0)
        cache[key] = np.concatenate([[0.0], np.cumsum(np.concatenate([starts, starts]))])
    prefix = cache[key]
    if n >= window.num_idle:
        first = np.unique(runs.domains, return_index=True)[1]
        return np.full(p.size, price[first].sum())
    opened = price[p] + prefix[p + n] - prefix[p + 1]
    return opened - _back_home(window, runs, p, n, runs.crossings(p, n)) * price[p]


def _exclusive_regions(runs: _Runs, p, n) -> tuple[np.ndarray, np.ndarray]:
    """The region each run from p of ``n`` positions (one length, or one per start) holds when
    its domains are its own: from the first position of the first domain it touches to the
    last of the last. Domains are contiguous in Q and never wrap (Q follows the tree's node
    order), so only the run itself may wrap."""
    m = runs.domains.size
    if not runs.change.any():  # one domain holds all of Q
        return np.zeros_like(p), np.full(p.size, m, np.int64)
    n = np.broadcast_to(n, p.shape)
    starts = np.flatnonzero(runs.change)  # where each domain's run begins; 0 first
    at = np.searchsorted(starts, np.arange(m), side="right")
    begin = starts[at - 1]
    end = np.append(starts, m)[at]
    last = (p + n - 1) % m
    first = begin[p]
    stop = end[last] + np.where(p + n > m, m, 0)
    return first, np.minimum(stop - first, m)


def first_fit(window, convention: str = "paper"):
    """Seq under the constraints: each job, in window order, takes its allowed run with the
    earliest region start (from Q's head) that holds no position an earlier job holds. Returns
    the assignment (node ids per job), or None when some job finds no such run."""
    m = window.num_idle
    held = np.zeros(2 * m, bool)
    assignment = []
    for job in window.jobs:
        arcs = job_arcs(window, job, convention)
        order = np.argsort(arcs.first, kind="stable")
        chosen = None
        for k in order:
            a, length = int(arcs.first[k]), int(arcs.length[k])
            span = np.arange(a, a + length) % m
            if not held[span].any():
                chosen = k
                held[span] = True
                break
        if chosen is None:
            return None
        assignment.append(arc_nodes(window, job, int(arcs.start[chosen])))
    return assignment


# -------------------------------------------------------------------------- checking
def job_penalty(window, job: Job, nodes) -> float:
    """The terms a node set adds to its CH cost in the objective: ``prefer_cost`` per extra
    domain of the preferred level, and the window's fragmentation weight times the price of
    each domain of its level it touches (:mod:`tjap.placement.tree.fragmentation`; from the
    node set alone)."""
    penalty = 0.0
    nodes = np.asarray(nodes, np.int64)
    if job.prefer is not None:
        touched = np.unique(level_domains(window.topology, job.prefer)[nodes]).size
        penalty += job.prefer_cost * (touched - 1)
    weight, level = window.fragmentation
    if weight:
        touched = np.unique(level_domains(window.topology, level)[nodes])
        penalty += weight * float(domain_prices(window, job)[touched].sum())
    return penalty


def violations(window, assignment) -> list[str]:
    """The constraints ``assignment`` (node ids per job, in window order) breaks, one line each
    (empty when it keeps them all), judged from the node sets alone."""
    out = []
    tree = window.topology
    for j, (job, nodes) in enumerate(zip(window.jobs, assignment)):
        nodes = np.asarray(nodes, np.int64)
        for level in _within_levels(window, job):
            if np.unique(level_domains(tree, level)[nodes]).size > 1:
                out.append(f"job {j}: its nodes span several domains of level {level}")
        if job.segment is not None:
            level = segment_level(window, job)
            counts = np.unique(level_domains(tree, level)[nodes], return_counts=True)[1]
            if np.any(counts % job.segment):
                out.append(
                    f"job {j}: its nodes do not split into segments of {job.segment} "
                    f"inside domains of level {level}"
                )
        if job.exclusive is not None:
            domains = level_domains(tree, job.exclusive)
            mine = set(domains[nodes].tolist())
            for k, other in enumerate(assignment):
                if k != j and mine & set(domains[np.asarray(other, np.int64)].tolist()):
                    out.append(
                        f"job {j}: job {k} has nodes in its exclusive domains of level "
                        f"{job.exclusive}"
                    )
    return out


def why_infeasible(window, model: str = "scas") -> str:
    """One sentence on why ``window`` has no solution under ``model`` (``"scas"``: each job a
    contiguous run of the idle order Q; ``"free"``: any idle nodes; ``"dcas"``), for a result
    that says INFEASIBLE without a reason of its own: too few idle nodes for the jobs together or
    for one job, a job whose constraints allow it no run of Q (SCAS), or the jobs together."""
    need, idle = int(sum(window.job_sizes)), window.num_idle
    if need > idle:
        return f"the jobs ask for {need:,} nodes together and {idle:,} are idle"
    for j, job in enumerate(window.jobs):
        if job.nodes > idle:
            return f"job {j} asks for {job.nodes:,} nodes and {idle:,} are idle"
    if model == "scas":
        for j, job in enumerate(window.jobs):
            if job_arcs(window, job).count == 0:
                return f"job {j} has no run of the idle nodes that its constraints allow"
        return (
            "each job alone has a run of the idle nodes its constraints allow, but no set of "
            "runs holds every job at once (SCAS: a job takes a contiguous run of the idle order)"
        )
    return "no placement of every job at once meets the jobs' constraints"


def fits_alone(topology, idle_nodes, job) -> bool:
    """True when some run of the idle nodes (in tree order) keeps ``job``'s constraints, the job
    alone: the test whether a job could start now on its own (a one-job window has a SCAS
    solution exactly then), without solving anything."""
    from tjap.placement.tree.window import Window

    window = Window(topology, idle_nodes, [job])
    return job_arcs(window, window.jobs[0]).count > 0
