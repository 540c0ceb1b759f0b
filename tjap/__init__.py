"""tjap: topology-aware job allocation on fat-trees (seed 002), and the face of the whole library.

Model one scheduling window (:class:`FatTree`, :class:`Window`), price node sets with the
communication-hop cost (:func:`job_cost`), and solve windows exactly or heuristically through
:func:`solve`. Importing tjap loads numpy and numba kernels only: solvers, networks and torch are
imported when a method needs them.
"""

from tjap.cost import assignment_cost, job_cost
from tjap.errors import (InvalidInputError, MissingDependencyError, StateSpaceTooLargeError,
                         TjapError, UnknownMethodError)
from tjap.result import Result, Status
from tjap.solve import methods, register, solve
from tjap.topology import FatTree
from tjap.window import Window, load_windows

__version__ = "0.1.0"

__all__ = ["FatTree", "Window", "Result", "Status", "solve", "methods", "register", "job_cost",
           "assignment_cost", "load_windows", "TjapError", "InvalidInputError",
           "UnknownMethodError", "MissingDependencyError", "StateSpaceTooLargeError"]
