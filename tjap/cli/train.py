"""``tjap train ...``: train the learned operators (never run in the test suite beyond tiny runs)."""

from __future__ import annotations

from pathlib import Path

from tjap.cli.common import add_common, check_output, count, positive, print_json
from tjap.core.errors import InvalidInputError


def add_parser(sub) -> None:
    """Add ``train`` and one subcommand per learned operator to the ``tjap`` parser."""
    p = sub.add_parser("train", help="train a learned operator")
    train = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    t = train.add_parser(
        "nsa",
        help="the NSA repair operator (MaskablePPO)",
        description="Train the NSA repair policy (imitation of an expert "
        "repair and/or MaskablePPO) on windows of the paper's stream; "
        "writes OUT.pt, OUT.npz, OUT.json (metadata with the "
        "command) and OUT_curve.csv.",
    )
    t.add_argument(
        "--arch",
        default="cnn3",
        choices=("fcn1", "fcn2", "fcn3", "cnn1", "cnn2", "cnn3"),
        help="the policy network, one of the paper's Table II architectures (default cnn3)",
    )

    t.add_argument(
        "--timesteps",
        type=count,
        default=300_000,
        help="PPO steps (0: only the imitation warm start)",
    )
    t.add_argument(
        "--setting",
        choices=("published", "paper"),
        default="published",
        help="layout and cost convention of the training windows",
    )
    t.add_argument(
        "--loop",
        choices=("setting", "best"),
        default="setting",
        help="the SA loop the environment destroys in (n^D, re-insertion order): the "
        "setting's preset (default) or the best hand-written SA's (n^D = 5, "
        "largest first); recorded in the metadata, and only weights trained in "
        "'best' run under solve(..., 'nsa', preset='best')",
    )
    t.add_argument(
        "--q",
        type=positive(int),
        default=None,
        help="positions the policy chooses among (default: the loop's, 100)",
    )
    t.add_argument(
        "--warmup-repair",
        choices=("uniform", "greedy"),
        default="uniform",
        help="repair of the random moves that make each episode's current solution",
    )
    t.add_argument("--windows", type=positive(int), default=500, help="training windows")
    t.add_argument(
        "--reward",
        choices=("repaired", "window", "relative"),
        default="repaired",
        help="PPO's episode reward: minus the repaired jobs' cost (the paper), minus "
        "the window's (its code), or the look-ahead expert's cost for the same "
        "destroyed solution minus the repaired jobs' (a per-episode baseline)",
    )
    t.add_argument(
        "--device", default="cpu", help="torch device to train on: cpu (default), cuda, cuda:N"
    )
    t.add_argument("--idle-flag", action="store_true", help="the published code's fifth feature")
    t.add_argument(
        "--boundaries",
        action="store_true",
        help="two extra channels marking where a new switch / pod starts (ours)",
    )
    t.add_argument(
        "--learning-rate",
        type=positive(float),
        default=3e-4,
        help="PPO's Adam learning rate (default 3e-4)",
    )
    t.add_argument(
        "--n-steps",
        type=positive(int),
        default=2048,
        help="PPO rollout length in steps (default 2048)",
    )
    t.add_argument(
        "--batch-size", type=positive(int), default=256, help="PPO minibatch size (default 256)"
    )
    t.add_argument(
        "--ent-coef", type=float, default=0.01, help="PPO entropy coefficient (default 0.01)"
    )
    t.add_argument(
        "--clip-range", type=positive(float), default=0.2, help="PPO clip range (default 0.2)"
    )
    t.add_argument(
        "--n-epochs", type=positive(int), default=10, help="PPO epochs per rollout (default 10)"
    )
    t.add_argument(
        "--imitation-steps",
        type=count,
        default=0,
        help="expert steps behaviour-cloned before PPO (0: none)",
    )
    t.add_argument(
        "--expert",
        choices=("greedy-within-q", "lookahead"),
        default="greedy-within-q",
        help="the imitated repair: the cheapest block within q, or the look-ahead "
        "(each start scored by its block plus the later removed jobs placed "
        "greedily)",
    )
    t.add_argument(
        "--imitation-epochs",
        type=positive(int),
        default=10,
        help="behaviour-cloning epochs over the expert steps (default 10)",
    )
    t.add_argument(
        "--imitation-temperature",
        type=float,
        default=0.0,
        metavar="T",
        help="0: clone the cheapest start; T > 0: clone softmax(-cost / T) and roll "
        "the expert out by sampling it (cost units)",
    )
    t.add_argument(
        "--imitation-lr",
        type=positive(float),
        default=1e-3,
        help="Adam learning rate of the behaviour cloning (default 1e-3)",
    )
    t.add_argument(
        "--imitation-batch-size",
        type=positive(int),
        default=256,
        help="minibatch size of the behaviour cloning (default 256)",
    )
    t.add_argument(
        "--out",
        default="learned/weights/nsa_cnn3",
        metavar="OUT",
        help="path of the files written, without suffix: OUT.pt, OUT.npz, OUT.json, "
        "OUT_curve.csv (default learned/weights/nsa_cnn3; missing folders are "
        "created)",
    )
    add_common(t)
    _add_network(train)
    _add_interference(train)
    _add_provision(train)

    p.set_defaults(run=cmd_train)


