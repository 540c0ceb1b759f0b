"""The README's and the docs' plain promises, checked against the code and the shipped files:
the Python they need, where their example commands run from, the window keys, the audit's
shipped-example figure."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import tjap
from tjap.placement.tree.window import WINDOW_KEYS

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_every_page_states_the_python_pyproject_requires():
    need = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert need == ">=3.11"
    for page in PAGES:
        for said in re.findall(r"Python 3\.\d+[^.,;)]*", page.read_text()):
            if "required" in said or "only" in said:
                raise AssertionError(f"{page.name}: {said!r}, but pyproject asks for {need}")
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        assert "Python 3.11 or later" in page.read_text(), page.name


def test_commands_on_the_shipped_examples_say_where_they_run():
    """A command naming ``examples/`` works from the clone's root alone: the text before it says
    so (the paragraph or the lines just above the block)."""
    for page in PAGES:
        text = page.read_text()
        for block in re.finditer(r"```(?:bash|)\n(.*?)```", text, re.S):
            if not re.search(r"^(cp|tjap) .*\bexamples/", block.group(1), re.M):
                continue
            before = text[max(0, block.start() - 2000) : block.start()]
            said = before.split("```")[-1]  # back to the previous block
            assert re.search(r"(clone|repository)'s root|clone's `examples", said), (
                f"{page.name}: a command on examples/ without saying it runs from the clone's root:"
                f" {block.group(1).splitlines()[0]!r}"
            )


def test_the_formats_page_lists_every_window_key():
    text = (ROOT / "docs" / "formats.md").read_text()
    listed = text[text.index("a window's keys are") :].split(")")[0]
    assert all(f"`{key}`" in listed for key in WINDOW_KEYS), listed


def test_the_audit_figures_of_the_readme_are_the_shipped_examples():
    audit = ROOT / "examples" / "audit"
    result = tjap.audit(audit / "sacct.txt", audit / "topology.conf", timezone="Etc/UTC")
    fidelity = f"{100 * result.summary()['fidelity']:.1f} %"
    readme = (ROOT / "README.md").read_text()
    assert f"picks the recorded nodes for {fidelity} of them" in readme
    assert f"{fidelity} on the shipped example" in readme  # the results table says the same
