"""Plain-Python oracles for the cost on any switch tree: the hop count of a pair from its
definition (paths of switches), and a set's cost as a loop over its pairs."""

from __future__ import annotations

C = 1000


def path_up(switch_parent, switch):
    """Switches from ``switch`` up to the top one, ``switch`` first."""
    path = [int(switch)]
    while switch_parent[path[-1]] != -1:
        path.append(int(switch_parent[path[-1]]))
    return path


def pair_hops(switch_parent, node_leaf, a, b):
    """Hop count of distinct nodes a and b: 2 x the larger of their distances (switches from the
    node's own switch up to it, inclusive) to their lowest common switch."""
    up_a = path_up(switch_parent, node_leaf[a])
    up_b = path_up(switch_parent, node_leaf[b])
    common = next(s for s in up_a if s in up_b)
    return 2 * max(up_a.index(common) + 1, up_b.index(common) + 1)


def set_cost_bruteforce(switch_parent, node_leaf, nodes, convention="paper"):
    """The cost of a node set as a loop over its pairs: ``"paper"`` (1/n) x sum over ordered pairs
    of C x h, ``"published"`` sum over unordered pairs of C x (h - 1) // n, at least 1."""
    nodes = [int(v) for v in nodes]
    n = len(nodes)
    if convention == "paper":
        total = sum(
            C * pair_hops(switch_parent, node_leaf, a, b) for a in nodes for b in nodes if a != b
        )
        return total / n
    total = sum(
        C * (pair_hops(switch_parent, node_leaf, nodes[x], nodes[y]) - 1)
        for x in range(n)
        for y in range(x + 1, n)
    )
    return float(max(1, total // n))


def fat_tree_cost(switch_ids, pod_ids, convention="paper"):
    """The paper's fat-tree formula from the edge switch and the pod of each node (what the
    project's fat-tree kernels computed before every cost moved to the count form): with ``A``
    and ``B`` the sums of squared node counts per edge switch and per pod, ``"paper"`` is
    ``c (6n^2 - 2A - 2B - 2n) / n`` and ``"published"`` ``max(1, (c (5n^2 - 2A - 2B - n) / 2) // n)``.
    ``convention`` is a name or its code (0 = paper, 1 = published)."""
    switch_ids, pod_ids = [int(v) for v in switch_ids], [int(v) for v in pod_ids]
    n = len(switch_ids)
    a = sum(switch_ids.count(s) ** 2 for s in set(switch_ids))
    b = sum(pod_ids.count(p) ** 2 for p in set(pod_ids))
    if convention in ("paper", 0):
        return C * float(6 * n * n - 2 * a - 2 * b - 2 * n) / n
    return float(max(1, (C * (5 * n * n - 2 * a - 2 * b - n) // 2) // n))


def fat_tree_block_costs(switch_q, pod_q, size, convention="paper"):
    """:func:`fat_tree_cost` of the block of ``size`` positions from every start of the idle
    sequence (its edge switch and pod per position), wrapping to its head."""
    m = len(switch_q)
    out = []
    for p in range(m):
        block = [(p + i) % m for i in range(size)]
        out.append(
            fat_tree_cost([switch_q[i] for i in block], [pod_q[i] for i in block], convention)
        )
    return out
