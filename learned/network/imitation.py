"""Imitation of the exact per-request model by the seed-003 gnn, DAgger-style (ours, not the paper's).

PPO from random weights leaves the gnn 5-22 % behind the exact per-request CP-SAT model
(:func:`tjap.placement.network.solve_request`) on the 64-server topologies. So the same network (same
features, same :class:`~tjap.learned.network.nets.GraphSAGEAllocator`, saved in the same format, so the
``gnn`` policy and ``--init`` of :mod:`tjap.learned.network.train` load it) is fitted to the exact
model's choices:

- **labels**: in a state of the engine (a request being served, some servers already chosen), the
  exact model's completion given the chosen servers (``solve_request(..., fixed=chosen)``): a set
  of servers, any of which is a right next choice (the order within the set does not matter),
  widened by their twins (:func:`label_set`: same rack and same free state, so the same cost). A
  state with no feasible completion is not labelled. While the chosen servers stay inside the plan
  solved when the request arrived, the rest of that plan is the completion (a subset of an optimal
  set is completed optimally by the rest of it), so CP-SAT runs again only after a deviation;
- **rollouts** (DAgger): iteration 0 follows the expert (the next server of its completion);
  iteration i >= 1 follows the current network's masked argmax with probability ``1 - beta_i``
  (``beta_i = beta ** i``) per request, so the states the network itself visits get labelled;
  each step runs through the engine with its own routing, exactly as the ``gnn`` policy does;
- **loss**: actor, ``-log sum_{v in label set} p(v)`` over the masked softmax; critic, mean
  squared error against the rollout's discounted return (reward +10 / -10 per accepted / failed
  request, gamma 0.99, PPO's), so PPO fine-tuning can start from a fitted critic;
- Adam on CPU, everything seeded: the same seed gives the same weights.

Training episodes use request seeds 1000 + ..., apart from the table's seeds 0-4 and the
validation seeds 100-104 that :func:`validate` uses to choose between candidates.

    tjap train network --imitation-iterations 8 --imitation-episodes 18 --imitation-beta 0.5 \\
        --imitation-epochs 4 --imitation-lr 3e-3 --seed 0 --time-budget 960 --timesteps 0 \\
        --out learned/weights/network_gnn_imitation

(the shipped stage 1, run as ``python -m tjap.learned.network.imitation`` before that command moved
into ``tjap train network``; the budget stopped it after 5 rounds), then PPO from it:
``tjap train network --init learned/weights/network_gnn_imitation.json ...``.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.core.result import Status
from tjap.placement.network import (
    NAMES,
    Engine,
    Episode,
    Outcome,
    Requests,
    paper_topology,
    solve_request,
)

GAMMA = 0.99
REWARD = {Outcome.ACCEPTED: 10.0, Outcome.FAILED: -10.0, Outcome.PENDING: 0.0}


class ExactLabeller:
    """The exact model's completion of the request an engine is serving, with the request's
    initial plan cached (see the module notes). ``solves`` counts CP-SAT calls."""

    def __init__(self, time_limit_s: float = 1.0, seed: int = 0):
        self.time_limit_s, self.seed = time_limit_s, seed
        self._request_plan: tuple | None = None
        self._key = None
        self.solves = 0

    def completion(self, engine: Engine) -> list[int]:
        """Servers of an optimal completion (empty: none is feasible)."""
        if engine.request is None:
            raise InvalidInputError("the engine serves no request")
        chosen = list(engine.chosen)
        key = (id(engine), engine.now, engine.request, engine.active_requests)
        if not chosen or key != self._key:
            self._key = key
            self._request_plan = self._solve(engine, []) if not chosen else None
        plan = self._request_plan
        if plan is not None and set(chosen) <= set(plan):
            return [s for s in plan if s not in chosen]
        return self._solve(engine, chosen)

    def _solve(self, engine: Engine, fixed: list[int]) -> list[int]:
        self.solves += 1
        result = solve_request(
            engine.topology,
            engine.free_cpu,
            engine.free_mem,
            engine.free_channels,
            engine.need_cpu,
            engine.need_mem,
            time_limit_s=self.time_limit_s,
            seed=self.seed,
            fixed=fixed,
        )
        if result.status not in (Status.OPTIMAL, Status.FEASIBLE):
            return []
        return list(result.servers) if not fixed else list(fixed) + list(result.servers)


def label_set(engine: Engine, completion) -> np.ndarray:
    """The completion's servers and their twins: allowed servers of the same rack with the same
    free CPU, memory and own-link channels (a server's own link is link ``server``), which the
    exact model could have chosen instead at the same cost (CP-SAT breaks such ties at will)."""
    t = engine.topology
    mask = engine.mask()
    signature = np.stack(
        [t.rack_of, engine.free_cpu, engine.free_mem, engine.free_channels[: t.num_servers]], axis=1
    )
    label = np.zeros(t.num_servers, bool)
    for s in completion:
        label |= mask & (signature == signature[s]).all(axis=1)
    label[list(completion)] = True
    return label


@dataclass
class Samples:
    """Labelled states: observations (one array per state, shapes differ by topology size only
    if mixed), masks, label sets (bool over servers), discounted returns, topology names."""

    obs: list
    masks: list
    labels: list
    returns: list
    topologies: list

    def __len__(self) -> int:
        return len(self.obs)

    def extend(self, other: "Samples") -> None:
        for name in ("obs", "masks", "labels", "returns", "topologies"):
            getattr(self, name).extend(getattr(other, name))


def rollout(
    topology,
    requests: Requests,
    net=None,
    *,
    beta: float = 1.0,
    seed: int = 0,
    labeller: ExactLabeller | None = None,
    builder=None,
) -> tuple[Samples, float]:
    """One episode on ``topology``: per request, the expert's next server (probability ``beta``)
    or ``net``'s masked argmax drives the engine; every state is labelled with the exact model's
    completion. Returns the samples and the episode's acceptance."""
    import torch

    from tjap.learned.network.features import FeatureBuilder

    if beta < 1.0 and net is None:
        raise InvalidInputError("beta < 1 needs a network to roll out")
    rng = np.random.default_rng(seed)
    builder = builder or FeatureBuilder(topology)
    labeller = labeller or ExactLabeller(seed=seed)
    episode = Episode(topology, requests)
    engine = episode.engine
    out = Samples([], [], [], [], [])
    rewards = []
    while not episode.done:
        if not engine.chosen:  # a request has just arrived: who drives it
            expert_drives = rng.random() < beta
        obs = builder.observe(engine)
        mask = engine.mask()
        completion = labeller.completion(engine)
        if completion:
            label = label_set(engine, completion)
            out.obs.append(obs)
            out.masks.append(mask)
            out.labels.append(label)
            out.topologies.append(topology.name)
        if expert_drives and completion:
            server = completion[0]
        elif net is not None:
            with torch.inference_mode():
                logits = net.logits(torch.from_numpy(obs)[None])[0].numpy()
            server = int(np.flatnonzero(mask)[np.argmax(logits[mask])])
        else:  # the expert finds no completion: the request is lost whatever is chosen
            server = int(np.flatnonzero(mask)[0])
        outcome = episode.step(server)
        if completion:
            rewards.append(REWARD[outcome])
        elif rewards:  # an unlabelled state passes its reward to the last labelled one
            rewards[-1] += REWARD[outcome]
    accepted = episode.accepted_count
    returns, running = np.zeros(len(rewards), np.float32), 0.0
    for k in range(len(rewards) - 1, -1, -1):
        running = rewards[k] + GAMMA * running
        returns[k] = running
    out.returns.extend(returns.tolist())
    return out, accepted / max(1, len(requests))


def fit(
    net,
    samples: Samples,
    *,
    epochs: int = 4,
    batch_size: int = 256,
    lr: float = 1e-3,
    value_coef: float = 0.5,
    seed: int = 0,
    topologies: dict | None = None,
) -> dict:
    """Fit ``net`` to the samples (actor: -log p(label set); critic: MSE to the returns), in
    batches of one topology each (the adjacency is per topology). Returns the last epoch's mean
    losses and label accuracy (argmax in the label set)."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    topologies = topologies or {}
    by_topology: dict[str, list[int]] = {}
    for k, name in enumerate(samples.topologies):
        by_topology.setdefault(name, []).append(k)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    value_params = list(net.value.parameters())
    actor_params = [p for p in net.parameters() if all(p is not q for q in value_params)]
    net.train()
    stats = {}
    for _ in range(epochs):
        batches = []
        for name, idx in by_topology.items():
            idx = np.array(idx)[rng.permutation(len(idx))]
            batches += [(name, idx[s : s + batch_size]) for s in range(0, len(idx), batch_size)]
        order = rng.permutation(len(batches))
        total = {"actor": 0.0, "critic": 0.0, "accuracy": 0.0, "n": 0}
        for b in order:
            name, idx = batches[b]
            net.set_topology(topologies.get(name) or paper_topology(name, 64))
            obs = torch.from_numpy(np.stack([samples.obs[k] for k in idx]))
            mask = torch.from_numpy(np.stack([samples.masks[k] for k in idx]))
            label = torch.from_numpy(np.stack([samples.labels[k] for k in idx]))
            ret = torch.tensor([samples.returns[k] for k in idx], dtype=torch.float32)
            encoded = net.encode(obs)
            logits = net.logits(obs, encoded).masked_fill(~mask, -1e9)
            # the critic reads a detached encoding: its large squared errors train the value
            # head only, never the encoder the actor uses
            values = net.values(obs, tuple(e.detach() for e in encoded))
            log_p = torch.log_softmax(logits, dim=1)
            actor = -(torch.logsumexp(log_p.masked_fill(~label, -1e9), dim=1)).mean()
            critic = torch.nn.functional.mse_loss(values.squeeze(-1), ret)
            loss = actor + value_coef * critic
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(actor_params, 0.5)
            torch.nn.utils.clip_grad_norm_(value_params, 0.5)
            optimizer.step()
            hit = label.gather(1, logits.argmax(1, keepdim=True)).float().sum()
            total["actor"] += float(actor.detach()) * len(idx)
            total["critic"] += float(critic.detach()) * len(idx)
            total["accuracy"] += float(hit)
            total["n"] += len(idx)
        stats = {k: total[k] / max(1, total["n"]) for k in ("actor", "critic", "accuracy")}
    net.eval()
    return stats


def validate(
    net_or_path, topologies=NAMES, *, seeds=range(100, 105), requests: int = 128, servers: int = 64
) -> dict:
    """Mean acceptance of the masked argmax per topology on validation seeds (not the table's)."""
    import torch

    from tjap.learned.network.policy import GNNPolicy
    from tjap.placement.network import evaluate

    seeds = list(seeds)
    out = {}
    for name in topologies:
        topology = paper_topology(name, servers)

        def make():
            if isinstance(net_or_path, torch.nn.Module):
                return GNNPolicy.from_network(net_or_path)
            return GNNPolicy(net_or_path)

        res = evaluate(topology, make, requests=requests, seeds=len(seeds), seed_base=seeds[0])
        out[name] = round(res.acceptance, 4)
    out["mean"] = round(float(np.mean([out[n] for n in topologies])), 4)
    return out


def train_imitation(
    topologies=NAMES,
    *,
    iterations: int = 4,
    episodes: int = 6,
    requests: int = 128,
    beta: float = 0.5,
    epochs: int = 4,
    lr: float = 3e-3,
    seed: int = 0,
    out="learned/weights/network_gnn_imitation",
    init=None,
    time_budget_s: float | None = None,
    quiet: bool = False,
    command: str = "",
) -> dict:
    """DAgger: ``iterations`` rounds of ``episodes`` labelled episodes (topologies in turn, request
    seeds 1000 + seed * 10000 + ...), each round followed by ``epochs`` of :func:`fit` on all the
    samples so far; the round with the best validation mean is saved to ``out``."""
    import copy

    import torch

    from tjap.learned.network.features import FeatureBuilder
    from tjap.learned.network.nets import ARCH, GraphSAGEAllocator, load, save

    if iterations < 1 or episodes < 1 or requests < 1:
        raise InvalidInputError("iterations, episodes and requests must be positive")
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    started = time.perf_counter()
    topologies = list(topologies)
    tops = {name: paper_topology(name, 64) for name in topologies}
    builders = {name: FeatureBuilder(t) for name, t in tops.items()}
    if init is not None:
        net, _ = load(init)
        net = copy.deepcopy(net)
    else:
        net = GraphSAGEAllocator(**ARCH)
    data = Samples([], [], [], [], [])
    history, best, best_state = [], -1.0, None
    labeller = ExactLabeller(seed=seed)
    episode = 0
    for it in range(iterations):
        b = 1.0 if it == 0 and init is None else beta ** max(it, 1)
        accs = []
        for _ in range(episodes):
            name = topologies[episode % len(topologies)]
            t = tops[name]
            reqs = Requests.generate(t, requests, 1000 + seed * 10000 + episode)
            net.set_topology(t)
            samples, acc = rollout(
                t,
                reqs,
                net,
                beta=b,
                seed=seed * 10000 + episode,
                labeller=labeller,
                builder=builders[name],
            )
            data.extend(samples)
            accs.append(acc)
            episode += 1
        stats = fit(net, data, epochs=epochs, lr=lr, seed=seed + it, topologies=tops)
        val = validate(net, topologies)
        row = {
            "iteration": it,
            "beta": round(b, 3),
            "samples": len(data),
            "rollout_acceptance": round(float(np.mean(accs)), 4),
            **{k: round(v, 4) for k, v in stats.items()},
            "validation": val,
            "solves": labeller.solves,
            "wall_s": round(time.perf_counter() - started, 1),
        }
        history.append(row)
        if not quiet:
            print(row, flush=True)
        if val["mean"] > best:
            best, best_state = val["mean"], copy.deepcopy(net.state_dict())
        if time_budget_s is not None and time.perf_counter() - started > time_budget_s:
            break
    net.load_state_dict(best_state)
    training = {
        "algorithm": "imitation of the exact per-request CP-SAT model (DAgger, "
        "learned/network/imitation.py); no PPO",
        "command": command,
        "seed": seed,
        "topologies": topologies,
        "servers": 64,
        "requests_per_episode": requests,
        "iterations_run": len(history),
        "episodes_per_iteration": episodes,
        "beta": beta,
        "epochs": epochs,
        "learning_rate": lr,
        "request_seeds": f"1000 + {seed} * 10000 + episode",
        "validation": "masked argmax, 128 requests, seeds 100-104; the best iteration is kept",
        "history": history,
        "chosen_validation_mean": best,
        "train_wall_s": round(time.perf_counter() - started, 1),
        "torch_threads": 1,
        "date": datetime.date.today().isoformat(),
    }
    if init is not None:
        training["continued_from"] = str(init)
    weights, meta = save(net, out, arch=ARCH, routing="shortest", training=training)
    return {
        "weights": str(weights),
        "metadata": str(meta),
        "history": history,
        "validation_mean": best,
    }
