"""Loaders for workload traces: the Standard Workload Format (SWF) and sacct-style tables.

Each loader returns a :class:`~placement.batch.jobs.Jobs` table and a :class:`TraceReport` that
says how many lines were read, how many were skipped and why (the first few, with line numbers).
Bad lines are skipped and reported, never fatal; a file that is not a trace of the format at all (a
JSON file, binary data, the other format) raises :class:`~tjap.errors.InvalidInputError` with a
one-line message naming the file, the problem and the fix. Files are only ever opened for reading.
Gzip-compressed files (``.swf.gz``) are read transparently.

SWF processors become simulator nodes. Missing time limits (SWF requested time -1, Slurm
``UNLIMITED``) are replaced by the runtime, a perfect estimate; runtimes above the limit are
clipped to it. The table's ``meta`` counts both (``limit_from_runtime``, ``clipped_runtimes``) and
the dependencies that could not be kept (``dropped_dependencies``: on unknown or skipped jobs, on
the job itself or on a job that comes later in submit order).
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

from placement.batch.jobs import Jobs
from tjap.errors import InvalidInputError

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
_BIG = 2 ** 52


@dataclass(frozen=True)
class TraceReport:
    """What a loader read: ``lines`` data lines (not comments or header), ``jobs`` kept, ``skipped``
    lines, the first few of them as ``examples`` ("line N: reason: text"), and ``header`` (SWF
    ``; Key: value`` comments, ints where they parse; for sacct traces, the column names)."""

    path: str
    format: str
    lines: int
    jobs: int
    skipped: int
    examples: tuple[str, ...] = ()
    header: dict = field(default_factory=dict, hash=False)

    def summary(self) -> str:
        """One line for logs and the CLI."""
        text = (f"{Path(self.path).name} ({self.format}): {self.jobs} jobs from {self.lines} "
                f"lines, {self.skipped} skipped")
        return text + (f" (first: {self.examples[0]})" if self.examples else "")


class _Job(NamedTuple):
    """One parsed trace line; ``limit`` None means unknown (the runtime is used)."""

    raw_id: int | str
    submit: int
    nodes: int
    limit: int | None
    runtime: int
    user: int | str
    depends_on_id: int
    start: int
    end: int


class _Skip(Exception):
    """A line that is not used: ``malformed`` when it does not even parse."""

    def __init__(self, reason: str, malformed: bool = True):
        super().__init__(reason)
        self.reason = reason
        self.malformed = malformed


# -- public API -----------------------------------------------------------------------------------
def load_trace(path, format: str | None = None) -> tuple[Jobs, TraceReport]:
    """Load a trace of the given format (one of :data:`FORMATS`), or guessed from the file name
    (``.swf``, ``.swf.gz``: swf; ``.tsv``, ``.txt``, ``.sacct``: sacct) and, failing that, from
    its first lines."""
    if format is None:
        _check_file(path)
        format = _format_from_name(path) or _sniff(_head(path))
        if format is None:
            raise InvalidInputError(f"cannot tell the format of trace file {path} from its name or "
                                    f"content{_hint(path, None)}; pass --format "
                                    + " or --format ".join(FORMATS))
    loaders = {"swf": load_swf, "sacct": load_sacct}
    key = str(format).strip().lower()
    if key not in loaders:
        raise InvalidInputError(f"unknown trace format {format!r}; allowed: {', '.join(FORMATS)}")
    return loaders[key](path)


def load_swf(path) -> tuple[Jobs, TraceReport]:
    """Load a Standard Workload Format trace (18 numeric fields a line, ';' header comments).

    Times are seconds since the trace start; ``epoch`` is the header's ``UnixStartTime``, if any.
    """
    _check_file(path)
    header: dict = {}
    parsed = _read_jobs(path, "swf", _swf_data_lines(path, header), _swf_job)
    epoch = header.get("UnixStartTime")
    return _build(path, "swf", parsed, header=header, meta={},
                  epoch=epoch if isinstance(epoch, int) else None)


def load_sacct(path) -> tuple[Jobs, TraceReport]:
    """Load a sacct-style table: an optional count line, a header of column names, an optional line
    of dashes, then one job a line (tab- or '|'-separated). Job steps (``123.batch``) are not jobs:
    they are left out and counted in ``meta["steps_skipped"]``. Times are Unix seconds (epoch 0)."""
    _check_file(path)
    layout, declared_count, lines = _sacct_preamble(path, _numbered_lines(path))
    parsed = _read_jobs(path, "sacct", lines, layout.parse_row)
    meta = {"steps_skipped": parsed.ignored}
    if declared_count is not None:
        meta["declared_count"] = declared_count
    return _build(path, "sacct", parsed, header={"columns": layout.columns}, meta=meta, epoch=0)


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
    raise InvalidInputError(f"no bundled trace named {name!r}; bundled: "
                            f"{', '.join(Path(f).stem for f in BUNDLED_TRACES)}")


def default_nodes(jobs: Jobs, report: TraceReport) -> int | None:
    """The machine size the trace states: header ``MaxNodes``, else ``MaxProcs``; None if neither
    is given. A value smaller than the largest job gives way to the other (SWF jobs count
    processors, so ``MaxNodes`` is too small where nodes have several processors); if neither
    fits, the larger one is returned and the oversized jobs are the caller's to report."""
    stated = [v for v in (report.header.get("MaxNodes"), report.header.get("MaxProcs"))
              if isinstance(v, int) and v > 0]
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
    """The first ``count`` non-blank lines."""
    return [text for _, text in itertools.islice(_numbered_lines(path), count)]


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
        return len(fields) == len(_SWF_FIELDS) and all(math.isfinite(float(x)) for x in fields)
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

    def add(self, number: int, skip: _Skip, text: str) -> None:
        self.count += 1
        self.malformed += skip.malformed
        if len(self.examples) < _MAX_EXAMPLES:
            shown = "".join(c if c.isprintable() else " " for c in text[:_EXAMPLE_WIDTH])
            self.examples.append(f"line {number}: {skip.reason}: {shown}")


