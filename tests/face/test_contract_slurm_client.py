"""The error contract where tjap meets Slurm's commands, checked in the client itself (every
command that talks to Slurm goes through :class:`tjap.placement.slurm.client.SlurmClient`), with
fake ``scontrol`` / ``sinfo`` / ``squeue`` on PATH, so that no real Slurm is needed:

- no configuration (no slurm.conf, no SLURM_CONF): one line naming SLURM_CONF and the fix, exit 3,
  never blamed on slurmctld;
- output the readers cannot parse (wrong field count, non-numeric counts, undecodable bytes): one
  line naming the command and the first bad line, shortened, exit 2;
- a signal while a Slurm command runs kills the command and stops tjap at once, the placement
  service included (whose own handler only asks it to stop).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from processes import default_sigint

from tjap.cli import main
from tjap.core.errors import SlurmError, SlurmUnreachableError
from tjap.placement.slurm.client import SlurmClient, SlurmStopped

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[1-4]"
SINFO = "n1|idle|0/4/0/4|main*\nn2|idle|0/4/0/4|main*\n"
#: ``squeue -o PENDING_FORMAT`` of one job held by its user
HELD = "1|PENDING|JobHeldUser|2|1795623293|alice||main|1|(null)|(null)|(null)|N/A|5:00|job\n"
#: What Slurm's commands print (and exit 1) when they find no configuration: no SLURM_CONF, no
#: /etc/slurm/slurm.conf and no configless slurmctld announced in DNS.
NO_CONFIG = (
    "{name}: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
    "{name}: error: fetch_config: DNS SRV lookup failed\n"
    "{name}: error: _establish_config_source: failed to fetch config\n"
    "{name}: fatal: Could not establish a configuration source\n"
)


def fake_slurm(folder: Path, **scripts: str) -> Path:
    """A folder of fake Slurm commands, each a ``/bin/sh`` script body (``name=body``); the
    answers of a healthy one-switch cluster for those not given. Data files the scripts ``cat``
    live beside them (``$HERE``)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    healthy = {
        "scontrol": (
            'case "$1" in\n'
            f'  show) echo "{TOPOLOGY}";;\n'
            '  --version) echo "slurm 24.11.5";;\n'
            '  ping) echo "Slurmctld(primary) at ctl01 is UP";;\n'
            "esac\n"
        ),
        "sinfo": 'case "$*" in "-h -o %P") echo "main*";; *) cat "$HERE/sinfo.out";; esac\n',
        "squeue": 'cat "$HERE/squeue.out"\n',
    }
    (bin_dir / "sinfo.out").write_text(SINFO)
    (bin_dir / "squeue.out").write_text("")
    for name, body in {**healthy, **scripts}.items():
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\nHERE="{bin_dir}"\n{body}')
        tool.chmod(0o755)
    return bin_dir


def use(monkeypatch, bin_dir: Path, conf: Path | None) -> None:
    """Put ``bin_dir`` first on PATH; SLURM_CONF at ``conf`` (None: unset)."""
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    if conf is None:
        monkeypatch.delenv("SLURM_CONF", raising=False)
    else:
        monkeypatch.setenv("SLURM_CONF", str(conf))


@pytest.fixture
def conf(tmp_path) -> Path:
    path = tmp_path / "slurm.conf"
    path.write_text("ClusterName=fake\nSlurmctldHost=ctl01\n")
    return path


def one_line(capsys, argv, code: int) -> str:
    """Run ``tjap argv`` in-process: exit ``code`` and one line on stderr; return the line."""
    got = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert got == code, f"tjap {' '.join(map(str, argv))}: exit {got}, stderr {err!r}"
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("tjap: error: "), err
    return err.strip()


# -- 1. no configuration -------------------------------------------------------------------------
@pytest.fixture
def no_config(tmp_path, monkeypatch) -> Path:
    scripts = {
        name: f"cat >&2 <<'EOF'\n{NO_CONFIG.format(name=name)}EOF\nexit 1\n"
        for name in ("scontrol", "sinfo", "squeue", "sbatch", "scancel")
    }
    bin_dir = fake_slurm(tmp_path, **scripts)
    use(monkeypatch, bin_dir, None)
    return bin_dir


def says_no_config(text: str) -> None:
    assert "cannot read the Slurm configuration" in text, text
    assert "Could not establish a configuration source" in text, text
    assert "set SLURM_CONF to the cluster's slurm.conf" in text, text
    assert "run on a node of the cluster" in text, text
    assert "slurmctld" not in text, text  # the controller is not the problem


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.nodes(),
        lambda c: c.pending(),
        lambda c: c.show_topology(),
        lambda c: c.ping(),
        lambda c: c.batch_script(1),
        lambda c: c.run(["scontrol", "ping"], check=False),  # even when the caller does not check
    ],
    ids=["nodes", "pending", "show_topology", "ping", "batch_script", "run-unchecked"],
)
def test_no_configuration_is_one_error_naming_slurm_conf(no_config, call):
    with pytest.raises(SlurmUnreachableError) as info:  # errors.py: unreadable configuration
        call(SlurmClient())
    says_no_config(str(info.value))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("argv", [["slurm", "advise"], ["slurm", "place", "--once"]], ids=" ".join)
