"""Loaders for workload traces: the Standard Workload Format (SWF) and sacct-style tables.

Each loader returns a :class:`~tjap.placement.batch.jobs.Jobs` table and a :class:`TraceReport` that
says how many lines were read, how many were skipped and why (the first few, with line numbers).
Bad lines are skipped and reported, never fatal; a file that is not a trace of the format at all (a
JSON file, binary data, the other format) raises :class:`~tjap.core.errors.InvalidInputError` with a
one-line message naming the file, the problem and the fix. Files are only ever opened for reading.
Gzip-compressed files (``.swf.gz``) are read transparently. Both formats are read column-wise
(a Numba scan of the bytes in :mod:`tjap.placement.batch._scan`, then NumPy; a 450,000-line trace
loads in about a second); the few lines the scan cannot read exactly go through Python with the
same rules (``tests/oracles/trace_reference.py`` is the line-by-line oracle).

SWF processors become simulator nodes. Missing time limits (SWF requested time -1, Slurm
``UNLIMITED``) are replaced by the runtime, a perfect estimate; runtimes above the limit are
clipped to it. SWF lines with more than 18 fields are read by their first 18 (with one warning).
SWF field 17 (preceding job) becomes a dependency (the job becomes eligible when that job ends)
unless ``ignore_dependencies``; a dependency on a job not in the trace (unknown or skipped), on the
job itself or on a job that comes later in submit order is dropped. The report counts every
skipped line per reason and every change with the first line it applies to (see
:class:`TraceReport`); the table's ``meta`` keeps the counts ``limit_from_runtime``,
``clipped_runtimes`` and ``dropped_dependencies`` as well.
"""

from __future__ import annotations

import calendar
import dataclasses
import gzip
import itertools
import math
import re
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.placement.batch._scan import gather, scan_fields, scan_swf
from tjap.placement.batch.jobs import Jobs

#: Trace formats :func:`load_trace` accepts.
FORMATS = ("swf", "sacct")
#: Where the traces shipped with the package live (see :func:`bundled_trace`), and their files.
BUNDLED_DIR = Path(__file__).resolve().parent / "data"
BUNDLED_TRACES = ("ls6-a100.tsv", "lublin_256.swf")

_FORMAT_NAMES = {"swf": "an SWF trace", "sacct": "a sacct-style trace"}
_SUFFIX_FORMATS = {".swf": "swf", ".tsv": "sacct", ".txt": "sacct", ".sacct": "sacct"}
_MAX_EXAMPLES = 5
_EXAMPLE_WIDTH = 80
#: A file whose first this-many data lines are all malformed is not a trace of the format.
_GIVE_UP_AFTER = 20
#: Larger numbers are rejected as malformed (keeps sums of times far inside int64).
_BIG = 2**52


