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

The idle nodes at a start are those no other allocation held: every job that started before it
(the same second: by job id) and had not ended before that second
(:class:`~tjap.placement.slurm.occupancy.Sweep` with ``strict=True``), plus the job's own nodes.
Nodes freed within the job's own second are not counted as idle: Slurm may still have been
completing those jobs. A job whose nodes another record still held after that second is flagged
``overlap`` (inconsistent records); it is audited all the same, on its own nodes.

Costs are the CH cost of :func:`tjap.placement.tree.cost.job_cost` (``convention``). The audit
only reads: it never talks to the scheduler. What it cannot see: nodes that were down, drained,
reserved or outside the job's partition at its start are taken as idle when no record holds
them, so ``optimum`` and ``bound`` may name nodes Slurm could not use; the summary's
``fidelity`` tells how far that matters on the site's history.

The result's JSON (``tjap audit --json``) is documented in the README ("What placement cost
you").
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from tjap.core.errors import InvalidInputError, Terminated, check_int, is_int
from tjap.core.result import Record, Status

#: Version of the JSON layout of :meth:`AuditResult.to_dict`.
AUDIT_FORMAT = 1
#: Slurm releases whose topology/tree rule slurm-tree follows.
SLURM_RULES = ("22.05", "24.11")

_JOB_KEY = re.compile(r"(\d+)(?:[_+](\d+))?")


# -- inputs ---------------------------------------------------------------------------------------
def _nothing_to_audit(source, read, counts, span, partitions, tz, min_nodes) -> InvalidInputError:
    """The one-line refusal of an audit left with no job, naming what the records do cover."""
    if read == 0:
        return InvalidInputError(
            f"{source}: no started job to audit ({sum(counts.values()):,} records skipped: "
            "steps, pending or cancelled jobs, or only a header); give the records of a period "
            "in which jobs ran"
        )
    why = {
        "unknown_nodes": "run on nodes the topology lacks (is --topology this cluster's?)",
        "below_min_nodes": f"use fewer than --min-nodes {min_nodes} nodes",
        "outside_window": "start outside --from/--to",
        "other_partition": "run in another partition than --partition",
        "heterogeneous": "are heterogeneous jobs",
        "malformed": "have a malformed node list",
    }
    reasons = "; ".join(f"{counts[k]:,} {text}" for k, text in why.items() if counts.get(k))
    lo, hi = (datetime.fromtimestamp(t, tz).isoformat(timespec="minutes") for t in span)
    names = ", ".join(sorted(p or "(none)" for p in partitions)[:8])
    return InvalidInputError(
        f"{source}: none of its {read:,} allocations is a job to audit ({reasons}); the records "
        f"start from {lo} to {hi}, in the partitions {names}"
    )


def _topology(topology):
    """(Topology, where it came from, whether its text is Slurm's ``topology/block``) from a
    Topology, a file path, or ``"slurm"`` (the running Slurm's)."""
    from tjap.placement.slurm.readers import is_block_topology, live_topology_conf
    from tjap.placement.tree.topology import Topology

    if isinstance(topology, Topology):
        return topology, "Topology object", False
    if isinstance(topology, (str, os.PathLike)):
        if str(topology) == "slurm":
            text = live_topology_conf()  # already topology.conf text, blocks included
            return (
                Topology.from_slurm(text),
                "the running Slurm (scontrol show topology)",
                is_block_topology(text),
            )
        tree = Topology.from_file(topology)
        try:
            text = Path(topology).read_text(errors="replace")
        except OSError:
            text = ""
        return tree, str(topology), is_block_topology(text)
    raise InvalidInputError(
        f"topology must be a tjap.Topology, a topology file or 'slurm', got "
        f"{type(topology).__name__}"
    )


def _when(value, tz, what: str) -> int | None:
    """Unix seconds of a time bound: None, Unix seconds, a datetime, or ISO text
    (``2026-11-01`` or ``2026-11-01T08:00``) in the records' timezone ``tz``."""
    if value is None:
        return None
    if is_int(value):
        return int(value)
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInputError(
                f"{what} {value!r} is not a date: give YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]"
            ) from None
    else:
        raise InvalidInputError(
            f"{what} must be a date (text or datetime) or Unix seconds, got {type(value).__name__}"
        )
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
# -- the result -----------------------------------------------------------------------------------
_SUMS = ("cost", "optimum", "bound", "floor")


