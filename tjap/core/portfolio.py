"""One portfolio: the best feasible result of several candidate methods on one instance.

Every "never worse than X" of the library is this one function: :func:`tjap.solve`'s comparison
of a result cut short with the constructive rules, ``auto`` when no exact method fits, the
``guarded`` method (the window's optimum against the scheduler's own choice), and through
``guarded`` the Slurm and Kubernetes services. :func:`best_of` runs the candidates in order and
keeps the cheapest feasible result; a later candidate wins only when strictly cheaper, so the
order is the tie-break. It knows nothing of windows: a candidate is a name and a callable, a
result anything with ``has_solution``, ``objective``, ``status`` and ``runtime_s``.

>>> from types import SimpleNamespace as R
>>> from tjap.core.result import Status
>>> a = Candidate("a", lambda left, best: R(has_solution=True, objective=3.0,
...               status=Status.FEASIBLE, runtime_s=0.0))
>>> b = Candidate("b", lambda left, best: R(has_solution=True, objective=2.0,
...               status=Status.OPTIMAL, runtime_s=0.0))
>>> pick = best_of([a, b])
>>> first = pick.candidates["a"]
>>> pick.winner, first["cost"]
('b', 3.0)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tjap.core.errors import TjapError
from tjap.core.result import Record

#: Two costs closer than this are a tie (the earlier candidate keeps it).
TOLERANCE = 1e-9


class NotRun(Exception):
    """Raised by a candidate's ``run`` that has nothing to do (no time left, nothing to
    improve): its entry says ``NOT_RUN`` and why."""


@dataclass(frozen=True)
class Candidate:
    """One method of a portfolio.

    Attributes
    ----------
    name : str
        How the candidate is named in :attr:`Pick.candidates` and :attr:`Pick.winner`.
    run : callable
        ``run(time_left_s, best) -> result``: ``time_left_s`` is what the portfolio has left
        (None: no limit), ``best`` the best result so far (None: none yet; a candidate may
        warm-start from it). It may raise :class:`NotRun`; an ``ImportError`` or a
        :class:`~tjap.core.errors.TjapError` is recorded as the candidate's ``error``.
    predicted_s : float or callable
        Seconds it is predicted to take (or a function of nothing that predicts them when the
        candidate's turn comes): with a time left, a candidate predicted to take more
        is not run (:attr:`Pick.skipped`), unless it is ``required`` and nothing has a solution;
        one predicted to take no time (the default, 0) always runs.
    admits : callable, optional
        ``admits(result) -> bool``: whether the instance's model allows the result's solution,
        asked only of a result that would win.
    required : bool
        Run even past the time left when no result so far has a solution (the instant rule).
    """

    name: str
    run: Callable[[float | None, Any], Any]
    predicted_s: float | Callable[[], float] = 0.0
    admits: Callable[[Any], bool] | None = None
    required: bool = False


@dataclass(frozen=True)
class Pick(Record):
    """What :func:`best_of` found: the ``best`` result (None when no candidate has a solution),
    the ``winner``'s name, each candidate's ``cost``, ``status`` and ``runtime_s`` (with
    ``error`` when it could not run or was not run) in the order run, and the candidates
    ``skipped`` as predicted not to end in the time left."""

    best: Any = None
    winner: str | None = None
    candidates: dict = field(default_factory=dict)
    skipped: tuple = ()

    def to_dict(self) -> dict:
        return {"winner": self.winner, "candidates": self.candidates, "skipped": list(self.skipped)}


def entry(result, error: str | None = None, runtime_s: float = 0.0) -> dict:
    """One candidate's line of :attr:`Pick.candidates`."""
    if result is None or not result.has_solution:
        info = getattr(result, "info", None) or {}
        return {
            "cost": None,
            "status": result.status.value if result is not None else "ERROR",
            "runtime_s": float(result.runtime_s) if result is not None else runtime_s,
            "error": error or info.get("reason"),
        }
    return {
        "cost": float(result.objective),
        "status": result.status.value,
        "runtime_s": float(result.runtime_s),
    }


def best_of(
    candidates: Sequence[Candidate],
    *,
    incumbent=None,
    incumbent_name: str | None = None,
    time_left_s: float | None = None,
) -> Pick:
    """The cheapest feasible result of ``candidates``, run in order (ties: the earlier).

    ``incumbent``, a result in hand (a method's own, cut short), is the best to beat and wins
    ties; it is named ``incumbent_name`` when it stays best. With ``time_left_s`` a candidate
    predicted (:attr:`Candidate.predicted_s`) to take longer than the time then left is
    skipped. Returns a :class:`Pick`."""
    started = time.perf_counter()
    best = incumbent if incumbent is not None and incumbent.has_solution else None
    winner = incumbent_name if best is not None else None
    entries: dict[str, dict] = {}
    skipped: list[str] = []
    predicted = 0.0
    for candidate in candidates:
        left = None if time_left_s is None else time_left_s - (time.perf_counter() - started)
        if left is not None:  # predicted only when there is a time left to compare with
            given = candidate.predicted_s
            predicted = float(given() if callable(given) else given)
        if left is not None and predicted and predicted > left:
            if not (candidate.required and best is None):
                skipped.append(candidate.name)
                continue
        tick = time.perf_counter()
        try:
            result = candidate.run(left, best)
        except NotRun as why:
            entries[candidate.name] = {
                "cost": None,
                "status": "NOT_RUN",
                "runtime_s": 0.0,
                "error": str(why),
            }
            continue
        except (ImportError, TjapError) as exc:  # a missing solver, too large a table ...
            error = f"not installed: {exc}" if isinstance(exc, ImportError) else str(exc)
            entries[candidate.name] = entry(None, error, time.perf_counter() - tick)
            continue
        entries[candidate.name] = entry(result)
        if not result.has_solution:
            continue
        if best is not None and result.objective >= best.objective - TOLERANCE:
            continue  # the admission check (it may be slow) only for a gain
        if candidate.admits is None or candidate.admits(result):
            best, winner = result, candidate.name
    return Pick(best, winner, entries, tuple(skipped))


__all__ = ["TOLERANCE", "Candidate", "NotRun", "Pick", "best_of", "entry"]