@dataclass(frozen=True)
class TraceReport:
    """What a loader read and what it changed.

    Attributes
    ----------
    lines, jobs, skipped : data lines read (not comments or header), jobs kept, lines skipped.
    examples : the first few skipped lines, "line N: reason: text".
    header : SWF ``; Key: value`` comments (ints where they parse); for sacct, the column names.
    skipped_by_reason : reason -> {"count", "first_line"} of the skipped lines.
    transformations : change -> {"count", "first_line"} of the kept jobs changed on reading:
        ``runtime_cut_to_limit``, ``limit_from_runtime`` (limit unknown or unlimited),
        ``extra_fields_ignored`` (SWF lines with more than 18 fields), ``job_steps_left_out``
        (sacct steps such as ``123.batch``); only changes that happened are listed.
    dependencies : {"source", "read", "first_line", "ignored", "followed", "kept", "dropped"}:
        dependencies read from the trace (SWF field 17, preceding job), whether the replay
        follows them (``followed``: a kept dependency makes the job wait for its predecessor's
        end; False when there are none or ``ignored`` by request), and those dropped per reason
        (on a job not in the trace or skipped, on the job itself, on a later job).
    warnings : one line each, things a user should look at.
    """

    path: str
    format: str
    lines: int
    jobs: int
    skipped: int
    examples: tuple[str, ...] = ()
    header: dict = field(default_factory=dict, hash=False)
    skipped_by_reason: dict = field(default_factory=dict, hash=False)
    transformations: dict = field(default_factory=dict, hash=False)
    dependencies: dict = field(default_factory=dict, hash=False)
    warnings: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line for logs and the CLI."""
        text = (
            f"{Path(self.path).name} ({self.format}): {self.jobs} jobs from {self.lines} "
            f"lines, {self.skipped} skipped"
        )
        return text + (f" (first: {self.examples[0]})" if self.examples else "")

    def to_dict(self) -> dict:
        """Plain JSON-ready data (what ``tjap simulate --json`` prints as ``trace_report``)."""
        return {
            "path": self.path,
            "format": self.format,
            "lines": self.lines,
            "jobs": self.jobs,
            "skipped": self.skipped,
            "skipped_by_reason": {k: dict(v) for k, v in self.skipped_by_reason.items()},
            "skipped_examples": list(self.examples),
            "transformations": {k: dict(v) for k, v in self.transformations.items()},
            "dependencies": {
                k: (dict(v) if isinstance(v, dict) else v) for k, v in self.dependencies.items()
            },
            "warnings": list(self.warnings),
        }

    def text(self) -> str:
        """A short block of lines for people (what ``tjap simulate`` writes to stderr)."""

        def counted(items, label):
            return ", ".join(
                f"{v['count']} {label(k)} (first line {v['first_line']})" for k, v in items.items()
            )

        lines = [f"trace {self.summary().split(' (first:')[0]}"]
        if self.skipped_by_reason:
            lines.append("  skipped: " + counted(self.skipped_by_reason, lambda k: k))
        if self.transformations:
            lines.append(
                "  changed: " + counted(self.transformations, lambda k: _CHANGE_LABELS.get(k, k))
            )
        dep = self.dependencies
        if dep.get("read"):
            if dep["ignored"]:
                how = "ignored (--ignore-dependencies)"
            else:
                dropped = ", ".join(f"{n} on {why}" for why, n in dep["dropped"].items() if n)
                how = f"followed: {dep['kept']} kept" if dep["followed"] else "none followed"
                how += f", dropped {dropped}" if dropped else ""
            lines.append(
                f"  dependencies: {dep['read']} read from {dep['source']} (first line "
                f"{dep['first_line']}); {how}"
            )
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


_CHANGE_LABELS = {
    "runtime_cut_to_limit": "runtimes cut to their limit",
    "limit_from_runtime": "limits taken from runtimes",
    "extra_fields_ignored": "lines with extra fields cut to 18",
    "job_steps_left_out": "job steps left out",
}


class _Job(NamedTuple):
    """One parsed trace line (the fields of the readers' columns; the line-by-line oracle in the
    tests builds these); ``limit`` None means unknown (the runtime is used)."""

    raw_id: int | str
    submit: int
    nodes: int
    limit: int | None
    runtime: int
    user: int | str
    depends_on_id: int
    start: int
    end: int
    extra_fields: int = 0  # fields after the format's last, ignored (SWF)
    line: int = 0  # line number in the file (set by the reader)


class _Skip(Exception):
    """A line that is not used: ``malformed`` when it does not even parse."""

    def __init__(self, reason: str, malformed: bool = True, kind: str | None = None):
        super().__init__(reason)
        self.reason = reason  # the full text, with the offending value
        self.kind = kind or reason  # the reason the report counts by (no values)
        self.malformed = malformed


# -- public API -----------------------------------------------------------------------------------
def load_trace(
    path, format: str | None = None, *, ignore_dependencies: bool = False
) -> tuple[Jobs, TraceReport]:
    """Load a trace of the given format (one of :data:`FORMATS`), or guessed from the file name
    (``.swf``, ``.swf.gz``: swf; ``.tsv``, ``.txt``, ``.sacct``: sacct) and, failing that, from
    its first lines. ``ignore_dependencies`` drops the dependencies the trace states (SWF field
    17); the report still counts them."""
    if format is None:
        _check_file(path)
        format = _format_from_name(path) or _sniff(_head(path))
        if format is None:
            raise InvalidInputError(
                f"cannot tell the format of trace file {path} from its name or "
                f"content{_hint(path, None)}; pass --format " + " or --format ".join(FORMATS)
            )
    loaders = {"swf": load_swf, "sacct": load_sacct}
    key = str(format).strip().lower()
    if key not in loaders:
        raise InvalidInputError(f"unknown trace format {format!r}; allowed: {', '.join(FORMATS)}")
    return loaders[key](path, ignore_dependencies=ignore_dependencies)


def load_swf(path, *, ignore_dependencies: bool = False) -> tuple[Jobs, TraceReport]:
    """Load a Standard Workload Format trace (18 numeric fields a line, ';' header comments; more
    fields are ignored with a warning). Field 17 (preceding job) becomes a dependency unless
    ``ignore_dependencies``.

    Times are seconds since the trace start; ``epoch`` is the header's ``UnixStartTime``, if any.
    """
    _check_file(path)
    header: dict = {}
    parsed = _read_swf(path, header)
    epoch = header.get("UnixStartTime")
    return _build(
        path,
        "swf",
        parsed,
        header=header,
        meta={},
        epoch=epoch if isinstance(epoch, int) else None,
        ignore_dependencies=ignore_dependencies,
    )


def load_sacct(path, *, ignore_dependencies: bool = False) -> tuple[Jobs, TraceReport]:
    """Load a sacct-style table: an optional count line, a header of column names, an optional line
    of dashes, then one job a line (tab- or '|'-separated). Job steps (``123.batch``) are not jobs:
    they are left out and counted in ``meta["steps_skipped"]``. Times are Unix seconds (epoch 0).
    sacct tables state no dependencies; ``ignore_dependencies`` is accepted for uniformity."""
    _check_file(path)
    numbered = _numbered_lines(path)
    try:  # closed here, even when the preamble is refused
        layout, declared_count, lines = _sacct_preamble(path, numbered)
        first = next(lines, None)
    finally:
        numbered.close()
    if first is None:
        raise InvalidInputError(
            f"trace file {path} has no job lines; is it {_FORMAT_NAMES['sacct']}?"
        )
    parsed = _read_sacct(path, layout, first[0])
    meta = {"steps_skipped": parsed.ignored}
    if declared_count is not None:
        meta["declared_count"] = declared_count
    return _build(
        path,
        "sacct",
        parsed,
        header={"columns": layout.columns},
        meta=meta,
        epoch=0,
        ignore_dependencies=ignore_dependencies,
    )


def bundled_trace(name: str) -> Path:
    """The path of a trace shipped with the package (in ``placement/batch/data/``, with its
    attribution and licence in the README beside it): ``"ls6-a100"`` (Lonestar6 A100 partition,
    sacct TSV, CC BY 4.0) or ``"lublin_256"`` (Lublin-Feitelson model, SWF). The file name with its
    suffix works too.

    >>> load_trace(bundled_trace("ls6-a100"))[1].jobs
    24777
    """
    key = Path(str(name)).name
    for file in BUNDLED_TRACES:
        if key in (file, Path(file).stem):
            return BUNDLED_DIR / file
    raise InvalidInputError(
        f"no bundled trace named {name!r}; bundled: "
        f"{', '.join(Path(f).stem for f in BUNDLED_TRACES)}"
    )


def default_nodes(jobs: Jobs, report: TraceReport) -> int | None:
    """The machine size the trace states: header ``MaxNodes``, else ``MaxProcs``; None if neither
    is given. A value smaller than the largest job gives way to the other (SWF jobs count
    processors, so ``MaxNodes`` is too small where nodes have several processors); if neither
    fits, the larger one is returned and the oversized jobs are the caller's to report."""
    stated = [
        v
        for v in (report.header.get("MaxNodes"), report.header.get("MaxProcs"))
        if isinstance(v, int) and v > 0
    ]
    fitting = [v for v in stated if v >= jobs.max_nodes]
    return fitting[0] if fitting else max(stated, default=None)


