"""The dynamic contiguity assignment strategy (DCAS): solutions, decoding, and feasibility.

Under DCAS jobs are placed one after another; each takes ``n_j`` consecutive nodes (wrapping to
the head) of the idle sequence *as updated by the jobs placed before it*. A solution is therefore an
``order`` of the jobs and, for each step k, a ``start`` position in the sequence of that step
(0 <= start < nodes still idle). Every SCAS solution is a DCAS solution (:func:`encode` finds its
order and starts), so the DCAS optimum is never above the SCAS optimum, and never below the
free-form optimum.
"""

from __future__ import annotations

import itertools

import numpy as np

from tjap import _dcas_kernels
from tjap.errors import InvalidInputError
from tjap.window import Window


class Arrays:
    """A window flattened into the arrays the kernels take (switch and pod of each Q position)."""

    def __init__(self, window: Window):
        t = window.topology
        self.switch_q = np.ascontiguousarray(t.switch_of[window.idle_nodes])
        self.pod_q = np.ascontiguousarray(t.pod_of[window.idle_nodes])
        self.num_switches = t.num_switches
        self.num_pods = t.num_pods
        self.sizes = np.array(window.job_sizes, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.num_idle = window.num_idle


def _as_steps(window: Window, order, starts) -> tuple[np.ndarray, np.ndarray]:
    order = np.asarray(order, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    if sorted(order.tolist()) != list(range(window.num_jobs)):
        raise InvalidInputError(
            f"order must be a permutation of 0..{window.num_jobs - 1}, got {order.tolist()}")
    if starts.shape != order.shape:
        raise InvalidInputError(f"starts needs one entry per job ({window.num_jobs}), got {starts.size}")
    return order, starts


def decode(window: Window, order, starts) -> list[list[int]]:
    """Node ids of each job (in window order) for the DCAS solution (order, starts)."""
    order, starts = _as_steps(window, order, starts)
    a = Arrays(window)
    positions = np.empty(int(a.sizes.sum()), dtype=np.int64)
    alive = np.empty(a.num_idle, dtype=np.int64)
    if _dcas_kernels.decode(a.num_idle, a.sizes, a.offsets, order, starts, len(order), positions,
                            alive) < 0:
        raise InvalidInputError(
            "a start lies outside the idle sequence of its step: step k allows 0 <= start < "
            "idle nodes left after the previous steps")
    nodes = window.idle_nodes[positions]
    return [nodes[o:o + n].tolist() for o, n in zip(a.offsets, a.sizes)]


def encode(window: Window, assignment, order=None) -> tuple[list[int], list[int]]:
    """(order, starts) whose decoding gives ``assignment``, or InvalidInputError if none exists.

    Tries ``order`` if given, else window order, then every other order (up to 8 jobs).
    """
    position = {int(v): i for i, v in enumerate(window.idle_nodes)}
    sets = []
    for j, nodes in enumerate(assignment):
        try:
            sets.append({position[int(v)] for v in nodes})
        except KeyError as exc:
            raise InvalidInputError(f"job {j} holds node {exc.args[0]}, which is not idle") from None
    candidates = [list(order)] if order is not None else []
    candidates.append(list(range(window.num_jobs)))
    if window.num_jobs <= 8:
        candidates += [list(p) for p in itertools.permutations(range(window.num_jobs))]
    for cand in candidates:
        starts = _starts_for(window.num_idle, sets, cand)
        if starts is not None:
            return cand, starts
    raise InvalidInputError("the assignment is not a DCAS solution: no job order makes every job a "
                            "contiguous block of the idle sequence of its step")


def _starts_for(num_idle: int, sets: list[set], order: list[int]) -> list[int] | None:
    alive = list(range(num_idle))
    starts = []
    for j in order:
        held = sets[j]
        length = len(alive)
        index = [i for i, p in enumerate(alive) if p in held]
        if len(index) != len(held):
            return None
        if len(held) == length:
            start = 0
        else:
            firsts = [i for i in index if alive[(i - 1) % length] not in held]
            if len(firsts) != 1:
                return None
            start = firsts[0]
        starts.append(start)
        alive = [p for p in alive if p not in held]
    return starts


def is_dcas(window: Window, assignment) -> bool:
    """True if some job order makes ``assignment`` a DCAS solution."""
    try:
        encode(window, assignment)
    except InvalidInputError:
        return False
    return True
