"""An independent check of job constraints, written from their definition for tests: domains
from each node's chain of switches (no arrays shared with the library), segments by trying
every split, exclusivity by sets of switch names, and a brute force over every SCAS placement."""

from __future__ import annotations

import itertools
import math

from tjap.placement.tree.cost import job_cost


def _height(tree, switch: int, memo: dict) -> int:
    if switch not in memo:
        kids = tree.children(switch)
        memo[switch] = 1 + max((_height(tree, k, memo) for k in kids), default=0)
    return memo[switch]


def domain(tree, node: int, level: int, memo=None) -> str:
    """The name of the highest switch above ``node`` whose level (1 + the longest way down to a
    leaf switch) is at most ``level``."""
    memo = {} if memo is None else memo
    best = None
    for s in tree.ancestors(node):
        if _height(tree, s, memo) <= level:
            best = s
        else:
            break
    return tree.switch_names[best]


def slurm_level(tree, count: int) -> int | None:
    base = min(len(tree.nodes_of(s)) for s in range(tree.num_switches) if not tree.children(s))
    need = math.ceil(count / base)
    memo = {}

    def leaves(s):
        kids = tree.children(s)
        return 1 if not kids else sum(leaves(k) for k in kids)

    top = _height(tree, 0, memo)
    for level in range(1, top + 1):
        if any(
            _height(tree, s, memo) <= level and leaves(s) >= need for s in range(tree.num_switches)
        ):
            return level
    return None


def _splits_into_segments(groups, segment: int) -> bool:
    """Can the nodes (a list of domain names) be cut into groups of ``segment`` nodes, each of
    one domain? Tried by search, not by counting."""
    if not groups:
        return True
    first = groups[0]
    same = [g for g in groups if g == first]
    if len(same) < segment:
        return False
    rest = list(groups)
    for _ in range(segment):
        rest.remove(first)
    return _splits_into_segments(rest, segment)


def keeps(window, assignment) -> bool:
    """True when the assignment keeps every job's constraints (and is a valid assignment)."""
    tree = window.topology
    idle = set(window.idle_nodes.tolist())
    used = set()
    for nodes, size in zip(assignment, window.job_sizes):
        if (
            len(nodes) != size
            or len(set(nodes)) != size
            or not set(nodes) <= idle
            or used & set(nodes)
        ):
            return False
        used |= set(nodes)
    memo = {}
    for j, (job, nodes) in enumerate(zip(window.jobs, assignment)):
        within = [job.within] if job.within is not None else []
        segments = [(job.segment, job.segment_level)] if job.segment else []
        if job.slurm_rule:
            if job.segment:
                segments.append((job.segment, slurm_level(tree, job.segment)))
            else:
                within.append(slurm_level(tree, job.nodes))
        for level in within:
            if len({domain(tree, v, level, memo) for v in nodes}) != 1:
                return False
        for segment, level in segments:
            if not _splits_into_segments([domain(tree, v, level, memo) for v in nodes], segment):
                return False
        if job.exclusive is not None:
            mine = {domain(tree, v, job.exclusive, memo) for v in nodes}
            for k, other in enumerate(assignment):
                if k != j and mine & {domain(tree, v, job.exclusive, memo) for v in other}:
                    return False
    return True


def objective(window, assignment, convention="paper", jobs=None) -> float:
    """CH cost plus the prefer and fragmentation terms, from their definitions (``jobs``: the
    jobs the node sets belong to, by default the window's)."""
    tree = window.topology
    memo = {}
    total = 0.0
    weight, flevel = window.fragmentation
    idle = set(window.idle_nodes.tolist())
    whole = set()
    if weight:
        by_domain = {}
        for v in range(tree.num_nodes):
            by_domain.setdefault(domain(tree, v, flevel, memo), []).append(v)
        whole = {d for d, vs in by_domain.items() if all(v in idle for v in vs)}
    for job, nodes in zip(window.jobs if jobs is None else jobs, assignment):
        total += job_cost(tree, list(nodes), convention)
        if job.prefer is not None:
            total += job.prefer_cost * (len({domain(tree, v, job.prefer, memo) for v in nodes}) - 1)
        if weight:
            total += weight * len({domain(tree, v, flevel, memo) for v in nodes} & whole)
    return total


def segment_level(window, job) -> int:
    if job.slurm_rule:
        return min(job.segment_level, slurm_level(window.topology, job.segment))
    return job.segment_level


def walk(window, job, p):
    """A job's nodes and the positions of Q it holds from start p: the run D(p, n); for a
    segmented job, whole segments from each domain met along Q, the rest of a domain skipped
    (None when the walk cannot start with a segment at p or collect the job in one turn)."""
    m, q, tree = window.num_idle, window.idle_nodes, window.topology
    if job.segment is None:
        held = [(p + i) % m for i in range(job.nodes)]
        return [int(q[k]) for k in held], held
    level = segment_level(window, job)
    name = [domain(tree, int(q[k]), level) for k in range(m)]
    nodes, held, k = [], [], 0
    while len(nodes) < job.nodes and k < m:
        here = [k + i for i in range(m - k) if name[(p + k + i) % m] == name[(p + k) % m]]
        run = 0
        while run < len(here) and here[run] == k + run:
            run += 1
        take = min(run - run % job.segment, job.nodes - len(nodes))
        if k == 0 and take == 0:
            return None
        nodes += [int(q[(p + k + i) % m]) for i in range(take)]
        held += [(p + k + i) % m for i in range(take if len(nodes) == job.nodes else run)]
        k += run
    if len(nodes) < job.nodes:
        return None
    return nodes, held


def holds(window, j, job, held):
    """Every position of Q the job keeps for itself: its held stretch, or for an exclusive job
    every idle node of the domains its nodes touch."""
    if job.exclusive is None:
        return set(held)
    q, tree = window.idle_nodes, window.topology
    mine = {domain(tree, int(q[k]), job.exclusive) for k in held}
    return {k for k in range(window.num_idle) if domain(tree, int(q[k]), job.exclusive) in mine}


def brute_force(window, convention="paper"):
    """The cheapest SCAS placement that keeps the constraints, by trying every start of every
    job: (objective, assignment), or (inf, None)."""
    m = window.num_idle
    best, found = math.inf, None
    for starts in itertools.product(range(m), repeat=window.num_jobs):
        walks = [walk(window, job, p) for job, p in zip(window.jobs, starts)]
        if any(w is None for w in walks):
            continue
        regions = [
            holds(window, j, job, w[1]) for j, (job, w) in enumerate(zip(window.jobs, walks))
        ]
        if sum(map(len, regions)) != len(set().union(*regions)):
            continue
        assignment = [w[0] for w in walks]
        if not keeps(window, assignment):
            continue
        value = objective(window, assignment, convention)
        if value < best - 1e-9:
            best, found = value, assignment
    return best, found


def is_walk(window, assignment) -> bool:
    """Every job's nodes are the nodes of one of its walks (SCAS under the constraints)."""
    for job, nodes in zip(window.jobs, assignment):
        walks = (walk(window, job, p) for p in range(window.num_idle))
        if not any(w is not None and sorted(w[0]) == sorted(nodes) for w in walks):
            return False
    return True
