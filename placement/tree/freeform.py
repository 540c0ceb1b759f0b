"""Allocation with no contiguity rule: the true minimum CH cost of a window, on any switch tree.

A job's cost depends only on its node count n and on S, the sum over the tree's count groups of
its squared node counts (:mod:`tjap.placement.tree.tree_cost`; on the paper's fat-tree S = A + B, the
per-edge-switch and per-pod sums of squares of :mod:`tjap.placement.tree.cost`). Every node of a leaf
switch lies in the same groups, so the quadratic assignment problem collapses to an integer model
over per-leaf counts u[j, e]: a group's count is the sum of its leaves' counts, and each square is
written exactly as u^2 = sum_k (2k - 1) * [u >= k] over ordered binaries. Solved by SCIP (default)
or CP-SAT; every contiguity strategy (SCAS, DCAS) is measured against its optimum.

The jobs' constraints and the objective's extra terms (:mod:`tjap.placement.tree.jobs`) go on the
same counts: the domains of a level are unions of leaf switches, so a job's count in a domain is
the sum of its leaves' counts. ``within`` is a binary choice of one domain per job, that domain's
count being the job's size (``slurm_rule`` on an unsegmented job: within Slurm's level); a
segment is an integer multiplier per domain of the segment level (the job's count there is a
multiple of ``segment``); ``exclusive`` a binary usage per (job, domain) that empties the domain
for every other job; ``prefer`` and the fragmentation term price those usage binaries (the
minimisation sets them to the domains actually used). With no contiguity rule this is the least
objective of every placement that keeps the constraints, so it bounds every constrained SCAS
optimum from below.

The model is exact, but its LP relaxation is weak (it lets every node count as if its job filled
the fullest groups), so proving optimality on windows with hundreds of idle nodes can take long:
give ``time_limit_s`` and a ``warm_start`` (the SCAS optimum), and read ``status`` and ``bound``.

:func:`solve_freeform_greedy` is a fast best-fit heuristic over the same counts, and
:func:`best_single_job_nodes` the exact cheapest node set of one job alone (a tree DP).
"""

from __future__ import annotations

import bisect
import math
import time

import numpy as np

from tjap.core import backends as _backends
from tjap.core.backends import BUILD_MARGIN
from tjap.core.errors import InvalidInputError
from tjap.placement.tree.arcs import segment_level, violations
from tjap.placement.tree.cost import HOP_UNIT_COST, convention_code
from tjap.placement.tree.fragmentation import domain_prices
from tjap.placement.tree.jobs import level_domains, refuse_constraints, slurm_level, switch_levels
from tjap.placement.tree.result import Result, Status, checked_assignment
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.tree_cost import cost_from_sum_of_squares
from tjap.placement.tree.window import Window

SOLVERS = ("cpsat", "scip")
#: The package each solver is imported from.
SOLVER_PACKAGES = {"cpsat": "ortools.sat.python.cp_model", "scip": "pyscipopt"}


def _groups(values: np.ndarray, keys: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    """``values`` split by ``keys`` (whose distinct values, increasing, occur ``sizes`` times):
    ``[values[keys == k] for k in np.unique(keys)]`` in one stable sort instead of a scan per
    key (a tree of a million nodes has 100,000 leaves)."""
    ordered = values[np.argsort(keys, kind="stable")]
    ends = np.cumsum(sizes).tolist()
    return [ordered[a:b] for a, b in zip([0, *ends[:-1]], ends)]


def _members(of: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct values of ``of`` (increasing) and, for each, the positions holding it
    (increasing): ``np.flatnonzero(of == d)`` per value d, in one sort."""
    values, counts = np.unique(of, return_counts=True)
    return values, _groups(np.arange(of.size), of, counts)


class _IdleTree:
    """The part of a switch tree that holds idle nodes: its leaves (``e`` = position among the
    idle leaves, in switch order), each switch's idle children and the idle leaves below it."""

    def __init__(self, topology: Topology, idle_nodes: np.ndarray):
        leaf_q = topology.node_leaf[idle_nodes]
        self.leaves, self.idle = np.unique(leaf_q, return_counts=True)
        #: per idle leaf, its idle nodes in Q order (one sort, not a scan of Q per leaf)
        self.nodes = _groups(np.asarray(idle_nodes), leaf_q, self.idle)
        parent = topology.switch_parent
        under: dict[int, list[int]] = {int(s): [e] for e, s in enumerate(self.leaves.tolist())}
        children: dict[int, list[int]] = {}
        # every idle leaf's path up, one level at a time for all leaves: (ancestor, leaf e, the
        # ancestor's child on the path), then grouped by ancestor in order of e
        at, below = self.leaves.astype(np.int64), np.arange(self.leaves.size, dtype=np.int64)
        steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        while at.size:
            up = parent[at]
            keep = up >= 0
            at, below, up = at[keep], below[keep], up[keep].astype(np.int64)
            if up.size:
                steps.append((up, below, at))
            at = up
        if steps:
            above, e, child = (np.concatenate(part) for part in zip(*steps))
            order = np.lexsort((e, above))
            above, e, child = above[order], e[order], child[order]
            cuts = np.flatnonzero(np.diff(above)) + 1
            for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), above.size]):
                kids = child[a:b]
                first = np.ones(kids.size, bool)
                first[1:] = kids[1:] != kids[:-1]
                under[int(above[a])] = e[a:b].tolist()
                children[int(above[a])] = kids[first].tolist()
        #: switch -> positions e of the idle leaves below it (increasing)
        self.under = under
        #: switch -> its children with idle nodes below, in switch order (absent for a leaf)
        self.children = children
        self.leaf_position = {int(s): e for e, s in enumerate(self.leaves)}
        self.switches = sorted(under)  # pre-order: parents before children
        self.depth = topology.switch_depth

    def is_leaf(self, s: int) -> bool:
        return s not in self.children

    def idle_below(self, s: int) -> int:
        return int(self.idle[self.under[s]].sum())


