"""The repository stands on its own: no code, test, document or build file names a path outside
it, and the traces the CLI defaults, the README and the tests use ship inside it (as package data,
with their attribution and licences)."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from tjap.core.errors import InvalidInputError
from tjap.placement.batch.traces import BUNDLED_DIR, BUNDLED_TRACES, bundled_trace, load_trace

ROOT = Path(__file__).resolve().parents[2]
SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".sh", ".txt"}
NAMES = {"Makefile"}
#: never scanned: environments, build outputs, caches (all ignored by git)
SKIP_DIRS = {
    ".venv",
    "venv",
    "site",
    "build",
    "dist",
    ".git",
    "__pycache__",
    ".hypothesis",
    ".pytest_cache",
    "out",
}
#: a relative path: one or more ../ and what follows
UP = re.compile(r"(?<![\w.])((?:\.\./)+)[\w.\-/]*")
#: absolute paths of a particular machine (home folders, the checkout's own location)
MACHINE = re.compile(r"(?<![\w.:/])/(?:work|home|root|Users|mnt/data)/[\w.\-/]+")
#: Path(__file__)...parents[k] (or .parent.parent...)
PARENTS = re.compile(
    r"__file__\)?(?:\.resolve\(\)|\.absolute\(\))?((?:\.parent)+)(?!s)"
    r"|__file__\)?(?:\.resolve\(\)|\.absolute\(\))?\.parents\[(\d+)\]"
)


def project_files() -> list[Path]:
    """The repository's text files that git would keep (tracked or not ignored), else a walk."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout
        files = [ROOT / f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.SubprocessError):
        files = [
            Path(d) / f
            for d, dirs, names in os.walk(ROOT)
            for f in names
            if not dirs.__setitem__(
                slice(None), [x for x in dirs if x not in SKIP_DIRS and not x.endswith(".egg-info")]
            )
        ]
    return sorted(
        f
        for f in files
        if f.is_file()
        and (f.suffix in SUFFIXES or f.name in NAMES)
        and not SKIP_DIRS.intersection(f.relative_to(ROOT).parts[:-1])
    )


def outside_paths(rel: Path, text: str) -> list[str]:
    """'file:line: why' for every path in ``text`` (the file ``rel``, relative to the root) that
    leaves the repository. Relative paths are taken from the file's own folder."""
    depth = len(rel.parts) - 1  # folders between the root and the file
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        hits = []
        if "shared/traces" in line or "../shared" in line:
            hits.append("names the shared folder beside the repository")
        hits += [
            f"{m.group(0)} climbs above the repository"
            for m in UP.finditer(line)
            if m.group(1).count("../") > depth
        ]
        hits += [f"{m.group(0)} is a path of one machine" for m in MACHINE.finditer(line)]
        for match in PARENTS.finditer(line):
            up = match.group(1).count(".parent") if match.group(1) else int(match.group(2)) + 1
            if up > depth + 1:
                hits.append(f"{match.group(0)} climbs above the repository")
        found += [f"{rel}:{number}: {hit}" for hit in hits]
    return found


def test_no_path_leaves_the_repository():
    files = project_files()
    assert len(files) > 100 and ROOT / "README.md" in files and ROOT / "Makefile" in files
    bad = [
        hit
        for f in files
        if f != Path(__file__).resolve()  # this file: the examples below
        for hit in outside_paths(
            f.relative_to(ROOT), f.read_text(encoding="utf-8", errors="replace")
        )
    ]
    assert not bad, "paths outside the repository:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "line, hits",
    [
        ("x = '../shared/traces/ls6-a100.tsv'", 1),
        ("tjap simulate --trace shared/traces/lublin_256.swf", 1),
        ("DEFAULT = Path(__file__).resolve().parents[3] / 'traces'", 1),
        ("DEFAULT = Path(__file__).resolve().parents[2] / 'weights'", 0),
        ("W = Path(__file__).resolve().parent.parent.parent.parent / 'x'", 1),
        ("W = Path(__file__).parent.parent / 'x'", 0),
        ("see /work/main/README.md or /home/me/traces", 2),
        ("run('--out', '/tmp/x', '--slurm-conf', '/etc/slurm/slurm.conf')", 0),
        ("link [a](../../../elsewhere.md)", 1),
        ("link [a](../../tjap/cli/batch.py)", 0),
    ],
)
def test_the_scanner_finds_what_it_should(line, hits):
    """The scanner on a file two folders below the root (like placement/batch/traces.py)."""
    assert len(outside_paths(Path("placement/batch/probe.py"), line)) == hits


def test_the_bundled_traces_ship_with_their_licences():
    assert set(BUNDLED_TRACES) == {"ls6-a100.tsv", "lublin_256.swf"}
    assert BUNDLED_DIR == ROOT / "placement" / "batch" / "data"
    readme = (BUNDLED_DIR / "README.md").read_text(encoding="utf-8")
    assert "CC BY 4.0" in readme and "creativecommons.org/licenses/by/4.0" in readme
    assert "Mirage" in readme and "Lublin" in readme and "Parallel Workloads Archive" in readme
    for name in BUNDLED_TRACES:
        assert (BUNDLED_DIR / name).stat().st_size > 100_000
    total = sum((BUNDLED_DIR / n).stat().st_size for n in BUNDLED_TRACES)
    assert total < 4_000_000  # the repository stays small
    # package data, so an installed wheel has them too
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = data["package-data"]["tjap.placement.batch"]
    for name in list(BUNDLED_TRACES) + ["README.md"]:
        assert any(Path("data", name).match(p) for p in patterns), name


def test_bundled_trace_names_and_errors():
    assert (
        bundled_trace("ls6-a100") == bundled_trace("ls6-a100.tsv") == BUNDLED_DIR / "ls6-a100.tsv"
    )
    assert bundled_trace("lublin_256").name == "lublin_256.swf"
    assert load_trace(bundled_trace("lublin_256"))[1].jobs == 10000
    with pytest.raises(InvalidInputError, match="no bundled trace named 'ricc'.*ls6-a100"):
        bundled_trace("ricc")
    # a missing file that has a bundled namesake says where the bundled copy is
    with pytest.raises(InvalidInputError, match="not found; the bundled copy is .*data/ls6-a100"):
        load_trace("no/such/folder/ls6-a100.tsv")


def test_defaults_use_the_bundled_trace():
    from benchmarks.batch_sim import build_parser
    from tjap.placement.interference.jobs import DEFAULT_TRACE

    assert DEFAULT_TRACE == bundled_trace("ls6-a100") and DEFAULT_TRACE.exists()
    args = build_parser().parse_args([])
    assert args.trace is None  # resolved to the bundled trace when the benchmark runs
