"""The one check vocabulary of the core (tjap.core.errors): check_int, check_number, is_int, and
the one accept step of every annealing loop (tjap.core.anneal)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tjap.core.errors import InvalidInputError, check_int, check_number, is_int


# -- integers --------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0, 7, -3, 2**70, np.int64(5), np.uint8(3), np.int32(-1)])
def test_python_and_numpy_integers_are_integers(value):
    assert is_int(value)
    got = check_int("x", value)
    assert got == value and type(got) is int


@pytest.mark.parametrize(
    "value", [True, False, np.bool_(True), 2.0, 1.5, "3", None, [1], np.array(3), 1 + 0j]
)
def test_bools_floats_and_the_rest_are_no_integers(value):
    assert not is_int(value)
    with pytest.raises(InvalidInputError, match=r"^x must be an integer, got "):
        check_int("x", value)


@pytest.mark.parametrize(
    "low, high, rule",
    [
        (None, None, "an integer"),
        (0, None, "a non-negative integer"),
        (1, None, "a positive integer"),
        (2, None, "an integer >= 2"),
        (None, 9, "an integer <= 9"),
        (1, 100000, "an integer in [1, 100000]"),
    ],
)
def test_the_message_states_the_rule_of_the_bounds(low, high, rule):
    value = -5 if low is not None else 10 if high is not None else 2.5
    with pytest.raises(InvalidInputError) as caught:
        check_int("iterations", value, low, high)
    assert str(caught.value) == f"iterations must be {rule}, got {value!r}"


def test_bounds_are_inclusive():
    assert check_int("k", 1, 1, 3) == 1 and check_int("k", 3, 1, 3) == 3
    for value in (0, 4):
        with pytest.raises(InvalidInputError, match=r"k must be an integer in \[1, 3\], got"):
            check_int("k", value, 1, 3)


def test_a_rule_given_in_words_replaces_the_one_of_the_bounds():
    with pytest.raises(InvalidInputError) as caught:
        check_int("cap", 0, 1, must="a positive number of jobs")
    assert str(caught.value) == "cap must be a positive number of jobs, got 0"


def test_a_long_value_is_cut_to_40_characters():
    with pytest.raises(InvalidInputError) as caught:
        check_int("sizes", list(range(100)))
    assert str(caught.value) == f"sizes must be an integer, got {list(range(100))!r:.40}"


def test_the_error_is_a_value_error():
    with pytest.raises(ValueError):
        check_int("x", "y")


# -- numbers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value", [0, 2.5, -1e300, np.float32(0.25), np.float64(3.0), np.int64(4), Fraction(1, 2)]
)
def test_integers_and_floats_are_numbers(value):
    got = check_number("x", value)
    assert got == float(value) and type(got) is float


@pytest.mark.parametrize("value", [True, np.bool_(False), "1", None, 1j, [1.0]])
def test_bools_and_the_rest_are_no_numbers(value):
    with pytest.raises(InvalidInputError, match=r"^x must be a finite number, got "):
        check_number("x", value)


@pytest.mark.parametrize("value", [math.nan, np.nan, math.inf, -math.inf, np.float32("inf")])
def test_nan_and_infinities_are_refused(value):
    with pytest.raises(InvalidInputError, match=r"^x must be a finite number, got "):
        check_number("x", value)


def test_infinities_are_taken_when_asked_and_nan_never():
    assert check_number("x", math.inf, finite=False) == math.inf
    assert check_number("x", -math.inf, finite=False) == -math.inf
    with pytest.raises(InvalidInputError, match=r"^x must be a number, got nan"):
        check_number("x", math.nan, finite=False)
    with pytest.raises(InvalidInputError, match=r"x must be a number >= 0, got -inf"):
        check_number("x", -math.inf, 0, finite=False)


def test_an_integer_too_large_for_a_float_is_no_finite_number():
    with pytest.raises(InvalidInputError, match="must be a finite number"):
        check_number("x", 10**400)


@pytest.mark.parametrize(
    "low, high, options, rule",
    [
        (0, None, {"low_open": True}, "a positive number"),
        (0, None, {}, "a number >= 0"),
        (2.5, None, {"low_open": True}, "a number > 2.5"),
        (None, 1, {"high_open": True}, "a number < 1"),
        (None, 1, {}, "a number <= 1"),
        (0, 1, {}, "a number in [0, 1]"),
        (0, 10, {"low_open": True}, "a number in (0, 10]"),
        (0, 1, {"low_open": True, "high_open": True}, "a number in (0, 1)"),
        (0.0, 1e9, {}, "a number in [0, 1e+09]"),
    ],
)
def test_the_message_states_the_interval(low, high, options, rule):
    value = -7.5 if low is not None else 99
    with pytest.raises(InvalidInputError) as caught:
        check_number("rate", value, low, high, **options)
    assert str(caught.value) == f"rate must be {rule}, got {value!r}"


def test_open_and_closed_ends():
    assert check_number("p", 0, 0, 1) == 0.0 and check_number("p", 1, 0, 1) == 1.0
    for value in (0, 1):
        with pytest.raises(InvalidInputError, match=r"p must be a number in \(0, 1\), got"):
            check_number("p", value, 0, 1, low_open=True, high_open=True)


def test_a_number_rule_given_in_words():
    with pytest.raises(InvalidInputError) as caught:
        check_number("rate", 0, 0, 1000, low_open=True, must="a number in (0, 1000] jobs")
    assert str(caught.value) == "rate must be a number in (0, 1000] jobs, got 0"


# -- the wordings the callers keep -----------------------------------------------------------------
def test_callers_word_their_checks_alike():
    from tjap.heuristics.tree.operators import LookaheadRepair, make_repair
    from tjap.placement.interference import make_cluster
    from tjap.placement.tree.fat_tree import FatTree
    from tjap.placement.tree.jobs import Job

    cases = [
        (lambda: Job(True), "a job's nodes must be a positive integer, got True"),
        (lambda: Job(4, segment=0), "segment must be a positive integer, got 0"),
        (lambda: make_repair("paper", q=0), "repair q must be a positive integer, got 0"),
        (lambda: LookaheadRepair(k=2.0), "look-ahead k must be a positive integer, got 2.0"),
        (
            lambda: LookaheadRepair(temperature=math.nan),
            "look-ahead temperature must be a finite number >= 0, got nan",
        ),
        (
            lambda: FatTree(num_nodes=np.bool_(True), nodes_per_switch=2, switches_per_pod=2),
            "num_nodes must be a positive integer, got np.True_",
        ),
        # 4.5: make_cluster caches by value, and 4.0 == 4 would find a k=4 cluster built before
        (lambda: make_cluster("fattree", 4.5), "fattree k must be an integer, got 4.5"),
    ]
    for make, message in cases:
        with pytest.raises(InvalidInputError) as caught:
            make()
        assert str(caught.value) == message


# -- the one accept step ---------------------------------------------------------------------------
def test_the_accept_step_draws_only_for_a_worse_move_under_metropolis():
    """accept_move draws one number for a worse move under Metropolis, and none otherwise, so
    the loops' draws stay in the order of their plain-Python twins; its temperature cools
    exponentially from t_start to t_start * ratio."""
    from tjap.core.anneal import accept_move, draw, rng_reserve, rng_seed, rng_state, temperature
    from tjap.core.jit import njit

    @njit
    def run(deltas, metropolis, t_start, ratio, seed):
        rng = rng_state(8)
        rng_seed(rng, seed)
        taken = np.zeros(deltas.shape[0], np.bool_)
        for it in range(deltas.shape[0]):
            rng_reserve(rng, 1)
            taken[it] = accept_move(deltas[it], metropolis, t_start, ratio, it, 4, rng)
        rng_reserve(rng, 1)
        return taken, draw(rng)  # the next draw tells how many were made

    deltas = np.array([-1.0, 0.0, 50.0, 3000.0])
    t_start, ratio = 1000.0, 0.01
    taken, after = run(deltas, True, t_start, ratio, 5)
    draws = np.random.RandomState(5).random_sample(3)
    temperatures = [t_start * ratio ** (it / 3) for it in range(4)]
    assert [temperature(t_start, ratio, it, 4) for it in range(4)] == temperatures
    expected = [True, True]
    expected += [draws[i] < math.exp(-deltas[i + 2] / temperatures[i + 2]) for i in (0, 1)]
    assert taken.tolist() == expected and after == draws[2]  # two draws, for the worse moves
    taken, after = run(deltas, False, t_start, ratio, 5)
    assert taken.tolist() == [True, True, False, False] and after == draws[0]  # none
