"""Train every learned provisioner of seed 004 from one command: record episodes, pretrain the
foundation models, train the DQN and policy-gradient heads and the tree baselines, and write the
weights with their metadata.

    tjap train provision --trace placement/batch/data/ls6-a100.tsv --out learned/weights --workers 16

1. Episodes (:mod:`tjap.learned.batch.episodes`, recorded by stepping the gymnasium environment
   :class:`tjap.learned.batch.env.ProvisionEnv`): pairs of 1- and 8-node jobs (alternating)
   injected at uniform random times of [--from, --to - 6 days) into a replay of the trace's jobs
   submitted before --to (nothing after --to is ever seen: March 2023 stays unseen), scheduler
   setting --scheduler. 15 % of the episodes (seeded) are held out for validation.
2. Foundation models, regressing the successor's wait if submitted now (hours, smooth L1) on the
   history: the transformer on every training decision; the mixture of experts by first
   pretraining one expert per equal time partition of [--from, --to) (the paper's temporal
   partitions: by default 4, about a month each) and then fitting the softmax gate with the experts
   frozen.
3. Heads on each frozen foundation (inputs: its embedding and the head inputs of
   :func:`tjap.learned.batch.features.head_inputs`), reward -(e_I * interruption_h + e_O *
   overlap_h) at the end of an episode (:func:`tjap.learned.batch.env.reward_h`, the
   environment's reward):
   - DQN: double DQN over the recorded transitions (experience replay of every decision: submit is
     terminal with the probed reward; wait leads to the next decision, or to the reactive
     fallback's reward after the last one), gamma = 1, a target network copied every 250 steps.
   - Policy gradient: gradient ascent on the exact expected return of the stochastic stopping
     policy on each recorded episode (sum over k of P(first submit at k) * reward_k, plus the
     fallback): the states do not depend on the actions before the submission, so the expectation
     over the policy's action sequences has this closed form, the policy-gradient theorem without
     REINFORCE's sampling noise.
4. Trees (the ``ml-baselines`` extra): scikit-learn's RandomForestRegressor and XGBoost regress the
   same wait on the flattened normalised history of a random subsample of training decisions;
   shipped as arrays (:mod:`tjap.learned.batch.trees`).

Each model is validated on the held-out episodes by replaying its decisions (exact: the recorded
episode holds the outcome of submitting at every decision); the figures go into its metadata. The
policy-gradient head's serving mode (greedy or sampled) is the better of the two there.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.learned.batch import episodes as E
from tjap.learned.batch.env import reward_h
from tjap.learned.batch.features import HOUR_S, head_inputs, normalise
from tjap.learned.batch.weights import save

DAY_S = 86400


def log(*args):
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def summarise(outcomes_s) -> dict:
    o = np.asarray(outcomes_s, dtype=np.float64) / HOUR_S
    if o.size == 0:
        return {"episodes": 0}
    return {
        "episodes": int(o.size),
        "mean_interruption_h": float(np.maximum(o, 0).mean()),
        "mean_overlap_h": float(np.maximum(-o, 0).mean()),
        "zero_interruption_fraction": float((o <= 0).mean()),
    }


def validate(data: dict, submit: np.ndarray) -> dict:
    """Figures of a decision rule on recorded episodes, overall and by load level (by the
    reactive fallback's outcome: heavy > 12 h, medium 2-12 h, light < 2 h)."""
    outcomes, _ = E.first_submission(data, submit)
    fb = data["fallback_outcome_s"]
    out = {"all": summarise(outcomes)}
    for load, mask in (
        ("heavy", fb > 12 * HOUR_S),
        ("medium", (fb > 2 * HOUR_S) & (fb <= 12 * HOUR_S)),
        ("light", fb <= 2 * HOUR_S),
    ):
        out[load] = summarise(outcomes[mask])
    out["cost_h"] = float(-reward_h(outcomes).mean()) if len(outcomes) else 0.0
    return out


# -- torch helpers ------------------------------------------------------------------------------------
class Windows:
    """The normalised rows of a set of episodes on a device, and its decisions' window indices."""

    def __init__(self, data: dict, device, history: int = 144):
        import torch

        self.rows = torch.from_numpy(normalise(data["rows"])).to(device)
        self.index = torch.from_numpy(E.window_index(data, history)).to(device)
        self.wait_h = torch.from_numpy((data["wait_s"] / HOUR_S).astype(np.float32)).to(device)

    def __len__(self):
        return len(self.index)

    def batch(self, which):
        return self.rows[self.index[which]]


def fit_regressor(
    model,
    train: Windows,
    val: Windows,
    decisions,
    epochs: int,
    deadline: float,
    batch: int = 512,
    lr: float = 1e-3,
    label: str = "",
) -> list[dict]:
    """Smooth-L1 regression of the wait (hours) on the history; returns the curve."""
    import torch

    device = train.rows.device
    decisions = torch.as_tensor(decisions, device=device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    steps = max(1, epochs * (len(decisions) // batch))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    curve, step = [], 0
    for epoch in range(epochs):
        model.train()
        perm = decisions[torch.randperm(len(decisions), device=device)]
        total, count = 0.0, 0
        for i in range(0, len(perm) - batch + 1, batch):
            b = perm[i : i + batch]
            pred, _ = model(train.batch(b))
            loss = torch.nn.functional.smooth_l1_loss(pred, train.wait_h[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step < steps - 1:
                sched.step()
            step += 1
            total, count = total + loss.item() * len(b), count + len(b)
        val_mae = mae(model, val)
        curve.append(
            {"epoch": epoch + 1, "train_loss": total / max(count, 1), "val_mae_h": val_mae}
        )
        log(
            f"{label} epoch {epoch + 1}: train smooth-L1 {total / max(count, 1):.3f}, "
            f"val MAE {val_mae:.3f} h"
        )
        if time.time() > deadline:
            log(f"{label}: time budget reached")
            break
    model.eval()
    return curve


def predict_all(model, windows: Windows, batch: int = 4096):
    """(predicted wait h, embedding) of every decision, as numpy."""
    import torch

    preds, embs = [], []
    model.eval()
    with torch.no_grad():
        for i in range(0, len(windows), batch):
            p, e = model(
                windows.batch(
                    torch.arange(i, min(i + batch, len(windows)), device=windows.rows.device)
                )
            )
            preds.append(p.float().cpu().numpy())
            embs.append(e.float().cpu().numpy())
    if not preds:
        return np.zeros(0, np.float32), np.zeros((0, model.embedding_dim), np.float32)
    return np.concatenate(preds), np.concatenate(embs)


def mae(model, windows: Windows) -> float:
    if len(windows) == 0:
        return float("nan")
    pred, _ = predict_all(model, windows)
    return float(np.abs(pred - windows.wait_h.cpu().numpy()).mean())


def head_features(data, pred_h, emb) -> np.ndarray:
    extra = head_inputs(pred_h, data["remaining_s"] / HOUR_S, data["running"])
    return np.concatenate([emb, extra], 1).astype(np.float32)


def train_dqn(
    z_train, data, rewards, fb_rewards, embedding_dim, device, steps, deadline, seed
) -> tuple:
    """Double DQN over every recorded transition; Q in units of 10 h of reward."""
    import copy

    import torch

    from tjap.learned.batch.nets import DecisionHead

    torch.manual_seed(seed)
    head = DecisionHead(embedding_dim, outputs=2).to(device)
    target = copy.deepcopy(head)
    opt = torch.optim.Adam(head.parameters(), lr=1e-3)
    z = torch.from_numpy(z_train).to(device)
    r_sub = torch.from_numpy((rewards / 10).astype(np.float32)).to(device)
    episode = E.episode_of(data)
    do = data["decision_offset"]
    last = np.zeros(len(episode), bool)
    last[do[1:] - 1] = True
    r_fb = torch.from_numpy((fb_rewards[episode] / 10).astype(np.float32)).to(device)
    last_t = torch.from_numpy(last).to(device)
    n = len(episode)
    gen = torch.Generator(device=device).manual_seed(seed)
    curve = []
    for step in range(steps):
        b = torch.randint(0, n, (1024,), device=device, generator=gen)
        nxt = torch.clamp(b + 1, max=n - 1)
        with torch.no_grad():
            a_star = head(z[nxt][:, :embedding_dim], z[nxt][:, embedding_dim:]).argmax(1)
            q_next = target(z[nxt][:, :embedding_dim], z[nxt][:, embedding_dim:]).gather(
                1, a_star[:, None]
            )[:, 0]
            y_wait = torch.where(last_t[b], r_fb[b], q_next)
        q = head(z[b][:, :embedding_dim], z[b][:, embedding_dim:])
        loss = torch.nn.functional.smooth_l1_loss(
            q[:, 0], y_wait
        ) + torch.nn.functional.smooth_l1_loss(q[:, 1], r_sub[b])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % 250 == 0:
            target.load_state_dict(head.state_dict())
        if (step + 1) % 1000 == 0:
            curve.append({"step": step + 1, "td_loss": loss.item()})
        if time.time() > deadline:
            log("dqn: time budget reached")
            break
    head.eval()
    return head, curve


def segment_expected_return(logits, rewards, fb, starts, episode):
    """Exact expected return per episode of a stopping policy with submit probabilities
    sigmoid(logits) per decision (decisions of episode e are starts[e]:starts[e+1])."""
    import torch

    log_wait = torch.nn.functional.logsigmoid(-logits)
    log_submit = torch.nn.functional.logsigmoid(logits)
    c = torch.cumsum(log_wait, 0)
    c_before = torch.cat([c.new_zeros(1), c])  # c_before[i] = sum of log_wait[:i]
    start_c = c_before[starts[:-1]]  # per episode
    survive_before = c_before[:-1] - start_c[episode]  # log P(no submit before k)
    p_stop = torch.exp(survive_before + log_submit)
    n_ep = len(starts) - 1
    stop_part = logits.new_zeros(n_ep).index_add_(0, episode, p_stop * rewards)
    survive_all = torch.exp(c_before[starts[1:]] - start_c)
    return stop_part + survive_all * fb


def train_pg(
    z_train, data, rewards, fb_rewards, embedding_dim, device, steps, deadline, seed
) -> tuple:
    import torch

    from tjap.learned.batch.nets import DecisionHead

    torch.manual_seed(seed)
    head = DecisionHead(embedding_dim, outputs=1).to(device)
    with torch.no_grad():
        head.net[-1].bias.fill_(-3.0)  # start cautious: about 5 % per decision
    opt = torch.optim.Adam(head.parameters(), lr=1e-3)
    z = torch.from_numpy(z_train).to(device)
    r = torch.from_numpy((rewards / 10).astype(np.float32)).to(device)
    fb = torch.from_numpy((fb_rewards / 10).astype(np.float32)).to(device)
    starts = torch.from_numpy(data["decision_offset"]).to(device)
    episode = torch.from_numpy(E.episode_of(data)).to(device)
    curve = []
    for step in range(steps):
        logits = head(z[:, :embedding_dim], z[:, embedding_dim:])[:, 0]
        j = segment_expected_return(logits, r, fb, starts, episode).mean()
        opt.zero_grad()
        (-j).backward()
        opt.step()
        if (step + 1) % 100 == 0:
            curve.append({"step": step + 1, "expected_cost_h": -j.item() * 10})
        if time.time() > deadline:
            log("pg: time budget reached")
            break
    head.eval()
    return head, curve


def head_outputs(head, z, embedding_dim, device):
    import torch

    with torch.no_grad():
        t = torch.from_numpy(z).to(device)
        return head(t[:, :embedding_dim], t[:, embedding_dim:]).cpu().numpy()


# -- trees --------------------------------------------------------------------------------------------
def train_trees(data, decisions, val, args, results: dict):
    """RF and XGBoost on flattened histories (runs in a thread beside the GPU work)."""
    try:
        x_index = E.window_index(data)[decisions]
        rows = normalise(data["rows"])
        x = rows[x_index].reshape(len(decisions), -1)
        y = (data["wait_s"][decisions] / HOUR_S).astype(np.float32)
        xv = normalise(val["rows"])[E.window_index(val)].reshape(len(val["wait_s"]), -1)
        from tjap.learned.batch.trees import from_sklearn_forest, from_xgboost

        try:
            from sklearn.ensemble import RandomForestRegressor
        except ImportError:
            results["rf"] = {"error": "scikit-learn is not installed (extra ml-baselines)"}
        else:
            tick = time.time()
            forest = RandomForestRegressor(
                n_estimators=args.rf_trees,
                max_leaf_nodes=128,
                max_features=0.2,
                min_samples_leaf=5,
                n_jobs=max(1, args.workers - 2),
                random_state=args.seed,
            ).fit(x, y)
            ens = from_sklearn_forest(forest)
            agree = float(np.abs(ens.predict(xv[:2000]) - forest.predict(xv[:2000])).max())
            results["rf"] = {
                "ensemble": ens,
                "seconds": time.time() - tick,
                "max_abs_diff": agree,
                "params": forest.get_params(),
            }
            log(
                f"rf: {time.time() - tick:.0f} s, {ens.num_nodes} nodes, array/sklearn diff {agree:.2e}"
            )
        try:
            import xgboost as xgb
        except ImportError:
            results["xgb"] = {"error": "xgboost is not installed (extra ml-baselines)"}
        else:
            tick = time.time()
            params = {
                "max_depth": 5,
                "eta": 0.05,
                "subsample": 0.8,
                "colsample_bytree": 0.3,
                "objective": "reg:squarederror",
                "tree_method": "hist",
                "max_bin": 64,
                "nthread": max(1, args.workers - 2),
                "seed": args.seed,
            }
            booster = xgb.train(params, xgb.DMatrix(x, label=y), args.xgb_rounds)
            ens = from_xgboost(booster)
            agree = float(
                np.abs(ens.predict(xv[:2000]) - booster.predict(xgb.DMatrix(xv[:2000]))).max()
            )
            results["xgb"] = {
                "ensemble": ens,
                "seconds": time.time() - tick,
                "max_abs_diff": agree,
                "params": params | {"rounds": args.xgb_rounds},
                "version": xgb.__version__,
            }
            log(
                f"xgb: {time.time() - tick:.0f} s, {ens.num_nodes} nodes, array/xgboost diff {agree:.2e}"
            )
    except Exception as exc:  # reported in the metadata, never silently
        results["error"] = repr(exc)
        log("trees failed:", repr(exc))


# -- the pipeline -------------------------------------------------------------------------------------
def injection_times(start_s, end_s, count, seed, pair_nodes):
    rng = np.random.default_rng(seed)
    times = np.sort(rng.integers(start_s, end_s, count))
    return [(int(t), pair_nodes[i % len(pair_nodes)]) for i, t in enumerate(rng.permutation(times))]


def split_episodes(n_ep: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(training, held-out) episode indices: 15 % held out, drawn by ``rng`` (seeded by --seed)."""
    order = rng.permutation(n_ep)
    n_val = max(1, int(round(0.15 * n_ep)))
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def parser(add_help: bool = True) -> argparse.ArgumentParser:
    """The options of a training run: ``tjap train provision`` takes them, and
    :func:`tjap.learned.batch.calibrate.training_args` re-reads a run's recorded command with them."""
    p = argparse.ArgumentParser(
        prog="tjap train provision", add_help=add_help, description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--trace",
        required=True,
        metavar="FILE",
        help="the trace replayed (SWF or sacct TSV, e.g. the bundled "
        "placement/batch/data/ls6-a100.tsv)",
    )
    p.add_argument(
        "--out",
        default="learned/weights",
        metavar="DIR",
        help="folder of the provision_*.{pt,npz,json} written (default "
        "learned/weights; created if missing)",
    )
    p.add_argument(
        "--from",
        dest="start",
        default="2022-11-01",
        metavar="ISO",
        help="start of the training period (UTC; default 2022-11-01)",
    )
    p.add_argument(
        "--to",
        dest="end",
        default="2023-03-01",
        metavar="ISO",
        help="end of the training period (UTC, excluded; nothing after it is "
        "replayed; default 2023-03-01)",
    )
    p.add_argument(
        "--scheduler",
        default="mirage",
        help="scheduler setting of the replay: mirage (default; conservative "
        "backfill, age + size priority) or easy (Slurm's defaults)",
    )
    p.add_argument(
        "--cluster-nodes", type=int, default=76, help="nodes of the simulated cluster (default 76)"
    )
    p.add_argument(
        "--pair-nodes",
        type=int,
        nargs="+",
        default=[1, 8],
        metavar="N",
        help="nodes of the pair jobs, taken in turn by the episodes (default 1 8)",
    )
    p.add_argument(
        "--episodes",
        type=int,
        default=1000,
        help="episodes to record, within the budget's recording share (default 1000)",
    )
    p.add_argument(
        "--workers", type=int, default=2, help="processes recording the episodes (default 2)"
    )
    p.add_argument(
        "--data",
        metavar="NPZ",
        help="an .npz of recorded episodes: read if it exists, else written",
    )
    p.add_argument(
        "--budget-s",
        type=float,
        default=1800,
        help="wall-clock budget of the whole run, in seconds (default 1800)",
    )
    p.add_argument(
        "--record-share",
        type=float,
        default=0.45,
        help="share of the budget for recording episodes (default 0.45)",
    )
    p.add_argument(
        "--epochs",
        type=int,
        default=12,
        help="epochs of the foundation models' regression (default 12; the mixture's "
        "gate a quarter of them)",
    )
    p.add_argument(
        "--experts",
        type=int,
        default=4,
        help="experts of the mixture, one per equal time partition of the training "
        "period (default 4)",
    )
    p.add_argument(
        "--dqn-steps",
        type=int,
        default=20000,
        help="gradient steps of each DQN head, fewer when its share of --budget-s "
        "runs out (default 20000)",
    )
    p.add_argument(
        "--pg-steps",
        type=int,
        default=1500,
        help="gradient steps of each policy-gradient head, fewer when its share of "
        "--budget-s runs out (default 1500)",
    )
    p.add_argument(
        "--tree-samples",
        type=int,
        default=30000,
        help="training decisions sampled for the random forest and XGBoost (default 30000)",
    )
    p.add_argument(
        "--rf-trees", type=int, default=60, help="trees of the random forest (default 60)"
    )
    p.add_argument(
        "--xgb-rounds", type=int, default=150, help="boosting rounds of XGBoost (default 150)"
    )
    p.add_argument(
        "--e-interruption",
        type=float,
        default=1.0,
        help="weight e_I of an hour of interruption in the heads' reward (default 1)",
    )
    p.add_argument(
        "--e-overlap",
        type=float,
        default=1.0,
        help="weight e_O of an hour of overlap in the heads' reward (default 1)",
    )
    p.add_argument(
        "--device", default="cuda", help="torch device (default cuda, or cpu when no GPU is there)"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    return p


def run(args, argv) -> int:
    """Train every provisioner with the options ``args`` (of :func:`parser`); ``argv`` is the
    command line recorded in the metadata (after ``tjap train provision``)."""
    import torch

    from tjap.heuristics.batch.rules import scheduler_config
    from tjap.learned.batch.nets import HistoryTransformer, MixtureOfExperts
    from tjap.placement.batch import load_trace
    from tjap.placement.batch.replay import check_period, parse_date

    began = time.time()
    deadline = began + args.budget_s
    device = torch.device(
        args.device if args.device != "cuda" or torch.cuda.is_available() else "cpu"
    )
    torch.manual_seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    config = scheduler_config(args.scheduler)
    jobs, _ = load_trace(args.trace)
    start_s, end_s = (
        int(jobs.from_unix(parse_date(d, flag)))
        for d, flag in ((args.start, "--from"), (args.end, "--to"))
    )
    if end_s - 6 * DAY_S <= start_s:
        raise InvalidInputError("--to must be more than 6 days after --from")
    check_period(jobs, start_s, end_s)
    seen = jobs.take(np.flatnonzero(jobs.submit_s < end_s))  # nothing after --to is ever replayed

    # 1. episodes ------------------------------------------------------------------------------
    if args.data and Path(args.data).exists():
        data = dict(np.load(args.data))
        log(f"read {len(data['inject_s'])} episodes from {args.data}")
    else:
        injections = injection_times(
            start_s, end_s - 6 * DAY_S, args.episodes, args.seed, args.pair_nodes
        )
        from tjap.placement.batch.chained import ChainedEpisode, Pair  # compile once before forking

        ChainedEpisode(seen, args.cluster_nodes, injections[0][0], Pair(), config=config)
        data = E.record_many(
            seen,
            args.cluster_nodes,
            injections,
            config,
            args.workers,
            deadline_s=began + args.record_share * args.budget_s,
        )
        log(
            f"recorded {len(data['inject_s'])} of {len(injections)} episodes, "
            f"{len(data['wait_s'])} decisions, {time.time() - began:.0f} s"
        )
        if args.data:
            Path(args.data).parent.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(args.data, **data)
    n_ep = len(data["inject_s"])
    if n_ep < 4:
        raise InvalidInputError(f"only {n_ep} episodes recorded; give more --budget-s or --workers")
    rng = np.random.default_rng(args.seed)
    train_idx, val_idx = split_episodes(n_ep, rng)
    n_val = len(val_idx)
    train, val = E.subset(data, train_idx), E.subset(data, val_idx)
    fb_h = data["fallback_outcome_s"] / HOUR_S
    log(
        f"train {n_ep - n_val} / validation {n_val} episodes; reactive outcome: heavy "
        f"{(fb_h > 12).sum()}, medium {((fb_h > 2) & (fb_h <= 12)).sum()}, light {(fb_h <= 2).sum()}"
    )
    common = {
        "trace": Path(args.trace).name,
        "scheduler": args.scheduler,
        "train_period": [args.start, args.end],
        "episodes": {"train": n_ep - n_val, "validation": n_val},
        "decisions": {"train": int(len(train["wait_s"])), "validation": int(len(val["wait_s"]))},
        "pair_nodes": args.pair_nodes,
        "cluster_nodes": args.cluster_nodes,
        "reward": {"e_interruption": args.e_interruption, "e_overlap": args.e_overlap},
        "command": "tjap train provision " + " ".join(argv),
        "seed": args.seed,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": str(device)
        + (f" ({torch.cuda.get_device_name()})" if device.type == "cuda" else ""),
    }
    val_figures = {"reactive": validate(val, np.zeros(len(val["wait_s"]), bool))}
    log("validation reactive:", json.dumps(val_figures["reactive"]["all"]))

    # 4. trees, in a thread beside the networks -------------------------------------------------
    tree_results: dict = {}
    tree_decisions = np.sort(
        rng.choice(
            len(train["wait_s"]), min(args.tree_samples, len(train["wait_s"])), replace=False
        )
    )
    trees = threading.Thread(
        target=train_trees, args=(train, tree_decisions, val, args, tree_results)
    )
    trees.start()

    # 2. foundation models -----------------------------------------------------------------------
    tw, vw = Windows(train, device), Windows(val, device)
    remaining = deadline - time.time()
    rewards_train = reward_h(train["outcome_s"], args.e_interruption, args.e_overlap)
    fb_train = reward_h(train["fallback_outcome_s"], args.e_interruption, args.e_overlap)
    models = {}
    tf = HistoryTransformer().to(device)
    tf_curve = fit_regressor(
        tf,
        tw,
        vw,
        np.arange(len(tw)),
        args.epochs,
        time.time() + 0.22 * remaining,
        label="transformer",
    )
    models["transformer"] = (tf, {"curve": tf_curve})
    expert_config = {"d_model": 24, "heads": 4, "layers": 2, "feedforward": 48}
    bounds = np.linspace(start_s, end_s, args.experts + 1)
    dec_inject = train["inject_s"][E.episode_of(train)]
    experts, expert_curves = [], []
    for i in range(args.experts):
        part = np.flatnonzero((dec_inject >= bounds[i]) & (dec_inject < bounds[i + 1]))
        expert = HistoryTransformer(**expert_config).to(device)
        expert_curves.append(
            fit_regressor(
                expert,
                tw,
                vw,
                part,
                args.epochs,
                time.time() + 0.05 * remaining,
                label=f"expert {i}",
            )
        )
        experts.append(expert)
    moe = MixtureOfExperts(experts).to(device)
    for prm in moe.experts.parameters():
        prm.requires_grad_(False)
    gate_curve = fit_regressor(
        moe,
        tw,
        vw,
        np.arange(len(tw)),
        max(2, args.epochs // 4),
        time.time() + 0.1 * remaining,
        label="moe gate",
    )
    models["moe"] = (
        moe,
        {"expert_curves": expert_curves, "gate_curve": gate_curve, "partitions_s": bounds.tolist()},
    )

    # 3. heads ----------------------------------------------------------------------------------
    head_budget = (deadline - time.time()) / 5
    for kind, (model, info) in models.items():
        pred_t, emb_t = predict_all(model, tw)
        pred_v, emb_v = predict_all(model, vw)
        z_t, z_v = head_features(train, pred_t, emb_t), head_features(val, pred_v, emb_v)
        dim = model.embedding_dim
        rule = pred_v * HOUR_S >= val["remaining_s"]
        figures = {kind: validate(val, rule)}
        dqn, dqn_curve = train_dqn(
            z_t,
            train,
            rewards_train,
            fb_train,
            dim,
            device,
            args.dqn_steps,
            time.time() + head_budget,
            args.seed,
        )
        q = head_outputs(dqn, z_v, dim, device)
        figures[f"{kind}_dqn"] = validate(val, q[:, 1] > q[:, 0])
        pg, pg_curve = train_pg(
            z_t,
            train,
            rewards_train,
            fb_train,
            dim,
            device,
            args.pg_steps,
            time.time() + head_budget,
            args.seed,
        )
        logits = head_outputs(pg, z_v, dim, device)[:, 0]
        greedy = validate(val, logits >= 0)
        with torch.no_grad():  # the sampled policy's exact expected cost
            rv = reward_h(val["outcome_s"], args.e_interruption, args.e_overlap)
            fbv = reward_h(val["fallback_outcome_s"], args.e_interruption, args.e_overlap)
            expected = segment_expected_return(
                torch.from_numpy(logits),
                torch.from_numpy(rv.astype(np.float32)),
                torch.from_numpy(fbv.astype(np.float32)),
                torch.from_numpy(val["decision_offset"]),
                torch.from_numpy(E.episode_of(val)),
            )
        sampled_cost = float(-expected.mean())
        mode = "greedy" if greedy["cost_h"] <= sampled_cost else "sample"
        figures[f"{kind}_pg"] = greedy | {"sampled_expected_cost_h": sampled_cost, "mode": mode}
        for name, f in figures.items():
            log(f"validation {name}: cost {f['cost_h']:.2f} h, {json.dumps(f['all'])}")
        val_figures.update(figures)
        foundation_config = model.config if kind == "transformer" else model.experts[0].config
        meta = common | {
            "what": f"seed 004 {kind} foundation model (wait regressor) with DQN and "
            "policy-gradient heads",
            "kind": kind,
            "foundation": foundation_config,
            "experts": args.experts if kind == "moe" else 0,
            "heads": {"dqn": dqn.config, "pg": pg.config},
            "pg_mode": mode,
            "training": info
            | {
                "dqn_curve": dqn_curve,
                "pg_curve": pg_curve,
                "epochs": args.epochs,
                "dqn_steps": args.dqn_steps,
                "pg_steps": args.pg_steps,
            },
            "validation": {"reactive": val_figures["reactive"]} | figures,
            "parameters": int(
                sum(p.numel() for p in model.parameters())
                + sum(p.numel() for p in dqn.parameters())
                + sum(p.numel() for p in pg.parameters())
            ),
        }
        save(out / f"provision_{kind}", {"foundation": model, "dqn": dqn, "pg": pg}, meta)
        log(f"wrote {out}/provision_{kind}.pt")

    trees.join()
    xv_rows = normalise(val["rows"])[E.window_index(val)].reshape(len(val["wait_s"]), -1)
    for kind in ("rf", "xgb"):
        res = tree_results.get(kind)
        if res is None or "ensemble" not in res:
            log(f"{kind}: not trained ({(res or tree_results).get('error', 'unknown')})")
            continue
        pred = res["ensemble"].predict(xv_rows)
        figures = validate(val, pred * HOUR_S >= val["remaining_s"])
        val_figures[kind] = figures
        log(f"validation {kind}: cost {figures['cost_h']:.2f} h, {json.dumps(figures['all'])}")
        save(
            out / f"provision_{kind}",
            res["ensemble"].arrays(),
            common
            | {
                "what": f"seed 004 {'random forest' if kind == 'rf' else 'XGBoost'} regressor of the "
                "successor's wait on the flattened history",
                "kind": kind,
                "nodes": res["ensemble"].num_nodes,
                "training": {k: v for k, v in res.items() if k != "ensemble"}
                | {"samples": int(len(tree_decisions))},
                "validation": {"reactive": val_figures["reactive"], kind: figures},
            },
        )
    log(f"done in {time.time() - began:.0f} s")
    print(
        json.dumps(
            {k: {"cost_h": v["cost_h"], **v["all"]} for k, v in val_figures.items()}, indent=1
        )
    )
    return 0
