"""Seed 001: interference-aware placement of distributed training jobs in large GPU clusters.

The cluster (:mod:`.cluster`: fat-tree, VL2, BCube; PCIe, DGX-1-like, mixed servers), the job
profiles (:mod:`.profiles`, the one table of our chosen numbers), workloads (:mod:`.jobs`), the
interference model with its fitting (:mod:`.model`), the interval simulator with the
placement-policy protocol (:mod:`.simulator`), its loop one scheduling decision at a time
(:mod:`.episode`) and the predicted cost of plans that policies share (:mod:`.planning`). The
baselines (Tetris, LB, LIF, random, opt, whole) are in :mod:`tjap.heuristics.interference`; policies
are built by name with ``tjap.registry.make("interference", name)`` and ``tjap interference
evaluate`` runs them.

>>> from tjap.placement.interference import Workload, make_cluster, simulate
>>> from tjap.registry import make
>>> cluster = make_cluster("fattree", 4)
>>> workload = Workload.generate(cluster.num_partitions, 4, "poisson", seed=0, rate=2)
>>> result = simulate(cluster, workload, make("interference", "tetris"))
>>> result.summary()["completed"] == len(workload)
True
"""

from tjap.core.renames import renamed
from tjap.placement.interference.cluster import ARCHS, CLUSTER, TOPOLOGIES, Cluster, make_cluster
from tjap.placement.interference.episode import PlacementEpisode, Turn
from tjap.placement.interference.jobs import ARRIVALS, INTERVAL_S, Workload, default_rate
from tjap.placement.interference.model import (
    FIT_MODELS,
    Coefficients,
    Samples,
    co_location_samples,
    error_table,
    fit,
    prediction_error,
)
from tjap.placement.interference.simulator import (
    InterferenceResult,
    PlacementPolicy,
    Simulator,
    simulate,
)

# the old names, kept for one release (they warn): tjap.core.renames
__getattr__ = renamed(__name__, {"SimResult": "InterferenceResult"})

__all__ = [
    "ARCHS",
    "ARRIVALS",
    "CLUSTER",
    "FIT_MODELS",
    "INTERVAL_S",
    "TOPOLOGIES",
    "Cluster",
    "Coefficients",
    "InterferenceResult",
    "PlacementEpisode",
    "PlacementPolicy",
    "Samples",
    "Simulator",
    "Turn",
    "Workload",
    "co_location_samples",
    "default_rate",
    "error_table",
    "fit",
    "make_cluster",
    "prediction_error",
    "simulate",
]
