"""Communication-hop (CH) cost of a job's node set, in the paper's and the published convention.

``"paper"`` (Eq. 1 of seed 002): (1/n_j) * sum over ordered pairs i != k of c*h_ik, with c = 1000 and
h = 2 (same edge switch), 4 (same pod), 6 (different pods). A float.

``"published"`` (the authors' code, which produced the published tables): sum over unordered pairs
of c*h with h = 1 / 3 / 5, integer-divided by n_j, and at least 1 (a one-node job costs 1).

Before rounding, C_paper = 2 * C_published + 1000 * (n_j - 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.placement.tree.fat_tree import FatTree  # noqa: F401 (the examples')
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.tree_cost import (  # noqa: F401 (re-exported)
    CONVENTIONS,
    HOP_UNIT_COST,
    convention_code,
    cost_from_sum_of_squares,
    node_set_cost,
)


def cost_from_counts(switch_counts, pod_counts, convention: str = "paper") -> float:
    """Cost of a node set on a fat-tree from its node count per edge switch and per pod.

    On a fat-tree the cost depends on nothing else, which is what makes the free-form
    (no contiguity) problem an integer model over counts. It is the count form's
    (:mod:`tjap.placement.tree.tree_cost`) with its two rows, edge switches and pods (``L = 3``).
    """
    switch_counts = np.asarray(switch_counts, dtype=np.int64)
    pod_counts = np.asarray(pod_counts, dtype=np.int64)
    n = int(switch_counts.sum())
    if n < 1:
        raise InvalidInputError("a node set needs at least one node")
    sum_sq = int((switch_counts**2).sum()) + int((pod_counts**2).sum())
    return float(cost_from_sum_of_squares(n, 3, sum_sq, convention_code(convention)))


def _job_nodes(topology: Topology, nodes) -> np.ndarray:
    """``nodes`` as distinct node indices of ``topology``: integer ids checked at once, names (or
    names and indices mixed) one by one (:meth:`Topology.node_indices`)."""
    if isinstance(nodes, (str, bytes)) or not hasattr(nodes, "__iter__"):
        raise InvalidInputError("nodes must be a non-empty list of node ids")
    try:
        ids = np.asarray(nodes)
    except ValueError:  # ragged nesting
        raise InvalidInputError("nodes must be a non-empty list of node ids") from None
    if ids.dtype.kind in "USO" and ids.ndim == 1:  # names, or names and indices mixed
        ids = topology.node_indices(list(nodes))
    if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
        raise InvalidInputError("nodes must be a non-empty list of node ids")
    ids = ids.astype(np.int64, copy=False)
    if ids.min() < 0 or ids.max() >= topology.num_nodes:
        raise InvalidInputError(
            f"node ids must lie in 0..{topology.num_nodes - 1}, got {int(ids.min())}..{int(ids.max())}"
        )
    if np.unique(ids).size != ids.size:
        raise InvalidInputError("nodes of one job must be distinct")
    return ids


def job_cost(
    topology, nodes: Sequence[int] | Sequence[str] | np.ndarray, convention: str = "paper"
) -> float:
    """CH cost of one job placed on ``nodes`` (distinct node ids of ``topology``).

    ``topology`` is any :class:`~tjap.placement.tree.topology.Topology` (a :class:`FatTree`
    among them); nodes may be given by index or by name. The cost is the tree's count form's
    (:mod:`tjap.placement.tree.tree_cost`), on a fat-tree the paper's switch-and-pod formula.

    Examples
    --------
    >>> t = FatTree(k=4)
    >>> job_cost(t, [0, 1])                          # two nodes on one edge switch: (2+2)*1000/2
    2000.0
    >>> job_cost(t, [0, 1], convention="published")  # one unordered pair at h=1: 1000 // 2
    500.0
    """
    code = convention_code(convention)
    if not isinstance(topology, Topology):
        raise InvalidInputError(
            f"topology must be a tjap.Topology (or tjap.FatTree), got {type(topology).__name__}"
        )
    ids = _job_nodes(topology, nodes)
    form = topology.count_form
    counts = np.zeros(form.num_groups, np.int64)
    return float(node_set_cost(form.group_of, form.top_level, ids, counts, code))


def assignment_cost(
    topology, assignment: Sequence[Sequence[int]], convention: str = "paper"
) -> float:
    """Total CH cost of a window's assignment (one node list per job)."""
    return float(sum(job_cost(topology, nodes, convention) for nodes in assignment))
