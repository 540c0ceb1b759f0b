"""The documentation site's sources (docs/, mkdocs.yml): every page is in the navigation, every
reference page's first Python block runs as it is, the Python blocks of the guides
(:data:`RUNNABLE_PAGES`) run as written and the getting-started guide's commands print the output
it shows, every module a page renders exists and every public module of the floors and the core is
rendered somewhere, no page renders a wall of modules, and the changelog's current entry is the
package's version. ``make docs`` builds the pages in strict mode and checks them in a browser
(tests/docs/test_docs_site.py); these checks are the fast part, run with the tests. The
getting-started guide's Slurm commands run against a real local Slurm with ``-m slurm``; the
pages' other commands run in test_readme_examples.py.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tjap

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)
REFERENCE_PAGES = sorted((DOCS / "reference").glob("*.md"))
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)
RENDERED = re.compile(r"^::: ([\w.]+)", re.MULTILINE)
#: Pages whose every Python block runs as written, in a folder holding examples/'s files (the
#: guides copy them there first). Not run: how-to/slurm.md (starts a Slurm: root) and
#: how-to/train.md (reads the files its training commands write). Their shell commands run in
#: test_readme_examples.py.
RUNNABLE_PAGES = (
    "index.md",
    "decisions.md",
    "getting-started.md",
    "guides/tree.md",
    "guides/network.md",
    "guides/provisioning.md",
    "how-to/model-your-cluster.md",
    "how-to/benchmark.md",
)
#: At most this many modules on one page (the switch-tree page once rendered 25, a wall).
MAX_MODULES_PER_PAGE = 9
GETTING_STARTED = DOCS / "getting-started.md"


def blocks(page: Path, language: str) -> list[tuple[int, str]]:
    """(line of the block's first line, code) of each fenced block of ``language``."""
    text = page.read_text()
    return [
        (text.count("\n", 0, m.start(2)), m.group(2))
        for m in FENCE.finditer(text)
        if m.group(1) == language
    ]


def run_block(page: Path, line: int, code: str) -> None:
    """Run a block so that a traceback names the page and its own line numbers."""
    exec(compile("\n" * line + code, str(page), "exec"), {"__name__": f"docs.{page.stem}"})


def module_file(module: str) -> Path | None:
    """The source file of a rendered module (the floors are top-level folders, linked from tjap/)."""
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav lists, in order."""
    config = (ROOT / "mkdocs.yml").read_text()
    nav = re.search(r"^nav:\n(.*?)^\S", config, re.MULTILINE | re.DOTALL).group(1)
    return re.findall(r"^\s+- (?:[^\n]*:\s+)?([\w/.-]+\.md)\s*$", nav, re.MULTILINE)


def test_every_page_is_in_the_navigation_and_back():
    listed = nav_pages()
    on_disk = sorted(p.relative_to(DOCS).as_posix() for p in PAGES)
    assert sorted(listed) == on_disk
    assert len(set(listed)) == len(listed), "a page is listed twice in the nav"


@pytest.mark.parametrize("page", REFERENCE_PAGES, ids=lambda p: p.name)
def test_the_first_example_of_each_reference_page_runs(page, capsys):
    found = blocks(page, "python")
    assert found, f"{page.name} has no ```python example"
    run_block(page, *found[0])
    assert capsys.readouterr().out.strip(), f"the example of {page.name} prints nothing"


@pytest.mark.parametrize("name", RUNNABLE_PAGES)
def test_every_python_block_of_the_guides_runs(name, tmp_path, monkeypatch, capsys):
    page = DOCS / name
    found = blocks(page, "python")
    assert found, f"{name} has no ```python block"
    shutil.copytree(ROOT / "examples", tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    for line, code in found:
        run_block(page, line, code)
        assert capsys.readouterr().out.strip(), f"a block of {name} (line {line}) prints nothing"


def test_the_decision_calls_page_has_an_example_per_call():
    sections = re.split(r"^## ", (DOCS / "decisions.md").read_text(), flags=re.MULTILINE)
    calls = {
        "tjap.solve": "tjap.solve(",
        "tjap.place_request": "tjap.place_request(",
        "tjap.place_job": "tjap.place_job(",
        "the provisioning decision": "def decide(",
    }
    for call, used in calls.items():
        assert any(used in s and "```python" in s for s in sections), (
            f"decisions.md has no example using {call}"
        )


def rendered_exists(identifier: str) -> bool:
    """A ``::: identifier`` names a module, or an object of a module (``tjap.api.solve``)."""
    if module_file(identifier) is not None:
        return True
    module, _, name = identifier.rpartition(".")
    return module_file(module) is not None and hasattr(importlib.import_module(module), name)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_every_rendered_module_exists_and_no_page_is_a_wall(page):
    rendered = RENDERED.findall(page.read_text())
    missing = [m for m in rendered if not rendered_exists(m)]
    assert not missing, f"{page.name} renders modules that do not exist: {missing}"
    modules = [m for m in rendered if module_file(m) is not None]
    assert len(modules) <= MAX_MODULES_PER_PAGE, (
        f"{page.name} renders {len(modules)} modules: split it (at most {MAX_MODULES_PER_PAGE})"
    )


def test_the_reference_covers_every_public_module():
    """Every public module of the floors (placement/, heuristics/, learned/), of the Slurm
    service and of the tjap core has its place in the reference: a module added there is added
    to its family's page."""
    rendered = {m for page in PAGES for m in RENDERED.findall(page.read_text())}
    public = set()
    for floor in ("placement", "heuristics", "learned"):
        for path in (ROOT / floor).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if not any(part.startswith("_") for part in parts):
                public.add(".".join(("tjap", *parts)))
    public |= {
        "tjap.slurm.service",
        "tjap.api",
        "tjap.core.result",
        "tjap.core.errors",
        "tjap.registry",
        "tjap.core.report",
        "tjap.core.executor",
    }
    missing = sorted(public - rendered)
    assert not missing, f"modules with no page in docs/: {missing}"


def test_the_changelog_starts_with_the_current_version():
    text = (DOCS / "changelog.md").read_text()
    versions = re.findall(r"^## (\d+\.\d+\.\d+) — (\d{4}-\d{2}-\d{2})$", text, re.MULTILINE)
    headings = re.findall(r"^## .*$", text, re.MULTILINE)
    assert versions and len(versions) == len(headings), "each entry is '## X.Y.Z — YYYY-MM-DD'"
    assert versions[0][0] == tjap.__version__
    assert [v for v, _ in versions] == sorted(
        (v for v, _ in versions), reverse=True, key=lambda v: tuple(map(int, v.split(".")))
    )


# -- the getting-started guide's commands -----------------------------------------------------


def shown_commands(page: Path) -> list[tuple[list[str], str | None]]:
    """Each ```bash block's command lines (comments dropped), with the ```text block that
    follows it, if one does: the output the page shows for them."""
    fences = list(FENCE.finditer(page.read_text()))
    found = []
    for i, fence in enumerate(fences):
        if fence.group(1) != "bash":
            continue
        lines = [line.split("#")[0].strip() for line in fence.group(2).splitlines()]
        shown = (
            fences[i + 1].group(2)
            if i + 1 < len(fences) and fences[i + 1].group(1) == "text"
            else None
        )
        found.append(([line for line in lines if line], shown))
    return found


def normalised(text: str) -> str:
    """Output without what differs from run to run: solve times and Slurm's job ids."""
    text = re.sub(r"time=[0-9.]+s", "time=...", text)
    return re.sub(r"\bjob \d+ \(", "job N (", text).strip()


def run_command(line: str, cwd: Path, env: dict | None = None) -> str:
    argv = line.split()
    if argv[0] == "tjap":
        argv = [sys.executable, "-m", "tjap", *argv[1:]]
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"`{line}` failed ({done.returncode}): {done.stderr.strip()}"
    return done.stdout


def test_the_getting_started_commands_print_what_the_page_shows(tmp_path):
    """Every command of the guide outside Slurm and outside the install step runs from a fresh
    folder as written, and prints the output the page shows beneath it."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    compared = 0
    for commands, shown in shown_commands(GETTING_STARTED):
        if any(
            c.split()[0] not in ("tjap", "cp") or c.startswith("tjap slurm") or "--version" in c
            for c in commands
        ):
            continue
        output = "".join(run_command(c, tmp_path) for c in commands)
        if shown is not None:
            assert normalised(output) == normalised(shown)
            compared += 1
    assert compared >= 2, "the guide's topology and solve commands were not found"


@pytest.mark.slurm
def test_the_getting_started_slurm_commands_on_a_real_slurm(tmp_path):
    """The guide's Slurm part on a throw-away Slurm with the example tree: the nodes the example
    window does not list are busy, the guide's held jobs are submitted, and `tjap slurm advise`
    and `tjap slurm place --dry-run --once` run; the latter prints what the page shows."""
    from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig, slurm_available
    from tjap.placement.tree.hostlist import compress_hostlist

    reason = slurm_available()
    if reason is not None:
        pytest.skip(f"no local Slurm: {reason}")
    tree = tjap.Topology.from_slurm(ROOT / "examples" / "topology.conf")
    window = tjap.load_windows(ROOT / "examples" / "window.json")[0]
    idle = set(window.node_names(window.idle_nodes))
    busy = [n for n in tree.node_names if n not in idle]
    (tmp_path / "job.sh").write_text("#!/bin/bash\nsleep 60\n")
    with LocalSlurm(LocalSlurmConfig.for_topology(tree)) as slurm:
        subprocess.run(
            [
                "sbatch",
                "-N",
                str(len(busy)),
                "-w",
                compress_hostlist(busy),
                "-o",
                "/dev/null",
                "--wrap",
                "sleep 600",
            ],
            cwd=tmp_path,
            env=slurm.env,
            check=True,
            capture_output=True,
        )
        client = slurm.client()
        deadline = time.monotonic() + 30
        while {n.name for n in client.partition_nodes() if n.state == "idle"} != idle:
            assert time.monotonic() < deadline, "the busy job did not start"
            time.sleep(0.2)
        slurm_blocks = [
            (commands, shown)
            for commands, shown in shown_commands(GETTING_STARTED)
            if any(c.startswith(("sbatch", "tjap slurm")) for c in commands)
        ]
        assert len(slurm_blocks) == 2, "the guide's sbatch and tjap slurm blocks were not found"
        for commands, shown in slurm_blocks:
            outputs = [run_command(c, tmp_path, slurm.env) for c in commands]
            if shown is not None:
                assert normalised(outputs[-1]) == normalised(shown)
