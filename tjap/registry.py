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

>>> from tjap.registry import methods, get
>>> "dp" in methods("tree")
True
>>> get("tree", "dp").exact
True
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from tjap.core.errors import (
    InvalidInputError,
    MissingDependencyError,
    UnknownMethodError,
    check_options,
)

SYSTEMS = ("tree", "network", "interference", "provision")

#: What each system's methods are, for listings.
SYSTEM_DESCRIPTIONS = {
    "tree": "seed 002: place a window of jobs on a switch tree (tjap.solve)",
    "network": "seed 003: choose servers and paths for a request in a composable data centre",
    "interference": "seed 001: place ML jobs on GPU groups, minimising interference",
    "provision": "seed 004: decide when to submit the successor of a chained job",
}

#: What a tree method's model admits (:attr:`Method.model`); "" when not stated.
MODELS = ("scas", "dcas", "free", "")

#: What a method of each system is called in messages.
NOUNS = {
    "tree": "method",
    "network": "network policy",
    "interference": "interference policy",
    "provision": "provisioner",
}


@dataclass(frozen=True)
class Method:
    """A registered method or policy.

    Attributes
    ----------
    name, system : str
        The name users pass, and the system it serves (one of :data:`SYSTEMS`).
    target : str or callable
        The factory: a ``"module:attr"`` string (imported on first use) or a callable. For
        ``"tree"`` it is the solver itself; for the other systems it builds a policy object.
    description : str
        One line for listings and ``--help``.
    exact, time_limited, learned, needs_torch : bool
        Capability flags: proves optimality; honours ``time_limit_s``; a trained operator;
        imports torch.
    requires : tuple of str
        Modules that must be importable; :meth:`is_available` checks them.
    extra : str
        The pip extra (or package) that provides ``requires``.
    pass_name : bool
        The factory takes the requested name as its first argument (one factory, many names).
    builtin : bool
        Shipped with tjap; :func:`register` refuses to replace it unless ``replace=True``.
    constraints : bool
        For ``"tree"`` methods: honours the jobs' constraints (segment, within, prefer,
        exclusive, slurm_rule) and the fragmentation term of a window
        (:mod:`tjap.placement.tree.jobs`); :func:`tjap.solve` refuses a window that has them
        for a method without it.
    blocks : bool
        For ``"tree"`` methods: a rule of Slurm's ``topology/block``, for block clusters alone
        (:attr:`tjap.placement.tree.topology.Topology.is_block`); :func:`tjap.solve` refuses
        any other tree in one line.
    model : str
        For ``"tree"`` methods, the placements the method's model admits: ``"scas"``
        (contiguous blocks of the idle sequence), ``"dcas"`` (the dynamic contiguity rule),
        ``"free"`` (any idle nodes), or ``""`` (not stated: a method of a user). A result cut
        short by a time limit is never worse than the constructive rules its model admits
        (:func:`tjap.solve`).
    """

    name: str
    system: str
    target: str | Callable
    description: str = ""
    exact: bool = False
    time_limited: bool = False
    learned: bool = False
    needs_torch: bool = False
    requires: tuple[str, ...] = ()
    extra: str = ""
    pass_name: bool = False
    builtin: bool = False
    model: str = ""
    constraints: bool = False
    blocks: bool = False

    def missing(self) -> list[str]:
        """The required modules that are not installed."""
        needed = (*self.requires, *(("torch",) if self.needs_torch else ()))
        return [m for m in needed if importlib.util.find_spec(m.split(".")[0]) is None]

    def is_available(self) -> bool:
        """True when every dependency of the method is installed."""
        return not self.missing()

    def load(self) -> Callable:
        """The factory (imports its module), or a one-line error naming what to install."""
        missing = self.missing()
        if missing:
            hint = f"pip install {self.extra}" if self.extra else f"pip install {' '.join(missing)}"
            raise MissingDependencyError(
                f"{self.system} method {self.name!r} needs {', '.join(missing)}; install it with "
                f"`{hint}`"
            )
        if callable(self.target):
            return self.target
        module, attr = self.target.split(":")
        return getattr(importlib.import_module(module), attr)

    def options(self) -> list[str] | None:
        """The keyword options the factory accepts (None: it takes any)."""
        fn = self.load()
        try:
            parameters = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return None
        if any(p.kind is p.VAR_KEYWORD for p in parameters):
            return None
        names = [p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return names[1:] if self.system == "tree" or self.pass_name else names

    def check_options(self, options: dict, fixed=()) -> None:
        """Raise InvalidInputError on a keyword option the factory does not take."""
        valid = self.options()
        if valid is None:
            return
        check_options(
            options, [v for v in valid if v not in fixed], f"{self.system} method {self.name!r}"
        )

    def make(self, requested_name: str | None = None, **options):
        """Build the policy (network, interference, provision) with ``options``, checked."""
        self.check_options(options)
        factory = self.load()
        if self.pass_name:
            return factory(requested_name or self.name, **options)
        return factory(**options)


_REGISTRY: dict[tuple[str, str], Method] = {}


def _add(system: str, name: str, target, description: str, **flags) -> None:
    _REGISTRY[system, name] = Method(name, system, target, description, builtin=True, **flags)


def register(
    name: str,
    fn: Callable | str,
    description: str = "",
    *,
    system: str = "tree",
    replace: bool = False,
    **flags,
) -> Method:
    """Add a method to ``system`` (default ``"tree"``, the methods of :func:`tjap.solve`).

    ``fn`` is a callable or a ``"module:attr"`` string. A built-in method is replaced only with
    ``replace=True``; ``flags`` are :class:`Method`'s capability fields.
    """
    if system not in SYSTEMS:
        raise InvalidInputError(f"unknown system {system!r}; choose one of {', '.join(SYSTEMS)}")
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"a method name must be a non-empty string, got {name!r}")
    if not (callable(fn) or (isinstance(fn, str) and fn.count(":") == 1)):
        raise InvalidInputError(
            f"register() needs a callable or a 'module:attr' string, got {fn!r}"
        )
    existing = _REGISTRY.get((system, name))
    if (
        existing is not None and existing.builtin or (system, name) == ("tree", "auto")
    ) and not replace:
        raise InvalidInputError(
            f"{system} method {name!r} is built in; pass replace=True to replace it"
        )
    unknown = set(flags) - {
        "exact",
        "time_limited",
        "learned",
        "needs_torch",
        "requires",
        "extra",
        "pass_name",
        "model",
        "constraints",
        "blocks",
    }
    if unknown:
        raise InvalidInputError(f"unknown register() flags {sorted(unknown)}")
    if flags.get("model", "") not in MODELS:
        raise InvalidInputError(
            f"register(model=...) must be one of "
            f"{', '.join(map(repr, MODELS))}, got {flags['model']!r}"
        )
    method = Method(name, system, fn, description, **flags)
    _REGISTRY[system, name] = method
    return method


