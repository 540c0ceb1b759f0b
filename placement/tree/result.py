"""The result of solving one window: the assignment, its cost, and how it was found."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.core.result import Record, Status, plain
from tjap.placement.tree.arcs import job_penalty, violations
from tjap.placement.tree.cost import assignment_cost
from tjap.placement.tree.window import Window


@dataclass(frozen=True)
class Result(Record):
    """A window's solution and how it was obtained.

    ``assignment`` holds one tuple of node ids per job, in window order (empty when no solution);
    :meth:`node_names` gives the same nodes by name.
    ``bound`` is a proven lower bound on the method's model, when the method knows one.
    The fields every result shares (:data:`tjap.core.result.COMMON_FIELDS`): ``method`` (the window
    method), ``status`` (OPTIMAL when proven, FEASIBLE, INFEASIBLE or TIME_LIMIT), ``objective``
    (the assignment's hop cost under ``convention``, lower is better; NaN, written as null, when
    there is no solution), ``runtime_s`` and ``seed``.
    """

    window: Window
    assignment: tuple
    objective: float
    status: Status
    method: str
    convention: str
    runtime_s: float
    bound: float | None = None
    seed: int = 0
    iterations: int | None = None
    info: dict = field(default_factory=dict)

    @classmethod
    def from_assignment(
        cls,
        window: Window,
        assignment,
        *,
        status: Status,
        method: str,
        convention: str,
        runtime_s: float,
        **kwargs,
    ) -> "Result":
        """Build a Result whose objective is recomputed from the node sets."""
        assignment = tuple(tuple(int(v) for v in nodes) for nodes in assignment)
        objective = objective_of(window, assignment, convention) if assignment else float("nan")
        return cls(
            window, assignment, objective, Status(status), method, convention, runtime_s, **kwargs
        )

    @property
    def has_solution(self) -> bool:
        return len(self.assignment) == self.window.num_jobs

    @property
    def gap(self) -> float | None:
        """Relative gap between objective and bound, when both are known."""
        if self.bound is None or not self.has_solution:
            return None
        return (self.objective - self.bound) / max(abs(self.objective), 1e-12)

    def node_names(self) -> tuple[tuple[str, ...], ...]:
        """Per job, in window order, the names of its nodes: the switch tree's node names, or the
        node ids as strings on a fat-tree."""
        return tuple(self.window.node_names(nodes) for nodes in self.assignment)

    def is_feasible(self) -> bool:
        """True if each job holds exactly its requested number of distinct idle nodes, no node
        is shared between jobs, and every job's constraints hold
        (:func:`~tjap.placement.tree.arcs.violations`)."""
        if not self.has_solution:
            return False
        idle = set(self.window.idle_nodes.tolist())
        used: set[int] = set()
        for nodes, size in zip(self.assignment, self.window.job_sizes):
            if len(nodes) != size or len(set(nodes)) != size:
                return False
            if not set(nodes) <= idle or used & set(nodes):
                return False
            used |= set(nodes)
        return not (self.window.constrained and violations(self.window, self.assignment))

    def violations(self) -> list[str]:
        """The job constraints the assignment breaks, one line each (empty when none or when
        there is no solution)."""
        return violations(self.window, self.assignment) if self.has_solution else []

    def free_blocks(self, level: int = 1) -> int:
        """Fragmentation: how many whole domains of ``level`` (1: the leaf switches, that is the
        base blocks of a block cluster; 2: the switches or aggregated blocks above them ...) are
        still entirely idle after the window's jobs take their nodes. A domain of a node is its
        ``level``-th switch upward (the root where the path is shorter)."""
        check_int("level", level, 1, must="a positive integer (1: the leaf switches)")
        tree = self.window.topology
        free = np.zeros(tree.num_nodes, bool)
        free[self.window.idle_nodes] = True
        for nodes in self.assignment:
            free[list(nodes)] = False
        domain = tree.node_leaf.astype(np.int64)
        parent = tree.switch_parent
        for _ in range(int(level) - 1):
            domain = np.where(parent[domain] >= 0, parent[domain], domain)
        busy = np.zeros(tree.num_switches, bool)
        busy[domain[~free]] = True
        return int(np.count_nonzero(~busy[np.unique(domain)]))

    def to_dict(self) -> dict:
        """Plain JSON data: no window (it is the input), objective None when there is no solution;
        on a switch tree also ``"nodes"``, the assignment by node name; ``"free_blocks"``, the
        leaf switches (base blocks) left entirely idle (:meth:`free_blocks`)."""
        out = {
            "method": self.method,
            "status": self.status,
            "convention": self.convention,
            "objective": self.objective,
            "bound": self.bound,
            "runtime_s": self.runtime_s,
            "seed": self.seed,
            "iterations": self.iterations,
            "assignment": self.assignment,
            "free_blocks": self.free_blocks() if self.has_solution else None,
        }
        if not self.window.is_fat_tree:
            out["nodes"] = self.node_names()
        out["info"] = self.info
        return plain(out)

    def summary(self) -> dict:
        """The headline figures: method, status, objective, bound, gap, runtime and feasibility."""
        return plain(
            {
                "method": self.method,
                "status": self.status,
                "objective": self.objective,
                "bound": self.bound,
                "gap": self.gap,
                "runtime_s": self.runtime_s,
                "feasible": self.is_feasible(),
            }
        )


def objective_of(window: Window, assignment, convention: str = "paper") -> float:
    """The objective of an assignment of ``window``: its CH cost, plus on a window with
    constraints each job's ``prefer`` and fragmentation terms
    (:func:`~tjap.placement.tree.arcs.job_penalty`)."""
    cost = assignment_cost(window.topology, assignment, convention)
    if window.constrained:
        cost += sum(job_penalty(window, job, nodes) for job, nodes in zip(window.jobs, assignment))
    return cost


def checked_assignment(window: Window, given, what: str) -> tuple:
    """``given`` (a :class:`Result` of ``window``, or an assignment: one list of node ids per
    job, in window order) as a feasible assignment of ``window``; anything else is one
    :class:`~tjap.core.errors.InvalidInputError` naming ``what`` (e.g. ``"warm_start"``) and the fix."""
    if isinstance(given, Result):
        if given.window != window:
            raise InvalidInputError(
                f"{what} is a Result of another window ({given.window.num_jobs} jobs on "
                f"{given.window.num_idle} idle nodes; this one has {window.num_jobs} jobs on "
                f"{window.num_idle}); give a Result of this window"
            )
        if not given.has_solution:
            raise InvalidInputError(
                f"{what} is a Result without a solution (status "
                f"{given.status.value}); give one that has an assignment"
            )
        given = given.assignment
    shape = (
        "a Result of this window or one list of node ids per job "
        f"({window.num_jobs} lists, in window order)"
    )
    if isinstance(given, (str, bytes)) or not hasattr(given, "__len__"):
        raise InvalidInputError(f"{what} must be {shape}, got {type(given).__name__}")
    try:
        assignment = tuple(tuple(int(v) for v in nodes) for nodes in given)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"{what} must be {shape}; its entries are not lists of integer node ids"
        ) from None
    if len(assignment) != window.num_jobs:
        raise InvalidInputError(
            f"{what} has {len(assignment)} node lists, the window "
            f"{window.num_jobs} jobs; give {shape}"
        )
    idle = set(window.idle_nodes.tolist())
    used: set[int] = set()
    for j, (nodes, size) in enumerate(zip(assignment, window.job_sizes)):
        if len(nodes) != size:
            raise InvalidInputError(f"{what}: job {j} gets {len(nodes)} nodes, it asks for {size}")
        bad = [v for v in nodes if v not in idle or v in used]
        if bad or len(set(nodes)) != size:
            raise InvalidInputError(
                f"{what}: job {j} gets node {bad[0] if bad else nodes[0]}, "
                "which is not idle in this window or taken twice"
            )
        used.update(nodes)
    return assignment
