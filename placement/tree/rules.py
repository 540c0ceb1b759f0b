"""The constructive rules every window result is never worse than.

A result cut short by its time limit (or an exact method that gave up) keeps its solution only
when no cheap rule its model admits does better: :func:`no_worse_than_rules`, one use of the
portfolio (:func:`tjap.core.portfolio.best_of`); :func:`tjap.solve` calls it on such results
(``auto`` when no exact method fits among them: its own answer is then Seq). The rules are asked for by
name (:func:`tjap.core.registry.solver`); each is predicted (:func:`predicted_rule_s`) so that
the comparison keeps the time limit on very large trees.
"""

from __future__ import annotations

import time
from dataclasses import replace

from tjap.core.errors import InvalidInputError
from tjap.core.portfolio import Candidate, best_of
from tjap.core.registry import get

#: The cheap constructive rules a result that is not proven (cut short by its time limit, or an
#: exact method that gave up) is compared with, in tie-breaking order.
RULES = ("seq", "slurm-tree", "freeform-greedy")

#: Seconds past ``time_limit_s`` that the comparison with the rules may reach (the contract
#: allows 10 % + 0.5 s in all): a rule predicted to end later is not run.
RULES_GRACE_S = 0.25

#: Predicted seconds of each rule (warm, one core, benchmarks/large_trees.py: 0.15 s and 1.2 s
#: for slurm-tree on 100,000 and 1,000,000 nodes, 0.05 s and 0.7 s for freeform-greedy, seq
#: a few ms): per node of the tree x job (slurm-tree scans every switch and node per job), per
#: idle node (freeform-greedy, seq). The first run in a process adds :data:`RULE_FIRST_RUN_S`
#: (imports, compiled kernels loaded from the cache); predictions are taken
#: :data:`RULE_MARGIN` times.
RULE_S_PER_NODE_JOB = {"slurm-tree": 3e-8}
RULE_S_PER_IDLE = {"seq": 2e-8, "freeform-greedy": 1.4e-6}
RULE_FIRST_RUN_S = 0.25
RULE_MARGIN = 1.5
#: Predicted seconds per idle node x job of the check that a rule's placement is admitted:
#: DCAS (1.6 s on 500,000 idle nodes and 40 jobs) and SCAS (0.07 s there).
ADMITS_S_PER_IDLE_JOB = {"dcas": 1e-7, "scas": 5e-9, "free": 0.0}

_RULES_RUN: set = set()  # the rules run in this process (their first run costs more)
#: How much slower than predicted the last rule measured ran (at least 1, at most 10; halved at
#: each comparison, so that one slow run is soon forgotten): a loaded machine's rules are
#: predicted slower too.
_SLOWDOWN = {"factor": 1.0}


def rules_time_left(time_limit_s, started: float) -> float | None:
    """What the comparison with the rules has left of a solve started at ``started`` (a
    ``time.perf_counter()``) under ``time_limit_s``: the limit and :data:`RULES_GRACE_S` less
    the time spent; None without a limit."""
    if time_limit_s is None:
        return None
    return time_limit_s + RULES_GRACE_S - (time.perf_counter() - started)


def _rule_s(name: str, window) -> float:
    """Predicted seconds of rule ``name`` alone on ``window``, on an idle core."""
    seconds = RULE_S_PER_NODE_JOB.get(name, 0.0) * window.topology.num_nodes * window.num_jobs
    seconds += RULE_S_PER_IDLE.get(name, 0.0) * window.num_idle
    return seconds + (RULE_FIRST_RUN_S if name not in _RULES_RUN else 0.0)


def predicted_rule_s(name: str, window, model: str = "") -> float:
    """Predicted seconds of rule ``name`` on ``window``, its admission check under ``model``
    included (see :data:`RULE_S_PER_NODE_JOB`), :data:`RULE_MARGIN` times, and slower when the
    last rule measured in this process ran slower than predicted (a loaded machine)."""
    seconds = _rule_s(name, window)
    if name != "seq" or (model == "dcas" and window.constrained):  # Seq's own steps are known
        seconds += ADMITS_S_PER_IDLE_JOB.get(model, 0.0) * window.num_idle * window.num_jobs
    return RULE_MARGIN * _SLOWDOWN["factor"] * seconds


