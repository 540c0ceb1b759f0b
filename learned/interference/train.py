"""Training of the ``marl`` schedulers: imitation of a hand-written rule, then PPO (ours, on CPU).

1. Behaviour cloning: :class:`tjap.learned.interference.env.InterferenceEnv` is run with the choices of ``--expert``
   (``whole``, the default, or ``tetris``; :meth:`~tjap.learned.interference.env.InterferenceEnv.expert_action`)
   on ``--bc-episodes`` episodes; the network fits the expert's actions (masked cross-entropy)
   and the discounted returns (value, MSE).
2. PPO (clipped, GAE) with masked sampling, every partition's decisions feeding the one shared
   network (parameter sharing), for ``--ppo-steps`` decisions, on the env's ``--reward`` (the
   proxy, the true JCT, or ``jct_rule``: the JCT saved against the ``--expert`` rule on the same
   workload). ``--single-agent`` trains the single-agent variant instead (one scheduler for the
   whole cluster); ``--eval-seeds`` evaluates the greedy policy afterwards, and with
   ``--eval-every N`` also before PPO and every N decisions (the Fig. 10 learning curves:
   ``python -m benchmarks.interference_fig10``). ``--level server`` trains the server-level
   variant (the network picks servers, the env a random group of the server; the behaviour
   cloning target is the server of the rule's group).

``tjap train interference --k 8 --seed 0 --out learned/weights/interference_marl`` (which calls
:func:`train_interference`) writes the weights and the metadata (how trained, the command, the
seed, the curve). Deterministic in ``--seed`` on one machine with one thread.
"""

from __future__ import annotations

import time
from datetime import date

import numpy as np


def _masked(logits, masks):
    return logits.masked_fill(~masks, -1e9)


def collect_expert(env, episodes: int, seed: int, gamma: float, expert: str = "whole"):
    obs_list, masks, actions, returns = [], [], [], []
    for e in range(episodes):
        obs, _ = env.reset(seed=seed + e)
        rewards, done = [], False
        while not done:
            a = env.expert_action(expert)
            obs_list.append(obs)
            masks.append(env.action_masks())
            actions.append(a)
            obs, r, done, _, _ = env.step(a)
            rewards.append(r)
        ret, acc = np.zeros(len(rewards)), 0.0
        for t in range(len(rewards) - 1, -1, -1):
            acc = rewards[t] + gamma * acc
            ret[t] = acc
        returns.append(ret)
    return obs_list, np.array(masks), np.array(actions), np.concatenate(returns)


