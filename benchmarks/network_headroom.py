"""How much could planning across requests gain over the exact per-request model?

A diagnostic, not an allocator. The exact model (:mod:`tjap.placement.network.exact`) serves each
request with the fewest channels, ties broken by best fit; it accepts every request that can be
served at all in the state it finds, so an allocator can only beat it by leaving better states
behind. This measures how much better those states can be made:

- at each request, the exact model is solved under several tie-break rules (:data:`TIE_RULES`;
  every plan uses the fewest channels); plans that leave the same state count once;
- with ``--others``, the plans other methods would make (e.g. ``gnn,tetris,nalb,nulb``: each run
  on a copy of the engine with its own routing, kept when it completes the request) join the
  candidates; they need not use the fewest channels;
- where two or more states remain, each is scored by the requests the plain exact model then
  accepts over the next ``horizon`` requests, from a copy of the engine, and the best is committed
  (ties: the best-fit plan, i.e. the exact model's own choice);
- ``clairvoyant``: the future is the episode's actual next requests. No online allocator can see
  them, so this is an optimistic estimate of what planning over this horizon and these plans can
  gain. ``sampled``: the future is ``samples`` draws from the request generator (seeded from the
  episode seed and the request's index, never the episode's own stream), which an online
  planner could do.

    python -m benchmarks.network_headroom --topologies 8:1-16,16:1-8 --seeds 3 --horizon 12

Each (topology, mode, seed) episode is one task of the sweep executor (``--workers N``).
"""

from __future__ import annotations

import argparse
import copy
import json
import time

import numpy as np

from benchmarks.common import TaskFailure, executor_from_args, format_table, one_line_errors, parser
from tjap.cli.common import add_executor_arguments
from tjap.core.errors import InvalidInputError
from tjap.heuristics.network.rules import ExactPolicy
from tjap.placement.network import NAMES, paper_topology
from tjap.placement.network.engine import Outcome
from tjap.placement.network.episode import run_episode
from tjap.placement.network.requests import Requests
from tjap.registry import make

MODES = ("exact", "clairvoyant", "sampled")


def tie_costs(engine) -> dict:
    """Tie-break costs per rule (lower preferred) for the engine's state; ``best`` is the exact
    model's default (free CPU + memory: fuller servers first)."""
    t = engine.topology
    fit = engine.free_cpu + engine.free_mem
    own = engine.free_channels[: t.num_servers]  # a server's own link (its index: the topology's)
    used = t.link_capacity[: t.num_servers] - own
    span = int(t.server_cpu + t.server_mem) + 1
    return {
        "best": fit,
        "worst": span - 1 - fit,
        "fewest_free_channels": own * span + fit,
        "most_free_channels": used * span + fit,
        "best_then_channels": fit * span + own,
    }


TIE_RULES = ("best", "worst", "fewest_free_channels", "most_free_channels", "best_then_channels")


def _commit(engine, plan) -> None:
    outcome = Outcome.PENDING
    for server, paths in plan:
        outcome = engine.step(server, paths)
    if outcome != Outcome.ACCEPTED:  # a plan of the exact model always completes its request
        raise RuntimeError(f"an exact plan did not complete its request ({outcome.name})")


def _dry_run(policy, engine):
    """(plan, engine after it) of ``policy`` serving the current request on a copy of ``engine``
    with the policy's own routing; (None, None) if it fails the request."""
    trial = copy.deepcopy(engine)
    trial.routing = policy.routing
    plan, outcome = [], Outcome.PENDING
    while outcome == Outcome.PENDING:
        choice = policy.choose(trial)
        if choice is None:
            return None, None
        server, paths = choice if isinstance(choice, tuple) else (choice, None)
        outcome = trial.step(server, paths)
        plan.append((int(server), trial.last_paths.tolist()))
    return (plan, trial) if outcome == Outcome.ACCEPTED else (None, None)


def accepted_ahead(engine, future: Requests, exact: ExactPolicy) -> int:
    """Requests of ``future`` the plain exact model ``exact`` accepts from ``engine``'s state
    (which it changes: pass a copy)."""
    accepted = 0
    for i in range(len(future)):
        engine.arrive(int(future.cpu[i]), int(future.mem[i]), int(future.holding[i]))
        plan = exact.plan(engine)
        if plan is None:
            engine.abort()
        else:
            _commit(engine, plan)
            accepted += 1
    return accepted


