"""Griffe extension: the reStructuredText in docstrings becomes Markdown the reference renders.

The docstrings name other objects the Sphinx way (``:class:`~tjap.placement.tree.window.Window```,
``:func:`solve```, ``:mod:`.topology```) and use a few other reStructuredText habits. Before a
docstring is parsed, this extension rewrites:

- each role into an optional cross-reference of mkdocs-autorefs: a link where the target is in
  the reference, plain code where it is not (never a warning). ``~`` shows the last name only; a
  name with a leading dot is relative to the object's package, a bare name to the object's
  module, and a name tjap re-exports (``tjap.solve``) to the module that defines it;
- a role naming a private module or object (``tjap.heuristics.tree._kernels.pick_start``), which
  has no page, into plain text naming the source file that holds it
  (``pick_start`` in ``heuristics/tree/_kernels.py``);
- double backticks in the type of a numpy parameter line (``name : array of ``n`` ints``), which
  the reference shows inside code, into plain words;
- a literal-block marker (``text::`` before an indented block) into ``text:`` (the indented block
  is a code block in Markdown as it is).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from griffe import Extension

ROOT = Path(__file__).resolve().parents[2]
ROLE = re.compile(r":(?:class|func|mod|data|meth|attr|exc|obj):`(?P<tilde>~?)(?P<target>[^`]+)`")
TOP_LEVEL = ("tjap", "placement", "heuristics", "learned", "benchmarks")
# the floors live in top-level folders and install under tjap (tjap/placement -> ../placement)
FLOOR_FOLDERS = {
    "tjap.placement": "placement",
    "tjap.heuristics": "heuristics",
    "tjap.learned": "learned",
}
PARAMETER_LINE = re.compile(r"^(?P<head>\s*[\w*]+(?:\s*,\s*[\w*]+)*\s+:\s+)(?P<type>.*``.*)$")
LITERAL_MARKER = re.compile(r"(?<=\S)::$", re.MULTILINE)


def reexports() -> dict[str, str]:
    """``tjap.NAME`` -> the path of the object it stands for, read from tjap's ``_LAZY`` table."""
    tree = ast.parse((ROOT / "tjap" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", "") == "_LAZY" for t in node.targets
        ):
            return {
                f"tjap.{name}": f"{module}.{name}"
                for name, module in ast.literal_eval(node.value).items()
            }
    return {}


REEXPORTS = reexports()


def identifier(target: str, module: str, package: str) -> str:
    """The full dotted path a role's target names, seen from ``module`` in ``package``."""
    if target.startswith("."):
        base = package.split(".")
        dots = len(target) - len(target.lstrip("."))
        base = base[: len(base) - dots + 1] if dots > 1 else base
        return ".".join([*base, target.lstrip(".")])
    if target in REEXPORTS:
        return REEXPORTS[target]
    if target.split(".")[0] in TOP_LEVEL or "." in target and not target[0].isupper():
        return target
    return f"{module}.{target}"


def private_part(full: str) -> int | None:
    """Index of the first private part (``_name``, not ``__name__``) of a dotted path, or None."""
    for i, part in enumerate(full.split(".")):
        if part.startswith("_") and not part.endswith("__"):
            return i
    return None


def source_file(module: str) -> str:
    """The repository path of a dotted module name: ``tjap.heuristics.tree._kernels`` ->
    ``heuristics/tree/_kernels.py`` (a package's path ends in its folder)."""
    for prefix, folder in FLOOR_FOLDERS.items():
        if module == prefix or module.startswith(prefix + "."):
            module = folder + module[len(prefix) :]
            break
    path = Path(*module.split("."))
    if (ROOT / path).is_dir():
        return f"{path.as_posix()}/"
    return f"{path.as_posix()}.py"


def plain_private(full: str, tilde: bool) -> str:
    """A private target as plain text: the object's name and the file it is in."""
    parts = full.split(".")
    # the module is the dotted prefix that is a file or folder; what follows are objects in it
    for end in range(len(parts), 0, -1):
        candidate = source_file(".".join(parts[:end]))
        if (ROOT / candidate).exists():
            break
    else:
        return f"<code>{parts[-1] if tilde else full}</code>"
    module_file = source_file(".".join(parts[:end]))
    if end == len(parts):
        return f"<code>{module_file}</code>"
    name = parts[-1] if tilde else ".".join(parts[end:])
    return f"<code>{name}</code> in <code>{module_file}</code>"


def rewrite(text: str, module: str, package: str) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs cross-reference, or by
    plain text for a private target."""

    def replace(match: re.Match) -> str:
        target = match["target"].rstrip("()")
        full = identifier(target, module, package)
        if private_part(full) is not None:
            return plain_private(full, bool(match["tilde"]))
        shown = target.lstrip(".").rsplit(".", 1)[-1] if match["tilde"] else target.lstrip(".")
        return f'<autoref identifier="{full}" optional><code>{shown}</code></autoref>'

    return ROLE.sub(replace, text)


def plain_types(text: str) -> str:
    """Numpy parameter lines without double backticks in their type part."""

    def line(match: re.Match) -> str:
        return match["head"] + match["type"].replace("``", "")

    return "\n".join(PARAMETER_LINE.sub(line, row) for row in text.split("\n"))


def markdown(text: str, module: str, package: str) -> str:
    """A docstring's reStructuredText habits turned into the Markdown the reference renders."""
    if ":`" in text:
        text = rewrite(text, module, package)
    if "``" in text:
        text = plain_types(text)
    return LITERAL_MARKER.sub(":", text)


class SphinxRoles(Extension):
    """Rewrite the reStructuredText of every docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is None:
            return
        module = obj.module
        package = module.path if module.is_init_module else module.path.rpartition(".")[0]
        obj.docstring.value = markdown(obj.docstring.value, module.path, package)
