"""The result protocol every system shares: the status of a solve, and one way to print results.

Every result of the library (a window's :class:`~tjap.placement.tree.result.Result`, a network
request's plan, a simulation's summary ...) is a frozen dataclass that mixes in :class:`Record`,
so it has ``to_dict()``, ``to_json()`` and ``summary()`` with one spelling per key across systems
(``utilization``, ``runtime_s``) and integers kept as integers.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math

import numpy as np


class Status(str, enum.Enum):
    """How a solve ended.

    - OPTIMAL: proven optimal for the method's model.
    - FEASIBLE: a solution without proof of optimality, the method having run its course (a
      heuristic, a rule).
    - INFEASIBLE: proven to have no solution.
    - TIME_LIMIT: the time limit cut the method short. The result holds the best solution found
      when there is one (a window solver always has one: never worse than the Seq rule's) and the
      proven bound when there is one; ``info["stopped"]`` says where it stopped and
      ``info["fallback"]`` names the rule whose solution was returned in place of the method's
      own. Elsewhere (a network request's plan) a TIME_LIMIT result may hold no solution.
    """

    OPTIMAL = "OPTIMAL"
    FEASIBLE = "FEASIBLE"
    INFEASIBLE = "INFEASIBLE"
    TIME_LIMIT = "TIME_LIMIT"


def plain(value):
    """``value`` as plain JSON data: numpy scalars and arrays become Python numbers and lists,
    integral counts stay integers, enums become their values, NaN and infinities become None
    (JSON has no NaN), dataclasses and records become dicts."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return None if not math.isfinite(value) else value
    return value


class Record:
    """Mix-in of every result: ``to_dict()`` (plain JSON data), ``to_json()`` and ``summary()``.

    Subclasses are frozen dataclasses. ``to_dict`` serialises every field through :func:`plain`;
    a subclass overrides it when some fields should not be written (large arrays, back
    references). ``summary`` is a flat dict of the headline figures (by default ``to_dict``).
    """

    def to_dict(self) -> dict:
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def summary(self) -> dict:
        return self.to_dict()
