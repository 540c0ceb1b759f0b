"""One registry for every system's methods and policies: name -> factory, with what it needs.

Four systems share it:

- ``"tree"`` (seed 002): window solvers, called as ``fn(window, *, convention, time_limit_s,
  seed, **options) -> Result`` by :func:`tjap.solve`;
- ``"network"`` (seed 003): server-choosing policies for network requests;
- ``"interference"`` (seed 001): placement policies for ML jobs on a GPU cluster;
- ``"provision"`` (seed 004): submit-or-wait provisioners for chained jobs.

Each entry is a :class:`Method`: the factory is named by a ``"module:attr"`` string and imported
only when it is used, so listing methods imports nothing heavy (no torch, no solver). Unknown
names raise :class:`~tjap.core.errors.UnknownMethodError` listing the valid ones; unknown keyword
options raise :class:`~tjap.core.errors.InvalidInputError` listing the factory's options; a missing
optional dependency raises :class:`~tjap.core.errors.MissingDependencyError` naming what to install.

The mechanism (:class:`Method`, :func:`register`, :func:`get`, :func:`solver`) lives in
:mod:`tjap.core.registry`, so that every floor can ask for a method by name; this module holds the
built-in table (``import tjap`` loads it) and re-exports the mechanism.

>>> from tjap.registry import methods, get
>>> "dp" in methods("tree")
True
>>> get("tree", "dp").exact
True
"""

from __future__ import annotations

from tjap.core.registry import (  # noqa: F401  (the mechanism, re-exported: tjap.registry.get ...)
    _REGISTRY,
    MODELS,
    NOUNS,
    SYSTEM_DESCRIPTIONS,
    SYSTEMS,
    Method,
    entries,
    get,
    make,
    methods,
    register,
    solver,
)


def _add(system: str, name: str, target, description: str, **flags) -> None:
    _REGISTRY[system, name] = Method(name, system, target, description, builtin=True, **flags)


# -- seed 002: window solvers -----------------------------------------------------------------
_add(
    "tree",
    "auto",
    "tjap.placement.tree.exact:solve_auto",
    "exact SCAS where affordable (dp, else SCIP by measured size rules or the time limit); "
    "otherwise the best of seq, slurm-tree and freeform-greedy",
    exact=True,
    time_limited=True,
    model="free",
    constraints=True,
)
_add(
    "tree",
    "dp",
    "tjap.placement.tree.csp:solve_dp",
    "exact SCAS by dynamic programming over (position in Q, job multiset), Numba",
    exact=True,
    model="scas",
    constraints=True,
)
_add(
    "tree",
    "scip",
    "tjap.placement.tree.scas:solve_scip",
    "exact SCAS, set-packing 0-1 model on SCIP",
    exact=True,
    time_limited=True,
    requires=("pyscipopt",),
    extra="pyscipopt",
    model="scas",
    constraints=True,
)
_add(
    "tree",
    "cpsat",
    "tjap.placement.tree.scas:solve_cpsat",
    "exact SCAS, set-packing 0-1 model on OR-Tools CP-SAT",
    exact=True,
    time_limited=True,
    requires=("ortools",),
    extra="ortools",
    model="scas",
    constraints=True,
)
_add(
    "tree",
    "scip-paper",
    "tjap.placement.tree.scas:solve_scip_paper",
    "exact SCAS, the paper's x/y formulation on SCIP (weak; for comparison)",
    exact=True,
    time_limited=True,
    requires=("pyscipopt",),
    extra="pyscipopt",
    model="scas",
)
_add(
    "tree",
    "cpsat-paper",
    "tjap.placement.tree.scas:solve_cpsat_paper",
    "exact SCAS, the paper's x/y formulation on CP-SAT (for comparison)",
    exact=True,
    time_limited=True,
    requires=("ortools",),
    extra="ortools",
    model="scas",
)
_add(
    "tree",
    "freeform",
    "tjap.placement.tree.freeform:solve_freeform",
    "exact minimum cost with no contiguity rule (SCIP, or solver='cpsat')",
    exact=True,
    time_limited=True,
    requires=("pyscipopt",),
    extra="pyscipopt",
    model="free",
    constraints=True,
)
_add(
    "tree",
    "freeform-greedy",
    "tjap.placement.tree.freeform:solve_freeform_greedy",
    "fast best-fit heuristic with no contiguity rule",
    model="free",
)
_add(
    "tree",
    "seq",
    "tjap.placement.tree.scas:solve_seq",
    "the paper's sequential assignment (each job takes the next idle nodes; with constraints "
    "the first run they allow)",
    model="scas",
    constraints=True,
)
_add(
    "tree",
    "slurm-tree",
    "tjap.heuristics.slurm.tree:solve_slurm_tree",
    "what Slurm 22.05's topology/tree selection does, job by job in window order "
    "(slurm='24.11': 24.11's)",
    model="free",
)
_add(
    "tree",
    "slurm-block",
    "tjap.heuristics.slurm.block:solve_slurm_block",
    "what Slurm 24.11's topology/block selection does (segments, exclusive=topo), job by job",
    model="free",
    constraints=True,
    blocks=True,
)
_add(
    "tree",
    "kueue-bestfit",
    "tjap.heuristics.tree.kueue:solve_kueue_bestfit",
    "Kueue's topology-aware scheduling, BestFit profile (required/preferred levels, slices)",
    model="free",
    constraints=True,
)
_add(
    "tree",
    "kueue-leastfree",
    "tjap.heuristics.tree.kueue:solve_kueue_leastfree",
    "Kueue's topology-aware scheduling, default Mixed profile (LeastFree when unconstrained)",
    model="free",
    constraints=True,
)
_add(
    "tree",
    "guarded",
    "tjap.heuristics.tree.guarded:solve_guarded",
    "never worse than the cluster's scheduler (slurm-block on a block cluster, slurm-tree on a "
    "tree, scheduler='kueue-bestfit'...) nor the window's optimum; improved free-form within the "
    "time limit",
    time_limited=True,
    model="free",
    constraints=True,
)
_add(
    "tree",
    "sa",
    "tjap.heuristics.tree.anneal:solve_sa",
    "DCAS simulated annealing in Numba (preset='paper' for the paper's Table I settings)",
    time_limited=True,
    model="dcas",
    constraints=True,
)
_add(
    "tree",
    "lns",
    "tjap.heuristics.tree.anneal:solve_lns",
    "DCAS descent from the exact SCAS optimum with the greedy repair (Numba)",
    time_limited=True,
    model="dcas",
    constraints=True,
)
_add(
    "tree",
    "nsa",
    "tjap.learned.tree.policy:solve_nsa",
    "neural SA: the sa loop with a trained repair operator run in Numba, by default the best "
    "settings measured (preset='paper' for the paper's; weights=...; torch only to train)",
    time_limited=True,
    learned=True,
    model="dcas",
)

