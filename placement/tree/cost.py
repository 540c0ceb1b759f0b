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
from tjap.placement.tree import _kernels
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.tree_cost import CONVENTIONS, convention_code  # noqa: F401 (re-exported)

HOP_UNIT_COST = _kernels.HOP_UNIT_COST


def cost_from_counts(switch_counts, pod_counts, convention: str = "paper") -> float:
    """Cost of a node set from its node count per edge switch and per pod.

    On a fat-tree the cost depends on nothing else, which is what makes the free-form
    (no contiguity) problem an integer model over counts.
    """
    switch_counts = np.asarray(switch_counts, dtype=np.int64)
    pod_counts = np.asarray(pod_counts, dtype=np.int64)
    n = int(switch_counts.sum())
    if n < 1:
        raise InvalidInputError("a node set needs at least one node")
    return float(
        _kernels.cost_from_squares(
            n,
            int((switch_counts**2).sum()),
            int((pod_counts**2).sum()),
            convention_code(convention),
        )
    )


def job_cost(
    topology, nodes: Sequence[int] | Sequence[str] | np.ndarray, convention: str = "paper"
) -> float:
    """CH cost of one job placed on ``nodes`` (distinct node ids of ``topology``).

    ``topology`` is a :class:`FatTree` or a :class:`~tjap.placement.tree.topology.Topology`
    (whose nodes may also be given by name; its cost is its count form's,
    :mod:`tjap.placement.tree.tree_cost`, equal to this one on a fat-tree).

    Examples
    --------
    >>> t = FatTree(k=4)
    >>> job_cost(t, [0, 1])                          # two nodes on one edge switch: (2+2)*1000/2
    2000.0
    >>> job_cost(t, [0, 1], convention="published")  # one unordered pair at h=1: 1000 // 2
    500.0
    """
    code = convention_code(convention)
    if not isinstance(topology, FatTree):
        if not hasattr(topology, "count_form"):
            raise InvalidInputError(
                f"topology must be a tjap.Topology (or tjap.FatTree), got {type(topology).__name__}"
            )
        return topology.count_form.cost(topology.node_indices(nodes), convention)
    ids = np.asarray(nodes, dtype=np.int64)
    if ids.ndim != 1 or ids.size == 0:
        raise InvalidInputError("nodes must be a non-empty list of node ids")
    if ids.min() < 0 or ids.max() >= topology.num_nodes:
        raise InvalidInputError(
            f"node ids must lie in 0..{topology.num_nodes - 1}, got {int(ids.min())}..{int(ids.max())}"
        )
    if np.unique(ids).size != ids.size:
        raise InvalidInputError("nodes of one job must be distinct")
    switch_counts = np.bincount(topology.switch_of[ids])
    pod_counts = np.bincount(topology.pod_of[ids])
    return float(
        _kernels.cost_from_squares(
            ids.size, int((switch_counts**2).sum()), int((pod_counts**2).sum()), code
        )
    )


def assignment_cost(
    topology, assignment: Sequence[Sequence[int]], convention: str = "paper"
) -> float:
    """Total CH cost of a window's assignment (one node list per job)."""
    return float(sum(job_cost(topology, nodes, convention) for nodes in assignment))
