"""Seed 001: interference-aware placement of distributed training jobs in large GPU clusters.

The cluster (:mod:`.cluster`: fat-tree, VL2, BCube; PCIe, DGX-1-like, mixed servers), the job
profiles (:mod:`.profiles`, the one table of our chosen numbers), workloads (:mod:`.jobs`), the
interference model with its fitting (:mod:`.model`) and the interval simulator with the
placement-policy protocol (:mod:`.simulator`). The baselines (Tetris, LB, LIF, random, opt) are in
:mod:`heuristics.interference`; ``tjap interference evaluate`` runs them.

>>> from placement.interference import Workload, make_cluster, simulate
>>> from heuristics.interference import make_policy
>>> cluster = make_cluster("fattree", 4)
>>> workload = Workload.generate(cluster.num_partitions, 4, "poisson", seed=0, rate=2)
>>> simulate(cluster, workload, make_policy("tetris")).summary()["completed"] == len(workload)
True
"""

from placement.interference.cluster import ARCHS, TOPOLOGIES, Cluster, make_cluster
from placement.interference.jobs import ARRIVALS, INTERVAL_S, Workload
from placement.interference.model import (FIT_MODELS, Coefficients, Samples, co_location_samples,
                                          error_table, fit, prediction_error)
from placement.interference.simulator import PlacementPolicy, SimResult, Simulator, simulate

__all__ = ["ARCHS", "ARRIVALS", "FIT_MODELS", "INTERVAL_S", "TOPOLOGIES", "Cluster",
           "Coefficients", "PlacementPolicy", "Samples", "SimResult", "Simulator", "Workload",
           "co_location_samples", "error_table", "fit", "make_cluster", "prediction_error",
           "simulate"]
