"""The referee: Kueue's own topology-aware scheduling, run beside tjap's re-implementation.

tjap's methods ``kueue-bestfit`` and ``kueue-leastfree`` (:mod:`tjap.heuristics.tree.kueue`)
re-write Kueue's TAS algorithm in Python. The referee is Kueue's code itself: a Go program
(``go/kueue-referee``, Kueue v0.17.0 from the Go module proxy, built by
``bash .ci/build-kueue-referee`` into :func:`referee_bin`) that runs
``FindTopologyAssignmentsForFlavor`` on a TAS snapshot built through Kueue's exported API and
prints the ``TopologyAssignment`` (or the failure reason) of each pod set.

:func:`kueue_case` turns a tjap :class:`~tjap.placement.tree.window.Window` into the referee's
JSON case, as tjap's methods read the window (the module docstring of
:mod:`tjap.heuristics.tree.kueue` gives the mapping):

- **Levels.** The tree's levels from the top (the root tjap adds above several top-level
  switches is no level), each a node-label key (the window's level name, else ``level-L``), then
  ``kubernetes.io/hostname``. A node's label at a level is its domain there
  (:func:`~tjap.placement.tree.jobs.level_domains`): the switch name's last ``/``-separated part
  (percent-decoded) for the trees :meth:`~tjap.placement.tree.topology.Topology.from_node_labels`
  draws, where a rack's switch is ``block/rack``, else the whole switch name. The hostname
  label is the node's name (tjap's model has no other: a modelling limit, see
  :func:`kueue_case`'s ``hostnames``).
- **Nodes.** Every node of the tree, allocatable ``nvidia.com/gpu: 8`` and ``pods: 110``; a
  node that is not idle runs a pod of 8 GPUs outside TAS (Kueue's non-TAS usage), so it holds no
  pod; an idle one holds exactly one (each pod asks for 8 GPUs), as tjap's whole nodes do.
- **Pod sets.** Each job, in window order: ``count`` = its nodes; ``within`` a required level,
  ``prefer`` a preferred one; ``segment`` with ``segment_level`` a slice size and slice-required
  level; a job with neither level is ``unconstrained`` (with slices only: Kueue's slice-only
  request). The profile is the ``TASProfileMixed`` gate: off for ``kueue-bestfit``, on (Kueue's
  default) for ``kueue-leastfree``.

The referee admits the pod sets one after another on one snapshot, each seeing the nodes of the
earlier ones taken and a failed one taking nothing, as tjap's methods do.

:func:`run_referee` runs the binary once for many cases; :func:`compare` (one window) and
:func:`compare_many` (many, one run) say whether tjap chose the same nodes per job as Kueue, a
job Kueue cannot place matching one in tjap's ``info["unplaced"]``. :func:`random_windows`
draws the random cases of the tests and of ``python -m benchmarks.kueue_referee``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from tjap.core.cache import cache_root
from tjap.core.errors import InvalidInputError, MissingDependencyError, TjapError

#: The Kueue release go/kueue-referee/go.mod pins (and .ci/build-kueue-referee builds).
KUEUE = "v0.17.0"
#: The environment variable naming the folder of a built referee (its ``bin/kueue-referee``).
REFEREE_ENV = "TJAP_KUEUE_REFEREE"
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: Each node's allocatable resources, and each pod's request (one pod fills a node).
GPU = "nvidia.com/gpu"
NODE_GPUS = 8
NODE_PODS = 110
#: Kueue's feature gates per tjap method (the rest at Kueue's defaults).
PROFILE_GATES = {
    "kueue-bestfit": {"TASProfileMixed": False},
    "kueue-leastfree": {"TASProfileMixed": True},
}
PROFILES = tuple(PROFILE_GATES)
BUILD = "bash .ci/build-kueue-referee"


class RefereeError(TjapError):
    """The referee could not run, or refused a case (one line)."""


def referee_bin() -> Path:
    """Where the referee is: ``$TJAP_KUEUE_REFEREE/bin/kueue-referee``, else
    ``$TJAP_CACHE_ROOT/kueue-referee-v0.17.0/bin/kueue-referee`` (default ``/var/cache/tjap``)."""
    prefix = os.environ.get(REFEREE_ENV) or cache_root() / f"kueue-referee-{KUEUE}"
    return Path(prefix) / "bin" / "kueue-referee"


def missing() -> str:
    """Why the referee cannot run here, in one line naming how to build it; ``""`` when it can."""
    path = referee_bin()
    if os.access(path, os.X_OK):
        return ""
    return (
        f"no Kueue referee at {path}: build it once with `{BUILD}` (Go and the module proxy, "
        f"minutes on 2 cores) or point {REFEREE_ENV} at a built one"
    )


# --------------------------------------------------------------------------- window -> case
def _check_profile(profile: str) -> dict:
    if profile not in PROFILE_GATES:
        raise InvalidInputError(
            f"profile {profile!r} is not a Kueue method; give one of {', '.join(PROFILES)}"
        )
    return PROFILE_GATES[profile]


def _label_value(name: str, parent: str | None) -> str:
    """A domain's label value from its switch name: the last part of ``parent/value`` (the
    names Topology.from_node_labels gives), else the name itself."""
    if parent is not None and name.startswith(parent + "/"):
        rest = name[len(parent) + 1 :]
        if "/" not in rest:
            return "" if rest == '""' else unquote(rest)
    if parent is None and "/" not in name:
        return "" if name == '""' else unquote(name)
    return name


def level_keys(window) -> list[str]:
    """The case's node-label keys from the top: the window's level names (else ``level-L``) of
    the tree's Kueue levels, then ``kubernetes.io/hostname``."""
    from tjap.heuristics.tree.kueue import kueue_tree

    tree = kueue_tree(window.topology)
    names = dict(enumerate(window.levels, start=1))
    return [names.get(level, f"level-{level}") for level in tree.tjap_levels] + [HOSTNAME_LABEL]


