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
