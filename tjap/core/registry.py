"""The registry mechanism: every system's methods and policies by name, loaded on first use.

A :class:`Method` names its factory as a ``"module:attr"`` string, imported only when the method
is used, so that listing methods imports nothing heavy and any floor may ask for a method by name
(:func:`get`, :func:`solver`) without importing the floor above it. The built-in table is filled
by :mod:`tjap.registry` (the face), which ``import tjap`` loads.

>>> from tjap.core.registry import get
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


def solver(method) -> Callable:
    """A window solver ``fn(window, *, convention, time_limit_s, seed, **options) -> Result``
    for ``method``: a ``"tree"`` method by name (:func:`get`, loaded), or a callable as it is.
    This is the method itself, without :func:`tjap.solve`'s checks and its comparison with the
    constructive rules; pass ``functools.partial(tjap.solve, method=name)`` for those."""
    if callable(method):
        return method
    return get("tree", method).load()


def make(system: str, name: str, **options):
    """A fresh policy of ``system`` by name, its options checked (network, interference,
    provision)."""
    return get(system, name).make(name, **options)