class LookAheadExact(ExactPolicy):
    """The exact model choosing among its tie-break plans by look-ahead (see the module doc).
    ``requests``: the episode's stream (read only in ``clairvoyant`` mode)."""

    def __init__(
        self, mode: str, requests: Requests, horizon: int = 12, samples: int = 2, others=()
    ):
        super().__init__(time_limit_s=1.0)
        self.others = [make("network", name) for name in others]
        if mode not in ("clairvoyant", "sampled"):
            raise InvalidInputError(f"mode must be clairvoyant or sampled, got {mode!r}")
        self.mode, self.requests, self.horizon, self.samples = mode, requests, horizon, samples
        self.name = f"exact+lookahead ({mode})"

    def reset(self, topology, seed: int) -> None:
        super().reset(topology, seed)
        self.index = -1
        self.stats |= {"looked": 0, "changed": 0}
        self.solver = ExactPolicy(time_limit_s=1.0)  # candidates and rollouts, own stats
        self.solver.reset(topology, seed)
        for other in self.others:
            other.reset(topology, seed)

    def futures(self) -> list[Requests]:
        start = self.index + 1
        if self.mode == "clairvoyant":
            r, stop = self.requests, min(start + self.horizon, len(self.requests))
            return (
                [Requests(r.cpu[start:stop], r.mem[start:stop], r.holding[start:stop])]
                if stop > start
                else []
            )
        seeds = np.random.SeedSequence([self.seed, start, 3]).generate_state(self.samples)
        return [Requests.generate(self.topology, self.horizon, int(s)) for s in seeds]

    def plan(self, engine):
        self.index += 1
        costs = tie_costs(engine)
        candidates = {}
        for rule in TIE_RULES:
            plan = self.solver.plan(engine, costs[rule].astype(np.int64))
            if plan is None:
                return None  # no plan under one rule: none under any (same feasible set)
            after = copy.deepcopy(engine)
            _commit(after, plan)
            key = (
                after.free_cpu.tobytes(),
                after.free_mem.tobytes(),
                after.free_channels.tobytes(),
            )
            candidates.setdefault(key, (plan, after))
        for other in self.others:
            plan, after = _dry_run(other, engine)
            if plan is not None:
                key = (
                    after.free_cpu.tobytes(),
                    after.free_mem.tobytes(),
                    after.free_channels.tobytes(),
                )
                candidates.setdefault(key, (plan, after))
        candidates = list(candidates.values())
        futures = self.futures() if len(candidates) > 1 else []
        if not futures:
            return candidates[0][0]
        self.stats["looked"] += 1
        scores = [
            sum(accepted_ahead(copy.deepcopy(after), f, self.solver) for f in futures)
            for _, after in candidates
        ]
        best = int(np.argmax(scores))  # the first maximum: best fit wins ties
        self.stats["changed"] += best != 0
        return candidates[best][0]


class SolverSeededExact(ExactPolicy):
    """The plain exact model with CP-SAT seeded ``episode seed + offset`` (offset 0: as
    ``exact``). Plans of equal channels and equal best-fit cost are the solver's arbitrary pick,
    which the seed changes."""

    def __init__(self, offset: int = 0):
        super().__init__(time_limit_s=1.0)
        self.offset = int(offset)

    def reset(self, topology, seed: int) -> None:
        super().reset(topology, seed)
        self.seed = seed + self.offset


def episode(
    name: str,
    mode: str,
    seed: int,
    requests: int,
    horizon: int,
    samples: int,
    others=(),
    solver_offset: int = 0,
) -> dict:
    """One episode of ``mode`` (``exact``: the plain exact model, its CP-SAT seeded ``seed +
    solver_offset``) on topology ``name``."""
    topology = paper_topology(name)
    reqs = Requests.generate(topology, requests, seed)
    policy = (
        SolverSeededExact(solver_offset)
        if mode == "exact"
        else LookAheadExact(mode, reqs, horizon, samples, others)
    )
    result = run_episode(topology, reqs, policy, seed=seed)
    return {
        "topology": name,
        "mode": mode,
        "seed": seed,
        "solver_offset": solver_offset,
        "acceptance": result.acceptance,
        "looked": result.info.get("looked", 0),
        "changed": result.info.get("changed", 0),
        "runtime_s": result.runtime_s,
    }


