"""The paper's random workload (seed 002, section VI-A), workloads read from job lists, and the
window policy's queue rules.

Jobs arrive with inter-arrival times uniform integers in [5, 30] s, run uniform integers in
[10, 1800] s and request uniform integers in [1, 40] nodes. The queue is ordered by more waiting
periods (NWP) first, then fewer requested nodes, then arrival; a window takes the greedy prefix of
that order that fits (at most ``cap`` multi-node jobs).

:meth:`Workload.from_file` reads a real job list instead: the seed-002 authors' published format
(one job a line: job id, submit time s, runtime s, nodes), an SWF trace or a sacct-style table
(both through :func:`tjap.placement.batch.traces.load_trace`), with a :class:`WorkloadReport` of what
was read, skipped and changed.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import math
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tjap.core.errors import InvalidInputError

if TYPE_CHECKING:
    from tjap.placement.batch.traces import TraceReport

INTER_ARRIVAL_S = (5, 30)
RUNTIME_S = (10, 1800)
REQUESTED_NODES = (1, 40)


@dataclass(frozen=True)
class Workload:
    """Jobs in arrival order: arrival time, runtime and requested nodes (integer arrays)."""

    arrival_s: np.ndarray
    runtime_s: np.ndarray
    requested_nodes: np.ndarray

    def __post_init__(self):
        lengths = {len(self.arrival_s), len(self.runtime_s), len(self.requested_nodes)}
        if len(lengths) != 1:
            raise InvalidInputError(
                "workload arrays arrival_s, runtime_s, requested_nodes differ in length"
            )
        if len(self.arrival_s) == 0:
            raise InvalidInputError("a workload needs at least one job")
        if np.any(np.diff(self.arrival_s) < 0):
            raise InvalidInputError("workload arrival_s must be non-decreasing")
        if np.any(self.requested_nodes < 1) or np.any(self.runtime_s < 0):
            raise InvalidInputError("workload jobs need requested_nodes >= 1 and runtime_s >= 0")

    @property
    def num_jobs(self) -> int:
        return len(self.arrival_s)

    @classmethod
    def generate(
        cls,
        num_jobs: int = 100_000,
        seed: int = 0,
        max_nodes: int = REQUESTED_NODES[1],
        runtime_scale: float = 1.0,
        arrival_scale: float = 1.0,
    ) -> "Workload":
        """The paper's random workload. ``max_nodes`` is the largest request (requests are
        uniform integers in [1, max_nodes]); ``runtime_scale`` multiplies every runtime
        (rounded) and ``arrival_scale`` every inter-arrival time (arrival times rounded down to
        whole seconds), so that a cluster of another size can see the paper's load per node
        (:func:`tjap.placement.tree.stream.tree_load`). With the defaults, the paper's workload."""
        if num_jobs < 1:
            raise InvalidInputError(f"num_jobs must be at least 1, got {num_jobs}")
        if not runtime_scale > 0:
            raise InvalidInputError(f"runtime_scale must be positive, got {runtime_scale}")
        if not arrival_scale > 0:
            raise InvalidInputError(f"arrival_scale must be positive, got {arrival_scale}")
        rng = np.random.default_rng(seed)
        gaps = rng.integers(INTER_ARRIVAL_S[0], INTER_ARRIVAL_S[1] + 1, num_jobs)
        if arrival_scale == 1.0:
            arrival = np.cumsum(gaps) - gaps[0]
        else:
            scaled = np.cumsum(gaps * float(arrival_scale))
            arrival = np.floor(scaled - scaled[0]).astype(np.int64)
        runtime = rng.integers(RUNTIME_S[0], RUNTIME_S[1] + 1, num_jobs)
        if runtime_scale != 1.0:
            runtime = np.rint(runtime * runtime_scale).astype(np.int64)
        nodes = rng.integers(REQUESTED_NODES[0], max_nodes + 1, num_jobs)
        return cls(arrival.astype(np.int64), runtime.astype(np.int64), nodes.astype(np.int64))

    @classmethod
    def from_file(
        cls, path, format: str = "auto", *, cluster_nodes: int | None = None
    ) -> tuple["Workload", "WorkloadReport"]:
        """A workload read from a job list, and the :class:`WorkloadReport` of what was read,
        skipped and changed.

        ``format`` (one of :data:`FILE_FORMATS`, or ``"auto"``: told apart by the first lines,
        then by the file name):

        - ``"authors"``: the seed-002 authors' published workload format, one job a line,
          whitespace-separated: job id, submit time (s), runtime (s), requested nodes (integers;
          ``#`` comments and blank lines are skipped).
        - ``"swf"``, ``"sacct"``: read by :func:`tjap.placement.batch.traces.load_trace` (its report,
          its rules: SWF requested processors, else allocated ones, are the nodes; runtimes cut
          to the job's time limit are reported there).

        Bad lines are skipped and counted per reason with the first line number; a file whose
        first lines are all malformed is an error, as with the trace loaders. Jobs are sorted
        stably by submit time (the report counts those that moved) and shifted so the first
        arrives at 0. With ``cluster_nodes``, jobs requesting more nodes than that are dropped
        and counted. Nothing is rescaled: runtimes and sizes are the file's (unlike
        :func:`tjap.placement.tree.stream.generate_windows` on a ``topology``, which scales the
        generator to the cluster). Time limits, users and dependencies are not used:
        the window stream runs every job for its runtime, as the paper's did.
        """
        return _read_workload(cls, path, format, cluster_nodes)


