"""Training the NSA repair operator with MaskablePPO (sb3-contrib), reproducible from a seed.

    tjap train nsa --arch cnn3 --timesteps 300000 --seed 0 --out learned/weights/nsa_cnn3

Writes ``OUT.pt`` + ``OUT.npz`` + ``OUT.json`` (the policy, its actor's arrays for solving
without torch, and their metadata) and ``OUT_curve.csv`` (the learning curve: timesteps, episodes,
mean reward of the last 100 episodes). Training windows come from the paper's stream under a seed
distinct from the evaluation windows (``seed + 1000``).

``imitation_steps > 0`` warm-starts the policy before PPO (:mod:`tjap.learned.tree.imitation`): that many
steps of an expert (``imitation_expert``: greedy-within-q or the look-ahead repair) are collected
in a second environment on the same windows (reset with ``seed + 1``), the actor is
behaviour-cloned (masked cross-entropy, hard or soft targets) and the critic fitted to the
expert's episode returns, then PPO runs for ``timesteps`` (0 = the cloned policy alone). The
settings are recorded under ``training.imitation``.

The environment's loop (n^D, re-insertion order) is by default that of the setting's SA preset;
``loop="best"`` trains in the loop of the best hand-written SA (:data:`tjap.heuristics.tree.anneal.SA_PRESETS`
``"best"``: n^D = 5, largest first) on the setting's layout and cost convention. The loop is
recorded in the metadata (``training.loop``, ``training.loop_options``), and
:func:`tjap.learned.tree.policy.solve_nsa` runs ``preset="best"`` only with weights trained in it.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

from tjap.core.errors import InvalidInputError, check_int

#: Layout and cost convention of each setting; the environment's loop (re-insertion order, n^D,
#: q) is by default that of the SA preset of the same name (:data:`tjap.heuristics.tree.anneal.SA_PRESETS`).
SETTINGS = {
    "published": {"layout": "published", "convention": "published"},
    "paper": {"layout": "paper", "convention": "paper"},
}

#: The loops a policy can be trained in: the setting's own (None) or the best hand-written SA's.
LOOPS = (None, "best")

#: The loop options recorded with the weights (the SA preset's, less its repair and q).
LOOP_OPTIONS = ("iterations", "max_remove", "t_max", "t_min", "reinsert", "initial")

PPO = {
    "n_steps": 2048,
    "batch_size": 256,
    "learning_rate": 3e-4,
    "gamma": 1.0,
    "gae_lambda": 1.0,
    "ent_coef": 0.01,
    "n_epochs": 10,
    "clip_range": 0.2,
}


def train_nsa(
    arch="cnn3",
    timesteps=300_000,
    seed=0,
    out="learned/weights/nsa_cnn3",
    setting="published",
    num_windows=500,
    reward="repaired",
    quiet=False,
    device="cpu",
    ppo=None,
    boundaries=False,
    idle_flag=False,
    imitation_steps=0,
    imitation_epochs=10,
    imitation_temperature=0.0,
    imitation_lr=1e-3,
    imitation_batch_size=256,
    imitation_expert="greedy-within-q",
    loop=None,
    q=None,
    warmup_repair="uniform",
    command=None,
) -> dict:
    """Train an NSA policy (see the module doc) and write its weights; returns their paths, the
    wall time, the final mean PPO reward and the imitation dict.

    ``loop``: None (the setting's SA preset) or ``"best"`` (:data:`LOOPS`); ``q``: the positions
    the policy chooses among (default: the loop preset's q, 100); ``warmup_repair``: the repair
    of the moves that make each episode's current solution (:class:`tjap.learned.tree.env.NSARepairEnv`);
    ``imitation_expert``: :data:`tjap.learned.tree.imitation.EXPERTS`; ``command``: the command line
    recorded in the metadata."""
    try:
        import torch
        from sb3_contrib import MaskablePPO
        from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.monitor import Monitor
    except ImportError as exc:
        raise InvalidInputError(
            f"training needs torch, stable-baselines3 and sb3-contrib ({exc.name} "
            "is missing); install the project with `make test` or pip install -e ."
        ) from None
    from tjap.heuristics.tree.anneal import SA_PRESETS
    from tjap.learned.tree.env import NSARepairEnv
    from tjap.learned.tree.nets import policy_kwargs
    from tjap.placement.tree.stream import generate_windows

    if setting not in SETTINGS:
        raise InvalidInputError(f"setting must be one of {', '.join(SETTINGS)}, got {setting!r}")
    if loop not in LOOPS:
        raise InvalidInputError(f"loop must be the setting's (None) or 'best', got {loop!r}")
    loop_name = loop or setting
    s, preset = SETTINGS[setting], SA_PRESETS[loop_name]
    q = preset["q"] if q is None else q
    check_int("q", q, 1)
    hyper = {**PPO, **(ppo or {})}
    if timesteps < 0 or imitation_steps < 0:
        raise InvalidInputError("timesteps and imitation_steps must be non-negative")
    if timesteps == 0 and imitation_steps == 0:
        raise InvalidInputError("nothing to train: give timesteps or imitation_steps")
    started = time.perf_counter()
    torch.manual_seed(seed)
    windows = generate_windows(s["layout"], num_windows, seed + 1000, convention=s["convention"])
    env_kwargs = {
        "convention": s["convention"],
        "reinsert": preset["reinsert"],
        "max_remove": preset["max_remove"],
        "q": q,
        "reward": reward,
        "boundaries": boundaries,
        "idle_flag": idle_flag,
        "warmup_repair": warmup_repair,
    }
    env = Monitor(NSARepairEnv(windows, **env_kwargs))
    env.reset(seed=seed)
    model = MaskablePPO(
        MaskableActorCriticPolicy,
        env,
        policy_kwargs=policy_kwargs(arch),
        seed=seed,
        device=device,
        verbose=0,
        **hyper,
    )
    imitation = None
    curve: list[dict] = []
    curve_path = Path(out).with_name(Path(out).name + "_curve.csv")
    curve_path.parent.mkdir(parents=True, exist_ok=True)
    if imitation_steps:
        offset = time.perf_counter() - started
        imitation, history = _imitate(
            model.policy,
            NSARepairEnv(windows, **env_kwargs),
            imitation_steps,
            seed,
            imitation_epochs,
            imitation_temperature,
            imitation_lr,
            imitation_batch_size,
            imitation_expert,
        )
        # the curve then starts with the behaviour-cloning epochs (stage "imitation")
        curve.extend(
            {
                "stage": "imitation",
                "timesteps": 0,
                "episodes": imitation["episodes"],
                "mean_reward_100": "",
                "bc_epoch": h["epoch"],
                "bc_loss": h["loss"],
                "wall_s": offset + imitation["collect_s"] + h["wall_s"],
            }
            for h in history
        )
        _write_curve(curve_path, curve)

    class Progress(BaseCallback):
        def _on_training_start(self):
            from tqdm import tqdm

            self.bar = tqdm(
                total=timesteps,
                desc=f"train nsa/{arch}",
                leave=False,
                file=sys.stderr,
                disable=quiet or not sys.stderr.isatty(),
            )

        def _on_step(self):
            self.bar.update(1)
            return True

        def _on_rollout_end(self):
            rewards = [e["r"] for e in self.model.ep_info_buffer]
            if rewards:
                row = {
                    "timesteps": self.num_timesteps,
                    "episodes": len(env.get_episode_rewards()),
                    "mean_reward_100": sum(rewards) / len(rewards),
                    "wall_s": time.perf_counter() - started,
                }
                curve.append(row if imitation is None else {"stage": "ppo", **row})
                _write_curve(curve_path, curve)  # as it grows, so a long run can be watched

        def _on_training_end(self):
            self.bar.close()

    if timesteps:
        model.learn(total_timesteps=timesteps, callback=Progress())
    wall = time.perf_counter() - started
    spec = env.unwrapped.spec_dict
    algorithm = "MaskablePPO"
    if imitation is not None:
        algorithm = "behaviour cloning + MaskablePPO" if timesteps else "behaviour cloning"
    training = {
        "algorithm": algorithm,
        "seed": seed,
        "timesteps": timesteps,
        "setting": setting,
        "loop": loop_name,
        "loop_options": {name: preset[name] for name in LOOP_OPTIONS},
        "warmup_repair": warmup_repair,
        "windows": num_windows,
        "window_seed": seed + 1000,
        "reward": reward,
        "ppo": hyper,
        "wall_s": round(wall, 1),
        "device": device,
        "torch_threads": torch.get_num_threads(),
    }
    if imitation is not None:
        training["imitation"] = imitation
    if command is not None:
        training["command"] = command
    weights, meta = save_policy(model.policy, out, arch=arch, spec=spec, training=training)
    return {
        "weights": str(weights),
        "metadata": str(meta),
        "curve": str(curve_path),
        "wall_s": wall,
        "final_mean_reward": curve[-1]["mean_reward_100"] if timesteps and curve else None,
        "imitation": imitation,
    }


def save_policy(policy, path, *, arch: str, spec: dict, training: dict) -> tuple[Path, Path]:
    """Write NSA weights: ``path``.pt (the policy's state dict, to resume training),
    ``path``.npz (the actor's arrays, what solving reads without torch) and ``path``.json (the
    architecture, the feature spec and its hash, ``training``, both files' checksums); returns
    the paths of the .pt and the .json."""
    from tjap.learned.policy_io import save_inference, save_weights, spec_hash
    from tjap.learned.tree.policy import actor_arrays

    weights, meta = save_weights(
        path,
        "nsa",
        policy,
        {
            "architecture": arch,
            "feature_spec": spec,
            "feature_spec_hash": spec_hash(spec),
            "training": training,
        },
    )
    save_inference(meta, "nsa", actor_arrays(policy))
    return weights, meta


def _imitate(
    policy, env, steps, seed, epochs, temperature, learning_rate, batch_size, expert
) -> tuple[dict, list[dict]]:
    """Behaviour-clone ``policy`` on ``expert`` (:data:`tjap.learned.tree.imitation.EXPERTS`): (the
    metadata's imitation dict, the per-epoch losses)."""
    from tjap.learned.tree.imitation import bc_losses, behaviour_clone, collect_demonstrations

    tick = time.perf_counter()
    demos = collect_demonstrations(
        env, steps, seed=seed + 1, temperature=temperature, expert=expert
    )
    history = behaviour_clone(
        policy,
        demos,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        temperature=temperature,
        seed=seed,
    )
    final = bc_losses(policy, demos, temperature=temperature)
    return {
        "steps": steps,
        "collected_steps": len(demos),
        "episodes": demos.episodes,
        "epochs": epochs,
        "expert": expert,
        "temperature": temperature,
        "targets": "soft" if temperature > 0 else "hard",
        "learning_rate": learning_rate,
        "batch_size": batch_size,
        "optimizer": "Adam",
        "vf_coef": 0.5,
        "expert_mean_return": round(float(demos.returns.mean()), 6),
        "train_loss": [round(h["loss"], 6) for h in history],
        "final": {key: round(value, 6) for key, value in final.items()},
        "collect_s": round(demos.wall_s, 1),
        "wall_s": round(time.perf_counter() - tick, 1),
    }, history


def _write_curve(path: Path, curve: list[dict]) -> None:
    fields = list(dict.fromkeys(key for row in curve for key in row))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(curve)