@dataclass(frozen=True)
class AuditResult(Record):
    """What :func:`audit` found: per-job arrays (one entry per audited job, in start order), the
    skipped records, and what was read. A frozen record: :meth:`to_dict` is the JSON of ``tjap
    audit --json``; :meth:`summary_text` the terminal summary. The fields every result shares
    (:data:`tjap.core.result.COMMON_FIELDS`): ``method`` ``"audit"``, ``status`` FEASIBLE (an
    evaluation; ``interrupted`` says whether it ran through), ``objective`` the total CH cost of
    the audited placements, ``runtime_s`` and ``seed`` (0: the audit draws nothing)."""

    records: dict
    topology: object
    topology_info: dict
    options: dict
    skipped: dict
    jobs: dict  # column name -> numpy array or list
    worst: list = field(default_factory=list)
    interrupted: bool = False
    #: what stopped an interrupted audit: "SIGINT" (Ctrl-C) or "SIGTERM"; None when it ran through
    stopped_by: str | None = None
    runtime_s: float = 0.0
    _names: Any = None  # the topology's NodeIndex
    _tz: tzinfo | None = None

    method: ClassVar[str] = "audit"
    status: ClassVar[Status] = Status.FEASIBLE
    seed: ClassVar[int] = 0

    @property
    def objective(self) -> float:
        return float(self.summary()["cost"])

    @property
    def num_jobs(self) -> int:
        return len(self.jobs["job_id"])

    # summaries
    def _group_summary(self, rows: np.ndarray) -> dict:
        j = self.jobs
        out: dict[str, Any] = {"jobs": int(rows.size)}
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
        partition and week (computed once)."""
        return self._summary

    @functools.cached_property
    def _summary(self) -> dict:  # computed once (a frozen record's cache)
        return self._summarise()

    def _summarise(self) -> dict:
        j = self.jobs
        rows = np.arange(self.num_jobs)
        out = self._group_summary(rows)
        out["differing_jobs"] = [j["job_id"][i] for i in rows if not j["slurm_tree_same"][i]]
        classes = {int(n): size_class(int(n)) for n in np.unique(j["size"])}
        out["by_size"] = self._groups([classes[n] for n in j["size"].tolist()])
        out["by_partition"] = self._groups(j["partition"])
        out["by_week"] = self._groups(self._weeks())
        out["worst"] = [
            dict(self._job(i), busy=self._names.hostlist(busy)) for i, busy in self.worst
        ]
        return out

    def _weeks(self) -> list[str]:
        weeks: dict[int, str] = {}  # by quarter hour: zones shift by those
        labels = []
        for s in self.jobs["start_s"].tolist():
            quarter = s // 900
            if quarter not in weeks:
                y, w, _ = datetime.fromtimestamp(s, self._tz).isocalendar()
                weeks[quarter] = f"{y}-W{w:02d}"
            labels.append(weeks[quarter])
        return labels

    def _nodes(self, name: str, i: int) -> str:
        lo, hi = self.jobs["ptr"][i], self.jobs["ptr"][i + 1]
        return self._names.hostlist(np.sort(self.jobs["flat"][name][lo:hi]))

    def _job(self, i: int) -> dict:
        """The JSON entry of the i-th job: plain Python values only."""
        j = self.jobs
        tree, bound = j["slurm_tree"][i], j["bound"][i]
        return {
            "job_id": j["job_id"][i],
            "partition": j["partition"][i],
            "start": datetime.fromtimestamp(int(j["start_s"][i]), self._tz).isoformat(),
            "start_s": int(j["start_s"][i]),
            "size": int(j["size"][i]),
            "nodes": self._nodes("nodes", i),
            "idle": int(j["idle"][i]),
            "cost": float(j["cost"][i]),
            "optimum": float(j["optimum"][i]),
            "optimum_nodes": self._nodes("optimum", i),
            "bound": float(bound),
            "bound_nodes": self._nodes("bound", i),
            "floor": float(j["floor"][i]),
            "slurm_tree": None if math.isnan(tree) else float(tree),
            "slurm_tree_nodes": None if math.isnan(tree) else self._nodes("slurm_tree", i),
            "slurm_tree_same": bool(j["slurm_tree_same"][i]),
            "overlap": bool(j["overlap"][i]),
        }

    def job(self, i: int) -> dict:
        """The JSON entry of the i-th audited job (start order)."""
        return self._job(i)

    def to_dict(self, *, jobs: bool = True) -> dict:
        """The JSON of ``tjap audit --json`` (``jobs=False`` leaves out the per-job list)."""
        return {
            "tjap_audit": AUDIT_FORMAT,
            "interrupted": self.interrupted,
            "records": self.records,
            "topology": self.topology_info,
            "options": self.options,
            "summary": self.summary(),
            "skipped": dict(self.skipped),
            "jobs": [self._job(i) for i in range(self.num_jobs)] if jobs else [],
        }

    def summary_text(self) -> str:
        """The terminal summary: headline figures, the table by size class, the skipped records."""
        from tjap.core.report import format_table

        s = self.summary()
        r, o = self.records, self.options
        lines = (
            ["INTERRUPTED: the jobs audited before Ctrl-C or SIGTERM only"]
            if self.interrupted
            else []
        )
        lines += [
            f"tjap audit of {r['source']} ({r['format']}, times in {r['timezone']}): "
            f"{r['allocations']:,} allocations read, {s['jobs']:,} jobs of "
            f"{o['min_nodes']}+ nodes audited"
        ]
        if s["jobs"]:
            lines.append(
                f"  as placed, their CH cost is {_pct(s['excess_ratio'] - 1)} above the "
                "empty-cluster floor"
            )
            if s["removable_share"] is not None:
                lines.append(
                    f"  the cheapest idle nodes at each start (SCAS optimum) would have "
                    f"removed {_pct(s['removable_share'])} of that excess (free-form "
                    f"bound: {_pct(s['bound_share'])})"
                )
            rule = (
                f"slurm-tree ({o['slurm']} rule)"
                if o["slurm_rule"] == "topology/tree"
                else "slurm-block (topology/block rule)"
            )
            lines.append(
                f"  {rule} picks the recorded nodes for "
                f"{_pct(s['fidelity'])} of them; {len(s['differing_jobs']):,} differ "
                "(listed under summary.differing_jobs in --json)"
            )
            lines.append("")
            rows = [
                {
                    "size": g["group"],
                    "jobs": g["jobs"],
                    "cost/floor": g["excess_ratio"],
                    "optimum/floor": _ratio(g["optimum"], g["floor"]),
                    "bound/floor": _ratio(g["bound"], g["floor"]),
                    "removable": _pct(g["removable_share"]),
                    "fidelity": _pct(g["fidelity"]),
                }
                for g in s["by_size"]
            ]
            lines.append(
                format_table(
                    rows,
                    [
                        ("size", ""),
                        ("jobs", ""),
                        ("cost/floor", ".3f"),
                        ("optimum/floor", ".3f"),
                        ("bound/floor", ".3f"),
                        ("removable", ""),
                        ("fidelity", ""),
                    ],
                )
            )
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
def audit(
    records,
    topology,
    *,
    fmt: str = "auto",
    timezone: str | None = None,
    start=None,
    end=None,
    partition: str | None = None,
    min_nodes: int = 2,
    convention: str = "paper",
    slurm: str = "22.05",
    slurm_rule: str = "auto",
    worst: int = 10,
    progress=None,
) -> AuditResult:
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
    slurm_rule : {"auto", "tree", "block"}
        Which of Slurm's selections the recorded choice is compared with (the ``slurm_tree``
        columns): ``topology/tree``'s (slurm-tree) or ``topology/block``'s (slurm-block, for a
        job without ``--segment``); ``auto``: block when the topology's text has ``BlockName=``
        lines.
    worst : int
        How many of the jobs with the largest cost above the optimum the summary keeps, with
        the nodes busy at their start.
    progress : callable, optional
        ``progress(done_bytes_or_jobs, total, phase)`` is called as the audit advances.

    Returns
    -------
    AuditResult
    """
    started = time.perf_counter()
    from tjap.placement.slurm.accounting import Skipped, read_allocations, resolve_timezone
    from tjap.placement.slurm.occupancy import HistoryBuilder
    from tjap.placement.tree.cost import convention_code

    if fmt not in ("auto", "sacct", "jobcomp"):
        raise InvalidInputError(f"format must be auto, sacct or jobcomp, got {fmt!r}")
    if slurm not in SLURM_RULES:
        raise InvalidInputError(f"slurm must be one of {', '.join(SLURM_RULES)}, got {slurm!r}")
    convention_code(convention)
    check_int("min_nodes", min_nodes, 2)
    check_int("worst", worst, 0)
    if slurm_rule not in ("auto", "tree", "block"):
        raise InvalidInputError(f"slurm_rule must be auto, tree or block, got {slurm_rule!r}")
    topo, topo_source, is_block = _topology(topology)
    rule = "block" if slurm_rule == "block" or (slurm_rule == "auto" and is_block) else "tree"
    if rule == "block":
        from tjap.placement.tree.jobs import base_block_size

        base_block_size(topo, "slurm_rule 'block' (--slurm-rule block)")
    tz = resolve_timezone(timezone)
    records, fmt_read = _records_format(records, fmt)
    lo, hi = _when(start, tz, "start"), _when(end, tz, "end")
    if lo is not None and hi is not None and hi <= lo:
        raise InvalidInputError("the audit's end must come after its start")

    source_name = str(records) if isinstance(records, (str, os.PathLike)) else "lines"
    from tjap.placement.tree.hostlist import NodeIndex

    names = NodeIndex(topo.node_names)
    skipped = Skipped()
    builder = HistoryBuilder()
    audited_rows: list[int] = []  # history index of each job to audit
    meta: list[tuple[str, str]] = []  # (job_id, partition) of each of them
    read = 0
    first: int | None = None  # what the records cover, to name it
    last: int | None = None
    partitions: set[str] = set()
    allocations = read_allocations(records, fmt=fmt_read, timezone=timezone, skipped=skipped)
    for alloc in allocations:
        read += 1
        first = alloc.start if first is None else min(first, alloc.start)
        last = alloc.start if last is None else max(last, alloc.start)
        if len(partitions) < 50:
            partitions.add(alloc.partition)
        try:
            ids, all_known = names.ids(alloc.nodes)
        except InvalidInputError:
            skipped.add("malformed", alloc.line, alloc.job_id)
            continue
        row = builder.add(alloc.start, alloc.end, _job_key(alloc.job_id), ids)
        if progress is not None and read % 10000 == 0:
            progress(read, None, "reading")
        if not all_known:
            skipped.add("unknown_nodes", alloc.line, alloc.job_id)
        elif alloc.num_nodes != ids.size:  # the record contradicts itself: which is right?
            skipped.add("malformed", alloc.line, alloc.job_id)
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
    if not audited_rows:
        raise _nothing_to_audit(
            source_name, read, skipped.counts, (first, last), partitions, tz, min_nodes
        )
    history = builder.build()

    jobs = _measure(history, topo, audited_rows, meta, convention, slurm, rule, worst, progress)
    worst_list = jobs.pop("_worst")
    stop = jobs.pop("_interrupted")
    result = AuditResult(
        topology=topo,
        interrupted=stop is not None,
        stopped_by=None
        if stop is None
        else ("SIGTERM" if isinstance(stop, Terminated) else "SIGINT"),
        records={
            "source": source_name,
            "format": fmt_read,
            "timezone": tz.key,
            "allocations": read,
        },
        topology_info={
            "source": topo_source,
            "nodes": topo.num_nodes,
            "switches": topo.num_switches,
            "levels": topo.num_levels,
        },
        options={
            "from": None if lo is None else datetime.fromtimestamp(lo, tz).isoformat(),
            "to": None if hi is None else datetime.fromtimestamp(hi, tz).isoformat(),
            "partition": partition,
            "min_nodes": int(min_nodes),
            "convention": convention,
            "slurm": slurm,
            "slurm_rule": f"topology/{rule}",
        },
        skipped=skipped.counts,
        jobs=jobs,
        worst=worst_list,
        runtime_s=time.perf_counter() - started,
        _names=names,
        _tz=tz,
    )
    return result