def kueue_case(window, profile: str, *, name: str = "", hostnames=None) -> dict:
    """The referee's JSON case (a dict) of ``window`` under ``profile``'s feature gates (see the
    module docstring).

    Parameters
    ----------
    window : Window
        Its jobs may carry ``within``, ``prefer``, ``segment`` with ``segment_level``;
        whatever tjap's Kueue methods refuse is refused here in the same words.
    profile : {"kueue-bestfit", "kueue-leastfree"}
    name : str
        The case's name, echoed by the referee.
    hostnames : dict, optional
        ``kubernetes.io/hostname`` label per node name (default: the node's name). tjap's model
        names a node by its name only, so a hostname that sorts otherwise than the name is a case
        tjap cannot represent; this shows what Kueue does with it.
    """
    from tjap.heuristics.tree.kueue import kueue_tree, refuse_unkueuelike
    from tjap.placement.tree.jobs import level_domains
    from tjap.placement.tree.window import Window

    if not isinstance(window, Window):
        raise InvalidInputError(f"window must be a Window, got {type(window).__name__}")
    gates = _check_profile(profile)
    refuse_unkueuelike(window, profile)
    topology = window.topology
    tree = kueue_tree(topology)
    keys = level_keys(window)
    key_of = dict(zip(tree.tjap_levels, keys))
    switch_names = topology.switch_names
    domains = [level_domains(topology, level) for level in tree.tjap_levels]
    idle = set(int(v) for v in window.idle_nodes)
    hostnames = dict(hostnames or {})
    nodes = []
    for v, node in enumerate(topology.node_names):
        labels, parent = {}, None
        for key, ids in zip(keys, domains):
            switch = switch_names[int(ids[v])]
            labels[key] = _label_value(switch, parent)
            parent = switch
        labels[HOSTNAME_LABEL] = str(hostnames.get(node, node))
        entry = {
            "name": node,
            "labels": labels,
            "allocatable": {GPU: str(NODE_GPUS), "pods": str(NODE_PODS)},
        }
        if v not in idle:
            entry["usage"] = {GPU: str(NODE_GPUS)}
        nodes.append(entry)
    pod_sets = []
    for j, job in enumerate(window.jobs):
        pod_set: dict = {"name": f"job{j}", "count": job.nodes, "requests": {GPU: str(NODE_GPUS)}}
        if job.within is not None:
            pod_set["required"] = key_of[int(job.within)]
        elif job.prefer is not None:
            pod_set["preferred"] = key_of[int(job.prefer)]
        elif not job.segment:
            pod_set["unconstrained"] = True
        if job.segment:
            pod_set["slice_size"] = job.segment
            pod_set["slice_required"] = key_of[int(job.segment_level)]
        pod_sets.append(pod_set)
    return {
        "name": name,
        "levels": keys,
        "nodes": nodes,
        "pod_sets": pod_sets,
        "feature_gates": dict(gates),
    }


