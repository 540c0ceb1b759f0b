"""The renamed classes: each old name still answers for one release, with a DeprecationWarning,
and is the renamed class itself (never a second class); nothing in the repository still uses an
old name (the alias lines of :mod:`tjap.core.renames` aside).

The renames (0.4.0): the data-centre network's ``Topology`` is ``DataCentre`` (the switch tree's
``tjap.Topology`` keeps its name), the network's ``Evaluation`` is ``NetworkEvaluation``, the
provisioners' ``Evaluation`` is ``ProvisionEvaluation``, the interference simulator's
``SimResult`` is ``InterferenceResult`` and the batch simulator's ``SimulationResult`` is
``BatchResult``.
"""

from __future__ import annotations

import ast
import importlib
import os
import pickle
import re
import warnings
from pathlib import Path

import pytest

from tjap.core.renames import REMOVED_IN

ROOT = Path(__file__).resolve().parents[2]

#: (module, old name, new name): every module that answers an old name, the defining module
#: first, then each package that re-exported it.
RENAMES = [
    ("tjap.placement.network.topology", "Topology", "DataCentre"),
    ("tjap.placement.network", "Topology", "DataCentre"),
    ("tjap.placement.network.episode", "Evaluation", "NetworkEvaluation"),
    ("tjap.placement.network", "Evaluation", "NetworkEvaluation"),
    ("tjap.heuristics.batch.rules", "Evaluation", "ProvisionEvaluation"),
    ("tjap.placement.interference.simulator", "SimResult", "InterferenceResult"),
    ("tjap.placement.interference", "SimResult", "InterferenceResult"),
    ("tjap.placement.batch.simulator", "SimulationResult", "BatchResult"),
    ("tjap.placement.batch", "SimulationResult", "BatchResult"),
]
#: The module that defines each renamed class.
DEFINED_IN = {
    "DataCentre": "tjap.placement.network.topology",
    "NetworkEvaluation": "tjap.placement.network.episode",
    "ProvisionEvaluation": "tjap.heuristics.batch.rules",
    "InterferenceResult": "tjap.placement.interference.simulator",
    "BatchResult": "tjap.placement.batch.simulator",
}

ids = [f"{module}.{old}" for module, old, _ in RENAMES]


@pytest.mark.parametrize(("module", "old", "new"), RENAMES, ids=ids)
def test_the_old_name_warns_and_is_the_new_class(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning) as caught:
        value = getattr(mod, old)
    assert value is getattr(mod, new)
    assert value.__name__ == value.__qualname__ == new
    assert value.__module__ == DEFINED_IN[new]
    assert [str(w.message) for w in caught] == [
        f"{module}.{old} is renamed {new}; the old name goes in {REMOVED_IN}"
    ]
    assert REMOVED_IN == "0.5.0"
    # `from module import Old` warns too, and the warning points at the importing line
    with pytest.warns(DeprecationWarning, match=f"is renamed {new}") as caught:
        namespace: dict = {}
        exec(compile(f"from {module} import {old} as found", __file__, "exec"), namespace)
    assert namespace["found"] is value
    assert caught[0].filename == __file__


@pytest.mark.parametrize("module", sorted({m for m, _, _ in RENAMES}))
def test_other_missing_names_still_raise_attribute_error(module):
    mod = importlib.import_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
            mod.NoSuchName  # noqa: B018
        assert not hasattr(mod, "Nonexistent")


def test_the_packages_export_the_new_names_and_hold_no_old_ones():
    for module, old, new in RENAMES:
        mod = importlib.import_module(module)
        if module != DEFINED_IN[new]:  # a package that re-exports it
            assert new in mod.__all__ and old not in mod.__all__, module
        assert old not in vars(mod), f"{module} holds a second {old}"


def test_the_switch_tree_keeps_its_name():
    import tjap
    from tjap.placement.tree.topology import Topology

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tjap.Topology is Topology
        assert Topology.__name__ == "Topology"


def test_a_pickle_of_an_old_name_still_loads():
    """A pickle names a class by module and name: one written before the rename (naming
    ``tjap.placement.network.topology.Topology``) loads as a DataCentre, with the warning.
    Protocol 2 writes the name as text (``GLOBAL``) with no frame lengths to rewrite."""
    from tjap.placement.network import DataCentre, paper_topology

    topology = paper_topology("8:1-16", 64)
    data = pickle.dumps(topology, protocol=2)
    new = b"ctjap.placement.network.topology\nDataCentre\n"
    assert data.count(new) == 1
    old = data.replace(new, b"ctjap.placement.network.topology\nTopology\n")
    with pytest.warns(DeprecationWarning, match="topology.Topology is renamed DataCentre"):
        loaded = pickle.loads(old)
    assert type(loaded) is DataCentre
    assert loaded.describe() == topology.describe()


# -- nothing uses an old name ------------------------------------------------------------------

