"""What every compiled annealing loop shares: its random draws and its one accept step.

The DCAS loop of :mod:`tjap.heuristics.tree._kernels` (SA, LNS and NSA, with or without job
constraints) and the interference annealer of :mod:`tjap.heuristics.interference.anneal` accept
a move by :func:`accept_move` at the temperature of :func:`temperature`, drawing with
:func:`draw`: from a generator state of their own (the DCAS loop, see below) or from Numba's
global generator (``rng`` None, the interference annealer).

The generator state is MT19937: the generator of np.random.RandomState and of Numba's
np.random, seeded the same way (init_genrand) and read the same way (random_sample), so the
draws are the same as a plain-Python twin's. The state is one int64 array: the 624 words, the
position and the end of the buffered draws, then the buffer (random_sample's 53-bit integers),
filled a twist (312 draws) at a time. A loop refills it between moves (:func:`rng_reserve`), so
a draw inside the move is a load. Why not Numba's np.random there: it is an opaque call, and an
opaque call (or any kernel call) inside a move keeps the atomic reference counting of the
loop's arrays, which costs more than the move itself.
"""

import numpy as np
from numba import types
from numba.extending import overload

from tjap.core.jit import njit, njit_inline

_MT_N = 624
_MT_M = 397
_MASK32 = 0xFFFFFFFF
_DRAW_POS = _MT_N  # the next buffered draw
_DRAW_END = _MT_N + 1  # the end of the buffered draws
_DRAWS = _MT_N + 2  # the buffer of draws
_TWO_TO_53 = 9007199254740992.0


@njit
def rng_state(max_reserve):
    """A generator state for reservations (:func:`rng_reserve`) of up to ``max_reserve`` draws."""
    return np.zeros(_DRAWS + max_reserve + _MT_N // 2, np.int64)


@njit
def rng_seed(state, seed):
    """Seed the generator as ``np.random.seed(seed)`` (init_genrand); the buffer is empty."""
    x = seed & _MASK32
    for i in range(_MT_N):
        state[i] = x
        x = (1812433253 * (x ^ (x >> 30)) + i + 1) & _MASK32
    state[_DRAW_POS] = 0
    state[_DRAW_END] = 0


@njit
def _rng_refill(state):
    """Move the unused buffered draws to the front and append the 312 draws of the next twist of
    the 624 words (random_sample: 53 bits from two tempered words)."""
    used = state[_DRAW_POS]
    left = state[_DRAW_END] - used
    for i in range(left):
        state[_DRAWS + i] = state[_DRAWS + used + i]
    for t in range(_MT_N):  # the twist
        y = (state[t] & 0x80000000) | (state[(t + 1) % _MT_N] & 0x7FFFFFFF)
        x = state[(t + _MT_M) % _MT_N] ^ (y >> 1)
        if y & 1:
            x ^= 0x9908B0DF
        state[t] = x
    for i in range(_MT_N // 2):  # tempering, two words a draw
        a = state[2 * i]
        a ^= a >> 11
        a ^= (a << 7) & 0x9D2C5680
        a ^= (a << 15) & 0xEFC60000
        a ^= a >> 18
        b = state[2 * i + 1]
        b ^= b >> 11
        b ^= (b << 7) & 0x9D2C5680
        b ^= (b << 15) & 0xEFC60000
        b ^= b >> 18
        state[_DRAWS + left + i] = (a >> 5) * 67108864 + (b >> 6)
    state[_DRAW_POS] = 0
    state[_DRAW_END] = left + _MT_N // 2


@njit_inline
def rng_reserve(state, count):
    """Make sure that the next ``count`` draws are buffered (``count`` at most the state's
    ``max_reserve``)."""
    while state[_DRAW_POS] + count > state[_DRAW_END]:
        _rng_refill(state)


@njit_inline
def _buffered_draw(state):
    i = state[_DRAW_POS]
    state[_DRAW_POS] = i + 1
    return state[_DRAWS + i] / _TWO_TO_53


def draw(rng):
    """A uniform double in [0, 1): the next buffered draw of the generator state ``rng`` (see
    :func:`rng_reserve`), or from Numba's global generator (``np.random.seed``) if ``rng`` is
    None."""


# numba's stubs omit "cache" from jit_options; the one jit policy (tjap.core.jit) caches
@overload(draw, inline="always", jit_options={"cache": True, "nogil": True})  # type: ignore[typeddict-unknown-key]
def _draw(rng):
    if isinstance(rng, (types.NoneType, types.Omitted)):
        return lambda rng: np.random.random()

    return lambda rng: _buffered_draw(rng)


@njit_inline
def temperature(t_start, ratio, it, iterations):
    """The temperature of iteration ``it`` of ``iterations``, cooled exponentially from
    ``t_start`` (iteration 0) to ``t_start * ratio`` (the last): ``ratio`` is t_end / t_start."""
    return t_start * ratio ** (it / max(iterations - 1, 1))


@njit_inline
def accept_move(delta, metropolis, t_start, ratio, it, iterations, rng):
    """The accept step of every annealing loop: whether a move that changes the cost by
    ``delta`` is taken. Always when it does not worsen the cost; a worse one, with
    ``metropolis``, with probability exp(-delta / T) at the :func:`temperature` T of iteration
    ``it`` (one :func:`draw` of ``rng``), else never. Draws nothing for a move it takes
    outright or refuses, so a loop's draws stay in the order its plain-Python twin makes them."""
    if delta <= 0.0:
        return True
    if metropolis:
        return draw(rng) < np.exp(-delta / temperature(t_start, ratio, it, iterations))
    return False