#: Job-list formats :meth:`Workload.from_file` reads (besides ``"auto"``).
FILE_FORMATS = ("authors", "swf", "sacct")
_AUTHORS_FIELDS = ("job id", "submit time", "runtime", "nodes")
_MAX_EXAMPLES = 5
_EXAMPLE_WIDTH = 80
#: A file whose first this-many job lines are all malformed is not in the authors' format.
_GIVE_UP_AFTER = 20
#: Larger numbers are malformed (as in the trace loaders: sums of times stay inside int64).
_BIG = 2**52
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")


@dataclass(frozen=True)
class WorkloadReport:
    """What :meth:`Workload.from_file` read and changed.

    Attributes
    ----------
    trace : the reading of the file (a :class:`tjap.placement.batch.traces.TraceReport`: lines read,
        jobs kept, skipped lines per reason with the first line number, the loader's own changes;
        format ``"authors"`` for the authors' format).
    jobs : jobs in the workload.
    cluster_nodes : the cluster size jobs were checked against (None: not checked).
    shifted_by_s : seconds subtracted from every submit time (the first job arrives at 0).
    order : how the jobs were ordered.
    changes : change -> details, only those that happened: ``reordered_by_submit_time``
        ({"count", "first_line"}: jobs submitted before a job of an earlier line),
        ``dropped_larger_than_cluster`` ({"count", "first_job_id", "largest_nodes"}).
    warnings : one line each, things a user should look at.
    """

    trace: "TraceReport"
    jobs: int
    cluster_nodes: int | None
    shifted_by_s: int
    order: str
    changes: dict = field(default_factory=dict, hash=False)
    warnings: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        return self.trace.path

    @property
    def format(self) -> str:
        return self.trace.format

    def summary(self) -> str:
        """One line: the file, its format and the jobs kept."""
        return f"{Path(self.path).name} ({self.format}, {self.jobs} jobs)"

    def to_dict(self) -> dict:
        """Plain JSON-ready data: the trace report's fields and a ``workload`` section."""
        return {
            **self.trace.to_dict(),
            "workload": {
                "jobs": self.jobs,
                "cluster_nodes": self.cluster_nodes,
                "shifted_by_s": self.shifted_by_s,
                "order": self.order,
                "rescaled": False,
                "changes": {k: dict(v) for k, v in self.changes.items()},
                "warnings": list(self.warnings),
            },
        }

    def text(self) -> str:
        """A short block of lines for people (what the CLI writes to stderr)."""
        shift = (
            f"submit times shifted by -{self.shifted_by_s} s"
            if self.shifted_by_s
            else "submit times as read"
        )
        parts = [
            f"workload: {self.jobs} jobs, {shift}, runtimes and sizes as read (nothing rescaled)"
        ]
        moved = self.changes.get("reordered_by_submit_time")
        if moved:
            parts.append(
                f"{moved['count']} jobs moved to keep submit order (first line "
                f"{moved['first_line']})"
            )
        big = self.changes.get("dropped_larger_than_cluster")
        if big:
            parts.append(
                f"{big['count']} jobs dropped: more nodes than the cluster's "
                f"{self.cluster_nodes} (largest {big['largest_nodes']}, first job id "
                f"{big['first_job_id']})"
            )
        lines = [self.trace.text(), "  " + "; ".join(parts)]
        return "\n".join(lines + [f"  warning: {w}" for w in self.warnings])


