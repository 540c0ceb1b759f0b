"""Simulated annealing and large-neighbourhood search over DCAS solutions of a window.

:func:`anneal` is the one loop (Algorithm 1 of seed 002): start from an initial solution (Seq by
default, or any Result), remove 1..n^D random jobs, re-insert them one by one with a repair operator
in the sequence updated after the kept jobs, accept by the Metropolis rule (or only improvements),
cool exponentially. The loop runs compiled in Numba; operators are chosen by
:mod:`tjap.heuristics.tree.operators`.

Registered in :func:`tjap.solve` as:

- ``"sa"`` (:func:`solve_sa`): by default the best hand-written configuration measured
  (``preset="best"``: greedy repair, n^D = 5, T_max 25000, 1000 iterations; benchmarks/RESULTS.md,
  Table III's "SA-1000 best"). ``preset="paper"`` is the paper's Table I (T_max 2500, T_min 2.5,
  500 iterations, n^D = 2, q = 100, ``repair="paper"``), ``preset="published"`` the published
  code's setting (T_max 25000, re-insertion in window order).
- ``"lns"`` (:func:`solve_lns`): start from the exact SCAS optimum and descend with the greedy
  repair.

Both run on any switch tree (a :class:`~tjap.placement.tree.fat_tree.FatTree` or a general
:class:`~tjap.placement.tree.topology.Topology`): the kernels cost blocks through the tree's count form.
The learned repair (``"nsa"``, :mod:`tjap.learned.tree.policy`) is the exception: its features are the paper's
fat-tree edge switches and pods.

Both take windows whose jobs carry constraints (:mod:`tjap.placement.tree.jobs`): they then
search the DCAS solutions under the constraints (defined in :mod:`tjap.placement.tree.dcas`: a
job's run of the remaining sequence must lie in one domain for ``within`` and ``slurm_rule``,
a segmented job takes the segmented walk of :mod:`tjap.placement.tree.arcs` on the remaining
sequence, an ``exclusive`` job's domains hold no other job's nodes) and minimise
:func:`~tjap.placement.tree.result.objective_of`, the CH cost plus the prefer and fragmentation
terms. The start is feasible: Seq under the constraints
(:func:`~tjap.placement.tree.arcs.first_fit`, or the exact SCAS optimum when it finds no
place) for ``sa``, the exact SCAS optimum under the constraints for ``lns``. A move that leaves
a job without an allowed start is rejected; a kept job whose start is no longer allowed once
the removed jobs are gone is placed again by the repair. So every solution the loop holds is
feasible, and the result is never worse than the start. The greedy, paper and uniform repairs
take constraints (paper and uniform: the first allowed start at or after the drawn one); the
look-ahead and learned repairs do not.
"""

from __future__ import annotations

import time

import numpy as np

from tjap.core.backends import Deadline, Slices
from tjap.core.errors import InvalidInputError, check_int
from tjap.core.registry import solver
from tjap.heuristics.tree import _kernels
from tjap.heuristics.tree.operators import (
    REINSERT,
    ImprovingOnly,
    Metropolis,
    RandomDestroy,
    Repair,
    make_repair,
)
from tjap.placement.tree.cost import convention_code
from tjap.placement.tree.dcas import Arrays, Rules, decode, encode
from tjap.placement.tree.result import Result, Status, objective_of
from tjap.placement.tree.window import Window

#: The repairs that take job constraints (:func:`tjap.heuristics.tree._kernels.constrained_start`).
CONSTRAINED_REPAIRS = (_kernels.REPAIR_PAPER, _kernels.REPAIR_UNIFORM, _kernels.REPAIR_GREEDY)