def test_slurm_commands_without_configuration_exit_3(no_config, capsys, argv):
    says_no_config(one_line(capsys, argv, 3))


def test_the_audit_without_configuration_does_not_blame_slurmctld(no_config, tmp_path, capsys):
    records = tmp_path / "sacct.txt"
    records.write_text(
        "JobID|Partition|Submit|Start|End|NNodes|NodeList|State\n"
        "1|main|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:01:00|2|n[1-2]|COMPLETED\n"
    )
    argv = ["audit", records, "--topology", "slurm", "--timezone", "UTC", "--quiet"]
    says_no_config(one_line(capsys, argv, 3))


# -- 2. output the readers cannot parse ----------------------------------------------------------
GARBLED_SINFO = [
    "n1|idle|0/4/0/4",  # a field missing
    "n1|idle|0/4/0/4|main*|extra",  # one too many
    "n1|idle|x/4/0/4|main*",  # a non-numeric count
    "n1|idle|0/4/4|main*",  # three counts
    "n1|idle|" + "9" * 400 + "x|main*",  # long
]
GARBLED_SQUEUE = [
    "1|PENDING|JobHeldUser|2",  # fields missing
    "1|PENDING|JobHeldUser|two|0|alice||main|1|(null)|(null)|(null)|N/A|5:00|job",
    "1|PENDING|JobHeldUser|2|0|alice||main|high|(null)|(null)|(null)|N/A|5:00|job",
    "x" * 500,  # long
]


def raises_on_the_line(call, command: str, line: str) -> str:
    with pytest.raises(SlurmError) as info:
        call()
    text = str(info.value)
    assert not isinstance(info.value, SlurmUnreachableError), text  # Slurm answered
    assert text.startswith(f"unexpected {command} line"), text
    assert "\n" not in text and len(text) < 300, text  # one line, the bad one shortened
    assert line[:40] in text, text
    return text


@pytest.mark.parametrize("line", GARBLED_SINFO)
def test_garbled_sinfo_names_the_command_and_the_line(tmp_path, monkeypatch, conf, line):
    bin_dir = fake_slurm(tmp_path)
    (bin_dir / "sinfo.out").write_text(SINFO + line + "\n" + "n9|idle|junk\n")
    use(monkeypatch, bin_dir, conf)
    client = SlurmClient()
    raises_on_the_line(client.nodes, "sinfo", line)
    raises_on_the_line(lambda: client.partition_nodes("main"), "sinfo", line)


@pytest.mark.parametrize("line", GARBLED_SQUEUE)
def test_garbled_squeue_names_the_command_and_the_line(tmp_path, monkeypatch, conf, line):
    bin_dir = fake_slurm(tmp_path)
    (bin_dir / "squeue.out").write_text(HELD + line + "\n" + "2|PENDING\n")
    use(monkeypatch, bin_dir, conf)
    raises_on_the_line(SlurmClient().pending, "squeue", line)
    (bin_dir / "squeue.out").write_text(line + "\n")  # the format of queue(), HELD's is not
    raises_on_the_line(SlurmClient().queue, "squeue", line)


def test_bytes_that_are_no_text_reach_the_readers(tmp_path, monkeypatch, conf):
    """Undecodable bytes (a latin-1 job name, a corrupted pipe) used to raise UnicodeDecodeError
    out of the client, a traceback: a line that still parses is read, one that does not is
    named."""
    bin_dir = fake_slurm(tmp_path)
    use(monkeypatch, bin_dir, conf)
    (bin_dir / "squeue.out").write_bytes(HELD.replace("|job", "|caf\xe9").encode("latin-1"))
    (job,) = SlurmClient().pending()
    assert job.job_id == 1 and job.name.startswith("caf")
    (bin_dir / "sinfo.out").write_bytes(b"n1|idle|0/\xff4/0/4|main*\n")
    raises_on_the_line(SlurmClient().nodes, "sinfo", "n1|idle|0/")


@pytest.mark.parametrize(
    "argv",
    [
        ["slurm", "advise", "--partition", "main"],
        ["slurm", "advise"],
        ["slurm", "place", "--once", "--partition", "main"],
        ["slurm", "place", "--once", "--dry-run", "--json"],
    ],
    ids=" ".join,
)
@pytest.mark.parametrize("reader", ["sinfo", "squeue"])
def test_garbled_output_exits_2_in_one_line(tmp_path, monkeypatch, conf, capsys, argv, reader):
    bin_dir = fake_slurm(tmp_path)
    if reader == "sinfo":
        (bin_dir / "sinfo.out").write_text("n1|idle|x/4/0/4|main*\n")
    else:
        (bin_dir / "squeue.out").write_bytes(b"1|PENDING|JobHeldUser|\xff|0\n")
    use(monkeypatch, bin_dir, conf)
    line = one_line(capsys, argv, 2)
    assert f"unexpected {reader} line" in line, line


