"""benchmarks/RESULTS.md is a reference, not a diary.

Nothing in it narrates how the work went (sessions, issue numbers, rounds, parts, helpers); every
``python -m MODULE`` it shows names a module that exists; every ``tjap ...`` and ``python -m
benchmarks.NAME ...`` command parses with today's parser (parsed only, never run); every name a
``python -c`` snippet imports exists; no figure table appears twice; every section holding a table
dates it; and every link into it, from itself and from the README, names a heading it has, and
so does every section the documentation pages name in code (`benchmarks/RESULTS.md#anchor`).

Commands are the lines of its shell blocks (continuations joined, comments removed) and the
inline code of its prose that starts with ``tjap `` or ``python -m ``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
import shlex
from collections import Counter
from pathlib import Path

import pytest

from tjap.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
README = ROOT / "README.md"
#: The documentation pages: they name RESULTS.md's sections in code, the site having no link to it.
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)
TEXT = RESULTS.read_text()
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SHELL_LANGUAGES = {"", "bash", "sh", "console", "shell"}

#: Words that tell how the work went rather than what was measured. Each is narrow enough to
#: leave the domain's own words alone ("rounds" of DAgger, a job's "part", "issues" as a verb).
NARRATION = re.compile(
    r"\b(sessions?"
    r"|issues?\s+\d+|the\s+issue'?s?"
    r"|rounds?\s+\d+"
    r"|parts?\s+\d+(-\d+)?"
    r"|items?\s+\d+"
    r"|(by|from|of)\s+(a|the|another|other)\s+helpers?|helpers?\s+(that|who)"
    r"|stretch(es)?\s+of\s+work"
    r"|refactor(ed|ing|s)?"
    r"|previously|this\s+time|no\s+longer)\b",
    re.IGNORECASE,
)
#: Headings name what a section measures, never when or why it was written.
HEADING_HISTORY = re.compile(
    r"\b(new|now|old|moved|before|after|previous|latest|again)\b", re.IGNORECASE
)
#: Stand-ins a command may use for a file of the reader's own.
PLACEHOLDERS = {"FILE": "trace.swf", "JSON": "weights.json", "DIR": "out"}
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def prose(text: str) -> str:
    """The text outside fenced blocks."""
    return FENCE.sub("", text)


def inline_commands(text: str) -> list[str]:
    spans = [" ".join(s.split()) for s in re.findall(r"(?<!`)`([^`]+)`(?!`)", prose(text))]
    return [s for s in spans if s.startswith(("tjap ", "python -m "))]


def commands(text: str) -> list[str]:
    """The ``tjap ...`` and ``python -m ...`` commands of the shell blocks and the prose."""
    found = inline_commands(text)
    for match in FENCE.finditer(text):
        if match.group(1) not in SHELL_LANGUAGES:
            continue
        for line in match.group(2).replace("\\\n", " ").splitlines():
            line = re.split(r"\s#", line.strip(), maxsplit=1)[0].strip()
            if line.startswith(("tjap ", "python -m ")):
                found.append(line)
    return found


def words(command: str) -> list[str]:
    return [PLACEHOLDERS.get(word, word) for word in shlex.split(command)]


def snippets(text: str) -> list[str]:
    """The code of the ``python -c "..."`` commands of the shell blocks."""
    code = []
    for match in FENCE.finditer(text):
        for line in match.group(2).splitlines():
            if line.startswith("python -c "):
                code.append(shlex.split(line)[2])
    return code


def headings(text: str) -> list[tuple[int, str]]:
    return [
        (len(m.group(1)), m.group(2).strip())
        for m in re.finditer(r"^(#{1,6}) (.+)$", prose(text), re.MULTILINE)
    ]


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings: lower case, punctuation dropped, spaces to hyphens,
    repeats numbered -1, -2, ..."""
    seen: Counter = Counter()
    found = set()
    for _, title in headings(text):
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        found.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return found


def tables(text: str) -> list[tuple[int, list[str]]]:
    """(line number, lines) of each Markdown table outside fenced blocks."""
    found, current, start = [], [], 0
    for number, line in enumerate(prose(text).splitlines(), 1):
        if line.startswith("|"):
            if not current:
                start = number
            current.append(line)
        elif current:
            found.append((start, current))
            current = []
    if current:
        found.append((start, current))
    return found


