"""FatTree layouts: sizes of the paper's and the published layout, numbering, hop levels, errors."""

import numpy as np
import pytest

import tjap
from tjap import FatTree, InvalidInputError
from tjap.placement.tree.fat_tree import OTHER_POD, SAME_POD, SAME_SWITCH


def test_paper_k20_has_10_pods_of_100():
    t = FatTree(k=20, num_nodes=1000)
    assert t.k == 20
    assert t.num_nodes == 1000
    assert t.nodes_per_switch == 10
    assert t.switches_per_pod == 10
    assert t.nodes_per_pod == 100
    assert t.num_edge_switches == 100
    assert t.num_pods == 10
    assert FatTree.from_layout("paper") == t


def test_k_alone_gives_the_full_tree():
    t = FatTree(k=4)
    assert t.num_nodes == 16
    assert (t.nodes_per_switch, t.switches_per_pod) == (2, 2)
    assert (t.num_edge_switches, t.num_pods) == (8, 4)
    assert FatTree(k=20).num_nodes == 2000


def test_published_layout_25_pods_of_40():
    t = FatTree.from_layout("published")
    assert t.k is None
    assert t.num_nodes == 1000
    assert t.nodes_per_switch == 10
    assert t.switches_per_pod == 4
    assert t.nodes_per_pod == 40
    assert t.num_edge_switches == 100
    assert t.num_pods == 25
    assert t == FatTree(num_nodes=1000, nodes_per_switch=10, switches_per_pod=4)
    assert t != FatTree.from_layout("paper")


def test_from_layout_other_size():
    assert FatTree.from_layout("published", num_nodes=80).num_pods == 2
    assert FatTree.from_layout("paper", num_nodes=250).num_pods == 3  # last pod pruned


