"""Griffe extension: Sphinx cross-reference roles in docstrings become links in the reference.

The docstrings name other objects the Sphinx way (``:class:`~tjap.placement.tree.window.Window```,
``:func:`solve```, ``:mod:`.topology```). This extension rewrites each role, before the docstring
is parsed, into an optional cross-reference of mkdocs-autorefs: a link where the target is in the
reference, plain code where it is not (never a warning). ``~`` shows the last name only; a name
with a leading dot is relative to the object's package, a bare name to the object's module, and
a name tjap re-exports (``tjap.solve``) to the module that defines it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from griffe import Extension

ROLE = re.compile(r":(?:class|func|mod|data|meth|attr|exc|obj):`(?P<tilde>~?)(?P<target>[^`]+)`")
TOP_LEVEL = ("tjap", "placement", "heuristics", "learned", "benchmarks")


def reexports() -> dict[str, str]:
    """``tjap.NAME`` -> the path of the object it stands for, read from tjap's ``_LAZY`` table."""
    tree = ast.parse((Path(__file__).resolve().parents[2] / "tjap" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_LAZY" for t in node.targets):
            return {f"tjap.{name}": f"{module}.{name}"
                    for name, module in ast.literal_eval(node.value).items()}
    return {}


REEXPORTS = reexports()


def identifier(target: str, module: str, package: str) -> str:
    """The full dotted path a role's target names, seen from ``module`` in ``package``."""
    if target.startswith("."):
        base = package.split(".")
        dots = len(target) - len(target.lstrip("."))
        base = base[:len(base) - dots + 1] if dots > 1 else base
        return ".".join([*base, target.lstrip(".")])
    if target in REEXPORTS:
        return REEXPORTS[target]
    if target.split(".")[0] in TOP_LEVEL or "." in target and not target[0].isupper():
        return target
    return f"{module}.{target}"


def rewrite(text: str, module: str, package: str) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs cross-reference."""
    def replace(match: re.Match) -> str:
        target = match["target"].rstrip("()")
        shown = target.lstrip(".").rsplit(".", 1)[-1] if match["tilde"] else target.lstrip(".")
        full = identifier(target, module, package)
        return f'<autoref identifier="{full}" optional><code>{shown}</code></autoref>'
    return ROLE.sub(replace, text)


class SphinxRoles(Extension):
    """Rewrite Sphinx roles in every docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is None or ":`" not in obj.docstring.value:
            return
        module = obj.module
        package = module.path if module.is_init_module else module.path.rpartition(".")[0]
        obj.docstring.value = rewrite(obj.docstring.value, module.path, package)