def no_worse_than_rules(
    result, model: str, convention: str = "paper", seed: int = 0, *, time_left_s=None
):
    """``result``, or the cheapest of the constructive :data:`RULES` whose placement ``model``
    admits (``"scas"``: contiguous blocks of the idle sequence; ``"dcas"``: the dynamic
    contiguity rule; ``"free"``: any; ``""``: Seq only) when that is strictly cheaper, with
    ``info["fallback"]`` naming it; the status and the bound are kept.

    With ``time_left_s`` (what :func:`tjap.solve` has left of its time limit, see
    :func:`rules_time_left`), a rule predicted (:func:`predicted_rule_s`) to take longer than
    the time then left is not run, and ``info["rules_skipped"]`` names it: the comparison keeps
    the limit on very large windows (slurm-tree takes a second on a tree of a million nodes).
    Seq, instant, always runs when ``result`` has no solution. ``runtime_s`` counts the
    comparison's time. A result without a solution always takes the rule's."""
    from tjap.placement.tree.dcas import encode
    from tjap.placement.tree.scas import is_scas

    started = time.perf_counter()
    _SLOWDOWN["factor"] = max(1.0, 0.5 * _SLOWDOWN["factor"])
    window = result.window
    steps: dict = {}  # a DCAS rule's (order, starts), found by its admission check

    def is_dcas(rule) -> bool:
        try:
            steps[rule.method] = encode(window, rule.assignment)
        except InvalidInputError:
            return False
        return True

    admits = {
        "scas": lambda rule: is_scas(window, rule.assignment),
        "dcas": is_dcas,
        "free": lambda rule: True,
    }.get(model)
    names = list(RULES if admits is not None else RULES[:1])
    if window.constrained:  # the rules that keep the jobs' constraints
        names = [name for name in names if get("tree", name).constraints]

    def runner(name: str):
        def run(left, best):
            expected, tick = _rule_s(name, window), time.perf_counter()
            rule = get("tree", name).load()(window, convention=convention, seed=seed)
            if expected >= 0.05:  # long enough to tell how loaded the machine is
                _SLOWDOWN["factor"] = min(10.0, max(1.0, (time.perf_counter() - tick) / expected))
            _RULES_RUN.add(name)
            return rule

        return run

    def seq_admits(rule) -> bool:  # every model admits Seq's placement
        if model == "dcas" and not window.constrained:  # Seq's own steps
            steps[rule.method] = (list(range(window.num_jobs)), [0] * window.num_jobs)
        return True

    candidates = [
        Candidate(
            name,
            runner(name),
            predicted_s=lambda name=name: predicted_rule_s(name, window, model),
            admits=seq_admits if name == "seq" else admits,
            required=name == "seq",
        )
        for name in names
    ]
    pick = best_of(candidates, incumbent=result, incumbent_name="", time_left_s=time_left_s)
    info = dict(result.info)
    if pick.skipped:
        info["rules_skipped"] = list(pick.skipped)
    best = pick.best
    if best is None or best is result:
        return replace(
            result, runtime_s=result.runtime_s + time.perf_counter() - started, info=info
        )
    info["fallback"] = best.method
    if "order" in info and "starts" in info:  # a DCAS search's steps describe the assignment
        info["order"], info["starts"] = steps.get(best.method) or encode(window, best.assignment)
    return replace(
        result,
        assignment=best.assignment,
        objective=best.objective,
        runtime_s=result.runtime_s + time.perf_counter() - started,
        info=info,
    )


__all__ = [
    "RULES",
    "RULES_GRACE_S",
    "no_worse_than_rules",
    "predicted_rule_s",
    "rules_time_left",
]