def cmd_train(args) -> int:
    # output paths are checked before hours of training (their folders are created on writing)
    check_output(args.out, "--out", folder=args.what == "provision")
    check_output(getattr(args, "save_bc", None), "--save-bc")
    data = getattr(args, "data", None)
    if data is not None and not Path(data).exists():  # read if it exists, else written
        check_output(data, "--data")
    if args.what == "network":
        return _train_network(args)
    if args.what == "provision":
        return _train_provision(args)
    if args.what == "interference":
        return _train_interference(args)
    from tjap.learned.tree.train import train_nsa

    out = train_nsa(
        args.arch,
        args.timesteps,
        args.seed,
        args.out,
        args.setting,
        args.windows,
        args.reward,
        quiet=args.quiet,
        device=args.device,
        boundaries=args.boundaries,
        idle_flag=args.idle_flag,
        ppo={
            "learning_rate": args.learning_rate,
            "n_steps": args.n_steps,
            "batch_size": args.batch_size,
            "ent_coef": args.ent_coef,
            "clip_range": args.clip_range,
            "n_epochs": args.n_epochs,
        },
        imitation_steps=args.imitation_steps,
        imitation_epochs=args.imitation_epochs,
        imitation_temperature=args.imitation_temperature,
        imitation_lr=args.imitation_lr,
        imitation_batch_size=args.imitation_batch_size,
        imitation_expert=args.expert,
        loop=None if args.loop == "setting" else args.loop,
        q=args.q,
        warmup_repair=args.warmup_repair,
        command=args.command_line,
    )
    if args.json:
        print_json(out)
    else:
        if out["imitation"]:
            im = out["imitation"]
            print(
                f"imitation: {im['collected_steps']} expert steps, {im['epochs']} epochs, "
                f"accuracy {im['final']['accuracy']:.3f} ({im['wall_s']:.0f} s)"
            )
        print(
            f"trained {args.arch} for {args.timesteps} steps in {out['wall_s']:.0f} s; "
            f"final mean reward {out['final_mean_reward']}"
        )
        print(f"weights: {out['weights']}  metadata: {out['metadata']}  curve: {out['curve']}")
    return 0


