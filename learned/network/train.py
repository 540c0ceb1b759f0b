"""Training the seed-003 allocator with MaskablePPO (sb3-contrib), reproducible from a seed.

    tjap train network --timesteps 1000000 --envs 14 --seed 0 --out learned/weights/network_gnn

One model for the nine 64-server topologies (each episode draws one; the network reads the channel
counts from its features), 32-request episodes as in the paper, reward +10 / -10 per accepted /
failed request. Writes ``OUT.pt`` + ``OUT.json`` (weights and metadata: what was done, the command,
seed, date, figures) and ``OUT_curve.csv`` (timesteps, mean episode reward and acceptance of the
last 100 episodes). After training, the policy (masked argmax) is evaluated on every training
topology, 64 servers, 128-request episodes, seeds 0..4 (the benchmark's episodes; training
streams use seeds >= 1000), and the figures go into the metadata.
"""

from __future__ import annotations

import csv
import datetime
import sys
import time
from pathlib import Path

from tjap.core.errors import InvalidInputError
from tjap.placement.network import NAMES

PPO = {
    "n_steps": 256,
    "batch_size": 512,
    "learning_rate": 3e-4,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "ent_coef": 0.01,
    "n_epochs": 5,
    "clip_range": 0.2,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
}


def _make_env(topologies, requests, routing, seed):
    def make():
        import torch
        from stable_baselines3.common.monitor import Monitor

        from tjap.learned.network.env import NetworkAllocEnv

        torch.set_num_threads(1)
        env = Monitor(
            NetworkAllocEnv(topologies, requests=requests, routing=routing),
            info_keywords=("accepted",),
        )
        env.reset(seed=seed)
        return env

    return make


