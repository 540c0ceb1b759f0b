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


def _free_in(window, level: int) -> np.ndarray:
    """Per domain id of ``level`` (switch ids): the seconds until its busy nodes are expected
    free (0: wholly idle before the window; inf: a busy node of unknown end), cached."""
    cache = window._block_cost_cache
    key = ("free-in", level)
    if key not in cache:
        domains = level_domains(window.topology, level)
        free_in = np.zeros(window.topology.num_switches)
        np.maximum.at(free_in, domains, window.busy_s)
        cache[key] = free_in
    return cache[key]


def domain_prices(window, job: Job) -> np.ndarray:
    """The term's price of each domain of its level for ``job``, in units of the weight W,
    indexed by domain id (:func:`~tjap.placement.tree.jobs.level_domains`); cached per run
    time, read-only."""
    level = window.fragmentation[1]
    cache = window._block_cost_cache
    runtime = HORIZON_S if job.runtime_s is None else float(job.runtime_s)
    key = ("prices", level, runtime)
    if key not in cache:
        with np.errstate(invalid="ignore"):  # inf - inf never arises: runtime is finite
            prices = np.maximum(0.0, runtime - _free_in(window, level)) / HORIZON_S
        prices.setflags(write=False)
        cache[key] = prices
    return cache[key]


def position_prices(window, job: Job) -> np.ndarray:
    """:func:`domain_prices` per position of Q (the price of the domain each idle node is in)."""
    level = window.fragmentation[1]
    cache = window._block_cost_cache
    runtime = HORIZON_S if job.runtime_s is None else float(job.runtime_s)
    key = ("prices-q", level, runtime)
    if key not in cache:
        domains = level_domains(window.topology, level)[window.idle_nodes]
        prices = np.ascontiguousarray(domain_prices(window, job)[domains])
        prices.setflags(write=False)
        cache[key] = prices
    return cache[key]
