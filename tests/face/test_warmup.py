"""``python -m tjap.warmup``: each run names what it compiles, and a run that fails is reported in
its line instead of stopping the set-up."""

from __future__ import annotations

from tjap import warmup


def test_every_run_is_named_and_a_failing_one_is_reported(monkeypatch):
    assert set(warmup.RUNS) >= {"tree: fat-tree window", "batch simulator", "audit", "network"}
    assert (warmup.EXAMPLES / "window.json").is_file()

    def broken():
        raise RuntimeError("no such kernel")

    monkeypatch.setitem(warmup.RUNS, "broken", broken)
    name, seconds, problem = warmup._run("broken")
    assert name == "broken" and seconds >= 0 and problem == "RuntimeError: no such kernel"


def test_a_run_compiles_and_says_nothing_on_success():
    name, _, problem = warmup._run("tree: switch-tree window")
    assert problem is None
