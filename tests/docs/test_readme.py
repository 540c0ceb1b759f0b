"""The README stands on its own: every command it shows exists, and every name its Python examples
import is there.

Commands are the lines of its shell blocks (```bash, ```sh, ```console and unlabelled ones), and
the inline code of its prose, that start with ``tjap `` or ``python -m ``. Each distinct command
path (``tjap network evaluate``, ``python -m benchmarks.network``) runs with ``--help`` in this
process, and must exit 0. A word ``a|b|c`` where a subcommand is expected stands for each of a, b
and c. The Python blocks of
"Python in ten lines" and of the numbered system sections are checked for their imports only
(their examples need traces and minutes; the API reference's examples run in test_docs.py), and
so are the ``tjap.NAME`` attributes of "Python in ten lines". Every dotted name of the project in
the README's inline code (```tjap.placement.tree.online.per_job_config```) must name a module that
exists, and a name that module defines.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.util
import io
import re
import runpy
import shlex
import sys
import warnings
from pathlib import Path

import pytest

from tjap.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PACKAGES = ("tjap", "placement", "heuristics", "learned", "benchmarks")
SHELL_LANGUAGES = {"", "bash", "sh", "console", "shell"}
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(text: str, languages) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(text) if m.group(1) in languages]


def inline_commands(text: str) -> list[str]:
    """The ``tjap ...`` and ``python -m ...`` commands of the prose's inline code."""
    prose = FENCE.sub("", text)
    spans = [" ".join(span.split()) for span in re.findall(r"(?<!`)`([^`]+)`(?!`)", prose)]
    return [span for span in spans if span.startswith(("tjap ", "python -m "))]


def shell_commands(text: str) -> list[str]:
    """The ``tjap ...`` and ``python -m ...`` lines of the shell blocks, continuations joined,
    prompts and comments removed, and the commands of the prose's inline code."""
    commands = inline_commands(text)
    for block in blocks(text, SHELL_LANGUAGES):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            line = re.split(r"\s#", line, maxsplit=1)[0].strip()
            if line.startswith(("tjap ", "python -m ")) or line == "tjap":
                commands.append(line)
    return commands


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return None


def tjap_paths(command: str) -> list[tuple[str, ...]]:
    """The subcommand paths a ``tjap ...`` line names (a path names no subcommand that is not
    there: a wrong word where one is expected stays in the path, and its --help fails)."""
    paths = [((), build_parser())]
    words = shlex.split(command)[1:]
    done = []
    for word in words:
        if word.startswith("-") or word == "...":
            break
        grown = []
        for path, parser in paths:
            choices = subcommands(parser)
            if choices is None:
                done.append(path)
                continue
            for name in word.split("|"):
                grown.append(((*path, name), choices.get(name, parser)))
        paths = grown
        if not paths:
            break
    return sorted(set(done) | {path for path, _ in paths})


COMMANDS = shell_commands(README.read_text())
TJAP_PATHS = sorted({p for c in COMMANDS if c.startswith("tjap") for p in tjap_paths(c)})
MODULES = sorted({shlex.split(c)[2] for c in COMMANDS if c.startswith("python -m ")})


def test_the_readme_shows_commands():
    assert len(TJAP_PATHS) > 20 and len(MODULES) > 3, (TJAP_PATHS, MODULES)


@pytest.mark.parametrize("path", TJAP_PATHS, ids=lambda p: " ".join(("tjap", *p)))
def test_each_tjap_command_has_help(path, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*path, "--help"])
    out, err = capsys.readouterr()
    assert stop.value.code == 0, f"tjap {' '.join(path)} --help: {err.strip()}"
    assert out.startswith("usage: tjap")


@pytest.mark.parametrize("module", MODULES)
def test_each_python_module_command_has_help(module, monkeypatch):
    monkeypatch.setattr(sys, "argv", [f"python -m {module}", "--help"])
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            # the module may be imported already (by its package); it runs again as __main__
            warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=False)
    except SystemExit as stop:
        assert stop.code in (0, None), f"python -m {module} --help exited {stop.code}"
    else:
        pytest.fail(f"python -m {module} --help did not exit: the module has no command line")
    assert "usage:" in out.getvalue()


