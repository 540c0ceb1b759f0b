"""Every benchmark runs the same way (benchmarks/README.md, "The runner convention"):
``python -m benchmarks.NAME [--help]``, a module docstring that says what it reproduces or
studies and shows its command, ``build_parser()`` and ``main(argv=None) -> int``, ``--out DIR``
(default ``benchmarks/out``) where it writes files, ``--seed`` where it draws random numbers, and
usage errors as one line. A runnable module is one with a ``__main__`` block; the libraries
(``common.py``) have none."""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
RUNNABLE = sorted(
    p.stem for p in BENCHMARKS.glob("*.py") if 'if __name__ == "__main__":' in p.read_text()
)
#: The benchmarks that draw no random numbers (their inputs are files or fixed), so no --seed.
NO_SEED = {
    "interference_fig10",
    "provision_live_demo",
    "slurm_fidelity",
    "slurm_replay",
    "topologies",
    "trace_loading",
}
#: ``--out`` elsewhere than benchmarks/out: the shipped clusters are regenerated in place.
OUT_ELSEWHERE = {"topologies": str(BENCHMARKS / "topologies")}


def module(name: str):
    return importlib.import_module(f"benchmarks.{name}")


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every option of ``parser`` and of its subcommands, by option string."""
    found = {}
    for action in parser._actions:
        found |= {flag: action for flag in action.option_strings}
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= options(sub)
    return found


def test_the_runnable_modules_are_found():
    assert {"sa_tables", "online", "batch_sim", "network", "slurm_topology", "sa_speed"} <= set(
        RUNNABLE
    )
    assert "common" not in RUNNABLE and len(RUNNABLE) >= 25
    assert NO_SEED <= set(RUNNABLE) and set(OUT_ELSEWHERE) <= set(RUNNABLE)


@pytest.mark.parametrize("name", RUNNABLE)
def test_main_and_build_parser(name):
    mod = module(name)
    assert f"python -m benchmarks.{name}" in (mod.__doc__ or ""), "the docstring shows its command"
    parameters = inspect.signature(mod.main).parameters
    assert list(parameters) == ["argv"] and parameters["argv"].default is None
    assert inspect.signature(mod.main).return_annotation in (int, "int")
    parser = mod.build_parser()
    assert isinstance(parser, argparse.ArgumentParser)
    assert parser.prog == f"python -m benchmarks.{name}"


@pytest.mark.parametrize("name", RUNNABLE)
def test_help_works(name, capsys):
    with pytest.raises(SystemExit) as stop:
        module(name).main(["--help"])
    out, err = capsys.readouterr()
    assert stop.value.code == 0 and err == ""
    assert out.startswith(f"usage: python -m benchmarks.{name}")


@pytest.mark.parametrize("name", RUNNABLE)
def test_an_unknown_flag_is_one_line(name, capsys):
    with pytest.raises(SystemExit) as stop:
        module(name).main(["--no-such-flag"])
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and out == "" and "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("tjap: error: "), err
    assert err.rstrip().endswith("--help)"), err


@pytest.mark.parametrize("name", RUNNABLE)
def test_out_is_a_folder_and_seed_is_there(name):
    found = options(module(name).build_parser())
    if "--out" in found:
        out = found["--out"]
        assert out.metavar == "DIR", f"{name}: --out names a folder"
        assert out.default == OUT_ELSEWHERE.get(name, "benchmarks/out"), (name, out.default)
    assert ("--seed" in found) == (name not in NO_SEED), name


def test_the_readme_indexes_every_benchmark_with_a_command_that_parses():
    """benchmarks/README.md has one row per runnable module; its command names that module and
    options the module has (``provision_live_demo`` passes its options on to ``tjap provision
    live``)."""
    text = (BENCHMARKS / "README.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \|.*\| `(python -m benchmarks\.[^`]+)` \|$", text, re.MULTILINE)
    assert sorted(name for name, _ in rows) == RUNNABLE
    for name, command in rows:
        words = command.replace("\\|", "|").split()
        assert words[2] == f"benchmarks.{name}", command
        if name != "provision_live_demo":
            found = options(module(name).build_parser())
            assert [w for w in words if w.startswith("--") and w not in found] == [], command
