"""The state a learned repair operator sees (seed 002, section V-B), built from the same arrays the
compiled SA loop holds, so the environment and the operator share one definition.

For the first ``q`` positions of the current idle sequence, channels are: the node's edge-switch
id / number of switches, its pod id / number of pods, the current job's request / n_max and the
other unallocated jobs' total request / ((|J'| - 1) n_max); positions past the end of the sequence
are all zero and masked. ``idle_flag=True`` adds the published code's fifth channel (1 where a
position holds an idle node). ``boundaries=True`` (ours, not the paper's) adds two channels that
are 1 where a position starts a new edge switch / pod in the sequence, which the normalised ids
only show as differences of 1/num_switches.
"""

from __future__ import annotations

import numpy as np

from tjap.errors import InvalidInputError

FEATURES = ("switch", "pod", "request", "others")


def require_fat_tree_features(window, method: str = "nsa") -> None:
    """Refuse a window on a general switch tree in one line: these features (and the weights
    trained on them) are the paper's fat-tree edge switches and pods.

    Raises
    ------
    InvalidInputError
        The window's topology is not a :class:`~placement.tree.fat_tree.FatTree`.
    """
    if not window.is_fat_tree:
        raise InvalidInputError(
            f"method {method!r} needs a fat-tree: its features and trained weights are defined on "
            "the paper's fat-tree edge switches and pods; on a general switch tree use 'sa' or "
            "'lns' with a hand-written repair (repair='greedy', 'paper' or 'uniform')")


def feature_spec(q: int = 100, n_max: int = 40, idle_flag: bool = False,
                 boundaries: bool = False) -> dict:
    return {"q": int(q), "n_max": int(n_max),
            "channels": list(FEATURES) + (["idle"] if idle_flag else [])
            + (["switch_start", "pod_start"] if boundaries else []),
            "normalisation": "switch/num_switches, pod/num_pods, request/n_max, "
                             "others/((|J'|-1) n_max)", "layout": "channels x q"}


def repair_observation(switch_q, pod_q, alive, length, size, others, num_others, num_switches,
                       num_pods, q=100, n_max=40, idle_flag=False, boundaries=False):
    """(channels x q float32 observation, q-bool action mask) for one repair step."""
    channels = len(FEATURES) + int(idle_flag) + 2 * int(boundaries)
    obs = np.zeros((channels, q), dtype=np.float32)
    n = min(q, int(length))
    positions = np.asarray(alive[:n])
    obs[0, :n] = switch_q[positions] / num_switches
    obs[1, :n] = pod_q[positions] / num_pods
    obs[2, :n] = size / n_max
    obs[3, :n] = others / (num_others * n_max) if num_others > 0 else 0.0
    if idle_flag:
        obs[4, :n] = 1.0
    if boundaries and n:
        c = len(FEATURES) + int(idle_flag)
        sw, pd = switch_q[positions], pod_q[positions]
        obs[c, 0] = obs[c + 1, 0] = 1.0
        obs[c, 1:n] = sw[1:] != sw[:-1]
        obs[c + 1, 1:n] = pd[1:] != pd[:-1]
    mask = np.zeros(q, dtype=bool)
    mask[:n] = True
    return obs, mask
