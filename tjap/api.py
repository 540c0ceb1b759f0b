"""``tjap.solve(window, method=...)``: one entry point over every seed-002 window solver.

Methods are the ``"tree"`` entries of :mod:`tjap.registry`; add more with
:func:`tjap.registry.register`. Solvers are imported when first used, so ``import tjap`` stays
light.
"""

from __future__ import annotations

import time
from dataclasses import replace

from tjap.core.errors import MAX_SEED, InvalidInputError
from tjap.placement.tree.rules import (  # noqa: F401  (re-exported: tjap.api.RULES ...)
    RULES,
    RULES_GRACE_S,
    no_worse_than_rules,
    predicted_rule_s,
    rules_time_left,
)
from tjap.registry import get

#: Longest time limit accepted (SCIP refuses more than 1e20 s); None means no limit.
MAX_TIME_LIMIT_S = 1e9


def solve(
    window,
    method: str = "auto",
    *,
    time_limit_s: float | None = None,
    seed: int = 0,
    convention: str = "paper",
    **options,
):
    """Solve one window.

    Parameters
    ----------
    window : Window
        The idle nodes and the jobs to place (:class:`tjap.placement.tree.window.Window`).
    method : str
        One of ``tjap.methods()``; ``tjap methods`` lists them with what they compute.

        - ``auto`` (default): exact SCAS where it is affordable, never unbounded: ``dp`` when
          its table is small, else ``scip`` when the window is within measured size rules (or,
          with a time limit, predicted to fit it); otherwise, or when cut short, the best of the
          constructive rules (``seq``, ``slurm-tree``, ``freeform-greedy``).
          ``info["auto"]`` says which ran and why.
        - ``dp``: exact SCAS by dynamic programming (``max_cells=``).
        - ``scip``, ``cpsat``: exact SCAS set packing (``formulation="set-packing" | "paper"``;
          cpsat also ``workers=``); ``scip-paper``, ``cpsat-paper``: the paper's formulation.
        - ``freeform``: exact minimum cost without contiguity (``solver="scip" | "cpsat"``,
          ``warm_start=`` a Result or assignment, ``workers=``).
        - ``freeform-greedy``, ``seq``: fast heuristics without options.
        - ``sa``: DCAS simulated annealing, by default the best configuration measured
          (``preset="best"``: greedy repair, n^D = 5, T_max 25000, 1000 iterations);
          ``preset="paper"`` is the paper's Table I, ``preset="published"`` its published code.
          Options (each overrides the preset's): ``iterations=``, ``repair=``, ``q=``,
          ``max_remove=``, ``t_max=``, ``t_min=``, ``reinsert=``, ``initial=``; see
          :func:`tjap.heuristics.tree.anneal.solve_sa`.
        - ``lns``: DCAS descent from the SCAS optimum with the greedy repair (``iterations=``,
          ``repair=``, ``max_remove=``, ``initial=``); see :func:`tjap.heuristics.tree.anneal.solve_lns`.
        - ``nsa``: neural SA, the SA loop with a trained repair, by default the best settings
          measured (``preset="best"``: the best SA's loop, 1000 iterations, the shipped weights
          trained in it for ``convention``, and the look-ahead over 32 starts the policy
          proposes); ``preset="paper"`` is the paper's NSA (Table I loop, the shipped CNN-3, no
          look-ahead), ``preset="published"`` its published code's loop. Options (each
          overrides the preset's): ``weights=``, ``iterations=``, ``max_remove=``, ``t_max=``,
          ``t_min=``, ``reinsert=``, ``initial=``, ``sample=``, ``lookahead=``; ``info`` records
          the preset, weights and look-ahead that ran; see :func:`tjap.learned.tree.policy.solve_nsa`.
    time_limit_s : float, optional
        Wall-clock limit, honoured by every method within 10 % + 0.5 s, building models
        included (importing a solver package or loading weights the first time in a process is
        not counted where it happens before the method's clock starts). A method the limit cuts
        short returns status TIME_LIMIT with the best solution it found, never worse than the
        constructive rules its model admits (:data:`RULES`: ``seq`` always, ``slurm-tree`` and
        ``freeform-greedy`` where the placement is allowed: see :func:`no_worse_than_rules`;
        ``info["fallback"]`` names the rule used instead when the method had nothing better),
        and its proven bound when it has one. ``auto`` chooses ``dp``, ``scip`` or the rules by
        predicted cost and says which and why in ``info["auto"]``.
    seed : int
        Random seed; the same seed gives the same Result.
    convention : {"paper", "published"}
        Cost convention, see :mod:`tjap.placement.tree.cost`.
    **options
        Method-specific options, listed above. An option the method does not take raises
        :class:`~tjap.core.errors.InvalidInputError` naming it and the valid ones.

    Returns
    -------
    Result
        A record (:class:`tjap.core.result.Record`) with the fields every result shares
        (:data:`tjap.core.result.COMMON_FIELDS`): ``method``, ``status`` (OPTIMAL, FEASIBLE,
        INFEASIBLE or TIME_LIMIT), ``objective`` (the assignment's hop cost under
        ``convention``), ``runtime_s`` and ``seed``; and the window's own: the ``assignment``
        (one tuple of node ids per job), the proven ``bound`` where known, ``convention``,
        ``iterations`` and ``info``.

    Examples
    --------
    >>> import tjap
    >>> window = tjap.Window(tjap.FatTree(k=4), idle_nodes=range(16), job_sizes=[3, 2])
    >>> result = tjap.solve(window, "dp")
    >>> result.status.value, result.is_feasible()
    ('OPTIMAL', True)
    """
    from tjap.placement.tree.cost import convention_code
    from tjap.placement.tree.window import Window

    if not isinstance(window, Window):
        raise InvalidInputError(f"solve() needs a tjap.Window, got {type(window).__name__}")
    convention_code(convention)
    if time_limit_s is not None and not (
        isinstance(time_limit_s, (int, float)) and 0 < time_limit_s <= MAX_TIME_LIMIT_S
    ):
        raise InvalidInputError(
            f"time_limit_s must be positive and at most {MAX_TIME_LIMIT_S:g} s (None for no limit), "
            f"got {time_limit_s!r}"
        )
    if not isinstance(seed, (int,)) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise InvalidInputError(
            f"seed must be a whole number from 0 to {MAX_SEED}, got {seed!r:.40}"
        )
    entry = get("tree", method)
    entry.check_options(options, fixed=("convention", "time_limit_s", "seed"))
    if entry.blocks:  # Slurm's block rule: block clusters alone
        from tjap.placement.tree.jobs import base_block_size

        base_block_size(window.topology, f"method {entry.name!r}")
    if window.constrained and not entry.constraints:
        from tjap.placement.tree.jobs import refuse_constraints

        refuse_constraints(window, entry.name)
    fn = entry.load()
    started = time.perf_counter()
    result = fn(window, convention=convention, time_limit_s=time_limit_s, seed=seed, **options)
    if not entry.builtin:  # the built-in methods are tested for this
        _check_returned(result, window, entry.name)
    status = result.status.value
    if status == "TIME_LIMIT" or (entry.exact and status == "FEASIBLE"):
        result = no_worse_than_rules(
            result,
            entry.model,
            convention,
            seed,
            time_left_s=rules_time_left(time_limit_s, started),
        )
    if status == "INFEASIBLE" and not result.info.get("infeasible"):  # every method says why
        from tjap.placement.tree.arcs import why_infeasible

        why = result.info.get("reason") or why_infeasible(window, entry.model)
        result = replace(result, info={**result.info, "infeasible": why})
    return result


