"""Training the NSA repair operator with MaskablePPO (sb3-contrib), reproducible from a seed.

    tjap train nsa --arch cnn3 --timesteps 300000 --seed 0 --out learned/weights/nsa_cnn3

Writes ``OUT.pt`` + ``OUT.json`` (the policy and its metadata) and ``OUT_curve.csv`` (the
learning curve: timesteps, episodes, mean reward of the last 100 episodes). Training windows come
from the paper's stream under a seed distinct from the evaluation windows (``seed + 1000``).
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

from tjap.errors import InvalidInputError

SETTINGS = {"published": {"layout": "published", "convention": "published",
                          "reinsert": "window-order"},
            "paper": {"layout": "paper", "convention": "paper", "reinsert": "largest-first"}}

PPO = {"n_steps": 2048, "batch_size": 256, "learning_rate": 3e-4, "gamma": 1.0, "gae_lambda": 1.0,
       "ent_coef": 0.01, "n_epochs": 10, "clip_range": 0.2}


def train_nsa(arch="cnn3", timesteps=300_000, seed=0, out="learned/weights/nsa_cnn3",
              setting="published", num_windows=500, reward="repaired", quiet=False,
              device="cpu", ppo=None, boundaries=False, idle_flag=False) -> dict:
    try:
        import torch
        from sb3_contrib import MaskablePPO
        from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.monitor import Monitor
    except ImportError as exc:
        raise InvalidInputError(f"training needs torch, stable-baselines3 and sb3-contrib ({exc.name} "
                                "is missing); install the project with `make test` or pip install -e .")
    from learned.envs import NSARepairEnv
    from learned.nets import policy_kwargs
    from learned.policy_io import save_policy
    from tjap.stream import generate_windows

    if setting not in SETTINGS:
        raise InvalidInputError(f"setting must be one of {', '.join(SETTINGS)}, got {setting!r}")
    s = SETTINGS[setting]
    hyper = {**PPO, **(ppo or {})}
    started = time.perf_counter()
    torch.manual_seed(seed)
    windows = generate_windows(s["layout"], num_windows, seed + 1000, convention=s["convention"])
    env = Monitor(NSARepairEnv(windows, convention=s["convention"], reinsert=s["reinsert"],
                               reward=reward, boundaries=boundaries, idle_flag=idle_flag))
    env.reset(seed=seed)
    model = MaskablePPO(MaskableActorCriticPolicy, env, policy_kwargs=policy_kwargs(arch),
                        seed=seed, device=device, verbose=0, **hyper)
    curve: list[dict] = []
    curve_path = Path(out).with_name(Path(out).name + "_curve.csv")
    curve_path.parent.mkdir(parents=True, exist_ok=True)

    class Progress(BaseCallback):
        def _on_training_start(self):
            from tqdm import tqdm

            self.bar = tqdm(total=timesteps, desc=f"train nsa/{arch}", leave=False,
                            disable=quiet or not sys.stdout.isatty())

        def _on_step(self):
            self.bar.update(1)
            return True

        def _on_rollout_end(self):
            rewards = [e["r"] for e in self.model.ep_info_buffer]
            if rewards:
                curve.append({"timesteps": self.num_timesteps, "episodes": len(env.get_episode_rewards()),
                              "mean_reward_100": sum(rewards) / len(rewards),
                              "wall_s": time.perf_counter() - started})
                _write_curve(curve_path, curve)  # as it grows, so a long run can be watched

        def _on_training_end(self):
            self.bar.close()

    model.learn(total_timesteps=timesteps, callback=Progress())
    wall = time.perf_counter() - started
    spec = env.unwrapped.spec_dict
    weights, meta = save_policy(model.policy, out, arch=arch, spec=spec, training={
        "algorithm": "MaskablePPO", "seed": seed, "timesteps": timesteps, "setting": setting,
        "windows": num_windows, "window_seed": seed + 1000, "reward": reward, "ppo": hyper,
        "wall_s": round(wall, 1), "device": device, "torch_threads": torch.get_num_threads()})
    return {"weights": str(weights), "metadata": str(meta), "curve": str(curve_path),
            "wall_s": wall, "final_mean_reward": curve[-1]["mean_reward_100"] if curve else None}


def _write_curve(path: Path, curve: list[dict]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(curve[0]))
        writer.writeheader()
        writer.writerows(curve)
