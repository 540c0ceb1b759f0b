"""A site's Slurm accounting records, read as the node allocations they record.

:func:`read_allocations` streams the records line by line (a file, ``.gz`` read transparently, or
any iterable of text lines) and yields one :class:`Allocation` per started job or requeued run;
records that are not allocations are counted in a :class:`Skipped`, by reason (:data:`REASONS`).
Two formats are read.

**sacct**: the output of ``sacct --parsable2``, one header line naming the columns, then one line
per record, fields separated by ``|``. The columns may come in any order and extra columns are
ignored; the reader needs ``JobID``, ``Partition``, ``Submit``, ``Start``, ``End``, ``NNodes``,
``NodeList`` and ``State``. The command that writes them for a whole cluster
(:data:`SACCT_COMMAND`)::

    sacct --allusers --allocations --duplicates --parsable2 --starttime 2026-10-01 --endtime now --format JobID,Partition,Submit,Start,End,NNodes,NodeList,State > records.txt

``--allocations`` leaves out job steps, ``--duplicates`` keeps every run of a requeued job
(without it sacct shows only the last run). Output of ``sacct --parsable`` (a ``|`` after the last
field) is read too.

**jobcomp**: the log of Slurm's ``jobcomp/filetxt`` plugin (the file ``JobCompLoc`` names), one
line per ended job, ``Key=Value`` fields (``JobId``, ``Partition``, ``SubmitTime``,
``StartTime``, ``EndTime``, ``NodeList``, ``NodeCnt``, ``JobState``; array tasks add
``ArrayJobId`` and ``ArrayTaskId``, heterogeneous job components ``HetJobId`` and
``HetJobOffset``). It holds no running or pending jobs.

``fmt="auto"`` takes ``sacct`` when the first non-empty line is a ``|``-separated header with a
``JobID`` column and ``jobcomp`` when it starts with ``JobId=``.

Job ids are written as sacct writes them, so the same job has the same id in both formats: ``123``
for a plain job, ``123_4`` for task 4 of array job 123 (the jobcomp log's ``ArrayJobId`` and
``ArrayTaskId``; its ``JobId`` is the task's own id), ``123+1`` for component 1 of
heterogeneous job 123 (``HetJobId`` and ``HetJobOffset``).

**Times.** Both formats print local times without a zone, ``YYYY-MM-DDTHH:MM:SS``; ``timezone``
names the zone they were written in (an IANA name such as ``Europe/Berlin``; None: this machine's
zone). A local time that does not exist (skipped when clocks spring forward) or exists twice
(repeated when they fall back) is read as Python's :mod:`zoneinfo` reads it with ``fold=0``: the
offset in force before the change, so a skipped ``02:30`` is read as ``03:30`` summer time and a
repeated ``02:30`` as its first occurrence. One exception keeps a record whole: an end that would
fall before its start is read as the second occurrence when that makes it the later time.
``Unknown`` and ``None`` mean not set.

**Odd records.** Every line is either an :class:`Allocation` or one count in
:class:`Skipped`; bad lines never stop the reading.

- **Array tasks** (``123_4``) are jobs like any other. A pending range of tasks (``123_[5-10]``,
  ``123_[5-10%2]``) is skipped as ``pending``.
- **Requeued jobs** (``sacct --duplicates``) are several records of one job id, the earlier runs
  in state ``REQUEUED``: every run that started is an :class:`Allocation`, each with its own
  start. The same job id with the same start a second time is skipped as ``duplicate``
  (records read twice, e.g. two overlapping ``sacct`` dumps joined together).
- **Heterogeneous job components** (``123+0``, ``123+1``) are allocations with ``het=True``.
- **Job steps** (``123.batch``, ``123.extern``, ``123.0``, ``123+0.batch``: present when sacct
  ran without ``--allocations``) are skipped as ``step``.
- **Running jobs** (``End`` is ``Unknown``) are allocations with ``end=None``.
- **Pending jobs** (no start and no end, state ``PENDING``, or no nodes and no end; sacct's
  ``NodeList`` is then ``None assigned``) are skipped as ``pending``.
- **Jobs that ended without starting** (cancelled or failed while pending: no start, or no nodes)
  are skipped as ``not_started``.
- **Malformed lines** (a wrong number of fields, a bad time, job id, node count or hostlist, an end
  before the start) are skipped as ``malformed``, with their line numbers. When the first lines
  of a source are all malformed (ten of them, or all when there are fewer), the source is not of
  the format at all and reading stops with one :class:`~tjap.core.errors.InvalidInputError` that
  names the first bad line.
- ``NNodes`` (``NodeCnt``) is kept as recorded, even where it differs from the hostlist's count
  (:func:`tjap.audit` skips such a record as ``malformed``: it contradicts itself).

A missing or incomplete sacct header, or a source of neither format, is one
:class:`~tjap.core.errors.InvalidInputError` naming the problem and the command or option that fixes it.

Examples
--------
>>> lines = ["JobID|Partition|Submit|Start|End|NNodes|NodeList|State",
...          "4711|main|2026-11-02T09:00:00|2026-11-02T09:05:00|2026-11-02T10:05:00|4|"
...          "n[01-04]|COMPLETED",
...          "4711.batch||2026-11-02T09:05:00|2026-11-02T09:05:00|2026-11-02T10:05:00|1|"
...          "n01|COMPLETED"]
>>> skipped = Skipped()
>>> [(a.job_id, a.start, a.nodes) for a in read_allocations(lines, timezone="UTC",
...                                                         skipped=skipped)]
[('4711', 1793610300, 'n[01-04]')]
>>> skipped.counts
{'step': 1}
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.client import parse_jobcomp_line

__all__ = [
    "Allocation",
    "FORMATS",
    "REASONS",
    "SACCT_COMMAND",
    "SACCT_COLUMNS",
    "Skipped",
    "detect_format",
    "read_allocations",
    "resolve_timezone",
    "sniff_format",
]

#: The formats :func:`read_allocations` reads (besides ``"auto"``).
FORMATS = ("sacct", "jobcomp")

#: The sacct columns the reader needs, in the order :data:`SACCT_COMMAND` asks for them.
SACCT_COLUMNS = ("JobID", "Partition", "Submit", "Start", "End", "NNodes", "NodeList", "State")

#: The command that writes a site's records for :func:`read_allocations`.
SACCT_COMMAND = (
    "sacct --allusers --allocations --duplicates --parsable2 --starttime 2026-10-01 "
    "--endtime now --format " + ",".join(SACCT_COLUMNS) + " > records.txt"
)

#: Why a record is not audited: reason -> one-line meaning. The reader counts the first five;
#: the audit (:mod:`tjap.slurm.audit`) counts the others.
REASONS = {
    "step": "a job step (123.batch, 123.extern, 123.0), not an allocation of its own",
    "pending": "never started: a pending job or a pending array range such as 123_[5-10]",
    "not_started": "ended before it started: cancelled or failed while pending",
    "malformed": "a line that cannot be read (wrong field count, bad time, id, count or hostlist)",
    "duplicate": "the same job id with the same start a second time",
    "unknown_nodes": "holds a node that is not in the topology",
    "heterogeneous": "a component of a heterogeneous job: its nodes count as busy, not audited",
    "below_min_nodes": "fewer nodes than the audit's minimum: its nodes count as busy",
    "outside_window": "started outside the audit's time window",
    "other_partition": "in a partition the audit does not look at",
}

#: How many first lines, all malformed, make a source "not of the format at all".
_PROBE_LINES = 10

#: The most examples :class:`Skipped` keeps per reason.
_EXAMPLES = 5


@dataclass(frozen=True, slots=True)
class Allocation:
    """One started job (or one run of a requeued job) and the nodes it held.

    Attributes
    ----------
    job_id : str
        As sacct writes it: ``"123"``, ``"123_4"`` (array task), ``"123+1"`` (het component).
    partition : str
        The partition it ran in.
    submit : int or None
        Submission time, Unix seconds (None if not recorded).
    start : int
        Start time, Unix seconds.
    end : int or None
        End time, Unix seconds; None while still running.
    state : str
        The state's first word, upper case (``COMPLETED``, ``CANCELLED``, ``REQUEUED``, ...).
    nodes : str
        The nodes as recorded, a compressed hostlist such as ``"n[1-4,7]"``.
    num_nodes : int
        The node count as recorded.
    line : int
        The record's line number in the source, from 1.
    het : bool
        True for a component of a heterogeneous job.
    """

    job_id: str
    partition: str
    submit: int | None
    start: int
    end: int | None
    state: str
    nodes: str
    num_nodes: int
    line: int
    het: bool = False


class Skipped:
    """Records that are not allocations, counted by reason (:data:`REASONS`), with the first few
    examples of each as ``(line, job_id)``."""

    __slots__ = ("_counts", "_examples")

    def __init__(self):
        self._counts: dict[str, int] = {}
        self._examples: dict[str, list[tuple[int, str]]] = {}

    def add(self, reason: str, line: int, job_id: str = "") -> None:
        """Count one record skipped for ``reason`` at ``line`` (1-based; 0 if not from a line)."""
        count = self._counts.get(reason, 0)
        self._counts[reason] = count + 1
        if count < _EXAMPLES:
            self._examples.setdefault(reason, []).append((line, job_id))

    @property
    def counts(self) -> dict[str, int]:
        """Reason -> number of records (only the reasons that occurred)."""
        return dict(self._counts)

    @property
    def examples(self) -> dict[str, list[tuple[int, str]]]:
        """Reason -> the first five ``(line, job_id)`` skipped for it."""
        return {reason: list(found) for reason, found in self._examples.items()}

    @property
    def total(self) -> int:
        """Records skipped, all reasons together."""
        return sum(self._counts.values())

    def __repr__(self) -> str:
        return f"Skipped({self._counts})"


# ----------------------------------------------------------------------------------- time zones


def resolve_timezone(timezone: str | None = None) -> ZoneInfo:
    """The zone of the records' local times: the IANA zone ``timezone`` names, or this machine's
    zone when None (``TZ``, else ``/etc/localtime``, else UTC). Its ``key`` is the zone's name
    (``"localtime"`` when the machine's zone file has no name)."""
    if timezone is None:
        return _local_zone()
    if not isinstance(timezone, str):
        raise InvalidInputError(
            f"timezone must be an IANA zone name such as Europe/Berlin, "
            f"got {type(timezone).__name__}"
        )
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidInputError(
            f"timezone {timezone!r} is not an IANA time zone name; use one "
            "such as Europe/Berlin, America/Chicago or UTC"
        ) from None


def _local_zone() -> ZoneInfo:
    candidates = []
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and not tz.startswith("/"):
        candidates.append(tz)
    localtime = Path(tz if tz.startswith("/") else "/etc/localtime")
    target = os.path.realpath(localtime)
    if "zoneinfo/" in target:
        candidates.append(target.split("zoneinfo/", 1)[1])
    for name in candidates:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    try:
        with open(localtime, "rb") as file:
            return ZoneInfo.from_file(file, key="localtime")
    except (OSError, ValueError):
        return ZoneInfo("UTC")


_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\Z")
_EPOCH_ORDINAL = datetime(1970, 1, 1).toordinal()
_UNSET = frozenset({"unknown", "none", "n/a", ""})
#: The most local minutes :class:`_Clock` keeps (records come roughly in time order).
_CACHED_MINUTES = 100_000


class _Clock:
    """Local ``YYYY-MM-DDTHH:MM:SS`` -> Unix seconds in one zone, fast: the UTC second of each
    local hour's start is worked out once with zoneinfo, and of each minute's start from it; an
    hour with an offset change inside it goes through zoneinfo for every time."""

    __slots__ = ("zone", "_hours", "_minutes")

    def __init__(self, zone: ZoneInfo):
        self.zone = zone
        self._hours: dict[str, int | None] = {}
        self._minutes: dict[str, int] = {}

    def seconds(self, text: str) -> int | None:
        """Unix seconds, None for ``Unknown``/``None``; ValueError if not a local time."""
        base = self._minutes.get(text[:16])
        if base is not None and len(text) == 19 and text[16] == ":":
            second = text[17:]
            if second.isdigit() and second < "60":
                return base + int(second)
        return self._seconds(text)

    def _seconds(self, text: str) -> int | None:
        if not _TIME.match(text):
            if text.strip().lower() in _UNSET:
                return None
            raise ValueError(f"time {text!r} is not YYYY-MM-DDTHH:MM:SS")
        minute, second = int(text[14:16]), int(text[17:])
        if minute > 59 or second > 59:
            raise ValueError(f"time {text!r} is not a time of day")
        hour = text[:13]
        if hour not in self._hours:
            self._hours[hour] = self._hour_start(hour, text)
        base = self._hours[hour]
        if base is None:
            return self._exact(text)
        if len(self._minutes) >= _CACHED_MINUTES:
            self._minutes.clear()
        self._minutes[text[:16]] = base + 60 * minute
        return base + 60 * minute + second

    def _hour_start(self, hour: str, text: str) -> int | None:
        """UTC second of local ``hour``'s start; None if the offset changes inside the hour."""
        try:
            first = datetime(
                int(hour[:4]), int(hour[5:7]), int(hour[8:10]), int(hour[11:13]), tzinfo=self.zone
            )
        except ValueError:
            raise ValueError(f"time {text!r} is not a date and time") from None
        offset = first.utcoffset()
        if first.replace(minute=59, second=59).utcoffset() != offset:
            return None
        naive = (first.toordinal() - _EPOCH_ORDINAL) * 86400 + 3600 * first.hour
        return naive - int(offset.total_seconds())

    def _exact(self, text: str, fold: int = 0) -> int:
        local = datetime.fromisoformat(text).replace(tzinfo=self.zone, fold=fold)
        return int(local.timestamp())

    def later_reading(self, text: str) -> int:
        """The second occurrence (``fold=1``) of a local time that the clocks repeat."""
        return self._exact(text, fold=1)


# ------------------------------------------------------------------------------------- the input


def detect_format(line: str) -> str | None:
    """``"sacct"`` for a ``|``-separated header with a ``JobID`` column, ``"jobcomp"`` for a
    ``JobId=`` record, None otherwise."""
    line = line.strip()
    if line.startswith("JobId="):
        return "jobcomp"
    if "|" in line and "jobid" in (name.strip().lower() for name in line.split("|")):
        return "sacct"
    return None


def _neither(source_name: str, line: str) -> InvalidInputError:
    shown = line.strip()
    shown = repr(shown if len(shown) <= 60 else shown[:57] + "...")
    hint = (
        "; it looks like sacct output without its header line: run sacct without --noheader"
        if "|" in line
        else ""
    )
    return InvalidInputError(
        f"{source_name}: cannot tell the records' format from its first line {shown}{hint}; tjap "
        "reads sacct --parsable2 output (with its header line) and the jobcomp/filetxt log; name "
        "one with --format sacct or --format jobcomp"
    )


def _source_name(source) -> str:
    return str(source) if isinstance(source, (str, os.PathLike)) else "records"


class _Lines:
    """The lines of a records file (``.gz`` read transparently), each decoded as UTF-8 on its
    own, so a byte that is not UTF-8 is named with its line: a one-line error, never U+FFFD."""

    def __init__(self, source):
        self.name = str(source)
        path = Path(source)
        self.file = gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def __iter__(self):
        for number, raw in enumerate(self.file, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = raw[exc.start : exc.start + 1].hex()
                raise InvalidInputError(
                    f"records file {self.name!r} is not UTF-8 text: line {number:,} holds the "
                    f"byte 0x{byte}; convert the file first, e.g. "
                    f"iconv -f latin1 -t utf-8 {self.name} > records.txt"
                ) from None


def _check_path(source) -> None:
    path = Path(source)
    if not path.is_file():
        why = "is a directory" if path.is_dir() else "does not exist"
        raise InvalidInputError(
            f"records file {str(path)!r} {why}; give the file sacct or the "
            "jobcomp/filetxt plugin wrote"
        )


def sniff_format(source) -> str:
    """The format (``"sacct"`` or ``"jobcomp"``) of the records file ``source``, from its first
    non-empty line; :class:`~tjap.core.errors.InvalidInputError` if it is neither."""
    _check_path(source)
    try:
        with _Lines(source) as lines:
            for line in lines:
                if line.strip():
                    found = detect_format(line)
                    if found is None:
                        raise _neither(str(source), line)
                    return found
    except (OSError, EOFError) as exc:
        raise InvalidInputError(f"records file {str(source)!r} cannot be read: {exc}") from None
    raise InvalidInputError(f"records file {str(source)!r} is empty")


def read_allocations(
    source, *, fmt: str = "auto", timezone: str | None = None, skipped: Skipped | None = None
) -> Iterator[Allocation]:
    """The allocations a site's accounting records hold, streamed in file order.

    Parameters
    ----------
    source : str, Path or iterable of str
        A records file (``.gz`` read transparently) or the records' lines (a text such as
        ``text.splitlines()``, an open file).
    fmt : {"auto", "sacct", "jobcomp"}
        The records' format; ``"auto"`` tells it from the first non-empty line.
    timezone : str or None
        IANA name of the zone the records' local times were written in; None: this machine's.
    skipped : Skipped or None
        Counts the records that are not allocations (a new one if None).

    Returns
    -------
    Iterator[Allocation]
        One per started record; reading happens as it is consumed.

    Raises
    ------
    InvalidInputError
        On an unknown ``fmt`` or ``timezone`` or a missing file (at once), on a source that is not
        of the format (a missing sacct header or columns, a source of neither format, first lines
        all malformed: when reading reaches them).
    """
    if fmt not in ("auto", *FORMATS):
        raise InvalidInputError(
            f"records format {fmt!r} is not one tjap reads; use auto, sacct or jobcomp"
        )
    clock = _Clock(resolve_timezone(timezone))
    if skipped is None:
        skipped = Skipped()
    if isinstance(source, (str, os.PathLike)):
        _check_path(source)
    elif not isinstance(source, Iterable):
        raise InvalidInputError(
            f"records must be a file path or an iterable of lines, got {type(source).__name__}"
        )
    return _read(source, fmt, clock, skipped)


def _read(source, fmt: str, clock: _Clock, skipped: Skipped) -> Iterator[Allocation]:
    name = _source_name(source)
    if isinstance(source, (str, os.PathLike)):
        try:
            with _Lines(source) as lines:
                yield from _read_lines(lines, name, fmt, clock, skipped)
        except (OSError, EOFError) as exc:  # unreadable, or a truncated .gz
            raise InvalidInputError(f"records file {name!r} cannot be read: {exc}") from None
    else:
        yield from _read_lines(source, name, fmt, clock, skipped)


def _read_lines(lines, name, fmt, clock, skipped) -> Iterator[Allocation]:
    numbered = enumerate(lines, 1)
    for number, line in numbered:  # noqa: B007 (number is read after the loop)
        if not isinstance(line, str):
            raise InvalidInputError(
                f"{name}: records must be lines of text, got "
                f"{type(line).__name__} (open the file in text mode)"
            )
        if line.strip():
            break
    else:
        raise InvalidInputError(f"{name}: no records (the input is empty)")
    line = line.lstrip("\ufeff")  # a byte order mark some editors write
    found = detect_format(line)
    if fmt == "auto":
        if found is None:
            raise _neither(name, line)
        fmt = found
    guard = _Guard(name, fmt)
    if fmt == "sacct":
        yield from _sacct(numbered, line, name, clock, skipped, guard)
    else:
        yield from _jobcomp(numbered, number, line, clock, skipped, guard)
    guard.finish()


class _Guard:
    """Raises when the first lines of a source are all malformed (it is not of the format)."""

    __slots__ = ("name", "fmt", "good", "bad", "first")

    def __init__(self, name: str, fmt: str):
        self.name, self.fmt = name, fmt
        self.good = self.bad = 0
        self.first = ""

    def malformed(self, number: int, why: str, skipped: Skipped, job_id: str = "") -> None:
        skipped.add("malformed", number, job_id)
        self.bad += 1
        if not self.first:
            self.first = f"line {number}: {why}"
        if not self.good and self.bad >= _PROBE_LINES:
            self.fail()

    def finish(self) -> None:
        if self.bad and not self.good:
            self.fail()

    def fail(self):
        fix = (
            "give sacct --parsable2 output with times as YYYY-MM-DDTHH:MM:SS (run sacct with "
            "SLURM_TIME_FORMAT unset)"
            if self.fmt == "sacct"
            else "give the file the jobcomp/filetxt plugin wrote"
        )
        raise InvalidInputError(
            f"{self.name}: not {self.fmt} records: the first "
            f"{self.bad} record line(s) cannot be read ({self.first}); {fix}"
        )


# job ids that are not plain numbers: 123_4 (array task), 123+1 (het component)
_TASK_ID = re.compile(r"[0-9]+(?:_[0-9]+|\+[0-9]+)\Z")
_NO_NODES = frozenset({"", "none assigned", "(null)", "none"})
_HOSTLIST = re.compile(
    r"(?:[^\[\],\s]|\[\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*\])+"
    r"(?:,(?:[^\[\],\s]|\[\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*\])+)*$"
)


def _node_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:  # older sacct versions write 2048 as "2K"
        if text[-1:] in ("K", "M") and text[:-1].isdigit():
            return int(text[:-1]) * (1024 if text[-1] == "K" else 1024**2)
        raise ValueError(f"node count {text!r} is not a number") from None
    if count < 0:
        raise ValueError(f"node count {text!r} is negative")
    return count


class _Records:
    """What both formats share once a record's fields are read: which records are allocations."""

    __slots__ = ("skipped", "guard", "clock", "seen")

    def __init__(self, clock: _Clock, skipped: Skipped, guard: _Guard):
        self.clock, self.skipped, self.guard = clock, skipped, guard
        # job id -> its start, or the set of its starts once it has several (requeued runs);
        # strings and ints, not tuples: a million of them add no work for the garbage collector
        self.seen: dict[str, int | set[int]] = {}

    def allocation(
        self,
        number,
        job_id,
        het,
        partition,
        submit,
        start_text,
        end_text,
        state,
        nodes,
        num_nodes_text,
    ) -> Allocation | None:
        clock = self.clock
        try:
            submit = clock.seconds(submit) if submit is not None else None
            start = clock.seconds(start_text)
            end = clock.seconds(end_text)
            num_nodes = _node_count(num_nodes_text)
            no_nodes = nodes.lower() in _NO_NODES
            if not no_nodes and not _HOSTLIST.match(nodes):
                raise ValueError(f"node list {nodes!r} is not a hostlist")
            if start is not None and end is not None and end < start:
                end = clock.later_reading(end_text)  # the end in a repeated hour's 2nd pass
                if end < start:
                    raise ValueError(f"end {end_text} before start {start_text}")
        except ValueError as exc:
            self.guard.malformed(number, str(exc), self.skipped, job_id)
            return None
        self.guard.good += 1
        if start is None or no_nodes or state == "PENDING":
            self.skipped.add(
                "pending" if end is None or state == "PENDING" else "not_started", number, job_id
            )
            return None
        before = self.seen.get(job_id)
        if before is None:
            self.seen[job_id] = start
        elif before == start or (type(before) is set and start in before):
            self.skipped.add("duplicate", number, job_id)
            return None
        elif type(before) is set:
            before.add(start)
        else:
            self.seen[job_id] = {before, start}
        return Allocation(
            job_id, partition, submit, start, end, state, nodes, num_nodes, number, het
        )


def _sacct_columns(header: str, name: str) -> tuple[dict[str, int], int, bool]:
    trailing = header.rstrip("\r\n").endswith("|")
    names = [col.strip().lower() for col in header.rstrip("\r\n").split("|")]
    if trailing:
        names.pop()
    index = {col: i for i, col in reversed(list(enumerate(names)))}
    missing = [col for col in SACCT_COLUMNS if col.lower() not in index]
    if missing:
        raise InvalidInputError(
            f"{name}: the sacct header has no {', '.join(missing)} column"
            f"{'s' if len(missing) > 1 else ''}; write the records with: {SACCT_COMMAND}"
        )
    return index, len(names), trailing


def _sacct(numbered, header, name, clock, skipped, guard) -> Iterator[Allocation]:
    if detect_format(header) != "sacct":
        raise InvalidInputError(
            f"{name}: no sacct header line (the first line is {header.strip()[:60]!r}); run "
            f"sacct without --noheader: {SACCT_COMMAND}"
        )
    index, num_columns, trailing = _sacct_columns(header, name)
    (i_job, i_part, i_submit, i_start, i_end, i_nnodes, i_nodes, i_state) = (
        index[col.lower()] for col in SACCT_COLUMNS
    )
    records = _Records(clock, skipped, guard)
    for number, line in numbered:
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        fields = line.split("|")
        if trailing and fields[-1] == "":
            fields.pop()
        if len(fields) != num_columns:
            guard.malformed(
                number,
                f"{len(fields)} fields, the header has {num_columns}",
                skipped,
                fields[i_job] if len(fields) > i_job else "",
            )
            continue
        job_id = fields[i_job]
        if not job_id.isdigit():
            if "." in job_id:
                guard.good += 1
                skipped.add("step", number, job_id)
                continue
            if "_[" in job_id:
                guard.good += 1
                skipped.add("pending", number, job_id)
                continue
            if not _TASK_ID.match(job_id):
                guard.malformed(
                    number, f"job id {job_id!r} is not one sacct writes", skipped, job_id
                )
                continue
        state = fields[i_state].split(" ", 1)[0].upper()
        found = records.allocation(
            number,
            job_id,
            "+" in job_id,
            fields[i_part],
            fields[i_submit],
            fields[i_start],
            fields[i_end],
            state,
            fields[i_nodes],
            fields[i_nnodes],
        )
        if found is not None:
            yield found


_JOBCOMP_NEEDS = ("JobId", "Partition", "StartTime", "EndTime", "NodeList", "NodeCnt", "JobState")


def _jobcomp(numbered, first_number, first_line, clock, skipped, guard) -> Iterator[Allocation]:
    records = _Records(clock, skipped, guard)
    for number, line in itertools.chain([(first_number, first_line)], numbered):
        if not line.strip():
            continue
        fields = parse_jobcomp_line(line)
        missing = [key for key in _JOBCOMP_NEEDS if key not in fields]
        job_id = fields.get("JobId", "")
        if missing:
            guard.malformed(number, f"no {', '.join(missing)}", skipped, job_id)
            continue
        het = "HetJobId" in fields
        if "ArrayJobId" in fields:
            job_id = f"{fields['ArrayJobId']}_{fields.get('ArrayTaskId', '')}"
        elif het:
            job_id = f"{fields['HetJobId']}+{fields.get('HetJobOffset', '')}"
        if not (job_id.isdigit() or _TASK_ID.match(job_id)):
            guard.malformed(number, f"job id {job_id!r} is not a number", skipped, job_id)
            continue
        state = fields["JobState"].split(" ", 1)[0].upper()
        found = records.allocation(
            number,
            job_id,
            het,
            fields["Partition"],
            fields.get("SubmitTime"),
            fields["StartTime"],
            fields["EndTime"],
            state,
            fields["NodeList"],
            fields["NodeCnt"],
        )
        if found is not None:
            yield found