class _Bad(Exception):
    """A line of the authors' format that is skipped; ``malformed`` when it does not parse."""

    def __init__(self, reason: str, kind: str | None = None, malformed: bool = True):
        super().__init__(reason)
        self.reason, self.kind, self.malformed = reason, kind or reason, malformed


def _read_workload(cls, path, format, cluster_nodes):
    """:meth:`Workload.from_file`."""
    key = str(format).strip().lower()
    if key not in ("auto", *FILE_FORMATS):
        raise InvalidInputError(
            f"unknown workload format {format!r}; allowed: auto, {', '.join(FILE_FORMATS)}"
        )
    if cluster_nodes is not None and int(cluster_nodes) < 1:
        raise InvalidInputError(f"cluster_nodes must be positive, got {cluster_nodes}")
    _check_file(path)
    if key == "auto":
        key = _detect(path)
    changes: dict = {}
    warnings: list[str] = []
    if key == "authors":
        ids, submit, runtime, nodes, line, trace = _read_authors(path)
        moved = submit < np.maximum.accumulate(submit)  # submitted before an earlier line's job
        if moved.any():
            changes["reordered_by_submit_time"] = {
                "count": int(moved.sum()),
                "first_line": int(line[moved][0]),
            }
        order = np.argsort(submit, kind="stable")
        ids, submit, runtime, nodes = (a[order] for a in (ids, submit, runtime, nodes))
        how = "file order, sorted stably by submit time"
    else:
        from tjap.placement.batch.traces import load_trace

        jobs, trace = load_trace(path, key)
        ids, submit, runtime, nodes = jobs.job_id, jobs.submit_s, jobs.runtime_s, jobs.nodes
        how = "the trace loader's: by submit time, then job id"
        read = trace.dependencies.get("read", 0)
        if read and not trace.dependencies.get("ignored"):
            warnings.append(
                f"{read} dependencies (SWF field 17) are not followed: the window "
                "stream starts each job when it is selected"
            )
    if cluster_nodes is not None:
        big = nodes > int(cluster_nodes)
        if big.all():
            raise InvalidInputError(
                f"workload file {path}: every job requests more nodes than the cluster's "
                f"{cluster_nodes} (largest {int(nodes.max())}); use a larger cluster"
            )
        if big.any():
            changes["dropped_larger_than_cluster"] = {
                "count": int(big.sum()),
                "first_job_id": int(ids[big][0]),
                "largest_nodes": int(nodes[big].max()),
            }
            submit, runtime, nodes = submit[~big], runtime[~big], nodes[~big]
    shift = int(submit[0])
    workload = cls(
        np.asarray(submit - shift, np.int64),
        np.asarray(runtime, np.int64),
        np.asarray(nodes, np.int64),
    )
    return workload, WorkloadReport(
        trace, workload.num_jobs, cluster_nodes, shift, how, changes, tuple(warnings)
    )