def python_sections(text: str) -> dict[str, str]:
    """"Python in ten lines" and the numbered system sections, by title."""
    parts = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    return {part.splitlines()[0]: part for part in parts
            if part.startswith("Python in ten lines") or part[0].isdigit()}


def imported_names(section: str) -> list[tuple[str, str | None]]:
    """(module, name) for each ``from X import Y`` and (module, None) for each ``import X`` line
    of the section's ```python blocks."""
    found = []
    for block in blocks(section, {"python"}):
        for line in block.splitlines():
            if not line.startswith(("from ", "import ")):
                continue
            node = ast.parse(line).body[0]
            if isinstance(node, ast.ImportFrom):
                found += [(node.module, alias.name) for alias in node.names]
            else:
                found += [(alias.name, None) for alias in node.names]
    return found


SECTIONS = python_sections(README.read_text())
IMPORTS = sorted({item for s in SECTIONS.values() for item in imported_names(s)},
                 key=lambda item: (item[0], item[1] or ""))


def test_the_python_examples_are_found():
    assert any(title.startswith("Python in ten lines") for title in SECTIONS)
    assert ("tjap", None) in IMPORTS and len(IMPORTS) > 5, IMPORTS


@pytest.mark.parametrize("module, name", IMPORTS, ids=lambda x: str(x))
def test_each_imported_name_exists(module, name):
    imported = importlib.import_module(module)
    if name is not None:
        submodule = hasattr(imported, "__path__") and importlib.util.find_spec(f"{module}.{name}")
        assert hasattr(imported, name) or submodule, f"README: from {module} import {name}: no such name"


def test_the_names_used_in_python_in_ten_lines_exist():
    import tjap

    ten_lines = next(s for title, s in SECTIONS.items() if title.startswith("Python in ten lines"))
    used = set(re.findall(r"\btjap\.(\w+)", "".join(blocks(ten_lines, {"python"}))))
    assert used and not [name for name in used if not hasattr(tjap, name)]


def dotted_names(text: str) -> list[str]:
    """The project's dotted names in the README's inline code, calls cut at the parenthesis."""
    names = set()
    for code in re.findall(r"(?<!`)`([^`\n]+)`(?!`)", text):
        match = re.fullmatch(r"((?:%s)(?:\.\w+)+)(?:\(.*\))?" % "|".join(PACKAGES), code.strip())
        if match:
            names.add(match.group(1))
    return sorted(names)


def module_file(parts) -> Path | None:
    base = ROOT.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def defines(path: Path, name: str) -> bool:
    """Whether the module defines ``name`` at its top level, imports it, or names it in a string
    (``__all__``, tjap's table of lazy re-exports); read, not imported."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
    return name in found


@pytest.mark.parametrize("dotted", dotted_names(README.read_text()))
def test_each_dotted_name_in_the_readme_exists(dotted):
    parts = dotted.split(".")
    cut = next((n for n in range(len(parts), 0, -1) if module_file(parts[:n])), 0)
    assert cut, f"README names {dotted}: no such module"
    rest = parts[cut:]
    path = module_file(parts[:cut])
    if rest:
        assert defines(path, rest[0]), f"README names {dotted}: {path.relative_to(ROOT)} has no {rest[0]}"


def test_the_method_table_lists_every_window_method():
    """Section 1's table of window methods names every method tjap.solve accepts (it left out
    slurm-tree and guarded)."""
    from tjap.registry import methods

    text = README.read_text()
    table = text[text.index("| method | what it solves |"):]
    table = table[:table.index("\n\n")]
    named = set(re.findall(r"`([a-z][a-z-]*)`", "\n".join(line.split("|")[1]
                                                           for line in table.splitlines()[2:])))
    assert set(methods("tree")) <= named, sorted(set(methods("tree")) - named)
