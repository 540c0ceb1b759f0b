"""Neural simulated annealing (seed 002): a trained repair operator inside the same SA loop.

:class:`LearnedRepair` holds the actor of a trained policy as the arrays of a small network that
the compiled loop of :func:`tjap.heuristics.tree.anneal.anneal` runs for each re-inserted job
(:mod:`tjap.heuristics.tree._mlp_kernels`): no callback, no torch at solve time. The arrays come from the
weights' inference file (``STEM.npz`` beside ``STEM.pt``, :func:`tjap.learned.policy_io.load_inference`),
exported from the torch policy by :func:`export_inference` (``tjap train nsa`` writes it too;
``python -m tjap.learned.tree.policy export META.json`` for older weights). ``tjap.solve(window, method="nsa",
iterations=500)`` runs it, by default with the best settings measured (:func:`solve_nsa`: the
best loop, the look-ahead, the shipped weights trained for the window's cost convention). Torch
is needed to train and to export, not to solve.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.heuristics.tree import _kernels as k
from tjap.heuristics.tree._mlp_kernels import net_config, net_scratch, pack_layers
from tjap.heuristics.tree.anneal import SA_PRESETS, anneal, preset_options
from tjap.heuristics.tree.operators import Metropolis, RandomDestroy, Repair
from tjap.learned.policy_io import (
    check_architecture,
    check_shapes,
    load_inference,
    save_inference,
    spec_hash,
)
from tjap.learned.tree.features import ARCHS, CONV_LAYERS, feature_spec, require_fat_tree_features
from tjap.placement.tree._dcas_kernels import taken_words
from tjap.placement.tree.cost import convention_code
from tjap.placement.tree.jobs import refuse_constraints
from tjap.placement.tree.result import Result
from tjap.placement.tree.window import Window

WEIGHTS_DIR = Path(__file__).parents[1] / "weights"
#: The shipped weights the paper's and the published code's presets run when none are given: the
#: CNN-3 trained in the published setting (what the reproduction tables ran).
DEFAULT_WEIGHTS = WEIGHTS_DIR / "nsa_cnn3.json"
#: The shipped weights preset "best" runs when none are given, by cost convention: the CNN-3
#: trained in the best loop in the setting of that convention (its layout and cost,
#: :data:`tjap.learned.tree.train.SETTINGS`; ``training.setting`` in their metadata).
BEST_WEIGHTS = {
    "paper": WEIGHTS_DIR / "nsa_cnn3_best_paper.json",
    "published": WEIGHTS_DIR / "nsa_cnn3_best_published.json",
}

#: The loop settings (every option but the repair's) of the SA presets NSA runs under: the best
#: hand-written SA ("best", the default: n^D = 5, T_max 25000, 1000 iterations), only with
#: weights trained in that loop (``tjap train nsa --loop best``, see :func:`trained_loop`); the
#: paper's Table I ("paper") and the published code ("published").
NSA_PRESETS = {
    name: {k: v for k, v in SA_PRESETS[name].items() if k not in ("repair", "q")}
    for name in ("paper", "published", "best")
}

#: The preset :func:`solve_nsa` runs when none is given (and its weights, if given, were trained
#: in its loop; other weights run under "paper", see :func:`default_preset`).
DEFAULT_PRESET = "best"

#: Presets that run only weights trained in their loop.
OWN_LOOP_PRESETS = ("best",)

#: The look-ahead each preset runs by default (``lookahead`` of :func:`solve_nsa`): none in the
#: paper's loops (the reproduction), 32 starts proposed by the policy in the best loop
#: (benchmarks/RESULTS.md: what makes NSA pay at equal time).
NSA_LOOKAHEAD = {"paper": 0, "published": 0, "best": 32}


def preset_lookahead(preset: str, lookahead=None) -> int:
    """The look-ahead NSA runs: ``lookahead`` if given, else the preset's (:data:`NSA_LOOKAHEAD`)."""
    return NSA_LOOKAHEAD[preset] if lookahead is None else lookahead