def _check_file(path) -> None:
    """A clear error for a missing file, a directory or an empty file."""
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"workload file {path} not found; check the path")
    if p.is_dir():
        raise InvalidInputError(f"workload file {path} is a directory; pass the file itself")
    if p.stat().st_size == 0:
        raise InvalidInputError(
            f"workload file {path} is empty; pass a job list with at least one job"
        )


def _detect(path) -> str:
    """The format of a job list from its first lines (an SWF record or a sacct header first,
    then a line of the authors' four integers), else from its name (``.txt``, the authors' own
    data file's suffix: authors; ``.swf``: swf; ``.tsv``, ``.sacct``: sacct)."""
    from tjap.placement.batch.traces import _format_from_name, _head, _sniff

    head = _head(path)
    guess = _sniff(head)
    if guess is None and any(
        _authors_line(text) for text in head if not text.lstrip().startswith("#")
    ):
        guess = "authors"
    if guess is None:
        plain = Path(str(path).lower().removesuffix(".gz"))
        guess = "authors" if plain.suffix == ".txt" else _format_from_name(path)
    if guess is None:
        raise InvalidInputError(
            f"cannot tell the format of workload file {path} from its first lines or its name; "
            "pass --workload-format authors (job id, submit s, runtime s, nodes a line), swf "
            "or sacct"
        )
    return guess


def _authors_line(text: str) -> bool:
    try:
        _authors_values(text)
    except _Bad:
        return False
    return True


def _authors_values(text: str) -> list[int]:
    """The four integers of a line of the authors' format (raises _Bad)."""
    fields = text.split("#", 1)[0].split()
    if len(fields) != len(_AUTHORS_FIELDS):
        raise _Bad(
            f"wrong number of fields (expected {len(_AUTHORS_FIELDS)}, got {len(fields)})",
            "wrong number of fields",
        )
    return [_authors_value(x, name) for x, name in zip(fields, _AUTHORS_FIELDS)]


def _authors_value(text: str, name: str) -> int:
    """An integer field; an integral decimal (``25.0``) is read as that integer."""
    if (text.isascii() and text.isdigit()) or _INTEGER.match(text):
        if len(text.lstrip("+-0")) > 20:  # far out of range (and int() reads 4300 digits)
            raise _Bad(f"{name} {text[:24]!r}... out of range", "number out of range")
        value = int(text)
    elif _DECIMAL.match(text) and math.isfinite(float(text)) and float(text).is_integer():
        value = int(float(text))
    elif _DECIMAL.match(text):
        raise _Bad(f"non-integer {name} {text!r}", f"non-integer {name}")
    else:
        raise _Bad(f"non-numeric {name} {text!r}", f"non-numeric {name}")
    if abs(value) > _BIG:
        raise _Bad(f"{name} {text!r} out of range", "number out of range")
    return value


def _read_authors(path):
    """The authors' format: (job ids, submit, runtime, nodes, line numbers) as int64 arrays in
    file order, and the :class:`~tjap.placement.batch.traces.TraceReport`. A clean file (every line
    a job that is kept as it is) is read at once by NumPy; any other line by line."""
    from tjap.placement.batch.traces import TraceReport

    clean = _authors_clean(path)
    if clean is None:
        return _read_authors_lines(path)
    count = clean[0].size
    report = TraceReport(path=str(path), format="authors", lines=count, jobs=count, skipped=0)
    return (*clean, np.arange(1, count + 1, dtype=np.int64), report)


