"""MkDocs hook: the command-line page is written from the ``tjap`` argument parser itself.

``docs/cli.md`` holds the marker ``<!-- tjap-cli-reference -->``; this hook replaces it with one
section per subcommand (``tjap``, ``tjap solve``, ``tjap bench exact``, ...), each with its
``--help`` text, read from :func:`tjap.cli.build_parser`. A subcommand added to the parser appears
on the page with no edit here.
"""

from __future__ import annotations

import argparse
import os

MARKER = "<!-- tjap-cli-reference -->"
HELP_WIDTH = "100"


def command_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("tjap",)):
    """Yield (command path, parser) for ``parser`` and every subcommand below it, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from command_parsers(child, (*path, name))


def cli_reference() -> str:
    """Markdown sections with the ``--help`` text of every ``tjap`` command."""
    from tjap.cli import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH  # argparse wraps help at the terminal width
    try:
        sections = []
        for path, parser in command_parsers(build_parser()):
            level = "#" * min(2 + len(path) - 1, 4)
            sections.append(
                f"{level} `{' '.join(path)}`\n\n```text\n{parser.format_help().rstrip()}\n```\n"
            )
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(sections)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Fill the command-line page's marker; other pages pass through."""
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_reference())
    return markdown