#: Named settings of every option of :func:`solve_sa`; explicit options override them.
#:
#: - ``"best"`` (the default): the best hand-written configuration measured, Table III's
#:   "SA-1000 best" in benchmarks/RESULTS.md (greedy repair, every job of a capped window
#:   removable, largest first, T_max 25000): 0.3-0.6 % above the SCAS optimum on the paper's
#:   stream, against 2.2-3.7 % for the paper's settings at 1000 iterations.
#: - ``"paper"``: the paper's Table I (T_max 2500, T_min 2.5, 500 iterations, n^D = 2, q = 100)
#:   with its repair (a start drawn among the first q positions), largest first.
#: - ``"published"``: the authors' published code, which produced the paper's tables: as
#:   ``"paper"`` with T_max 25000 and removed jobs re-inserted in window order (its cost
#:   convention is ``convention="published"``, given separately).
SA_PRESETS = {
    "best": {
        "iterations": 1000,
        "repair": "greedy",
        "q": 100,
        "max_remove": 5,
        "t_max": 25000.0,
        "t_min": 2.5,
        "reinsert": "largest-first",
        "initial": "seq",
    },
    "paper": {
        "iterations": 500,
        "repair": "paper",
        "q": 100,
        "max_remove": 2,
        "t_max": 2500.0,
        "t_min": 2.5,
        "reinsert": "largest-first",
        "initial": "seq",
    },
    "published": {
        "iterations": 500,
        "repair": "paper",
        "q": 100,
        "max_remove": 2,
        "t_max": 25000.0,
        "t_min": 2.5,
        "reinsert": "window-order",
        "initial": "seq",
    },
}


#: Predicted seconds of one move of the loop per idle node, by repair, for each job a move
#: re-inserts (a move removes (1 + max_remove) / 2 on average): the greedy, look-ahead and
#: learned repairs try every start. Measured on one core on the windows of
#: ``python -m benchmarks.large_trees`` (50,000 and 500,000 idle nodes, 40 jobs): greedy 2.5e-8
#: s per move per idle node at max_remove 5, look-ahead 5.7e-7, paper and uniform 2.5e-10; on
#: a window with constraints 2.0e-6 (greedy) and 1.7e-7 (paper); the learned repair with its
#: look-ahead about 1 ms per move on the paper's fat-tree (1,000 idle nodes).
MOVE_S_PER_IDLE_JOB = {
    _kernels.REPAIR_GREEDY: 8.5e-9,
    _kernels.REPAIR_LOOKAHEAD: 2e-7,
    _kernels.REPAIR_LEARNED: 3.5e-7,
    _kernels.REPAIR_PAPER: 1e-10,
    _kernels.REPAIR_UNIFORM: 1e-10,
}
#: The same on a window with constraints (every move tries every start).
CONSTRAINED_MOVE_S_PER_IDLE_JOB = {
    _kernels.REPAIR_GREEDY: 7e-7,
    _kernels.REPAIR_PAPER: 6e-8,
    _kernels.REPAIR_UNIFORM: 6e-8,
}
#: Longest a kernel call is predicted to take. On a window where one chunk of iterations (the
#: RNG's unit) is predicted to take longer (a tree of a million nodes: 3 s for 256 greedy moves),
#: the loop runs in slices of a power-of-two part of a chunk, each with a seed of its own, so
#: that a time limit is kept and a Ctrl-C or SIGTERM is handled within about that long; the
#: slices follow from the window alone, so the same seed still gives the same result.
SLICE_TARGET_S = 0.5


def slice_unit(window: Window, repair: Repair, max_remove: int, chunk: int) -> int:
    """Iterations per kernel call at most: ``chunk``, or the largest power-of-two part of it
    predicted (:data:`MOVE_S_PER_IDLE_JOB`) to take at most :data:`SLICE_TARGET_S` (at least
    one move)."""
    rates = CONSTRAINED_MOVE_S_PER_IDLE_JOB if window.constrained else MOVE_S_PER_IDLE_JOB
    move_s = rates.get(repair.code, 1e-6) * window.num_idle * (1 + max_remove) / 2
    unit = chunk
    while unit > 1 and unit * move_s > SLICE_TARGET_S:
        unit //= 2
    return unit


def _slice_seed(seed: int, done: int, chunk: int) -> int:
    """The seed of a slice that starts ``done % chunk`` moves into a chunk: the kernel seeds
    its RNG from (seed, chunk) at a call's first move, so a later slice of the chunk gets a
    seed of its own (a chunk's first slice keeps ``seed``)."""
    offset = done % chunk
    return seed if offset == 0 else (seed + 0x9E3779B9 * offset) % 4294967296


