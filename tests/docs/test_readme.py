"""The README and the documentation pages stand on their own: every command they show exists, and
every name their Python examples import is there.

The documents are the README and every page of the site (docs/, the hooks' folder left out),
except the changelog, which tells what the commands and names were. Commands are the lines of
their shell blocks (```bash, ```sh, ```console and unlabelled ones), and the inline code of their
prose, that start with ``tjap `` or ``python -m ``. Each distinct command path (``tjap network
evaluate``, ``python -m benchmarks.network``) runs with ``--help`` in this process, and must exit
0. A word ``a|b|c`` where a subcommand is expected stands for each of a, b and c. The Python blocks
are checked for their imports only (the README's run in test_readme_examples.py, the pages' in
test_docs.py), and so are the ``tjap.NAME`` attributes of the README's "Python in ten lines".
Every dotted name of the project in their inline code (``tjap.placement.tree.online.per_job_config``)
must name a module that exists, and a name that module defines. The README's links name files
that exist, and headings of the pages they point into.
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
import unicodedata
import warnings
from pathlib import Path

import pytest

from tjap.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: The documents whose commands and names are checked, in order: the README, then the site's
#: pages. The changelog is history: it names commands as they were.
DOCUMENTS = (
    README,
    *sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts and p.name != "changelog.md"),
)
#: The page that holds the table of window methods.
METHODS_PAGE = DOCS / "guides" / "tree.md"
PACKAGES = ("tjap", "placement", "heuristics", "learned", "benchmarks")
SHELL_LANGUAGES = {"", "bash", "sh", "console", "shell"}
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: A word in capitals that stands for the reader's choice (``SYSTEM``, ``NAME``, ``FILE.json``).
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*(\.\w+)?")


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
        if word.startswith("-") or word == "..." or PLACEHOLDER.fullmatch(word):
            break  # options, an elision, or a placeholder standing for any subcommand (SYSTEM)
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


def name(document: Path) -> str:
    """A document's path in the repository (``README.md``, ``docs/guides/tree.md``)."""
    return document.relative_to(ROOT).as_posix()


COMMANDS = [c for d in DOCUMENTS for c in shell_commands(d.read_text())]
#: Commands a page names as retired (design.md: the experiments that left ``tjap bench``), with
#: the command each answers with instead of running.
RETIRED = {("bench", "table3"): "python -m benchmarks.sa_tables table3"}
NAMED_PATHS = {p for c in COMMANDS if c.startswith("tjap") for p in tjap_paths(c)}
TJAP_PATHS = sorted(NAMED_PATHS - set(RETIRED))
MODULES = sorted(
    {
        module
        for module in (shlex.split(c)[2] for c in COMMANDS if c.startswith("python -m "))
        if not any(PLACEHOLDER.fullmatch(part) for part in module.split("."))  # benchmarks.NAME
    }
)


def test_the_documents_show_commands():
    assert len(DOCUMENTS) > 20 and (DOCS / "guides" / "tree.md") in DOCUMENTS
    assert len(TJAP_PATHS) > 20 and len(MODULES) > 3, (TJAP_PATHS, MODULES)
    assert shell_commands(README.read_text()), "the README shows no command"


@pytest.mark.parametrize("path", TJAP_PATHS, ids=lambda p: " ".join(("tjap", *p)))
def test_each_tjap_command_has_help(path, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*path, "--help"])
    out, err = capsys.readouterr()
    assert stop.value.code == 0, f"tjap {' '.join(path)} --help: {err.strip()}"
    assert out.startswith("usage: tjap")


@pytest.mark.parametrize("path", sorted(RETIRED), ids=lambda p: " ".join(("tjap", *p)))
def test_each_retired_command_names_its_new_one(path, capsys):
    assert path in NAMED_PATHS, f"no document names tjap {' '.join(path)}: drop it from RETIRED"
    assert main([*path, "--help"]) == 2
    assert RETIRED[path] in capsys.readouterr().err


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


def ten_lines(text: str) -> str:
    """The README's section "Python in ten lines"."""
    parts = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    return next(part for part in parts if part.startswith("Python in ten lines"))


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


