"""What ``pip install .`` ships besides the modules: the bundled traces and every learned policy's
shipped weights (pyproject.toml's package data), so that an installed tjap runs its defaults and
its learned policies without a clone beside it."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA_FOLDERS = ("learned/weights", "placement/batch/data")


def package_data() -> dict[str, list[str]]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return pyproject["tool"]["setuptools"]["package-data"]


def shipped(relative: str) -> bool:
    """Whether a repository file matches a package-data pattern of its package."""
    for package, patterns in package_data().items():
        prefix = package.replace(".", "/") + "/"
        if relative.startswith(prefix) and any(fnmatch.fnmatch(relative[len(prefix):], p)
                                               for p in patterns):
            return True
    return False


def data_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for folder in DATA_FOLDERS
                  for p in (ROOT / folder).iterdir() if p.is_file() and not p.name.startswith("."))


def test_every_weights_and_trace_file_is_package_data():
    files = data_files()
    assert any(f.endswith(".pt") for f in files) and any(f.endswith(".npz") for f in files)
    assert any(f.endswith(".tsv") for f in files)
    missing = [f for f in files if not shipped(f)]
    assert not missing, f"not in pyproject.toml's [tool.setuptools.package-data]: {missing}"


def test_the_weights_and_traces_are_found_beside_the_modules():
    """The code finds them relative to its own files, so the wheel's layout is the clone's."""
    import learned.nsa
    import learned.provision.weights
    from placement.batch.traces import bundled_trace

    assert learned.nsa.WEIGHTS_DIR.resolve() == (ROOT / "learned" / "weights").resolve()
    assert learned.provision.weights.WEIGHTS_DIR == (ROOT / "learned" / "weights").resolve()
    assert Path(bundled_trace("ls6-a100")).resolve().parent == (ROOT / "placement/batch/data").resolve()


@pytest.mark.slow
def test_the_wheel_holds_the_weights_and_traces(tmp_path):
    """Build the wheel (no dependencies, this environment's setuptools) from a copy of the
    repository (setuptools builds in the source folder) and list it."""
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "site", "out", "__pycache__", "*.egg-info"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(tmp_path / "wheel")],
                           capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {built.stderr.strip().splitlines()[-1:]}")
    (wheel,) = (tmp_path / "wheel").glob("tjap-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [f for f in data_files() if f not in names]
    assert not missing, f"the wheel lacks {missing}"
    assert "tjap/__main__.py" in names
