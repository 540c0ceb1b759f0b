"""The accounting records reader (tjap.placement.slurm.accounting): every kind of odd record in
sacct --parsable2 output and in the jobcomp/filetxt log, time zones and DST, and the errors."""

import dataclasses
import gzip
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.accounting import (
    REASONS,
    SACCT_COMMAND,
    Allocation,
    Skipped,
    _Clock,
    detect_format,
    read_allocations,
    resolve_timezone,
    sniff_format,
)

HEADER = "JobID|Partition|Submit|Start|End|NNodes|NodeList|State"

# As sacct 22.05 prints them (sacct --allusers --allocations --duplicates --parsable2 ...).
SACCT = """\
JobID|Partition|Submit|Start|End|NNodes|NodeList|State
812345|compute|2026-11-02T08:14:07|2026-11-02T08:14:09|2026-11-02T09:02:51|4|c[101-104]|COMPLETED
812346_1|compute|2026-11-02T08:14:30|2026-11-02T08:14:31|2026-11-02T08:50:00|2|c[105-106]|COMPLETED
812346_[2-8%2]|compute|2026-11-02T08:14:30|Unknown|Unknown|2|None assigned|PENDING
812350|compute|2026-11-02T08:20:00|2026-11-02T08:21:00|2026-11-02T08:40:00|8|c[201-208]|REQUEUED
812350|compute|2026-11-02T08:40:05|2026-11-02T08:45:00|2026-11-02T09:30:00|8|c[301-308]|COMPLETED
812360+0|compute|2026-11-02T08:30:00|2026-11-02T08:31:00|2026-11-02T08:59:00|1|c110|COMPLETED
812360+1|gpu|2026-11-02T08:30:00|2026-11-02T08:31:00|2026-11-02T08:59:00|2|g[01-02]|COMPLETED
812370|compute|2026-11-02T09:00:00|2026-11-02T09:01:00|Unknown|16|c[401-416]|RUNNING
812371|compute|2026-11-02T09:00:30|Unknown|Unknown|32|None assigned|PENDING
812372|compute|2026-11-02T09:00:40|2026-11-02T09:05:00|2026-11-02T09:05:00|2|None assigned|CANCELLED by 10234
812373|compute|2026-11-02T09:01:00|2026-11-02T09:01:02|2026-11-02T09:20:00|3|c[501-502,510]|TIMEOUT
"""