def preset_options(preset, presets: dict, **given) -> dict:
    """The options of ``presets[preset]``, each replaced by the value in ``given`` unless that is
    None (not given)."""
    if not isinstance(preset, str) or preset not in presets:
        raise InvalidInputError(f"preset must be one of {', '.join(presets)}, got {preset!r}")
    chosen = presets[preset]
    return {name: chosen[name] if value is None else value for name, value in given.items()}


def initial_solution(
    window: Window, initial, convention: str, seed: int, time_limit_s: float | None = None
):
    """(order, starts, label, stopped) for ``initial``: "seq", the name of an exact method
    (a method of :func:`tjap.registry.methods`), a solver callable (given ``time_limit_s`` when there
    is one), a Result or an assignment; ``stopped``: the solver was cut short by its limit.

    On a window with constraints, "seq" is Seq under them, and where it finds no place the exact
    SCAS optimum (``"auto"``); order and starts are None when that finds none either."""
    if window.constrained and (initial is None or initial == "seq"):
        seq = solver("seq")(window, seed=seed, convention=convention)
        initial = seq if seq.has_solution else "auto"
    elif initial is None or initial == "seq":
        return np.arange(window.num_jobs), np.zeros(window.num_jobs, np.int64), "seq", False
    if isinstance(initial, str) or callable(initial):
        limit = {} if time_limit_s is None else {"time_limit_s": time_limit_s}
        initial = solver(initial)(window, seed=seed, convention=convention, **limit)
    assignment = initial.assignment if isinstance(initial, Result) else initial
    label = initial.method if isinstance(initial, Result) else "given"
    stopped = isinstance(initial, Result) and initial.status is Status.TIME_LIMIT
    if isinstance(initial, Result) and not initial.has_solution:
        return None, None, label, stopped
    order, starts = encode(window, assignment)
    return np.array(order, np.int64), np.array(starts, np.int64), label, stopped


