"""The house's layering, read from the code: imports only point down, and no files import each
other in a circle.

Floors, bottom first, each read from where its files are: the tjap core (the folder
``tjap/core/``: errors, jit policy, result protocol, solver helpers, reporting, the sweep
executor), ``tjap.placement`` (models and simulators, the folder
``placement/``), ``tjap.heuristics`` (search loops and hand-written operators, ``heuristics/``),
``tjap.learned`` (trained operators, ``learned/``), the tjap face (every other file under ``tjap/``:
``solve``, the registry, the command line, the services) and ``benchmarks`` (the project's experiments, not installed). A file may import its own floor and the floors below it. Every import
counts, lazy ones inside functions included, and so does a ``"pkg.mod:attr"`` or ``"pkg.mod"``
string (how registries name what they load).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the installed floors: each folder at the repository's top is the package named beside it
FOLDERS = {
    "placement": "tjap.placement",
    "heuristics": "tjap.heuristics",
    "learned": "tjap.learned",
    "tjap": "tjap",
    "benchmarks": "benchmarks",
}
PACKAGES = ("tjap", "benchmarks")
FLOORS = {"core": 0, "placement": 1, "heuristics": 2, "learned": 3, "face": 4, "benchmarks": 5}
MODULE_STRING = re.compile(r"^((?:%s)(?:\.\w+)+)(?::\w+)?$" % "|".join(PACKAGES))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([FOLDERS[parts[0]], *parts[1:]])


def project_modules() -> dict[str, Path]:
    """Every module by its installed name, read from the folders (not through tjap's links)."""
    links = {ROOT / "tjap" / folder for folder in FOLDERS if folder not in PACKAGES}
    return {
        module_name(p): p
        for folder in FOLDERS
        for p in (ROOT / folder).rglob("*.py")
        if not any(link in p.parents for link in links)
    }


def floor(module: str) -> str:
    """The floor of an installed module, from its path: ``tjap/core/`` is the core, a folder at
    the repository's top its own floor, any other file under ``tjap/`` the face."""
    parts = module.split(".")
    if parts[0] == "tjap":
        return parts[1] if len(parts) > 1 and parts[1] in FLOORS else "face"
    return parts[0]


def resolve(name: str, modules: dict) -> str | None:
    """The project module a dotted name refers to (the longest importable prefix)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def type_checking_nodes(tree: ast.AST) -> set[int]:
    """The nodes under ``if TYPE_CHECKING:``: imports for annotations that never run."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return inside


def imports_of(module: str, path: Path, modules: dict, runtime_only: bool = False) -> set[str]:
    """The project modules ``module`` imports; with ``runtime_only``, without those imported
    for annotations alone (under ``if TYPE_CHECKING:``), which can form no circle."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skip = type_checking_nodes(tree) if runtime_only else set()
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = MODULE_STRING.match(node.value)
            if match:
                names = [match.group(1)]
        for name in names:
            target = resolve(name, modules)
            # a "from pkg import name" whose name is a submodule counts as that submodule only
            if (
                target
                and target != module
                and not (
                    isinstance(node, ast.ImportFrom)
                    and name == node.module
                    and any(
                        resolve(f"{name}.{a.name}", modules) != resolve(name, modules)
                        for a in node.names
                    )
                )
            ):
                found.add(target)
    return found


def import_graph(runtime_only: bool = False) -> dict[str, set[str]]:
    modules = project_modules()
    return {m: imports_of(m, p, modules, runtime_only) for m, p in modules.items()}


def test_imports_only_point_down():
    upward = sorted(
        f"{a} ({floor(a)}) imports {b} ({floor(b)})"
        for a, targets in import_graph().items()
        for b in targets
        if FLOORS[floor(b)] > FLOORS[floor(a)]
    )
    assert not upward, "imports that run up a floor:\n" + "\n".join(upward)


def test_no_import_circles():
    graph = import_graph(runtime_only=True)
    # Tarjan's strongly connected components
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, "files that import each other in a circle:\n" + "\n".join(
        " <-> ".join(c) for c in circles
    )


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from tjap.core.errors import TjapError", {"tjap.core.errors"}),
        ("def f():\n    from tjap.heuristics.tree import anneal", {"tjap.heuristics.tree.anneal"}),
        ("X = 'tjap.learned.tree.policy:solve_nsa'", {"tjap.learned.tree.policy"}),
        ("import tjap.placement.tree.window", {"tjap.placement.tree.window"}),
    ],
)
def test_the_reader_sees_every_kind_of_import(tmp_path, source, expected):
    path = tmp_path / "probe.py"
    path.write_text(source)
    assert imports_of("probe", path, project_modules()) == expected


def test_imports_for_annotations_alone_count_for_the_floors_not_for_circles(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from tjap.placement.tree.topology import Topology\n"
    )
    modules = project_modules()
    assert imports_of("probe", path, modules) == {"tjap.placement.tree.topology"}
    assert imports_of("probe", path, modules, runtime_only=True) == set()


# -- the same rooms on every floor ---------------------------------------------------------------
FAMILIES = {"tree", "network", "interference", "batch"}
ROOMS = {
    "placement": FAMILIES | {"slurm", "k8s"},  # the schedulers tjap talks to: Slurm, Kubernetes
    "heuristics": FAMILIES | {"slurm"},
    "learned": FAMILIES,
}
SHARED = {"learned": {"policy_io.py"}}  # pieces every room of a floor uses, named for what they are
LEARNED_ROLES = {"features", "nets", "policy", "env", "train"}
# names that once stood for a role that has one name now
OLD_ROLE_NAMES = {"gnn", "policies", "envs", "provisioning", "network_alloc", "nsa_repair"}


@pytest.mark.parametrize("folder", sorted(ROOMS))
def test_every_floor_has_the_same_family_rooms(folder):
    rooms = {p.parent.name for p in (ROOT / folder).glob("*/__init__.py")}
    assert rooms == ROOMS[folder], f"{folder}/ has the rooms {sorted(rooms)}"
    loose = sorted(
        p.name
        for p in (ROOT / folder).glob("*.py")
        if p.name != "__init__.py" and p.name not in SHARED.get(folder, set())
    )
    assert not loose, f"modules at the root of {folder}/ belong in a family's room: {loose}"


@pytest.mark.parametrize("room", sorted(FAMILIES))
def test_every_learned_room_holds_the_same_roles(room):
    names = {p.stem for p in (ROOT / "learned" / room).glob("*.py")}
    assert LEARNED_ROLES <= names, f"learned/{room}/ lacks {sorted(LEARNED_ROLES - names)}"


def test_no_role_goes_by_an_old_name():
    stray = sorted(
        str(p.relative_to(ROOT))
        for folder in ROOMS
        for p in (ROOT / folder).rglob("*")
        if p.stem in OLD_ROLE_NAMES and "__pycache__" not in p.parts
    )
    assert not stray, f"files named for a role under an old name: {stray}"