def _add_network(train_subparsers) -> None:
    """``tjap train network``: DAgger imitation of the exact model
    (:func:`tjap.learned.network.imitation.train_imitation`) and/or MaskablePPO
    (:func:`tjap.learned.network.train.train_network`)."""
    from tjap.learned.network.train import PPO
    from tjap.placement.network import NAMES, ROUTINGS

    t = train_subparsers.add_parser(
        "network",
        help="the seed-003 gnn server allocator (imitation and/or MaskablePPO)",
        description="Train the seed-003 gnn allocator on the 64-server topologies: optionally "
        "DAgger imitation of the exact CP-SAT model (--imitation-iterations), then "
        "MaskablePPO (--timesteps, 0: none). Writes OUT.pt, OUT.json (metadata) and, "
        "after PPO, OUT_curve.csv; with both stages the imitation weights go to "
        "OUT_imitation.",
    )
    t.add_argument(
        "--topologies",
        nargs="+",
        default=list(NAMES),
        metavar="NAME",
        help="the 64-server topologies trained on, 'n:1-o' as tjap network evaluate "
        "--topology (default all nine: n in 8, 16, 32 and o in 16, 8, 4)",
    )
    t.add_argument(
        "--init",
        default=None,
        metavar="JSON",
        help="start from these weights (the first stage run)",
    )
    t.add_argument(
        "--time-budget",
        type=positive(float),
        default=None,
        metavar="S",
        help="wall-clock budget of each stage",
    )
    t.add_argument(
        "--out",
        default="learned/weights/network_gnn",
        metavar="OUT",
        help="path of the files written, without suffix: OUT.pt, OUT.json, "
        "OUT_curve.csv, OUT_imitation.* (default learned/weights/network_gnn; "
        "missing folders are created)",
    )
    imitation = t.add_argument_group("imitation of the exact model (DAgger)")
    imitation.add_argument(
        "--imitation-iterations",
        type=int,
        default=0,
        help="DAgger rounds (0: no imitation, the default)",
    )
    imitation.add_argument(
        "--imitation-episodes",
        type=positive(int),
        default=6,
        help="labelled episodes per round (default 6)",
    )
    imitation.add_argument(
        "--imitation-requests",
        type=positive(int),
        default=128,
        help="requests per labelled episode (default 128)",
    )
    imitation.add_argument(
        "--imitation-beta",
        type=float,
        default=0.5,
        help="the expert drives a request with probability beta ** round "
        "(0 <= beta <= 1; default 0.5)",
    )
    imitation.add_argument(
        "--imitation-epochs",
        type=positive(int),
        default=4,
        help="fitting epochs per round (default 4)",
    )
    imitation.add_argument(
        "--imitation-lr",
        type=positive(float),
        default=3e-3,
        help="Adam learning rate of the fit (default 3e-3)",
    )
    ppo = t.add_argument_group("MaskablePPO")
    ppo.add_argument("--timesteps", type=int, default=200_000, help="PPO steps (0: no PPO)")
    ppo.add_argument(
        "--envs", type=positive(int), default=1, help="parallel environments (processes)"
    )
    ppo.add_argument(
        "--requests",
        type=positive(int),
        default=32,
        help="requests per PPO training episode (default 32)",
    )
    ppo.add_argument(
        "--routing",
        choices=tuple(ROUTINGS),
        default="shortest",
        help="the engine's path rule in training, saved with the weights",
    )
    ppo.add_argument(
        "--learning-rate",
        type=positive(float),
        default=PPO["learning_rate"],
        help="PPO's Adam learning rate (default %(default)g)",
    )
    ppo.add_argument(
        "--n-steps",
        type=positive(int),
        default=PPO["n_steps"],
        help="steps per environment per rollout",
    )
    ppo.add_argument(
        "--batch-size",
        type=positive(int),
        default=PPO["batch_size"],
        help="PPO minibatch size (default %(default)s)",
    )
    ppo.add_argument(
        "--ent-coef",
        type=float,
        default=PPO["ent_coef"],
        help="PPO entropy coefficient (default %(default)g)",
    )
    ppo.add_argument(
        "--n-epochs",
        type=positive(int),
        default=PPO["n_epochs"],
        help="PPO epochs per rollout (default %(default)s)",
    )
    ppo.add_argument(
        "--gamma",
        type=positive(float, 1.0),
        default=PPO["gamma"],
        help="PPO discount factor, in (0, 1] (default %(default)g)",
    )
    ppo.add_argument(
        "--validate-every",
        type=positive(float),
        default=None,
        metavar="S",
        help="validate on seeds 100-104 every S seconds and keep the best weights",
    )
    ppo.add_argument(
        "--eval-seeds",
        type=int,
        default=5,
        help="evaluate the saved weights on seeds 0..N-1 of each topology (0: not)",
    )
    add_common(t)


