"""One scheduling window: a switch tree (a :class:`Topology`, the paper's :class:`FatTree` or
any other), its idle sequence Q and the sizes of the selected jobs.

JSON schema (``Window.to_json`` / ``Window.from_json``)::

    {
      "topology":   {"num_nodes": 1000, "nodes_per_switch": 10, "switches_per_pod": 10},
      "idle_nodes": [0, 1, 2, ...],     # distinct node ids; Q is their increasing order
      "job_sizes":  [12, 7, 30],        # requested nodes per job, in window (priority) order
      "meta":       {...}               # optional, free-form (epoch, time, ...), kept as is
    }

In place of ``job_sizes`` a window may list ``jobs``: each a node count or an object with
constraints, ``{"nodes": 36, "segment": 12}``, ``{"nodes": 8, "within": "block"}`` (the keys and
their meaning: :mod:`tjap.placement.tree.jobs`). Two optional keys go with them: ``levels``, the
names of the tree's levels, lowest first (``["block", "rack"]``), and ``fragmentation``, a term
of the objective: ``{"weight": W, "level": L}`` (or W alone, level 1) adds W per whole idle
domain of level L that a job breaks into (see :mod:`tjap.placement.tree.arcs`). With it,
``busy_s`` maps busy nodes to the seconds until they are expected free, and the term prices the
time a job keeps a domain from being whole (:mod:`tjap.placement.tree.fragmentation`; the jobs'
``runtime_s``).

A fat-tree may be given by its radix too: ``{"k": 4}`` or ``{"k": 20, "num_nodes": 1000}``
(:meth:`FatTree.from_dict`). Unknown keys, of the window or of its topology, are refused with the
accepted ones, never ignored; sizes beyond :data:`~tjap.placement.tree.topology.MAX_NODES` are refused
before anything is allocated.

On any other switch tree ``topology`` is ``{"tree": Topology.to_dict()}``,
``{"slurm": "topology.conf"}``, ``{"slurm": "topology.yaml"}`` (a name ending in ``.yaml`` or
``.yml`` is read as Slurm's ``topology.yaml``, its default topology, as
:meth:`Topology.from_file` reads it) or ``{"json": "tree.json"}`` (a path, relative to the window
file's folder when read by :func:`load_windows`; the file is read once), and ``idle_nodes`` lists node names (indices are accepted too); Q is the
idle nodes in the tree's depth-first node order.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType

import numpy as np

from tjap.core.errors import InvalidInputError, check_int, check_number, is_int
from tjap.placement.tree import tree_cost
from tjap.placement.tree.cost import convention_code
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.hostlist import expand_hostlist
from tjap.placement.tree.jobs import Job, check_weight, resolve_job, resolve_level
from tjap.placement.tree.topology import Topology, read_utf8

#: The keys of a window's JSON form (``meta`` optional).
WINDOW_KEYS = (
    "topology",
    "idle_nodes",
    "job_sizes",
    "jobs",
    "levels",
    "fragmentation",
    "busy_s",
    "meta",
)
#: The attributes of a Window that its JSON keys name (all but ``meta``, kept read-only apart).
_ATTRIBUTES = WINDOW_KEYS[:-1]


def _int_list(name: str, values) -> list[int]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidInputError(f"{name} must be a list of integers, got {type(values).__name__}")
    out = []
    for i, v in enumerate(values):
        out.append(check_int(f"{name}[{i}]", v))
    return out


def _tree_nodes(tree: Topology, values) -> list[int]:
    """Indices of idle nodes given by name or index on a switch tree, or as one Slurm hostlist
    expression (``"c[01-04],gpu7"``, what ``sinfo`` prints)."""
    if isinstance(values, str):
        try:
            values = expand_hostlist(
                values,
                tree.num_nodes,
                f"the tree has {tree.num_nodes} nodes, each idle at most once",
            )
        except InvalidInputError as exc:
            raise InvalidInputError(f"idle_nodes: {exc}") from None
    if isinstance(values, bytes) or not hasattr(values, "__iter__"):
        raise InvalidInputError(
            f"idle_nodes must be a list of node names or indices, got {type(values).__name__}"
        )
    try:
        return [int(i) for i in tree.node_indices(list(values))]
    except InvalidInputError as exc:
        raise InvalidInputError(f"idle_nodes: {exc}") from None


def _topology_from_dict(data, base_dir) -> FatTree | Topology:
    if isinstance(data, dict) and "tree" in data:
        if set(data) != {"tree"}:
            raise InvalidInputError(f"topology with 'tree' takes no other key, got {sorted(data)}")
        return Topology.from_dict(data["tree"])
    for key in ("slurm", "json"):
        if isinstance(data, dict) and key in data:
            return _file_topology(data, key, base_dir)
    return FatTree.from_dict(data)


def _file_topology(data: dict, key: str, base_dir) -> Topology:
    path = data[key]
    what = (
        "a Slurm topology.conf or topology.yaml"
        if key == "slurm"
        else "a JSON tree (Topology.to_dict)"
    )
    if set(data) != {key} or not isinstance(path, str) or not path:
        raise InvalidInputError(
            f"topology {{'{key}': PATH}} takes one key, the path of {what} file, got {data!r:.80}"
        )
    path = Path(path)
    if base_dir is not None and not path.is_absolute():
        path = Path(base_dir) / path
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = None  # the reader reports the unreadable file in one line
    return _read_tree(str(path.resolve()), key, stamp)


@functools.lru_cache(maxsize=8)
def _read_tree(path: str, key: str, stamp) -> Topology:
    """One Topology per file (and modification time): the windows of a file that name the same
    topology share it, and with it its cached count form."""
    suffix = Path(path).suffix.lower()
    if key == "slurm":
        if suffix == ".json":
            raise InvalidInputError(
                f"topology {{'slurm': {path!r}}} names a .json file; use "
                "{'json': PATH} for a JSON tree"
            )
        if suffix in (".yaml", ".yml"):  # Slurm's topology.yaml, as Topology.from_file reads it
            return Topology.from_slurm_yaml(Path(path))
        return Topology.from_slurm(Path(path))
    if suffix != ".json":
        raise InvalidInputError(
            f"topology {{'json': {path!r}}} must name a .json file; use "
            "{'slurm': PATH} for a topology.conf or topology.yaml"
        )
    return Topology.from_file(path)


class Window:
    """A window of the topology-aware job allocation problem (immutable, validated).

    Parameters
    ----------
    topology : Topology
        The cluster's network: any :class:`Topology`, the paper's :class:`FatTree` included.
        Every method works on any tree except ``nsa``, whose features and trained weights are
        the paper's fat-tree's.
    idle_nodes : sequence of int, or of str on a Topology
        Idle nodes, by index (or, on a Topology, by name, or as one hostlist expression such as
        ``"c[01-04],gpu7"``); stored as indices sorted, which is
        the idle sequence Q (on a Topology, its depth-first node order).
    job_sizes : sequence of int, Job or dict
        The jobs in window order: node counts, or :class:`~tjap.placement.tree.jobs.Job`
        objects (or their JSON objects) with constraints. Their sizes may not sum to more than
        the idle count.
    meta : dict, optional
        Free-form metadata kept through JSON round trips.
    levels : sequence of str, optional
        Names of the tree's levels, lowest first, for the jobs' constraints to use.
    fragmentation : float or (float, int), optional
        Weight W (and level L, default 1) of the objective's fragmentation term: W per whole
        idle domain of level L that a job breaks into. Default 0 (not in the objective).
    busy_s : mapping, optional
        Busy nodes (by index, or on a Topology by name) to the seconds until each is expected
        free; a busy node not listed never frees as far as the window knows. Only the
        fragmentation term reads it (:mod:`tjap.placement.tree.fragmentation`).

    Notes
    -----
    The jobs, with their levels as numbers, are :attr:`jobs`; their sizes :attr:`job_sizes`.
    """

    __slots__ = (*_ATTRIBUTES, "meta", "_block_cost_cache")

    def __init__(
        self,
        topology: FatTree | Topology,
        idle_nodes: Sequence[int | str] | np.ndarray,
        job_sizes: Sequence,
        meta: dict | None = None,
        *,
        levels: Sequence[str] = (),
        fragmentation=None,
        busy_s=None,
    ):
        if isinstance(topology, FatTree):
            idle = _int_list("idle_nodes", idle_nodes)
        elif isinstance(topology, Topology):
            idle = _tree_nodes(topology, idle_nodes)
        else:
            raise InvalidInputError(
                f"topology must be a tjap.Topology (or tjap.FatTree), got {type(topology).__name__}"
            )
        if isinstance(job_sizes, (str, bytes)) or not hasattr(job_sizes, "__iter__"):
            raise InvalidInputError(
                f"job_sizes must be a list of node counts or jobs, got {type(job_sizes).__name__}"
            )
        level_names = _level_names(levels)
        jobs = []
        for j, value in enumerate(job_sizes):
            if is_int(value):
                if value < 1:
                    raise InvalidInputError(
                        f"job_sizes[{j}] = {value}: every job requests at least 1 node"
                    )
                jobs.append(Job(int(value)))
            elif isinstance(value, (Job, dict)):
                jobs.append(
                    resolve_job(
                        Job.from_value(value, f"jobs[{j}]"), topology, level_names, f"jobs[{j}]"
                    )
                )
            else:
                raise InvalidInputError(
                    f"job_sizes[{j}] must be an integer (or a job object), got {value!r:.40}"
                )
        sizes = [job.nodes for job in jobs]
        if not sizes:
            raise InvalidInputError("job_sizes is empty: a window needs at least one job")
        bad = [i for i in idle if not 0 <= i < topology.num_nodes]
        if bad:
            raise InvalidInputError(
                f"idle_nodes contains id {bad[0]} outside 0..{topology.num_nodes - 1}"
            )
        if len(set(idle)) != len(idle):
            seen, dup = set(), None
            for i in idle:
                if i in seen:
                    dup = i
                    break
                seen.add(i)
            if not isinstance(topology, FatTree):
                dup = repr(topology.node_names[dup])
            raise InvalidInputError(f"idle_nodes repeats node {dup}: each idle node appears once")
        small = [(j, n) for j, n in enumerate(sizes) if n < 1]
        if small:
            raise InvalidInputError(
                f"job_sizes[{small[0][0]}] = {small[0][1]}: every job requests at least 1 node"
            )
        if sum(sizes) > len(idle):
            raise InvalidInputError(
                f"the jobs request {sum(sizes)} nodes but only {len(idle)} are idle: "
                "drop jobs from the window or free nodes"
            )
        self.topology = topology
        self.idle_nodes = np.array(sorted(idle), dtype=np.int64)
        self.idle_nodes.setflags(write=False)
        self.job_sizes = tuple(sizes)
        self.jobs = tuple(jobs)
        self.levels = level_names
        self.fragmentation = _fragmentation(fragmentation, topology, level_names)
        self.busy_s = _busy_seconds(busy_s, topology, self.idle_nodes)
        self.meta = MappingProxyType(dict(meta or {}))
        self._block_cost_cache = {}

    def with_meta(self, **extra) -> "Window":
        """The same window with ``extra`` merged into its metadata (no re-validation)."""
        window = object.__new__(Window)
        for name in _ATTRIBUTES:
            setattr(window, name, getattr(self, name))
        window.meta = MappingProxyType({**extra, **self.meta})
        window._block_cost_cache = self._block_cost_cache
        return window

    def with_fragmentation(self, weight: float, level=1) -> "Window":
        """The same window with the objective's fragmentation term set to ``weight`` per whole
        idle domain of ``level`` a job breaks into (0: no term)."""
        return Window(
            self.topology,
            self.idle_nodes,
            self.jobs,
            dict(self.meta),
            levels=self.levels,
            fragmentation=(weight, level),
            busy_s=self.busy_s,
        )

    # -- derived views -------------------------------------------------------------------------
    @property
    def num_idle(self) -> int:
        return int(self.idle_nodes.size)

    @property
    def num_jobs(self) -> int:
        return len(self.job_sizes)

    @property
    def constrained(self) -> bool:
        """True when some job carries a constraint or the objective has a fragmentation term:
        only the methods that take constraints accept such a window."""
        return bool(self.fragmentation[0]) or any(job.constrained for job in self.jobs)

    @property
    def is_fat_tree(self) -> bool:
        """True when the topology is a :class:`FatTree`: its JSON form is the layout, its nodes
        are written as indices, and the learned repair's features take it (costs do not ask)."""
        return isinstance(self.topology, FatTree)

    def node_names(self, nodes) -> tuple[str, ...]:
        """Names of the node indices ``nodes`` (on a fat-tree the indices as strings)."""
        return tuple(self.topology.node_names[int(v)] for v in nodes)

    def block(self, start: int, size: int) -> np.ndarray:
        """Node ids of D(start, size): ``size`` consecutive idle nodes from position ``start`` of Q,
        wrapping to the head of Q."""
        return self.idle_nodes[(start + np.arange(size)) % self.num_idle]

    def block_costs(self, size: int, convention: str = "paper") -> np.ndarray:
        """Cost of D(p, size) for every start position p of Q (cached, read-only), from the
        tree's count form (:func:`tjap.placement.tree.tree_cost.block_costs`)."""
        key = (int(size), convention)
        costs = self._block_cost_cache.get(key)
        if costs is None:
            form = self.topology.count_form
            costs = tree_cost.block_costs(
                form.group_of,
                form.top_level,
                self.idle_nodes,
                int(size),
                form.num_groups,
                convention_code(convention),
            )
            costs.setflags(write=False)
            self._block_cost_cache[key] = costs
        return costs

    # -- JSON ----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Plain JSON data; on a Topology the topology is ``{"tree": ...}`` and the idle nodes
        are names."""
        if self.is_fat_tree:
            topology, idle = self.topology.to_dict(), self.idle_nodes.tolist()
        else:
            topology = {"tree": self.topology.to_dict()}
            idle = list(self.node_names(self.idle_nodes))
        out = {"topology": topology, "idle_nodes": idle}
        if any(job.constrained or job.runtime_s is not None for job in self.jobs):
            out["jobs"] = [job.to_value() for job in self.jobs]
        else:
            out["job_sizes"] = list(self.job_sizes)
        if self.levels:
            out["levels"] = list(self.levels)
        if self.fragmentation[0]:
            out["fragmentation"] = {"weight": self.fragmentation[0], "level": self.fragmentation[1]}
        known = np.isfinite(self.busy_s)
        known[self.idle_nodes] = False  # the idle nodes are at 0, and not busy
        busy = np.flatnonzero(known)
        if busy.size:
            names = busy.tolist() if self.is_fat_tree else self.node_names(busy)
            out["busy_s"] = {
                str(name): float(self.busy_s[i]) for name, i in zip(names, busy.tolist())
            }
        if self.meta:
            out["meta"] = dict(self.meta)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data, base_dir=None) -> "Window":
        """Read :meth:`to_dict`'s form; a ``{"slurm": PATH}`` (or ``{"json": PATH}``)
        topology's relative path is read from ``base_dir`` (by default the working directory)."""
        if not isinstance(data, dict):
            raise InvalidInputError(f"a window must be a JSON object, got {type(data).__name__}")
        unknown = sorted(map(str, set(data) - set(WINDOW_KEYS)))
        if unknown:
            raise InvalidInputError(
                f"window has unknown key(s) {', '.join(repr(k[:40]) for k in unknown[:5])}; "
                f"a window's keys are {', '.join(WINDOW_KEYS)} (put free-form data in meta)"
            )
        missing = {"topology", "idle_nodes"} - set(data)
        if missing:
            raise InvalidInputError(f"window is missing field(s) {', '.join(sorted(missing))}")
        if "job_sizes" not in data and "jobs" not in data:
            raise InvalidInputError(
                "window is missing field job_sizes (node counts; or jobs: "
                "counts or objects with constraints)"
            )
        if "job_sizes" in data and "jobs" in data:
            raise InvalidInputError(
                "a window lists its jobs in 'job_sizes' (node counts) or in "
                "'jobs' (counts or objects with constraints), not both"
            )
        jobs = data.get("jobs", data.get("job_sizes"))
        if "jobs" in data and (isinstance(jobs, (str, bytes)) or not isinstance(jobs, list)):
            raise InvalidInputError(
                f"jobs must be a list of node counts or job objects, got {type(jobs).__name__}"
            )
        if "job_sizes" in data:
            _int_list("job_sizes", jobs)
        meta = data.get("meta") or {}
        if not isinstance(meta, dict):
            raise InvalidInputError("window field meta must be an object")
        return cls(
            _topology_from_dict(data["topology"], base_dir),
            data["idle_nodes"],
            jobs,
            meta,
            levels=data.get("levels") or (),
            fragmentation=data.get("fragmentation"),
            busy_s=data.get("busy_s"),
        )

    @classmethod
    def from_json(cls, text: str, base_dir=None) -> "Window":
        return cls.from_dict(_parse_json(text, "window"), base_dir)

    def __repr__(self) -> str:
        return (
            f"Window({self.topology!r}, {self.num_idle} idle nodes, "
            f"job_sizes={list(self.job_sizes)})"
        )

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, Window)
            and self.topology == other.topology
            and np.array_equal(self.idle_nodes, other.idle_nodes)
            and self.jobs == other.jobs
            and self.fragmentation == other.fragmentation
            and np.array_equal(self.busy_s, other.busy_s)
        )

    __hash__ = None


