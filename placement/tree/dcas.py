"""The dynamic contiguity assignment strategy (DCAS): solutions, decoding, and feasibility.

Under DCAS jobs are placed one after another; each takes ``n_j`` consecutive nodes (wrapping to
the head) of the idle sequence *as updated by the jobs placed before it*. A solution is therefore an
``order`` of the jobs and, for each step k, a ``start`` position in the sequence of that step
(0 <= start < nodes still idle). Every SCAS solution is a DCAS solution (:func:`encode` finds its
order and starts), so the DCAS optimum is never above the SCAS optimum, and never below the
free-form optimum.

**With job constraints** (:mod:`tjap.placement.tree.jobs`) a step's sequence F is the idle
nodes that no earlier job took *or holds*, and the job's start must be one its constraints
allow there:

- a plain job takes the run of ``n_j`` nodes of F from its start; ``within`` and
  ``slurm_rule`` allow the start only when the run lies in one domain of the level;
- a segmented job takes the segmented walk of :mod:`tjap.placement.tree.arcs` applied to F:
  from its start, each domain of its segment level met along F gives it as many whole
  segments as its nodes in F from there allow (or what it still needs), the rest of the domain
  skipped (skipped nodes stay free for later jobs); the start must begin a segment;
- an ``exclusive`` job is allowed only where the domains of its level that it touches hold no
  node of an earlier job, and it then holds every idle node of those domains (they leave F
  for the later jobs), so no job, earlier or later, has a node in them;
- ``prefer`` and the fragmentation term price the job's nodes as
  :func:`~tjap.placement.tree.arcs.job_penalty` does, so a solution's cost is
  :func:`~tjap.placement.tree.result.objective_of` of its assignment.

Every SCAS solution under the constraints (every placement of the exact methods and of the
constrained Seq) is such a solution too: placed in the order of its runs along Q, each job
finds its run (or walk) unchanged in F. The kernels are in
:mod:`tjap.placement.tree._dcas_constraints`; :class:`Rules` gives them the window's rules.
"""

from __future__ import annotations

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.placement.tree import _dcas_constraints, _dcas_kernels
from tjap.placement.tree.arcs import _within_levels, segment_level
from tjap.placement.tree.fragmentation import position_prices
from tjap.placement.tree.jobs import level_domains, top_level
from tjap.placement.tree.window import Window


class Arrays:
    """A window flattened into the arrays the kernels take.

    Attributes
    ----------
    group_q : numpy.ndarray
        int64, rows x idle nodes: the count-form group of each Q position in each row
        (:class:`tjap.placement.tree.tree_cost.CountForm`), the same on every tree.
    shallow : numpy.ndarray or None
        int64, one per row: the id of the row's shallow group (nodes whose switch lies above the
        row), the only group that may be split along Q; None for a count form of two rows where
        no idle node is shallow (always on a fat-tree), which the kernels walk in one pass.
    top_level, num_groups : int
        The count form's ``L`` and its number of group ids (scratch size of the greedy repair).
    switch_q, pod_q, num_switches, num_pods
        On a :class:`~tjap.placement.tree.fat_tree.FatTree` only (None on a general tree): the edge
        switch and pod of each Q position and their numbers, the features of the learned repair.
    sizes, offsets, num_idle
        Job sizes, each job's offset in a concatenated positions array, idle nodes.
    """

    def __init__(self, window: Window):
        t = window.topology
        form = t.count_form
        rows = form.group_of.shape[0]
        self.group_q = np.ascontiguousarray(form.group_of[:, window.idle_nodes])
        shallow = np.arange(form.num_groups - rows, form.num_groups, dtype=np.int64)
        runs, any_shallow = _dcas_kernels.check_groups(self.group_q, shallow, form.num_groups)
        if not runs:
            raise RuntimeError(
                "the count form's switch groups are not runs of the idle "
                "sequence; the DCAS kernels need nodes numbered depth first"
            )
        # None for two rows without a shallow node in Q (every fat-tree): the kernels' one-walk form
        self.shallow = None if rows == 2 and not any_shallow else shallow
        self.top_level = int(form.top_level)
        self.num_groups = int(form.num_groups)
        if window.is_fat_tree:
            self.switch_q = np.ascontiguousarray(t.switch_of[window.idle_nodes])
            self.pod_q = np.ascontiguousarray(t.pod_of[window.idle_nodes])
            self.num_switches = t.num_edge_switches
            self.num_pods = t.num_pods
        else:
            self.switch_q = self.pod_q = self.num_switches = self.num_pods = None
        self.sizes = np.array(window.job_sizes, dtype=np.int64)
        self.offsets = _offsets(self.sizes)
        self.num_idle = window.num_idle

    @property
    def tree(self) -> tuple:
        """The kernels' tree arguments: (group_q, shallow, top_level, num_groups)."""
        return self.group_q, self.shallow, self.top_level, self.num_groups


