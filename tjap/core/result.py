"""The result protocol every system shares: the status of a solve, and one way to print results.

Every result of the library (a window's :class:`~tjap.placement.tree.result.Result`, a network
request's plan, a simulation's summary ...) is a frozen dataclass that mixes in :class:`Record`,
so it has ``to_dict()``, ``to_json()`` and ``summary()`` with one spelling per key across systems
(``utilization``, ``runtime_s``) and integers kept as integers.

Every result of a decision call or an evaluation also has the :data:`COMMON_FIELDS`, meaning the
same in every family: ``method`` (the method or policy that ran), ``status`` (a :class:`Status`),
``objective`` (the family's headline figure; each class says which), ``runtime_s`` (seconds of
computing) and ``seed``. They are fields or read-only properties (aliases of the family's own
names, never a second copy), and ``to_dict()`` writes them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from typing import TYPE_CHECKING, Any, ClassVar

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

    An evaluation (an episode, a simulation, a provisioner's pairs) that ran its course is
    FEASIBLE: it measured a policy and proves nothing about the best one.
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


#: The fields every result of a decision call or an evaluation has, with one meaning in every
#: family (see the module notes): ``method`` (str), ``status`` (:class:`Status`), ``objective``
#: (a number, None or NaN when there is nothing to measure), ``runtime_s`` (float), ``seed`` (int).
COMMON_FIELDS = ("method", "status", "objective", "runtime_s", "seed")


class Record:
    """Mix-in of every result: ``to_dict()`` (plain JSON data), ``to_json()`` and ``summary()``.

    Subclasses are frozen dataclasses. ``to_dict`` serialises the :data:`COMMON_FIELDS` the record
    has (:meth:`common`), then every field, through :func:`plain`; a subclass overrides it when
    some fields should not be written (large arrays, back references). ``summary`` is a flat dict
    of the headline figures (by default ``to_dict``).
    """

    if TYPE_CHECKING:  # every subclass is a dataclass
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def common(self) -> dict:
        """The :data:`COMMON_FIELDS` this record has (all five on every result of a decision
        call or an evaluation), as plain data."""
        return {name: plain(getattr(self, name)) for name in COMMON_FIELDS if hasattr(self, name)}

    def to_dict(self) -> dict:
        return self.common() | {
            f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)
        }

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def summary(self) -> dict:
        return self.to_dict()


class Measurement(Record):
    """Mix-in of the records that measure a policy on a run (an episode, a simulation, an
    evaluation) and prove nothing: :attr:`status` is always ``FEASIBLE`` and :attr:`method` is the
    policy's name, kept in the record's ``policy`` field. A subclass defines ``objective`` (its
    family's headline figure) and may override ``method``."""

    if TYPE_CHECKING:  # a field of every subclass
        policy: str

    @property
    def method(self) -> str:
        """The policy's name (``policy``)."""
        return self.policy

    @property
    def status(self) -> Status:
        """FEASIBLE: a run measures a policy and proves nothing."""
        return Status.FEASIBLE
