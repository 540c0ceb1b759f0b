"""Tiny block and label trees and random windows with job constraints, shared by the tests of
the constraints in every exact and search method."""

from __future__ import annotations

from tjap.placement.tree.jobs import switch_levels
from tjap.placement.tree.topology import Topology
from tjap.placement.tree.window import Window

BLOCKS = Topology.from_slurm(
    "\n".join(
        [f"BlockName=b{i} Nodes=n[{3 * i + 1}-{3 * i + 3}]" for i in range(4)]
        + ["BlockSizes=3,6,12"]
    )
)
#: Five blocks: Slurm leaves the fifth out of every aggregate of two (the tail rule).
TAIL = Topology.from_slurm(
    "\n".join(
        [f"BlockName=b{i} Nodes=n[{2 * i + 1}-{2 * i + 2}]" for i in range(5)] + ["BlockSizes=2,4"]
    )
)
LABELS = Topology.from_node_labels(
    [(f"h{i}", {"block": f"B{i // 6}", "rack": f"R{i // 3}"}) for i in range(12)],
    levels=["block", "rack"],
)


def random_jobs(rng, idle, top, max_jobs=3, max_nodes=4, blocks=True):
    """Random jobs with constraints; ``slurm_rule`` (Slurm's block rule) on block trees only."""
    jobs, left = [], len(idle)
    for _ in range(rng.randint(1, max_jobs)):
        if left == 0:
            break
        n = rng.randint(1, min(max_nodes, left))
        left -= n
        job, r = {"nodes": n}, rng.random()
        if r < 0.2 and n % 2 == 0:
            job["segment"] = 2
            if rng.random() < 0.3:
                job["segment_level"] = rng.randint(1, top)
        elif r < 0.4:
            job["within"] = rng.randint(1, top)
        elif r < 0.55:
            job["prefer"] = rng.randint(1, top)
            job["prefer_cost"] = rng.choice([0, 700, 3000])
        elif r < 0.75:
            job["exclusive"] = rng.randint(1, top)
        elif r < 0.85 and blocks:
            job["slurm_rule"] = True
        jobs.append(job)
    return jobs


def random_window(rng, tree):
    idle = sorted(rng.sample(range(tree.num_nodes), rng.randint(4, tree.num_nodes)))
    top = int(switch_levels(tree)[0])
    return Window(
        tree,
        idle,
        random_jobs(rng, idle, top, blocks=tree.is_block),
        fragmentation=rng.choice([None, None, 700, (300, 2)]),
    )
