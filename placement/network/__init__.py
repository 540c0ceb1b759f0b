"""Seed 003: network-aware compute and memory allocation in a three-tier data-centre network.

The model (:mod:`.topology`, :mod:`.requests`, :mod:`.engine`), the one episode loop every method
uses (:mod:`.episode`), and the exact per-request CP-SAT model (:mod:`.exact`). The baselines
(Tetris, NALB, NULB, random, exact) are in :mod:`heuristics.network`; ``tjap network evaluate`` runs
them from the command line.

>>> from placement.network import Requests, paper_topology, run_episode
>>> from heuristics.network import make_policy
>>> topo = paper_topology("8:1-16", servers=64)
>>> run_episode(topo, Requests.generate(topo, 128, seed=0), make_policy("tetris")).acceptance
"""

from placement.network.engine import ROUTINGS, Engine, Outcome
from placement.network.episode import EpisodeResult, ServerPolicy, evaluate, run_episode
from placement.network.exact import RequestPlan, solve_request
from placement.network.requests import Requests, holding_max
from placement.network.topology import NAMES, SIZES, SPREAD, Topology, paper_topology, parse_name

__all__ = ["NAMES", "ROUTINGS", "SIZES", "SPREAD", "Engine", "EpisodeResult", "Outcome",
           "RequestPlan", "Requests", "ServerPolicy", "Topology", "evaluate", "holding_max",
           "paper_topology", "parse_name", "run_episode", "solve_request"]