def methods(system: str = "tree") -> list[str]:
    """Names registered for ``system`` (``"tree"``: those :func:`tjap.solve` accepts)."""
    if system not in SYSTEMS:
        raise InvalidInputError(f"unknown system {system!r}; choose one of {', '.join(SYSTEMS)}")
    return [name for (s, name) in _REGISTRY if s == system]


def entries(system: str | None = None) -> list[Method]:
    """Every registered :class:`Method` (of one system, or of all)."""
    return [m for (s, _), m in _REGISTRY.items() if system in (None, s)]


def get(system: str, name: str) -> Method:
    """The :class:`Method` ``name`` of ``system``. A provisioner name may carry a weight suffix
    (``moe@4``): the suffix is passed on to the factory."""
    if system not in SYSTEMS:
        raise InvalidInputError(f"unknown system {system!r}; choose one of {', '.join(SYSTEMS)}")
    if not isinstance(name, str):
        raise UnknownMethodError(f"a {system} method name must be a string, got {name!r}")
    method = _REGISTRY.get((system, name)) or _REGISTRY.get((system, name.partition("@")[0]))
    if method is None or ("@" in name and not method.pass_name):
        raise UnknownMethodError(
            f"unknown {NOUNS[system]} {name!r}; choose one of {', '.join(methods(system))}"
        )
    return method


def make(system: str, name: str, **options):
    """A fresh policy of ``system`` by name, its options checked (network, interference,
    provision)."""
    return get(system, name).make(name, **options)


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
    "the cheapest of the SCAS optimum and slurm-tree, improved free-form within the time limit",
    time_limited=True,
    model="free",
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
