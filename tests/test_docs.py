"""The API reference (docs/, mkdocs.yml): each page's first Python block runs as it is, and every
module a page renders (a ``::: module`` line) exists. ``make docs`` builds the pages themselves in
strict mode; these checks are the fast part, run with the tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
SYSTEM_PAGES = ("tree.md", "network.md", "interference.md", "batch.md", "core.md")
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
RENDERED = re.compile(r"^::: ([\w.]+)", re.MULTILINE)


def first_python_block(page: Path) -> str:
    """The page's first ```python block, preceded by blank lines so that a traceback names the
    page's own line numbers."""
    text = page.read_text()
    match = PYTHON_BLOCK.search(text)
    assert match, f"{page.name} has no ```python block"
    return "\n" * text.count("\n", 0, match.start(1)) + match.group(1)


def module_file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def test_every_system_has_a_page():
    names = {p.name for p in PAGES}
    assert set(SYSTEM_PAGES) | {"index.md", "cli.md", "design.md"} <= names


@pytest.mark.parametrize("name", SYSTEM_PAGES)
def test_the_first_example_of_each_page_runs(name, capsys):
    code = first_python_block(DOCS / name)
    exec(compile(code, str(DOCS / name), "exec"), {"__name__": f"docs.{name[:-3]}"})
    assert capsys.readouterr().out.strip(), f"the example of {name} prints nothing"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_rendered_module_exists(page):
    missing = [m for m in RENDERED.findall(page.read_text()) if module_file(m) is None]
    assert not missing, f"{page.name} renders modules that do not exist: {missing}"


def test_the_reference_covers_every_model_and_the_core():
    """Every public module of placement/ (the four systems' models) and of the tjap core has its
    place in the reference: a module added there is added to its system's page."""
    rendered = {m for page in PAGES for m in RENDERED.findall(page.read_text())}
    public = {".".join(("tjap", *p.relative_to(ROOT).with_suffix("").parts))
              for p in (ROOT / "placement").glob("*/*.py") if not p.name.startswith("_")}
    core = {"tjap.result", "tjap.errors", "tjap.registry", "tjap.report", "tjap.executor"}
    missing = sorted((public | core) - rendered)
    assert not missing, f"modules with no page in docs/: {missing}"