@dataclass
class _Parsed:
    jobs: list[_Job]
    skips: _Skips
    lines: int
    ignored: int


def _read_jobs(path, fmt: str, lines: Iterator[tuple[int, str]],
               parse_row: Callable[[str], _Job | None]) -> _Parsed:
    """Parse each data line with ``parse_row`` (None: not a job, ignored) and collect the jobs,
    skipping bad lines and later duplicates of a job id; raise if the file is not of the format."""
    jobs: list[_Job] = []
    skips = _Skips()
    seen: set = set()
    count = ignored = 0
    for number, text in lines:
        count += 1
        try:
            job = parse_row(text)
            if job is None:
                ignored += 1
                continue
            if job.raw_id in seen:
                raise _Skip("duplicate job id")
        except _Skip as skip:
            skips.add(number, skip, text)
            if skips.malformed == count == _GIVE_UP_AFTER:
                raise _not_format(path, fmt, skips) from None
            continue
        seen.add(job.raw_id)
        jobs.append(job)
    if count == 0:
        raise InvalidInputError(f"trace file {path} has no job lines; is it {_FORMAT_NAMES[fmt]}?")
    if skips.malformed == count:
        raise _not_format(path, fmt, skips)
    if not jobs:
        raise InvalidInputError(f"trace file {path} has no usable jobs: all {count} lines were "
                                f"skipped (e.g. {skips.examples[0]})")
    return _Parsed(jobs, skips, count, ignored)


def _not_format(path, fmt: str, skips: _Skips) -> InvalidInputError:
    return InvalidInputError(f"trace file {path} is not {_FORMAT_NAMES[fmt]} (no line parses, e.g. "
                             f"{skips.examples[0]}){_hint(path, fmt)}")


