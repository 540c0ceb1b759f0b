"""The state a learned repair operator sees (seed 002, section V-B), built from the same arrays the
compiled SA loop holds, so the environment and the operator share one definition.

For the first ``q`` positions of the current idle sequence, channels are: the node's edge-switch
id / number of switches, its pod id / number of pods, the current job's request / n_max and the
other unallocated jobs' total request / ((|J'| - 1) n_max); positions past the end of the sequence
are all zero and masked. ``idle_flag=True`` adds the published code's fifth channel (1 where a
position holds an idle node). ``boundaries=True`` (ours, not the paper's) adds two channels that
are 1 where a position starts a new edge switch / pod in the sequence, which the normalised ids
only show as differences of 1/num_switches. The compiled loop builds the same observation with the
same kernel (:func:`tjap.heuristics.tree._mlp_kernels.observe`).

:data:`ARCHS` and :data:`CONV_LAYERS` are the layer sizes of the networks that read it (Table II
of seed 002), kept here without torch: :mod:`tjap.learned.tree.nets` builds them for training, and solving
(:mod:`tjap.learned.tree.policy`) checks exported weights against them without importing torch.
"""

from __future__ import annotations

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.heuristics.tree._mlp_kernels import observe

FEATURES = ("switch", "pod", "request", "others")

#: Table II: the actors' hidden layers (FCN: dense after the flattened observation; CNN: two
#: convolutions of ``conv`` output channels, then the dense ``hidden``), Tanh activations.
ARCHS = {
    "fcn1": {"kind": "fcn", "hidden": [64, 64]},
    "fcn2": {"kind": "fcn", "hidden": [64, 64]},
    "fcn3": {"kind": "fcn", "hidden": [96, 64]},
    "cnn1": {"kind": "cnn", "conv": [4, 4], "hidden": [256]},
    "cnn2": {"kind": "cnn", "conv": [8, 4], "hidden": [256]},
    "cnn3": {"kind": "cnn", "conv": [16, 8], "hidden": [256]},
}
#: (kernel, stride) of the CNNs' two convolutions (no padding): Conv1d(., c1, 10, 1), Tanh,
#: Conv1d(c1, c2, 5, 2), then flattened straight into the dense layers (no Tanh between).
CONV_LAYERS = ((10, 1), (5, 2))


def require_fat_tree_features(window, method: str = "nsa") -> None:
    """Refuse a window on a general switch tree in one line: these features (and the weights
    trained on them) are the paper's fat-tree edge switches and pods.

    Raises
    ------
    InvalidInputError
        The window's topology is not a :class:`~tjap.placement.tree.fat_tree.FatTree`.
    """
    if not window.is_fat_tree:
        raise InvalidInputError(
            f"method {method!r} needs a fat-tree: its features and trained weights are defined on "
            "the paper's fat-tree edge switches and pods; on a general switch tree use 'sa' or "
            "'lns' with a hand-written repair (repair='greedy', 'paper' or 'uniform')"
        )


def feature_spec(
    q: int = 100, n_max: int = 40, idle_flag: bool = False, boundaries: bool = False
) -> dict:
    return {
        "q": int(q),
        "n_max": int(n_max),
        "channels": list(FEATURES)
        + (["idle"] if idle_flag else [])
        + (["switch_start", "pod_start"] if boundaries else []),
        "normalisation": "switch/num_switches, pod/num_pods, request/n_max, "
        "others/((|J'|-1) n_max)",
        "layout": "channels x q",
    }


def repair_observation(
    switch_q,
    pod_q,
    alive,
    length,
    size,
    others,
    num_others,
    num_switches,
    num_pods,
    q=100,
    n_max=40,
    idle_flag=False,
    boundaries=False,
):
    """(channels x q float32 observation, q-bool action mask) for one repair step."""
    channels = len(FEATURES) + int(idle_flag) + 2 * int(boundaries)
    obs = np.zeros((channels, q), dtype=np.float32)
    n = observe(
        obs,
        np.asarray(switch_q, np.int64),
        np.asarray(pod_q, np.int64),
        np.asarray(alive, np.int64),
        int(length),
        int(size),
        int(others),
        int(num_others),
        int(n_max),
        int(num_switches),
        int(num_pods),
        bool(idle_flag),
        bool(boundaries),
    )
    mask = np.zeros(q, dtype=bool)
    mask[:n] = True
    return obs, mask