def default_preset(weights=None) -> str:
    """The preset NSA runs when none is given: :data:`DEFAULT_PRESET` ("best") with the shipped
    weights (``weights`` None) or with weights trained in the best loop; "paper" (the paper's
    Table I loop) with weights trained in another loop, which "best" refuses."""
    if not weights:
        return DEFAULT_PRESET
    return DEFAULT_PRESET if trained_loop(_meta(weights)) == DEFAULT_PRESET else "paper"


def default_weights(preset: str, convention: str = "paper") -> Path:
    """The shipped weights NSA runs under ``preset`` when none are given: for "best" those
    trained for ``convention`` (:data:`BEST_WEIGHTS`), else :data:`DEFAULT_WEIGHTS`."""
    if preset in OWN_LOOP_PRESETS:
        return BEST_WEIGHTS[convention]
    return DEFAULT_WEIGHTS


@dataclass(frozen=True, eq=False)
class LearnedRepair(Repair):
    """Repair operator choosing each start with a trained policy's actor, run inside the
    compiled loop: the masked argmax of its logits, or with ``sample=True`` a draw from their
    softmax with the loop's own generator (one draw per re-inserted job, seeded by the search's
    seed). With ``lookahead`` k >= 2 the policy proposes k starts instead (its k likeliest, or
    with ``sample`` k drawn by systematic sampling of its softmax with that one draw) and the
    loop takes the one whose block plus the later removed jobs placed greedily costs least
    (:func:`tjap.heuristics.tree._kernels.lookahead_start`, the hand-written
    :class:`~tjap.heuristics.tree.operators.LookaheadRepair`'s scoring). ``params`` and ``layers``: the
    actor packed by :func:`tjap.heuristics.tree._mlp_kernels.pack_layers`; ``spec``: the feature spec it
    reads."""

    name = "learned"
    code: int = k.REPAIR_LEARNED
    q: int = 100
    params: np.ndarray = None
    layers: np.ndarray = None
    spec: dict = field(default_factory=dict)
    sample: bool = False
    loop: str | None = None
    lookahead: int = 0

    def __post_init__(self):
        check_int("lookahead", self.lookahead, 0, must="a non-negative integer (0: off)")

    @classmethod
    def load(
        cls, weights=DEFAULT_WEIGHTS, sample: bool = False, lookahead: int = 0
    ) -> "LearnedRepair":
        """The repair of the NSA weights at ``weights`` (.json, .pt or stem), from their
        inference file (no torch); ``loop``: the SA loop they were trained in."""
        params, layers, meta = _load(*_cache_key(weights))
        return cls(
            q=meta["feature_spec"]["q"],
            params=params,
            layers=layers,
            spec=meta["feature_spec"],
            sample=sample,
            loop=trained_loop(meta),
            lookahead=lookahead,
        )

    @classmethod
    def from_arrays(
        cls, arrays: dict, arch: str, spec: dict, sample: bool = False
    ) -> "LearnedRepair":
        """The repair of an actor's arrays (:func:`actor_arrays`) of architecture ``arch``."""
        check_shapes(actor_shapes(arch, spec), arrays, "the actor's arrays", "nsa")
        params, layers = pack_actor(arrays, arch, spec)
        return cls(q=spec["q"], params=params, layers=layers, spec=spec, sample=sample)

    def kernel_argument(self, window, arrays):
        """``(params, layers, switch_q, pod_q, config, scratch, work)``: the network, the
        window's fat-tree features and fresh scratch (one per run, so runs in threads do not
        share it)."""
        require_fat_tree_features(window)
        channels = self.spec["channels"]
        config = net_config(
            self.q,
            self.spec["n_max"],
            arrays.num_switches,
            arrays.num_pods,
            "idle" in channels,
            "switch_start" in channels,
            self.sample,
            self.lookahead,
        )
        return (
            self.params,
            self.layers,
            np.ascontiguousarray(arrays.switch_q, np.int64),
            np.ascontiguousarray(arrays.pod_q, np.int64),
            config,
            net_scratch(self.layers),
            np.empty(taken_words(arrays.group_q.shape[1]), np.uint64),
        )


