"""Seed 003: network-aware compute and memory allocation in a three-tier data-centre network.

The model (:mod:`.topology`, :mod:`.requests`, :mod:`.engine`), the one episode every method and
the gymnasium environment use (:mod:`.episode`: :class:`Episode` advances one decision at a time,
:func:`run_episode` and :func:`evaluate` drive it with a policy), and the exact per-request CP-SAT
model (:mod:`.exact`). The policies (Tetris, NALB, NULB, random, exact, the learned gnn) are built
by name with ``tjap.registry.make("network", name)``; ``tjap network evaluate`` runs them from the
command line.

>>> from tjap.placement.network import Requests, paper_topology, run_episode
>>> from tjap.registry import make
>>> topo = paper_topology("8:1-16", servers=64)
>>> run_episode(topo, Requests.generate(topo, 128, seed=0), make("network", "tetris")).acceptance
0.3828125
"""

from tjap.core.renames import renamed
from tjap.placement.network.engine import ROUTINGS, Engine, Outcome
from tjap.placement.network.episode import (
    Episode,
    EpisodeResult,
    NetworkEvaluation,
    ServerPolicy,
    evaluate,
    run_episode,
    serve_request,
)
from tjap.placement.network.exact import RequestPlan, solve_request
from tjap.placement.network.requests import Requests, holding_max
from tjap.placement.network.topology import (
    NAMES,
    SIZES,
    SPREAD,
    DataCentre,
    paper_topology,
    parse_name,
)

# the old names, kept for one release (they warn): tjap.core.renames
__getattr__ = renamed(__name__, {"Evaluation": "NetworkEvaluation", "Topology": "DataCentre"})

__all__ = [
    "NAMES",
    "ROUTINGS",
    "SIZES",
    "SPREAD",
    "DataCentre",
    "Engine",
    "Episode",
    "EpisodeResult",
    "NetworkEvaluation",
    "Outcome",
    "RequestPlan",
    "Requests",
    "ServerPolicy",
    "evaluate",
    "holding_max",
    "paper_topology",
    "parse_name",
    "run_episode",
    "serve_request",
    "solve_request",
]