class Rules:
    """A window's job constraints as the arrays of the constrained DCAS kernels
    (:mod:`tjap.placement.tree._dcas_constraints`); :meth:`of` builds them once per window.

    Attributes
    ----------
    arrays : Arrays
        The window's tree arrays (the cost of a job's nodes).
    args : tuple
        ``(domains, prices, jobs, prefer_cost, frag_weight, frag_level)``: the domain of every Q
        position at every level (row ``level - 1``,
        :func:`~tjap.placement.tree.jobs.level_domains`),
        per job the fragmentation price of each position's domain of the fragmentation level
        (:func:`~tjap.placement.tree.fragmentation.position_prices`), per job its
        segment, segment level, ``within`` level (with ``slurm_rule``: the lower of the two;
        levels nest), ``prefer`` level and ``exclusive`` level (0: none), the prefer prices, and
        the fragmentation weight and level.
    """

    def __init__(self, window: Window):
        tree = window.topology
        self.arrays = Arrays(window)
        domains = np.stack(
            [
                level_domains(tree, level)[window.idle_nodes]
                for level in range(1, top_level(tree) + 1)
            ]
        ).astype(np.int64)
        weight, frag_level = window.fragmentation
        prices = np.zeros((window.num_jobs, window.num_idle))
        if weight:
            for j, job in enumerate(window.jobs):
                prices[j] = position_prices(window, job)
        jobs = np.zeros((window.num_jobs, 5), np.int64)
        prefer_cost = np.zeros(window.num_jobs)
        for j, job in enumerate(window.jobs):
            within = _within_levels(window, job)
            jobs[j] = (
                job.segment or 0,
                segment_level(window, job) if job.segment else 0,
                min(within) if within else 0,
                job.prefer or 0,
                job.exclusive or 0,
            )
            prefer_cost[j] = job.prefer_cost if job.prefer is not None else 0.0
        self.args = (
            np.ascontiguousarray(domains),
            prices,
            jobs,
            prefer_cost,
            float(weight),
            int(frag_level),
        )

    @classmethod
    def of(cls, window: Window) -> "Rules":
        """The rules of ``window`` (cached with the window)."""
        cache = window._block_cost_cache
        if "dcas-rules" not in cache:
            cache["dcas-rules"] = cls(window)
        return cache["dcas-rules"]

    @property
    def kernel_args(self) -> tuple:
        """(rules, group_q, shallow, top_level): the leading arguments of the kernels."""
        a = self.arrays
        return self.args, a.group_q, a.shallow, a.top_level

    def place(self, order, starts, convention: int = 0):
        """(Q positions, price per job) of the steps (order, starts), or None when a step's
        start is not allowed."""
        a = self.arrays
        positions = np.empty(int(a.sizes.sum()), np.int64)
        job_cost = np.zeros(a.sizes.size)
        rules, group_q, shallow, top = self.kernel_args
        if not _dcas_constraints.decode(
            rules,
            group_q,
            shallow,
            top,
            convention,
            a.sizes,
            a.offsets,
            order,
            starts,
            positions,
            job_cost,
        ):
            return None
        return positions, job_cost


def _offsets(sizes: np.ndarray) -> np.ndarray:
    """Each job's offset in the concatenation of the jobs' positions."""
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