def test_switch_and_pod_numbering():
    t = FatTree(num_nodes=1000, nodes_per_switch=10, switches_per_pod=4)
    ids = np.arange(1000)
    np.testing.assert_array_equal(t.switch_of, ids // 10)
    np.testing.assert_array_equal(t.pod_of, ids // 40)
    assert t.switch_of[0] == t.switch_of[9] == 0
    assert t.switch_of[10] == 1
    assert t.pod_of[39] == 0 and t.pod_of[40] == 1
    assert t.switch_of[999] == 99 and t.pod_of[999] == 24
    p = FatTree.from_layout("paper")
    assert p.pod_of[99] == 0 and p.pod_of[100] == 1 and p.pod_of[999] == 9
    assert p.switch_of[999] == 99


def test_pruned_last_pod_and_switch():
    t = FatTree(num_nodes=18, nodes_per_switch=4, switches_per_pod=2)
    assert t.num_edge_switches == 5  # 4 full switches + 2 nodes
    assert t.num_pods == 3  # 2 full pods of 8 + 2 nodes
    assert t.switch_of[17] == 4 and t.pod_of[17] == 2
    assert t.switch_of.max() == t.num_edge_switches - 1
    assert t.pod_of.max() == t.num_pods - 1


def test_numbering_arrays_are_read_only():
    t = FatTree(k=4)
    with pytest.raises(ValueError):
        t.switch_of[0] = 5
    with pytest.raises(ValueError):
        t.pod_of[0] = 5


def test_hop_level(tree):
    # tree: 2 nodes per switch, 2 switches per pod
    assert (SAME_SWITCH, SAME_POD, OTHER_POD) == (0, 1, 2)
    assert tree.hop_level(0, 1) == SAME_SWITCH
    assert tree.hop_level(1, 0) == SAME_SWITCH
    assert tree.hop_level(0, 0) == SAME_SWITCH
    assert tree.hop_level(0, 2) == SAME_POD
    assert tree.hop_level(1, 3) == SAME_POD
    assert tree.hop_level(3, 4) == OTHER_POD
    assert tree.hop_level(0, 15) == OTHER_POD
    assert tree.hop_level(14, 15) == SAME_SWITCH
    assert tree.hop_level(12, 15) == SAME_POD


def test_hop_level_matches_numbering(tree):
    for a in range(tree.num_nodes):
        for b in range(tree.num_nodes):
            if a // 2 == b // 2:
                expected = SAME_SWITCH
            elif a // 4 == b // 4:
                expected = SAME_POD
            else:
                expected = OTHER_POD
            assert tree.hop_level(a, b) == expected


def test_dict_round_trip_and_hash():
    t = FatTree(k=20, num_nodes=1000)
    back = FatTree.from_dict(t.to_dict())
    assert back == t
    assert hash(back) == hash(t)
    assert t.to_dict() == {"num_nodes": 1000, "nodes_per_switch": 10, "switches_per_pod": 10}
    assert "k=20" in repr(t)
    assert "nodes_per_switch=10" in repr(FatTree.from_layout("published"))


def _raises(match, **kwargs):
    with pytest.raises(InvalidInputError, match=match) as info:
        FatTree(**kwargs)
    assert isinstance(info.value, tjap.TjapError)
    assert isinstance(info.value, ValueError)
    return str(info.value)


def test_odd_k():
    msg = _raises(r"\bk\b", k=5)
    assert "even" in msg and "5" in msg


def test_num_nodes_above_capacity():
    msg = _raises("num_nodes", k=4, num_nodes=17)
    assert "17" in msg and "16" in msg
    FatTree(k=4, num_nodes=16)  # exactly the capacity is fine


def test_mixing_k_and_general_layout():
    _raises("nodes_per_switch", k=4, nodes_per_switch=2)
    _raises("switches_per_pod", k=4, switches_per_pod=2)


def test_incomplete_general_layout():
    _raises("nodes_per_switch", num_nodes=16)
    _raises("switches_per_pod", num_nodes=16, nodes_per_switch=2)
    _raises("num_nodes", nodes_per_switch=2, switches_per_pod=2)


@pytest.mark.parametrize(
    "field,kwargs",
    [
        ("k", {"k": 0}),
        ("k", {"k": -4}),
        ("k", {"k": 4.0}),
        ("k", {"k": True}),
        ("num_nodes", {"k": 4, "num_nodes": 0}),
        ("num_nodes", {"num_nodes": -1, "nodes_per_switch": 2, "switches_per_pod": 2}),
        ("num_nodes", {"num_nodes": 16.5, "nodes_per_switch": 2, "switches_per_pod": 2}),
        ("nodes_per_switch", {"num_nodes": 16, "nodes_per_switch": 0, "switches_per_pod": 2}),
        ("switches_per_pod", {"num_nodes": 16, "nodes_per_switch": 2, "switches_per_pod": -3}),
        ("switches_per_pod", {"num_nodes": 16, "nodes_per_switch": 2, "switches_per_pod": "2"}),
    ],
)
def test_non_positive_or_non_integer_values(field, kwargs):
    msg = _raises(field, **kwargs)
    assert "positive integer" in msg


def test_numpy_integers_are_accepted():
    t = FatTree(num_nodes=np.int64(16), nodes_per_switch=np.int32(2), switches_per_pod=np.int64(2))
    assert t == FatTree(k=4)


def test_unknown_layout():
    with pytest.raises(InvalidInputError, match="layout"):
        FatTree.from_layout("fancy")


def test_from_dict_errors():
    with pytest.raises(InvalidInputError, match="topology"):
        FatTree.from_dict([16, 2, 2])
    with pytest.raises(InvalidInputError, match="switches_per_pod"):
        FatTree.from_dict({"num_nodes": 16, "nodes_per_switch": 2})
    with pytest.raises(InvalidInputError, match="nodes_per_switch"):
        FatTree.from_dict({"num_nodes": 16, "nodes_per_switch": 0, "switches_per_pod": 2})
