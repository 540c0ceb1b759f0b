"""``tjap train ...``: train the learned operators (never run in the test suite beyond tiny runs)."""

from __future__ import annotations

from tjap.cli.common import add_common, count, positive, print_json
from tjap.errors import InvalidInputError


def add_parser(sub) -> None:
    """Add ``train`` and one subcommand per learned operator to the ``tjap`` parser."""
    p = sub.add_parser("train", help="train a learned operator")
    train = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    t = train.add_parser("nsa", help="the NSA repair operator (MaskablePPO)",
                         description="Train the NSA repair policy with MaskablePPO on windows of "
                                     "the paper's stream; writes OUT.pt, OUT.json and OUT_curve.csv.")
    t.add_argument("--arch", default="cnn3", choices=("fcn1", "fcn2", "fcn3", "cnn1", "cnn2", "cnn3"))

    t.add_argument("--timesteps", type=count, default=300_000,
                   help="PPO steps (0: only the imitation warm start)")
    t.add_argument("--setting", choices=("published", "paper"), default="published")
    t.add_argument("--windows", type=positive(int), default=500, help="training windows")
    t.add_argument("--reward", choices=("repaired", "window"), default="repaired")
    t.add_argument("--device", default="cpu")
    t.add_argument("--idle-flag", action="store_true", help="the published code's fifth feature")
    t.add_argument("--boundaries", action="store_true",
                   help="two extra channels marking where a new switch / pod starts (ours)")
    t.add_argument("--learning-rate", type=positive(float), default=3e-4)
    t.add_argument("--n-steps", type=positive(int), default=2048, help="PPO rollout length")
    t.add_argument("--batch-size", type=positive(int), default=256)
    t.add_argument("--ent-coef", type=float, default=0.01)
    t.add_argument("--clip-range", type=positive(float), default=0.2)
    t.add_argument("--n-epochs", type=positive(int), default=10, help="PPO epochs per rollout")
    t.add_argument("--imitation-steps", type=count, default=0,
                   help="expert (greedy-within-q) steps behaviour-cloned before PPO (0: none)")
    t.add_argument("--imitation-epochs", type=positive(int), default=10)
    t.add_argument("--imitation-temperature", type=float, default=0.0, metavar="T",
                   help="0: clone the cheapest start; T > 0: clone softmax(-cost / T) and roll "
                        "the expert out by sampling it (cost units)")
    t.add_argument("--imitation-lr", type=positive(float), default=1e-3)
    t.add_argument("--imitation-batch-size", type=positive(int), default=256)
    t.add_argument("--out", default="learned/weights/nsa_cnn3")
    add_common(t)
    _add_network(train)

    p.set_defaults(run=cmd_train)


def cmd_train(args) -> int:
    if args.what == "network":
        return _train_network(args)
    from learned.train import train_nsa

    out = train_nsa(args.arch, args.timesteps, args.seed, args.out, args.setting, args.windows,
                    args.reward, quiet=args.quiet, device=args.device, boundaries=args.boundaries,
                    idle_flag=args.idle_flag,
                    ppo={"learning_rate": args.learning_rate, "n_steps": args.n_steps,
                         "batch_size": args.batch_size, "ent_coef": args.ent_coef,
                         "clip_range": args.clip_range, "n_epochs": args.n_epochs},
                    imitation_steps=args.imitation_steps, imitation_epochs=args.imitation_epochs,
                    imitation_temperature=args.imitation_temperature,
                    imitation_lr=args.imitation_lr,
                    imitation_batch_size=args.imitation_batch_size)
    if args.json:
        print_json(out)
    else:
        if out["imitation"]:
            im = out["imitation"]
            print(f"imitation: {im['collected_steps']} expert steps, {im['epochs']} epochs, "
                  f"accuracy {im['final']['accuracy']:.3f} ({im['wall_s']:.0f} s)")
        print(f"trained {args.arch} for {args.timesteps} steps in {out['wall_s']:.0f} s; "
              f"final mean reward {out['final_mean_reward']}")
        print(f"weights: {out['weights']}  metadata: {out['metadata']}  curve: {out['curve']}")
    return 0