#: Folders of the repository's code (the folders under tjap/ that link to the floors are skipped:
#: they are the floors), and the prose that names classes.
CODE = ("placement", "heuristics", "learned", "tjap", "benchmarks", "tests")
PROSE = ("docs", "README.md", "benchmarks/RESULTS.md")
#: Files that name the old names on purpose: this test, and the changelog that lists them.
ALLOWED = {Path(__file__).resolve(), (ROOT / "docs" / "changelog.md").resolve()}
#: The alias lines (``__getattr__ = renamed(__name__, {...})``) name the old names on purpose.
ALIAS_LINE = re.compile(r"^__getattr__ = renamed\(__name__, ")

#: Old names no other class of the project has: any use of the word is an old use.
UNIQUE = ("SimResult", "SimulationResult")
#: Old names another class (or English) has too: ``Evaluation`` named in code, after a dot or as a
#: reference (``:class:`Evaluation```, `` `Evaluation` ``, ``Evaluation(``); the network's
#: ``Topology`` qualified by its module, or anywhere in the network family's files.
TEXT = [
    re.compile(r"\b(?:%s)\b" % "|".join(UNIQUE)),
    re.compile(r"(?:[.`~]Evaluation\b|\bEvaluation[`(])"),
    re.compile(r"\bnetwork(?:\.topology)?\.Topology\b"),
]
NETWORK_TOPOLOGY = re.compile(r"\bTopology\b")
#: The modules (and packages) an old name came from: importing it from them is an old use.
OLD_FROM = {
    "Topology": ("tjap.placement.network",),
    "Evaluation": ("tjap.placement.network", "tjap.heuristics.batch"),
    "SimResult": ("tjap.placement.interference",),
    "SimulationResult": ("tjap.placement.batch",),
}


def files(*roots: str, suffix: str):
    links = {ROOT / "tjap" / name for name in ("placement", "heuristics", "learned")}
    for root in roots:
        path = ROOT / root
        if path.is_file():
            yield path
            continue
        for folder, dirs, names in os.walk(path):  # does not follow the links
            dirs[:] = [d for d in dirs if Path(folder, d) not in links and d != "__pycache__"]
            yield from (Path(folder, n) for n in sorted(names) if n.endswith(suffix))


def label(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def old_uses_in_text(path: Path) -> list[str]:
    network = "network" in Path(label(path)).parts
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if ALIAS_LINE.match(line):
            continue
        if any(p.search(line) for p in TEXT) or (network and NETWORK_TOPOLOGY.search(line)):
            found.append(f"{label(path)}:{number}: {line.strip()}")
    return found


def old_uses_in_code(path: Path) -> list[str]:
    """Imports of an old name from where it came from, and the names and attributes
    ``SimResult``, ``SimulationResult``, ``Evaluation`` (and ``network.Topology``)."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if any(node.module.startswith(m) for m in OLD_FROM.get(alias.name, ())):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
        elif isinstance(node, ast.Name) and node.id in (*UNIQUE, "Evaluation"):
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in (*UNIQUE, "Evaluation"):
            found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Attribute) and node.attr == "Topology":
            base = ast.unparse(node.value)
            if base.split(".")[-1] in ("network", "topology") and "tree" not in base:
                found.append((node.lineno, f"{base}.Topology"))
    return [f"{label(path)}:{line}: {what}" for line, what in found]


def test_nothing_in_the_code_uses_an_old_name():
    found = []
    for path in files(*CODE, suffix=".py"):
        if path.resolve() in ALLOWED:
            continue
        found += old_uses_in_code(path) + old_uses_in_text(path)
    assert not found, "old names still used:\n" + "\n".join(sorted(set(found)))


def test_no_page_names_an_old_class():
    found = []
    for path in files(*PROSE, suffix=".md"):
        if path.resolve() not in ALLOWED:
            found += old_uses_in_text(path)
    assert not found, "pages naming an old class:\n" + "\n".join(found)


def test_the_search_finds_old_uses(tmp_path):
    """The checks above find what they look for (a check that finds nothing proves nothing)."""
    sample = tmp_path / "old_names.py"
    code = (
        "from tjap.placement.network import Topology, Evaluation\n"
        "from tjap.placement.batch.simulator import SimulationResult\n"
        "import tjap.placement.interference as inter\n"
        "x = inter.SimResult\n"
        "from tjap.placement import network\n"
        "y = network.Topology\n"
        "from tjap import Topology as Tree  # the switch tree: fine\n"
        '"""Evaluation runs in epochs (prose: fine); see :class:`Evaluation`."""\n'
    )
    sample.write_text(code)
    in_code, in_text = old_uses_in_code(sample), old_uses_in_text(sample)
    assert len(in_code) == 5, in_code
    assert [line.split(":")[1] for line in in_text] == ["2", "4", "6", "8"], in_text