# -- reading files --------------------------------------------------------------------------------
def _check_file(path) -> None:
    """Raise a clear error for a missing file, a directory or an empty file."""
    p = Path(path)
    if not p.exists():
        bundled = [BUNDLED_DIR / f for f in BUNDLED_TRACES if p.name in (f, Path(f).stem)]
        hint = f"; the bundled copy is {bundled[0]}" if bundled else ""
        raise InvalidInputError(f"trace file {path} not found{hint}")
    if p.is_dir():
        raise InvalidInputError(f"trace file {path} is a directory; pass the trace file itself")
    if p.stat().st_size == 0:
        raise InvalidInputError(f"trace file {path} is empty; pass a trace with at least one job")


def _open_text(path):
    """The file as text (gzip-compressed or not, told by its first bytes), read-only."""
    with open(path, "rb") as f:
        compressed = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if compressed else open
    return opener(path, "rt", encoding="utf-8-sig", errors="replace")


def _numbered_lines(path) -> Iterator[tuple[int, str]]:
    """(line number, text without the line end) of each non-blank line."""
    try:
        with _open_text(path) as f:
            for number, text in enumerate(f, 1):
                if text.strip():
                    yield number, text.rstrip("\r\n")
    except (OSError, EOFError, zlib.error) as e:
        raise InvalidInputError(f"cannot read trace file {path}: {e}") from None


def _head(path, count: int = 40) -> list[str]:
    """The first ``count`` non-blank lines (the file is closed here, not when the unfinished
    line generator happens to be collected: an exception's traceback can keep it alive)."""
    lines = _numbered_lines(path)
    try:
        return [text for _, text in itertools.islice(lines, count)]
    finally:
        lines.close()


# -- format guessing and hints --------------------------------------------------------------------
def _format_from_name(path) -> str | None:
    name = Path(path).name.lower()
    return _SUFFIX_FORMATS.get(Path(name.removesuffix(".gz")).suffix)


def _tokens(text: str) -> list[str]:
    """Lower-case words of a line split at whitespace and '|'."""
    return [t for t in re.split(r"[\s|]+", text.strip().lower()) if t]


def _is_sacct_header(text: str) -> bool:
    tokens = _tokens(text)
    return any(name.lower() in tokens for name in _SACCT_COLUMNS["job_id"])


def _is_swf_record(text: str) -> bool:
    fields = text.split()
    try:
        return len(fields) >= len(_SWF_FIELDS) and all(math.isfinite(float(x)) for x in fields)
    except ValueError:
        return False


def _sniff(lines: list[str]) -> str | None:
    """'sacct' or 'swf' when the first lines look like that format, else None."""
    if any(_is_sacct_header(text) for text in lines[:5]):
        return "sacct"
    records = [text for text in lines if not text.lstrip().startswith(";")]
    if any(_is_swf_record(text) for text in records[:5]) or (lines and not records):
        return "swf"
    return None


def _hint(path, loading: str | None) -> str:
    """'; it looks like ...' about what the file seems to be instead, or ''."""
    lines = _head(path)
    guess = _sniff(lines)
    if guess is not None and guess != loading:
        return f"; it looks like {_FORMAT_NAMES[guess]}: use --format {guess}"
    sample = "\n".join(lines)[:4000]
    if sample.lstrip()[:1] in ("{", "["):
        return "; it looks like JSON"
    if "\ufffd" in sample or any(not (c.isprintable() or c in "\t\n") for c in sample):
        return "; it looks like binary data"
    return ""


# -- parsing lines --------------------------------------------------------------------------------
class _Skips:
    """Skipped lines: how many, how many of them malformed, and the first few as text."""

    def __init__(self):
        self.count = 0
        self.malformed = 0
        self.examples: list[str] = []
        self.by_kind: dict[str, dict] = {}

    def add(self, number: int, skip: _Skip, text: str) -> None:
        self.count += 1
        self.malformed += skip.malformed
        entry = self.by_kind.setdefault(skip.kind, {"count": 0, "first_line": number})
        entry["count"] += 1
        if len(self.examples) < _MAX_EXAMPLES:
            shown = "".join(c if c.isprintable() else " " for c in text[:_EXAMPLE_WIDTH])
            self.examples.append(f"line {number}: {skip.reason}: {shown}")