def _add_network(train_subparsers) -> None:
    """``tjap train network``: MaskablePPO (this module), or with ``--imitation`` DAgger imitation
    of the exact model (:mod:`learned.network.imitation`) first."""
    from learned.network.train import PPO
    from placement.network import NAMES

    t = train_subparsers.add_parser(
        "network", help="the seed-003 gnn server allocator (imitation and/or MaskablePPO)",
        description="Train the seed-003 gnn allocator on the 64-server topologies: optionally "
                    "DAgger imitation of the exact CP-SAT model (--imitation-iterations), then "
                    "MaskablePPO (--timesteps, 0: none). Writes OUT.pt, OUT.json (metadata) and, "
                    "after PPO, OUT_curve.csv.")
    t.add_argument("--topologies", nargs="+", default=list(NAMES), metavar="NAME")
    t.add_argument("--imitation-iterations", type=int, default=0,
                   help="DAgger rounds of imitation of the exact model (0: none)")
    t.add_argument("--imitation-episodes", type=positive(int), default=6,
                   help="labelled 128-request episodes per DAgger round")
    t.add_argument("--timesteps", type=int, default=200_000, help="PPO steps (0: none)")
    t.add_argument("--envs", type=positive(int), default=1)
    t.add_argument("--requests", type=positive(int), default=32,
                   help="requests per PPO training episode")
    t.add_argument("--learning-rate", type=positive(float), default=PPO["learning_rate"])
    t.add_argument("--time-budget", type=positive(float), default=None, metavar="S",
                   help="wall-clock budget of each stage")
    t.add_argument("--init", default=None, metavar="JSON", help="start from these weights")
    t.add_argument("--eval-seeds", type=int, default=5)
    t.add_argument("--out", default="learned/weights/network_gnn")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--json", action="store_true")
    t.add_argument("--quiet", action="store_true")


def _train_network(args) -> int:
    """Run ``tjap train network`` (bad arguments raise InvalidInputError: one line, exit 2)."""
    import shlex
    import sys
    from pathlib import Path

    from learned.network.train import train_network
    from placement.network import paper_topology

    if args.imitation_iterations < 0 or args.timesteps < 0:
        raise InvalidInputError("--imitation-iterations and --timesteps must be >= 0")
    if args.imitation_iterations == 0 and args.timesteps == 0:
        raise InvalidInputError("nothing to train: give --imitation-iterations N and/or "
                                "--timesteps N (> 0)")
    if args.init is not None and not Path(args.init).with_suffix(".json").exists():
        raise InvalidInputError(f"--init {args.init}: no such weights metadata file "
                                "(give the .json written by training)")
    for name in args.topologies:
        paper_topology(name, 64)
    command = "tjap train network " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    out, init = {}, args.init
    if args.imitation_iterations:
        from learned.network.imitation import train_imitation

        target = args.out + "_imitation" if args.timesteps else args.out
        out["imitation"] = train_imitation(
            args.topologies, iterations=args.imitation_iterations,
            episodes=args.imitation_episodes, seed=args.seed, out=target, init=init,
            time_budget_s=args.time_budget, quiet=args.quiet, command=command)
        init = out["imitation"]["metadata"]
    if args.timesteps:
        out["ppo"] = train_network(args.topologies, timesteps=args.timesteps, envs=args.envs,
                                   seed=args.seed, out=args.out, requests=args.requests,
                                   ppo={"learning_rate": args.learning_rate},
                                   eval_seeds=args.eval_seeds, quiet=args.quiet, command=command,
                                   time_budget_s=args.time_budget, init=init)
    if args.json:
        print_json(out)
    else:
        for stage, result in out.items():
            print(f"{stage}: weights {result['weights']}, metadata {result['metadata']}")
    return 0