# --------------------------------------------------------------------------- running it
def run_referee(cases: Sequence[dict], *, timeout_s: float = 900.0) -> list[dict]:
    """Kueue's answers to ``cases`` (one run of the referee): per case ``{"name", "pod_sets":
    [{"name", "assignment": {"levels", "domains": [{"values", "count"}]}} or {"name",
    "failure"}]}``, in order.

    Raises
    ------
    MissingDependencyError
        The referee is not built (:func:`missing` says how).
    RefereeError
        It failed, or refused a case (one line naming the case).
    """
    cases = list(cases)
    if not cases:
        return []
    why = missing()
    if why:
        raise MissingDependencyError(why)
    text = "".join(json.dumps(case, separators=(",", ":")) + "\n" for case in cases)
    try:
        done = subprocess.run(
            [str(referee_bin())],
            input=text,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RefereeError(
            f"the Kueue referee took more than {timeout_s:g} s on {len(cases)} case(s)"
        ) from None
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-3:])[:300]
        raise RefereeError(f"the Kueue referee exited with {done.returncode}: {tail}")
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if len(answers) != len(cases):
        raise RefereeError(f"the Kueue referee answered {len(answers)} of {len(cases)} case(s)")
    for i, answer in enumerate(answers):
        if answer.get("error"):
            label = answer.get("name") or f"#{i}"
            raise RefereeError(f"the Kueue referee refused case {label}: {answer['error']}")
    return answers


def kueue_nodes(answer: dict, window, hostnames=None) -> list[tuple[str, ...] | str]:
    """Per job of ``window``: the node names of Kueue's assignment (sorted), or the failure
    reason (a string). A domain at the hostname level is translated back to the node whose
    hostname label it names; a domain of more than one pod, or at another level, raises."""
    by_hostname = {str((hostnames or {}).get(n, n)): n for n in window.topology.node_names}
    out: list[tuple[str, ...] | str] = []
    pod_sets = answer.get("pod_sets") or []
    if len(pod_sets) != window.num_jobs:
        raise RefereeError(
            f"the referee answered {len(pod_sets)} pod set(s) for {window.num_jobs} job(s)"
        )
    for j, pod_set in enumerate(pod_sets):
        assignment = pod_set.get("assignment")
        if assignment is None:
            out.append(str(pod_set.get("failure") or "failed without a reason"))
            continue
        if list(assignment["levels"]) != [HOSTNAME_LABEL]:
            raise RefereeError(f"job {j}: an assignment at levels {assignment['levels']}")
        names = []
        for domain in assignment["domains"]:
            if domain["count"] != 1:
                raise RefereeError(
                    f"job {j}: {domain['count']} pods on {domain['values'][-1]} (one per node)"
                )
            names.append(by_hostname[domain["values"][-1]])
        out.append(tuple(sorted(names)))
    return out


def tjap_nodes(result, window) -> list[tuple[str, ...] | str]:
    """Per job: the node names tjap's result gives it (sorted), or the reason it is unplaced."""
    names = window.topology.node_names
    if result.has_solution:
        placed = dict(enumerate(result.assignment))
        unplaced: list[int] = []
    else:
        placed, unplaced = result.info["placed"], result.info["unplaced"]
    out: list[tuple[str, ...] | str] = []
    for j in range(window.num_jobs):
        if j in unplaced or j not in placed:
            out.append(str(result.info.get("reason") or "unplaced"))
        else:
            out.append(tuple(sorted(names[int(v)] for v in placed[j])))
    return out


@dataclass(frozen=True)
class Comparison:
    """tjap's and Kueue's nodes per job of one window under one profile: a tuple of node names
    (sorted) for a placed job, a string (the reason) for one left out."""

    profile: str
    same: bool
    tjap: list = field(default_factory=list)
    kueue: list = field(default_factory=list)
    difference: str = ""

    def to_dict(self) -> dict:
        return {
            "profile": self.profile,
            "same": self.same,
            "tjap": [list(x) if isinstance(x, tuple) else {"unplaced": x} for x in self.tjap],
            "kueue": [list(x) if isinstance(x, tuple) else {"failure": x} for x in self.kueue],
            "difference": self.difference,
        }


def _describe(x) -> str:
    return ",".join(x) if isinstance(x, tuple) else f"unplaced ({x})"


def judge(window, profile: str, answer: dict, *, hostnames=None) -> Comparison:
    """Compare tjap's ``profile`` on ``window`` with Kueue's ``answer`` (one of
    :func:`run_referee`'s)."""
    import tjap

    _check_profile(profile)
    ours = tjap_nodes(tjap.solve(window, profile), window)
    theirs = kueue_nodes(answer, window, hostnames)
    lines = []
    for j, (a, b) in enumerate(zip(ours, theirs)):
        if isinstance(a, tuple) != isinstance(b, tuple) or (isinstance(a, tuple) and a != b):
            lines.append(f"job {j}: tjap {_describe(a)}; Kueue {_describe(b)}")
    return Comparison(profile, not lines, ours, theirs, "; ".join(lines))