def _build(path, fmt: str, parsed: _Parsed, *, header: dict, meta: dict,
           epoch: int | None) -> tuple[Jobs, TraceReport]:
    """The Jobs table and the report of parsed lines."""
    raw_ids, submit, nodes, limits, runtime, user, depends_on_id, start, end = zip(*parsed.jobs)
    unknown_limit = [limit is None for limit in limits]
    limit = np.maximum([r if u else lim for lim, r, u in zip(limits, runtime, unknown_limit)], 1)
    runtime = np.asarray(runtime, dtype=np.int64)
    job_id, any_text_ids = _integer_ids(raw_ids)
    depends_on_id = np.asarray(depends_on_id, dtype=np.int64)
    jobs = Jobs.build(job_id=job_id, submit_s=submit, nodes=nodes, limit_s=limit,
                      runtime_s=runtime, user=np.asarray(user),
                      depends_on_id=np.where(depends_on_id == job_id, -1, depends_on_id),
                      recorded_start_s=start, recorded_end_s=end, epoch=epoch,
                      source=Path(path).name)
    jobs, kept = _backward_dependencies(jobs)
    jobs.meta.update(meta, limit_from_runtime=sum(unknown_limit),
                     clipped_runtimes=int((runtime > limit).sum()),
                     dropped_dependencies=int((depends_on_id != -1).sum()) - kept)
    if any_text_ids:
        raw_of = dict(zip(job_id.tolist(), raw_ids))
        jobs.meta["raw_ids"] = [str(raw_of[j]) for j in jobs.job_id.tolist()]
    report = TraceReport(path=str(path), format=fmt, lines=parsed.lines, jobs=len(jobs),
                         skipped=parsed.skips.count,
                         examples=tuple(parsed.skips.examples), header=header)
    return jobs, report


def _integer_ids(raw_ids) -> tuple[np.ndarray, bool]:
    """Integer job ids: the trace's own, and fresh ones (after the largest kept) for text ids such
    as array tasks ``123_4``; and whether there were any text ids."""
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
_SWF_FIELDS = ("job id", "submit time", "wait time", "run time", "allocated processors",
               "average CPU time", "used memory", "requested processors", "requested time",
               "requested memory", "status", "user id", "group id", "executable", "queue",
               "partition", "preceding job", "think time")
_SWF_HEADER = re.compile(r";\s*(\w+)\s*:\s*(.*?)\s*$")


def _swf_data_lines(path, header: dict) -> Iterator[tuple[int, str]]:
    """The non-comment lines; ``; Key: value`` comments go into ``header`` (first value of a key
    wins; ints where they parse)."""
    for number, text in _numbered_lines(path):
        if not text.lstrip().startswith(";"):
            yield number, text
            continue
        match = _SWF_HEADER.match(text.lstrip())
        if match and match[1] not in header:
            header[match[1]] = _int_or_text(match[2])


