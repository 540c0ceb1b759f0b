"""The dynamic contiguity assignment strategy (DCAS): solutions, decoding, and feasibility.

Under DCAS jobs are placed one after another; each takes ``n_j`` consecutive nodes (wrapping to
the head) of the idle sequence *as updated by the jobs placed before it*. A solution is therefore an
``order`` of the jobs and, for each step k, a ``start`` position in the sequence of that step
(0 <= start < nodes still idle). Every SCAS solution is a DCAS solution (:func:`encode` finds its
order and starts), so the DCAS optimum is never above the SCAS optimum, and never below the
free-form optimum.
"""

from __future__ import annotations

import numpy as np

from tjap.placement.tree import _dcas_kernels
from tjap.errors import InvalidInputError
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
            raise RuntimeError("the count form's switch groups are not runs of the idle "
                               "sequence; the DCAS kernels need nodes numbered depth first")
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


def _offsets(sizes: np.ndarray) -> np.ndarray:
    """Each job's offset in the concatenation of the jobs' positions."""
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


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
    sizes = np.array(window.job_sizes, dtype=np.int64)
    offsets = _offsets(sizes)
    positions = np.empty(int(sizes.sum()), dtype=np.int64)
    taken = np.empty(_dcas_kernels.taken_words(window.num_idle), dtype=np.uint64)
    if _dcas_kernels.decode(window.num_idle, sizes, offsets, order, starts, len(order), positions,
                            taken) < 0:
        raise InvalidInputError(
            "a start lies outside the idle sequence of its step: step k allows 0 <= start < "
            "idle nodes left after the previous steps")
    nodes = window.idle_nodes[positions]
    return [nodes[o:o + n].tolist() for o, n in zip(offsets, sizes)]


def encode(window: Window, assignment, order=None) -> tuple[list[int], list[int]]:
    """(order, starts) whose decoding gives ``assignment``, or InvalidInputError if none exists.

    With ``order`` given, only that order is tried. Otherwise jobs are taken greedily, each time the
    first job (in window order) that is a contiguous block of the current sequence: removing nodes
    outside a job's set never breaks its contiguity, so this finds an order whenever one exists
    (and keeps window order for SCAS solutions).
    """
    position = {int(v): i for i, v in enumerate(window.idle_nodes)}
    sets = []
    for j, nodes in enumerate(assignment):
        try:
            sets.append({position[int(v)] for v in nodes})
        except KeyError as exc:
            raise InvalidInputError(f"job {j} holds node {exc.args[0]}, which is not idle") from None
    if order is not None:
        starts = [_start_in(sets[j], alive) for j, alive in _sequences(window.num_idle, sets, order)]
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
    raise InvalidInputError("the assignment is not a DCAS solution: no job order makes every job a "
                            "contiguous block of the idle sequence of its step")


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
    """True if some job order makes ``assignment`` a DCAS solution."""
    try:
        encode(window, assignment)
    except InvalidInputError:
        return False
    return True
