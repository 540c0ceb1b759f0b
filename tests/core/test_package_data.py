"""What ``pip install .`` ships: one top-level package, ``tjap`` (the folders ``placement/``,
``heuristics/`` and ``learned/`` install as ``tjap.placement``, ``tjap.heuristics`` and
``tjap.learned`` through the links in ``tjap/``; ``benchmarks/`` and ``tests/`` are not installed),
every module of the floors, the bundled traces and every learned policy's shipped weights
(pyproject.toml's package data), so that an installed tjap runs its defaults and its learned
policies without a clone beside it."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA_FOLDERS = ("learned/weights", "placement/batch/data")


def installed_name(relative: str) -> str:
    """Where a repository file lands in the wheel: ``placement/x.py`` -> ``tjap/placement/x.py``."""
    return relative if relative.startswith("tjap/") else "tjap/" + relative


def package_data() -> dict[str, list[str]]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return pyproject["tool"]["setuptools"]["package-data"]


def shipped(relative: str) -> bool:
    """Whether a repository file matches a package-data pattern of its package."""
    for package, patterns in package_data().items():
        prefix = package.replace(".", "/") + "/"
        relative = installed_name(relative)
        if relative.startswith(prefix) and any(
            fnmatch.fnmatch(relative[len(prefix) :], p) for p in patterns
        ):
            return True
    return False


def data_files() -> list[str]:
    return sorted(
        str(p.relative_to(ROOT))
        for folder in DATA_FOLDERS
        for p in (ROOT / folder).iterdir()
        if p.is_file() and not p.name.startswith(".")
    )


def test_every_weights_and_trace_file_is_package_data():
    files = data_files()
    assert any(f.endswith(".pt") for f in files) and any(f.endswith(".npz") for f in files)
    assert any(f.endswith(".tsv") for f in files)
    missing = [f for f in files if not shipped(f)]
    assert not missing, f"not in pyproject.toml's [tool.setuptools.package-data]: {missing}"


def test_the_weights_and_traces_are_found_beside_the_modules():
    """The code finds them relative to its own files, so the wheel's layout is the clone's."""
    import tjap.learned.batch.weights
    import tjap.learned.tree.policy
    from tjap.placement.batch.traces import bundled_trace

    assert (
        tjap.learned.tree.policy.WEIGHTS_DIR.resolve() == (ROOT / "learned" / "weights").resolve()
    )
    assert tjap.learned.batch.weights.WEIGHTS_DIR == (ROOT / "learned" / "weights").resolve()
    assert (
        Path(bundled_trace("ls6-a100")).resolve().parent
        == (ROOT / "placement/batch/data").resolve()
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built (no dependencies, this environment's setuptools) from a copy of the
    repository as a clone holds it, links included (setuptools builds in the source folder)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            "build",
            "site",
            "out",
            "__pycache__",
            "*.egg-info",
            ".hypothesis",
            ".pytest_cache",
            ".mypy_cache",
            ".ruff_cache",
        ),
    )
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "wheel"),
        ],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, f"pip wheel failed: {built.stderr.strip()[-2000:]}"
    (path,) = (tmp_path / "wheel").glob("tjap-*.whl")
    return path


def test_the_wheel_installs_one_name_with_every_module(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"tjap"}, f"the wheel installs these top-level names: {sorted(tops)}"
    modules = sorted(
        str(p.relative_to(ROOT))
        for folder in ("tjap", "placement", "heuristics", "learned")
        for p in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in p.parts
    )
    missing = [m for m in modules if installed_name(m) not in names]
    assert not missing, f"the wheel lacks {missing}"
    assert not any(n.startswith(("tjap/benchmarks", "tjap/tests")) for n in names)


def test_the_wheel_holds_the_weights_and_traces(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [f for f in data_files() if installed_name(f) not in names]
    assert not missing, f"the wheel lacks {missing}"
    assert "tjap/__main__.py" in names


def test_the_wheel_marks_tjap_as_typed(wheel):
    """PEP 561: ``tjap/py.typed`` ships, so type checkers read tjap's annotations."""
    assert (ROOT / "tjap" / "py.typed").is_file()
    assert shipped("tjap/py.typed"), "py.typed is not in [tool.setuptools.package-data]"
    assert "tjap/py.typed" in zipfile.ZipFile(wheel).namelist()


def test_the_installed_wheel_imports_light_and_finds_its_data(wheel, tmp_path):
    """Unpacked away from the clone (the clone's folders are not on the path): ``import tjap``
    loads no solver, numba or torch, the floors import by their installed names, the old
    top-level names do not, and the shipped data is found beside the modules."""
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    code = (
        "import sys, importlib.util, tjap, tjap.registry; tjap.registry.entries()\n"
        "heavy = [m for m in ('torch', 'pyscipopt', 'ortools', 'numba') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        f"assert tjap.__file__.startswith({str(target)!r}), tjap.__file__\n"
        "import tjap.placement.tree, tjap.heuristics, tjap.learned\n"
        "from tjap.placement.batch.traces import bundled_trace\n"
        "assert str(bundled_trace('ls6-a100')).startswith(" + repr(str(target)) + ")\n"
        "for old in ('placement', 'heuristics', 'learned', 'benchmarks'):\n"
        "    assert importlib.util.find_spec(old) is None, old\n"
        "print('ok')\n"
    )
    # the wheel first on the path, and the clone (an editable install's entry) off it
    path = (
        f"import sys; sys.path[:] = [{str(target)!r}] + [p for p in sys.path "
        f"if p and p != {str(ROOT)!r}]\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", path + code], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.stdout.strip() == "ok", out.stderr[-2000:]