def _authors_clean(path):
    """The columns (job ids, submit, runtime, nodes) of a file in the authors' format read at
    once, or None unless every line is a job that :func:`_read_authors_lines` keeps as it is
    (no comment, blank, malformed or skipped line): then both read the same."""
    try:
        data = Path(path).read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text = data.removeprefix(b"\xef\xbb\xbf").decode("ascii")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    if "#" in text or not lines or any(not line.strip() for line in lines):
        return None
    try:
        table = np.loadtxt(io.StringIO(text), dtype=np.int64, comments=None, ndmin=2)
    except ValueError:
        return None
    if table.shape != (len(lines), len(_AUTHORS_FIELDS)):
        return None
    ids, submit, runtime, nodes = table.T
    if (
        ((table > _BIG) | (table < -_BIG)).any()
        or (submit < 0).any()
        or (runtime < 0).any()
        or (nodes < 1).any()
        or np.unique(ids).size != ids.size
    ):
        return None
    return ids.copy(), submit.copy(), runtime.copy(), nodes.copy()


def _read_authors_lines(path):
    """:func:`_read_authors`, line by line (the reference: skips counted per reason)."""
    from tjap.placement.batch.traces import TraceReport, _numbered_lines

    rows: list[list[int]] = []
    line_numbers: list[int] = []
    seen: set[int] = set()
    by_kind: dict[str, dict] = {}
    examples: list[str] = []
    lines = skipped = malformed_head = 0
    with contextlib.closing(_numbered_lines(path)) as numbered:  # closed even on an error
        for number, text in numbered:
            if not text.split("#", 1)[0].strip():
                continue  # a comment
            lines += 1
            try:
                job, submit, runtime, nodes = values = _authors_values(text)
                if submit < 0:
                    raise _Bad("negative submit time", malformed=False)
                if runtime < 0:
                    raise _Bad("negative runtime", malformed=False)
                if nodes < 1:
                    raise _Bad("no node count", malformed=False)
                if job in seen:
                    raise _Bad("duplicate job id")
            except _Bad as bad:
                skipped += 1
                malformed_head += bad.malformed and lines == malformed_head + 1
                entry = by_kind.setdefault(bad.kind, {"count": 0, "first_line": number})
                entry["count"] += 1
                if len(examples) < _MAX_EXAMPLES:
                    shown = "".join(c if c.isprintable() else " " for c in text[:_EXAMPLE_WIDTH])
                    examples.append(f"line {number}: {bad.reason}: {shown}")
                continue
            seen.add(job)
            rows.append(values)
            line_numbers.append(number)
    if lines == 0:
        raise InvalidInputError(
            f"workload file {path} has no job lines (only comments or blank "
            "lines); add one job a line: job id, submit s, runtime s, nodes"
        )
    if malformed_head >= min(lines, _GIVE_UP_AFTER):
        raise InvalidInputError(
            f"workload file {path} is not in the authors' format (job id, submit s, runtime s, "
            f"nodes a line): no line parses, e.g. {examples[0]}; if it is a trace, pass "
            "--workload-format swf or sacct"
        )
    if not rows:
        raise InvalidInputError(
            f"workload file {path} has no usable jobs: all {lines} lines were "
            f"skipped (e.g. {examples[0]})"
        )
    ids, submit, runtime, nodes = np.asarray(rows, dtype=np.int64).T
    report = TraceReport(
        path=str(path),
        format="authors",
        lines=lines,
        jobs=len(rows),
        skipped=skipped,
        examples=tuple(examples),
        skipped_by_reason=by_kind,
    )
    return ids, submit, runtime, nodes, np.asarray(line_numbers, np.int64), report


def select_prefix(requested: list[int], idle_count: int, cap: int | None) -> int:
    """Length of the greedy prefix of a priority-ordered queue that the window takes."""
    taken = multi = 0
    for k, n in enumerate(requested):
        if n > idle_count - taken or (n > 1 and cap is not None and multi == cap):
            return k
        taken += n
        multi += n > 1
    return len(requested)


def priority_order(queue: list[int], nwp: dict[int, int], requested: np.ndarray) -> list[int]:
    """Queue order of the paper: more waiting periods first, then fewer nodes, then arrival."""
    return sorted(queue, key=lambda j: (-nwp[j], int(requested[j]), j))
