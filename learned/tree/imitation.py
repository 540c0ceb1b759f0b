"""Imitation warm start for the NSA repair policy (ours, not the paper's).

PPO from scratch does not find a good repair operator in a CPU budget, although simple ones are
known. :data:`EXPERTS`:

- ``"greedy-within-q"``: the cheapest block of the current job among the first q positions of
  the current idle sequence (its cost per start: :func:`expert_block_costs`);
- ``"lookahead"``: for each of those q starts, place the current job there, then the jobs still
  to re-insert after it one by one at their cheapest block over the whole sequence (the SA loop's
  greedy repair), and score the total cost of these blocks (:func:`lookahead_totals`); the
  expert takes the start of the least total. With no job left after the current one it is the
  greedy-within-q expert.

:func:`collect_demonstrations` runs an expert in :class:`tjap.learned.tree.env.NSARepairEnv` (the same
windows and settings as PPO's), and :func:`behaviour_clone` fits a MaskablePPO policy to it
before PPO goes on:

- actor: masked cross-entropy of the policy's logits against the expert's choice; with
  ``temperature > 0`` the target is the soft expert ``softmax(-(cost - min cost) / temperature)``
  over the valid starts (temperature in cost units; the cost is the expert's score of a start)
  instead of the single best start;
- critic: mean squared error against the observed episode returns (gamma = 1, so every step of an
  episode has the episode's reward as its return);
- Adam, a few epochs, on CPU, shuffled by a seeded generator: the same seed gives the same weights.

Block costs come from the project's kernels (:func:`tjap.placement.tree.tree_cost.block_costs` and
:func:`tjap.heuristics.tree._kernels.greedy_start`, the greedy repair of the SA loop), so the experts and the
search score a block the same way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.core.jit import njit
from tjap.heuristics.tree._kernels import lookahead_total
from tjap.placement.tree._dcas_kernels import row_ends
from tjap.placement.tree.tree_cost import block_costs

EXPERTS = ("greedy-within-q", "lookahead")


def expert_block_costs(env) -> np.ndarray:
    """Cost of the current job's block at each start 0..q-1 of the current idle sequence of an
    :class:`~tjap.learned.tree.env.NSARepairEnv` (between ``reset``/``step`` calls); ``inf`` where the
    start is masked. A block wraps to the head of the sequence, as in the SA loop."""
    env = getattr(env, "unwrapped", env)
    a = env.a
    length = int(env.length)
    size = int(a.sizes[env.order[env.step_index]])
    alive = env.alive[:length]
    n = min(env.q, length)
    out = np.full(env.q, np.inf)
    out[:n] = block_costs(a.group_q, a.top_level, alive, size, a.num_groups, env.code)[:n]
    return out


@njit
def _lookahead_totals(
    group_q, ends, shallow, top_level, num_groups, convention, taken, length, size, rest, q, out
):
    """``out[s]`` for s < min(q, length): :func:`tjap.heuristics.tree._kernels.lookahead_total` of start
    s with the jobs of sizes ``rest`` after it (the look-ahead repair's score of a start);
    ``taken`` (the bitmap of the current sequence) is unchanged."""
    work = np.empty_like(taken)
    alive = np.empty(group_q.shape[1], np.int64)
    order = np.arange(rest.shape[0])
    for s in range(min(q, length)):
        out[s] = lookahead_total(
            group_q,
            ends,
            shallow,
            top_level,
            num_groups,
            convention,
            taken,
            work,
            length,
            alive,
            s,
            size,
            rest,
            order,
            0,
        )


def lookahead_totals(
    arrays, taken, length: int, size: int, rest, q: int, convention: int
) -> np.ndarray:
    """The look-ahead expert's score of each start 0..q-1 (``inf`` past ``length``): the total
    cost of the current job's block there and of the jobs of sizes ``rest`` (those still to
    re-insert after it, in re-insertion order) each then placed at its cheapest block.

    ``arrays``: the window's :class:`tjap.placement.tree.dcas.Arrays`; ``taken``: the taken bitmap of
    the current idle sequence of ``length`` positions (:mod:`tjap.placement.tree._dcas_kernels`), not
    changed; ``convention``: the cost convention's code."""
    out = np.full(q, np.inf)
    _lookahead_totals(
        arrays.group_q,
        row_ends(arrays.group_q),
        arrays.shallow,
        arrays.top_level,
        arrays.num_groups,
        int(convention),
        taken,
        int(length),
        int(size),
        np.ascontiguousarray(rest, dtype=np.int64),
        int(q),
        out,
    )
    return out