def behaviour_clone(
    model,
    data,
    *,
    epochs: int,
    batch: int,
    lr: float,
    seed: int,
    num_actions: int,
    value_scale: float,
    log=print,
):
    import torch

    from tjap.learned.interference.nets import to_torch

    obs_list, masks, actions, returns = data
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    n, curve = len(actions), []
    for epoch in range(epochs):
        order = rng.permutation(n)
        total, correct = 0.0, 0
        for lo in range(0, n, batch):
            idx = order[lo : lo + batch]
            obs = to_torch([obs_list[i] for i in idx])
            logits, value = model(obs, num_actions)
            logits = _masked(logits, torch.from_numpy(masks[idx]))
            target = torch.from_numpy(actions[idx])
            loss = torch.nn.functional.cross_entropy(logits, target) + 0.5 * torch.mean(
                (value - torch.from_numpy(returns[idx] / value_scale).float()) ** 2
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
            correct += int((logits.argmax(1) == target).sum())
        curve.append({"phase": "bc", "epoch": epoch, "loss": total / n, "accuracy": correct / n})
        log(f"bc epoch {epoch}: loss {total / n:.4f} accuracy {correct / n:.3f}", flush=True)
    return curve


def ppo(
    model,
    env,
    *,
    steps: int,
    rollout: int,
    epochs: int,
    batch: int,
    lr: float,
    seed: int,
    gamma: float,
    lam: float,
    clip: float,
    value_scale: float,
    entropy: float,
    evaluate=None,
    eval_every: int = 0,
    log=print,
):
    """PPO on ``env``; with ``evaluate`` (a function of the model returning a list of greedy avg
    JCTs) and ``eval_every`` > 0 the curve also gets ``{"phase": "eval", "step", "avg_jct"}``
    rows before the first rollout, at every ``eval_every`` decisions and after the last one."""
    import torch

    from tjap.learned.interference.nets import to_torch

    G = env.num_actions
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    obs, _ = env.reset(seed=seed)
    episode, ep_return, curve, done_steps = 0, 0.0, [], 0
    next_eval = 0

    def maybe_evaluate(last: bool = False):
        nonlocal next_eval
        if evaluate is None or eval_every <= 0 or (done_steps < next_eval and not last):
            return
        jct = evaluate(model)
        curve.append({"phase": "eval", "step": done_steps, "avg_jct": jct})
        log(
            f"eval at {done_steps} decisions: greedy avg JCT {np.round(jct, 3).tolist()}",
            flush=True,
        )
        next_eval = done_steps + eval_every

    while done_steps < steps:
        maybe_evaluate()
        buf_obs, buf_mask, buf_act, buf_logp, buf_val, buf_rew, buf_done = ([] for _ in range(7))
        model.eval()
        for _ in range(rollout):
            mask = env.action_masks()
            with torch.no_grad():
                logits, value = model(to_torch([obs]), G)
                logits = _masked(logits, torch.from_numpy(mask[None]))
                dist = torch.distributions.Categorical(logits=logits)
                action = torch.multinomial(dist.probs, 1, generator=gen)[0]
            buf_obs.append(obs)
            buf_mask.append(mask)
            buf_act.append(int(action))
            buf_logp.append(float(dist.log_prob(action)))
            buf_val.append(float(value))
            obs, r, done, _, _ = env.step(int(action))
            buf_rew.append(r / value_scale)
            buf_done.append(done)
            ep_return += r
            if done:
                curve.append(
                    {
                        "phase": "ppo",
                        "episode": episode,
                        "step": done_steps + len(buf_act),
                        "return": ep_return,
                        "jobs": len(env.workload),
                    }
                )
                log(f"ppo episode {episode} return {ep_return:.1f}", flush=True)
                episode += 1
                ep_return = 0.0
                obs, _ = env.reset(seed=seed + 1000 + episode)
        with torch.no_grad():
            _, last = model(to_torch([obs]), G)
        vals = np.array(buf_val + [float(last)])
        adv = np.zeros(len(buf_rew))
        acc = 0.0
        for t in range(len(buf_rew) - 1, -1, -1):
            nonterminal = 0.0 if buf_done[t] else 1.0
            delta = buf_rew[t] + gamma * vals[t + 1] * nonterminal - vals[t]
            acc = delta + gamma * lam * nonterminal * acc
            adv[t] = acc
        ret = adv + vals[:-1]
        model.train()
        masks, acts = np.array(buf_mask), np.array(buf_act)
        old_logp = torch.tensor(buf_logp)
        for _ in range(epochs):
            order = rng.permutation(len(acts))
            for lo in range(0, len(acts), batch):
                idx = order[lo : lo + batch]
                logits, value = model(to_torch([buf_obs[i] for i in idx]), G)
                dist = torch.distributions.Categorical(
                    logits=_masked(logits, torch.from_numpy(masks[idx]))
                )
                logp = dist.log_prob(torch.from_numpy(acts[idx]))
                a = torch.from_numpy(adv[idx]).float()
                a = (a - a.mean()) / (a.std() + 1e-8)
                ratio = torch.exp(logp - old_logp[idx])
                pg = -torch.min(ratio * a, ratio.clamp(1 - clip, 1 + clip) * a).mean()
                vloss = torch.mean((value - torch.from_numpy(ret[idx]).float()) ** 2)
                loss = pg + 0.5 * vloss - entropy * dist.entropy().mean()
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
                opt.step()
        done_steps += len(acts)
    maybe_evaluate(last=True)
    return curve


def evaluate_in_env(model, env, seeds) -> list[float]:
    """Average JCT (intervals) of the greedy policy of ``model`` (or of the env's expert rule of
    that name, e.g. "whole") on the env's episodes of ``seeds`` (run until every job finished or
    the env's intervals ran out; the jobs not finished by then count with the episode's end as
    their finish)."""
    import torch

    from tjap.learned.interference.nets import to_torch

    out = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            if isinstance(model, str):
                action = env.expert_action(model)
            else:
                mask = env.action_masks()
                with torch.no_grad():
                    logits, _ = model(to_torch([obs]), env.num_actions)
                action = int(np.argmax(np.where(mask, logits[0].numpy(), -np.inf)))
            obs, _, done, _, _ = env.step(action)
        sim, w = env.sim, env.workload
        finish = np.where(np.isfinite(sim.finish), sim.finish, sim.interval + 1.0)
        out.append(float(np.mean(finish - w.arrival)))
    return out


def train_interference(
    *,
    k: int = 8,
    intervals: int = 8,
    pattern: str = "poisson",
    expert: str = "whole",
    reward: str = "proxy",
    single_agent: bool = False,
    level: str = "device",
    eval_seeds=(),
    eval_every: int = 0,
    bc_episodes: int = 6,
    bc_epochs: int = 6,
    ppo_steps: int = 0,
    rollout: int = 1024,
    hidden: int = 32,
    layers: int = 2,
    seed: int = 0,
    out: str = "learned/weights/interference_marl",
    init: str | None = None,
    save_bc: str | None = None,
    command: str = "",
    quiet: bool = False,
) -> dict:
    """Train a seed-001 scheduler (module docstring) and save it to ``out``.pt / .json.

    Parameters
    ----------
    k, intervals, pattern
        The training env: fat-tree k, arrival intervals per episode, arrival pattern.
    expert : {"whole", "tetris"}
        The rule behaviour cloning imitates (and ``jct_rule`` measures against).
    reward : {"proxy", "jct", "jct_rule"}
        The env's reward for PPO (:class:`tjap.learned.interference.env.InterferenceEnv`).
    single_agent, level
        The single-agent variant; what the network picks ("device": a GPU group, "server").
    eval_seeds : sequence of int
        Env seeds the greedy policy is evaluated on after training (24 intervals of arrivals + at
        most 24 to drain); with ``eval_every`` > 0 also before PPO and every that many decisions.
    bc_episodes, bc_epochs, ppo_steps, rollout, hidden, layers, seed
        Expert episodes and epochs of behaviour cloning, PPO decisions and rollout length, the
        network's width and depth, the seed (deterministic on one machine with one thread).
    out, init, save_bc
        Where to save; weights to start from (.json); where to save the cloned model before PPO.
    command : str
        The command line recorded in the metadata.
    quiet : bool
        No progress lines.

    Returns
    -------
    dict
        ``weights`` and ``metadata`` (the files written), ``figures`` (the greedy evaluation) and
        ``train_seconds``.
    """
    import torch

    from tjap.learned.interference.env import InterferenceEnv
    from tjap.learned.interference.nets import InterferenceGNN
    from tjap.learned.interference.policy import save_model

    log = (lambda *a, **kw: None) if quiet else print
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    started = time.time()
    env = InterferenceEnv(
        k=k,
        intervals=intervals,
        pattern=pattern,
        reward=reward,
        single_agent=single_agent,
        rule=expert,
        level=level,
    )
    seeds = [int(x) for x in eval_seeds]
    eval_env = InterferenceEnv(
        k=k,
        intervals=24,
        pattern=pattern,
        extra_intervals=24,
        single_agent=single_agent,
        level=level,
    )
    model = InterferenceGNN(hidden=hidden, layers=layers)
    if init:
        from tjap.learned.interference.policy import load_model

        model = load_model(init, level=level)[0]
    value_scale = 50.0
    curve = []
    if bc_episodes:
        data = collect_expert(env, bc_episodes, seed, 0.99, expert)
        log(f"{len(data[2])} expert decisions ({time.time() - started:.0f} s)", flush=True)
        curve += behaviour_clone(
            model,
            data,
            epochs=bc_epochs,
            batch=128,
            lr=3e-3,
            seed=seed,
            num_actions=env.num_actions,
            value_scale=value_scale,
            log=log,
        )
    if save_bc:
        save_model(
            model, save_bc, {"what": "behaviour cloning stage only", "curve": curve}, level=level
        )
    if ppo_steps:
        curve += ppo(
            model,
            env,
            steps=ppo_steps,
            rollout=rollout,
            epochs=3,
            batch=128,
            lr=3e-4,
            seed=seed,
            gamma=0.99,
            lam=0.95,
            clip=0.2,
            value_scale=value_scale,
            entropy=0.003,
            evaluate=(lambda m: evaluate_in_env(m, eval_env, seeds)) if seeds else None,
            eval_every=eval_every,
            log=log,
        )
    figures = {}
    if seeds:  # keep the trained weights even if the evaluation is cut short
        save_model(model, out, {"what": "saved before evaluation", "curve": curve}, level=level)
        evals = [row for row in curve if row.get("phase") == "eval"]
        jct = (
            evals[-1]["avg_jct"]
            if evals and evals[-1]["step"] >= ppo_steps
            else evaluate_in_env(model, eval_env, seeds)
        )
        figures = {"eval_seeds": seeds, "eval_intervals": 24, "eval_avg_jct": jct}
        log(f"greedy avg JCT on seeds {seeds}: {np.round(jct, 3).tolist()}", flush=True)
    training = {
        "what": "seed 001 "
        + (
            "single-agent scheduler: one GNN actor-critic for the whole cluster"
            if single_agent
            else "marl scheduler: GNN actor-critic shared by every partition"
        )
        + (
            " (server level: picks a server, the env a random feasible group of it)"
            if level == "server"
            else ""
        ),
        "single_agent": single_agent,
        "figures": figures,
        "cluster": f"fattree k={k} pcie",
        "episode_intervals": intervals,
        "pattern": pattern,
        "expert": expert,
        "bc_episodes": bc_episodes,
        "bc_epochs": bc_epochs,
        "ppo_steps": ppo_steps,
        "seed": seed,
        "init": init,
        "reward": {
            "proxy": "minus added predicted slowdown, minus comm cost / ideal "
            "iteration, minus 0.2 per waiting job per interval",
            "jct": "minus each interval's time in system of every arrived job (sum = total JCT)",
            "jct_rule": f"the {expert} rule's time in system in each "
            "interval on the same workload minus the agent's (sum = "
            "the rule's total JCT minus the agent's)",
        }[reward]
        + " (learned/interference/env.py)",
        "command": command,
        "train_seconds": round(time.time() - started, 1),
        "date": date.today().isoformat(),
        "device": "local CPU, torch.set_num_threads(1)",
        "curve": curve,
    }
    if level != "device":  # the device level's metadata stays as it was
        training["level"] = level
    weights, metadata = save_model(model, out, training, level=level)
    log(f"saved {out}.pt/.json after {time.time() - started:.0f} s")
    return {
        "weights": str(weights),
        "metadata": str(metadata),
        "figures": figures,
        "train_seconds": training["train_seconds"],
    }