def train_network(
    topologies=NAMES,
    *,
    timesteps=200_000,
    envs=1,
    seed=0,
    out="learned/weights/network_gnn",
    requests=32,
    routing="shortest",
    ppo=None,
    eval_seeds=5,
    eval_requests=128,
    quiet=False,
    command="",
    time_budget_s=None,
    init=None,
    validate_every_s=None,
) -> dict:
    """PPO on ``topologies``; with ``validate_every_s``, every rollout that ends at least that
    many seconds after the last check validates the policy (masked argmax, seeds 100-104,
    :func:`tjap.learned.network.imitation.validate`, never the table's seeds 0-4), and the weights with
    the best validation mean (the start included) are the ones saved."""
    import copy

    import numpy as np
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from tjap.learned.network.nets import ARCH, GNNMaskablePolicy, save
    from tjap.placement.network import paper_topology

    if timesteps < 1 or envs < 1:
        raise InvalidInputError("timesteps and envs must be positive")
    topologies = list(topologies)
    for name in topologies:
        paper_topology(name, 64)  # validates the names
    hyper = {**PPO, **(ppo or {})}
    started = time.perf_counter()
    torch.manual_seed(seed)
    np.random.seed(seed)
    factories = [_make_env(topologies, requests, routing, seed + 7919 * i) for i in range(envs)]
    vec = SubprocVecEnv(factories) if envs > 1 else DummyVecEnv(factories)
    topology = paper_topology(topologies[0], 64)
    model = MaskablePPO(
        GNNMaskablePolicy,
        vec,
        policy_kwargs={"topology": topology},
        seed=seed,
        device="cpu",
        verbose=0,
        **hyper,
    )
    continued = None
    if init is not None:  # go on from earlier weights (PPO again; recorded in the metadata)
        from tjap.learned.network.nets import load

        net, continued = load(init)
        model.policy.net.load_state_dict(net.state_dict())
    curve: list[dict] = []
    checks: list[dict] = []
    best = {"mean": -1.0, "state": None, "timesteps": 0}

    def check(net, timesteps):
        from tjap.learned.network.imitation import validate

        val = validate(copy.deepcopy(net), topologies)
        checks.append(
            {
                "timesteps": int(timesteps),
                "validation": val,
                "wall_s": round(time.perf_counter() - started, 1),
            }
        )
        if not quiet:
            print(checks[-1], flush=True)
        if val["mean"] > best["mean"]:
            best.update(
                mean=val["mean"], state=copy.deepcopy(net.state_dict()), timesteps=int(timesteps)
            )

    if validate_every_s is not None:
        check(model.policy.net, 0)
    last_check = [time.perf_counter()]
    curve_path = Path(out).with_name(Path(out).name + "_curve.csv")
    curve_path.parent.mkdir(parents=True, exist_ok=True)

    class Progress(BaseCallback):
        def _on_training_start(self):
            from tqdm import tqdm

            self.bar = tqdm(
                total=timesteps,
                desc="train network gnn",
                leave=False,
                file=sys.stderr,
                disable=quiet or not sys.stderr.isatty(),
            )

        def _on_step(self):
            self.bar.update(self.training_env.num_envs)
            # stop at the wall-clock budget (the metadata records the steps actually taken)
            return time_budget_s is None or time.perf_counter() - started < time_budget_s

        def _on_rollout_end(self):
            eps = list(self.model.ep_info_buffer)
            if eps:
                curve.append(
                    {
                        "timesteps": self.num_timesteps,
                        "episodes": len(eps),
                        "mean_reward_100": float(np.mean([e["r"] for e in eps])),
                        "acceptance_100": float(np.mean([e["accepted"] for e in eps])) / requests,
                        "wall_s": round(time.perf_counter() - started, 1),
                    }
                )
                _write_curve(curve_path, curve)
                if quiet is False and not sys.stdout.isatty():
                    print(f"{curve[-1]}", flush=True)
            if (
                validate_every_s is not None
                and time.perf_counter() - last_check[0] >= validate_every_s
            ):
                check(self.model.policy.net, self.num_timesteps)
                last_check[0] = time.perf_counter()

        def _on_training_end(self):
            self.bar.close()

    model.learn(total_timesteps=timesteps, callback=Progress())
    vec.close()
    if validate_every_s is not None:
        check(model.policy.net, model.num_timesteps)
        model.policy.net.load_state_dict(best["state"])
    train_s = time.perf_counter() - started
    training = {
        "algorithm": "MaskablePPO (sb3-contrib), from random initialisation; no imitation",
        "command": command,
        "seed": seed,
        "timesteps": int(model.num_timesteps),
        "envs": envs,
        "topologies": topologies,
        "servers": 64,
        "requests_per_episode": requests,
        "reward": {"accepted": 10, "failed": -10, "otherwise": 0},
        "request_seeds": "drawn per episode in [1000, 2^31) from the env's seeded generator",
        "ppo": hyper,
        "train_wall_s": round(train_s, 1),
        "torch_threads": torch.get_num_threads(),
        "date": datetime.date.today().isoformat(),
        "final_mean_reward_100": curve[-1]["mean_reward_100"] if curve else None,
        "final_acceptance_100": curve[-1]["acceptance_100"] if curve else None,
    }
    if time_budget_s is not None:
        training["time_budget_s"] = time_budget_s
    if checks:
        training["validation"] = {
            "what": "masked argmax, 64 servers, 128 requests, seeds 100-104, every "
            f"{validate_every_s} s of training; the best check is the saved weights",
            "checks": checks,
            "chosen_timesteps": best["timesteps"],
            "chosen_validation_mean": best["mean"],
        }
    if continued is not None:
        training["algorithm"] = "MaskablePPO (sb3-contrib), continued from earlier weights"
        training["continued_from"] = {"file": str(init), "training": continued["training"]}
    weights, meta = save(model.policy.net, out, arch=ARCH, routing=routing, training=training)
    figures = evaluate_weights(meta, topologies, seeds=eval_seeds, requests=eval_requests)
    return {
        "weights": str(weights),
        "metadata": str(meta),
        "curve": str(curve_path),
        "wall_s": time.perf_counter() - started,
        "figures": figures,
    }


def _evaluate_one(job):
    from tjap.learned.network.policy import GNNPolicy
    from tjap.placement.network import evaluate, paper_topology

    path, name, servers, seeds, requests = job
    res = evaluate(
        paper_topology(name, servers), lambda: GNNPolicy(path), requests=requests, seeds=seeds
    )
    return {
        k: round(getattr(res, k), 4) for k in ("acceptance", "cpu_utilization", "mem_utilization")
    }


def evaluate_weights(
    path, topologies=NAMES, *, servers=64, seeds=5, requests=128, workers=None
) -> dict:
    """Evaluate the weights at ``path`` (masked argmax) on each topology, seeds 0..seeds-1, in a
    process pool, and record the figures in the metadata under ``training.evaluation``."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    from tjap.learned.policy_io import read_metadata, update_metadata

    if seeds < 1:
        return {}
    jobs = [(str(path), name, servers, seeds, requests) for name in topologies]
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_evaluate_one, jobs))
    else:
        results = [_evaluate_one(job) for job in jobs]
    figures = dict(zip(topologies, results))
    meta_path, meta = read_metadata(path, "network-gnn")
    meta["training"].setdefault("evaluation", {})[f"{servers}_servers"] = {
        "what": f"masked argmax, {servers} servers, {requests} requests, seeds 0..{seeds - 1}",
        "figures": figures,
    }
    update_metadata(meta_path, "network-gnn", meta)
    return figures


def _write_curve(path: Path, curve: list[dict]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(curve[0]))
        writer.writeheader()
        writer.writerows(curve)
