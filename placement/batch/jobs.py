"""The job table of the batch-queue simulator: one row per job, stored as columns (NumPy arrays).

Times are integer seconds on the trace's own clock. For sacct traces that clock is Unix time; for
SWF traces it is seconds since the trace start, and ``epoch`` (from the ``UnixStartTime`` header,
when present) converts it to Unix time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tjap.core.errors import InvalidInputError

#: Columns of a :class:`Jobs` table, all int64 arrays of one length.
COLUMNS = (
    "job_id",
    "submit_s",
    "nodes",
    "limit_s",
    "runtime_s",
    "user",
    "depends_on",
    "recorded_start_s",
    "recorded_end_s",
)


@dataclass(frozen=True)
class Jobs:
    """Jobs of a workload, sorted by (submit time, job id).

    Columns
    -------
    job_id : the trace's id.
    submit_s : submission time.
    nodes : requested nodes (at least 1).
    limit_s : requested time limit (at least 1 s).
    runtime_s : actual runtime, clipped to the limit (Slurm kills a job at its limit).
    user : user index, 0..num_users-1 (fair-share groups jobs by it).
    depends_on : row index of the job this one starts after (afterany), or -1.
    recorded_start_s, recorded_end_s : start and end recorded in the trace, or -1 if unknown;
        used to warm-start a replay from the trace's own state and to compare waits.
    """

    job_id: np.ndarray
    submit_s: np.ndarray
    nodes: np.ndarray
    limit_s: np.ndarray
    runtime_s: np.ndarray
    user: np.ndarray
    depends_on: np.ndarray
    recorded_start_s: np.ndarray
    recorded_end_s: np.ndarray
    epoch: int | None = None
    source: str = ""
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        n = len(self.job_id)
        for name in COLUMNS:
            column = np.ascontiguousarray(getattr(self, name), dtype=np.int64)
            if column.shape != (n,):
                raise InvalidInputError(
                    f"jobs column {name} has shape {column.shape}, expected ({n},)"
                )
            column.setflags(write=False)
            object.__setattr__(self, name, column)
        if n == 0:
            return
        if (self.nodes < 1).any():
            raise InvalidInputError(
                f"job {self.job_id[np.argmax(self.nodes < 1)]}: nodes must be >= 1"
            )
        if (self.limit_s < 1).any():
            raise InvalidInputError(
                f"job {self.job_id[np.argmax(self.limit_s < 1)]}: time limit must be >= 1 s"
            )
        if (self.runtime_s < 0).any() or (self.runtime_s > self.limit_s).any():
            bad = np.argmax((self.runtime_s < 0) | (self.runtime_s > self.limit_s))
            raise InvalidInputError(f"job {self.job_id[bad]}: runtime must lie in [0, limit]")
        if (self.user < 0).any():
            raise InvalidInputError("user indices must be >= 0")
        if ((self.depends_on < -1) | (self.depends_on >= n)).any():
            raise InvalidInputError("depends_on must be a row index or -1")
        if (self.depends_on == np.arange(n)).any():
            raise InvalidInputError("a job cannot depend on itself")
        order = np.lexsort((self.job_id, self.submit_s))
        if (order != np.arange(n)).any():
            raise InvalidInputError("jobs must be sorted by (submit_s, job_id); use Jobs.build")

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        *,
        submit_s,
        nodes,
        limit_s,
        runtime_s,
        job_id=None,
        user=None,
        depends_on_id=None,
        recorded_start_s=None,
        recorded_end_s=None,
        epoch=None,
        source="",
        meta=None,
    ) -> "Jobs":
        """A table from columns in any order: sorts by (submit, id), clips runtimes to limits,
        maps user labels to indices and dependencies (given as job ids, -1 for none) to rows."""
        submit_s = np.asarray(submit_s, dtype=np.int64)
        n = submit_s.size
        job_id = np.arange(1, n + 1) if job_id is None else np.asarray(job_id, dtype=np.int64)
        if np.unique(job_id).size != n:
            raise InvalidInputError("job ids must be unique")
        limit_s = np.asarray(limit_s, dtype=np.int64)
        runtime_s = np.minimum(np.asarray(runtime_s, dtype=np.int64), limit_s)
        if user is None:
            user = np.zeros(n, np.int64)
        else:
            _, user = np.unique(np.asarray(user), return_inverse=True)
        none = np.full(n, -1, np.int64)
        order = np.lexsort((job_id, submit_s))
        depends_on = none.copy()
        if depends_on_id is not None and n:
            dep_ids = np.asarray(depends_on_id, dtype=np.int64)[order]
            by_id = np.argsort(job_id[order], kind="stable")  # rows in job id order
            sorted_ids = job_id[order][by_id]
            at = np.minimum(np.searchsorted(sorted_ids, dep_ids), n - 1)
            found = (dep_ids >= 0) & (sorted_ids[at] == dep_ids)
            depends_on = np.where(found, by_id[at], -1)

        def col(values):
            return none if values is None else np.asarray(values, dtype=np.int64)[order]

        return cls(
            job_id=job_id[order],
            submit_s=submit_s[order],
            nodes=np.asarray(nodes, dtype=np.int64)[order],
            limit_s=limit_s[order],
            runtime_s=runtime_s[order],
            user=np.asarray(user, dtype=np.int64)[order],
            depends_on=depends_on,
            recorded_start_s=col(recorded_start_s),
            recorded_end_s=col(recorded_end_s),
            epoch=epoch,
            source=source,
            meta=dict(meta or {}),
        )

    # -- views ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def num_users(self) -> int:
        return int(self.user.max()) + 1 if len(self) else 0

    @property
    def max_nodes(self) -> int:
        return int(self.nodes.max()) if len(self) else 0

    def take(self, rows) -> "Jobs":
        """The sub-table of the given rows (in order); dependencies outside it are dropped."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.dtype == bool or (rows.size and (np.diff(rows) <= 0).any()):
            raise InvalidInputError("rows must be increasing row indices")
        new_row = np.full(len(self), -1, np.int64)
        new_row[rows] = np.arange(rows.size)
        dep = self.depends_on[rows]
        depends_on = np.where(dep >= 0, new_row[np.maximum(dep, 0)], -1)
        values = {name: getattr(self, name)[rows] for name in COLUMNS}
        values["depends_on"] = depends_on
        return Jobs(**values, epoch=self.epoch, source=self.source, meta=dict(self.meta))

    def between(self, start_s: int | None = None, end_s: int | None = None) -> "Jobs":
        """Jobs submitted in [start_s, end_s) on the trace's clock."""
        keep = np.ones(len(self), bool)
        if start_s is not None:
            keep &= self.submit_s >= start_s
        if end_s is not None:
            keep &= self.submit_s < end_s
        return self.take(np.flatnonzero(keep))

    def to_unix(self, t_s) -> np.ndarray:
        """Times on the trace clock as Unix seconds (needs ``epoch`` for SWF traces)."""
        if self.epoch is None:
            raise InvalidInputError(
                f"{self.source or 'this trace'} has no absolute start time "
                "(SWF header UnixStartTime); dates cannot be used with it"
            )
        return np.asarray(t_s, dtype=np.int64) + self.epoch

    def from_unix(self, t_unix) -> np.ndarray:
        if self.epoch is None:
            self.to_unix(0)  # raises the explanatory error
        return np.asarray(t_unix, dtype=np.int64) - self.epoch

    def __repr__(self) -> str:
        span = f", submits {self.submit_s[0]}..{self.submit_s[-1]} s" if len(self) else ""
        return f"Jobs({len(self)} jobs, {self.num_users} users{span}, source={self.source!r})"
