"""The files switch trees are read from: UTF-8 text, JSON and YAML documents, and what kind of
tree a file holds.

:func:`read_utf8` reads a file's text; :func:`load_documents` parses a path, a text or data
already parsed into its documents (JSON, or YAML with one or several ``---`` documents);
:func:`file_kind` tells a Slurm ``topology.conf``, a JSON tree, a Slurm ``topology.yaml``,
``kubectl get nodes -o json`` output and Volcano HyperNode manifests apart by their content.
Every problem is one line of :class:`~tjap.core.errors.InvalidInputError` naming the file and the fix.
PyYAML is imported only when a YAML text is parsed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from tjap.core.errors import InvalidInputError, MissingDependencyError

#: The kinds of file :func:`file_kind` tells apart (``tjap topology show --format``).
FILE_KINDS = ("conf", "json", "yaml", "kube-nodes", "hypernodes")

_YAML_START = re.compile(r"^\s*(?:-\s+)?(?:topology|apiVersion|kind|items|metadata)\s*:")


def read_utf8(path, what: str) -> str:
    """The text of the file at ``path``, read as UTF-8 (a leading byte order mark dropped).

    A file that cannot be read, or whose bytes are not UTF-8, is one line of
    :class:`InvalidInputError` naming it (``what`` says what the file is, e.g. "topology file")
    and, for bytes that are not UTF-8, the first bad byte and its offset.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise InvalidInputError(
            f"cannot read {what} {str(path)!r}: {error.strerror or error}"
        ) from None
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as error:
        offset = bom + error.start
        raise InvalidInputError(
            f"{what} {str(path)!r} is not UTF-8 text (byte 0x{data[offset]:02x} at offset "
            f"{offset}); save it as UTF-8"
        ) from None


def source_text(source, what: str) -> tuple[str, str]:
    """``(text, label)`` of a source given as a path (``os.PathLike``, or a string without a
    newline) or as the text itself (a string holding a newline); ``label`` names it in errors."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source):
        return read_utf8(source, what), f"{what} {str(source)!r}"
    if not isinstance(source, str):
        raise InvalidInputError(
            f"a {what} is a path or the file's text, got {type(source).__name__}"
        )
    return source, f"the {what} text"


def parse_text(text: str, label: str) -> list:
    """The documents of a JSON or YAML text (JSON when it starts with ``{`` or ``[`` and parses
    as JSON; YAML otherwise, every ``---`` document, empty ones left out)."""
    json_error = None
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [json.loads(text)]
        except RecursionError:
            raise InvalidInputError(f"{label} nests too deeply; flatten it") from None
        except ValueError as error:  # flow-style YAML, or broken JSON (said if YAML fails too)
            json_error = (
                f"line {error.lineno}: {error.msg}"
                if hasattr(error, "lineno")
                else " ".join(str(error).split())[:120]
            )
    try:
        import yaml
    except ImportError:
        raise MissingDependencyError(f"reading {label} needs PyYAML; pip install pyyaml") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = list(yaml.load_all(text, Loader=loader))
    except RecursionError:
        raise InvalidInputError(f"{label} nests too deeply; flatten it") from None
    except (ValueError, OverflowError) as error:  # a number YAML cannot convert
        reason = " ".join(str(error).split())[:120]
        raise InvalidInputError(
            f"{label} holds a value YAML cannot read ({reason}); quote it or shorten it"
        ) from None
    except yaml.YAMLError as error:
        if json_error is not None:
            raise InvalidInputError(f"{label} is not valid JSON ({json_error})") from None
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = " ".join(str(getattr(error, "problem", None) or error).split())[:120]
        raise InvalidInputError(
            f"{label} is not valid YAML ({where}{problem}); fix the indentation or quote the value"
        ) from None
    return [d for d in documents if d is not None]


def load_documents(source, what: str) -> tuple[list, str]:
    """``(documents, label)`` of ``source``: a path or a text (see :func:`source_text`),
    parsed by :func:`parse_text`, or data already parsed (a dict or a list: one document)."""
    if isinstance(source, (dict, list, tuple)):
        return [source], f"the {what}"
    text, label = source_text(source, what)
    return parse_text(text, label), label


def _item_kind(item) -> str | None:
    """The kind of a List's item; one without ``kind`` is a HyperNode if its spec has a tier,
    else a Node if it has metadata."""
    if not isinstance(item, dict):
        return None
    if "kind" in item:
        return item["kind"]
    if isinstance(item.get("spec"), dict) and "tier" in item["spec"]:
        return "HyperNode"
    return "Node" if isinstance(item.get("metadata"), dict) else None


def _kind_of(document) -> str | None:
    """The Kubernetes kind of a document: a List's items' kind when they share one."""
    if not isinstance(document, dict):
        return None
    kind = document.get("kind")
    if kind in ("List", "NodeList", "HyperNodeList") or (kind is None and "items" in document):
        items = document.get("items")
        kinds = {_item_kind(item) for item in items} if isinstance(items, list) else set()
        if kind == "NodeList" or kinds == {"Node"}:
            return "Node"
        if kind == "HyperNodeList" or kinds == {"HyperNode"}:
            return "HyperNode"
        return None
    return kind if isinstance(kind, str) else None


def file_kind(text: str, label: str = "the file") -> str:
    """What a tree file holds, read from its content: ``"conf"`` (Slurm ``topology.conf``),
    ``"json"`` (:meth:`~tjap.placement.tree.topology.Topology.to_dict`'s form), ``"yaml"``
    (Slurm ``topology.yaml``), ``"kube-nodes"`` (``kubectl get nodes -o json``) or
    ``"hypernodes"`` (Volcano HyperNode manifests).

    A text whose first line that is no comment starts with ``{`` or ``[``, or with a YAML key
    (``topology:``, ``- topology:``, ``apiVersion:``, ``kind:``), is parsed; anything else is a
    ``topology.conf``. An empty text (or only comments), a Kubernetes List with no items and a
    parsed text of none of the kinds are one-line errors.
    """
    first = next(
        (line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")),
        "",
    )
    if not first:
        raise InvalidInputError(
            f"{label} is empty (nothing but blank lines and comments); give the cluster's "
            "topology.conf, topology.yaml, JSON tree, node list or HyperNode manifests"
        )
    if not (first.lstrip()[:1] in ("{", "[") or _YAML_START.match(first)):
        return "conf"
    documents = parse_text(text, label)
    if documents and all(isinstance(d, dict) and d.get("items") == [] for d in documents):
        raise InvalidInputError(
            f"{label} is a Kubernetes List with no items "
            "(items: []), so it holds no node and no HyperNode; give a List that holds them "
            "(kubectl get nodes -o json, HyperNode manifests)"
        )
    kinds = {_kind_of(d) for d in documents}
    if len(documents) == 1 and isinstance(documents[0], dict) and "switches" in documents[0]:
        return "json"
    if kinds == {"Node"}:
        return "kube-nodes"
    if kinds == {"HyperNode"}:
        return "hypernodes"
    if (
        len(documents) == 1
        and isinstance(documents[0], list)
        and all(isinstance(t, dict) and "topology" in t for t in documents[0])
    ):
        return "yaml"
    found = ", ".join(sorted(k for k in kinds if k)) or "no Kubernetes kind"
    raise InvalidInputError(
        f"{label} is neither a Slurm topology.yaml (a list of '- topology: NAME' entries), "
        f'a JSON tree ({{"switches": [...]}}), kubectl get nodes -o json output nor HyperNode '
        f"manifests (found {found}); name its format with --format"
    )
