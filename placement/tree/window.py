"""One scheduling window: a fat-tree, its idle sequence Q and the sizes of the selected jobs.

JSON schema (``Window.to_json`` / ``Window.from_json``)::

    {
      "topology":   {"num_nodes": 1000, "nodes_per_switch": 10, "switches_per_pod": 10},
      "idle_nodes": [0, 1, 2, ...],     # distinct node ids; Q is their increasing order
      "job_sizes":  [12, 7, 30],        # requested nodes per job, in window (priority) order
      "meta":       {...}               # optional, free-form (epoch, time, ...), kept as is
    }
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import MappingProxyType

import numpy as np

from placement.tree import _kernels
from placement.tree.cost import convention_code
from tjap.errors import InvalidInputError
from placement.tree.topology import FatTree


def _int_list(name: str, values) -> list[int]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidInputError(f"{name} must be a list of integers, got {type(values).__name__}")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise InvalidInputError(f"{name}[{i}] must be an integer, got {v!r}")
        out.append(int(v))
    return out


class Window:
    """A window of the topology-aware job allocation problem (immutable, validated).

    Parameters
    ----------
    topology : FatTree
    idle_nodes : sequence of int
        Idle node ids; stored sorted, which is the idle sequence Q.
    job_sizes : sequence of int
        Nodes requested by each job, in window order. Their sum may not exceed the idle count.
    meta : dict, optional
        Free-form metadata kept through JSON round trips.
    """

    __slots__ = ("topology", "idle_nodes", "job_sizes", "meta", "_block_cost_cache")

    def __init__(self, topology: FatTree, idle_nodes: Sequence[int], job_sizes: Sequence[int],
                 meta: dict | None = None):
        if not isinstance(topology, FatTree):
            raise InvalidInputError(f"topology must be a tjap.FatTree, got {type(topology).__name__}")
        idle = _int_list("idle_nodes", idle_nodes)
        sizes = _int_list("job_sizes", job_sizes)
        if not sizes:
            raise InvalidInputError("job_sizes is empty: a window needs at least one job")
        bad = [i for i in idle if not 0 <= i < topology.num_nodes]
        if bad:
            raise InvalidInputError(
                f"idle_nodes contains id {bad[0]} outside 0..{topology.num_nodes - 1}")
        if len(set(idle)) != len(idle):
            seen, dup = set(), None
            for i in idle:
                if i in seen:
                    dup = i
                    break
                seen.add(i)
            raise InvalidInputError(f"idle_nodes repeats node {dup}: each idle node appears once")
        small = [(j, n) for j, n in enumerate(sizes) if n < 1]
        if small:
            raise InvalidInputError(
                f"job_sizes[{small[0][0]}] = {small[0][1]}: every job requests at least 1 node")
        if sum(sizes) > len(idle):
            raise InvalidInputError(
                f"the jobs request {sum(sizes)} nodes but only {len(idle)} are idle: "
                "drop jobs from the window or free nodes")
        self.topology = topology
        self.idle_nodes = np.array(sorted(idle), dtype=np.int64)
        self.idle_nodes.setflags(write=False)
        self.job_sizes = tuple(sizes)
        self.meta = MappingProxyType(dict(meta or {}))
        self._block_cost_cache = {}

    def with_meta(self, **extra) -> "Window":
        """The same window with ``extra`` merged into its metadata (no re-validation)."""
        window = object.__new__(Window)
        window.topology, window.idle_nodes, window.job_sizes = (self.topology, self.idle_nodes,
                                                                self.job_sizes)
        window.meta = MappingProxyType({**extra, **self.meta})
        window._block_cost_cache = self._block_cost_cache
        return window

    # -- derived views -------------------------------------------------------------------------
    @property
    def num_idle(self) -> int:
        return int(self.idle_nodes.size)

    @property
    def num_jobs(self) -> int:
        return len(self.job_sizes)

    def block(self, start: int, size: int) -> np.ndarray:
        """Node ids of D(start, size): ``size`` consecutive idle nodes from position ``start`` of Q,
        wrapping to the head of Q."""
        return self.idle_nodes[(start + np.arange(size)) % self.num_idle]

    def block_costs(self, size: int, convention: str = "paper") -> np.ndarray:
        """Cost of D(p, size) for every start position p of Q (cached, read-only)."""
        key = (int(size), convention)
        costs = self._block_cost_cache.get(key)
        if costs is None:
            t = self.topology
            costs = _kernels.block_costs(t.switch_of[self.idle_nodes], t.pod_of[self.idle_nodes],
                                         int(size), t.num_switches, t.num_pods,
                                         convention_code(convention))
            costs.setflags(write=False)
            self._block_cost_cache[key] = costs
        return costs

    # -- JSON ----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        out = {"topology": self.topology.to_dict(), "idle_nodes": self.idle_nodes.tolist(),
               "job_sizes": list(self.job_sizes)}
        if self.meta:
            out["meta"] = dict(self.meta)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data) -> "Window":
        if not isinstance(data, dict):
            raise InvalidInputError(f"a window must be a JSON object, got {type(data).__name__}")
        missing = {"topology", "idle_nodes", "job_sizes"} - set(data)
        if missing:
            raise InvalidInputError(f"window is missing field(s) {', '.join(sorted(missing))}")
        meta = data.get("meta") or {}
        if not isinstance(meta, dict):
            raise InvalidInputError("window field meta must be an object")
        return cls(FatTree.from_dict(data["topology"]), data["idle_nodes"], data["job_sizes"], meta)

    @classmethod
    def from_json(cls, text: str) -> "Window":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"window is not valid JSON: {exc}") from None
        return cls.from_dict(data)

    def __repr__(self) -> str:
        return (f"Window({self.topology!r}, {self.num_idle} idle nodes, "
                f"job_sizes={list(self.job_sizes)})")

    def __eq__(self, other) -> bool:
        return (isinstance(other, Window) and self.topology == other.topology
                and np.array_equal(self.idle_nodes, other.idle_nodes)
                and self.job_sizes == other.job_sizes)

    __hash__ = None


def load_windows(path) -> list[Window]:
    """Read windows from a ``.json`` file (one window or a list) or a ``.jsonl`` file (one a line)."""
    from pathlib import Path

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read window file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{path} is not UTF-8 text; window files are JSON or JSONL") from None
    if path.suffix == ".jsonl":
        windows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    windows.append(Window.from_json(line))
                except InvalidInputError as exc:
                    raise InvalidInputError(f"{path}:{lineno}: {exc}") from None
        return windows
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path} is not valid JSON: {exc}") from None
    try:
        if isinstance(data, list):
            return [Window.from_dict(d) for d in data]
        return [Window.from_dict(data)]
    except InvalidInputError as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