def _train_network(args) -> int:
    """Run ``tjap train network`` (bad arguments raise InvalidInputError: one line, exit 2)."""
    from pathlib import Path

    from tjap.learned.network.train import train_network
    from tjap.placement.network import paper_topology

    if args.imitation_iterations < 0 or args.timesteps < 0:
        raise InvalidInputError("--imitation-iterations and --timesteps must be >= 0")
    if not 0 <= args.imitation_beta <= 1:
        raise InvalidInputError(f"--imitation-beta must be in [0, 1], got {args.imitation_beta}")
    if args.imitation_iterations == 0 and args.timesteps == 0:
        raise InvalidInputError(
            "nothing to train: give --imitation-iterations N and/or --timesteps N (> 0)"
        )
    if args.init is not None and not Path(args.init).with_suffix(".json").exists():
        raise InvalidInputError(
            f"--init {args.init}: no such weights metadata file "
            "(give the .json written by training)"
        )
    for name in args.topologies:
        paper_topology(name, 64)
    command = args.command_line
    out, init = {}, args.init
    if args.imitation_iterations:
        from tjap.learned.network.imitation import train_imitation

        target = args.out + "_imitation" if args.timesteps else args.out
        out["imitation"] = train_imitation(
            args.topologies,
            iterations=args.imitation_iterations,
            episodes=args.imitation_episodes,
            requests=args.imitation_requests,
            beta=args.imitation_beta,
            epochs=args.imitation_epochs,
            lr=args.imitation_lr,
            seed=args.seed,
            out=target,
            init=init,
            time_budget_s=args.time_budget,
            quiet=args.quiet,
            command=command,
        )
        init = out["imitation"]["metadata"]
    if args.timesteps:
        ppo = {
            "learning_rate": args.learning_rate,
            "n_steps": args.n_steps,
            "batch_size": args.batch_size,
            "ent_coef": args.ent_coef,
            "n_epochs": args.n_epochs,
            "gamma": args.gamma,
        }
        out["ppo"] = train_network(
            args.topologies,
            timesteps=args.timesteps,
            envs=args.envs,
            seed=args.seed,
            out=args.out,
            requests=args.requests,
            routing=args.routing,
            ppo=ppo,
            eval_seeds=args.eval_seeds,
            quiet=args.quiet,
            command=command,
            time_budget_s=args.time_budget,
            init=init,
            validate_every_s=args.validate_every,
        )
    if args.json:
        print_json(out)
    else:
        for stage, result in out.items():
            print(f"{stage}: weights {result['weights']}, metadata {result['metadata']}")
    return 0


