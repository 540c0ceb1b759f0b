"""tjap: placement problems of HPC and ML clusters: exact models, Numba search, learned operators.

The face of the library. Seed 002's model (:class:`Topology`, :class:`FatTree`, :class:`Window`, the hop cost) and
:func:`solve` are re-exported here; the other systems live in :mod:`tjap.placement.network`,
:mod:`tjap.placement.interference` and :mod:`tjap.placement.batch`, and every system's methods are listed
by :func:`tjap.registry.methods`. Importing tjap loads nothing heavy: the names below are resolved
on first use, and solvers, networks and torch are imported only when a method needs them.
"""

from __future__ import annotations

import importlib

from tjap.core.errors import (
    InvalidInputError,
    MissingDependencyError,
    StateSpaceTooLargeError,
    TjapError,
    UnknownMethodError,
)

__version__ = "0.5.2"

# the built-in method table (names and "module:attr" strings only, nothing heavy), filled now so
# that any floor can ask tjap.core.registry for a method by name
import tjap.registry  # noqa: E402, F401

# public name -> module that defines it (imported on first access, PEP 562)
_LAZY = {
    "Topology": "tjap.placement.tree.topology",
    "FatTree": "tjap.placement.tree.fat_tree",
    "Window": "tjap.placement.tree.window",
    "load_windows": "tjap.placement.tree.window",
    "job_cost": "tjap.placement.tree.cost",
    "assignment_cost": "tjap.placement.tree.cost",
    "Result": "tjap.placement.tree.result",
    "Status": "tjap.core.result",
    "solve": "tjap.api",
    "place_job": "tjap.api",
    "place_request": "tjap.api",
    "methods": "tjap.registry",
    "register": "tjap.registry",
    "audit": "tjap.slurm.audit",
}

__all__ = [
    "Topology",
    "FatTree",
    "Window",
    "Result",
    "Status",
    "solve",
    "place_job",
    "place_request",
    "methods",
    "register",
    "job_cost",
    "audit",
    "assignment_cost",
    "load_windows",
    "TjapError",
    "InvalidInputError",
    "UnknownMethodError",
    "MissingDependencyError",
    "StateSpaceTooLargeError",
    "__version__",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tjap' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