def _check_returned(result, window, name: str) -> None:
    """A registered method's answer must be a Result of ``window`` whose assignment (if any) is
    feasible; anything else is one line naming the method. Not run for the built-in methods (their
    tests check it), so that it costs nothing on the hot path of the online replay."""
    from tjap.placement.tree.result import Result

    if not isinstance(result, Result):
        raise InvalidInputError(
            f"method {name!r} returned {type(result).__name__}, not a tjap.Result; return "
            "tjap.Result.from_assignment(window, assignment, status=..., method=..., "
            "convention=..., runtime_s=...)"
        )
    if result.window is not window and result.window != window:
        raise InvalidInputError(f"method {name!r} returned a Result of another window")
    if result.assignment and not result.is_feasible():
        raise InvalidInputError(
            f"method {name!r} returned an infeasible assignment (each job needs exactly its "
            "size in distinct idle nodes, no node shared)"
        )


def place_request(
    engine,
    cpu: int,
    mem: int,
    holding: int = 1,
    policy="tetris",
    *,
    seed: int = 0,
    commit: bool = True,
    **options,
):
    """Place one network request (seed 003) on a data centre's current state: one decision
    outside an episode.

    Parameters
    ----------
    engine : tjap.placement.network.Engine
        The state: free CPU, memory and channels and the requests still held; no request may be
        in progress, and the request must fit the free resources.
    cpu, mem, holding : int
        The request: units of CPU and memory, and the ticks it holds them once accepted.
    policy : str or ServerPolicy
        A network policy by name (``tjap.registry.methods("network")``: tetris, nalb, nulb,
        random, exact, gnn ...), built with ``options`` (e.g. ``time_limit_s`` for exact,
        ``weights`` for gnn), or a policy object. It is reset with ``seed`` and routes over its
        own rule.
    seed : int
        The policy's seed.
    commit : bool
        True (default): the engine keeps an accepted request (released ``holding`` ticks later by
        :meth:`~tjap.placement.network.Engine.advance`). False: the engine is left as it was.
    **options
        The policy's options; an unknown one raises
        :class:`~tjap.core.errors.InvalidInputError` listing the valid ones.

    Returns
    -------
    RequestPlan or None
        A record (:class:`~tjap.placement.network.RequestPlan`) with the fields every result
        shares (:data:`tjap.core.result.COMMON_FIELDS`): ``method`` (the policy's name), ``status``
        (FEASIBLE: a policy proves nothing), ``objective`` (the channels reserved),
        ``runtime_s`` and ``seed``; and the plan: the servers in the order chosen and the
        candidate path per earlier server (replaying them with ``engine.step(server, paths)``
        gives the same state). None when the policy could not place the request (the engine is
        then unchanged).

    Examples
    --------
    >>> from tjap.placement.network import Engine, paper_topology
    >>> engine = Engine(paper_topology("8:1-16"))
    >>> place_request(engine, 40, 20, 5, "tetris").servers
    (0, 1, 2)
    """
    import copy

    from tjap.placement.network import Engine, serve_request

    if not isinstance(engine, Engine):
        raise InvalidInputError(
            f"engine must be a tjap.placement.network.Engine, got {type(engine).__name__}"
        )
    if isinstance(policy, str):
        policy = get("network", policy).make(policy, **options)
    elif options:
        raise InvalidInputError(
            f"options ({', '.join(sorted(options))}) are for a policy given "
            "by name; configure a policy object before passing it"
        )
    if not commit:
        engine = copy.deepcopy(engine)
    return serve_request(engine, policy, cpu, mem, holding, seed=seed)


