"""Thresholds of the regression provisioners for user-set interruption weights (seed 004, 4.5)."""

from __future__ import annotations

import itertools
import json
import shutil

import numpy as np
import pytest
from provision_cases import EXACT, PAIR, H, busy_trace

from tjap.core.errors import InvalidInputError, UnknownMethodError
from tjap.heuristics.batch.rules import run_episode
from tjap.learned.batch.calibrate import SCALES, SHIFTS_H, choose, penalty_h, training_args
from tjap.learned.batch.episodes import first_submission, record_episode, stack
from tjap.learned.batch.policy import parse_name
from tjap.learned.batch.weights import WEIGHTS_DIR, read_metadata, thresholds
from tjap.placement.batch.chained import ChainedEpisode
from tjap.registry import make as make_policy


def transformer_with_thresholds(tmp_path, table: dict):
    """A copy of the shipped transformer whose metadata holds the threshold ``table``."""
    for f in WEIGHTS_DIR.glob("provision_transformer.*"):
        shutil.copy(f, tmp_path / f.name)
    meta_path = tmp_path / "provision_transformer.json"
    meta = json.loads(meta_path.read_text())
    meta["thresholds"] = {"by_interruption_weight": table}
    meta_path.write_text(json.dumps(meta))
    return meta_path


def test_penalty_weighs_interruption_and_counts_overlap_once():
    assert penalty_h(np.array([2 * H, -3 * H]), 1.0) == pytest.approx(2.5)
    assert penalty_h(np.array([2 * H, -3 * H]), 4.0) == pytest.approx((8 + 3) / 2)
    assert penalty_h(np.array([0]), 7.0) == 0.0


def test_choose_finds_the_grids_best_rule_by_brute_force():
    jobs = busy_trace()
    data = stack([record_episode(jobs, 4, t * H, PAIR, EXACT) for t in (30, 33, 36)])
    rng = np.random.default_rng(0)
    pred_h = data["wait_s"] / H + rng.normal(0, 1.5, len(data["wait_s"]))  # a noisy regressor
    remaining_h = data["remaining_s"] / H
    for weight in (1.0, 4.0):
        chosen = choose(data, pred_h, [weight])[f"{weight:g}"]
        brute = min(
            penalty_h(first_submission(data, a * pred_h + b >= remaining_h)[0], weight)
            for a, b in itertools.product(SCALES, SHIFTS_H)
        )
        assert chosen["penalty_h"] == pytest.approx(brute)
        assert chosen["penalty_h"] <= chosen["plain_rule_penalty_h"] + 1e-12
        got = first_submission(data, chosen["scale"] * pred_h + chosen["shift_h"] >= remaining_h)[0]
        assert penalty_h(got, weight) == pytest.approx(chosen["penalty_h"])


def test_an_exact_predictor_keeps_the_plain_rule():
    data = stack([record_episode(busy_trace(), 4, t * H, PAIR, EXACT) for t in (30, 33)])
    chosen = choose(data, data["wait_s"] / H, [1.0])["1"]
    # predicted wait = the probed wait: the plain rule is optimal, and ties go to it
    assert (chosen["scale"], chosen["shift_h"]) == (1.0, 0.0)


def test_names_with_a_weight_are_parsed_and_checked():
    assert parse_name("moe") == ("moe", None)
    assert parse_name("moe@2") == ("moe", 2.0)
    for bad in ("moe@", "moe@x", "moe@-1", "moe@0"):
        with pytest.raises(InvalidInputError, match="positive number"):
            parse_name(bad)
    with pytest.raises(UnknownMethodError, match="choose one of"):
        make_policy("provision", "moo@2")


def test_uncalibrated_weight_names_the_fix():
    with pytest.raises(
        InvalidInputError, match="tjap provision calibrate --trace TRACE --interruption-weights 3.5"
    ):
        thresholds({"thresholds": {"by_interruption_weight": {"1": {}}}}, 3.5, "moe@3.5")


def test_heads_refuse_weights_they_were_not_trained_for():
    pytest.importorskip("torch")
    with pytest.raises(InvalidInputError, match="--e-interruption 2"):
        make_policy("provision", "moe_dqn@2")


def test_calibrated_threshold_changes_the_decisions(tmp_path):
    pytest.importorskip("torch")
    # a threshold that always submits (shift 1000 h) and one that equals the plain rule
    transformer_with_thresholds(
        tmp_path, {"9": {"scale": 0.0, "shift_h": 1000.0}, "1": {"scale": 1.0, "shift_h": 0.0}}
    )
    early = make_policy("provision", "transformer@9", weights_dir=tmp_path)
    assert early.name == "transformer@9" and (early.scale, early.shift_h) == (0.0, 1000.0)
    ep = ChainedEpisode(busy_trace(), 4, 30 * H, PAIR, config=EXACT)
    run_episode(ep, early)
    assert ep.submitted_s == 30 * H  # the first decision
    plain = make_policy("provision", "transformer", weights_dir=tmp_path)
    same = make_policy("provision", "transformer@1", weights_dir=tmp_path)
    outcomes = [
        run_episode(ChainedEpisode(busy_trace(), 4, 30 * H, PAIR, config=EXACT), p)
        for p in (plain, same)
    ]
    assert outcomes[0] == outcomes[1]