def compare_many(
    windows: Sequence, profiles: Sequence[str] = PROFILES, *, hostnames=None
) -> list[list[Comparison]]:
    """Per window, per profile: :func:`judge` of tjap against Kueue, the referee run once for
    all of them."""
    windows = list(windows)
    cases = [
        kueue_case(w, p, name=f"w{i}-{p}", hostnames=hostnames)
        for i, w in enumerate(windows)
        for p in profiles
    ]
    answers = iter(run_referee(cases))
    return [[judge(w, p, next(answers), hostnames=hostnames) for p in profiles] for w in windows]


def compare(window, profile: str, *, hostnames=None) -> Comparison:
    """Whether tjap's ``profile`` (``"kueue-bestfit"`` or ``"kueue-leastfree"``) chose the same
    nodes per job of ``window`` as Kueue's own code; ``difference`` says how they differ."""
    return compare_many([window], [profile], hostnames=hostnames)[0][0]


# --------------------------------------------------------------------------- random cases
def _random_window(rng: random.Random, index: int):
    from tjap.placement.tree.topology import Topology
    from tjap.placement.tree.window import Window

    two_levels = rng.random() < 0.8
    blocks = rng.randint(1, 3) if two_levels else 1
    nodes, count = [], 0
    block_names = rng.sample([f"b{i}" for i in range(1, 13)], blocks)
    for block in block_names:
        racks = rng.randint(1, 4)
        for rack in rng.sample([f"r{i}" for i in range(1, 13)], racks):
            for _ in range(rng.randint(1, 5)):
                count += 1
                labels = {"rack": rack}
                if two_levels:
                    labels["block"] = block
                nodes.append(labels)
    # names whose string order is not their number's (n9 > n10), in a shuffled node order
    names = rng.sample([f"n{i}" for i in range(1, 4 * count + 1)], count)
    pairs = list(zip(names, nodes))
    rng.shuffle(pairs)
    levels = ["block", "rack"] if two_levels else ["rack"]
    tree = Topology.from_node_labels(pairs, levels)
    busy_share = rng.choice([0.0, 0.2, 0.4, 0.6])
    idle = [v for v in range(tree.num_nodes) if rng.random() >= busy_share] or [0]
    names_low_first = ["rack", "block"] if two_levels else ["rack"]
    jobs, left = [], len(idle)
    for _ in range(rng.randint(1, 4)):
        if left < 1:
            break
        jobs.append(_random_job(rng, left, names_low_first))
        left -= jobs[-1]["nodes"]
    return Window(tree, idle, jobs, levels=names_low_first, meta={"case": index})


def _random_job(rng: random.Random, left: int, levels: list[str]) -> dict:
    size = rng.randint(1, max(1, min(left, rng.choice([2, 4, 8, left]))))
    kind = rng.choice(["unconstrained", "required", "preferred", "slices", "slices"])
    job: dict = {"nodes": size}
    level = rng.randrange(len(levels))  # index, lowest first
    if kind == "required":
        job["within"] = levels[level]
    elif kind == "preferred":
        job["prefer"] = levels[level]
    elif kind == "slices":
        divisors = [d for d in range(1, size + 1) if size % d == 0]
        job["segment"] = rng.choice(divisors)
        slice_level = rng.randrange(len(levels))
        job["segment_level"] = levels[slice_level]
        around = rng.choice(["none", "within", "prefer"])
        if around != "none":
            job[around] = levels[rng.randint(slice_level, len(levels) - 1)]
    return job


def random_windows(seed: int, n: int) -> list:
    """``n`` random windows, deterministic by ``seed``: trees of 1-3 blocks of 1-4 racks of 1-5
    nodes (a fifth of them racks only), node names whose string order differs from their
    numbers' and from the tree's node order, 0-60 % of the nodes busy, 1-4 jobs each
    unconstrained, required or preferred at a level, or in slices (alone, or within or
    preferring a level at or above the slices')."""
    rng = random.Random(seed)
    return [_random_window(rng, i) for i in range(n)]


__all__ = [
    "BUILD",
    "Comparison",
    "HOSTNAME_LABEL",
    "KUEUE",
    "PROFILES",
    "PROFILE_GATES",
    "REFEREE_ENV",
    "RefereeError",
    "compare",
    "compare_many",
    "judge",
    "kueue_case",
    "kueue_nodes",
    "level_keys",
    "missing",
    "random_windows",
    "referee_bin",
    "run_referee",
    "tjap_nodes",
]
