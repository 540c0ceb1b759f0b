"""An adapter to a real Slurm: read the live queue and nodes, submit and cancel jobs, read the
records of completed jobs, and turn the queue into a :class:`~tjap.placement.batch.jobs.Jobs` table.

Everything goes through Slurm's own commands (``sbatch``, ``squeue``, ``sinfo``, ``scancel``) run as
subprocesses, so it works against any Slurm the environment points at: the cluster of
``$SLURM_CONF`` (or ``/etc/slurm/slurm.conf``), or a throw-away local one started by
:class:`tjap.placement.slurm.harness.LocalSlurm` (pass its ``env``).

Machine-readable output
-----------------------
``squeue`` and ``sinfo`` are run with a ``|``-separated ``--format`` and ``SLURM_TIME_FORMAT=%s`` so
that times come back as Unix seconds. The job name, the only free-text field, is printed last and
may itself contain ``|``. Completed jobs are read from the ``jobcomp/filetxt`` log (one
``Key=Value ...`` line per job, times as local ISO-8601 without zone), which needs no slurmdbd.

Errors
------
Every failure raises :class:`SlurmError` (a :class:`~tjap.core.errors.TjapError`, so the CLI prints it as
one line): a missing binary names it and the package to install, an unreachable controller says
``cannot reach slurmctld: ...; is Slurm running? (SLURM_CONF=...)``, timeouts and every other
non-zero exit carry the command's first error line. When Slurm cannot be reached at all (the
controller does not answer, a command times out, the commands are not installed, the
configuration cannot be read, munge fails) the error is its subclass
:class:`~tjap.core.errors.SlurmUnreachableError` (the CLI's exit code 3). Output the readers cannot
parse raises a :class:`SlurmError` naming the command and its first bad line. Nothing is silently
ignored, except (optionally) cancelling a job that has already ended.

Interruptions
-------------
A command is waited for in steps of :data:`POLL_S` seconds, so that a signal handler that raises
(``tjap``'s Ctrl-C and SIGTERM) stops the wait at once; the command is then killed. Within
:meth:`SlurmClient.stopping` a command also stops when an event is set (how the placement
service, whose handler only sets its stop event, is stopped while it reads): it is killed and
:class:`SlurmStopped` raised.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tjap.core.errors import SlurmError, SlurmUnreachableError

#: Packages that provide the commands (Debian/Ubuntu).
INSTALL_HINT = "apt-get install slurm-wlm munge"
#: Seconds between two looks at a running Slurm command (has it ended, timed out, been stopped?).
POLL_S = 0.1


class SlurmStopped(KeyboardInterrupt):
    """A Slurm command killed because the event of :meth:`SlurmClient.stopping` was set (the
    placement service's SIGTERM or SIGINT): an interruption, not an error."""


# -- records -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueuedJob:
    """A job in ``squeue`` (pending, running, suspended, completing, ...).

    Times are Unix seconds. ``start_time`` is the actual start of a running job and, for a
    pending job, Slurm's expected start when the backfill scheduler has computed one (else None).
    ``time_limit_s`` is None for an unlimited job. ``cpus`` is the number of CPUs requested (for
    a pending job the minimum), ``nodes`` the number of nodes (requested, or allocated once
    running). ``dependency`` is Slurm's text (``afterany:12(unfulfilled)``) or ``""``;
    ``depends_on`` the job ids named in it.
    """

    job_id: int
    name: str
    user: str
    state: str
    submit_time: int
    start_time: int | None
    time_limit_s: int | None
    cpus: int
    nodes: int
    priority: int
    partition: str
    dependency: str
    reason: str

    @property
    def depends_on(self) -> list[int]:
        return dependency_ids(self.dependency)

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def running(self) -> bool:
        return self.state in ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED")


@dataclass(frozen=True)
class NodeState:
    """A node in ``sinfo``: state in lower case as sinfo's ``%T`` prints it (``idle``,
    ``mixed``, ``allocated``, ``down``, ``drained``, ...; a trailing ``*`` means not responding)."""

    name: str
    state: str
    cpus_total: int
    cpus_alloc: int
    cpus_idle: int
    cpus_other: int
    partitions: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompletedJob:
    """A line of the ``jobcomp/filetxt`` log. Times are Unix seconds (None if ``Unknown``);
    ``time_limit_s`` is None if unlimited; ``fields`` holds every Key=Value of the line."""

    job_id: int
    name: str
    user: str
    state: str
    partition: str
    time_limit_s: int | None
    submit_time: int | None
    eligible_time: int | None
    start_time: int | None
    end_time: int | None
    nodes: int
    cpus: int
    node_list: str
    exit_code: str
    fields: dict = field(default_factory=dict, compare=False, repr=False)


# -- parsing (pure functions, tested on captured output) ---------------------------------------

#: ``squeue --format``: every field but the name, which comes last and may contain the separator.
SQUEUE_FIELDS = ("%A", "%T", "%V", "%S", "%l", "%C", "%D", "%Q", "%u", "%P", "%E", "%r", "%j")
SQUEUE_FORMAT = "|".join(SQUEUE_FIELDS)
#: ``sinfo -N --format``: name, long state, CPUs as allocated/idle/other/total, partition.
SINFO_FORMAT = "%N|%T|%C|%P"


def _unix_or_none(text: str) -> int | None:
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        value = int(text)
        return value if value > 0 else None
    if text in ("", "N/A", "Unknown", "None", "(null)"):
        return None
    return _parse_iso_local(text)


def _parse_iso_local(text: str) -> int | None:
    """``2026-11-22T07:37:02`` in the local time zone (how Slurm prints times) -> Unix seconds."""
    text = text.strip()
    if text in ("", "Unknown", "N/A", "None"):
        return None
    try:
        return int(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        raise SlurmError(
            f"cannot parse Slurm time {text!r} (expected YYYY-MM-DDTHH:MM:SS or Unix seconds)"
        ) from None


def parse_duration(text: str) -> int | None:
    """Slurm's duration ``[days-][hours:]minutes:seconds`` (as squeue prints a time limit) in
    seconds; a bare number is minutes (as in ``sbatch -t``); None for ``UNLIMITED``/``INFINITE``."""
    text = text.strip()
    if text.upper() in ("UNLIMITED", "INFINITE", "NOT_SET", "N/A", "NONE", "PARTITION_LIMIT"):
        return None
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not m:
        raise SlurmError(f"cannot parse Slurm duration {text!r}")
    days = int(m.group(1) or 0)
    parts = [int(p) for p in m.group(2, 3, 4) if p is not None]
    if m.group(1) is not None:  # D-H, D-H:M, D-H:M:S
        parts = parts + [0] * (3 - len(parts))
        h, mi, s = parts
    elif len(parts) == 3:
        h, mi, s = parts
    elif len(parts) == 2:  # M:S
        h, (mi, s) = 0, parts
    else:  # M
        h, mi, s = 0, parts[0], 0
    return ((days * 24 + h) * 60 + mi) * 60 + s


def dependency_ids(text: str) -> list[int]:
    """Job ids named in a dependency (``afterany:12(unfulfilled),afterok:13_2(failed)``)."""
    text = (text or "").strip()
    if text in ("", "(null)", "None"):
        return []
    ids = []
    for clause in re.split(r"[,?&]", text):
        _, _, targets = clause.partition(":")
        for target in targets.split(":"):
            m = re.match(r"(\d+)", target)
            if m:
                ids.append(int(m.group(1)))
    return ids


def _shown(text: str, limit: int = 120) -> str:
    """``text`` quoted for a one-line message, cut to about ``limit`` characters."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _squeue_rows(text: str, n: int):
    """(line, its n '|'-separated fields) for each non-blank line of squeue output (the last
    field, the job name, may itself hold '|')."""
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", n - 1)
        if len(parts) != n:
            raise SlurmError(
                f"unexpected squeue line (expected {n} '|'-separated fields): {_shown(line)}"
            )
        yield line, parts


def parse_squeue(text: str) -> list[QueuedJob]:
    """Output of ``squeue -h -o SQUEUE_FORMAT`` (with ``SLURM_TIME_FORMAT=%s``)."""
    jobs = []
    for line, parts in _squeue_rows(text, len(SQUEUE_FIELDS)):
        (job_id, state, submit, start, limit, cpus, nodes, prio, user, part, dep, reason, name) = (
            parts
        )
        try:
            jobs.append(
                QueuedJob(
                    job_id=int(job_id),
                    name=name,
                    user=user,
                    state=state.strip().upper(),
                    submit_time=_unix_or_none(submit) or 0,
                    start_time=_unix_or_none(start),
                    time_limit_s=parse_duration(limit),
                    cpus=int(cpus),
                    nodes=int(nodes),
                    priority=int(prio),
                    partition=part,
                    dependency="" if dep in ("(null)", "") else dep,
                    reason=reason,
                )
            )
        except ValueError as exc:
            raise SlurmError(f"unexpected squeue line ({exc}): {_shown(line)}") from None
    return jobs


def parse_sinfo(text: str) -> list[NodeState]:
    """Output of ``sinfo -N -h -o SINFO_FORMAT``; a node in several partitions is listed once."""
    nodes: dict[str, NodeState] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 4:
            raise SlurmError(
                f"unexpected sinfo line (expected 4 '|'-separated fields): {_shown(line)}"
            )
        name, state, cpus, part = parts
        try:
            alloc, idle, other, total = (int(c) for c in cpus.split("/"))
        except ValueError:
            raise SlurmError(
                f"unexpected sinfo line (CPU field {_shown(cpus, 40)} is not "
                f"allocated/idle/other/total): {_shown(line)}"
            ) from None
        part = part.rstrip("*")
        if name in nodes:
            old = nodes[name]
            nodes[name] = NodeState(
                old.name,
                old.state,
                old.cpus_total,
                old.cpus_alloc,
                old.cpus_idle,
                old.cpus_other,
                old.partitions + (part,),
            )
        else:
            nodes[name] = NodeState(name, state.strip().lower(), total, alloc, idle, other, (part,))
    return list(nodes.values())


@dataclass(frozen=True)
class PendingJob:
    """A queued job as the placement service reads it (``squeue -o PENDING_FORMAT``): pending,
    or running when asked for (``SlurmClient.pending(states=...)``).

    ``job_text`` is squeue's ``%i`` (``123``, or ``123_4`` / ``123_[1-5]`` for an array,
    ``123+0`` for a heterogeneous job); ``job_id`` its leading number. ``nodes`` is the node
    count asked for (``-N``), ``req_nodes``/``exc_nodes`` the ``--nodelist``/``--exclude``
    hostlists (``""`` when none), ``features`` the ``--constraint`` (``""`` when none),
    ``account`` ``""`` without accounting. ``reason`` is Slurm's: ``JobHeldUser`` after
    ``sbatch --hold`` or ``scontrol uhold``, ``JobHeldAdmin`` after an administrator's
    ``scontrol hold``. ``start_time`` is the start of a running job (Unix seconds; Slurm's
    expected start or None for a pending one), ``time_limit_s`` None when unlimited.
    """

    job_id: int
    job_text: str
    state: str
    reason: str
    nodes: int
    submit_time: int
    user: str
    account: str
    partition: str
    priority: int
    req_nodes: str
    exc_nodes: str
    features: str
    name: str
    start_time: int | None = None
    time_limit_s: int | None = None

    @property
    def plain(self) -> bool:
        """Not an array or heterogeneous job (its ``%i`` is just the number)."""
        return self.job_text.isdigit()

    @property
    def held_by_user(self) -> bool:
        """Pending with a user hold (``sbatch --hold``), which the owner may release."""
        return self.state == "PENDING" and self.reason == "JobHeldUser"

    @property
    def fingerprint(self) -> tuple:
        """What must not change between reading the job and updating it."""
        return (
            self.state,
            self.reason,
            self.nodes,
            self.partition,
            self.user,
            self.account,
            self.req_nodes,
            self.exc_nodes,
            self.features,
        )


#: ``squeue --format`` of :class:`PendingJob`; the name comes last and may contain ``|``.
PENDING_FIELDS = (
    "%i",
    "%T",
    "%r",
    "%D",
    "%V",
    "%u",
    "%a",
    "%P",
    "%Q",
    "%n",
    "%x",
    "%f",
    "%S",
    "%l",
    "%j",
)
PENDING_FORMAT = "|".join(PENDING_FIELDS)


def _null(text: str) -> str:
    text = text.strip()
    return "" if text in ("(null)", "N/A", "None") else text


def parse_pending(text: str) -> list[PendingJob]:
    """Output of ``squeue -h -o PENDING_FORMAT`` (with ``SLURM_TIME_FORMAT=%s``)."""
    jobs = []
    for line, parts in _squeue_rows(text, len(PENDING_FIELDS)):
        (
            job,
            state,
            reason,
            nodes,
            submit,
            user,
            account,
            part,
            prio,
            req,
            exc,
            feat,
            start,
            limit,
            name,
        ) = parts
        m = re.match(r"(\d+)", job.strip())
        try:
            if not m:
                raise ValueError(f"job id {job!r}")
            jobs.append(
                PendingJob(
                    job_id=int(m.group(1)),
                    job_text=job.strip(),
                    state=state.strip().upper(),
                    reason=reason.strip(),
                    nodes=int(nodes),
                    submit_time=_unix_or_none(submit) or 0,
                    user=user.strip(),
                    account=_null(account),
                    partition=part.strip(),
                    priority=int(prio),
                    req_nodes=_null(req),
                    exc_nodes=_null(exc),
                    features=_null(feat),
                    name=name,
                    start_time=_unix_or_none(start),
                    time_limit_s=parse_duration(limit),
                )
            )
        except (ValueError, SlurmError) as exc_:
            raise SlurmError(f"unexpected squeue line ({exc_}): {_shown(line)}") from None
    return jobs


def parse_test_only(text: str) -> tuple[str, str] | None:
    """``(nodes, partition)`` from ``sbatch --test-only``'s line ``sbatch: Job 7 to start at T
    using 3 processors on nodes n[01-03] in partition main``, or None if it says no such
    thing."""
    m = re.search(r"on nodes (\S+) in partition (\S+)", text)
    return (m.group(1), m.group(2)) if m else None


_KV = re.compile(r"(\w+)=(.*?)(?= \w+=|\s*$)")


def parse_jobcomp_line(line: str) -> dict[str, str]:
    """``Key=Value Key=Value ...`` -> dict (values may contain spaces, not `` Word=``)."""
    return {m.group(1): m.group(2) for m in _KV.finditer(line.strip())}


def parse_jobcomp(text: str) -> list[CompletedJob]:
    """Lines of a ``jobcomp/filetxt`` log (``JobCompLoc``), in file order (order of completion)."""
    jobs = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        f = parse_jobcomp_line(line)
        try:
            limit = f.get("TimeLimit", "UNLIMITED")
            jobs.append(
                CompletedJob(
                    job_id=int(f["JobId"]),
                    name=f.get("Name", ""),
                    user=re.sub(r"\(\d+\)$", "", f.get("UserId", "")),
                    state=f.get("JobState", ""),
                    partition=f.get("Partition", ""),
                    time_limit_s=None
                    if limit.upper() in ("UNLIMITED", "INFINITE", "PARTITION_LIMIT")
                    else int(limit) * 60,
                    submit_time=_parse_iso_local(f.get("SubmitTime", "Unknown")),
                    eligible_time=_parse_iso_local(f.get("EligibleTime", "Unknown")),
                    start_time=_parse_iso_local(f.get("StartTime", "Unknown")),
                    end_time=_parse_iso_local(f.get("EndTime", "Unknown")),
                    nodes=int(f.get("NodeCnt", 0)),
                    cpus=int(f.get("ProcCnt", 0)),
                    node_list=f.get("NodeList", ""),
                    exit_code=f.get("ExitCode", ""),
                    fields=f,
                )
            )
        except (KeyError, ValueError) as exc:
            raise SlurmError(
                f"jobcomp line {number}: cannot parse ({exc}): {line[:200]!r}"
            ) from None
    return jobs


#: stderr fragments that mean the controller could not be reached.
_UNREACHABLE = (
    "unable to contact slurm controller",
    "connection refused",
    "connect failure",
    "socket timed out",
    "zero bytes were transmitted",
    "unable to establish",
    "communication connection failure",
    "no route to host",
)
#: stderr fragments that mean the command found no configuration it could read (Slurm's commands
#: print "fatal: Could not establish a configuration source" when there is no slurm.conf, no
#: SLURM_CONF and no configless slurmctld to fetch one from).
_NO_CONFIG = (
    "s_p_parse_file",
    "unable to process configuration",
    "slurm_conf_init",
    "could not establish a configuration source",
)
_MUNGE = ("munge", "authentication", "invalid credential")
#: stderr fragments of a request Slurm refused for the caller's rights.
_DENIED = ("invalid user id", "access/permission denied", "access denied")


def _no_config(stderr: str) -> bool:
    """Whether a Slurm command's stderr says it found no configuration it could read."""
    low = stderr.lower()
    return any(s in low for s in _NO_CONFIG)


def classify_error(argv: list[str], returncode: int, stderr: str, slurm_conf: str) -> SlurmError:
    """The :class:`SlurmError` for a Slurm command that exited with ``returncode``
    (:class:`~tjap.core.errors.SlurmUnreachableError` when Slurm could not be reached)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    first = lines[0] if lines else f"exit status {returncode}, no error message"
    # prefer the line that says what went wrong over generic "error:" preambles
    for ln in lines:
        low = ln.lower()
        if any(s in low for s in _UNREACHABLE + _NO_CONFIG + _MUNGE):
            first = ln
            break
    low = stderr.lower()
    cmd = Path(argv[0]).name
    where = f"SLURM_CONF={slurm_conf}"
    if _no_config(stderr):  # before slurmctld: without a configuration no command finds it
        line = next(ln for ln in lines if any(s in ln.lower() for s in _NO_CONFIG))
        return SlurmUnreachableError(
            f"cannot read the Slurm configuration: {line}; set SLURM_CONF to the "
            f"cluster's slurm.conf, or run on a node of the cluster ({where})"
        )
    if any(s in low for s in _UNREACHABLE):
        return SlurmUnreachableError(
            f"cannot reach slurmctld: {first}; is Slurm running? "
            f"({where}: start slurmctld, or point SLURM_CONF at the "
            f"running cluster's slurm.conf)"
        )
    if "munge" in low:
        return SlurmUnreachableError(
            f"munge authentication failed: {first}; is munged running? ({where})"
        )
    if any(s in low for s in _DENIED):
        return SlurmError(
            f"{cmd} refused (exit {returncode}): {first}: this account may not "
            f"change that job (another user's job needs a Slurm operator account "
            f"or the SlurmUser)"
        )
    return SlurmError(f"{cmd} failed (exit {returncode}): {first}")


# -- the client --------------------------------------------------------------------------------


class SlurmClient:
    """Runs Slurm's commands against the cluster that ``env`` (merged over ``os.environ``) points
    at, typically ``{"SLURM_CONF": path}``; each command times out after ``timeout_s``."""

    def __init__(self, env: dict | None = None, timeout_s: float = 30):
        self.env = dict(os.environ)
        if env:
            self.env.update({str(k): str(v) for k, v in env.items()})
        self.timeout_s = float(timeout_s)
        #: when set, the command running is killed and :class:`SlurmStopped` raised
        #: (:meth:`stopping`; None: commands run to their end or their timeout)
        self.stop: threading.Event | None = None

    @property
    def slurm_conf(self) -> str:
        return self.env.get("SLURM_CONF", "/etc/slurm/slurm.conf (default)")

    @contextmanager
    def stopping(self, event: threading.Event | None) -> Iterator[SlurmClient]:
        """Within the block, a command running when ``event`` is set (or started after) is killed
        and raises :class:`SlurmStopped` within :data:`POLL_S` seconds; ``None`` lets commands run
        to their end. The event may be set from a signal handler or another thread."""
        previous, self.stop = self.stop, event
        try:
            yield self
        finally:
            self.stop = previous

    def run(self, argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess:
        """Run a Slurm command; a missing binary, a timeout, a configuration the command cannot
        read or (with ``check``) any other non-zero exit raise :class:`SlurmError`. The command is
        killed when the wait for it ends early: an exception from a signal handler (Ctrl-C,
        ``tjap``'s SIGTERM) goes on at once, as does :class:`SlurmStopped` (:meth:`stopping`)."""
        env = dict(self.env, SLURM_TIME_FORMAT="%s")
        conf = self.env.get("SLURM_CONF")
        if conf and not Path(conf).is_file():
            # Slurm's commands would retry for 60 s before giving up
            raise SlurmUnreachableError(
                f"cannot read the Slurm configuration: {conf} does not "
                f"exist (SLURM_CONF={conf}: point it at the cluster's "
                f"slurm.conf)"
            )
        try:
            child = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",  # garbled bytes reach the readers, which name the bad line
            )
        except FileNotFoundError:
            raise SlurmUnreachableError(
                f"{argv[0]} not found on PATH: Slurm's commands are not "
                f"installed (Debian/Ubuntu: {INSTALL_HINT}) or not on "
                f"PATH"
            ) from None
        stdout, stderr = self._wait(child, Path(argv[0]).name)
        proc = subprocess.CompletedProcess(argv, child.returncode, stdout, stderr)
        # without a configuration no command does anything: never a result for the caller to read
        if proc.returncode != 0 and (check or _no_config(proc.stderr)):
            raise classify_error(argv, proc.returncode, proc.stderr, self.slurm_conf)
        return proc

    def _wait(self, child: subprocess.Popen, name: str) -> tuple[str, str]:
        """``child``'s stdout and stderr once it has ended, waited for in steps of
        :data:`POLL_S` s (a signal handler runs between them); past ``timeout_s``, when
        :attr:`stop` is set or when the wait is interrupted, it is killed and reaped first."""
        deadline = time.monotonic() + self.timeout_s
        try:
            while True:
                if self.stop is not None and self.stop.is_set():
                    raise SlurmStopped(f"{name} stopped")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SlurmUnreachableError(
                        f"{name} timed out after {self.timeout_s:g} s; is slurmctld "
                        f"responding? (SLURM_CONF={self.slurm_conf})"
                    )
                try:
                    return child.communicate(timeout=min(POLL_S, left))
                except subprocess.TimeoutExpired:
                    continue
        except BaseException:
            child.kill()
            child.wait()
            for pipe in (child.stdout, child.stderr):
                if pipe is not None:
                    pipe.close()
            raise

    # -- jobs --------------------------------------------------------------------------------
    def submit(
        self,
        *,
        nodes_or_tasks: int,
        time_limit_min: int,
        command: str,
        name: str | None = None,
        after: list[int] | None = None,
        extra_args: list[str] | tuple[str, ...] = (),
        output: str | None = None,
        chdir: str | None = None,
    ) -> int:
        """``sbatch --parsable -n N -t M [-J name] [--dependency=afterany:a:b] [-o output]
        [--chdir dir] EXTRA --wrap COMMAND``; returns the job id. ``nodes_or_tasks`` is the number
        of tasks (one CPU each; on the local cluster one CPU stands for one trace node). Without
        ``output`` Slurm writes ``slurm-<id>.out`` in the working directory (use ``/dev/null``).
        A rejected job raises :class:`SlurmError` with sbatch's message."""
        n = int(nodes_or_tasks)
        limit = int(time_limit_min)
        if n < 1:
            raise SlurmError(f"nodes_or_tasks must be >= 1, got {nodes_or_tasks!r}")
        if limit < 1:
            raise SlurmError(f"time_limit_min must be >= 1, got {time_limit_min!r}")
        argv = ["sbatch", "--parsable", "-n", str(n), "-t", str(limit)]
        if name:
            argv += ["-J", name]
        if after:
            argv.append("--dependency=afterany:" + ":".join(str(int(j)) for j in after))
        if output is not None:
            argv += ["-o", output]
        if chdir is not None:
            argv += ["--chdir", str(chdir)]
        argv += list(extra_args)
        argv += ["--wrap", command]
        proc = self.run(argv, check=False)
        if proc.returncode != 0:
            err = classify_error(argv, proc.returncode, proc.stderr, self.slurm_conf)
            if str(err).startswith("sbatch failed"):
                msg = " ".join(ln.strip() for ln in proc.stderr.splitlines() if ln.strip())
                raise SlurmError(f"sbatch rejected the job (-n {n} -t {limit}): {msg}")
            raise err
        out = proc.stdout.strip().splitlines()
        m = re.match(r"(\d+)", out[-1]) if out else None
        if not m:
            raise SlurmError(f"sbatch printed no job id: {proc.stdout!r} {proc.stderr!r}")
        return int(m.group(1))

    def queue(self, *, states: str | None = None, user: str | None = None) -> list[QueuedJob]:
        """Jobs in ``squeue`` (by default every state squeue shows: pending, running, suspended,
        completing, configuring), in squeue's order (running first, then by priority)."""
        argv = ["squeue", "-h", "-o", SQUEUE_FORMAT]
        if states:
            argv += ["-t", states]
        if user:
            argv += ["-u", user]
        return parse_squeue(self.run(argv).stdout)

    def nodes(self) -> list[NodeState]:
        """Nodes in ``sinfo -N``, one entry per node."""
        return parse_sinfo(self.run(["sinfo", "-N", "-h", "-o", SINFO_FORMAT]).stdout)

    def cancel(self, job_ids, *, missing_ok: bool = True) -> None:
        """``scancel`` the given job ids. With ``missing_ok`` (the default) jobs that have already
        ended are no error; any other scancel error raises."""
        ids = [str(int(j)) for j in job_ids]
        if not ids:
            return
        proc = self.run(["scancel", *ids], check=False)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        benign = ("invalid job id specified", "already completing or completed")
        bad = [ln for ln in lines if not (missing_ok and any(b in ln.lower() for b in benign))]
        if bad or (proc.returncode != 0 and (not lines or not missing_ok)):
            raise classify_error(
                ["scancel"], proc.returncode or 1, "\n".join(bad or lines), self.slurm_conf
            )

    def completed(self, jobcomp_path) -> list[CompletedJob]:
        """Completed jobs recorded in the ``jobcomp/filetxt`` log at ``jobcomp_path``
        (``JobCompLoc``); a missing file raises (it is not the same as "no job completed")."""
        path = Path(jobcomp_path)
        try:
            text = path.read_text(errors="replace")
        except FileNotFoundError:
            raise SlurmError(
                f"jobcomp log {path} does not exist (is JobCompType=jobcomp/filetxt "
                f"with JobCompLoc={path}?)"
            ) from None
        return parse_jobcomp(text)

    def ping(self) -> None:
        """Raise :class:`~tjap.core.errors.SlurmUnreachableError` unless the controller answers."""
        proc = self.run(["scontrol", "ping"], check=False)
        text = proc.stdout + proc.stderr
        if proc.returncode != 0 or "DOWN" in text:
            first = text.strip().splitlines()[0] if text.strip() else "no answer"
            raise SlurmUnreachableError(
                f"cannot reach slurmctld: {first}; is Slurm running? "
                f"(SLURM_CONF={self.slurm_conf}: start slurmctld, or "
                f"point SLURM_CONF at the running cluster's slurm.conf)"
            )

    # -- the placement service's operations (tjap slurm place) -------------------------------
    def pending(
        self,
        *,
        partition: str | None = None,
        users=(),
        accounts=(),
        job_id: int | None = None,
        states: str = "PENDING",
    ) -> list[PendingJob]:
        """Pending jobs (``squeue -t PENDING``; ``states="PENDING,RUNNING"`` adds the running
        ones, with their start times), optionally of one partition, some users or accounts, or
        one job; squeue's own order."""
        argv = ["squeue", "-h", "-t", states, "-o", PENDING_FORMAT]
        if partition:
            argv += ["-p", partition]
        if users:
            argv += ["-u", ",".join(users)]
        if accounts:
            argv += ["-A", ",".join(accounts)]
        if job_id is not None:
            argv += ["-j", str(int(job_id))]
        proc = self.run(argv, check=False)
        if proc.returncode != 0:
            if job_id is not None and "invalid job id" in proc.stderr.lower():
                return []  # the job has left Slurm's memory
            raise classify_error(argv, proc.returncode, proc.stderr, self.slurm_conf)
        return parse_pending(proc.stdout)

    def job_state(self, job_id: int) -> tuple[str, str] | None:
        """``(state, reason)`` of a job in squeue (any state), or None once it has left."""
        argv = ["squeue", "-h", "-t", "all", "-j", str(int(job_id)), "-o", "%T|%r"]
        proc = self.run(argv, check=False)
        if proc.returncode != 0:
            if "invalid job id" in proc.stderr.lower():
                return None
            raise classify_error(argv, proc.returncode, proc.stderr, self.slurm_conf)
        line = proc.stdout.strip().splitlines()
        if not line:
            return None
        state, _, reason = line[0].partition("|")
        return state.strip().upper(), reason.strip()

    def update_job(self, job_id: int, **fields) -> None:
        """``scontrol update JobId=ID Key=Value ...``; a refusal raises :class:`SlurmError`
        with scontrol's message. Values may not contain whitespace (``""`` clears a field)."""
        pairs = []
        for key, value in fields.items():
            value = str(value)
            if re.search(r"\s", value) or not re.fullmatch(r"[A-Za-z]+", key):
                raise SlurmError(f"scontrol update: bad field {key}={value!r}")
            pairs.append(f"{key}={value}")
        self.run(["scontrol", "update", f"JobId={int(job_id)}", *pairs])

    def batch_script(self, job_id: int) -> str | None:
        """A batch job's script (``scontrol write batch_script ID -``), or None when Slurm has
        none to give (not a batch job, gone, or not this account's job); an unreachable
        controller raises."""
        argv = ["scontrol", "write", "batch_script", str(int(job_id)), "-"]
        proc = self.run(argv, check=False)
        if proc.returncode != 0:
            err = classify_error(argv, proc.returncode, proc.stderr, self.slurm_conf)
            if isinstance(err, SlurmUnreachableError):
                raise err
            return None
        return proc.stdout

    def release(self, job_id: int) -> None:
        """``scontrol release ID``."""
        self.run(["scontrol", "release", str(int(job_id))])

    def hold(self, job_id: int, *, user: bool = True) -> None:
        """``scontrol uhold ID`` (a user hold, the owner may release it) or, with
        ``user=False``, ``scontrol hold ID`` (an administrator's hold)."""
        self.run(["scontrol", "uhold" if user else "hold", str(int(job_id))])

    def drain(self, nodes: str, reason: str = "tjap") -> None:
        """``scontrol update NodeName=NODES State=DRAIN Reason=REASON`` (a hostlist)."""
        self.run(["scontrol", "update", f"NodeName={nodes}", "State=DRAIN", f"Reason={reason}"])

    def resume(self, nodes: str) -> None:
        """``scontrol update NodeName=NODES State=RESUME``."""
        self.run(["scontrol", "update", f"NodeName={nodes}", "State=RESUME"])

    def partition_nodes(
        self, partition: str | None = None, nodelist: str | None = None
    ) -> list[NodeState]:
        """Nodes in ``sinfo -N``, of one partition and/or a hostlist."""
        argv = ["sinfo", "-N", "-h", "-o", SINFO_FORMAT]
        if partition:
            argv += ["-p", partition]
        if nodelist:
            argv += ["-n", nodelist]
        return parse_sinfo(self.run(argv).stdout)

    def default_partition(self) -> str:
        """The default partition (the one ``sinfo`` marks with ``*``)."""
        names = self.run(["sinfo", "-h", "-o", "%P"]).stdout.split()
        for name in names:
            if name.endswith("*"):
                return name[:-1]
        raise SlurmError(
            "Slurm has no default partition; name one with --partition "
            f"(partitions: {', '.join(names) or 'none'})"
        )

    def version(self) -> str:
        """The Slurm version of the client tools, as ``scontrol --version`` prints it (e.g.
        ``slurm 24.11.5``, ``slurm-wlm 22.05.8``)."""
        return self.run(["scontrol", "--version"]).stdout.strip()

    def show_topology(self) -> str:
        """``scontrol show topology``'s text; an unreachable controller raises (scontrol
        itself exits 0 then)."""
        argv = ["scontrol", "show", "topology"]
        proc = self.run(argv, check=False)
        text = proc.stdout + proc.stderr
        if proc.returncode != 0 or "unable to contact" in text.lower():
            raise classify_error(argv, proc.returncode or 1, text, self.slurm_conf)
        return text

    def test_only(self, nodes: int, partition: str | None = None) -> tuple[str, str] | None:
        """Where Slurm would start a job of ``nodes`` whole nodes now (``sbatch --test-only -N n
        --exclusive``): ``(hostlist, partition)``, or None when it says nothing of nodes."""
        argv = ["sbatch", "--test-only", "-N", str(int(nodes)), "--exclusive", "-o", "/dev/null"]
        if partition:
            argv += ["-p", partition]
        proc = self.run(argv + ["--wrap", "true"], check=False)
        if proc.returncode != 0:
            raise classify_error(argv, proc.returncode, proc.stderr, self.slurm_conf)
        return parse_test_only(proc.stdout + proc.stderr)

    # -- conversion --------------------------------------------------------------------------
    def to_jobs(
        self,
        queue: list[QueuedJob] | None = None,
        *,
        size: str = "cpus",
        unlimited_limit_s: int = 365 * 86400,
        include_held: bool = True,
    ):
        """The running and pending jobs as a :class:`~tjap.placement.batch.jobs.Jobs` table.

        Mapping (one row per job, times on the Unix clock, ``epoch=0``):

        - ``job_id`` = Slurm's job id; ``submit_s`` = submit time;
        - ``nodes`` = CPUs requested (``size="cpus"``, the local cluster's convention that one CPU
          stands for one trace node) or Slurm nodes (``size="nodes"``, for a real cluster that
          allocates whole nodes);
        - ``limit_s`` = the time limit (``unlimited_limit_s`` for an unlimited job);
        - ``runtime_s`` = the limit, since the real runtime is unknown until the job ends;
        - ``user`` = user names mapped to indices; ``depends_on`` = the first job named in the
          dependency if it is itself in the table, else none;
        - ``recorded_start_s`` = start time of running jobs, -1 for pending ones;
          ``recorded_end_s`` = -1.

        Jobs in other states (completing is counted as running) are left out; with
        ``include_held=False`` pending jobs of priority 0 (held) are left out too.
        """
        from tjap.placement.batch.jobs import Jobs

        if size not in ("cpus", "nodes"):
            raise SlurmError(f"size must be 'cpus' or 'nodes', got {size!r}")
        if queue is None:
            queue = self.queue()
        rows = [j for j in queue if j.pending or j.running]
        if not include_held:
            rows = [j for j in rows if not (j.pending and j.priority == 0)]
        ids = {j.job_id for j in rows}

        def dep(j):
            for d in j.depends_on:
                if d in ids and d != j.job_id:
                    return d
            return -1

        return Jobs.build(
            job_id=[j.job_id for j in rows],
            submit_s=[j.submit_time for j in rows],
            nodes=[max(1, j.cpus if size == "cpus" else j.nodes) for j in rows],
            limit_s=[j.time_limit_s or unlimited_limit_s for j in rows],
            runtime_s=[j.time_limit_s or unlimited_limit_s for j in rows],
            user=[j.user for j in rows] if rows else None,
            depends_on_id=[dep(j) for j in rows],
            recorded_start_s=[j.start_time if (j.running and j.start_time) else -1 for j in rows],
            recorded_end_s=[-1] * len(rows),
            epoch=0,
            source=f"slurm squeue ({self.slurm_conf})",
            meta={"captured_at": int(time.time()), "size": size},
        )


# -- what a failure means --------------------------------------------------------------------
#: Messages of Slurm errors that no retry can fix.
_FATAL = (
    "not installed",
    "does not exist",
    "no default partition",
    "cannot read the slurm configuration",
)


def transient(exc: SlurmError) -> bool:
    """True for a Slurm failure worth retrying (unreachable controller, timeout, ...)."""
    text = str(exc).lower()
    return not any(f in text for f in _FATAL)


def unreachable(exc: SlurmError) -> bool:
    """True when the controller did not answer (the pass cannot go on)."""
    text = str(exc).lower()
    return "cannot reach" in text or "timed out" in text