class _Capacity(_IdleTree):
    """Idle nodes of a window grouped by leaf switch, and the count groups above the leaves."""

    def __init__(self, window: Window):
        t = window.topology
        super().__init__(t, window.idle_nodes)
        form = t.count_form
        self.top_level = form.top_level
        # Every node of a leaf lies in the same group of each row: one column per idle leaf.
        first = np.array([nodes[0] for nodes in self.nodes], dtype=np.int64)
        self.topology, self.first, self._domains = t, first, {}
        self.busy_s = window.busy_s  # seconds until each node is expected free (the term)
        leaf_group = form.group_of[:, first]
        #: per row (top row first): [(group id, member leaves e, the group is a leaf itself)]
        self.rows = []
        for r in range(leaf_group.shape[0]):
            groups, members = _members(leaf_group[r])
            self.rows.append(
                [(g, m, g in self.leaf_position) for g, m in zip(groups.tolist(), members)]
            )

    def domains(self, level: int) -> list[tuple[int, np.ndarray]]:
        """The domains of ``level`` that hold idle nodes: (switch, the idle leaves e inside it).
        A leaf's nodes share every domain, so a domain is a union of idle leaves."""
        if level not in self._domains:
            domains, members = _members(level_domains(self.topology, level)[self.first])
            self._domains[level] = list(zip(domains.tolist(), members))
        return self._domains[level]

    def assignment(self, counts) -> list[list[int]]:
        """Concrete node ids for per-job, per-leaf counts (lowest idle ids of each leaf)."""
        taken = np.zeros(len(self.leaves), dtype=np.int64)
        out = []
        for row in counts:
            row = np.asarray(row, dtype=np.int64)
            nodes = []
            for e in np.flatnonzero(row).tolist():  # the leaves the job uses, not every leaf
                c = int(row[e])
                nodes.extend(self.nodes[e][taken[e] : taken[e] + c].tolist())
                taken[e] += c
            out.append(nodes)
        return out


class _Builder:
    """The few model operations both back ends need, so the model is written once."""

    def __init__(self, solver: str, time_limit_s, seed):
        self.kind = solver
        if solver == "cpsat":
            self.cp = _backends.require("ortools.sat.python.cp_model")
            self.model = self.cp.CpModel()
        else:
            self.model = _backends.scip_model(time_limit_s, seed)
        self.time_limit_s, self.seed = time_limit_s, seed

    def bool(self):
        return self.model.new_bool_var("") if self.kind == "cpsat" else self.model.addVar(vtype="B")

    def int(self, lo, hi):
        if self.kind == "cpsat":
            return self.model.new_int_var(lo, hi, "")
        return self.model.addVar(vtype="I", lb=lo, ub=hi)

    def add(self, constraint):
        if self.kind == "cpsat":
            self.model.add(constraint)
        else:
            self.model.addCons(constraint)

    def sum(self, terms):
        """The sum of ``terms`` (variables or weighted variables), built in linear time (Python's
        ``sum`` copies the growing expression at every step: quadratic, minutes on big windows)."""
        terms = list(terms)
        if not terms:
            return 0
        if self.kind == "cpsat":
            return self.cp.LinearExpr.sum(terms)
        return _backends.require("pyscipopt").quicksum(terms)


def _ordered_bits(b: _Builder, cap: int):
    bits = [b.bool() for _ in range(cap)]
    for lo, hi in zip(bits, bits[1:]):
        b.add(hi <= lo)
    return bits


def _signatures(tree: _IdleTree, marks=None) -> dict:
    """A canonical form of each idle subtree (leaf: its idle count; switch: its children's forms,
    sorted; each with ``marks[s]`` when given): two sibling subtrees with the same form are
    interchangeable."""
    sig = {}
    for s in reversed(tree.switches):
        mark = () if marks is None else marks[s]
        if tree.is_leaf(s):
            sig[s] = ("L", int(tree.idle[tree.leaf_position[s]]), *mark)
        else:
            sig[s] = ("S", tuple(sorted(sig[c] for c in tree.children[s])), *mark)
    return sig


def _domain_marks(cap: _Capacity) -> dict:
    """Per switch: its level, whether every node below it is idle, and when the busy ones are
    expected free (the window's ``busy_s``, the largest below it). Sibling subtrees that agree
    on these everywhere also map the domains of every level onto each other, whole idle ones
    onto whole idle ones and each onto one of the same fragmentation price, so swapping them
    keeps every job constraint and term."""
    t = cap.topology
    nodes = np.bincount(t.node_leaf, minlength=t.num_switches)
    idle = np.bincount(t.node_leaf[np.concatenate(cap.nodes)], minlength=t.num_switches)
    free_in = np.zeros(t.num_switches)
    np.maximum.at(free_in, t.node_leaf, cap.busy_s)
    for s in range(t.num_switches - 1, 0, -1):  # children come after their parent
        nodes[t.switch_parent[s]] += nodes[s]
        idle[t.switch_parent[s]] += idle[s]
        free_in[t.switch_parent[s]] = max(free_in[t.switch_parent[s]], free_in[s])
    level = switch_levels(t)
    return {s: (int(level[s]), bool(nodes[s] == idle[s]), float(free_in[s])) for s in cap.switches}