def expert_scores(env, expert: str = "greedy-within-q") -> np.ndarray:
    """The score of each start 0..q-1 by ``expert`` (lower is better; ``inf`` where masked) at
    the current step of an :class:`~tjap.learned.tree.env.NSARepairEnv`: the block cost
    (:func:`expert_block_costs`) or the look-ahead total (:func:`lookahead_totals`)."""
    if expert not in EXPERTS:
        raise InvalidInputError(f"expert must be one of {', '.join(EXPERTS)}, got {expert!r}")
    env = getattr(env, "unwrapped", env)
    if expert == "greedy-within-q":
        return expert_block_costs(env)
    a = env.a
    rest = a.sizes[env.order[env.step_index + 1 :]]
    return lookahead_totals(
        a, env.taken, env.length, a.sizes[env.order[env.step_index]], rest, env.q, env.code
    )


def expert_action(env, expert: str = "greedy-within-q") -> int:
    """The expert's start: the least score of :func:`expert_scores` (ties to the lowest)."""
    return int(np.argmin(expert_scores(env, expert)))


def soft_targets(costs: np.ndarray, temperature: float) -> np.ndarray:
    """Rows of ``softmax(-(cost - min cost) / temperature)`` (0 where the cost is inf); with
    ``temperature <= 0``, one-hot on the cheapest start (ties to the lowest)."""
    costs = np.atleast_2d(np.asarray(costs, dtype=np.float64))
    out = np.zeros_like(costs)
    if temperature <= 0:
        out[np.arange(costs.shape[0]), np.argmin(costs, axis=1)] = 1.0
        return out
    z = -(costs - costs.min(axis=1, keepdims=True)) / temperature
    out = np.exp(z)  # exp(-inf) = 0 where masked
    return out / out.sum(axis=1, keepdims=True)


@dataclass
class Demonstrations:
    """Expert steps: observations (N, channels, q) float32, masks (N, q) bool, expert actions
    (N,), the expert's scores of every start (N, q) float32 (block costs or look-ahead totals;
    inf where masked) and episode returns (N,) float32."""

    obs: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    costs: np.ndarray
    returns: np.ndarray
    episodes: int
    wall_s: float

    def __len__(self) -> int:
        return int(self.actions.shape[0])


def collect_demonstrations(
    env, steps: int, *, seed: int = 0, temperature: float = 0.0, expert: str = "greedy-within-q"
) -> Demonstrations:
    """Run ``expert`` (:data:`EXPERTS`) in ``env`` for at least ``steps`` steps (whole
    episodes only).

    The labels are always the expert's best start (and every start's score, in ``costs``, for
    soft targets); the expert *acts* by its best start when ``temperature <= 0``, else it
    samples its start from the soft expert at that temperature (seeded), which visits more
    varied repair states.
    """
    if expert not in EXPERTS:
        raise InvalidInputError(f"expert must be one of {', '.join(EXPERTS)}, got {expert!r}")
    if steps < 1:
        raise InvalidInputError(f"imitation needs at least one step, got {steps}")
    started = time.perf_counter()
    base = getattr(env, "unwrapped", env)
    rng = np.random.default_rng(seed)
    obs_l, mask_l, act_l, cost_l, ret_l = [], [], [], [], []
    episodes = 0
    obs, _ = env.reset(seed=seed)
    episode_start = 0
    while True:
        costs = expert_scores(base, expert)
        mask = env.action_masks() if hasattr(env, "action_masks") else base.action_masks()
        greedy = int(np.argmin(costs))
        if temperature > 0:
            p = soft_targets(costs, temperature)[0]
            action = int(rng.choice(p.size, p=p))
        else:
            action = greedy
        obs_l.append(obs)
        mask_l.append(mask)
        act_l.append(greedy)
        cost_l.append(costs.astype(np.float32))
        obs, reward, done, truncated, _ = env.step(action)
        if done or truncated:
            ret_l.extend([float(reward)] * (len(act_l) - episode_start))  # gamma = 1
            episodes += 1
            if len(act_l) >= steps:
                break
            obs, _ = env.reset()
            episode_start = len(act_l)
    return Demonstrations(
        np.asarray(obs_l, dtype=np.float32),
        np.asarray(mask_l, dtype=bool),
        np.asarray(act_l, dtype=np.int64),
        np.asarray(cost_l, dtype=np.float32),
        np.asarray(ret_l, dtype=np.float32),
        episodes,
        time.perf_counter() - started,
    )


