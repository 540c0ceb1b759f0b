"""Window validation, the sorted read-only idle sequence, JSON round trips and window files."""

import json

import numpy as np
import pytest

from tjap import FatTree, InvalidInputError, Window, load_windows


# -- validation -----------------------------------------------------------------------------------
def test_ids_out_of_range(tree):
    with pytest.raises(InvalidInputError, match=r"idle_nodes.*16.*0\.\.15"):
        Window(tree, [0, 1, 16], [1])
    with pytest.raises(InvalidInputError, match=r"idle_nodes.*-1"):
        Window(tree, [-1, 1, 2], [1])


def test_repeated_ids(tree):
    with pytest.raises(InvalidInputError, match=r"idle_nodes repeats node 3"):
        Window(tree, [3, 1, 3, 4], [1])


@pytest.mark.parametrize("sizes,bad", [([0], "job_sizes[0] = 0"), ([2, -1], "job_sizes[1] = -1")])
def test_size_below_one(tree, sizes, bad):
    with pytest.raises(InvalidInputError) as info:
        Window(tree, [0, 1, 2, 3], sizes)
    assert bad in str(info.value)
    assert "at least 1" in str(info.value)


def test_sizes_above_idle_count(tree):
    with pytest.raises(InvalidInputError, match=r"request 5 nodes but only 4 are idle"):
        Window(tree, [0, 1, 2, 3], [3, 2])
    Window(tree, [0, 1, 2, 3], [2, 2])  # exactly the idle count is fine


def test_empty_window(tree):
    with pytest.raises(InvalidInputError, match="job_sizes is empty"):
        Window(tree, [0, 1], [])
    with pytest.raises(InvalidInputError, match="only 0 are idle"):
        Window(tree, [], [1])


@pytest.mark.parametrize(
    "idle,sizes,field",
    [
        ([0, 1.0, 2], [1], r"idle_nodes\[1\]"),
        ([0, 1, "2"], [1], r"idle_nodes\[2\]"),
        ([0, True, 2], [1], r"idle_nodes\[1\]"),
        ([0, None], [1], r"idle_nodes\[1\]"),
        ([0, 1, 2], [1.5], r"job_sizes\[0\]"),
        ([0, 1, 2], [1, np.float64(1)], r"job_sizes\[1\]"),
        ([0, 1, 2], [False], r"job_sizes\[0\]"),
    ],
)
def test_non_integer_entries(tree, idle, sizes, field):
    with pytest.raises(InvalidInputError, match=field) as info:
        Window(tree, idle, sizes)
    assert "integer" in str(info.value)


@pytest.mark.parametrize(
    "idle,sizes,field",
    [
        ("0123", [1], "idle_nodes"),
        (5, [1], "idle_nodes"),
        ([0, 1, 2], 2, "job_sizes"),
    ],
)
def test_non_list_fields(tree, idle, sizes, field):
    with pytest.raises(InvalidInputError, match=field):
        Window(tree, idle, sizes)


def test_topology_must_be_a_fattree():
    with pytest.raises(InvalidInputError, match="topology"):
        Window({"num_nodes": 16}, [0, 1], [1])


def test_numpy_inputs_accepted(tree):
    w = Window(tree, np.array([5, 2, 9], dtype=np.int32), np.array([2, 1]))
    assert w.idle_nodes.tolist() == [2, 5, 9]
    assert w.job_sizes == (2, 1)
    assert all(type(n) is int for n in w.job_sizes)


# -- the idle sequence Q --------------------------------------------------------------------------
def test_idle_nodes_sorted_and_read_only(tree):
    idle = [9, 3, 14, 0, 7]
    w = Window(tree, idle, [2, 1])
    assert w.idle_nodes.tolist() == [0, 3, 7, 9, 14]
    assert w.idle_nodes.dtype == np.int64
    assert w.num_idle == 5 and w.num_jobs == 2
    assert w.job_sizes == (2, 1)
    assert isinstance(w.job_sizes, tuple)
    with pytest.raises(ValueError):
        w.idle_nodes[0] = 1
    idle[0] = 15  # the window keeps its own copy
    assert w.idle_nodes.tolist() == [0, 3, 7, 9, 14]


def test_meta_is_read_only(tree):
    meta = {"epoch": 3}
    w = Window(tree, [0, 1], [1], meta=meta)
    with pytest.raises(TypeError):
        w.meta["epoch"] = 4
    meta["epoch"] = 99
    assert w.meta["epoch"] == 3


def test_equality(tree):
    a = Window(tree, [3, 1, 2], [2], meta={"x": 1})
    b = Window(FatTree(k=4), [1, 2, 3], [2])
    assert a == b  # meta is not part of the instance
    assert a != Window(tree, [1, 2, 3], [1])
    assert a != Window(tree, [1, 2, 4], [2])
    assert "3 idle nodes" in repr(a)


# -- JSON -----------------------------------------------------------------------------------------
def test_json_round_trip_keeps_meta(tree):
    w = Window(tree, [12, 0, 5, 6], [2, 1], meta={"epoch": 2, "time": 3600.0, "tag": "x"})
    text = w.to_json()
    data = json.loads(text)
    assert data["idle_nodes"] == [0, 5, 6, 12]
    assert data["job_sizes"] == [2, 1]
    assert data["topology"] == {"num_nodes": 16, "nodes_per_switch": 2, "switches_per_pod": 2}
    back = Window.from_json(text)
    assert back == w
    assert dict(back.meta) == {"epoch": 2, "time": 3600.0, "tag": "x"}
    assert back.topology == tree


