"""What placement cost you: the audit of a site's Slurm accounting against its topology.

:func:`audit` reads accounting records (``sacct --parsable2 --allocations`` output or the
``jobcomp/filetxt`` log, :mod:`tjap.placement.slurm.accounting`), rebuilds which nodes were busy
at each job's start from the other records (:mod:`tjap.placement.slurm.occupancy`), and, for every
multi-node job in the time asked for, compares the nodes Slurm gave it with:

- ``optimum``: the cheapest run of its size among the nodes idle then, in the SCAS model (the
  idle nodes in the tree's depth-first order, cyclic: what ``tjap solve`` places);
- ``bound``: the cheapest set of its size among those idle nodes, contiguous or not (the
  free-form optimum; no placement of that job at that moment costs less);
- ``slurm_tree``: the nodes Slurm's own ``topology/tree`` selection would have taken from the
  same idle nodes (:mod:`tjap.heuristics.slurm.tree`); how often that equals the recorded choice
  is the fidelity of that model on the site's own history;
- ``floor``: the cheapest nodes of the empty cluster.

Costs are the CH cost of :func:`tjap.placement.tree.cost.job_cost` (``convention``). The audit
only reads: it never talks to the scheduler. What it cannot see: nodes that were down, drained,
reserved or outside the job's partition at its start are taken as idle when no record holds
them, so ``optimum`` and ``bound`` may name nodes Slurm could not use; the summary's
``fidelity`` tells how far that matters on the site's history.

The result's JSON (``tjap audit --json``) is documented in the README ("What placement cost
you").
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone as dt_timezone
from pathlib import Path

import numpy as np

from tjap.errors import InvalidInputError

#: Version of the JSON layout of :meth:`AuditResult.to_dict`.
AUDIT_FORMAT = 1
#: Slurm releases whose topology/tree rule slurm-tree follows.
SLURM_RULES = ("22.05", "24.11")

_JOB_KEY = re.compile(r"(\d+)(?:[_+](\d+))?")


# -- inputs ---------------------------------------------------------------------------------------
def _topology(topology):
    """A Topology from a Topology, a file path, or ``"slurm"`` (the running Slurm's)."""
    from tjap.placement.tree.topology import Topology

    if isinstance(topology, Topology):
        return topology, "Topology object"
    if isinstance(topology, (str, os.PathLike)):
        if str(topology) == "slurm":
            return Topology.from_slurm_live(), "the running Slurm (scontrol show topology)"
        return Topology.from_file(topology), str(topology)
    raise InvalidInputError(f"topology must be a tjap.Topology, a topology file or 'slurm', got "
                            f"{type(topology).__name__}")


def _when(value, tz, what: str) -> int | None:
    """Unix seconds of a time bound: None, Unix seconds, a datetime, or ISO text
    (``2026-11-01`` or ``2026-11-01T08:00``) in the records' timezone ``tz``."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInputError(f"{what} {value!r} is not a date: give YYYY-MM-DD or "
                                    "YYYY-MM-DDTHH:MM[:SS]") from None
    else:
        raise InvalidInputError(f"{what} must be a date (text or datetime) or Unix seconds, got "
                                f"{type(value).__name__}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    return int(moment.timestamp())


def _records_format(records, fmt: str):
    """(records, their format): ``auto`` told from the first non-empty line (of a file, or of
    the lines given, which are then read from the start again)."""
    from tjap.placement.slurm.accounting import detect_format, sniff_format

    if fmt != "auto":
        return records, fmt
    if isinstance(records, (str, os.PathLike)):
        return records, sniff_format(records)
    if isinstance(records, (list, tuple)):
        first = next((line for line in records if line.strip()), "")
        return records, detect_format(first) or "auto"
    lines = iter(records)
    head = []
    for line in lines:
        head.append(line)
        if line.strip():
            break
    return itertools.chain(head, lines), (detect_format(head[-1]) if head else None) or "auto"


def _job_key(job_id: str) -> int:
    """Submission order of a job id ("123", "123_4", "123+1"): ties of one start second are
    taken in this order, whichever format the records came in."""
    m = _JOB_KEY.match(job_id)
    if m is None:
        return 0
    return (int(m.group(1)) << 20) | (int(m.group(2) or 0) & 0xFFFFF)


def size_class(size: int) -> str:
    """The size class of a job: ``"2"``, ``"3-4"``, ``"5-8"``, ``"9-16"`` ... (powers of two).

    Examples
    --------
    >>> size_class(2), size_class(4), size_class(5), size_class(17)
    ('2', '3-4', '5-8', '17-32')
    """
    if size <= 2:
        return str(size)
    high = 1 << (size - 1).bit_length()
    return f"{high // 2 + 1}-{high}"


# -- node names -----------------------------------------------------------------------------------
class _Names:
    """Node names of a topology both ways, with a cache of recorded hostlists."""

    def __init__(self, topology):
        self.names = topology.node_names
        self.index = {name: i for i, name in enumerate(self.names)}
        self._cache: dict[str, tuple[np.ndarray, bool]] = {}

    def ids(self, hostlist: str) -> tuple[np.ndarray, bool]:
        """(sorted ids of the known nodes of ``hostlist``, whether every node is known)."""
        hit = self._cache.get(hostlist)
        if hit is not None:
            return hit
        from tjap.placement.tree.hostlist import expand_hostlist

        names = expand_hostlist(hostlist)
        known = [self.index[n] for n in names if n in self.index]
        out = (np.array(sorted(set(known)), dtype=np.int32), len(known) == len(names))
        if len(self._cache) < 200_000:
            self._cache[hostlist] = out
        return out

    def hostlist(self, ids) -> str:
        from tjap.placement.tree.hostlist import compress_hostlist

        return compress_hostlist([self.names[int(v)] for v in sorted(ids)])


# -- the measures of one job ----------------------------------------------------------------------
class _Measures:
    """Cost as placed, SCAS optimum, free-form bound, slurm-tree's choice and floor of one job
    (the optima by :mod:`tjap.placement.tree.single_job`'s kernels)."""

    def __init__(self, topology, convention: str, slurm: str):
        from tjap.heuristics.slurm.tree import switch_table
        from tjap.placement.tree.cost import convention_code
        from tjap.placement.tree.single_job import SingleJobTables

        self.convention = convention
        self.form = topology.count_form
        self.code = convention_code(convention)
        self.newer = slurm == "24.11"
        self.table = switch_table(topology)
        self.single = SingleJobTables.from_topology(topology)
        self._counts = np.zeros(self.form.num_groups, np.int64)
        self._floor: dict[int, float] = {}
        self._all = np.ones(topology.num_nodes, dtype=bool)
        self._tree_out = np.empty(topology.num_nodes, dtype=np.int64)

    def cost(self, ids: np.ndarray) -> float:
        from tjap.placement.tree.tree_cost import node_set_cost

        return float(node_set_cost(self.form.group_of, self.form.top_level,
                                   ids.astype(np.int64), self._counts, self.code))

    def optima(self, idle: np.ndarray, size: int):
        """((optimum, its nodes sorted), (bound, its nodes sorted)) on the idle mask."""
        (scas_sq, scas_nodes), (bound_sq, bound_nodes) = self.single.optima(idle, size)
        return ((self.single.cost(size, scas_sq, self.convention), np.sort(scas_nodes)),
                (self.single.cost(size, bound_sq, self.convention), np.sort(bound_nodes)))

    def slurm_tree(self, idle: np.ndarray, size: int) -> np.ndarray | None:
        from tjap.heuristics.slurm.tree import place_job

        t = self.table
        out = self._tree_out[:size]
        got = place_job(idle.copy(), np.int64(size), t.level, t.parent, t.first_node,
                        t.end_node, t.leaves, t.leaf_dist, t.top, self.newer, out)
        return None if got < 0 else np.sort(out)

    def floor(self, size: int) -> float:
        if size not in self._floor:
            self._floor[size] = self.optima(self._all, size)[1][0]
        return self._floor[size]


# -- the result -----------------------------------------------------------------------------------
_SUMS = ("cost", "optimum", "bound", "floor")


@dataclass
class AuditResult:
    """What :func:`audit` found: per-job arrays (one entry per audited job, in start order), the
    skipped records, and what was read. :meth:`to_dict` is the JSON of ``tjap audit --json``;
    :meth:`summary_text` the terminal summary."""

    records: dict
    topology: object
    topology_info: dict
    options: dict
    skipped: dict
    jobs: dict            # column name -> numpy array or list
    worst: list = field(default_factory=list)
    interrupted: bool = False
    _names: _Names | None = None
    _tz: object = None

    @property
    def num_jobs(self) -> int:
        return len(self.jobs["job_id"])

    # summaries
    def _group_summary(self, rows: np.ndarray) -> dict:
        j = self.jobs
        out = {"jobs": int(rows.size)}
        for key in _SUMS:
            out[key] = float(j[key][rows].sum())
        tree = j["slurm_tree"][rows]
        placed = ~np.isnan(tree)
        out["slurm_tree"] = float(tree[placed].sum())
        out["slurm_tree_jobs"] = int(placed.sum())
        excess = out["cost"] - out["floor"]
        out["excess"] = excess
        out["excess_ratio"] = out["cost"] / out["floor"] if out["floor"] > 0 else None
        has_excess = excess > 1e-9 * max(1.0, out["cost"])
        out["removable_share"] = (out["cost"] - out["optimum"]) / excess if has_excess else None
        out["bound_share"] = (out["cost"] - out["bound"]) / excess if has_excess else None
        same = j["slurm_tree_same"][rows]
        out["fidelity_jobs"] = int(rows.size)
        out["fidelity"] = float(same.mean()) if rows.size else None
        return out

    def _groups(self, labels) -> list[dict]:
        labels = np.asarray(labels)
        out = []
        for label in sorted(set(labels.tolist()), key=_group_order):
            rows = np.flatnonzero(labels == label)
            out.append({"group": label, **self._group_summary(rows)})
        return out

    def summary(self) -> dict:
        """The summary of the JSON: totals, shares, fidelity, and the same by size class,
        partition and week."""
        j = self.jobs
        rows = np.arange(self.num_jobs)
        out = self._group_summary(rows)
        out["differing_jobs"] = [j["job_id"][i] for i in rows if not j["slurm_tree_same"][i]]
        out["by_size"] = self._groups([size_class(int(s)) for s in j["size"]])
        out["by_partition"] = self._groups(j["partition"])
        out["by_week"] = self._groups(self._weeks())
        out["worst"] = [dict(self._job(i), busy=self._names.hostlist(busy) if busy.size else "")
                        for i, busy in self.worst]
        return out

    def _weeks(self) -> list[str]:
        days: dict[int, str] = {}
        labels = []
        for s in self.jobs["start_s"]:
            day = int(s) // 86400
            if day not in days:
                y, w, _ = datetime.fromtimestamp(int(s), self._tz).isocalendar()
                days[day] = f"{y}-W{w:02d}"
            labels.append(days[day])
        return labels

    def _job(self, i: int) -> dict:
        j, names = self.jobs, self._names
        tree = j["slurm_tree"][i]
        return {
            "job_id": j["job_id"][i], "partition": j["partition"][i],
            "start": datetime.fromtimestamp(int(j["start_s"][i]), self._tz).isoformat(),
            "start_s": int(j["start_s"][i]), "size": int(j["size"][i]),
            "nodes": names.hostlist(j["nodes"][i]), "idle": int(j["idle"][i]),
            "cost": float(j["cost"][i]), "optimum": float(j["optimum"][i]),
            "optimum_nodes": names.hostlist(j["optimum_nodes"][i]),
            "bound": float(j["bound"][i]), "bound_nodes": names.hostlist(j["bound_nodes"][i]),
            "floor": float(j["floor"][i]),
            "slurm_tree": None if math.isnan(tree) else float(tree),
            "slurm_tree_nodes": (None if j["slurm_tree_nodes"][i] is None
                                 else names.hostlist(j["slurm_tree_nodes"][i])),
            "slurm_tree_same": bool(j["slurm_tree_same"][i]),
            "overlap": bool(j["overlap"][i]),
        }

    def job(self, i: int) -> dict:
        """The JSON entry of the i-th audited job (start order)."""
        return self._job(i)

    def to_dict(self, *, jobs: bool = True) -> dict:
        """The JSON of ``tjap audit --json`` (``jobs=False`` leaves out the per-job list)."""
        return {"tjap_audit": AUDIT_FORMAT, "interrupted": self.interrupted,
                "records": self.records,
                "topology": self.topology_info, "options": self.options,
                "summary": self.summary(), "skipped": dict(self.skipped),
                "jobs": [self._job(i) for i in range(self.num_jobs)] if jobs else []}

    def summary_text(self) -> str:
        """The terminal summary: headline figures, the table by size class, the skipped records."""
        from tjap.report import format_table

        s = self.summary()
        r, o = self.records, self.options
        lines = [f"tjap audit of {r['source']} ({r['format']}, times in {r['timezone']}): "
                 f"{r['allocations']:,} allocations read, {s['jobs']:,} jobs of "
                 f"{o['min_nodes']}+ nodes audited"]
        if s["jobs"]:
            lines.append(f"  as placed, their CH cost is {_pct(s['excess_ratio'] - 1)} above the "
                         "empty-cluster floor")
            if s["removable_share"] is not None:
                lines.append(f"  the cheapest idle nodes at each start (SCAS optimum) would have "
                             f"removed {_pct(s['removable_share'])} of that excess (free-form "
                             f"bound: {_pct(s['bound_share'])})")
            lines.append(f"  slurm-tree ({o['slurm']} rule) picks the recorded nodes for "
                         f"{_pct(s['fidelity'])} of them; {len(s['differing_jobs']):,} differ "
                         "(listed under summary.differing_jobs in --json)")
            lines.append("")
            rows = [{"size": g["group"], "jobs": g["jobs"],
                     "cost/floor": g["excess_ratio"], "optimum/floor": _ratio(g["optimum"], g["floor"]),
                     "bound/floor": _ratio(g["bound"], g["floor"]),
                     "removable": _pct(g["removable_share"]), "fidelity": _pct(g["fidelity"])}
                    for g in s["by_size"]]
            lines.append(format_table(rows, [("size", ""), ("jobs", ""), ("cost/floor", ".3f"),
                                             ("optimum/floor", ".3f"), ("bound/floor", ".3f"),
                                             ("removable", ""), ("fidelity", "")]))
        if self.skipped:
            from tjap.placement.slurm.accounting import REASONS

            lines.append("")
            lines.append("records not audited:")
            for reason, count in sorted(self.skipped.items(), key=lambda kv: -kv[1]):
                lines.append(f"  {count:>9,}  {reason}: {REASONS.get(reason, '')}")
        return "\n".join(lines)


def _ratio(a: float, b: float):
    return a / b if b > 0 else None


def _pct(share) -> str:
    return "-" if share is None else f"{100 * share:.1f} %"


def _group_order(label: str):
    m = re.match(r"(\d+)", label)
    return (0, int(m.group(1)), label) if m else (1, 0, label)


# -- the audit ------------------------------------------------------------------------------------
def audit(records, topology, *, fmt: str = "auto", timezone: str | None = None, start=None,
          end=None, partition: str | None = None, min_nodes: int = 2, convention: str = "paper",
          slurm: str = "22.05", worst: int = 10, progress=None) -> AuditResult:
    """Audit the placements of a site's accounting records on its topology.

    Parameters
    ----------
    records : path or iterable of lines
        ``sacct --parsable2 --allocations`` output (with its header) or a ``jobcomp/filetxt``
        log; a path may end in ``.gz``.
    topology : Topology, path or "slurm"
        The site's tree: a :class:`~tjap.placement.tree.topology.Topology`, a file it reads
        (``topology.conf`` or JSON), or ``"slurm"`` for the running Slurm's.
    fmt : {"auto", "sacct", "jobcomp"}
        The records' format (``auto``: from the first line).
    timezone : str, optional
        IANA name of the zone the records' times are in (sacct and jobcomp print local times);
        default: this machine's. ``start``/``end`` given as text are read in it too.
    start, end : date text, datetime or Unix seconds, optional
        Audit the jobs that started in ``[start, end)``; every record still counts for the
        occupancy.
    partition : str, optional
        Audit only this partition's jobs.
    min_nodes : int
        Audit jobs of at least this many nodes (default 2: one node has no network cost).
    convention : {"paper", "published"}
        The CH cost convention.
    slurm : {"22.05", "24.11"}
        Whose ``topology/tree`` rule slurm-tree follows.
    worst : int
        How many of the jobs with the largest cost above the optimum the summary keeps, with
        the nodes busy at their start.
    progress : callable, optional
        ``progress(done_bytes_or_jobs, total, phase)`` is called as the audit advances.

    Returns
    -------
    AuditResult
    """
    from tjap.placement.slurm.accounting import Skipped, read_allocations, resolve_timezone
    from tjap.placement.slurm.occupancy import HistoryBuilder, Sweep
    from tjap.placement.tree.cost import convention_code

    if fmt not in ("auto", "sacct", "jobcomp"):
        raise InvalidInputError(f"format must be auto, sacct or jobcomp, got {fmt!r}")
    if slurm not in SLURM_RULES:
        raise InvalidInputError(f"slurm must be one of {', '.join(SLURM_RULES)}, got {slurm!r}")
    convention_code(convention)
    if isinstance(min_nodes, bool) or not isinstance(min_nodes, (int, np.integer)) or min_nodes < 2:
        raise InvalidInputError(f"min_nodes must be an integer of at least 2, got {min_nodes!r}")
    if isinstance(worst, bool) or not isinstance(worst, (int, np.integer)) or worst < 0:
        raise InvalidInputError(f"worst must be a non-negative integer, got {worst!r}")
    topo, topo_source = _topology(topology)
    tz = resolve_timezone(timezone)
    records, fmt_read = _records_format(records, fmt)
    lo, hi = _when(start, tz, "start"), _when(end, tz, "end")
    if lo is not None and hi is not None and hi <= lo:
        raise InvalidInputError("the audit's end must come after its start")

    source_name = str(records) if isinstance(records, (str, os.PathLike)) else "lines"
    names = _Names(topo)
    skipped = Skipped()
    builder = HistoryBuilder()
    audited_rows: list[int] = []          # history index of each job to audit
    meta: list[tuple[str, str]] = []      # (job_id, partition) of each of them
    read = 0
    allocations = read_allocations(records, fmt=fmt_read, timezone=timezone, skipped=skipped)
    for alloc in allocations:
        read += 1
        ids, all_known = names.ids(alloc.nodes)
        row = builder.add(alloc.start, alloc.end, _job_key(alloc.job_id), ids)
        if progress is not None and read % 10000 == 0:
            progress(read, None, "reading")
        if not all_known:
            skipped.add("unknown_nodes", alloc.line, alloc.job_id)
        elif alloc.het:
            skipped.add("heterogeneous", alloc.line, alloc.job_id)
        elif ids.size < min_nodes:
            skipped.add("below_min_nodes", alloc.line, alloc.job_id)
        elif (lo is not None and alloc.start < lo) or (hi is not None and alloc.start >= hi):
            skipped.add("outside_window", alloc.line, alloc.job_id)
        elif partition is not None and alloc.partition != partition:
            skipped.add("other_partition", alloc.line, alloc.job_id)
        else:
            audited_rows.append(row)
            meta.append((alloc.job_id, alloc.partition))
    history = builder.build()

    jobs = _measure(history, topo, audited_rows, meta, convention, slurm, worst, progress)
    worst_list = jobs.pop("_worst")
    interrupted = jobs.pop("_interrupted")
    result = AuditResult(topology=topo, interrupted=interrupted,
        records={"source": source_name,
                 "format": fmt_read, "timezone": tz.key, "allocations": read},
        topology_info={"source": topo_source, "nodes": topo.num_nodes,
                       "switches": topo.num_switches, "levels": topo.num_levels},
        options={"from": None if lo is None else datetime.fromtimestamp(lo, tz).isoformat(),
                 "to": None if hi is None else datetime.fromtimestamp(hi, tz).isoformat(),
                 "partition": partition, "min_nodes": int(min_nodes), "convention": convention,
                 "slurm": slurm},
        skipped=skipped.counts, jobs=jobs, worst=worst_list, _names=names, _tz=tz)
    return result


def _measure(history, topo, audited_rows, meta, convention, slurm, worst, progress) -> dict:
    """The per-job measures of the audited allocations, walking the history in start order."""
    from tjap.placement.slurm.occupancy import Sweep

    measures = _Measures(topo, convention, slurm)
    sweep = Sweep(history, topo.num_nodes)
    position = np.empty(history.size, np.int64)
    position[sweep.order] = np.arange(history.size)
    audited = sorted(range(len(audited_rows)), key=lambda i: position[audited_rows[i]])
    m = len(audited)
    cols = {name: np.empty(m, np.float64) for name in ("cost", "optimum", "bound", "floor",
                                                       "slurm_tree")}
    cols.update(size=np.empty(m, np.int64), idle=np.empty(m, np.int64),
                start_s=np.empty(m, np.int64), slurm_tree_same=np.zeros(m, bool),
                overlap=np.zeros(m, bool))
    cols.update(job_id=[], partition=[], nodes=[], optimum_nodes=[], bound_nodes=[],
                slurm_tree_nodes=[])
    heap: list = []                        # (excess over optimum, -k, k, busy ids)
    try:
        _measure_loop(audited, audited_rows, meta, history, sweep, position, measures, cols,
                      heap, worst, progress)
    except BaseException as exc:           # Ctrl-C, SIGTERM: keep the jobs measured so far
        from tjap.errors import interrupted_by

        if interrupted_by(exc) is None:
            raise
        done = len(cols["slurm_tree_nodes"])
        for name in cols:
            cols[name] = cols[name][:done]
        heap = [item for item in heap if item[2] < done]
        cols["_interrupted"] = True
    else:
        cols["_interrupted"] = False
    cols["_worst"] = [(k, busy) for _, _, k, busy in sorted(heap, reverse=True)]
    return cols


def _measure_loop(audited, audited_rows, meta, history, sweep, position, measures, cols, heap,
                  worst, progress) -> None:
    """Measure the audited jobs in start order into ``cols`` (a job's entries are written
    together, after its measures, so an interrupted loop leaves whole jobs only)."""
    m = len(audited)
    for k, i in enumerate(audited):
        row = audited_rows[i]
        busy = sweep.busy_before(int(position[row]))
        ids = history.nodes_of(row)
        size = ids.size
        overlap = bool(busy[ids].any())
        idle = busy == 0
        idle[ids] = True
        cost = measures.cost(ids)
        (optimum, optimum_nodes), (bound, bound_nodes) = measures.optima(idle, size)
        floor = measures.floor(size)
        tree = measures.slurm_tree(idle, size)
        tree_cost = np.nan if tree is None else measures.cost(tree)
        for name, value in (("size", size), ("idle", int(idle.sum())),
                            ("start_s", history.start[row]), ("overlap", overlap),
                            ("cost", cost), ("optimum", optimum), ("bound", bound),
                            ("floor", floor), ("slurm_tree", tree_cost),
                            ("slurm_tree_same", tree is not None and np.array_equal(tree, ids))):
            cols[name][k] = value
        for name, value in (("job_id", meta[i][0]), ("partition", meta[i][1]), ("nodes", ids),
                            ("optimum_nodes", optimum_nodes), ("bound_nodes", bound_nodes),
                            ("slurm_tree_nodes", tree)):
            cols[name].append(value)
        gap = cost - optimum
        if worst and (len(heap) < worst or gap > heap[0][0]):
            item = (gap, -k, k, np.flatnonzero(~idle))
            if len(heap) < worst:
                heapq.heappush(heap, item)
            else:
                heapq.heapreplace(heap, item)
        if progress is not None and k % 1000 == 0:
            progress(k, m, "auditing")