@dataclass
class _Parsed:
    jobs: list[_Job] | dict  # the jobs, or their columns (the fields of _Job, as arrays)
    skips: _Skips
    lines: int
    ignored: int
    first_ignored: int = 0  # line number of the first ignored line (0: none)

    def columns(self) -> dict:
        if isinstance(self.jobs, dict):
            return self.jobs
        return dict(zip(_Job._fields, zip(*self.jobs)))


def _no_usable_jobs(path, count: int, skips: _Skips) -> InvalidInputError:
    example = f" (e.g. {skips.examples[0]})" if skips.examples else ""
    return InvalidInputError(
        f"trace file {path} has no usable jobs: all {count} lines were "
        f"skipped or job steps{example}"
    )


def _not_format(path, fmt: str, skips: _Skips) -> InvalidInputError:
    return InvalidInputError(
        f"trace file {path} is not {_FORMAT_NAMES[fmt]} (no line parses, e.g. "
        f"{skips.examples[0]}){_hint(path, fmt)}"
    )


def _build(
    path,
    fmt: str,
    parsed: _Parsed,
    *,
    header: dict,
    meta: dict,
    epoch: int | None,
    ignore_dependencies: bool = False,
) -> tuple[Jobs, TraceReport]:
    """The Jobs table and the report of parsed lines."""
    c = parsed.columns()
    raw_ids, submit, nodes, user, start, end = (
        c[k] for k in ("raw_id", "submit", "nodes", "user", "start", "end")
    )
    line = np.asarray(c["line"], dtype=np.int64)
    extra = np.asarray(c["extra_fields"], dtype=np.int64)
    runtime = np.asarray(c["runtime"], dtype=np.int64)
    limits = c["limit"]
    if isinstance(limits, np.ndarray):  # -1: unknown
        unknown_limit = limits < 0
        limit = np.maximum(np.where(unknown_limit, runtime, limits), 1)
    else:  # None: unknown
        unknown_limit = np.array([limit is None for limit in limits])
        limit = np.maximum(
            [r if u else lim for lim, r, u in zip(limits, runtime, unknown_limit)], 1
        )
    depends_on_id = c["depends_on_id"]
    job_id, any_text_ids = _integer_ids(raw_ids)
    read_dep = np.asarray(depends_on_id, dtype=np.int64)
    depends_on_id = np.full_like(read_dep, -1) if ignore_dependencies else read_dep
    jobs = Jobs.build(
        job_id=job_id,
        submit_s=submit,
        nodes=nodes,
        limit_s=limit,
        runtime_s=runtime,
        user=np.asarray(user),
        depends_on_id=np.where(depends_on_id == job_id, -1, depends_on_id),
        recorded_start_s=start,
        recorded_end_s=end,
        epoch=epoch,
        source=Path(path).name,
    )
    jobs, kept = _backward_dependencies(jobs)
    stated = depends_on_id != -1
    on_self = stated & (depends_on_id == job_id)
    on_unknown = stated & ~on_self & ~np.isin(depends_on_id, job_id)
    dropped = {
        "a job not in the trace": int(on_unknown.sum()),
        "the job itself": int(on_self.sum()),
        "a later job": int(stated.sum()) - kept - int(on_unknown.sum()) - int(on_self.sum()),
    }
    jobs.meta.update(
        meta,
        limit_from_runtime=int(unknown_limit.sum()),
        clipped_runtimes=int((runtime > limit).sum()),
        dropped_dependencies=int(stated.sum()) - kept,
    )
    if any_text_ids:
        raw_of = dict(zip(job_id.tolist(), raw_ids))
        jobs.meta["raw_ids"] = [str(raw_of[j]) for j in jobs.job_id.tolist()]
    changes = {
        "runtime_cut_to_limit": runtime > limit,
        "limit_from_runtime": unknown_limit,
        "extra_fields_ignored": np.asarray(extra) > 0,
    }
    transformations = {
        name: {"count": int(mask.sum()), "first_line": int(line[mask].min())}
        for name, mask in changes.items()
        if mask.any()
    }
    if parsed.ignored:
        transformations["job_steps_left_out"] = {
            "count": parsed.ignored,
            "first_line": parsed.first_ignored,
        }
    warnings = []
    if "extra_fields_ignored" in transformations:
        t = transformations["extra_fields_ignored"]
        most = len(_SWF_FIELDS) + int(np.max(extra))
        warnings.append(
            f"{t['count']} line(s) have more than {len(_SWF_FIELDS)} fields (up to "
            f"{most}, first line {t['first_line']}); only the first "
            f"{len(_SWF_FIELDS)} were read"
        )
    stated_any = bool((read_dep != -1).any())
    source = "SWF field 17 (preceding job)" if fmt == "swf" else "none (sacct states none)"
    dependencies = {
        "source": source,
        "read": int((read_dep != -1).sum()),
        "first_line": int(line[read_dep != -1].min()) if stated_any else None,
        "ignored": bool(ignore_dependencies),
        "followed": kept > 0,
        "kept": kept,
        "dropped": dropped,
    }
    if kept:
        waited = np.bincount(jobs.depends_on[jobs.depends_on >= 0], minlength=len(jobs))
        row = int(np.argmax(waited))
        if waited[row] >= max(10, len(jobs) // 100):
            warnings.append(
                f"{int(waited[row])} jobs wait for job {int(jobs.job_id[row])} "
                "(SWF field 17, preceding job); if that field means something else "
                "in this trace, pass --ignore-dependencies"
            )
    report = TraceReport(
        path=str(path),
        format=fmt,
        lines=parsed.lines,
        jobs=len(jobs),
        skipped=parsed.skips.count,
        examples=tuple(parsed.skips.examples),
        header=header,
        skipped_by_reason=parsed.skips.by_kind,
        transformations=transformations,
        dependencies=dependencies,
        warnings=tuple(warnings),
    )
    return jobs, report


def _integer_ids(raw_ids) -> tuple[np.ndarray, bool]:
    """Integer job ids: the trace's own, and fresh ones (after the largest kept) for text ids such
    as array tasks ``123_4``; and whether there were any text ids."""
    if isinstance(raw_ids, np.ndarray):
        return raw_ids.astype(np.int64), False
    numbers = [r for r in raw_ids if isinstance(r, int)]
    if len(numbers) == len(raw_ids):
        return np.asarray(numbers, dtype=np.int64), False
    fresh = itertools.count(max(numbers, default=0) + 1)
    return np.asarray([r if isinstance(r, int) else next(fresh) for r in raw_ids], np.int64), True


def _backward_dependencies(jobs: Jobs) -> tuple[Jobs, int]:
    """Drop dependencies on a job at or after the dependent one in submit order (they could only
    deadlock a replay); return the table and the number of dependencies kept."""
    dep = jobs.depends_on
    forward = dep >= np.arange(len(jobs))
    if forward.any():
        jobs = dataclasses.replace(jobs, depends_on=np.where(forward, -1, dep))
    return jobs, int((jobs.depends_on >= 0).sum())


# -- SWF ------------------------------------------------------------------------------------------
_SWF_FIELDS = (
    "job id",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable",
    "queue",
    "partition",
    "preceding job",
    "think time",
)
_SWF_HEADER = re.compile(r";\s*(\w+)\s*:\s*(.*?)\s*$")


#: Why the SWF reader skips a line (codes 1, 2, ...), and whether that makes the line malformed.
_SWF_REASONS = (
    ("too few fields", True),
    ("number out of range", True),
    ("no processor count", False),
    ("unknown runtime", False),
    ("unknown submit time", False),
    ("duplicate job id", True),
)


def _file_bytes(path) -> np.ndarray:
    """The file's bytes (gunzipped if compressed, without a UTF-8 byte order mark)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as e:
        raise InvalidInputError(f"cannot read trace file {path}: {e}") from None
    return np.frombuffer(data.removeprefix(b"\xef\xbb\xbf"), dtype=np.uint8)


def _read_swf(path, header: dict) -> _Parsed:
    """Read an SWF file: the Numba scan reads the numbers; lines it cannot read exactly go through
    :func:`_swf_numbers`. The rules of tests/oracles/trace_reference.py, on whole columns."""
    buf = _file_bytes(path)
    values, fields, number, comment, slow, start, end = scan_swf(buf)

    def text(r):
        return bytes(buf[start[r] : end[r]]).decode("utf-8", "replace")

    for r in np.flatnonzero(comment):
        match = _SWF_HEADER.match(text(r).lstrip())
        if match and match[1] not in header:
            header[match[1]] = _int_or_text(match[2])
    data = ~comment
    values, fields, number, slow, start, end = (
        a[data] for a in (values, fields, number, slow, start, end)
    )
    if number.size == 0:
        raise InvalidInputError(
            f"trace file {path} has no job lines; is it {_FORMAT_NAMES['swf']}?"
        )
    special: dict[int, _Skip] = {}
    for r in np.flatnonzero(slow).tolist():  # decimals, words, long numbers: Python's reading
        line_text = text(r)
        fields[r] = len(line_text.split())
        try:
            values[r] = _swf_numbers(line_text)
        except _Skip as skip:
            special[r] = skip
    code = np.zeros(number.size, np.int64)
    code[list(special)] = -1
    (job_id, submit, wait, run, allocated, requested, requested_time, user, preceding) = (
        values[:, i] for i in (0, 1, 2, 3, 4, 7, 8, 11, 16)
    )
    nodes = np.where(requested > 0, requested, allocated)
    tests = (
        ~slow & (fields < len(_SWF_FIELDS)),
        (np.abs(values) > _BIG).any(axis=1),
        nodes <= 0,
        run < 0,
        submit < 0,
    )
    for reason, failed in enumerate(tests, 1):
        code[(code == 0) & failed] = reason
    ok = np.flatnonzero(code == 0)
    _, first = np.unique(job_id[ok], return_index=True)
    duplicate = np.ones(ok.size, bool)
    duplicate[first] = False
    code[ok[duplicate]] = len(_SWF_REASONS)
    skips = _Skips()
    for r in np.flatnonzero(code).tolist():
        if code[r] < 0:
            skip = special[r]
        else:
            kind, malformed = _SWF_REASONS[code[r] - 1]
            reason = (
                f"wrong number of fields (expected {len(_SWF_FIELDS)}, got {fields[r]})"
                if code[r] == 1
                else kind
            )
            skip = _Skip(reason, malformed, kind)
        skips.add(int(number[r]), skip, text(r) if len(skips.examples) < _MAX_EXAMPLES else "")
    malformed = (code > 0) & np.isin(code, [i for i, (_, m) in enumerate(_SWF_REASONS, 1) if m])
    malformed[[r for r, skip in special.items() if skip.malformed]] = True
    count = int(number.size)
    if (count >= _GIVE_UP_AFTER and malformed[:_GIVE_UP_AFTER].all()) or malformed.all():
        raise _not_format(path, "swf", skips)
    keep = code == 0
    if not keep.any():
        raise _no_usable_jobs(path, count, skips)
    begin = np.where(wait >= 0, submit + wait, -1)
    columns = {
        "raw_id": job_id,
        "submit": submit,
        "nodes": nodes,
        "limit": np.where(requested_time > 0, requested_time, -1),
        "runtime": run,
        "user": user,
        "depends_on_id": np.where(preceding > 0, preceding, -1),
        "start": begin,
        "end": np.where(begin >= 0, begin + run, -1),
        "extra_fields": np.maximum(fields - len(_SWF_FIELDS), 0),
        "line": number,
    }
    return _Parsed({k: v[keep] for k, v in columns.items()}, skips, count, 0)


def _int_or_text(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def _swf_numbers(text: str) -> list[int]:
    """The first 18 fields of an SWF line as ints (decimals rounded); more are not read."""
    fields = text.split()
    if len(fields) < len(_SWF_FIELDS):
        raise _Skip(
            f"wrong number of fields (expected {len(_SWF_FIELDS)}, got {len(fields)})",
            kind="too few fields",
        )
    fields = fields[: len(_SWF_FIELDS)]
    try:
        values = [int(x) for x in fields]
    except ValueError:
        values = [_swf_number(x, name) for x, name in zip(fields, _SWF_FIELDS)]
    if max(values) > _BIG or min(values) < -_BIG:
        raise _Skip("number out of range")
    return values


def _swf_number(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise _Skip(f"non-numeric {name} {text!r}", kind=f"non-numeric {name}")
    return round(value)


# -- sacct ----------------------------------------------------------------------------------------
#: Columns a sacct-style table needs, each with the header names accepted for it (in preference).
_SACCT_COLUMNS = {
    "job_id": ("JobID", "JobIDRaw"),
    "user": ("UID", "User"),
    "submit": ("Submit",),
    "start": ("Start",),
    "end": ("End",),
    "limit": ("TimelimitR", "TimelimitRaw", "Timelimit"),
    "nodes": ("NNodes", "AllocNodes", "ReqNodes"),
}
_UNKNOWN_TIMES = frozenset({"", "unknown", "none"})
_UNLIMITED = frozenset({"unlimited", "infinite", "partition_limit"})


def _sacct_preamble(
    path, lines: Iterator[tuple[int, str]]
) -> tuple["_SacctLayout", int | None, Iterator[tuple[int, str]]]:
    """Read the optional count line, the header and the optional line of dashes; return the
    layout, the stated count (or None) and the remaining (data) lines."""
    first = next(lines, None)
    declared = None
    count = first[1].strip() if first is not None else ""
    if count.isdecimal() and len(count) <= 18:
        declared = int(count)  # stripped: str.strip drops \x1c-\x1f, int() does not
        first = next(lines, None)
    if first is None or not _is_sacct_header(first[1]):
        raise InvalidInputError(
            f"trace file {path} is not a sacct-style trace (no header line "
            f"with a JobID column){_hint(path, 'sacct')}"
        )
    layout = _SacctLayout.from_header(path, first[1])
    following = next(lines, None)
    if following is not None and set(following[1]) - set("-|\t "):
        lines = itertools.chain([following], lines)  # not a line of dashes: the first row
    return layout, declared, lines


@dataclass(frozen=True)
class _SacctLayout:
    """Where the needed columns are in the rows of one sacct-style table."""

    columns: tuple[str, ...]
    index: dict[str, int]
    names: dict[str, str]
    delimiter: str

    @classmethod
    def from_header(cls, path, header: str) -> "_SacctLayout":
        """The layout of a header line (names separated by whitespace, or by '|')."""
        delimiter = "|" if "|" in header else "\t"
        names = header.strip().strip("|").split("|") if delimiter == "|" else header.split()
        columns = tuple(name.strip() for name in names)
        position = {name.lower(): i for i, name in reversed(list(enumerate(columns)))}
        index, chosen, missing = {}, {}, []
        for key, accepted in _SACCT_COLUMNS.items():
            found = [name for name in accepted if name.lower() in position]
            if found:
                index[key], chosen[key] = position[found[0].lower()], found[0]
            else:
                missing.append(" or ".join(accepted))
        if missing:
            raise InvalidInputError(
                f"trace file {path}: the sacct header lacks column(s) "
                f"{', '.join(missing)}; include them in the export"
            )
        return cls(columns, index, chosen, delimiter)

    def fields(self, text: str) -> list[str]:
        """The row's fields (split at the header's delimiter, or at whitespace if the row has
        none; a trailing delimiter is allowed)."""
        fields = text.split(self.delimiter) if self.delimiter in text else text.split()
        if len(fields) == len(self.columns) + 1 and not fields[-1].strip():
            fields.pop()
        if len(fields) != len(self.columns):
            raise _Skip(
                f"wrong number of fields (expected {len(self.columns)}, got {len(fields)})",
                kind="wrong number of fields",
            )
        return fields

    def time(self, key: str, text: str) -> int | None:
        """Unix seconds of an ISO time (UTC unless it states an offset); None if unknown."""
        if text.lower() in _UNKNOWN_TIMES:
            return None
        try:
            return calendar.timegm(datetime.fromisoformat(text).utctimetuple())
        except (ValueError, OverflowError):
            raise _Skip(
                f"bad {self.names[key]} time {text!r}", kind=f"bad {self.names[key]} time"
            ) from None

    def limit(self, text: str) -> int | None:
        """Seconds of the time limit; None if unlimited."""
        try:
            seconds = _slurm_seconds(text)
        except ValueError:
            raise _Skip(
                f"bad {self.names['limit']} {text!r}", kind=f"bad {self.names['limit']}"
            ) from None
        if seconds is not None and seconds > _BIG:
            raise _Skip(
                f"{self.names['limit']} {text!r} out of range",
                kind=f"{self.names['limit']} out of range",
            )
        return seconds

    def count(self, key: str, text: str) -> int:
        """A non-negative integer field."""
        if not (text.isdecimal() and text.isascii()):
            raise _Skip(f"bad {self.names[key]} {text!r}", kind=f"bad {self.names[key]}")
        if len(text.lstrip("0")) > 16 or int(text) > _BIG:  # int() reads 4300 digits at most
            raise _Skip(
                f"{self.names[key]} {text[:40]!r} out of range",
                kind=f"{self.names[key]} out of range",
            )
        return int(text)


def _each_distinct(strings: np.ndarray, parse: Callable[[str], int | None]):
    """``parse`` applied once to each distinct string: (values, -1 where None or failed; None
    mask; the _Skip raised for each string, or None)."""
    distinct, inverse = np.unique(strings, return_inverse=True)
    values = np.full(distinct.size, -1, np.int64)
    unknown = np.zeros(distinct.size, bool)
    errors = np.full(distinct.size, None, dtype=object)
    for i, text in enumerate(distinct.tolist()):
        try:
            value = parse(text)
        except _Skip as skip:
            errors[i] = skip
            continue
        if value is None:
            unknown[i] = True
        else:
            values[i] = value
    return values[inverse], unknown[inverse], errors[inverse]


def _with(column: np.ndarray, row: int, text: str) -> np.ndarray:
    """``column`` with ``text`` at ``row`` (widened if the text does not fit)."""
    if len(text) > column.dtype.itemsize // 4:
        column = column.astype(f"U{len(text)}")
    column[row] = text
    return column


def _iso_seconds(layout: "_SacctLayout", key: str, strings: np.ndarray):
    """:meth:`_SacctLayout.time` of a column: plain ``YYYY-MM-DDTHH:MM:SS`` times by NumPy, the
    others (unknown, with an offset, malformed) one distinct string at a time."""
    plain = np.strings.str_len(strings) == 19
    for at, char in ((4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")):
        plain &= np.strings.slice(strings, at, at + 1) == char
    values = np.full(strings.size, -1, np.int64)
    unknown = np.zeros(strings.size, bool)
    errors = np.full(strings.size, None, dtype=object)
    try:
        values[plain] = strings[plain].astype("datetime64[s]").astype(np.int64)
    except ValueError:  # e.g. a 13th month: Python words the reason
        plain[:] = False
    rest = ~plain
    if rest.any():
        values[rest], unknown[rest], errors[rest] = _each_distinct(
            strings[rest], lambda text: layout.time(key, text)
        )
    return values, unknown, errors


#: Longest field the byte scan hands to NumPy; longer ones are split in Python.
_WIDEST_FIELD = 64


def _read_sacct(path, layout: "_SacctLayout", first_line: int) -> _Parsed:
    """The rows of a sacct-style table from line ``first_line`` on, column by column: a Numba scan
    splits the lines, NumPy reads the fields (tests/oracles/trace_reference.py has the same rules, one row
    at a time, as the oracle)."""
    buf = _file_bytes(path)
    number, line_start, line_end, fields, slow, fs, fe = scan_fields(
        buf, first_line, ord(layout.delimiter), len(layout.columns)
    )
    need = list(layout.index.values())
    slow |= ((fe - fs)[:, need] > _WIDEST_FIELD).any(axis=1) & (fields == len(layout.columns))

    def text(r):
        return bytes(buf[line_start[r] : line_end[r]]).decode("utf-8", "replace")

    fe = np.where(slow[:, None], fs, fe)  # slow lines are split in Python below
    value = {}
    for key, i in layout.index.items():
        width = max(int((fe[:, i] - fs[:, i]).max(initial=0)), 1)
        matrix = gather(
            buf, fs[:, i], np.minimum(fe[:, i], fs[:, i] + _WIDEST_FIELD), min(width, _WIDEST_FIELD)
        )
        value[key] = matrix.view(f"S{matrix.shape[1]}").ravel().astype(str)
    skip_of: dict[int, _Skip] = {}
    blank = np.zeros(number.size, bool)
    for r in np.flatnonzero(slow).tolist():  # bytes outside ASCII: Python splits the line
        line_text = text(r)
        if not line_text.strip():
            blank[r] = True
            continue
        try:
            row = layout.fields(line_text)
        except _Skip as skip:
            skip_of[r] = skip
            continue
        fields[r] = len(layout.columns)
        for key, i in layout.index.items():
            value[key] = _with(value[key], r, row[i].strip())
    wrong = ~slow & (fields != len(layout.columns))
    for r in np.flatnonzero(wrong).tolist():
        skip_of[r] = _Skip(
            f"wrong number of fields (expected {len(layout.columns)}, got {fields[r]})",
            kind="wrong number of fields",
        )
    if blank.any():
        keep_rows = ~blank
        remap = np.cumsum(keep_rows) - 1
        skip_of = {int(remap[r]): skip for r, skip in skip_of.items()}
        number, line_start, line_end, slow = (
            a[keep_rows] for a in (number, line_start, line_end, slow)
        )
        value = {key: col[keep_rows] for key, col in value.items()}
    count = number.size
    if count == 0:
        raise InvalidInputError(
            f"trace file {path} has no job lines; is it {_FORMAT_NAMES['sacct']}?"
        )
    good = np.ones(count, bool)
    good[list(skip_of)] = False
    raw = value["job_id"]
    step = good & (np.strings.find(raw, ".") >= 0)
    # each check of a row in order: the first that fails is the reason
    failed: dict[int, _Skip] = {}

    def fail(mask, make):
        for r in np.flatnonzero(mask & ~done).tolist():
            failed[r] = make(r)
        done[mask] = True

    done = ~good | step
    fail(raw == "", lambda r: _Skip("empty JobID"))
    times = {}
    for key in ("submit", "start", "end"):
        times[key] = _iso_seconds(layout, key, value[key])
        fail(np.array([e is not None for e in times[key][2]]), lambda r, e=times[key][2]: e[r])
    limit, unlimited, errors = _each_distinct(value["limit"], layout.limit)
    fail(np.array([e is not None for e in errors]), lambda r: errors[r])
    nodes, _, node_errors = _each_distinct(value["nodes"], lambda t: layout.count("nodes", t))
    fail(np.array([e is not None for e in node_errors]), lambda r: node_errors[r])
    (submit, no_submit, _), (start, no_start, _), (end, no_end, _) = (
        times[k] for k in ("submit", "start", "end")
    )
    fail(no_submit, lambda r: _Skip("unknown submit time", malformed=False))
    fail(nodes < 1, lambda r: _Skip("no node count", malformed=False))
    fail(no_start | no_end, lambda r: _Skip("unknown runtime", malformed=False))
    fail(end < start, lambda r: _Skip("end before start", malformed=False))
    decimal = np.strings.isdecimal(raw)
    plain = decimal & ~slow & (np.strings.str_len(raw) <= 15)  # ASCII digits, below 2^52
    ids = np.zeros(count, np.int64)
    id_errors = np.full(count, None, dtype=object)
    ids[plain] = raw[plain].astype(np.int64)
    other = decimal & ~plain
    if other.any():
        ids[other], _, id_errors[other] = _each_distinct(
            raw[other], lambda t: layout.count("job_id", t)
        )
    fail(np.array([e is not None for e in id_errors]), lambda r: id_errors[r])
    candidates = np.flatnonzero(~done)
    key = np.where(
        decimal[candidates],
        np.strings.add("i", ids[candidates].astype(str)),
        np.strings.add("t", raw[candidates]),
    )  # 7 and "007" are one id, "7_1" another
    _, first = np.unique(key, return_index=True)
    duplicate = np.ones(candidates.size, bool)
    duplicate[first] = False
    fail(np.isin(np.arange(count), candidates[duplicate]), lambda r: _Skip("duplicate job id"))
    skip_of.update(failed)
    skips = _Skips()
    malformed = np.zeros(count, bool)
    for r in sorted(skip_of):
        skips.add(
            int(number[r]), skip_of[r], text(r) if len(skips.examples) < _MAX_EXAMPLES else ""
        )
        malformed[r] = skip_of[r].malformed
    if (count >= _GIVE_UP_AFTER and malformed[:_GIVE_UP_AFTER].all()) or malformed.all():
        raise _not_format(path, "sacct", skips)
    keep = ~done
    if not keep.any():
        raise _no_usable_jobs(path, count, skips)
    kept_ids = ids[keep]
    raw_ids = (
        kept_ids
        if decimal[keep].all()
        else [int(i) if d else str(t) for i, d, t in zip(kept_ids, decimal[keep], raw[keep])]
    )
    columns = {
        "raw_id": raw_ids,
        "submit": submit[keep],
        "nodes": nodes[keep],
        "limit": np.where(unlimited, -1, limit)[keep],
        "runtime": (end - start)[keep],
        "user": value["user"][keep],
        "depends_on_id": np.full(int(keep.sum()), -1),
        "start": start[keep],
        "end": end[keep],
        "extra_fields": np.zeros(int(keep.sum())),
        "line": number[keep],
    }
    ignored = np.flatnonzero(step)
    return _Parsed(
        columns, skips, count, int(ignored.size), int(number[ignored[0]]) if ignored.size else 0
    )


def _slurm_seconds(text: str) -> int | None:
    """Seconds of a Slurm time limit, None for UNLIMITED. Forms: minutes (``2880``), ``MM:SS``,
    ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``. Raises ValueError for anything else."""
    text = text.strip().lower()
    if text in _UNLIMITED:
        return None
    days, dash, clock = text.rpartition("-")
    parts = clock.split(":")
    digits = [*parts, days] if dash else parts
    if len(parts) > 3 or not all(p.isdecimal() and p.isascii() for p in digits):
        raise ValueError(text)
    numbers = [int(p) for p in parts]
    if dash:  # days-hours[:minutes[:seconds]]
        hours, minutes, seconds = numbers + [0] * (3 - len(numbers))
        return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if len(numbers) == 1:  # minutes
        return numbers[0] * 60
    if len(numbers) == 2:  # minutes:seconds
        return numbers[0] * 60 + numbers[1]
    return (numbers[0] * 60 + numbers[1]) * 60 + numbers[2]