COMMANDS = sorted(set(commands(TEXT)))
TJAP = [c for c in COMMANDS if c.startswith("tjap ")]
MODULE_COMMANDS = [c for c in COMMANDS if c.startswith("python -m ")]
BENCHMARKS = [c for c in MODULE_COMMANDS if shlex.split(c)[2].startswith("benchmarks.")]


def test_the_reference_shows_commands():
    assert len(TJAP) > 20 and len(BENCHMARKS) > 20, (TJAP, BENCHMARKS)


def test_no_line_narrates_work_history():
    bad = [
        f"line {n}: {line.strip()}"
        for n, line in enumerate(TEXT.splitlines(), 1)
        if NARRATION.search(line)
    ]
    assert not bad, "history belongs in git log:\n" + "\n".join(bad)


def test_no_heading_dates_itself():
    bad = [title for _, title in headings(TEXT) if HEADING_HISTORY.search(title)]
    assert not bad, bad


@pytest.mark.parametrize("module", sorted({shlex.split(c)[2] for c in MODULE_COMMANDS}))
def test_each_module_exists(module):
    if module.startswith("benchmarks."):
        assert (ROOT / "benchmarks" / f"{module.split('.', 1)[1]}.py").is_file(), module
    else:
        assert importlib.util.find_spec(module) is not None, module


@pytest.mark.parametrize("command", TJAP)
def test_each_tjap_command_parses(command, capsys):
    try:
        build_parser().parse_args(words(command)[1:])
    except SystemExit:
        pytest.fail(f"{command}\n{capsys.readouterr().err.strip()}")


class _Parsed(Exception):
    """Raised instead of running a benchmark once its arguments have parsed."""


def parse_benchmark(module, argv: list[str]) -> None:
    """Parse ``argv`` as ``python -m benchmarks.NAME`` would, without running it: with the
    module's ``build_parser()``, or else its ``main(argv)`` stopped right after argparse."""
    if hasattr(module, "build_parser"):
        module.build_parser().parse_args(argv)
        return
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        raise _Parsed(original(self, args, namespace))

    argparse.ArgumentParser.parse_args = parse_then_stop
    try:
        module.main(argv)
    except _Parsed:
        return
    finally:
        argparse.ArgumentParser.parse_args = original
    pytest.fail(f"{module.__name__} has neither build_parser() nor an argparse main(argv)")


@pytest.mark.parametrize("command", BENCHMARKS)
def test_each_benchmark_command_parses(command, capsys):
    argv = words(command)
    module = importlib.import_module(argv[2])
    try:
        parse_benchmark(module, argv[3:])
    except SystemExit:
        pytest.fail(f"{command}\n{capsys.readouterr().err.strip()}")


@pytest.mark.parametrize("code", snippets(TEXT), ids=lambda code: code[:60])
def test_each_python_snippet_imports_what_exists(code):
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            missing = [a.name for a in node.names if not hasattr(module, a.name)]
            assert not missing, f"{node.module} has no {missing}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)


def test_no_table_appears_twice():
    keys = Counter(
        (" ".join(lines[0].split()), " ".join(lines[2].split()))
        for _, lines in tables(TEXT)
        if len(lines) > 2
    )
    twice = [key for key, count in keys.items() if count > 1]
    assert not twice, twice


def test_each_section_with_a_table_is_dated():
    sections = re.split(r"^#{2,4} ", prose(TEXT), flags=re.MULTILINE)[1:]
    undated = [
        s.splitlines()[0]
        for s in sections
        if re.search(r"^\|.*\|\n\|[-| ]+\|$", s, re.MULTILINE) and not DATE.search(s)
    ]
    assert not undated, undated


def test_links_into_the_reference_name_its_headings():
    have = anchors(TEXT)
    own = re.findall(r"\]\(#([^)]+)\)", TEXT)
    readme = re.findall(r"\]\(benchmarks/RESULTS\.md#([^)]+)\)", README.read_text())
    pages = [
        a for p in PAGES for a in re.findall(r"`benchmarks/RESULTS\.md#([^`]+)`", p.read_text())
    ]
    missing = sorted({a for a in own + readme + pages if a not in have})
    assert readme and pages and not missing, missing
