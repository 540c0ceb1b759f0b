"""Every ``tjap`` option explains itself: each optional argument of every subcommand has a help
text, and every ``--help`` page renders its percent signs as written (a ``%%`` meant for
argparse's formatting never shows)."""

from __future__ import annotations

import argparse

import pytest

from tjap.cli import build_parser, main


def parsers(parser=None, path=()) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """``(path, parser)`` of ``tjap`` and of every subcommand under it, recursively."""
    parser = parser or build_parser()
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += parsers(sub, path + (name,))
    return found


PARSERS = parsers()


def test_the_walk_finds_nested_subcommands():
    paths = {path for path, _ in PARSERS}
    assert {
        ("bench", "exact"),
        ("train", "provision"),
        ("slurm", "place"),
        ("network", "evaluate"),
        ("methods",),
    } <= paths
    assert len(paths) > 25


def test_every_option_has_help():
    missing = []
    for path, parser in PARSERS:
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            if action.help == argparse.SUPPRESS:
                continue
            if not (action.help or "").strip():
                missing.append(f"tjap {' '.join(path)} {'/'.join(action.option_strings)}")
    assert not missing, f"{len(missing)} options without help: {missing}"


@pytest.mark.parametrize("path", [path for path, _ in PARSERS], ids=lambda p: " ".join(p) or "tjap")
def test_help_renders_percent_signs(path, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*path, "--help"])
    out, err = capsys.readouterr()
    assert stop.value.code == 0 and err == ""
    assert out.startswith("usage: tjap")
    assert "%%" not in out, [line for line in out.splitlines() if "%%" in line]
    assert "%(" not in out  # every %(default)s was filled in


def test_network_evaluate_help_names_the_load():
    parser = dict(PARSERS)[("network", "evaluate")]
    text = parser.format_help()
    assert "95%%" not in text and "default 0.95" in text