def test_json_without_meta(tree):
    w = Window(tree, [0, 1, 2], [3])
    assert "meta" not in json.loads(w.to_json())
    back = Window.from_json(w.to_json())
    assert back == w and dict(back.meta) == {}
    # meta: null is accepted as no meta
    d = w.to_dict()
    d["meta"] = None
    assert dict(Window.from_dict(d).meta) == {}


def test_round_trip_random(window_factory):
    for seed in range(20):
        w = window_factory(seed)
        back = Window.from_json(w.to_json())
        assert back == w
        assert back.meta == w.meta


@pytest.mark.parametrize("text", ["", "{", "[1, 2", "{'topology': 1}", "nan nan"])
def test_malformed_json(text):
    with pytest.raises(InvalidInputError, match="not valid JSON"):
        Window.from_json(text)


@pytest.mark.parametrize("missing", ["topology", "idle_nodes", "job_sizes"])
def test_missing_fields(tree, missing):
    d = Window(tree, [0, 1, 2], [2]).to_dict()
    del d[missing]
    with pytest.raises(InvalidInputError, match=f"missing field.*{missing}"):
        Window.from_dict(d)
    with pytest.raises(InvalidInputError, match=missing):
        Window.from_json(json.dumps(d))


def test_missing_topology_field(tree):
    d = Window(tree, [0, 1, 2], [2]).to_dict()
    del d["topology"]["nodes_per_switch"]
    with pytest.raises(InvalidInputError, match="nodes_per_switch"):
        Window.from_dict(d)


@pytest.mark.parametrize(
    "data,match",
    [
        ([1, 2, 3], "JSON object"),
        ("window", "JSON object"),
        ({"topology": [16], "idle_nodes": [0], "job_sizes": [1]}, "topology"),
        (
            {
                "topology": {"num_nodes": 16, "nodes_per_switch": 2, "switches_per_pod": 2},
                "idle_nodes": [0, 1],
                "job_sizes": [1],
                "meta": [1],
            },
            "meta",
        ),
        (
            {
                "topology": {"num_nodes": 16, "nodes_per_switch": 2, "switches_per_pod": 2},
                "idle_nodes": [0, 1],
                "job_sizes": "1",
            },
            "job_sizes",
        ),
        (
            {
                "topology": {"num_nodes": 16, "nodes_per_switch": 2, "switches_per_pod": 2},
                "idle_nodes": [0, 1.5],
                "job_sizes": [1],
            },
            r"idle_nodes\[1\]",
        ),
    ],
)
def test_malformed_dicts(data, match):
    with pytest.raises(InvalidInputError, match=match):
        Window.from_dict(data)
    with pytest.raises(InvalidInputError, match=match):
        Window.from_json(json.dumps(data))


# -- window files ---------------------------------------------------------------------------------
def test_load_single_json(tmp_path, tree):
    w = Window(tree, [0, 3, 4], [2], meta={"i": 0})
    path = tmp_path / "one.json"
    path.write_text(w.to_json())
    got = load_windows(path)
    assert got == [w]
    assert got[0].meta["i"] == 0
    assert load_windows(str(path)) == [w]


def test_load_json_list(tmp_path, window_factory):
    ws = [window_factory(s) for s in range(5)]
    path = tmp_path / "many.json"
    path.write_text(json.dumps([w.to_dict() for w in ws]))
    assert load_windows(path) == ws


def test_load_jsonl_skips_blank_lines(tmp_path, window_factory):
    ws = [window_factory(s) for s in range(4)]
    path = tmp_path / "w.jsonl"
    path.write_text(ws[0].to_json() + "\n\n" + "\n".join(w.to_json() for w in ws[1:]) + "\n   \n")
    got = load_windows(path)
    assert got == ws
    assert [w.meta["seed"] for w in got] == [0, 1, 2, 3]


def test_jsonl_bad_line_reports_line_number(tmp_path, tree):
    good = Window(tree, [0, 1, 2], [2]).to_json()
    bad = json.loads(good)
    bad["job_sizes"] = [5]
    path = tmp_path / "w.jsonl"
    path.write_text("\n".join([good, good, json.dumps(bad), good]) + "\n")
    with pytest.raises(InvalidInputError) as info:
        load_windows(path)
    msg = str(info.value)
    assert f"{path}:3:" in msg
    assert "request 5 nodes" in msg


def test_jsonl_invalid_json_line(tmp_path, tree):
    good = Window(tree, [0, 1, 2], [2]).to_json()
    path = tmp_path / "w.jsonl"
    path.write_text(good + "\n{oops\n")
    with pytest.raises(InvalidInputError, match=r"w\.jsonl:2:.*not valid JSON"):
        load_windows(path)


def test_json_file_errors(tmp_path, tree):
    path = tmp_path / "bad.json"
    path.write_text("[{")
    with pytest.raises(InvalidInputError, match="not valid JSON"):
        load_windows(path)
    good = Window(tree, [0, 1, 2], [2]).to_dict()
    path.write_text(json.dumps([good, {"topology": good["topology"], "idle_nodes": [0]}]))
    with pytest.raises(InvalidInputError, match=r"bad\.json.*missing field.*job_sizes"):
        load_windows(path)


def test_missing_file(tmp_path):
    with pytest.raises(InvalidInputError, match="cannot read window file"):
        load_windows(tmp_path / "nope.json")