# The same jobs in the jobcomp/filetxt log (22.05's line layout; a log holds ended jobs only).
JOBCOMP = """\
JobId=812345 UserId=alice(10234) GroupId=hpc(5000) Name=train JobState=COMPLETED Partition=compute TimeLimit=120 StartTime=2026-11-02T08:14:09 EndTime=2026-11-02T09:02:51 NodeList=c[101-104] NodeCnt=4 ProcCnt=256 WorkDir=/tmp/run ReservationName= Tres=cpu=256,mem=1000G,node=4,billing=256 Account=proj1 QOS=normal WcKey= Cluster=cl1 SubmitTime=2026-11-02T08:14:07 EligibleTime=2026-11-02T08:14:07 DerivedExitCode=0:0 ExitCode=0:0 
JobId=812347 UserId=bob(10235) GroupId=hpc(5000) Name=sweep 1 JobState=COMPLETED Partition=compute TimeLimit=60 StartTime=2026-11-02T08:14:31 EndTime=2026-11-02T08:50:00 NodeList=c[105-106] NodeCnt=2 ProcCnt=128 WorkDir=/tmp/bob ReservationName= Tres=cpu=128,mem=500G,node=2,billing=128 Account=proj2 QOS=normal WcKey= Cluster=cl1 SubmitTime=2026-11-02T08:14:30 EligibleTime=2026-11-02T08:14:30 ArrayJobId=812346 ArrayTaskId=1 DerivedExitCode=0:0 ExitCode=0:0 
JobId=812360 UserId=carol(10236) GroupId=hpc(5000) Name=coupled JobState=COMPLETED Partition=compute TimeLimit=60 StartTime=2026-11-02T08:31:00 EndTime=2026-11-02T08:59:00 NodeList=c110 NodeCnt=1 ProcCnt=64 WorkDir=/tmp/carol ReservationName= Tres=cpu=64,node=1 Account=proj3 QOS=normal WcKey= Cluster=cl1 SubmitTime=2026-11-02T08:30:00 EligibleTime=2026-11-02T08:30:00 HetJobId=812360 HetJobOffset=0 DerivedExitCode=0:0 ExitCode=0:0 
JobId=812361 UserId=carol(10236) GroupId=hpc(5000) Name=coupled JobState=COMPLETED Partition=gpu TimeLimit=60 StartTime=2026-11-02T08:31:00 EndTime=2026-11-02T08:59:00 NodeList=g[01-02] NodeCnt=2 ProcCnt=128 WorkDir=/tmp/carol ReservationName= Tres=cpu=128,node=2 Account=proj3 QOS=normal WcKey= Cluster=cl1 SubmitTime=2026-11-02T08:30:00 EligibleTime=2026-11-02T08:30:00 HetJobId=812360 HetJobOffset=1 DerivedExitCode=0:0 ExitCode=0:0 
JobId=812372 UserId=dave(10237) GroupId=hpc(5000) Name=big JobState=CANCELLED Partition=compute TimeLimit=600 StartTime=2026-11-02T09:05:00 EndTime=2026-11-02T09:05:00 NodeList=(null) NodeCnt=0 ProcCnt=0 WorkDir=/tmp/dave ReservationName= Tres=cpu=64,node=2 Account=proj4 QOS=normal WcKey= Cluster=cl1 SubmitTime=2026-11-02T09:00:40 EligibleTime=2026-11-02T09:00:40 DerivedExitCode=0:0 ExitCode=0:0 
JobId=812373 UserId=alice(10234) GroupId=hpc(5000) Name=long JobState=TIMEOUT Partition=compute TimeLimit=19 StartTime=2026-11-02T09:01:02 EndTime=2026-11-02T09:20:00 NodeList=c[501-502,510] NodeCnt=3 ProcCnt=192 WorkDir=/tmp/alice ReservationName= Tres=cpu=192,node=3 Account=proj1 QOS=normal WcKey= Cluster=cl1 SubmitTime=2026-11-02T09:01:00 EligibleTime=2026-11-02T09:01:00 DerivedExitCode=0:0 ExitCode=0:1 
"""

UTC = ZoneInfo("UTC")


def unix(text: str, zone: str = "UTC", fold: int = 0) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone), fold=fold).timestamp())


def read(text: str, **options) -> tuple[list[Allocation], Skipped]:
    skipped = Skipped()
    options.setdefault("timezone", "UTC")
    return list(read_allocations(text.splitlines(), skipped=skipped, **options)), skipped


def by_id(allocations):
    return {a.job_id: a for a in allocations}