def _add_interference(train_subparsers) -> None:
    """``tjap train interference``: the seed-001 schedulers (behaviour cloning of a rule, then
    PPO; :func:`tjap.learned.interference.train.train_interference`)."""
    t = train_subparsers.add_parser(
        "interference",
        help="the seed-001 marl / single / marl-server schedulers",
        description="Train a seed-001 GNN scheduler: behaviour cloning of a hand-written rule "
        "(--bc-episodes), then PPO (--ppo-steps, 0: none). Writes OUT.pt and "
        "OUT.json (metadata: how trained, the command, the curve).",
    )
    t.add_argument("--k", type=int, default=8, help="fat-tree k of the training cluster")
    t.add_argument("--intervals", type=int, default=8, help="arrival intervals per episode")
    t.add_argument(
        "--pattern",
        default="poisson",
        help="arrival pattern of the training episodes: uniform, poisson (default) "
        "or trace (arrivals following the bundled LS6 A100 trace)",
    )
    t.add_argument(
        "--expert",
        default="whole",
        choices=("whole", "tetris"),
        help="the rule behaviour cloning imitates (default whole)",
    )
    t.add_argument(
        "--reward",
        default="proxy",
        choices=("proxy", "jct", "jct_rule"),
        help="env reward: proxy (added slowdown, comm cost, waiting), jct (minus "
        "each interval's time in system of every job: the total JCT) or "
        "jct_rule (the --expert rule's time in system on the same workload "
        "minus the agent's: the JCT saved against the rule)",
    )
    t.add_argument(
        "--single-agent",
        action="store_true",
        help="one scheduler for the whole cluster (no partitions, no forwarding)",
    )
    t.add_argument(
        "--level",
        default="device",
        choices=("device", "server"),
        help="what the network picks: a GPU group (device, default) or a server "
        "(server: the task goes to a random group of it)",
    )
    t.add_argument(
        "--eval-seeds",
        default="",
        help="comma-separated env seeds to evaluate the greedy policy on after "
        "training (24 intervals of arrivals + at most 24 to drain; stored in "
        "the metadata)",
    )
    t.add_argument(
        "--eval-every",
        type=int,
        default=0,
        help="with --eval-seeds: also evaluate before PPO and every N PPO decisions "
        "(learning curve of greedy avg JCT in the metadata)",
    )
    t.add_argument(
        "--bc-episodes",
        type=int,
        default=6,
        help="episodes of the --expert rule recorded for behaviour cloning (default 6)",
    )
    t.add_argument(
        "--bc-epochs", type=int, default=6, help="behaviour-cloning epochs over them (default 6)"
    )
    t.add_argument(
        "--ppo-steps",
        type=int,
        default=0,
        help="PPO decisions after the cloning (default 0: no PPO)",
    )
    t.add_argument(
        "--rollout", type=int, default=1024, help="decisions per PPO rollout (default 1024)"
    )
    t.add_argument(
        "--hidden", type=int, default=32, help="width of the GNN's hidden layers (default 32)"
    )
    t.add_argument(
        "--layers", type=int, default=2, help="depth of the GNN: message-passing layers (default 2)"
    )
    t.add_argument(
        "--out",
        default="learned/weights/interference_marl",
        metavar="OUT",
        help="path of the files written, without suffix: OUT.pt and OUT.json "
        "(default learned/weights/interference_marl; missing folders are "
        "created)",
    )
    t.add_argument("--init", default=None, help="start from these weights (.json)")
    t.add_argument("--save-bc", default=None, help="also save the cloned model here before PPO")
    add_common(t)


def _train_interference(args) -> int:
    """Run ``tjap train interference`` (bad arguments raise InvalidInputError: one line, exit 2)."""
    from tjap.learned.interference.train import train_interference

    try:
        seeds = [int(x) for x in args.eval_seeds.split(",")] if args.eval_seeds else []
    except ValueError:
        raise InvalidInputError(
            f"--eval-seeds must be comma-separated integers, got {args.eval_seeds!r}"
        ) from None
    command = args.command_line
    out = train_interference(
        k=args.k,
        intervals=args.intervals,
        pattern=args.pattern,
        expert=args.expert,
        reward=args.reward,
        single_agent=args.single_agent,
        level=args.level,
        eval_seeds=seeds,
        eval_every=args.eval_every,
        bc_episodes=args.bc_episodes,
        bc_epochs=args.bc_epochs,
        ppo_steps=args.ppo_steps,
        rollout=args.rollout,
        hidden=args.hidden,
        layers=args.layers,
        seed=args.seed,
        out=args.out,
        init=args.init,
        save_bc=args.save_bc,
        command=command,
        quiet=args.quiet or args.json,
    )  # --json: stdout holds the JSON alone
    if args.json:
        print_json(out)
    else:
        print(f"weights {out['weights']}, metadata {out['metadata']}")
    return 0


def _add_provision(train_subparsers) -> None:
    """``tjap train provision``: every seed-004 provisioner from one recorded set of episodes."""
    from tjap.learned.batch.train import parser

    t = train_subparsers.add_parser(
        "provision",
        parents=[parser(add_help=False)],
        help="the seed-004 provisioners (transformer, MoE, DQN and PG heads, RF, XGBoost)",
        description="Record predecessor/successor episodes on the trace, pretrain the foundation "
        "models, train the DQN and policy-gradient heads and the tree baselines, and "
        "write learned/weights/provision_*.{pt,npz,json}. Takes about --budget-s.",
    )
    t.add_argument("--json", action="store_true", help="(accepted for symmetry; output is JSON)")
    t.add_argument(
        "--quiet",
        action="store_true",
        help="(accepted for symmetry; the run prints its progress lines)",
    )


def _train_provision(args) -> int:
    from tjap.learned.batch.train import run

    return run(args, args.command_line.split(" ")[3:])  # after "tjap train provision"