def _level_names(levels) -> tuple[str, ...]:
    if isinstance(levels, (str, bytes)) or not hasattr(levels, "__iter__"):
        raise InvalidInputError(
            f"levels must be a list of level names, lowest first, got {levels!r:.40}"
        )
    names = tuple(levels)
    if any(not isinstance(n, str) or not n for n in names) or len(set(names)) != len(names):
        raise InvalidInputError(
            f"levels must list distinct non-empty names, lowest first, got {list(names)!r:.80}"
        )
    return names


def _fragmentation(value, topology, names) -> tuple[float, int]:
    """``fragmentation`` as (weight, level): None -> (0, 1); W -> (W, 1); {"weight", "level"}
    or a (W, L) pair."""
    if value is None:
        return (0.0, 1)
    level = 1
    if isinstance(value, dict):
        unknown = set(value) - {"weight", "level"}
        if unknown or "weight" not in value:
            raise InvalidInputError(
                f'fragmentation is a weight or {{"weight": W, "level": L}}, got {value!r:.60}'
            )
        value, level = value["weight"], value.get("level", 1)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        value, level = value
    weight = check_weight(value, "fragmentation weight")
    return (weight, resolve_level(topology, level, names, "fragmentation level"))


def _busy_seconds(value, topology, idle) -> np.ndarray:
    """``busy_s`` as seconds per node of the topology (read-only): 0 for the idle nodes, inf
    for a busy node not listed. ``value``: None, a mapping of busy nodes (index, or name on a
    Topology; on a fat-tree a JSON key's digits) to seconds >= 0, or such an array itself."""
    out = np.full(topology.num_nodes, np.inf)
    if isinstance(value, np.ndarray) and value.shape == out.shape:  # a window's own, passed on
        out[:] = value
    elif value is not None:
        if not isinstance(value, dict):
            raise InvalidInputError(
                "busy_s must map busy nodes to the seconds until each is expected free, "
                f'e.g. {{"n7": 3600}}; got {type(value).__name__}'
            )
        if isinstance(topology, FatTree):
            at = [_fat_tree_node(node, topology.num_nodes) for node in value]
        else:  # names and indices, as the idle nodes are given
            try:
                at = topology.node_indices(list(value)).tolist()
            except InvalidInputError as exc:
                raise InvalidInputError(f"busy_s: {exc}") from None
        listed = np.zeros(topology.num_nodes, bool)
        for i, (node, seconds) in zip(at, value.items()):
            out[i] = check_number(f"busy_s[{str(node)[:30]!r}]", seconds, 0, finite=False)
            listed[i] = True
        listed_idle = np.asarray(idle)[listed[idle]]
        if listed_idle.size:
            first = int(listed_idle[0])
            node = first if isinstance(topology, FatTree) else topology.node_names[first]
            raise InvalidInputError(
                f"busy_s names node {node!r:.40}, which is idle in this window: list only the "
                "busy nodes"
            )
    out[idle] = 0.0
    out.setflags(write=False)
    return out


