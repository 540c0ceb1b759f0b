"""Operators of the DCAS search loop: destroy, repair, re-insertion order and acceptance.

Each operator is a small frozen object that validates its parameters and tells the compiled loop
(:mod:`heuristics._kernels`) which code to run. A learned repair operator (``learned``) implements
the same :class:`Repair` protocol: its kernel argument carries its network's arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heuristics import _kernels as k
from tjap.errors import InvalidInputError


@dataclass(frozen=True)
class Repair:
    """How a re-inserted job chooses its start in the current idle sequence."""

    name = "repair"
    code: int = -1
    q: int = 0

    def kernel_argument(self, window, arrays):
        """What the compiled loop takes as ``repair`` for ``window`` (``arrays``: its
        :class:`placement.tree.dcas.Arrays`); its type selects the operator's kind (see
        :func:`heuristics._kernels.pick_start`)."""
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


REPAIRS = {"paper": PaperRepair, "uniform": UniformRepair, "greedy": GreedyRepair}
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
                f"temperatures need 0 < t_min <= t_max, got t_min={self.t_min}, t_max={self.t_max}")


@dataclass(frozen=True)
class ImprovingOnly:
    """Accept a move only if it does not worsen the current cost (descent / LNS)."""

    t_max: float = 1.0
    t_min: float = 1.0
    code: int = k.ACCEPT_IMPROVING


def make_repair(repair, q: int = 100) -> Repair:
    """A Repair from a name ("paper", "uniform", "greedy") or an instance. ``q``, the paper
    repair's range, must be an integer of at least 1 whichever repair is named."""
    if isinstance(q, bool) or not isinstance(q, (int, np.integer)) or q < 1:
        raise InvalidInputError(f"repair q must be an integer of at least 1, got {q!r}")
    if isinstance(repair, Repair):
        return repair
    if not isinstance(repair, str) or repair not in REPAIRS:
        raise InvalidInputError(
            f"unknown repair operator {repair!r}; choose one of {', '.join(REPAIRS)}")
    return PaperRepair(q=q) if repair == "paper" else REPAIRS[repair]()