IMPORTS = sorted(
    {item for d in DOCUMENTS for item in imported_names(d.read_text())},
    key=lambda item: (item[0], item[1] or ""),
)


def test_the_python_examples_are_found():
    assert blocks(ten_lines(README.read_text()), {"python"})
    assert ("tjap", None) in IMPORTS and len(IMPORTS) > 5, IMPORTS


@pytest.mark.parametrize("module, name", IMPORTS, ids=lambda x: str(x))
def test_each_imported_name_exists(module, name):
    imported = importlib.import_module(module)
    if name is not None:
        submodule = hasattr(imported, "__path__") and importlib.util.find_spec(f"{module}.{name}")
        assert hasattr(imported, name) or submodule, f"from {module} import {name}: no such name"


def test_the_names_used_in_python_in_ten_lines_exist():
    import tjap

    code = "".join(blocks(ten_lines(README.read_text()), {"python"}))
    used = set(re.findall(r"\btjap\.(\w+)", code))
    assert used and not [name for name in used if not hasattr(tjap, name)]


def dotted_names(text: str) -> list[str]:
    """The project's dotted names in a document's inline code, calls cut at the parenthesis."""
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


#: Each dotted name of the documents, with the first document that names it.
DOTTED = {}
for _document in DOCUMENTS:
    for _dotted in dotted_names(_document.read_text()):
        DOTTED.setdefault(_dotted, name(_document))


@pytest.mark.parametrize("dotted", sorted(DOTTED))
def test_each_dotted_name_in_the_documents_exists(dotted):
    where = DOTTED[dotted]
    parts = dotted.split(".")
    cut = next((n for n in range(len(parts), 0, -1) if module_file(parts[:n])), 0)
    assert cut, f"{where} names {dotted}: no such module"
    rest = parts[cut:]
    path = module_file(parts[:cut])
    if rest:
        assert defines(path, rest[0]), (
            f"{where} names {dotted}: {path.relative_to(ROOT)} has no {rest[0]}"
        )


def test_the_method_table_lists_every_window_method():
    """The switch-tree guide's table of window methods names every method tjap.solve accepts (it
    once left out slurm-tree and guarded)."""
    from tjap.registry import methods

    text = METHODS_PAGE.read_text()
    table = text[text.index("| method | what it solves |") :]
    table = table[: table.index("\n\n")]
    named = set(
        re.findall(
            r"`([a-z][a-z-]*)`", "\n".join(line.split("|")[1] for line in table.splitlines()[2:])
        )
    )
    assert set(methods("tree")) <= named, sorted(set(methods("tree")) - named)


def slug(heading: str) -> str:
    """A heading's anchor, as the site's table of contents (Python-Markdown's toc) and GitHub
    make it for the headings these pages use."""
    text = unicodedata.normalize("NFKD", heading.replace("`", ""))
    text = re.sub(r"[^\w\s-]", "", text.encode("ascii", "ignore").decode()).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def headings(page: Path) -> set[str]:
    """The anchors of a page's headings (fenced blocks left out)."""
    prose = FENCE.sub("", page.read_text())
    return {slug(h) for h in re.findall(r"^#{1,6} (.+?)\s*$", prose, re.MULTILINE)}


def test_every_link_of_the_readme_resolves():
    """The README's links name files of the repository, and headings of the docs pages they
    point into (links into benchmarks/RESULTS.md: test_results_reference.py)."""
    links = re.findall(r"\]\(([^)\s]+)\)", FENCE.sub("", README.read_text()))
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(local) > 20, local
    broken = []
    for link in local:
        target, _, anchor = link.partition("#")
        path = ROOT / target if target else README
        if not path.exists():
            broken.append(link)
        elif anchor and path.suffix == ".md" and DOCS in path.parents:
            if anchor not in headings(path):
                broken.append(link)
    assert not broken, f"README links that lead nowhere: {broken}"


def test_slugs_are_the_sites():
    assert slug("GPU clusters: blocks, segments and levels") == (
        "gpu-clusters-blocks-segments-and-levels"
    )
    assert slug("On a `topology/block` cluster") == "on-a-topologyblock-cluster"
    assert slug("Live mode on a real Slurm") == "live-mode-on-a-real-slurm"