def _fat_tree_node(node, num_nodes: int) -> int:
    """A fat-tree node of ``busy_s``: an index, or its digits (a JSON key)."""
    if not (is_int(node) or (isinstance(node, str) and node.isdigit())):
        raise InvalidInputError(f"busy_s names node {node!r:.40}; on a fat-tree nodes are indices")
    if not 0 <= int(node) < num_nodes:
        raise InvalidInputError(f"busy_s names node {int(node)}, outside 0..{num_nodes - 1}")
    return int(node)


def _parse_json(text: str, what: str):
    """``json.loads(text)``; anything it refuses is one line naming ``what``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise InvalidInputError(f"{what} is not valid JSON: it nests too deeply") from None
    except ValueError as exc:  # JSONDecodeError, or an integer of too many digits
        raise InvalidInputError(
            f"{what} is not valid JSON: {' '.join(str(exc).split())[:160]}"
        ) from None


def load_windows(path) -> list[Window]:
    """Read windows from a ``.json`` file (one window or a list) or a ``.jsonl`` file (one a line).

    A topology ``{"slurm": "topology.conf"}`` (or ``topology.yaml``, or ``{"json": PATH}``) is
    read relative to the window file's folder.
    """
    path = Path(path)
    text = read_utf8(path, "window file")
    if path.suffix == ".jsonl":
        windows = []
        for lineno, line in enumerate(text.split("\n"), 1):  # JSON strings may hold U+2028
            if line.strip():
                try:
                    windows.append(Window.from_json(line, path.parent))
                except InvalidInputError as exc:
                    raise InvalidInputError(f"{path}:{lineno}: {exc}") from None
        return windows
    data = _parse_json(text, str(path))
    try:
        if isinstance(data, list):
            return [Window.from_dict(d, path.parent) for d in data]
        return [Window.from_dict(data, path.parent)]
    except InvalidInputError as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