def anneal(
    window: Window,
    *,
    iterations: int = 500,
    repair: Repair | str = "paper",
    destroy: RandomDestroy | None = None,
    accept=None,
    reinsert: str = "largest-first",
    initial=None,
    convention: str = "paper",
    time_limit_s: float | None = None,
    seed: int = 0,
    method: str = "sa",
) -> Result:
    """Run the DCAS search loop on one window and return the best solution found.

    The loop's own defaults are the paper's operators (Table I); :func:`solve_sa` and
    :func:`solve_lns` choose the configurations that :func:`tjap.solve` runs.

    Parameters
    ----------
    window : Window
        The idle nodes and the jobs to place.
    iterations : int, default 500
        Moves (t_max in the paper); the cooling schedule spans them.
    repair : Repair or {"paper", "uniform", "greedy", "lookahead"}, default "paper"
        How a re-inserted job chooses its start (:mod:`tjap.heuristics.tree.operators`); a name builds the
        operator with its defaults (q = 100).
    destroy : RandomDestroy, default RandomDestroy(max_remove=2)
        How many jobs a move removes (1..max_remove, uniformly).
    accept : Metropolis or ImprovingOnly, default Metropolis(2500, 2.5)
        Acceptance rule and cooling schedule.
    reinsert : {"largest-first", "window-order"}, default "largest-first"
        Order of re-insertion: descending size (the paper) or window order (its code).
    initial : None, str, callable, Result or assignment, default None
        Where the search starts, by default Seq. A name of a method of :func:`tjap.registry.methods`
        (``"dp"``, ``"auto"``...) or a callable ``solver(window, *, seed, convention)`` is
        solved first with the same seed.
    convention : {"paper", "published"}, default "paper"
        Cost convention, see :mod:`tjap.placement.tree.cost`.
    time_limit_s : float, optional
        Stop once exceeded, between chunks of 256 iterations (a chunk of the learned repair
        takes milliseconds; 16 on a window with constraints, whose moves try every start), or
        on a window so large that a chunk takes longer than :data:`SLICE_TARGET_S`, between
        slices of a chunk (:func:`slice_unit`); a call is not started when the last one took
        longer than the time left. An initial solution from a solver gets half of it.
    seed : int, default 0
        Seed of the loop's generator; the same seed gives the same Result.
    method : str, default "sa"
        The method name recorded in the Result.

    Returns
    -------
    Result
        The best solution found: status FEASIBLE, or TIME_LIMIT when the limit cut the
        iterations (or the initial solver) short (``info["stopped"]`` says so); ``info`` holds the initial solution and its
        cost, accepted and improving moves, the repair's name, the best (order, starts) and the
        loop's iterations per second.
    """
    started = time.perf_counter()
    check_int("iterations", iterations, 0)
    if reinsert not in REINSERT:
        raise InvalidInputError(f"reinsert must be one of {', '.join(REINSERT)}, got {reinsert!r}")
    repair = make_repair(repair)
    destroy = destroy or RandomDestroy()
    accept = accept or Metropolis()
    code = convention_code(convention)
    constrained = window.constrained
    if constrained and repair.code not in CONSTRAINED_REPAIRS:
        raise InvalidInputError(
            f"repair {repair.name!r} does not take job constraints; use "
            "'greedy', 'paper' or 'uniform', or give plain job sizes"
        )
    rules = Rules.of(window) if constrained else None
    a = rules.arrays if constrained else Arrays(window)
    deadline = Deadline(time_limit_s, started)
    cur_order, cur_starts, label, initial_stopped = initial_solution(
        window,
        initial,
        convention,
        seed,
        None if time_limit_s is None else max(0.5 * deadline.left(), 1e-3),
    )
    if cur_order is None:  # constraints that no start keeps
        info = {
            "initial": label,
            "no_start": f"{label} found no placement that keeps the jobs' constraints",
        }
        if initial_stopped:
            info["stopped"] = "time limit (initial solution)"
        return Result.from_assignment(
            window,
            (),
            status=Status.TIME_LIMIT if initial_stopped else Status.INFEASIBLE,
            method=method,
            convention=convention,
            runtime_s=time.perf_counter() - started,
            seed=seed,
            iterations=0,
            info=info,
        )
    args = (*a.tree, code, a.sizes)
    if constrained:
        chunk, repair_arg, rules_arg = _kernels.CONSTRAINED_CHUNK, repair.code, (rules.args,)
        cur = sum(rules.place(cur_order, cur_starts, code)[1].tolist())
        start_steps = (cur_order.copy(), cur_starts.copy())
    else:
        # no rules given: the loop's kind without constraints (rules omitted, not None, so the
        # callers that leave it out share one compiled loop)
        chunk, rules_arg = _kernels.CHUNK, ()
        repair_arg = repair.kernel_argument(window, a)  # its kind is chosen by type
        cur = _kernels.solution_cost(*args, cur_order, cur_starts)
    initial_cost = cur
    best, best_order, best_starts = cur, cur_order.copy(), cur_starts.copy()
    accepted = improved = done = 0
    loop_s = 0.0
    stopped = None
    # the loop runs in slices of whole chunks (the RNG is re-seeded per chunk inside the kernel,
    # so the trajectory is the same however it is sliced): one chunk at a time under a time
    # limit, else slices of about 0.1 s (the first 4096 iterations: the usual runs in one call;
    # 256 with the learned repair, whose iterations take up to about 1 ms; 16 on a window with
    # constraints), so that a Ctrl-C is seen between them
    slices = Slices(chunk, first=1 if constrained or repair.code == _kernels.REPAIR_LEARNED else 16)
    # on a very large window, slices of part of a chunk (see SLICE_TARGET_S), one per call
    unit = slice_unit(window, repair, destroy.max_remove, chunk)
    last_s, calls = 0.0, 0  # under a limit, no call is started that the last one says overruns
    while done < iterations:
        left = deadline.left()
        if deadline.expired() or (left is not None and calls > 1 and last_s > left):
            stopped = "time limit"
            break
        step = unit if unit < chunk else chunk if time_limit_s is not None else slices.size
        end = min(done + step, iterations)
        tick = time.perf_counter()
        cur, best, acc, imp = _kernels.anneal(
            *args,
            cur_order,
            cur_starts,
            cur,
            best_order,
            best_starts,
            best,
            done,
            end,
            iterations,
            float(accept.t_max),
            float(accept.t_min),
            destroy.max_remove,
            repair_arg,
            repair.q,
            REINSERT[reinsert],
            accept.code,
            seed if unit == chunk else _slice_seed(seed, done, chunk),
            *rules_arg,
        )
        last_s, calls = time.perf_counter() - tick, calls + 1  # the first call loads kernels
        slices.took(last_s)
        loop_s += last_s
        accepted, improved, done = accepted + acc, improved + imp, end
    if stopped is None and initial_stopped:
        stopped = "time limit (initial solution)"
    assignment = decode(window, best_order, best_starts)
    if constrained and (
        objective_of(window, assignment, convention)
        > objective_of(window, decode(window, *start_steps), convention)
    ):
        best_order, best_starts = start_steps  # the loop's sums gained by rounding alone
        assignment = decode(window, best_order, best_starts)
    info = {
        "initial": label,
        "initial_cost": float(initial_cost),
        "accepted": int(accepted),
        "improved": int(improved),
        "repair": repair.name,
        "order": best_order.tolist(),
        "starts": best_starts.tolist(),
        "iterations_per_s": done / loop_s if loop_s > 0 and done else None,
    }
    if stopped:
        info["stopped"] = stopped
    return Result.from_assignment(
        window,
        assignment,
        status=Status.TIME_LIMIT if stopped else Status.FEASIBLE,
        method=method,
        convention=convention,
        runtime_s=time.perf_counter() - started,
        seed=seed,
        iterations=done,
        info=info,
    )