# -- seed 003: network request policies -------------------------------------------------------
_add(
    "network",
    "tetris",
    "tjap.heuristics.network.rules:TetrisPolicy",
    "cosine fit of free resources with a rack-locality penalty; shortest paths",
)
_add(
    "network",
    "nalb",
    "tjap.heuristics.network.rules:NALBPolicy",
    "Tetris first server, then a walk by free link channels; balanced routing",
)
_add(
    "network",
    "nulb",
    "tjap.heuristics.network.rules:NULBPolicy",
    "Tetris first server, then a breadth-first walk; balanced routing",
)
_add(
    "network",
    "random",
    "tjap.heuristics.network.rules:RandomPolicy",
    "uniform among allowed servers",
)
_add(
    "network",
    "exact",
    "tjap.heuristics.network.rules:ExactPolicy",
    "CP-SAT per-request model: fewest channels, ties to best fit",
    exact=True,
    requires=("ortools",),
    extra="ortools",
)
_add(
    "network",
    "gnn",
    "tjap.learned.network.policy:GNNPolicy",
    "learned GNN allocator (shipped weights by default; weights=PATH)",
    learned=True,
    needs_torch=True,
    extra="torch==2.13.0",
)

# -- seed 001: interference-aware placement ---------------------------------------------------
for _name, _text in (
    ("tetris", "per task: multi-resource packing that follows locality"),
    ("lb", "per task: least-loaded server, then group"),
    ("lif", "per task: least interference first (the fitted model)"),
    ("random", "per task: uniform among feasible groups"),
):
    _add(
        "interference",
        _name,
        "tjap.heuristics.interference.rules:TaskPolicy",
        _text,
        pass_name=True,
    )
_add(
    "interference",
    "opt",
    "tjap.heuristics.interference.anneal:OptPolicy",
    "annealing over the whole batch on the fitted interference model",
)
_add(
    "interference",
    "whole",
    "tjap.heuristics.interference.rules:WholeJobPolicy",
    "each job whole on one server at the split of least predicted cost (ours)",
)
_add(
    "interference",
    "marl",
    "tjap.learned.interference.policy:MarlPolicy",
    "multi-agent GNN actor-critic, device level (weights=PATH)",
    learned=True,
    needs_torch=True,
    extra="torch==2.13.0",
)
_add(
    "interference",
    "single",
    "tjap.learned.interference.policy:SingleAgentPolicy",
    "single-agent GNN actor-critic (weights=PATH)",
    learned=True,
    needs_torch=True,
    extra="torch==2.13.0",
)
_add(
    "interference",
    "marl-server",
    "tjap.learned.interference.policy:ServerLevelPolicy",
    "multi-agent GNN actor-critic, server level (weights=PATH)",
    learned=True,
    needs_torch=True,
    extra="torch==2.13.0",
)

# -- seed 004: provisioners for chained jobs --------------------------------------------------
_add(
    "provision",
    "reactive",
    "tjap.heuristics.batch.rules:Reactive",
    "submit the successor when the predecessor ends",
)
_add(
    "provision",
    "avg",
    "tjap.heuristics.batch.rules:Average",
    "submit once the predecessor's expected end is within the mean recent wait",
)
for _name, _text, _torch in (
    ("rf", "random-forest wait regressor (NAME@W: threshold for weight W)", False),
    ("xgb", "XGBoost wait regressor (NAME@W)", False),
    ("transformer", "transformer wait regressor (NAME@W)", True),
    ("moe", "mixture of transformer experts (NAME@W)", True),
    ("transformer_dqn", "transformer with a DQN submit-or-wait head", True),
    ("moe_dqn", "mixture of experts with a DQN head", True),
    ("transformer_pg", "transformer with a policy-gradient head", True),
    ("moe_pg", "mixture of experts with a policy-gradient head", True),
):
    _add(
        "provision",
        _name,
        "tjap.learned.batch.policy:load_provisioner",
        _text,
        learned=True,
        needs_torch=_torch,
        pass_name=True,
        extra="torch==2.13.0" if _torch else "",
    )
