"""The trace loaders' rules one line at a time, in plain Python: the oracle the vectorised readers
of tjap.placement.batch.traces (a Numba byte scan plus NumPy columns) are checked against."""

from __future__ import annotations

from tjap.placement.batch import traces as t


def _swf_job(text: str) -> t._Job:
    """One SWF line as a job: processors are nodes; -1 fields are unknown."""
    (
        job_id,
        submit,
        wait,
        run,
        allocated,
        _cpu,
        _memory,
        requested,
        requested_time,
        _req_memory,
        _status,
        user,
        _group,
        _executable,
        _queue,
        _partition,
        preceding,
        _think,
    ) = t._swf_numbers(text)
    nodes = requested if requested > 0 else allocated
    if nodes <= 0:
        raise t._Skip("no processor count", malformed=False)
    if run < 0:
        raise t._Skip("unknown runtime", malformed=False)
    if submit < 0:
        raise t._Skip("unknown submit time", malformed=False)
    start = submit + wait if wait >= 0 else -1
    return t._Job(
        raw_id=job_id,
        submit=submit,
        nodes=nodes,
        limit=requested_time if requested_time > 0 else None,
        runtime=run,
        user=user,
        depends_on_id=preceding if preceding > 0 else -1,
        start=start,
        end=start + run if start >= 0 else -1,
        extra_fields=len(text.split()) - len(t._SWF_FIELDS),
    )


def _sacct_job(layout, text: str) -> t._Job | None:
    """One sacct row as a job; None for a job step (``123.batch``)."""
    fields = layout.fields(text)
    value = {key: fields[i].strip() for key, i in layout.index.items()}
    raw_id = value["job_id"]
    if "." in raw_id:
        return None
    if not raw_id:
        raise t._Skip("empty JobID")
    submit, start, end = (layout.time(key, value[key]) for key in ("submit", "start", "end"))
    limit = layout.limit(value["limit"])
    nodes = layout.count("nodes", value["nodes"])
    if submit is None:
        raise t._Skip("unknown submit time", malformed=False)
    if nodes < 1:
        raise t._Skip("no node count", malformed=False)
    if start is None or end is None:
        raise t._Skip("unknown runtime", malformed=False)
    if end < start:
        raise t._Skip("end before start", malformed=False)
    return t._Job(
        raw_id=layout.count("job_id", raw_id) if raw_id.isdecimal() else raw_id,
        submit=submit,
        nodes=nodes,
        limit=limit,
        runtime=end - start,
        user=value["user"],
        depends_on_id=-1,
        start=start,
        end=end,
    )


def _read_jobs(path, fmt, lines, parse_row) -> t._Parsed:
    """Parse each data line (None: not a job, ignored), skipping bad lines and later duplicates
    of a job id; raise if the file is not of the format."""
    jobs, skips, seen = [], t._Skips(), set()
    count = ignored = first_ignored = 0
    for number, text in lines:
        count += 1
        try:
            job = parse_row(text)
            if job is None:
                ignored += 1
                first_ignored = first_ignored or number
                continue
            if job.raw_id in seen:
                raise t._Skip("duplicate job id")
        except t._Skip as skip:
            skips.add(number, skip, text)
            if skips.malformed == count == t._GIVE_UP_AFTER:
                raise t._not_format(path, fmt, skips) from None
            continue
        seen.add(job.raw_id)
        jobs.append(job._replace(line=number))
    if count == 0:
        raise t.InvalidInputError(
            f"trace file {path} has no job lines; is it {t._FORMAT_NAMES[fmt]}?"
        )
    if skips.malformed == count:
        raise t._not_format(path, fmt, skips)
    if not jobs:
        raise t._no_usable_jobs(path, count, skips)
    return t._Parsed(jobs, skips, count, ignored, first_ignored)


def load_swf(path, ignore_dependencies=False):
    header: dict = {}

    def data_lines():
        for number, text in t._numbered_lines(path):
            if not text.lstrip().startswith(";"):
                yield number, text
                continue
            match = t._SWF_HEADER.match(text.lstrip())
            if match and match[1] not in header:
                header[match[1]] = t._int_or_text(match[2])

    t._check_file(path)
    parsed = _read_jobs(path, "swf", data_lines(), _swf_job)
    epoch = header.get("UnixStartTime")
    return t._build(
        path,
        "swf",
        parsed,
        header=header,
        meta={},
        epoch=epoch if isinstance(epoch, int) else None,
        ignore_dependencies=ignore_dependencies,
    )


def load_sacct(path):
    t._check_file(path)
    layout, declared, lines = t._sacct_preamble(path, t._numbered_lines(path))
    parsed = _read_jobs(path, "sacct", lines, lambda text: _sacct_job(layout, text))
    meta = {"steps_skipped": parsed.ignored}
    if declared is not None:
        meta["declared_count"] = declared
    return t._build(path, "sacct", parsed, header={"columns": layout.columns}, meta=meta, epoch=0)