def _as_steps(window: Window, order, starts) -> tuple[np.ndarray, np.ndarray]:
    order = np.asarray(order, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    if sorted(order.tolist()) != list(range(window.num_jobs)):
        raise InvalidInputError(
            f"order must be a permutation of 0..{window.num_jobs - 1}, got {order.tolist()}"
        )
    if starts.shape != order.shape:
        raise InvalidInputError(
            f"starts needs one entry per job ({window.num_jobs}), got {starts.size}"
        )
    return order, starts


def decode(window: Window, order, starts) -> list[list[int]]:
    """Node ids of each job (in window order) for the DCAS solution (order, starts); on a window
    with constraints, under them (module docstring)."""
    order, starts = _as_steps(window, order, starts)
    if window.constrained:
        rules = Rules.of(window)
        placed = rules.place(order, starts)
        if placed is None:
            raise InvalidInputError(
                "a start is not allowed at its step: it lies outside the free sequence of its "
                "step, or the job's constraints refuse it there"
            )
        nodes = window.idle_nodes[placed[0]]
        return [nodes[o : o + n].tolist() for o, n in zip(rules.arrays.offsets, window.job_sizes)]
    sizes = np.array(window.job_sizes, dtype=np.int64)
    offsets = _offsets(sizes)
    positions = np.empty(int(sizes.sum()), dtype=np.int64)
    taken = np.empty(_dcas_kernels.taken_words(window.num_idle), dtype=np.uint64)
    if (
        _dcas_kernels.decode(
            window.num_idle, sizes, offsets, order, starts, len(order), positions, taken
        )
        < 0
    ):
        raise InvalidInputError(
            "a start lies outside the idle sequence of its step: step k allows 0 <= start < "
            "idle nodes left after the previous steps"
        )
    nodes = window.idle_nodes[positions]
    return [nodes[o : o + n].tolist() for o, n in zip(offsets, sizes)]


def encode(window: Window, assignment, order=None) -> tuple[list[int], list[int]]:
    """(order, starts) whose decoding gives ``assignment``, or InvalidInputError if none exists.

    With ``order`` given, only that order is tried. Otherwise jobs are taken greedily, each time the
    first job (in window order) that is a contiguous block of the current sequence: removing nodes
    outside a job's set never breaks its contiguity, so this finds an order whenever one exists
    (and keeps window order for SCAS solutions). On a window with constraints the same greedy
    search runs under them (each job at the lowest start that gives exactly its nodes):
    removing other jobs' nodes (or the idle nodes of their exclusive domains, which a feasible
    assignment leaves to them) never takes a job's walk away from its nodes either.
    """
    if window.constrained:
        return _encode_constrained(window, assignment, order)
    position = {int(v): i for i, v in enumerate(window.idle_nodes)}
    sets = []
    for j, nodes in enumerate(assignment):
        try:
            sets.append({position[int(v)] for v in nodes})
        except KeyError as exc:
            raise InvalidInputError(
                f"job {j} holds node {exc.args[0]}, which is not idle"
            ) from None
    if order is not None:
        starts = [
            _start_in(sets[j], alive) for j, alive in _sequences(window.num_idle, sets, order)
        ]
        if None not in starts:
            return list(order), starts
    else:
        alive = list(range(window.num_idle))
        left = list(range(len(sets)))
        order, starts = [], []
        while left:
            for j in left:
                start = _start_in(sets[j], alive)
                if start is not None:
                    break
            else:
                break
            order.append(j)
            starts.append(start)
            left.remove(j)
            alive = [p for p in alive if p not in sets[j]]
        if not left:
            return order, starts
    raise InvalidInputError(
        "the assignment is not a DCAS solution: no job order makes every job a "
        "contiguous block of the idle sequence of its step"
    )


def _encode_constrained(window: Window, assignment, order=None):
    rules = Rules.of(window)
    position = {int(v): i for i, v in enumerate(window.idle_nodes)}
    targets = []
    for j, nodes in enumerate(assignment):
        target = np.zeros(window.num_idle, bool)
        try:
            target[[position[int(v)] for v in nodes]] = True
        except KeyError as exc:
            raise InvalidInputError(
                f"job {j} holds node {exc.args[0]}, which is not idle"
            ) from None
        targets.append(target)
    if len(targets) != window.num_jobs or any(
        t.sum() != n for t, n in zip(targets, window.job_sizes)
    ):
        raise InvalidInputError(
            f"the assignment needs {window.num_jobs} lists of distinct idle "
            f"nodes of the jobs' sizes {list(window.job_sizes)}"
        )
    args, group_q, shallow, top = rules.kernel_args
    state = np.zeros(window.num_idle, np.int8)
    left = list(range(window.num_jobs)) if order is None else [int(j) for j in order]
    steps, starts = [], []
    while left:
        for j in left if order is None else left[:1]:
            start = _dcas_constraints.find_start(
                args, group_q, shallow, top, j, window.job_sizes[j], state, targets[j]
            )
            if start >= 0:
                break
        else:
            break
        steps.append(j)
        starts.append(int(start))
        left.remove(j)
    if left:
        raise InvalidInputError(
            "the assignment is not a DCAS solution under the jobs' "
            "constraints: no job order gives every job its nodes from an "
            "allowed start of the free sequence of its step"
        )
    return steps, starts


def _sequences(num_idle: int, sets: list[set], order):
    alive = list(range(num_idle))
    for j in order:
        yield j, alive
        alive = [p for p in alive if p not in sets[j]]


def _start_in(held: set, alive: list[int]) -> int | None:
    """Index in ``alive`` where the cyclic block ``held`` starts, or None if it is not one block."""
    length = len(alive)
    index = [i for i, p in enumerate(alive) if p in held]
    if len(index) != len(held):
        return None
    if len(held) == length:
        return 0
    firsts = [i for i in index if alive[(i - 1) % length] not in held]
    return firsts[0] if len(firsts) == 1 else None


def is_dcas(window: Window, assignment) -> bool:
    """True if some job order makes ``assignment`` a DCAS solution (under the jobs' constraints
    on a window that has them)."""
    try:
        encode(window, assignment)
    except InvalidInputError:
        return False
    return True
