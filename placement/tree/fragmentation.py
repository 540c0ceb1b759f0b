"""The prices of the objective's fragmentation term: what a job pays for each domain of the
term's level that it touches (weight W, level L: :attr:`Window.fragmentation`).

On a window that knows nothing of time the price is W for a domain that was wholly idle before
the window, 0 for one already in part busy: W per whole free domain a job breaks into.

With time it prices what whole domains are for, the time they stay whole. A job expected to run
``r`` seconds (its ``runtime_s``, e.g. its time limit) on a domain whose busy nodes are expected
free in ``b`` seconds (the window's ``busy_s``: the largest of the domain's nodes; 0 for a
wholly idle domain; a busy node of unknown end never frees) keeps that domain from being whole
for ``max(0, r - b)`` seconds more than it would have been, and pays W per :data:`HORIZON_S` of
them. A job without ``runtime_s`` counts as running :data:`HORIZON_S`, and a window without
``busy_s`` knows no busy node's end, so the two reduce to the first rule: W per whole domain,
nothing for the others. A short job that fills a rack which frees soon after it pays little; a
long job that breaks into a whole rack, or into one that was about to free, pays most.

Every exact model and heuristic that takes the term reads its prices from here (per job, per
domain of the level, or per position of the idle sequence Q), so they price a placement alike
(:func:`tjap.placement.tree.arcs.job_penalty` checks it from the node sets).
"""

from __future__ import annotations

import numpy as np

from tjap.placement.tree.jobs import Job, level_domains

#: The seconds of a domain kept from being whole that cost one fragmentation weight (a day); a
#: job without ``runtime_s`` counts as running this long.
HORIZON_S = 86_400.0


def _cached(window, key, make) -> np.ndarray:
    """``make()`` once per window and ``key``, kept read-only in the window's cache."""
    cache = window._block_cost_cache
    if key not in cache:
        value = make()
        value.setflags(write=False)
        cache[key] = value
    return cache[key]


def _domains(window) -> np.ndarray:
    """The domain id of every node at the term's level."""
    level = window.fragmentation[1]
    return _cached(window, ("term-domains", level), lambda: level_domains(window.topology, level))


def _free_in(window) -> np.ndarray:
    """Per domain id of the term's level (switch ids): the seconds until its busy nodes are
    expected free (0: wholly idle before the window; inf: a busy node of unknown end)."""

    def make():
        free_in = np.zeros(window.topology.num_switches)
        np.maximum.at(free_in, _domains(window), window.busy_s)
        return free_in

    return _cached(window, ("free-in", window.fragmentation[1]), make)


def _runtime(job: Job) -> float:
    return HORIZON_S if job.runtime_s is None else float(job.runtime_s)


def domain_prices(window, job: Job) -> np.ndarray:
    """The term's price of each domain of its level for ``job``, in units of the weight W,
    indexed by domain id (:func:`~tjap.placement.tree.jobs.level_domains`); cached per run
    time, read-only."""
    runtime = _runtime(job)
    return _cached(
        window,
        ("prices", window.fragmentation[1], runtime),
        lambda: np.maximum(0.0, runtime - _free_in(window)) / HORIZON_S,  # runtime is finite
    )


def position_prices(window, job: Job) -> np.ndarray:
    """:func:`domain_prices` per position of Q (the price of the domain each idle node is in)."""
    return _cached(
        window,
        ("prices-q", window.fragmentation[1], _runtime(job)),
        lambda: np.ascontiguousarray(
            domain_prices(window, job)[_domains(window)[window.idle_nodes]]
        ),
    )