def one_line_error(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    return message


def sacct(*rows: str, header: str = HEADER) -> str:
    return "\n".join([header, *rows]) + "\n"


# ------------------------------------------------------------------------- each kind of record


def test_plain_job_fields():
    allocations, _ = read(SACCT)
    job = by_id(allocations)["812345"]
    assert job == Allocation(
        "812345",
        "compute",
        unix("2026-11-02T08:14:07"),
        unix("2026-11-02T08:14:09"),
        unix("2026-11-02T09:02:51"),
        "COMPLETED",
        "c[101-104]",
        4,
        line=2,
        het=False,
    )


def test_the_sample_as_a_whole():
    allocations, skipped = read(SACCT)
    assert [a.job_id for a in allocations] == [
        "812345",
        "812346_1",
        "812350",
        "812350",
        "812360+0",
        "812360+1",
        "812370",
        "812373",
    ]
    assert skipped.counts == {"pending": 2, "not_started": 1}
    assert skipped.total == 3


def test_array_element_keeps_its_task_id():
    job = by_id(read(SACCT)[0])["812346_1"]
    assert (job.nodes, job.num_nodes, job.het, job.line) == ("c[105-106]", 2, False, 3)


def test_pending_array_range_is_skipped_as_pending():
    _, skipped = read(SACCT)
    assert (4, "812346_[2-8%2]") in skipped.examples["pending"]
    _, skipped = read(
        sacct("900_[5-10]|main|2026-11-02T08:00:00|Unknown|Unknown|1|None assigned|PENDING")
    )
    assert skipped.examples == {"pending": [(2, "900_[5-10]")]}


def test_requeued_runs_are_each_an_allocation():
    runs = [a for a in read(SACCT)[0] if a.job_id == "812350"]
    assert [(r.state, r.nodes, r.line) for r in runs] == [
        ("REQUEUED", "c[201-208]", 5),
        ("COMPLETED", "c[301-308]", 6),
    ]
    assert runs[0].start == unix("2026-11-02T08:21:00")
    assert runs[1].start == unix("2026-11-02T08:45:00")


def test_het_components_are_marked():
    jobs = by_id(read(SACCT)[0])
    assert jobs["812360+0"].het and jobs["812360+1"].het
    assert (jobs["812360+1"].partition, jobs["812360+1"].nodes) == ("gpu", "g[01-02]")
    assert not jobs["812345"].het


def test_steps_are_skipped():
    text = sacct(
        "500|main|2026-11-02T08:00:00|2026-11-02T08:00:01|2026-11-02T08:10:00|2|n[1-2]|COMPLETED",
        "500.batch||2026-11-02T08:00:01|2026-11-02T08:00:01|2026-11-02T08:10:00|1|n1|COMPLETED",
        "500.extern||2026-11-02T08:00:01|2026-11-02T08:00:01|2026-11-02T08:10:00|2|"
        "n[1-2]|COMPLETED",
        "500.0||2026-11-02T08:00:02|2026-11-02T08:00:02|2026-11-02T08:09:00|2|n[1-2]|FAILED",
        "501+0.batch||2026-11-02T08:00:01|2026-11-02T08:00:01|2026-11-02T08:10:00|1|n3|COMPLETED",
        "502_7.batch||2026-11-02T08:00:01|2026-11-02T08:00:01|2026-11-02T08:10:00|1|n4|COMPLETED",
    )
    allocations, skipped = read(text)
    assert [a.job_id for a in allocations] == ["500"]
    assert skipped.counts == {"step": 5}
    assert skipped.examples["step"][0] == (3, "500.batch")


def test_running_job_has_no_end():
    job = by_id(read(SACCT)[0])["812370"]
    assert job.end is None and job.state == "RUNNING" and job.num_nodes == 16


def test_pending_job_is_skipped():
    _, skipped = read(SACCT)
    assert (10, "812371") in skipped.examples["pending"]


def test_cancelled_before_start_is_not_started():
    allocations, skipped = read(SACCT)
    assert "812372" not in by_id(allocations)
    assert skipped.examples["not_started"] == [(11, "812372")]
    # a job that failed while pending, with no start at all
    _, skipped = read(
        sacct("600|main|2026-11-02T08:00:00|Unknown|2026-11-02T08:00:05|1|None assigned|FAILED")
    )
    assert skipped.counts == {"not_started": 1}


def test_state_is_its_first_word_upper_case():
    text = sacct(
        "700|main|2026-11-02T08:00:00|2026-11-02T08:00:01|2026-11-02T08:10:00|2|n[1-2]|"
        "CANCELLED by 10234",
        "701|main|2026-11-02T08:00:00|2026-11-02T08:00:01|2026-11-02T08:10:00|2|n[3-4]|"
        "out_of_memory",
    )
    assert [a.state for a in read(text)[0]] == ["CANCELLED", "OUT_OF_MEMORY"]


def test_duplicate_records_are_skipped():
    rows = SACCT.splitlines()[1:]
    allocations, skipped = read(SACCT + "\n".join(rows) + "\n")
    assert len(allocations) == 8
    assert skipped.counts["duplicate"] == 8
    assert skipped.examples["duplicate"][0] == (13, "812345")


def test_node_count_is_kept_as_recorded():
    job = read(
        sacct(
            "800|main|2026-11-02T08:00:00|2026-11-02T08:00:01|2026-11-02T08:10:00|3|"
            "n[1-4]|COMPLETED"
        )
    )[0][0]
    assert (job.num_nodes, job.nodes) == (3, "n[1-4]")


def test_malformed_lines_are_counted_and_reading_goes_on():
    good = "|main|2026-11-02T08:00:00|2026-11-02T08:00:01|2026-11-02T08:10:00|2|n[1-2]|COMPLETED"
    text = sacct(
        "1" + good,
        "2|main|2026-11-02T08:00:00|2026-11-02T08:00:01|2|n[1-2]|COMPLETED",  # 7 fields
        "3|main|2026-11-02T08:00:00|2026-11-02 08:00:01|2026-11-02T08:10:00|2|n[1-2]|X",
        "4|main|2026-11-02T08:00:00|2026-11-02T08:00:01|2026-11-02T08:10:00|2|n[1-|X",
        "5|main|2026-11-02T08:00:00|2026-11-02T08:00:01|2026-11-02T08:10:00|two|n1|X",
        "6|main|2026-11-02T08:00:00|2026-11-02T08:10:01|2026-11-02T08:10:00|2|n[1-2]|X",
        "7|main|2026-11-02T08:00:00|2026-13-02T08:00:01|2026-11-02T08:10:00|2|n[1-2]|X",
        "x7|main|2026-11-02T08:00:00|2026-11-02T08:00:01|2026-11-02T08:10:00|2|n1|X",
        "8" + good,
    )
    allocations, skipped = read(text)
    assert [a.job_id for a in allocations] == ["1", "8"]
    assert skipped.counts == {"malformed": 7}
    assert [line for line, _ in skipped.examples["malformed"]] == [3, 4, 5, 6, 7]


def test_extra_and_reordered_columns():
    header = "JobIDRaw|State|NodeList|JobName|NNodes|End|Start|Submit|Partition|Account|JobID"
    rows = []
    for row in SACCT.splitlines()[1:]:
        job, part, submit, start, end, nnodes, nodes, state = row.split("|")
        raw = job.split("_")[0].split("+")[0]
        rows.append(
            "|".join([raw, state, nodes, "my job", nnodes, end, start, submit, part, "proj1", job])
        )
    reordered, skipped = read(sacct(*rows, header=header))
    expected, expected_skipped = read(SACCT)
    assert reordered == expected and skipped.counts == expected_skipped.counts
    # sacct --parsable (a "|" after the last field) reads the same
    parsable = "".join(line + "|\n" for line in SACCT.splitlines())
    assert read(parsable)[0] == expected


def test_job_id_raw_absent_or_present_gives_the_same():
    rows = [
        row + "|" + row.split("|")[0].split("_")[0].split("+")[0] for row in SACCT.splitlines()[1:]
    ]
    assert read(sacct(*rows, header=HEADER + "|JobIDRaw"))[0] == read(SACCT)[0]


def test_missing_column_error_names_them_and_the_command():
    text = sacct(
        "1|main|2026-11-02T08:00:00|2026-11-02T08:00:01|2026-11-02T08:10:00|COMPLETED",
        header="JobID|Partition|Submit|Start|End|State",
    )
    with pytest.raises(InvalidInputError) as excinfo:
        read(text)
    message = one_line_error(excinfo)
    assert "NNodes, NodeList" in message and SACCT_COMMAND in message
    assert "--format JobID,Partition,Submit,Start,End,NNodes,NodeList,State" in message


def test_no_header_error():
    text = "\n".join(SACCT.splitlines()[1:])
    with pytest.raises(InvalidInputError) as excinfo:
        read(text, fmt="sacct")
    assert "--noheader" in one_line_error(excinfo)
    with pytest.raises(InvalidInputError) as excinfo:  # auto: neither format
        read(text)
    message = one_line_error(excinfo)
    assert "--noheader" in message and "--format sacct or --format jobcomp" in message
    with pytest.raises(InvalidInputError, match="--format sacct or --format jobcomp"):
        read("Job ID  Partition  State\n12 main COMPLETED\n")


def test_first_lines_all_malformed_is_not_the_format():
    # what sacct prints with SLURM_TIME_FORMAT=relative
    rows = [f"{i}|main|Tue 08:00|Tue 08:01|Tue 09:00|2|n[1-2]|COMPLETED" for i in range(12)]
    with pytest.raises(InvalidInputError) as excinfo:
        read(sacct(*rows))
    assert "SLURM_TIME_FORMAT" in one_line_error(excinfo)
    with pytest.raises(InvalidInputError, match="line 2"):  # fewer than ten lines
        read(sacct(rows[0]))
    with pytest.raises(InvalidInputError, match="not jobcomp records"):
        read(SACCT, fmt="jobcomp")


def test_empty_source_bad_format_and_missing_file(tmp_path):
    with pytest.raises(InvalidInputError, match="empty"):
        read("\n\n")
    with pytest.raises(InvalidInputError, match="auto, sacct or jobcomp"):
        read_allocations([], fmt="csv")
    with pytest.raises(InvalidInputError, match="does not exist"):
        read_allocations(tmp_path / "nope.txt")
    allocations, skipped = read(HEADER + "\n")  # a header and no records
    assert allocations == [] and skipped.total == 0


# ------------------------------------------------------------------------------------- time zones


def test_timezone_names_the_records_zone():
    utc = by_id(read(SACCT, timezone="UTC")[0])["812345"]
    chicago = by_id(read(SACCT, timezone="America/Chicago")[0])["812345"]
    assert chicago.start - utc.start == 6 * 3600  # CST is UTC-6 in November
    assert chicago.start == unix("2026-11-02T08:14:09", "America/Chicago")
    assert chicago.submit == unix("2026-11-02T08:14:07", "America/Chicago")


def test_bad_timezone_is_one_line_error():
    with pytest.raises(InvalidInputError) as excinfo:
        read_allocations([], timezone="Mars/Olympus")
    assert "IANA" in one_line_error(excinfo)


def test_no_timezone_is_the_machines(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    assert resolve_timezone(None).key == "Asia/Tokyo"
    job = by_id(read(SACCT, timezone=None)[0])["812345"]
    assert job.start == unix("2026-11-02T08:14:09", "Asia/Tokyo")


def test_dst_changes_read_as_zoneinfo_with_fold_0():
    berlin = "Europe/Berlin"
    rows = [  # spring forward 2026-03-29 02:00 -> 03:00, fall back 2026-10-25 03:00 -> 02:00
        "1|main|2026-03-29T01:00:00|2026-03-29T01:59:59|2026-03-29T03:00:00|1|n1|COMPLETED",
        "2|main|2026-03-29T01:00:00|2026-03-29T02:30:00|2026-03-29T03:40:00|1|n2|COMPLETED",
        "3|main|2026-10-25T01:00:00|2026-10-25T02:30:00|2026-10-25T03:30:00|1|n3|COMPLETED",
        "4|main|2026-10-25T01:00:00|2026-10-25T02:50:00|2026-10-25T02:10:00|1|n4|COMPLETED",
    ]
    jobs = by_id(read(sacct(*rows), timezone=berlin)[0])
    assert jobs["1"].end - jobs["1"].start == 1  # the skipped hour is not there
    assert jobs["2"].start == unix("2026-03-29T02:30:00", berlin)  # nonexistent: as 03:30 CEST
    assert jobs["2"].start == unix("2026-03-29T01:30:00")  # ... which is 01:30 UTC
    assert jobs["3"].start == unix("2026-10-25T00:30:00")  # repeated: first pass, CEST
    assert jobs["3"].end - jobs["3"].start == 2 * 3600
    # an end before its start inside the repeated hour is the second pass (CET)
    assert jobs["4"].start == unix("2026-10-25T00:50:00")
    assert jobs["4"].end == unix("2026-10-25T01:10:00")


@pytest.mark.parametrize(
    "zone", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"]
)
def test_cached_clock_matches_zoneinfo(zone):
    """The per-hour cache against zoneinfo itself over two years (Lord Howe: 30-minute DST)."""
    clock, tz = _Clock(ZoneInfo(zone)), ZoneInfo(zone)
    t = datetime(2025, 1, 1).timestamp()
    for step in range(0, 2 * 365 * 86400, 1777):
        text = datetime.fromtimestamp(t + step, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        assert clock.seconds(text) == int(
            datetime.fromisoformat(text).replace(tzinfo=tz).timestamp()
        ), text
    assert clock.seconds("Unknown") is None and clock.seconds("None") is None


# ------------------------------------------------------------------------------- sources and jobcomp


def test_gz_file_and_plain_file_read_the_same(tmp_path):
    plain, packed = tmp_path / "records.txt", tmp_path / "records.txt.gz"
    plain.write_text(SACCT)
    with gzip.open(packed, "wt") as file:
        file.write(SACCT)
    expected = read(SACCT)[0]
    assert list(read_allocations(plain, timezone="UTC")) == expected
    assert list(read_allocations(str(packed), timezone="UTC")) == expected
    assert sniff_format(packed) == "sacct"


def test_reading_streams():
    consumed = []

    def lines():
        for number, line in enumerate(SACCT.splitlines(), 1):
            consumed.append(number)
            yield line
        raise AssertionError("read past the first allocation")

    first = next(read_allocations(lines(), timezone="UTC"))
    assert first.job_id == "812345" and consumed == [1, 2]


def test_jobcomp_array_and_het_fields():
    allocations, skipped = read(JOBCOMP)
    jobs = by_id(allocations)
    assert list(jobs) == ["812345", "812346_1", "812360+0", "812360+1", "812373"]
    assert not jobs["812346_1"].het and jobs["812346_1"].nodes == "c[105-106]"
    assert jobs["812360+0"].het and jobs["812360+1"].het
    assert jobs["812360+1"].partition == "gpu"
    assert skipped.counts == {"not_started": 1}
    assert detect_format(JOBCOMP.splitlines()[0]) == "jobcomp"
    assert detect_format(SACCT.splitlines()[0]) == "sacct"


def test_sacct_and_jobcomp_of_the_same_jobs_give_equal_allocations():
    def ended(allocations):  # the jobcomp log holds one record per ended job, no requeues
        return {
            a.job_id: dataclasses.replace(a, line=0)
            for a in allocations
            if a.end is not None and a.job_id != "812350"
        }

    for zone in ("UTC", "Europe/Berlin"):
        from_sacct, sacct_skipped = read(SACCT, timezone=zone)
        from_jobcomp, jobcomp_skipped = read(JOBCOMP, timezone=zone)
        assert ended(from_sacct) == ended(from_jobcomp)
        assert sacct_skipped.counts["not_started"] == jobcomp_skipped.counts["not_started"] == 1


def test_jobcomp_running_malformed_and_unknown_times():
    line = JOBCOMP.splitlines()[0]
    broken = line.replace("NodeCnt=4 ", "")
    unknown = (
        line.replace("JobId=812345", "JobId=999")
        .replace("StartTime=2026-11-02T08:14:09", "StartTime=Unknown")
        .replace("SubmitTime=2026-11-02T08:14:07", "SubmitTime=unknown")
    )
    allocations, skipped = read("\n".join([line, broken, unknown]))
    assert [a.job_id for a in allocations] == ["812345"]
    assert skipped.examples == {"malformed": [(2, "812345")], "not_started": [(3, "999")]}


# ------------------------------------------------------------------------------------- Skipped


def test_skipped_keeps_five_examples_and_knows_the_reasons():
    skipped = Skipped()
    for line in range(1, 8):
        skipped.add("step", line, f"{line}.batch")
    skipped.add("unknown_nodes", 0, "9")
    assert skipped.counts == {"step": 7, "unknown_nodes": 1} and skipped.total == 8
    assert skipped.examples["step"] == [(i, f"{i}.batch") for i in range(1, 6)]
    assert {
        "step",
        "pending",
        "not_started",
        "malformed",
        "duplicate",
        "unknown_nodes",
        "heterogeneous",
    } <= set(REASONS)


def test_byte_order_mark_crlf_and_bytes():
    allocations, _ = read("\ufeff" + SACCT.replace("\n", "\r\n"))
    assert allocations == read(SACCT)[0]
    with pytest.raises(InvalidInputError, match="text mode"):
        list(read_allocations([HEADER.encode()], timezone="UTC"))