def _measure(history, topo, audited_rows, meta, convention, slurm, rule, worst, progress) -> dict:
    """The per-job measures of the audited allocations, in start order
    (:func:`tjap.heuristics.slurm.audit_loop.measure`), with the bound computed in Python on
    trees whose leaves sit at several depths, the floors, and the worst jobs' busy nodes."""
    from tjap.core.errors import interrupted_by
    from tjap.heuristics.slurm.audit_loop import LoopTables, measure
    from tjap.placement.slurm.occupancy import Sweep
    from tjap.placement.tree.cost import convention_code

    tables = LoopTables(topo, slurm)
    code = convention_code(convention)
    meta_of = dict(zip(audited_rows, meta))
    report = None if progress is None else (lambda done, total: progress(done, total, "auditing"))
    cols, rows, ptr, flat, done, interrupted = measure(
        history, topo, audited_rows, tables, code, progress=report
    )
    cols = {name: col[:done] for name, col in cols.items()}
    rows, ptr = rows[:done], ptr[: done + 1]
    sizes = np.diff(ptr)
    single = tables.single
    position = history.position
    if rule == "block":  # Slurm's block rule replaces the tree's
        cols["slurm_tree"][:] = np.nan
        cols["same"][:] = False
    python_bound, python_block = not single.exact_kernel, rule == "block"
    finished = 0
    try:
        if python_bound or python_block:  # what the kernel leaves, job by job
            from tjap.heuristics.slurm.block import slurm_block_nodes
            from tjap.placement.tree.cost import job_cost

            sweep = Sweep(history, topo.num_nodes, strict=True)

            for i, row in enumerate(rows.tolist()):
                idle = sweep.busy_before(int(position[row])) == 0
                own = history.nodes_of(row)
                idle[own] = True
                size = int(sizes[i])
                if python_bound:
                    best, nodes = single.bound(idle, size)
                    cols["bound"][i] = single.cost(size, best, convention)
                    flat["bound"][ptr[i] : ptr[i + 1]] = nodes
                if python_block:
                    nodes = slurm_block_nodes(topo, idle, size)
                    if nodes is not None:
                        cols["slurm_tree"][i] = job_cost(topo, nodes, convention)
                        cols["same"][i] = nodes == own.tolist()
                        flat["slurm_tree"][ptr[i] : ptr[i + 1]] = nodes
                finished = i + 1
                if progress is not None and i % 1000 == 0:
                    progress(i, rows.size, "python")
        else:
            finished = done
    except BaseException as exc:
        stop = interrupted_by(exc)
        if stop is None:
            raise
        interrupted = stop
    if finished < done:
        cols = {name: col[:finished] for name, col in cols.items()}
        rows, ptr, sizes = rows[:finished], ptr[: finished + 1], sizes[:finished]
    everything = np.ones(topo.num_nodes, dtype=bool)
    floors = {
        int(n): single.cost(int(n), single.bound(everything, int(n))[0], convention)
        for n in np.unique(sizes)
    }
    gap = cols["cost"] - cols["optimum"]
    top = sorted(np.argsort(-gap, kind="stable")[:worst].tolist(), key=lambda i: position[rows[i]])
    busy_of = {}
    sweep = Sweep(history, topo.num_nodes, strict=True)
    for i in top:
        busy = sweep.busy_before(int(position[rows[i]])) > 0
        busy[history.nodes_of(int(rows[i]))] = False
        busy_of[i] = np.flatnonzero(busy)
    recorded = (
        np.concatenate([history.nodes_of(r) for r in rows.tolist()])
        if rows.size
        else np.zeros(0, np.int32)
    )
    return {
        "job_id": [meta_of[r][0] for r in rows.tolist()],
        "partition": [meta_of[r][1] for r in rows.tolist()],
        "start_s": history.start[rows],
        "size": sizes,
        "idle": cols["idle"],
        "cost": cols["cost"],
        "optimum": cols["optimum"],
        "bound": cols["bound"],
        "floor": np.array([floors[int(n)] for n in sizes.tolist()], dtype=np.float64),
        "slurm_tree": cols["slurm_tree"],
        "slurm_tree_same": cols["same"],
        "overlap": cols["overlap"],
        "ptr": ptr,
        "flat": {
            "nodes": recorded,
            "optimum": flat["optimum"],
            "bound": flat["bound"],
            "slurm_tree": flat["slurm_tree"],
        },
        "_worst": [(i, busy_of[i]) for i in sorted(top, key=lambda i: (-gap[i], i))],
        "_interrupted": interrupted,
    }