def _break_symmetry(b: _Builder, cap: _Capacity, count_vars, sizes, constrained: bool) -> None:
    """Interchangeable sibling subtrees (the same shape and idle counts below, so the same leaf
    depths; with constraints, the same levels and whole idle switches too) may be taken in any
    order: require the largest job's count to be non-increasing along each class of siblings.
    Permuting siblings at one switch leaves the totals of the subtrees above it unchanged, so
    the rules of all switches hold together."""
    lead = max(range(len(sizes)), key=lambda j: (sizes[j], -j))

    def count(e):
        return b.sum(count_vars[lead][e])

    def total(s):
        if cap.is_leaf(s):
            return count(cap.leaf_position[s])
        return b.sum(count(e) for e in cap.under[s])

    sig = _signatures(cap, _domain_marks(cap) if constrained else None)
    parents = sorted(cap.children, key=lambda s: (-int(cap.depth[s]), s))
    for s in parents:
        classes: dict = {}
        for c in cap.children[s]:
            classes.setdefault(sig[c], []).append(c)
        for members in classes.values():
            for c, d in zip(members, members[1:]):
                b.add(total(c) >= total(d))


def _max_sum_of_squares(capacities, n: int) -> int:
    """Largest sum of squares of n nodes spread over bins of the given capacities: fill the largest
    bins first (that vector majorizes every other feasible one)."""
    total, left = 0, n
    for c in sorted((int(c) for c in capacities), reverse=True):
        take = min(c, left)
        total += take * take
        left -= take
    return total


def _square_terms(bits):
    return [(2 * k + 1, v) for k, v in enumerate(bits)]


def _first_fit(window: Window, started: float, convention: str) -> Result:
    """A one-switch tree: every placement costs the same, so the first idle nodes are optimal.
    Every level has one domain, the whole tree, so the constraints hold for any placement, but
    an exclusive job cannot share the tree with another job."""
    if window.num_jobs > 1 and any(job.exclusive is not None for job in window.jobs):
        return Result.from_assignment(
            window,
            (),
            status=Status.INFEASIBLE,
            method="freeform",
            convention=convention,
            runtime_s=time.perf_counter() - started,
        )
    assignment, at = [], 0
    for n in window.job_sizes:
        assignment.append(window.idle_nodes[at : at + n].tolist())
        at += n
    result = Result.from_assignment(
        window,
        assignment,
        status=Status.OPTIMAL,
        method="freeform",
        convention=convention,
        runtime_s=0.0,
    )
    return Result(
        window,
        result.assignment,
        result.objective,
        Status.OPTIMAL,
        "freeform",
        convention,
        time.perf_counter() - started,
        result.objective,
    )