def place_job(
    sim,
    jobs,
    policy="tetris",
    *,
    partition: int | None = None,
    seed: int = 0,
    commit: bool = False,
    **options,
):
    """Place one seed-001 job, or one batch, on an interference simulator's current state.

    One scheduling decision outside an episode: the turn a scheduler gets in
    :class:`tjap.placement.interference.episode.PlacementEpisode`. As a turn does, the call records
    on ``sim`` that the jobs were offered to ``partition`` in the current interval (what the
    learned policies read).

    Parameters
    ----------
    sim : tjap.placement.interference.Simulator
        The cluster, the workload and the state to place on (resources in use, running jobs).
    jobs : int or sequence of int
        A waiting job of ``sim.workload``, or a batch of them (placed in order, each seeing the
        earlier ones' plans).
    policy : str or PlacementPolicy
        A name of ``tjap.registry.methods("interference")`` (built with ``options``) or a policy
        object. Either is reset with ``(sim, seed)`` first.
    partition : int, optional
        The partition to place on; default the jobs' home scheduler's, or the whole cluster
        (:data:`tjap.placement.interference.cluster.CLUSTER`) for a policy of scope ``"cluster"``.
    seed : int
        The seed the policy is reset with (the random rule and the server level draw from it).
    commit : bool
        Also start the placed jobs on ``sim`` (:meth:`~tjap.placement.interference.Simulator.commit`).
    **options
        Options of a policy given by name (``iterations=`` for opt, ``weights=`` for the learned
        ones); an option it does not take raises InvalidInputError listing the valid ones.

    Returns
    -------
    JobPlacement
        A frozen record (:class:`tjap.placement.interference.episode.JobPlacement`) with the
        fields every result shares (:data:`tjap.core.result.COMMON_FIELDS`): ``plans``, per job
        its GPU group per task (workers first, then parameter servers), or None where the policy
        did not place it (it would be forwarded); ``plan`` the first job's; ``objective`` the
        number of jobs placed. A placement has no time of its own until the jobs run: the JCT
        is the run's, :func:`tjap.placement.interference.simulate`'s.

    Examples
    --------
    >>> from tjap.placement.interference import Simulator, Workload, make_cluster
    >>> cluster = make_cluster("fattree", 4)
    >>> sim = Simulator(cluster, Workload.generate(cluster.num_partitions, 1, "uniform", 0))
    >>> decision = place_job(sim, 0, "tetris")
    >>> len(decision.plan) == int(sim.workload.tasks[0]), decision.objective
    (True, 1)
    """
    import numpy as np

    from tjap.placement.interference import CLUSTER, PlacementPolicy, Simulator
    from tjap.placement.interference.episode import JobPlacement, check_plans
    from tjap.placement.interference.jobs import WAITING

    if not isinstance(sim, Simulator):
        raise InvalidInputError(
            f"sim must be a tjap.placement.interference.Simulator, got {type(sim).__name__}"
        )
    single = isinstance(jobs, (int, np.integer)) and not isinstance(jobs, bool)
    batch = (
        [jobs] if single else list(jobs) if isinstance(jobs, (list, tuple, np.ndarray)) else None
    )
    n = len(sim.workload)
    if not batch or any(
        isinstance(j, bool) or not isinstance(j, (int, np.integer)) or not 0 <= j < n for j in batch
    ):
        raise InvalidInputError(
            f"jobs must be a job id in 0..{n - 1} or a non-empty list of them, got {jobs!r}"
        )
    batch = [int(j) for j in batch]
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InvalidInputError(f"seed must be an integer, got {seed!r}")
    if len(set(batch)) != len(batch):
        raise InvalidInputError(f"jobs lists a job twice: {batch}")
    busy = [j for j in batch if sim.state[j] != WAITING]
    if busy:
        raise InvalidInputError(f"job {busy[0]} is not waiting (it was placed already)")
    if isinstance(policy, str):
        policy = get("interference", policy).make(policy, **options)
    elif options:
        raise InvalidInputError(
            f"options ({', '.join(sorted(options))}) are for a policy given "
            "by name; configure a policy object before passing it"
        )
    elif not isinstance(policy, PlacementPolicy):
        raise InvalidInputError(
            f"policy must be a name or have name, reset() and place(), got {type(policy).__name__}"
        )
    whole_cluster = getattr(policy, "scope", "partition") == "cluster"
    homes = sorted({int(sim.workload.home[j]) for j in batch})
    if partition is None:
        if not whole_cluster and len(homes) > 1:
            raise InvalidInputError(
                f"the jobs come from schedulers {homes}; give the partition to place them on"
            )
        partition = CLUSTER if whole_cluster else homes[0]
    elif whole_cluster and partition != CLUSTER:
        raise InvalidInputError(
            f"policy {policy.name} places on the whole cluster; leave "
            f"partition out (or give {CLUSTER}), got {partition!r}"
        )
    elif not whole_cluster and (
        isinstance(partition, bool)
        or not isinstance(partition, (int, np.integer))
        or not 0 <= partition < sim.cluster.num_partitions
    ):
        raise InvalidInputError(
            f"partition must be in 0..{sim.cluster.num_partitions - 1}, got {partition!r}"
        )
    partition = int(partition)
    if partition != CLUSTER:
        for job in batch:
            sim.mark_offered(job, partition)
    started = time.perf_counter()
    policy.reset(sim, int(seed))
    plans = check_plans(
        sim, partition, batch, policy.place(sim, partition, batch), f"policy {policy.name}"
    )
    if commit:
        for job, plan in zip(batch, plans):
            if plan is not None:
                sim.commit(job, plan)
    return JobPlacement(
        tuple(batch),
        tuple(plans),
        policy.name,
        partition,
        time.perf_counter() - started,
        int(seed),
    )
