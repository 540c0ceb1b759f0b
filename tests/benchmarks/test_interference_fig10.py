"""The Fig. 10 plot script reads training metadata and says clearly when it cannot."""

import json

import numpy as np
import pytest

from benchmarks.interference_fig10 import load_run, main, smooth
from tjap.core.errors import InvalidInputError


def _run(tmp_path, name, single, returns):
    curve = [{"phase": "bc", "epoch": 0, "loss": 1.0, "accuracy": 0.5}]
    curve += [
        {"phase": "ppo", "episode": i, "step": 100 * (i + 1), "return": r, "jobs": 10}
        for i, r in enumerate(returns)
    ]
    path = tmp_path / f"{name}.json"
    path.write_text(
        json.dumps(
            {
                "training": {
                    "single_agent": single,
                    "curve": curve,
                    "figures": {"eval_avg_jct": [4.0]},
                }
            }
        )
    )
    return str(path)


def test_smooth_is_a_trailing_mean():
    assert np.allclose(smooth(np.array([1.0, 3.0, 5.0, 7.0]), 2), [1.0, 2.0, 4.0, 6.0])


def test_load_run_turns_returns_into_cost_per_job(tmp_path):
    run = load_run(_run(tmp_path, "m", False, [-50.0, -30.0]))
    assert run["label"].startswith("multi-agent")
    assert np.allclose(run["cost_per_job"], [5.0, 3.0]) and list(run["steps"]) == [100, 200]


def test_bad_metadata_is_one_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidInputError, match="not the metadata"):
        load_run(str(bad))
    no_ppo = tmp_path / "bc.json"
    no_ppo.write_text(json.dumps({"training": {"single_agent": False, "curve": []}}))
    with pytest.raises(InvalidInputError, match="no PPO curve"):
        load_run(str(no_ppo))
    assert main([str(bad)]) == 2 and "error" in capsys.readouterr().err


def test_plots_both_runs(tmp_path, capsys):
    figure = tmp_path / "fig.png"
    assert (
        main(
            [
                _run(tmp_path, "m", False, [-50.0] * 5),
                _run(tmp_path, "s", True, [-40.0] * 5),
                "--window",
                "2",
                "--figure",
                str(figure),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert figure.exists() and "single agent" in out and "multi-agent" in out


def test_fine_tuning_runs_get_a_greedy_jct_panel(tmp_path, capsys):
    path = _run(tmp_path, "ft", True, [-2.0, 1.0, 0.5])
    meta = json.loads(open(path).read())
    meta["training"]["init"] = "learned/weights/interference_single.json"
    meta["training"]["command"] = "tjap train interference --reward jct_rule"
    meta["training"]["curve"] += [
        {"phase": "eval", "step": s, "avg_jct": [4.0 + s / 1000, 4.2]} for s in (0, 200)
    ]
    (tmp_path / "ft.json").write_text(json.dumps(meta))
    run = load_run(str(tmp_path / "ft.json"))
    assert "from clone, jct_rule" in run["label"]
    assert list(run["eval_steps"]) == [0, 200] and np.allclose(run["eval_jct"], [4.1, 4.2])
    figure = tmp_path / "ft.png"
    assert main([str(tmp_path / "ft.json"), "--window", "2", "--figure", str(figure)]) == 0
    out = capsys.readouterr().out
    assert figure.exists() and "0: 4.1000, 200: 4.2000" in out
