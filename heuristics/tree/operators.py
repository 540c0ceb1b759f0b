"""Operators of the DCAS search loop: destroy, repair, re-insertion order and acceptance.

Each operator is a small frozen object that validates its parameters and tells the compiled loop
(:mod:`tjap.heuristics.tree._kernels`) which code to run. A learned repair operator (``learned``) implements
the same :class:`Repair` protocol: its kernel argument carries its network's arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tjap.core.errors import InvalidInputError, check_int, check_number
from tjap.heuristics.tree import _kernels as k
from tjap.placement.tree._dcas_kernels import taken_words


@dataclass(frozen=True)
class Repair:
    """How a re-inserted job chooses its start in the current idle sequence."""

    name = "repair"
    code: int = -1
    q: int = 0

    def kernel_argument(self, window, arrays):
        """What the compiled loop takes as ``repair`` for ``window`` (``arrays``: its
        :class:`tjap.placement.tree.dcas.Arrays`); its type selects the operator's kind (see
        :func:`tjap.heuristics.tree._kernels.pick_start`)."""
        return k.repair_argument(self.code)


@dataclass(frozen=True)
class PaperRepair(Repair):
    """The paper's operator: a start drawn uniformly among the first min(q, |Q|) positions."""

    name = "paper"
    code: int = k.REPAIR_PAPER
    q: int = 100

    def __post_init__(self):
        if self.q < 1:
            raise InvalidInputError(f"repair q must be at least 1, got {self.q}")


@dataclass(frozen=True)
class UniformRepair(Repair):
    """A start drawn uniformly over every position of the current sequence."""

    name = "uniform"
    code: int = k.REPAIR_UNIFORM


@dataclass(frozen=True)
class GreedyRepair(Repair):
    """The start of the cheapest block in the current sequence."""

    name = "greedy"
    code: int = k.REPAIR_GREEDY


@dataclass(frozen=True)
class LookaheadRepair(Repair):
    """k candidate starts, then the one whose block plus the jobs still to re-insert, each then
    placed by the greedy repair, costs least (ties: the first candidate).

    The candidates: with ``temperature`` T > 0, k starts drawn by systematic sampling (one draw
    of the loop's generator) from softmax(-cost / T) over every start's block cost (cost units:
    a hop of Eq. (1) is 2000); with T = 0, the k cheapest blocks (k = 1: the greedy repair).
    The defaults (k = 16, T = 1000) measured best of the few tried (benchmarks/RESULTS.md).
    Each move costs several greedy repairs, about 10x the time of a move with the
    greedy repair (40-47 µs against 4 µs per iteration on the paper's windows)."""

    name = "lookahead"
    code: int = k.REPAIR_LOOKAHEAD
    k: int = 16
    temperature: float = 1000.0

    def __post_init__(self):
        if self.code != k.REPAIR_LOOKAHEAD or self.q != Repair.q:
            raise InvalidInputError(
                "LookaheadRepair takes its options by keyword: "
                "LookaheadRepair(k=..., temperature=...)"
            )
        check_int("look-ahead k", self.k, 1)
        check_number("look-ahead temperature", self.temperature, 0, must="a finite number >= 0")

    def kernel_argument(self, window, arrays):
        return (
            self.code,
            int(self.k),
            np.empty(taken_words(arrays.group_q.shape[1]), np.uint64),
            float(self.temperature),
        )


REPAIRS = {
    "paper": PaperRepair,
    "uniform": UniformRepair,
    "greedy": GreedyRepair,
    "lookahead": LookaheadRepair,
}
REINSERT = {"largest-first": k.REINSERT_LARGEST_FIRST, "window-order": k.REINSERT_WINDOW_ORDER}


@dataclass(frozen=True)
class RandomDestroy:
    """Remove 1..max_remove jobs chosen uniformly (n^D = 2 in the paper)."""

    max_remove: int = 2

    def __post_init__(self):
        if self.max_remove < 1:
            raise InvalidInputError(f"max_remove must be at least 1, got {self.max_remove}")


@dataclass(frozen=True)
class Metropolis:
    """Simulated-annealing acceptance with exponential cooling from t_max to t_min.

    The paper's Table I says T_max = 2500; its published code used 25000."""

    t_max: float = 2500.0
    t_min: float = 2.5
    code: int = k.ACCEPT_METROPOLIS

    def __post_init__(self):
        if not 0 < self.t_min <= self.t_max:
            raise InvalidInputError(
                f"temperatures need 0 < t_min <= t_max, got t_min={self.t_min}, t_max={self.t_max}"
            )


@dataclass(frozen=True)
class ImprovingOnly:
    """Accept a move only if it does not worsen the current cost (descent / LNS)."""

    t_max: float = 1.0
    t_min: float = 1.0
    code: int = k.ACCEPT_IMPROVING


def make_repair(repair, q: int = 100) -> Repair:
    """A Repair from a name ("paper", "uniform", "greedy", "lookahead") or an instance. ``q``, the paper
    repair's range, must be a positive integer whichever repair is named."""
    check_int("repair q", q, 1)
    if isinstance(repair, Repair):
        return repair
    if not isinstance(repair, str) or repair not in REPAIRS:
        raise InvalidInputError(
            f"unknown repair operator {repair!r}; choose one of {', '.join(REPAIRS)}"
        )
    return PaperRepair(q=q) if repair == "paper" else REPAIRS[repair]()