# -- the actor's arrays ----------------------------------------------------------------------------
def actor_shapes(arch: str, spec: dict) -> dict:
    """Name -> shape of the actor's arrays of Table II architecture ``arch`` reading ``spec``:
    ``conv0``/``conv1`` (CNNs), ``hidden0``.. and ``action``, each ``.weight`` and ``.bias``
    (torch's layouts: Conv1d (out, in, kernel), Linear (out, in))."""
    a, channels, q = ARCHS[arch], len(spec["channels"]), int(spec["q"])
    shapes = {}
    width = channels * q
    if a["kind"] == "cnn":
        (k1, s1), (k2, s2) = CONV_LAYERS
        c1, c2 = a["conv"]
        length = ((q - k1) // s1 + 1 - k2) // s2 + 1
        shapes = {
            "conv0.weight": (c1, channels, k1),
            "conv0.bias": (c1,),
            "conv1.weight": (c2, c1, k2),
            "conv1.bias": (c2,),
        }
        width = c2 * length
    for i, hidden in enumerate(a["hidden"]):
        shapes |= {f"hidden{i}.weight": (hidden, width), f"hidden{i}.bias": (hidden,)}
        width = hidden
    return shapes | {"action.weight": (q, width), "action.bias": (q,)}


def actor_arrays(policy) -> dict:
    """The actor of a MaskableActorCriticPolicy of :func:`build_policy` as float32 arrays named
    as in :func:`actor_shapes`: what the compiled loop runs. sb3 composes the actor as
    ``pi_features_extractor`` (Flatten; or Conv1d, Tanh, Conv1d, Flatten), then
    ``mlp_extractor.policy_net`` (Linear, Tanh per hidden layer), then ``action_net``."""
    from torch import nn

    convs = [m for m in policy.pi_features_extractor.modules() if isinstance(m, nn.Conv1d)]
    hidden = [m for m in policy.mlp_extractor.policy_net if isinstance(m, nn.Linear)]
    layers = (
        {f"conv{i}": m for i, m in enumerate(convs)}
        | {f"hidden{i}": m for i, m in enumerate(hidden)}
        | {"action": policy.action_net}
    )
    return {
        f"{name}.{part}": getattr(m, part).detach().cpu().numpy().astype(np.float32)
        for name, m in layers.items()
        for part in ("weight", "bias")
    }


def pack_actor(arrays: dict, arch: str, spec: dict) -> tuple[np.ndarray, np.ndarray]:
    """(params, layers) of :func:`tjap.heuristics.tree._mlp_kernels.pack_layers` for the actor's arrays
    (checked against :func:`actor_shapes` by the caller): every layer as a 1-d convolution, a
    dense one spanning its whole input (the flattened conv output, or the observation)."""
    a, channels, q = ARCHS[arch], len(spec["channels"]), int(spec["q"])
    layers = []
    c, n = channels, q
    if a["kind"] == "cnn":
        for i, (_, stride) in enumerate(CONV_LAYERS):
            w = arrays[f"conv{i}.weight"]
            layers.append((w, arrays[f"conv{i}.bias"], stride, i == 0))  # no Tanh after conv1
            c, n = w.shape[0], (n - w.shape[2]) // stride + 1
    names = [f"hidden{i}" for i in range(len(a["hidden"]))] + ["action"]
    for name in names:
        w = arrays[f"{name}.weight"]
        layers.append((w.reshape(w.shape[0], c, n), arrays[f"{name}.bias"], 1, name != "action"))
        c, n = w.shape[0], 1
    return pack_layers(channels, q, layers)


def _check_metadata(meta_path, meta, expect_spec=None) -> tuple[str, dict]:
    """(architecture, feature spec) of NSA metadata, checked: a known architecture, a spec that
    matches its hash and has channels the loop builds."""
    arch, spec = meta.get("architecture"), meta.get("feature_spec")
    if arch not in ARCHS or not isinstance(spec, dict):
        raise InvalidInputError(
            f"{meta_path}: unknown architecture {arch!r} or missing "
            f"feature_spec; architectures: {', '.join(ARCHS)}"
        )
    if spec_hash(spec) != meta.get("feature_spec_hash"):
        raise InvalidInputError(
            f"{meta_path}: feature_spec does not match its hash; the file was edited"
        )
    if expect_spec is not None and spec_hash(expect_spec) != spec_hash(spec):
        raise InvalidInputError(
            f"{meta_path} was trained on features {spec}, but {expect_spec} were asked for"
        )
    channels = spec.get("channels")
    idle, boundaries = (
        isinstance(channels, list) and name in channels for name in ("idle", "switch_start")
    )
    try:
        check_architecture(meta_path, {k: spec[k] for k in ("q", "n_max")}, "nsa", "feature_spec")
        known = feature_spec(spec["q"], spec["n_max"], idle, boundaries)["channels"]
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, InvalidInputError):
            raise
        known = None
    if channels != known:
        raise InvalidInputError(
            f"{meta_path}: feature_spec {spec} is not one the solver builds "
            "(q, n_max and the channels of tjap.learned.tree.features.feature_spec)"
        )
    return arch, spec