def _int_or_text(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def _swf_numbers(text: str) -> list[int]:
    """The 18 fields of an SWF line as ints (decimals rounded)."""
    fields = text.split()
    if len(fields) != len(_SWF_FIELDS):
        raise _Skip(f"wrong number of fields (expected {len(_SWF_FIELDS)}, got {len(fields)})")
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
        raise _Skip(f"non-numeric {name} {text!r}")
    return round(value)


def _swf_job(text: str) -> _Job:
    """One SWF line as a job: processors are nodes; -1 fields are unknown."""
    (job_id, submit, wait, run, allocated, _cpu, _memory, requested, requested_time, _req_memory,
     _status, user, _group, _executable, _queue, _partition, preceding, _think) = _swf_numbers(text)
    nodes = requested if requested > 0 else allocated
    if nodes <= 0:
        raise _Skip("no processor count", malformed=False)
    if run < 0:
        raise _Skip("unknown runtime", malformed=False)
    if submit < 0:
        raise _Skip("unknown submit time", malformed=False)
    start = submit + wait if wait >= 0 else -1
    return _Job(raw_id=job_id, submit=submit, nodes=nodes,
                limit=requested_time if requested_time > 0 else None, runtime=run, user=user,
                depends_on_id=preceding if preceding > 0 else -1,
                start=start, end=start + run if start >= 0 else -1)


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


def _sacct_preamble(path, lines: Iterator[tuple[int, str]]
                    ) -> tuple["_SacctLayout", int | None, Iterator[tuple[int, str]]]:
    """Read the optional count line, the header and the optional line of dashes; return the
    layout, the stated count (or None) and the remaining (data) lines."""
    first = next(lines, None)
    declared = None
    if first is not None and first[1].strip().isdecimal():
        declared = int(first[1])
        first = next(lines, None)
    if first is None or not _is_sacct_header(first[1]):
        raise InvalidInputError(f"trace file {path} is not a sacct-style trace (no header line "
                                f"with a JobID column){_hint(path, 'sacct')}")
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
            raise InvalidInputError(f"trace file {path}: the sacct header lacks column(s) "
                                    f"{', '.join(missing)}; include them in the export")
        return cls(columns, index, chosen, delimiter)

    def fields(self, text: str) -> list[str]:
        """The row's fields (split at the header's delimiter, or at whitespace if the row has
        none; a trailing delimiter is allowed)."""
        fields = text.split(self.delimiter) if self.delimiter in text else text.split()
        if len(fields) == len(self.columns) + 1 and not fields[-1].strip():
            fields.pop()
        if len(fields) != len(self.columns):
            raise _Skip(f"wrong number of fields (expected {len(self.columns)}, got {len(fields)})")
        return fields

    def parse_row(self, text: str) -> _Job | None:
        """One row as a job; None for a job step (``123.batch``), which is not a job."""
        fields = self.fields(text)
        value = {key: fields[i].strip() for key, i in self.index.items()}
        raw_id = value["job_id"]
        if "." in raw_id:
            return None
        if not raw_id:
            raise _Skip("empty JobID")
        submit, start, end = (self.time(key, value[key]) for key in ("submit", "start", "end"))
        limit = self.limit(value["limit"])
        nodes = self.count("nodes", value["nodes"])
        if submit is None:
            raise _Skip("unknown submit time", malformed=False)
        if nodes < 1:
            raise _Skip("no node count", malformed=False)
        if start is None or end is None:
            raise _Skip("unknown runtime", malformed=False)
        if end < start:
            raise _Skip("end before start", malformed=False)
        return _Job(raw_id=self.count("job_id", raw_id) if raw_id.isdecimal() else raw_id,
                    submit=submit, nodes=nodes, limit=limit, runtime=end - start,
                    user=value["user"], depends_on_id=-1, start=start, end=end)

    def time(self, key: str, text: str) -> int | None:
        """Unix seconds of an ISO time (UTC unless it states an offset); None if unknown."""
        if text.lower() in _UNKNOWN_TIMES:
            return None
        try:
            return calendar.timegm(datetime.fromisoformat(text).utctimetuple())
        except (ValueError, OverflowError):
            raise _Skip(f"bad {self.names[key]} time {text!r}") from None

    def limit(self, text: str) -> int | None:
        """Seconds of the time limit; None if unlimited."""
        try:
            seconds = _slurm_seconds(text)
        except ValueError:
            raise _Skip(f"bad {self.names['limit']} {text!r}") from None
        if seconds is not None and seconds > _BIG:
            raise _Skip(f"{self.names['limit']} {text!r} out of range")
        return seconds

    def count(self, key: str, text: str) -> int:
        """A non-negative integer field."""
        if not (text.isdecimal() and text.isascii()):
            raise _Skip(f"bad {self.names[key]} {text!r}")
        if int(text) > _BIG:
            raise _Skip(f"{self.names[key]} {text!r} out of range")
        return int(text)


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
