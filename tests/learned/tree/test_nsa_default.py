"""What ``tjap.solve(w, "nsa")`` runs by default: the best settings measured (preset "best", the
shipped best-loop weights trained for the window's cost convention, look-ahead 32), recorded in
``Result.info``; ``preset="paper"`` keeps the paper's NSA, draw for draw as it ran when it was
the default.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tjap
from tjap.learned.tree.policy import (
    BEST_WEIGHTS,
    DEFAULT_WEIGHTS,
    WEIGHTS_DIR,
    default_preset,
    default_weights,
)
from tjap.placement.tree.stream import generate_windows

WEIGHTS = WEIGHTS_DIR
LAYOUTS = ("paper", "published")

#: ``tjap.solve(window(layout), "nsa", seed=7, iterations=120, convention=layout)`` as it ran when
#: the paper's settings were the default (recorded from that code): preset "paper", the shipped
#: published-setting CNN-3, no look-ahead.
PAPER_DEFAULT = {
    "paper": {"objective": 190507.04850704852, "order": [1, 0, 2, 3], "starts": [35, 14, 40, 70]},
    "published": {"objective": 63444.0, "order": [1, 0, 3, 2], "starts": [45, 81, 88, 61]},
}


@pytest.fixture(scope="module")
def windows():
    """The third window of each layout's stream (seed 11, capped at 5 jobs): 4 jobs, 795 idle."""
    return {
        layout: generate_windows(layout, 3, 11, cap=5, convention=layout)[2] for layout in LAYOUTS
    }


def _same(a, b):
    assert a.assignment == b.assignment and a.objective == b.objective
    assert a.info["order"] == b.info["order"] and a.info["starts"] == b.info["starts"]
    assert a.iterations == b.iterations


@pytest.mark.parametrize("layout", LAYOUTS)
def test_default_is_preset_best_with_the_conventions_weights(windows, layout):
    w = windows[layout]
    r = tjap.solve(w, "nsa", iterations=60, seed=3, convention=layout)
    assert r.info["preset"] == "best" and r.info["lookahead"] == 32
    assert Path(r.info["weights"]).name == f"nsa_cnn3_best_{layout}.json"
    assert r.info["weights_setting"] == layout
    explicit = tjap.solve(
        w,
        "nsa",
        iterations=60,
        seed=3,
        convention=layout,
        preset="best",
        weights=WEIGHTS / f"nsa_cnn3_best_{layout}.json",
        lookahead=32,
    )
    _same(r, explicit)
    assert r.info == explicit.info | {"iterations_per_s": r.info["iterations_per_s"]}
    assert r.method == "nsa" and r.iterations == 60


def test_default_iterations_are_the_best_loops(windows):
    r = tjap.solve(windows["paper"], "nsa")
    assert r.iterations == 1000 and r.info["preset"] == "best"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_preset_paper_is_the_previous_default_draw_for_draw(windows, layout):
    r = tjap.solve(
        windows[layout], "nsa", seed=7, iterations=120, convention=layout, preset="paper"
    )
    old = PAPER_DEFAULT[layout]
    assert r.objective == pytest.approx(old["objective"], rel=1e-12, abs=1e-9)
    assert r.info["order"] == old["order"] and r.info["starts"] == old["starts"]
    assert r.info["preset"] == "paper" and r.info["lookahead"] == 0
    assert Path(r.info["weights"]).name == "nsa_cnn3.json"
    assert r.info["weights_setting"] == "published"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_default_is_seeded_and_feasible(windows, layout):
    w = windows[layout]
    runs = [tjap.solve(w, "nsa", iterations=40, seed=s, convention=layout) for s in (5, 5, 6)]
    _same(runs[0], runs[1])
    _same(
        runs[0],
        tjap.solve(
            tjap.Window.from_json(w.to_json()), "nsa", iterations=40, seed=5, convention=layout
        ),
    )
    for r in runs:
        assert r.is_feasible() and r.status.value == "FEASIBLE"
        assert sorted(map(len, r.assignment)) == sorted(w.job_sizes)
        assert r.objective == pytest.approx(tjap.assignment_cost(w.topology, r.assignment, layout))
        assert r.objective <= r.info["initial_cost"] + 1e-9


def test_explicit_options_override_the_default(windows):
    w = windows["published"]
    r = tjap.solve(w, "nsa", iterations=30, lookahead=0, convention="published")
    assert (r.info["preset"], r.info["lookahead"], r.iterations) == ("best", 0, 30)
    # weights trained for the other convention, named: they run, and info says so
    r = tjap.solve(
        w,
        "nsa",
        iterations=30,
        convention="published",
        weights=WEIGHTS / "nsa_cnn3_best_paper.json",
    )
    assert (r.info["preset"], r.info["weights_setting"]) == ("best", "paper")


@pytest.mark.parametrize(
    "name, preset",
    [
        ("nsa_cnn3_paper.json", "paper"),
        ("nsa_cnn3.json", "paper"),
        ("nsa_cnn3_best_published.json", "best"),
    ],
)
def test_weights_given_without_a_preset_run_in_their_loop(windows, name, preset):
    """Weights not trained in the best loop (which preset "best" refuses) run under the
    paper's preset, as they did when it was the default; best-loop weights under "best"."""
    assert default_preset(WEIGHTS / name) == preset
    r = tjap.solve(windows["paper"], "nsa", iterations=20, seed=2, weights=WEIGHTS / name)
    assert r.info["preset"] == preset and r.info["lookahead"] == (32 if preset == "best" else 0)
    _same(
        r,
        tjap.solve(
            windows["paper"], "nsa", iterations=20, seed=2, weights=WEIGHTS / name, preset=preset
        ),
    )


def test_default_weights_by_preset_and_convention():
    assert default_preset() == "best"
    assert default_weights("best", "paper") == BEST_WEIGHTS["paper"]
    assert default_weights("best", "published") == BEST_WEIGHTS["published"]
    assert default_weights("paper", "published") == DEFAULT_WEIGHTS
    assert default_weights("published", "published") == DEFAULT_WEIGHTS
    for convention, path in BEST_WEIGHTS.items():
        training = json.loads(path.read_text())["training"]
        assert training["loop"] == "best" and training["setting"] == convention


def test_bad_convention_is_one_line_before_any_weights(windows):
    from tjap.learned.tree.policy import solve_nsa

    with pytest.raises(tjap.InvalidInputError) as info:
        solve_nsa(windows["paper"], convention="nope", iterations=5)
    assert "\n" not in str(info.value) and "nope" in str(info.value)


def test_cli_solve_runs_and_reports_the_default(tmp_path, windows, capsys):
    from tjap.cli import main

    path = tmp_path / "w.json"
    path.write_text(windows["published"].to_json())
    assert (
        main(
            [
                "solve",
                str(path),
                "--method",
                "nsa",
                "--iterations",
                "20",
                "--convention",
                "published",
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    data = data[0] if isinstance(data, list) else data
    info = data["info"]
    assert (info["preset"], info["lookahead"], info["weights_setting"]) == ("best", 32, "published")
    assert Path(info["weights"]).name == "nsa_cnn3_best_published.json"