def load_actor(path, *, expect_spec: dict | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """(params, layers, metadata) of the NSA weights at ``path`` (.json, .pt or stem), read from
    their inference file without torch and checked: checksum, names, shapes and dtypes of the
    actor the metadata describes (another model's arrays are one line of InvalidInputError)."""
    arrays, meta = load_inference(path, "nsa")
    path = Path(path)
    meta_path = path if path.suffix == ".json" else path.with_suffix(".json")
    arch, spec = _check_metadata(meta_path, meta, expect_spec)
    where = str(meta_path.with_name(meta["inference_file"]))
    check_shapes(actor_shapes(arch, spec), arrays, where, "nsa")
    odd = sorted(name for name, a in arrays.items() if not np.issubdtype(a.dtype, np.floating))
    if odd:
        raise InvalidInputError(
            f"{where} holds non-float arrays ({', '.join(odd)}), not an "
            "actor's weights; restore it or export it again with "
            "`python -m tjap.learned.tree.policy export`"
        )
    params, layers = pack_actor(arrays, arch, spec)
    return params, layers, meta


def export_inference(path) -> Path:
    """Write the inference file of the NSA weights at ``path`` (the actor's arrays, from the .pt;
    needs torch) and record it in the metadata; returns its path."""
    policy, meta = load_policy(path)
    return save_inference(path, "nsa", actor_arrays(policy))


def trained_loop(meta: dict) -> str | None:
    """The SA loop NSA weights were trained in, from their metadata: ``training.loop`` (``tjap
    train nsa --loop``), else the loop of their ``training.setting`` (weights trained before the
    option), else None."""
    training = meta.get("training") or {}
    return training.get("loop") or training.get("setting")


def _cache_key(weights) -> tuple:
    """(path, stamp of its metadata file): weights rewritten in place are read again."""
    path = Path(weights)
    meta_path = path if path.suffix == ".json" else path.with_suffix(".json")
    try:
        stat = os.stat(meta_path)
        return str(path), (stat.st_mtime_ns, stat.st_size)
    except OSError:
        return str(path), None


@functools.lru_cache(maxsize=8)
def _load(path: str, stamp):
    return load_actor(path)


def _meta(weights) -> dict:
    """The metadata of the NSA weights at ``weights``, checked and cached with their actor."""
    return _load(*_cache_key(weights))[2]


def build_policy(arch: str, spec: dict):
    """An untrained MaskableActorCriticPolicy of Table II architecture ``arch`` for ``spec``."""
    import gymnasium as gym
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from tjap.learned.tree.nets import policy_kwargs

    obs_space = gym.spaces.Box(0.0, 1.0, (len(spec["channels"]), spec["q"]), dtype=np.float32)
    return MaskableActorCriticPolicy(
        obs_space, gym.spaces.Discrete(spec["q"]), lambda _: 0.0, **policy_kwargs(arch)
    )


def load_policy(path, *, expect_spec: dict | None = None):
    """(policy, metadata) of NSA weights at ``path`` (.json, .pt or the stem), in eval mode;
    ``expect_spec``: refuse weights trained on other features. Needs torch (training, export);
    solving reads :func:`load_actor`."""
    from tjap.learned.policy_io import load_weights

    def build(meta_path, meta):
        return build_policy(*_check_metadata(meta_path, meta, expect_spec))

    return load_weights(path, "nsa", build)


def solve_nsa(
    window: Window,
    *,
    convention="paper",
    time_limit_s=None,
    seed=0,
    preset=None,
    iterations=None,
    weights=None,
    max_remove=None,
    t_max=None,
    t_min=None,
    reinsert=None,
    initial=None,
    sample=True,
    lookahead=None,
) -> Result:
    """NSA: the SA loop of :func:`tjap.heuristics.tree.anneal.anneal` with the learned repair operator.

    By default the best settings measured: the loop of the best hand-written SA (``preset=
    "best"``), the shipped weights trained in it for the window's cost convention
    (:data:`BEST_WEIGHTS`) and the look-ahead over 32 starts the policy proposes; so run, NSA-500
    ends below the default ``sa`` given the same time (benchmarks/RESULTS.md, "The default nsa against the default sa at equal time").
    ``preset="paper"`` is the paper's NSA (Table I loop, no look-ahead, the shipped
    published-setting CNN-3), ``preset="published"`` the published code's loop.

    Loop options left out (None) take their value from ``preset``, the loop settings of the SA
    preset of that name (:data:`NSA_PRESETS`); an option given explicitly overrides it. The
    repair is the policy, so the presets' ``repair`` and ``q`` do not apply (q comes from the
    weights). The ``"best"`` preset runs only weights trained in its loop (their metadata says
    ``training.loop == "best"``): its destroy (n^D = 5) is outside what the others were trained
    on (n^D = 2). What ran is recorded in the Result's ``info``: ``preset``, ``weights`` (the
    metadata file), ``weights_setting`` (the setting they were trained in: layout and cost
    convention of :data:`tjap.learned.tree.train.SETTINGS`) and ``lookahead``.

    Parameters
    ----------
    window : Window
        The idle nodes and the jobs to place.
    convention : {"paper", "published"}, default "paper"
        Cost convention, see :mod:`tjap.placement.tree.cost` (not part of a preset). Under preset
        "best" it also picks the default weights: those trained for it.
    time_limit_s : float, optional
        Stop early (between chunks of 256 iterations) once exceeded; by default no limit.
    seed : int, default 0
        Seed of the loop's generator, which also draws the policy's starts; the same seed gives
        the same Result.
    preset : {"best", "paper", "published"}, optional
        ``"best"`` (the default): the loop of the best hand-written SA (T_max 25000, 1000
        iterations, n^D = 5, largest first), for weights trained in it only
        (``learned/weights/nsa_cnn3_best_paper.json`` and ``nsa_cnn3_best_published.json``, one
        per setting). ``"paper"``: the paper's Table I loop (T_max 2500, T_min 2.5, 500
        iterations, n^D = 2, largest first). ``"published"``: the published code's loop (T_max
        25000, window order; pass ``convention="published"`` too). Left out, it is "best",
        unless ``weights`` are given that were not trained in the best loop: then "paper"
        (:func:`default_preset`). benchmarks/sa_tables.py's NSA table runs each setting under the
        preset of its name.
    iterations : int, optional
        Moves; the cooling schedule spans them. 1000 in "best", 500 in "paper" and
        "published".
    weights : str or Path, optional
        The trained policy to load (the path of its JSON metadata; its actor is read from the
        ``.npz`` inference file beside it, without torch). By default, under "best" the shipped
        CNN-3 trained in the best loop for ``convention`` (:data:`BEST_WEIGHTS`); under "paper"
        and "published" the shipped CNN-3 trained in the published setting
        (``learned/weights/nsa_cnn3.json``, :data:`DEFAULT_WEIGHTS`).
    max_remove : int, optional
        n^D: a move removes 1..max_remove jobs, uniformly. 5 in "best", 2 in "paper" and
        "published".
    t_max, t_min : float, optional
        Metropolis temperatures, cooled exponentially from t_max to t_min. t_max: best and
        published 25000, paper 2500; t_min 2.5 in all.
    reinsert : {"largest-first", "window-order"}, optional
        Order in which removed jobs are re-inserted. best and paper "largest-first", published
        "window-order".
    initial : "seq", a method name, a Result or an assignment, optional
        Where the search starts. ``"seq"`` in every preset.
    sample : bool, default True
        Draw each start from the policy's distribution (one draw of the loop's generator per
        re-inserted job); False takes its most likely start, which measured worse inside SA
        (see benchmarks/RESULTS.md).
    lookahead : int, optional
        k >= 2: the policy proposes k starts (drawn by systematic sampling of its distribution
        with that one draw, or with ``sample=False`` its k likeliest) and the loop takes the one
        whose block plus the jobs still to re-insert, placed greedily after it, costs least;
        0 or 1: the policy's start as is. Default: :data:`NSA_LOOKAHEAD` of the preset (best
        32, paper and published 0).

    Returns
    -------
    Result
        The best solution found; see :func:`tjap.heuristics.tree.anneal.anneal`. Its ``info`` also holds
        ``preset``, ``weights``, ``weights_setting`` and ``lookahead`` (what ran).

    Raises
    ------
    InvalidInputError
        An unknown preset, convention or reinsert order, an option out of range, weights that do
        not load, ``preset="best"`` with weights not trained in that loop, or a window on a
        general switch tree (the policy's features are fat-tree features).
    """
    refuse_constraints(window, "nsa")
    require_fat_tree_features(window)
    convention_code(convention)  # one line, before it picks the weights
    if preset is None:
        preset = default_preset(weights)
    o = preset_options(
        preset,
        NSA_PRESETS,
        iterations=iterations,
        max_remove=max_remove,
        t_max=t_max,
        t_min=t_min,
        reinsert=reinsert,
        initial=initial,
    )
    weights = weights or default_weights(preset, convention)
    repair = LearnedRepair.load(
        weights, sample=sample, lookahead=preset_lookahead(preset, lookahead)
    )
    if preset in OWN_LOOP_PRESETS and repair.loop != preset:
        raise InvalidInputError(
            f"preset {preset!r} runs only NSA weights trained in its loop (tjap train nsa --loop "
            f"{preset}; shipped: learned/weights/nsa_cnn3_{preset}_paper.json and "
            f"nsa_cnn3_{preset}_published.json), but {weights} were trained in the "
            f"{repair.loop or 'unrecorded'} loop; use preset='paper' or 'published' with them"
        )
    result = anneal(
        window,
        iterations=o["iterations"],
        repair=repair,
        destroy=RandomDestroy(o["max_remove"]),
        accept=Metropolis(o["t_max"], o["t_min"]),
        reinsert=o["reinsert"],
        initial=o["initial"],
        convention=convention,
        time_limit_s=time_limit_s,
        seed=seed,
        method="nsa",
    )
    ran = {
        "preset": preset,
        "weights": str(weights),
        "weights_setting": (_meta(weights).get("training") or {}).get("setting"),
        "lookahead": int(repair.lookahead),
    }
    return replace(result, info={**result.info, **ran})


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m tjap.learned.tree.policy", description="Tools for NSA weights."
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ex = sub.add_parser(
        "export",
        help="write the inference file (.npz) of NSA weights",
        description="Write the inference file of NSA weights: STEM.npz, the "
        "actor's arrays read at solve time without torch, exported "
        "from STEM.pt and recorded with its sha256 in STEM.json. "
        "Needs torch.",
    )
    ex.add_argument("paths", nargs="+", metavar="META.json")
    args = p.parse_args(argv)
    try:
        for path in args.paths:
            target = export_inference(path)
            params, _, _ = load_actor(path)
            print(f"{target}: {params.size} parameters")
    except InvalidInputError as exc:
        print(f"tjap.learned.tree.policy: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