# -- 3. a signal while a Slurm command runs ------------------------------------------------------
#: a Slurm command that hangs, as sinfo does while it waits for a slurmctld that does not answer;
#: its pid (that of the sleep, by exec) goes to $HERE/pid
HANGS = 'echo $$ > "$HERE/pid"\nexec sleep 30\n'


def gone(pid: int, within_s: float = 2.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def started(pid_file: Path, proc: subprocess.Popen | None = None, timeout_s: float = 60) -> int:
    """The pid of the hanging command once it runs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"tjap exited ({proc.returncode}) before sinfo ran: {proc.stderr.read()}")
        time.sleep(0.05)
    pytest.fail(f"the fake sinfo did not start within {timeout_s} s")


def test_a_stop_event_kills_the_command_at_once(tmp_path, monkeypatch, conf):
    """Within ``stopping(event)``, setting the event (another thread here, the placement
    service's signal handler in service) kills the command in flight and raises SlurmStopped."""
    bin_dir = fake_slurm(tmp_path, sinfo=HANGS)
    use(monkeypatch, bin_dir, conf)
    client, event = SlurmClient(), threading.Event()
    setter = threading.Timer(0.5, event.set)
    setter.start()
    began = time.monotonic()
    try:
        with client.stopping(event), pytest.raises(SlurmStopped, match="sinfo stopped"):
            client.nodes()
    finally:
        setter.cancel()
    assert time.monotonic() - began < 2.0
    assert gone(started(bin_dir / "pid", timeout_s=1)), "the fake sinfo still runs"
    assert client.stop is None  # only within the block
    with client.stopping(event):  # set already: a command is not even waited for
        with pytest.raises(SlurmStopped):
            client.version()
        with client.stopping(None):  # None: commands run to their end
            assert client.version() == "slurm 24.11.5"
        assert client.stop is event
    assert client.stop is None


def start_tjap(bin_dir: Path, conf: Path, *argv) -> subprocess.Popen:
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", SLURM_CONF=str(conf))
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; from tjap.cli import main; sys.exit(main())", *argv],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )


def signal_while_sinfo_runs(proc: subprocess.Popen, pid_file: Path, sig) -> tuple[int, float, bool]:
    """``sig`` to tjap 1 s into the hanging sinfo; (exit status, seconds it took, whether the
    sinfo outlived tjap: it is killed then)."""
    pid = started(pid_file, proc)
    try:
        time.sleep(1.0)
        assert proc.poll() is None, proc.stderr.read()
        sent = time.monotonic()
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        left = not gone(pid, 0.5)
        if left:  # never left behind, whatever the test finds
            os.kill(pid, signal.SIGKILL)
    return proc.returncode, took, left


@pytest.mark.slow
def test_sigterm_stops_a_client_call_at_once(tmp_path, conf):
    """``tjap slurm advise`` (tjap's own SIGTERM handler) while sinfo hangs: 143 within 2 s, one
    line, and the sinfo is killed, not left behind."""
    bin_dir = fake_slurm(tmp_path, sinfo=HANGS)
    proc = start_tjap(bin_dir, conf, "slurm", "advise", "--partition", "main")
    code, took, left = signal_while_sinfo_runs(proc, bin_dir / "pid", signal.SIGTERM)
    err = proc.stderr.read()
    assert code == 143 and took < 2.0, (code, took, err)
    assert not left, "the fake sinfo outlived tjap"
    assert "Traceback" not in err and err.strip().splitlines() == ["tjap: terminated (SIGTERM)"]


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_a_signal_stops_the_placement_service_while_it_reads(tmp_path, conf, sig, code):
    """``tjap slurm place`` installs its own handler (finish the job being updated, then stop):
    while it reads Slurm there is nothing to finish, and it used to wait out sinfo's timeout
    (30 s here; 7 s against an unreachable slurmctld) before it stopped. Its exit status is the
    service's (0 after SIGTERM, 130 after SIGINT), its last record the stop."""
    bin_dir = fake_slurm(tmp_path, sinfo=HANGS)
    log = tmp_path / "place.jsonl"
    proc = start_tjap(
        bin_dir, conf, "slurm", "place", "--partition", "main", "--interval", "1", "--log", log
    )
    got, took, left = signal_while_sinfo_runs(proc, bin_dir / "pid", sig)
    err = proc.stderr.read()
    assert got == code and took < 2.0, (got, took, err)
    assert not left, "the fake sinfo outlived tjap"
    assert "Traceback" not in err and "error" not in err, err
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records[-1]["event"] == "stop" and records[-1]["signal"] == sig.name
    assert records[-1]["error"] is None
    assert not [r for r in records if r["event"] in ("error", "window")]