def solve_sa(
    window: Window,
    *,
    convention="paper",
    time_limit_s=None,
    seed=0,
    preset="best",
    iterations=None,
    repair=None,
    q=None,
    max_remove=None,
    t_max=None,
    t_min=None,
    reinsert=None,
    initial=None,
) -> Result:
    """DCAS simulated annealing: by default the best hand-written configuration measured.

    Every option left out (None) takes its value from ``preset``; an option given explicitly
    overrides it. ``tjap.solve(window, "sa", preset="paper")`` is the paper's SA (Table I).

    Parameters
    ----------
    window : Window
        The idle nodes and the jobs to place.
    convention : {"paper", "published"}, default "paper"
        Cost convention, see :mod:`tjap.placement.tree.cost` (not part of a preset).
    time_limit_s : float, optional
        Stop early (between chunks of 256 iterations, 16 with constraints) once exceeded; by
        default no limit.
    seed : int, default 0
        Seed of the loop's generator; the same seed gives the same Result.
    preset : {"best", "paper", "published"}, default "best"
        Named settings of the options below (:data:`SA_PRESETS`). ``"best"``: the best
        hand-written configuration measured (benchmarks/RESULTS.md, Table III's "SA-1000 best":
        0.3-0.6 % above the SCAS optimum on the paper's stream). ``"paper"``: the paper's
        Table I with its repair. ``"published"``: the published code, which produced the
        paper's tables (pass ``convention="published"`` too for its cost convention).
    iterations : int, optional
        Moves; the cooling schedule spans them. best 1000, paper 500, published 500.
    repair : {"paper", "uniform", "greedy", "lookahead"} or Repair, optional
        How a re-inserted job chooses its start: ``"greedy"`` the start of the cheapest block,
        ``"lookahead"`` the best of 16 candidate starts, each scored with the jobs still to
        re-insert placed greedily after it (:class:`~tjap.heuristics.tree.operators.LookaheadRepair`,
        about 10x the time per move), ``"paper"`` a start drawn uniformly among the first ``q``
        positions, ``"uniform"`` a start drawn over every position. best "greedy", paper
        "paper", published "paper".
    q : int, optional
        Positions ``repair="paper"`` draws from (ignored by the other repairs; at least 1).
        100 in every preset.
    max_remove : int, optional
        n^D: a move removes 1..max_remove jobs, uniformly. best 5 (every job of a window capped
        at 5), paper 2, published 2.
    t_max, t_min : float, optional
        Metropolis temperatures, cooled exponentially from t_max to t_min over the iterations.
        t_max: best 25000, paper 2500, published 25000; t_min 2.5 in every preset.
    reinsert : {"largest-first", "window-order"}, optional
        Order in which removed jobs are re-inserted: by descending size (the paper's text) or
        in window order (its code). best and paper "largest-first", published "window-order".
    initial : str, callable, Result or assignment, optional
        Where the search starts: ``"seq"`` (the paper's sequential assignment, in every
        preset), an exact method's name (``"dp"``, ``"auto"``... of
        a method of :func:`tjap.registry.methods`) or a solver callable, solved first with the same
        seed, or a given Result or assignment.

    Returns
    -------
    Result
        The best solution found; see :func:`anneal`.

    Raises
    ------
    InvalidInputError
        An unknown preset, repair or reinsert order, or an option out of range.
    """
    o = preset_options(
        preset,
        SA_PRESETS,
        iterations=iterations,
        repair=repair,
        q=q,
        max_remove=max_remove,
        t_max=t_max,
        t_min=t_min,
        reinsert=reinsert,
        initial=initial,
    )
    return anneal(
        window,
        iterations=o["iterations"],
        repair=make_repair(o["repair"], o["q"]),
        destroy=RandomDestroy(o["max_remove"]),
        accept=Metropolis(o["t_max"], o["t_min"]),
        reinsert=o["reinsert"],
        initial=o["initial"],
        convention=convention,
        time_limit_s=time_limit_s,
        seed=seed,
        method="sa",
    )


