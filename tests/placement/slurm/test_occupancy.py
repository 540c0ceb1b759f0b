"""The occupancy rebuild (tjap.placement.slurm.occupancy) against a brute force on small histories."""

import numpy as np
import pytest

from tjap.core.errors import InvalidInputError
from tjap.placement.slurm.occupancy import NO_END, History, HistoryBuilder, Sweep


def brute_busy(h: History, a: int, num_nodes: int, strict: bool = False) -> np.ndarray:
    """Busy counts at a's start, from the definition: every b started before a (by start, then
    key, then index) that had not ended by a's start (strict: before it)."""
    busy = np.zeros(num_nodes, np.int64)
    mine = (h.start[a], h.key[a], a)
    for b in range(h.size):
        running = h.end[b] >= h.start[a] if strict else h.end[b] > h.start[a]
        if b != a and (h.start[b], h.key[b], b) < mine and running:
            for v in h.nodes_of(b):
                busy[v] += 1
    return busy


def random_history(rng, m: int, num_nodes: int) -> History:
    start = rng.integers(0, 12, m)
    length = rng.integers(0, 6, m)
    end = [None if rng.random() < 0.15 else int(s + d) for s, d in zip(start, length)]
    nodes = [rng.choice(num_nodes, rng.integers(1, num_nodes + 1), replace=False) for _ in range(m)]
    key = rng.integers(0, 4, m)  # ties in start and key both happen
    return History.from_lists(start.tolist(), end, nodes, key=key.tolist())


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("seed", range(60))
def test_sweep_equals_brute_force(seed, strict):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    h = random_history(rng, int(rng.integers(1, 14)), n)
    path = np.array([[0, 1 + v % 2] for v in range(n)])  # switch 0 above all, 1 and 2 halves
    sweep = Sweep(h, n, strict=strict, node_path=path, num_switches=3)
    for k, a in enumerate(sweep.order):
        busy = brute_busy(h, int(a), n, strict)
        assert sweep.busy_before(k).tolist() == busy.tolist(), (seed, k)
        idle = busy == 0
        assert sweep.idle.tolist() == idle.astype(int).tolist()
        assert sweep.switch_idle.tolist() == [idle.sum(), idle[0::2].sum(), idle[1::2].sum()]
    assert (sweep.busy >= 0).all()


def test_end_frees_nodes_for_a_start_at_the_same_second_unless_strict():
    h = History.from_lists(start=[0, 10], end=[10, 20], nodes=[[0, 1], [0, 1]])
    assert Sweep(h, 2).busy_before(1).tolist() == [0, 0]
    assert Sweep(h, 2, strict=True).busy_before(1).tolist() == [1, 1]


def test_running_allocation_holds_to_the_end():
    h = History.from_lists(start=[0, 1000], end=[None, 1001], nodes=[[0], [1]])
    s = Sweep(h, 2)
    assert h.end[0] == NO_END
    assert s.busy_before(1).tolist() == [1, 0]


def test_zero_length_allocation_holds_nothing_unless_strict():
    h = History.from_lists(start=[5, 5], end=[5, 9], nodes=[[0], [0]])
    assert Sweep(h, 1).busy_before(1).tolist() == [0]
    assert Sweep(h, 1, strict=True).busy_before(1).tolist() == [1]


def test_builder_equals_from_lists():
    rng = np.random.default_rng(3)
    h = random_history(rng, 50, 8)
    b = HistoryBuilder(capacity=2)
    for i in range(h.size):
        end = None if h.end[i] == NO_END else int(h.end[i])
        b.add(int(h.start[i]), end, int(h.key[i]), h.nodes_of(i))
    g = b.build()
    for name in ("start", "end", "key", "ptr", "nodes"):
        assert np.array_equal(getattr(g, name), getattr(h, name)), name


def test_bad_histories_are_refused():
    with pytest.raises(InvalidInputError, match="ends before it starts"):
        History.from_lists(start=[5], end=[4], nodes=[[0]])
    h = History.from_lists(start=[0], end=[1], nodes=[[3]])
    with pytest.raises(InvalidInputError, match="node ids"):
        Sweep(h, 2)
    s = Sweep(History.from_lists(start=[0, 1], end=[2, 3], nodes=[[0], [0]]), 1)
    s.busy_before(1)
    with pytest.raises(InvalidInputError, match="past"):
        s.busy_before(0)
