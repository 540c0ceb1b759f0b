"""Random irregular switch trees, windows on them and a brute-force SCAS oracle on any tree,
shared by the tests of every method on general trees."""

from __future__ import annotations

import math
import random

from tree_cost_oracle import set_cost_bruteforce

from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window


# -- trees and windows ----------------------------------------------------------------------------
def random_tree(rng: random.Random, max_levels: int = 4) -> Topology:
    """A tree of 2..max_levels switch levels, leaves at uneven depths holding 1..4 nodes."""
    levels = rng.randint(2, max_levels)
    entries, counter = [], {"s": 0, "n": 0}

    def grow(depth) -> str:
        name = f"sw{counter['s']}"
        counter["s"] += 1
        entry = {"name": name}
        entries.append(entry)
        if depth + 1 < levels and (depth == 0 or rng.random() < 0.6):
            entry["switches"] = [grow(depth + 1) for _ in range(rng.randint(1, 3))]
        else:
            first = counter["n"]
            counter["n"] += rng.randint(1, 4)
            entry["nodes"] = [f"n{i}" for i in range(first, counter["n"])]
        return name

    grow(0)
    return Topology.from_dict({"switches": entries})


def random_window(seed: int, *, max_idle: int = 10, max_jobs: int = 3) -> Window:
    """A random window on a random tree: 2..max_idle idle nodes (by name), 1..max_jobs jobs."""
    rng = random.Random(seed)
    tree = random_tree(rng)
    while tree.num_nodes < 2:
        tree = random_tree(rng)
    m = rng.randint(2, min(max_idle, tree.num_nodes))
    idle = rng.sample(tree.node_names, m)
    num_jobs = rng.randint(1, min(max_jobs, m))
    sizes, left = [], m
    for j in range(num_jobs):
        n = rng.randint(1, max(1, min(left - (num_jobs - j - 1), m // 2 + 1)))
        sizes.append(n)
        left -= n
    return Window(tree, idle, sizes)


#: A hand-written irregular tree: leaves at depths 1, 2 and 3, of sizes 1..4.
IRREGULAR = Topology.from_dict(
    {
        "switches": [
            {"name": "top", "switches": "spineA,spineB,leafC"},
            {"name": "spineA", "switches": "leafA1,aggA"},
            {"name": "leafA1", "nodes": "a[1-3]"},
            {"name": "aggA", "switches": "leafA2,leafA3"},
            {"name": "leafA2", "nodes": "d[1-2]"},
            {"name": "leafA3", "nodes": "e1"},
            {"name": "spineB", "switches": "leafB1"},
            {"name": "leafB1", "nodes": "b[1-4]"},
            {"name": "leafC", "nodes": "c[1-2]"},
        ]
    }
)


# -- brute-force SCAS oracle on any tree ----------------------------------------------------------
def tree_cost(w: Window, nodes, convention: str) -> float:
    t = w.topology
    return set_cost_bruteforce(t.switch_parent, t.node_leaf, nodes, convention)


def scas_oracle(w: Window, convention: str) -> float:
    """Cheapest tuple of pairwise disjoint blocks D(p, n_j) of Q, one per job (blocks wrap)."""
    m = w.num_idle
    cost, cover = {}, {}
    for n in set(w.job_sizes):
        for p in range(m):
            block = [int(w.idle_nodes[(p + i) % m]) for i in range(n)]
            cost[n, p] = tree_cost(w, block, convention)
            cover[n, p] = frozenset((p + i) % m for i in range(n))
    best = math.inf

    def rec(j, used, total):
        nonlocal best
        if j == w.num_jobs:
            best = min(best, total)
            return
        n = w.job_sizes[j]
        for p in range(m):
            if not used & cover[n, p]:
                rec(j + 1, used | cover[n, p], total + cost[n, p])

    rec(0, frozenset(), 0.0)
    return best