def summarise(rows: list[dict]) -> list[dict]:
    """Per topology: mean acceptance of each mode and the look-ahead gains over plain exact, %."""
    out = []
    for name in dict.fromkeys(r["topology"] for r in rows):
        row = {"topology": name}
        for mode in MODES:
            mine = [
                r
                for r in rows
                if r["topology"] == name and r["mode"] == mode and r["solver_offset"] == 0
            ]
            if mine:
                row[mode] = float(np.mean([r["acceptance"] for r in mine]))
                row[f"{mode}_changed"] = int(sum(r["changed"] for r in mine))
        offsets = sorted(
            {r["solver_offset"] for r in rows if r["topology"] == name and r["mode"] == "exact"}
        )
        if len(offsets) > 1:  # exact's own spread over CP-SAT seeds (means over the episodes)
            means = [
                np.mean(
                    [
                        r["acceptance"]
                        for r in rows
                        if r["topology"] == name
                        and r["mode"] == "exact"
                        and r["solver_offset"] == o
                    ]
                )
                for o in offsets
            ]
            row["exact_min"], row["exact_max"] = float(min(means)), float(max(means))
        for mode in ("clairvoyant", "sampled"):
            if mode in row and "exact" in row:
                row[f"{mode}_gain_pct"] = 100 * (row[mode] / row["exact"] - 1)
        out.append(row)
    return out


def build_parser() -> argparse.ArgumentParser:
    p = parser("network_headroom", __doc__)
    p.add_argument("--topologies", default=",".join(NAMES))
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument(
        "--seeds", type=int, default=3, help="episodes per topology and mode (default 3)"
    )
    p.add_argument(
        "--seed",
        "--seed-base",
        dest="seed_base",
        type=int,
        default=0,
        help="the first episode's seed (default 0; the others follow it)",
    )
    p.add_argument("--requests", type=int, default=128)
    p.add_argument("--horizon", type=int, default=12)
    p.add_argument("--samples", type=int, default=2)
    p.add_argument(
        "--others",
        default="",
        help="comma-separated policies whose plans join the candidates "
        "(e.g. gnn,tetris,nalb,nulb; default none)",
    )
    p.add_argument(
        "--solver-seeds",
        type=int,
        default=1,
        help="run the plain exact model with this many CP-SAT seeds (episode seed "
        "+ 1000 j) to show its own spread (default 1)",
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true")
    add_executor_arguments(p)
    return p


@one_line_errors
def main(argv=None) -> int:
    """Run the episodes; print the summary table (or, with ``--json``, every episode)."""
    p = build_parser()
    args = p.parse_args(argv)
    names = [n for n in args.topologies.split(",") if n]
    modes = [m for m in args.modes.split(",") if m]
    for name in names:
        paper_topology(name)  # a one-line error for an unknown topology
    if bad := [m for m in modes if m not in MODES]:
        p.error(f"unknown mode {bad[0]!r}; choose from {', '.join(MODES)}")
    for key in ("seeds", "requests", "horizon", "samples", "solver_seeds"):
        if getattr(args, key) < 1:
            p.error(f"--{key} must be a positive integer")
    others = tuple(o for o in args.others.split(",") if o)
    for other in others:
        make("network", other)  # a one-line error for an unknown policy
    tasks = [
        (n, m, args.seed_base + s, args.requests, args.horizon, args.samples, others, 1000 * j)
        for n in names
        for m in modes
        for s in range(args.seeds)
        for j in range(args.solver_seeds if m == "exact" else 1)
    ]
    start = time.perf_counter()
    rows = [
        r
        for r in executor_from_args(args).map(episode, tasks, desc="episodes", quiet=args.quiet)
        if not isinstance(r, TaskFailure)
    ]
    summary = {
        "episodes": rows,
        "summary": summarise(rows),
        "horizon": args.horizon,
        "samples": args.samples,
        "others": list(others),
        "wall_s": time.perf_counter() - start,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    spread = [("exact_min", ".4f"), ("exact_max", ".4f")] if args.solver_seeds > 1 else []
    columns = (
        [("topology", "")]
        + [(m, ".4f") for m in modes]
        + spread
        + [(f"{m}_gain_pct", "+.2f") for m in ("clairvoyant", "sampled") if m in modes]
        + [(f"{m}_changed", "d") for m in ("clairvoyant", "sampled") if m in modes]
    )
    print(format_table(summary["summary"], columns))
    print(
        f"\n{len(rows)} episodes, horizon {args.horizon}, {args.samples} samples, "
        f"{summary['wall_s']:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