def solve_lns(
    window: Window,
    *,
    convention="paper",
    time_limit_s=None,
    seed=0,
    iterations=500,
    repair="greedy",
    max_remove=2,
    initial="auto",
) -> Result:
    """DCAS descent from the exact SCAS optimum with the greedy repair (large-neighbourhood
    search): the best measured search, at or below the SCAS optimum on every window.

    Moves are accepted only when they do not worsen the current cost; removed jobs are
    re-inserted largest first. Its defaults are Table III's "LNS-500" (benchmarks/RESULTS.md:
    0.05-0.08 % below the SCAS optimum on average). The best SA's destroy (n^D = 5) measured
    better for it on one layout and worse on the other (benchmarks/sa_defaults.py), so it keeps
    n^D = 2.

    Parameters
    ----------
    window : Window
        The idle nodes and the jobs to place.
    convention : {"paper", "published"}, default "paper"
        Cost convention, see :mod:`tjap.placement.tree.cost`.
    time_limit_s : float, optional
        Stop early (between chunks of 256 iterations, 16 with constraints) once exceeded; by
        default no limit.
    seed : int, default 0
        Seed of the loop's generator; the same seed gives the same Result.
    iterations : int, default 500
        Moves.
    repair : {"greedy", "paper", "uniform"} or Repair, default "greedy"
        How a re-inserted job chooses its start (see :func:`solve_sa`; ``"paper"`` draws among
        the first 100 positions).
    max_remove : int, default 2
        A move removes 1..max_remove jobs, uniformly.
    initial : str, callable, Result or assignment, default "auto"
        Where the descent starts: by default the exact SCAS optimum (``"auto"``: dp, or SCIP on
        a large window), so the result is never above it; otherwise as in :func:`solve_sa`.

    Returns
    -------
    Result
        The best solution found; see :func:`anneal`.
    """
    return anneal(
        window,
        iterations=iterations,
        repair=make_repair(repair),
        destroy=RandomDestroy(max_remove),
        accept=ImprovingOnly(),
        reinsert="largest-first",
        initial=initial,
        convention=convention,
        time_limit_s=time_limit_s,
        seed=seed,
        method="lns",
    )