def _constrain(b: _Builder, window: Window, cap: _Capacity, count_vars, out_of_time):
    """The jobs' constraints and the objective's prefer and fragmentation terms on the per-leaf
    counts (the module's documentation). Returns (objective terms (coefficient, variable), a
    constant, and each added variable with its value from a warm start's counts), or None when
    some ``within`` level has no domain with room for the job; raises
    :class:`~tjap.core.backends.OutOfTime` when ``out_of_time()`` turns true between jobs."""
    tree = window.topology
    terms, constant, values, usage = [], 0.0, [], {}

    def count(j, members):
        return b.sum(v for e in members for v in count_vars[j][e])

    def held(j, members):  # the job's count there, from a warm start's
        return lambda h: int(h[j, members].sum())

    def used(j, level, d, members):
        """A binary that is 1 when job j has a node in domain d of ``level``: at least each of
        its leaves' first count bit (1 when the job has a node there; tighter than one bound
        on the domain's count)."""
        if (j, level, d) not in usage:
            y = usage[(j, level, d)] = b.bool()
            for e in members:
                b.add(count_vars[j][e][0] <= y)
            values.append((y, lambda h, got=held(j, members): int(got(h) > 0)))
        return usage[(j, level, d)]

    weight, frag_level = window.fragmentation
    for j, job in enumerate(window.jobs):
        if out_of_time():
            raise _backends.OutOfTime
        n = job.nodes
        within = [job.within] if job.within is not None else []
        if job.slurm_rule and job.segment is None:
            within.append(slurm_level(tree, n))
        for level in within:  # one domain of the level holds all n nodes
            domains = cap.domains(level)
            if all(cap.idle[members].sum() < n for _, members in domains):
                return None
            for _, members in domains:  # the counts sum to n: one w is 1
                if cap.idle[members].sum() >= n:
                    w = b.bool()
                    b.add(count(j, members) == n * w)
                    values.append((w, lambda h, got=held(j, members), n=n: int(got(h) == n)))
                else:
                    b.add(count(j, members) == 0)
        if job.segment is not None:  # whole segments in every domain of the level
            for _, members in cap.domains(segment_level(window, job)):
                k = b.int(0, min(int(cap.idle[members].sum()), n) // job.segment)
                b.add(count(j, members) == job.segment * k)
                values.append((k, lambda h, got=held(j, members), s=job.segment: got(h) // s))
        if job.exclusive is not None and window.num_jobs > 1:  # the domains it uses are its own
            for d, members in cap.domains(job.exclusive):
                y = used(j, job.exclusive, d, members)
                for k in range(window.num_jobs):
                    if k != j:
                        for e in members:
                            b.add(y + count_vars[k][e][0] <= 1)
        if job.prefer is not None and job.prefer_cost:
            constant -= job.prefer_cost
            terms += [
                (job.prefer_cost, used(j, job.prefer, d, members))
                for d, members in cap.domains(job.prefer)
            ]
        if weight:
            prices = domain_prices(window, job)
            terms += [
                (weight * float(prices[d]), used(j, frag_level, d, members))
                for d, members in cap.domains(frag_level)
                if prices[d] > 0
            ]
    return terms, constant, values


#: Seconds to build the free-form model on one core: per count bit (a binary of a job's count on
#: an idle leaf or group, with its ordering and linking rows; CP-SAT's Python API takes about
#: twice SCIP's time), and per idle leaf and distinct job size (the single-job bound of each
#: size, :func:`_best_single_job`). Measured on windows of 10,000 and 20,000 nodes (20-40 jobs
#: of 2-64 nodes): 2.0-2.6e-5 s per bit with SCIP, 2-4e-5 s per leaf and size.
BUILD_S_PER_BIT = {"scip": 2.6e-5, "cpsat": 5e-5}
BUILD_S_PER_LEAF_SIZE = 3e-5


def freeform_variables(window: Window, cap=None, uppers=None) -> int:
    """The count bits of the free-form model of ``window`` (without the jobs' constraints): per
    job of n nodes, min(idle, n) for each idle leaf and each group above the leaves."""
    cap = _Capacity(window) if cap is None else cap
    if uppers is None:
        uppers = [int(cap.idle[m].sum()) for row in cap.rows for _, m, leaf in row if not leaf]
    upper = np.asarray(uppers, dtype=np.int64)
    return int(
        sum(
            count * int(np.minimum(cap.idle, n).sum() + np.minimum(upper, n).sum())
            for n, count in zip(*np.unique(window.job_sizes, return_counts=True))
        )
    )


def predicted_build_s(window: Window, solver: str = "scip", cap=None, uppers=None) -> float:
    """Predicted seconds to build the free-form model of ``window`` for ``solver`` (see
    :data:`BUILD_S_PER_BIT`): on a tree of 100,000 nodes, about a minute, so a time limit of a
    few seconds stops before the first job's rows are written."""
    cap = _Capacity(window) if cap is None else cap
    return _predicted(window, solver, cap, freeform_variables(window, cap, uppers))


def _predicted(window: Window, solver: str, cap, bits: int) -> float:
    single = len(cap.leaves) * len(set(window.job_sizes)) * BUILD_S_PER_LEAF_SIZE
    return bits * BUILD_S_PER_BIT.get(solver, BUILD_S_PER_BIT["cpsat"]) + single


def _coefficient(value: float, solver: str):
    """An objective coefficient: an int for CP-SAT where it is one (exact), else the float."""
    return int(value) if solver == "cpsat" and float(value).is_integer() else value


def solve_freeform(
    window: Window,
    *,
    convention="paper",
    time_limit_s=None,
    seed=0,
    solver="scip",
    warm_start=None,
    workers=1,
) -> Result:
    """Exact minimum CH cost with no contiguity rule, on any switch tree.

    The jobs' constraints hold and the objective has their ``prefer`` and fragmentation terms
    (the module's documentation): the result is the least objective of every placement that
    keeps them, a lower bound of every constrained SCAS optimum (INFEASIBLE when none exists).

    ``warm_start``: a Result (or assignment) of the same window that keeps its constraints, used
    as a solver hint and kept if the solver stops with a worse solution, so the returned cost
    never exceeds it.
    """
    if solver not in SOLVERS:
        raise InvalidInputError(
            f"freeform solver must be one of {', '.join(SOLVERS)}, got {solver!r}"
        )
    code = convention_code(convention)
    started = time.perf_counter()
    # the solver's package first, whatever follows: so that the start-up solve of tjap solve
    # imports it (a signal inside a Cython module's import can be lost)
    _backends.require(SOLVER_PACKAGES[solver])
    if warm_start is not None:
        warm_start = checked_assignment(window, warm_start, "warm_start")
        broken = violations(window, warm_start) if window.constrained else []
        if broken:
            raise InvalidInputError(
                f"warm_start breaks the jobs' constraints ({broken[0]}); "
                "give a placement that keeps them, or no warm start"
            )
    cap = _Capacity(window)
    if cap.top_level == 1:
        return _first_fit(window, started, convention)
    L = cap.top_level

    def out_of_time() -> bool:
        return _seconds_left(started, time_limit_s) == 0

    sizes = window.job_sizes
    uppers = [
        (members, int(cap.idle[members].sum()))
        for row in cap.rows
        for _, members, is_leaf in row
        if not is_leaf
    ]
    left = _seconds_left(started, time_limit_s)
    if left is not None:  # a model that cannot be built in time is not started
        bits = freeform_variables(window, cap, [idle for _, idle in uppers])
        predicted = _predicted(window, solver, cap, bits)
        if predicted > BUILD_MARGIN * left:
            why = (
                f"time limit: building the model is predicted to take {predicted:.3g} s "
                f"({bits:,} count bits), more than the {left:.3g} s left"
            )
            return _stopped_building(
                window, warm_start, cap, started, convention, seed, solver, why
            )
    b = _Builder(solver, time_limit_s, seed)
    best_squares: dict[int, int] = {}
    count_vars, upper_vars, squares = [], [], []
    for n in sizes:
        leaf_bits = [_ordered_bits(b, min(int(c), n)) for c in cap.idle]
        u = [b.sum(bits) for bits in leaf_bits]
        b.add(b.sum(u) == n)
        terms = [t for bits in leaf_bits for t in _square_terms(bits)]
        group_bits = []
        for members, idle in uppers:
            bits = _ordered_bits(b, min(idle, n))
            upper_vars.append((len(count_vars), members, bits))
            b.add(
                b.sum(bits)
                == b.sum(leaf_bits[e][k] for e in members for k in range(len(leaf_bits[e])))
            )
            terms += _square_terms(bits)
            group_bits.append(bits)
        # A single job can do no better than filling the fullest groups of a row first, which
        # caps its sums of squares; these cuts close most of the LP's gap.
        upper = iter(group_bits)
        row_bits = [
            [leaf_bits[cap.leaf_position[g]] if is_leaf else None for g, _, is_leaf in row]
            for row in cap.rows
        ]
        for r, row in enumerate(row_bits):  # upper groups were made top row first
            row_bits[r] = [bits if bits is not None else next(upper) for bits in row]
        for row, bits_of in zip(reversed(cap.rows), reversed(row_bits)):
            row_terms = [t for bits in bits_of for t in _square_terms(bits)]
            capacities = [int(cap.idle[members].sum()) for _, members, _ in row]
            b.add(b.sum(c * v for c, v in row_terms) <= _max_sum_of_squares(capacities, n))
        if n not in best_squares:
            best_squares[n] = _best_single_job(window.topology, window.idle_nodes, n)[1]
        b.add(b.sum(c * v for c, v in terms) <= best_squares[n])
        count_vars.append(leaf_bits)
        squares.append(terms)
        if out_of_time():  # a huge window: building alone is over the limit
            return _stopped_building(window, warm_start, cap, started, convention, seed, solver)
    for e, idle in enumerate(cap.idle):
        b.add(
            b.sum(
                count_vars[j][e][k] for j in range(len(sizes)) for k in range(len(count_vars[j][e]))
            )
            <= int(idle)
        )
        if e % 16 == 15 and out_of_time():
            return _stopped_building(window, warm_start, cap, started, convention, seed, solver)
    extra, extra_constant, extra_values = [], 0.0, []
    if window.constrained:
        try:
            built = _constrain(b, window, cap, count_vars, out_of_time)
        except _backends.OutOfTime:
            return _stopped_building(window, warm_start, cap, started, convention, seed, solver)
        if built is None:  # a job that no domain of its level holds
            return Result.from_assignment(
                window,
                (),
                status=Status.INFEASIBLE,
                method="freeform",
                convention=convention,
                runtime_s=time.perf_counter() - started,
                seed=seed,
                info={"solver": solver},
            )
        extra, extra_constant, extra_values = built
    _break_symmetry(b, cap, count_vars, sizes, window.constrained)
    if out_of_time():
        return _stopped_building(window, warm_start, cap, started, convention, seed, solver)

    # Objective (tree_cost's count form, top level L; L = 3 on the paper's fat-tree).
    #   paper:     sum_j c (2L n^2 - 2n)/n - (2c/n) S_j
    #   published: sum_j cost_j, cost_j >= 1, n cost_j >= c ((2L - 1) n^2 - n)/2 - c S_j - n + 1
    if code == 0:
        constant = sum(HOP_UNIT_COST * (2.0 * L * n * n - 2.0 * n) / n for n in sizes)
        scale = math.lcm(*sizes) if solver == "cpsat" else 1
        weights = [
            2 * HOP_UNIT_COST * scale // n if solver == "cpsat" else 2.0 * HOP_UNIT_COST / n
            for n in sizes
        ]
        if (
            solver == "cpsat"
            and max(weights) * 80 * (L - 1) * len(sizes) * window.num_idle >= 2**62
        ):
            raise InvalidInputError(
                "job sizes too diverse for an exact CP-SAT objective; use solver='scip'"
            )
        objective = b.sum(
            [-w * c * v for w, terms in zip(weights, squares) for c, v in terms]
            + [_coefficient(p * scale, solver) * v for p, v in extra]
        )
    else:
        constant, scale = 0.0, 1
        job_costs = []
        for n, terms in zip(sizes, squares):
            cost = b.int(1, HOP_UNIT_COST * (2 * L - 1) * n * n)
            b.add(
                n * cost
                >= HOP_UNIT_COST * ((2 * L - 1) * n * n - n) // 2
                - HOP_UNIT_COST * b.sum(c * v for c, v in terms)
                - n
                + 1
            )
            job_costs.append(cost)
        objective = b.sum(job_costs + [_coefficient(p, solver) * v for p, v in extra])
    constant += extra_constant  # prefer: the first domain is free
    if out_of_time():
        return _stopped_building(window, warm_start, cap, started, convention, seed, solver)

    hint = None if warm_start is None else _counts(window, cap, warm_start)
    if solver == "cpsat":
        b.model.minimize(objective)
        if hint is not None:
            for j, row in enumerate(hint):
                for e, c in enumerate(row):
                    for k, v in enumerate(count_vars[j][e]):
                        b.model.add_hint(v, k < c)
            for v, value in extra_values:
                b.model.add_hint(v, value(hint))
        cp_solver = _backends.cpsat_solver(_seconds_left(started, time_limit_s), seed, workers)
        status, found = _backends.cpsat_solve(cp_solver, b.model)
        value = cp_solver.boolean_value
        bound = cp_solver.best_objective_bound / scale + constant if found else None
    else:
        b.model.setObjective(objective, "minimize")
        if hint is not None:
            _scip_start(
                b.model,
                hint,
                count_vars,
                upper_vars,
                job_costs if code == 1 else None,
                L,
                extra_values,
            )
        # the limit covers building the model too
        _backends.scip_optimize(b.model, _seconds_left(started, time_limit_s))
        status = _backends.scip_status(b.model)
        found = b.model.getNSols() > 0 and status is not Status.INFEASIBLE
        sol = b.model.getBestSol() if found else None
        value = lambda v: b.model.getSolVal(sol, v) > 0.5
        dual = _backends.scip_dual_bound(b.model) if found else None
        bound = None if dual is None else dual + constant
    counts = None
    if found:
        counts = [[sum(value(v) for v in bits) for bits in row] for row in count_vars]
    if solver == "scip":
        del sol, value, count_vars, upper_vars, squares, objective, extra, extra_values
        _backends.scip_free(b.model)  # within the limit, not after the return
    result = Result.from_assignment(
        window,
        cap.assignment(counts) if counts else (),
        status=status,
        method="freeform",
        convention=convention,
        runtime_s=time.perf_counter() - started,
        bound=bound,
        seed=seed,
        info={"solver": solver},
    )
    if hint is not None:
        warm = Result.from_assignment(
            window,
            cap.assignment(hint),
            status=Status.FEASIBLE,
            method="freeform",
            convention=convention,
            runtime_s=0.0,
        )
        if not result.has_solution or warm.objective < result.objective - 1e-9:
            result = Result(
                window,
                warm.assignment,
                warm.objective,
                Status.TIME_LIMIT if status is Status.TIME_LIMIT else Status.FEASIBLE,
                "freeform",
                convention,
                time.perf_counter() - started,
                bound,
                seed,
                info={"solver": solver, "kept_warm_start": True},
            )
    if status is Status.TIME_LIMIT:
        result = _no_worse_than_seq(result, started, convention, seed, cap)
    return result


def _no_worse_than_seq(result: Result, started, convention, seed, cap=None) -> Result:
    """A result stopped by the time limit, replaced by the better of the best-fit greedy and
    Seq when it has no solution or a worse one (``info["fallback"]`` names it); status
    TIME_LIMIT, the bound kept."""
    from tjap.placement.tree.scas import solve_seq

    window = result.window
    rules = [solve_seq(window, convention=convention, seed=seed)]
    if not window.constrained:  # the greedy does not keep constraints
        rules.append(_greedy(window, cap, convention, seed))
    rules = [r for r in rules if r.has_solution]
    info = {**result.info, "stopped": result.info.get("stopped", "time limit")}
    rule = min(rules, key=lambda r: r.objective) if rules else None  # seq first: it wins ties
    if rule is None or (result.has_solution and result.objective <= rule.objective + 1e-9):
        return Result(
            window,
            result.assignment,
            result.objective,
            Status.TIME_LIMIT,
            result.method,
            convention,
            time.perf_counter() - started,
            result.bound,
            seed,
            info=info,
        )
    return Result(
        window,
        rule.assignment,
        rule.objective,
        Status.TIME_LIMIT,
        result.method,
        convention,
        time.perf_counter() - started,
        result.bound,
        seed,
        info={**info, "fallback": rule.method},
    )


def _seconds_left(started: float, time_limit_s) -> float | None:
    """Seconds left of ``time_limit_s`` since ``started`` (0 when spent; None: no limit)."""
    if time_limit_s is None:
        return None
    return max(0.0, float(time_limit_s) - (time.perf_counter() - started))


def _stopped_building(
    window,
    warm_start,
    cap,
    started,
    convention,
    seed,
    solver,
    why: str = "time limit reached while building the model",
) -> Result:
    """The time limit ran out while the model was being built (or before, ``why`` says): the
    better of the warm start (if there is one), Seq and the best-fit greedy, status TIME_LIMIT,
    no bound."""
    info = {"solver": solver, "stopped": why}
    runtime = time.perf_counter() - started
    if warm_start is None:
        empty = Result.from_assignment(
            window,
            (),
            status=Status.TIME_LIMIT,
            method="freeform",
            convention=convention,
            runtime_s=runtime,
            seed=seed,
            info=info,
        )
        return _no_worse_than_seq(empty, started, convention, seed, cap)
    hint = _counts(window, cap, warm_start)
    warm = Result.from_assignment(
        window,
        cap.assignment(hint),
        status=Status.TIME_LIMIT,
        method="freeform",
        convention=convention,
        runtime_s=runtime,
        seed=seed,
        info={**info, "kept_warm_start": True},
    )
    return _no_worse_than_seq(warm, started, convention, seed, cap)


def _scip_start(model, hint, count_vars, upper_vars, job_costs, top_level, extra_values) -> bool:
    """Hand SCIP the warm start as a complete solution, so it prunes with it from the start."""
    sol = model.createSol()
    for v, value in extra_values:
        model.setSolVal(sol, v, float(value(hint)))
    sum_sq = [int((np.asarray(row) ** 2).sum()) for row in hint]
    for j, row in enumerate(hint):
        for e, c in enumerate(row):
            for k, v in enumerate(count_vars[j][e]):
                model.setSolVal(sol, v, float(k < c))
    for j, members, bits in upper_vars:
        total = int(sum(hint[j][e] for e in members))
        sum_sq[j] += total * total
        for k, v in enumerate(bits):
            model.setSolVal(sol, v, float(k < total))
    if job_costs is not None:
        for j, cost in enumerate(job_costs):
            n = int(sum(hint[j]))
            model.setSolVal(sol, cost, cost_from_sum_of_squares(n, top_level, sum_sq[j], 1))
    return model.addSol(sol, free=True)


def _counts(window: Window, cap: _Capacity, assignment) -> np.ndarray:
    node_leaf = window.topology.node_leaf
    counts = np.zeros((len(assignment), len(cap.leaves)), dtype=np.int64)
    for j, nodes in enumerate(assignment):
        for v in nodes:
            counts[j, cap.leaf_position[int(node_leaf[int(v)])]] += 1
    return counts


# -- one job alone ---------------------------------------------------------------------------------
def best_single_job_nodes(topology: Topology, idle_nodes: np.ndarray, size: int) -> list[int]:
    """The cheapest node set of ``size`` nodes among ``idle_nodes`` for one job alone, in both
    conventions, on any switch tree (a :class:`~tjap.placement.tree.fat_tree.FatTree` included).

    Cost falls as S (the sum of squared group counts, :mod:`tjap.placement.tree.tree_cost`) grows, so
    this maximises S exactly by a DP over the tree: under a switch whose children are all leaves,
    fill the fullest leaves first (optimal for a given count); above, a knapsack over the
    children's tables. When the idle leaves sit at several depths, the tables are indexed by the
    count at each depth (the count form's shallow groups depend on them).
    """
    idle_nodes = np.asarray(idle_nodes, dtype=np.int64)
    if not 0 <= size <= idle_nodes.size:
        raise InvalidInputError(f"a job of {size} nodes does not fit {idle_nodes.size} idle nodes")
    if size == 0:
        return []
    return _best_single_job(topology, idle_nodes, int(size))[0]


def _best_single_job(
    topology: Topology, idle_nodes: np.ndarray, size: int
) -> tuple[list[int], int]:
    """(:func:`best_single_job_nodes`, the S of that set)."""
    if topology.num_levels == 1:  # one switch: every set costs the same
        return sorted(idle_nodes[:size].tolist()), 0
    tree = _IdleTree(topology, idle_nodes)
    depths = sorted({int(tree.depth[s]) for s in tree.leaves})
    radix = size + 1  # a state: the count at each leaf depth, packed
    if radix ** len(depths) >= 2**62:
        raise InvalidInputError(
            f"idle leaves at {len(depths)} different depths and a job of {size} nodes: too many "
            "states for the exact single-job DP; give fewer leaf depths or a smaller job"
        )
    unit = {d: radix**i for i, d in enumerate(depths)}
    tables, picks, classes = {}, {}, {}
    root = tree.switches[0]
    for s in reversed(tree.switches):
        own = int(topology.switch_parent[s]) >= 0  # a group of its own (every switch but the top)
        if tree.is_leaf(s):
            e = tree.leaf_position[s]
            nodes = tree.nodes[e].tolist()
            step = unit[int(tree.depth[s])]
            classes[s] = (depths.index(int(tree.depth[s])),)
            tables[s] = {v * step: (v, v * v) for v in range(1, min(len(nodes), size) + 1)}
            picks[s] = lambda state, nodes=nodes, step=step: nodes[: state // step]
            continue
        classes[s] = tuple(sorted({i for c in tree.children[s] for i in classes[c]}))
        if len(classes[s]) > 1:
            dense = _Dense(tree, s, size, tables, picks, classes, radix, len(depths))
            picks[s] = dense.pick  # the top switch comes last: ``dense`` is its table
            if s != root:
                tables[s] = dense.table(own)
        elif all(tree.is_leaf(c) for c in tree.children[s]):
            tables[s], picks[s] = _fill_table(tree, s, size, unit, own)
        else:
            tables[s], picks[s] = _knapsack_table(tree, s, size, tables, picks, own)
    if len(depths) == 1:
        state = size * unit[depths[0]]
        shallow = (topology.num_levels - 1 - depths[0]) * size * size
        return sorted(picks[root](state)), tables[root][state][1] + shallow
    # Leaves at several depths: add the shallow groups R_k (the nodes on leaves of depth < k),
    # which depend on the count at each depth only, and take the best state of ``size`` nodes.
    grid = np.indices(dense.values.shape)
    total = grid.sum(axis=0)
    value = dense.values.copy()
    for k in range(1, topology.num_levels):
        shallow = sum((grid[i] for i, d in enumerate(depths) if d < k), np.zeros_like(total))
        value += shallow * shallow
    value[(dense.values < 0) | (total != size)] = -1
    index = np.unravel_index(int(np.argmax(value)), value.shape)
    state = sum(int(m) * radix**i for i, m in enumerate(index))
    return sorted(picks[root](state)), int(value[index])


class _Dense:
    """Table of a switch with leaves at several depths below it: the largest sum of squares of
    the groups below it (its own not included) for each count per depth, as a dense array (axis
    i: the count at the i-th leaf depth), built by a knapsack over its children."""

    def __init__(self, tree: _IdleTree, s: int, size: int, tables, picks, classes, radix, q):
        self.radix, self.q, self.picks = radix, q, picks
        # children with the most depths first, so the array grows its axes as late as it can
        kids = sorted(
            tree.children[s], key=lambda c: (-len(classes[c]), classes[c], tree.idle_below(c))
        )
        powers = radix ** np.arange(q)
        values = np.zeros((1,) * q, dtype=np.int64)  # only the empty state
        self.merges = []
        for c in kids:
            states = sorted(tables[c].items())
            codes = np.array([code for code, _ in states], dtype=np.int64)
            digits = (codes[:, None] // powers) % radix
            caps = [min(size, a - 1 + b) for a, b in zip(values.shape, digits.max(axis=0))]
            new = np.full([x + 1 for x in caps], -1, dtype=np.int64)
            new[tuple(slice(0, x) for x in values.shape)] = values
            choice = np.zeros(new.shape, dtype=np.int64)
            for (code, (_, gain)), dig in zip(states, digits.tolist()):
                high = [min(a - 1, x - d) for a, x, d in zip(values.shape, caps, dig)]
                if min(high) < 0:
                    continue
                src = values[tuple(slice(0, h + 1) for h in high)]
                at = tuple(slice(d, d + h + 1) for d, h in zip(dig, high))
                candidate = np.where(src >= 0, src + gain, -1)
                target, chosen = new[at], choice[at]
                better = candidate > target
                target[better] = candidate[better]
                chosen[better] = code
            new[np.indices(new.shape).sum(axis=0) > size] = -1
            values = new
            self.merges.append((c, choice))
        self.values = values

    def table(self, own: bool) -> dict:
        """The switch's table for its parent: state -> (count, value), its own group added."""
        index = np.nonzero(self.values >= 0)
        counts = sum(index)
        codes = sum(i * self.radix**k for k, i in enumerate(index))
        values = self.values[index] + (counts * counts if own else 0)
        return {
            code: (count, value)
            for code, count, value in zip(codes.tolist(), counts.tolist(), values.tolist())
            if count
        }

    def pick(self, state: int) -> list[int]:
        digits = [(state // self.radix**i) % self.radix for i in range(self.q)]
        nodes = []
        for c, choice in reversed(self.merges):
            code = int(choice[tuple(digits)])
            if code:
                nodes.extend(self.picks[c](code))
                digits = [d - (code // self.radix**i) % self.radix for i, d in enumerate(digits)]
        return nodes


def _fill_table(tree: _IdleTree, s: int, size: int, unit, own: bool):
    """Table of a switch whose idle children are all leaves (one depth): for each count v, the
    largest sum of squared per-leaf counts (plus v^2, the switch's own group) and its nodes.

    Fill the fullest leaves whole (the longest prefix, fullest first, that v holds) and put the
    remainder in the tightest other leaf that holds it (best fit). The filled vector majorizes
    every other way to place v nodes there, so its sum of squares is the largest.
    """
    leaves = tree.children[s]
    nodes = [tree.nodes[tree.leaf_position[c]].tolist() for c in leaves]
    counts = [len(n) for n in nodes]
    order = sorted(range(len(leaves)), key=lambda k: -counts[k])  # fullest first, stable
    whole, squares, taken = [0], [0], [[]]
    for k in order:
        whole.append(whole[-1] + counts[k])
        squares.append(squares[-1] + counts[k] ** 2)
        taken.append(taken[-1] + nodes[k])
    rest = [sorted((counts[k], k) for k in order[f:]) for f in range(len(order))]
    step = unit[int(tree.depth[leaves[0]])]
    table, fills = {}, {}
    f = 0
    for v in range(1, min(whole[-1], size) + 1):
        while f < len(order) and whole[f + 1] <= v:
            f += 1
        left = v - whole[f]
        chosen = taken[f]
        if left:
            k = rest[f][bisect.bisect_left(rest[f], (left, -1))][1]
            chosen = chosen + nodes[k][:left]
        table[v * step] = (v, squares[f] + left * left + (v * v if own else 0))
        fills[v * step] = chosen
    return table, fills.__getitem__


def _knapsack_table(tree: _IdleTree, s: int, size: int, tables, picks, own: bool):
    """Table of a switch from its children's: a knapsack over them, the children with the fewest
    idle nodes first (ties then go to the tightest child)."""
    kids = sorted(tree.children[s], key=tree.idle_below)  # stable: switch order on ties
    best = {0: (0, 0)}
    choices = []
    for c in kids:
        child = sorted(tables[c].items())
        new = dict(best)
        choice = {}
        for state in sorted(best):
            used, value = best[state]
            for cstate, (count, gain) in child:
                if used + count > size:
                    continue
                key = state + cstate
                if key not in new or value + gain > new[key][1]:
                    new[key] = (used + count, value + gain)
                    choice[key] = cstate
        best = new
        choices.append(choice)
    del best[0]
    table = {
        state: (count, value + (count * count if own else 0))
        for state, (count, value) in best.items()
    }

    def pick(state):
        nodes = []
        for c, choice in zip(reversed(kids), reversed(choices)):
            cstate = choice.get(state, 0)
            if cstate:
                nodes.extend(picks[c](cstate))
                state -= cstate
        return nodes

    return table, pick


# -- greedy ----------------------------------------------------------------------------------------
def solve_freeform_greedy(
    window: Window, *, convention="paper", time_limit_s=None, seed=0
) -> Result:
    """Best-fit greedy: largest job first, into the tightest leaf switch that holds it, else the
    tightest switch one level up (leaf switches have height 1, a switch one more than its tallest
    child), and so on up to the top; inside the chosen switch, children with the most free nodes
    first. On the paper's fat-tree: the tightest edge switch, else the tightest pod, else the pods
    with the most idle nodes."""
    refuse_constraints(window, "freeform-greedy")
    return _greedy(window, None, convention, seed)


def _greedy(window: Window, cap, convention: str, seed: int) -> Result:
    """:func:`solve_freeform_greedy`, on the window's :class:`_Capacity` when one is given."""
    started = time.perf_counter()
    cap = _Capacity(window) if cap is None else cap
    free = cap.idle.astype(np.int64).copy()
    counts = np.zeros((window.num_jobs, len(free)), dtype=np.int64)
    height = {}
    for s in reversed(cap.switches):
        height[s] = 1 if cap.is_leaf(s) else 1 + max(height[c] for c in cap.children[s])
    by_height: dict[int, list[int]] = {}
    for s in cap.switches:
        by_height.setdefault(height[s], []).append(s)

    # The switches of one height are disjoint subtrees: each idle leaf lies under at most one of
    # them, so a height's free counts are one bincount over the leaves (not a sum per switch).
    owner = {}
    for h, switches in by_height.items():
        of = np.full(len(free), -1, dtype=np.int64)
        for i, s in enumerate(switches):
            of[cap.under[s]] = i
        below = of >= 0
        owner[h] = (np.flatnonzero(below), of[below], len(switches))

    def free_below(s):
        return int(free[cap.under[s]].sum())

    def room_at(h):
        leaves, of, count = owner[h]
        return np.bincount(of, weights=free[leaves], minlength=count).astype(np.int64)

    def fill(j, s, need):
        if cap.is_leaf(s):
            e = cap.leaf_position[s]
            counts[j, e] += need
            free[e] -= need
            return
        kids = cap.children[s]
        room = [free_below(c) for c in kids]
        for k in np.argsort(-np.array(room), kind="stable"):
            take = min(need, room[k])
            if take:
                fill(j, kids[k], take)
                need -= take
            if need == 0:
                break

    order = sorted(range(window.num_jobs), key=lambda j: (-window.job_sizes[j], j))
    for j in order:
        need = window.job_sizes[j]
        for h in sorted(by_height):
            room = room_at(h)
            fits = np.flatnonzero(room >= need)
            if fits.size:
                fill(j, by_height[h][fits[np.argmin(room[fits])]], need)
                break
    return Result.from_assignment(
        window,
        cap.assignment(counts),
        status=Status.FEASIBLE,
        method="freeform-greedy",
        convention=convention,
        runtime_s=time.perf_counter() - started,
        seed=seed,
    )