def test_training_args_come_from_the_shipped_metadata():
    meta = read_metadata(WEIGHTS_DIR / "provision_moe.json")
    args, recorded = training_args(meta)
    assert (args.episodes, args.seed, args.start, args.end) == (1600, 0, "2022-11-01", "2023-03-01")
    assert recorded == meta["episodes"]["train"] + meta["episodes"]["validation"]
    with pytest.raises(InvalidInputError, match="cannot be read"):
        training_args({"command": "python -m tjap.learned.batch.train --bogus"})


def test_benchmark_reuses_saved_injection_times_only_with_the_same_settings(tmp_path):
    from benchmarks.provision import _cells, _read_times

    key = {
        "trace": "ls6-a100.tsv",
        "from": "2023-03-01",
        "to": "2023-04-01",
        "scheduler": "mirage",
        "seed": 0,
        "tries_per_pair": 40,
    }
    path = tmp_path / "t.times.json"
    path.write_text(json.dumps({"key": key, "cells": {json.dumps([1, "heavy"]): [5, 7, 9]}}))
    assert _read_times(path, key) == {(1, "heavy"): [5, 7, 9]}
    with pytest.raises(SystemExit, match="other settings"):
        _read_times(path, key | {"seed": 1})
    path.write_text("{not json")
    with pytest.raises(SystemExit, match="cannot read --times"):
        _read_times(path, key)
    assert _cells("1:heavy,8:light") == [(1, "heavy"), (8, "light")]
    with pytest.raises(SystemExit, match="NODES:LOAD"):
        _cells("2:heavy")


def test_calibrate_command_writes_thresholds_beside_existing_ones(tmp_path):
    pytest.importorskip("torch")
    from tjap.cli import main

    meta_path = transformer_with_thresholds(tmp_path, {"9": {"scale": 0.0, "shift_h": 1000.0}})
    data = stack([record_episode(busy_trace(), 4, t * H, PAIR, EXACT) for t in (30, 33)])
    np.savez(tmp_path / "held_out.npz", **data)  # a cached recording: nothing is re-recorded
    assert (
        main(
            [
                "provision",
                "calibrate",
                "--trace",
                "unused.tsv",
                "--models",
                "transformer",
                "--interruption-weights",
                "2",
                "--weights-dir",
                str(tmp_path),
                "--data",
                str(tmp_path / "held_out.npz"),
            ]
        )
        == 0
    )
    table = json.loads(meta_path.read_text())["thresholds"]["by_interruption_weight"]
    assert list(table) == ["2", "9"] and table["9"]["shift_h"] == 1000.0
    assert table["2"]["scale"] in SCALES and table["2"]["shift_h"] in SHIFTS_H
    assert (
        make_policy("provision", "transformer@2", weights_dir=tmp_path).scale == table["2"]["scale"]
    )


CALIBRATE = ["provision", "calibrate", "--trace", "unused.tsv"]


def test_calibrate_takes_interruption_weights_and_the_deprecated_weights_alias(capsys):
    """``--interruption-weights`` names calibrate's numbers (elsewhere ``--weights`` is a weights
    file); ``--weights`` still works with numbers, with one warning line."""
    from tjap.cli import build_parser
    from tjap.cli.batch import DEFAULT_INTERRUPTION_WEIGHTS, _interruption_weights

    parse = build_parser().parse_args
    assert _interruption_weights(parse(CALIBRATE)) == DEFAULT_INTERRUPTION_WEIGHTS == [1, 2, 4]
    assert _interruption_weights(parse(CALIBRATE + ["--interruption-weights", "1", "8"])) == [1, 8]
    assert capsys.readouterr().err == ""
    assert _interruption_weights(parse(CALIBRATE + ["--weights", "2", "4.5"])) == [2, 4.5]
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "deprecated" in err and "--interruption-weights" in err


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--weights", "learned/weights/provision_moe.json"], "not a weights file"),
        (["--weights", "2", "--interruption-weights", "2"], "--interruption-weights only"),
        (["--interruption-weights", "0"], "positive number"),
        (["--interruption-weights", "x"], "positive number"),
    ],
)
def test_calibrate_weight_errors_are_one_line(extra, words, capsys):
    from tjap.cli import main

    try:
        code = main(CALIBRATE + extra)
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (code, out, err)
    assert err.startswith("tjap: error: ") and words in err, err