def _forward(policy, obs):
    features = policy.extract_features(obs)
    if policy.share_features_extractor:
        latent_pi, latent_vf = policy.mlp_extractor(features)
    else:
        latent_pi = policy.mlp_extractor.forward_actor(features[0])
        latent_vf = policy.mlp_extractor.forward_critic(features[1])
    return policy.action_net(latent_pi), policy.value_net(latent_vf).squeeze(-1)


def bc_losses(
    policy,
    demos: Demonstrations,
    *,
    temperature: float = 0.0,
    vf_coef: float = 0.5,
    batch_size: int = 1024,
) -> dict:
    """Mean actor cross-entropy, critic MSE and greedy-action accuracy (masked argmax) of
    ``policy`` on ``demos``, without gradients."""
    import torch

    totals = {"actor_ce": 0.0, "critic_mse": 0.0, "accuracy": 0.0}
    with torch.no_grad():
        for lo in range(0, len(demos), batch_size):
            sl = slice(lo, lo + batch_size)
            ce, mse, logits = _batch_loss(policy, demos, sl, temperature)
            n = logits.shape[0]
            totals["actor_ce"] += float(ce) * n
            totals["critic_mse"] += float(mse) * n
            acc = (logits.argmax(-1) == torch.as_tensor(demos.actions[sl])).float().sum()
            totals["accuracy"] += float(acc)
    out = {key: value / len(demos) for key, value in totals.items()}
    out["loss"] = out["actor_ce"] + vf_coef * out["critic_mse"]
    return out


def _batch_loss(policy, demos, index, temperature):
    import torch

    obs = torch.as_tensor(demos.obs[index])
    mask = torch.as_tensor(demos.masks[index])
    logits, values = _forward(policy, obs)
    logits = torch.where(mask, logits, torch.full_like(logits, -1e8))
    log_p = torch.log_softmax(logits, dim=-1)
    target = torch.as_tensor(soft_targets(demos.costs[index], temperature), dtype=log_p.dtype)
    ce = -(target * log_p).sum(-1).mean()
    mse = ((values - torch.as_tensor(demos.returns[index])) ** 2).mean()
    return ce, mse, logits


def behaviour_clone(
    policy,
    demos: Demonstrations,
    *,
    epochs: int = 5,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    temperature: float = 0.0,
    vf_coef: float = 0.5,
    seed: int = 0,
    max_grad_norm: float = 1.0,
) -> list[dict]:
    """Fit ``policy`` (a MaskableActorCriticPolicy) to ``demos`` in place: masked cross-entropy
    (hard or soft expert targets, see the module doc) + ``vf_coef`` x critic MSE, Adam, shuffled
    by ``seed``. Returns one dict per epoch (mean training loss, actor CE, critic MSE, seconds
    since the start)."""
    import torch

    if epochs < 0 or batch_size < 1 or learning_rate <= 0:
        raise InvalidInputError(
            "behaviour cloning needs epochs >= 0, batch_size >= 1 and a positive learning rate"
        )
    policy.set_training_mode(True)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(seed)
    history = []
    n = len(demos)
    started = time.perf_counter()
    for epoch in range(epochs):
        order = torch.randperm(n, generator=generator).numpy()
        sums = np.zeros(3)
        for lo in range(0, n, batch_size):
            index = np.sort(order[lo : lo + batch_size])
            ce, mse, _ = _batch_loss(policy, demos, index, temperature)
            loss = ce + vf_coef * mse
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), max_grad_norm)
            optimizer.step()
            sums += np.array([loss.item(), ce.item(), mse.item()]) * index.size
        history.append(
            {
                "epoch": epoch + 1,
                "loss": sums[0] / n,
                "actor_ce": sums[1] / n,
                "critic_mse": sums[2] / n,
                "wall_s": time.perf_counter() - started,
            }
        )
    policy.set_training_mode(False)
    return history
