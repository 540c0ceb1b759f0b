"""Sizes beyond what tjap supports are refused before anything of that size is allocated (one
line, well under a second, little memory), files that are not UTF-8 are one line naming the bad
byte, and window files with keys the reader does not use are refused, never silently ignored."""

from __future__ import annotations

import json
import shutil
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tjap.cli import main
from tjap.core.errors import InvalidInputError
from tjap.placement.batch.jobs import Jobs
from tjap.placement.batch.replay import replay_trace
from tjap.placement.batch.simulator import MAX_ALLOCATIONS, Simulator
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.topology import MAX_NODES, Topology
from tjap.placement.tree.window import Window, load_windows

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "learned" / "weights"
CONF = (
    "SwitchName=leaf1 Nodes=n[01-04]\nSwitchName=leaf2 Nodes=n[05-06]\n"
    "SwitchName=top Switches=leaf[1-2]\n"
)


def refused(call, *fragments, seconds: float = 5.0, megabytes: float = 64) -> str:
    """``call()`` raises a one-line InvalidInputError holding ``fragments``, within ``seconds``
    and allocating at most ``megabytes`` (traced by tracemalloc, NumPy's arrays included). The
    time bound is far above a refusal (0.1-1.1 s seen on a loaded 2-core machine) and far below
    expanding what is refused (minutes to hours)."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(InvalidInputError) as info:
            call()
    finally:
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    message = str(info.value)
    assert len(message.splitlines()) == 1, message
    for fragment in fragments:
        assert fragment in message, message
    assert elapsed < seconds, (elapsed, message)
    assert peak < megabytes * 2**20, (peak, message)
    return message


def window(topology, idle=(0, 1, 2, 3), sizes=(2,), **extra) -> str:
    return json.dumps(
        {"topology": topology, "idle_nodes": list(idle), "job_sizes": list(sizes), **extra}
    )


# -- fat-trees and windows -------------------------------------------------------------------------
def test_the_limit_is_a_million_nodes():
    assert MAX_NODES == 1_000_000
    assert FatTree(k=158).num_nodes == 158**3 // 4 <= MAX_NODES  # the largest full k-ary one


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_nodes": 10**9, "nodes_per_switch": 10, "switches_per_pod": 10},
        {"num_nodes": 2**63, "nodes_per_switch": 2**63, "switches_per_pod": 2**63},
        {"num_nodes": MAX_NODES + 1, "nodes_per_switch": 1, "switches_per_pod": 1},
        {"num_nodes": 16, "nodes_per_switch": 2**40, "switches_per_pod": 2**40},  # int64 overflow
        {"k": 10**6},  # k^3/4 nodes
        {"k": 2**64, "num_nodes": 16},
    ],
)
def test_fat_tree_sizes_beyond_the_limit_are_refused_before_allocating(kwargs):
    refused(lambda: FatTree(**kwargs), f"{MAX_NODES:,}")


def test_fat_tree_at_the_limit_is_built():
    tree = FatTree(num_nodes=16, nodes_per_switch=MAX_NODES, switches_per_pod=MAX_NODES)
    assert tree.num_edge_switches == 1 and tree.num_pods == 1


@pytest.mark.parametrize(
    "topology",
    [
        {"num_nodes": 1_000_000_000, "nodes_per_switch": 10, "switches_per_pod": 10},
        {"num_nodes": 16, "nodes_per_switch": 9223372036854775808, "switches_per_pod": 2},
        {"k": 10_000},
    ],
)
def test_window_topology_too_large_is_refused(tmp_path, topology):
    refused(lambda: Window.from_json(window(topology)), f"{MAX_NODES:,}")
    path = tmp_path / "w.json"
    path.write_text(window(topology))
    refused(lambda: load_windows(path), str(path), f"{MAX_NODES:,}")


def test_window_too_large_on_the_command_line_is_one_line(tmp_path, capsys):
    path = tmp_path / "w.json"
    path.write_text(window({"num_nodes": 10**9, "nodes_per_switch": 10, "switches_per_pod": 10}))
    assert main(["solve", str(path), "--method", "seq"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "1,000,000" in err


def test_idle_hostlist_longer_than_the_tree_is_refused_before_expanding():
    tree = Topology.from_slurm(CONF)
    refused(lambda: Window(tree, "n[0-999999999]", [1]), "n[0-999999999]", "6 nodes")


# -- switch trees ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, fragment",
    [
        ("SwitchName=s1 Nodes=n[0-999999999]\n", "n[0-999999999]"),
        ("SwitchName=s1 Nodes=r[0-99999]n[0-99999]\n", "r[0-99999]n[0-99999]"),
        (
            "SwitchName=s1 Nodes=a[1-10]\nSwitchName=s2 Nodes=b[0-999999]\n"
            "SwitchName=top Switches=s[1-2]\n",
            "with the 10 nodes listed before it",
        ),
        ("SwitchName=top Switches=s[0-99999999]\n", "switches"),
    ],
)
def test_topology_conf_too_large_is_refused_before_expanding(tmp_path, text, fragment):
    refused(lambda: Topology.from_slurm(text), fragment, f"{MAX_NODES:,}")
    path = tmp_path / "topology.conf"
    path.write_text(text)
    refused(lambda: Topology.from_file(path), "line ", f"{MAX_NODES:,}")


def test_json_tree_too_large_is_refused_before_expanding(tmp_path):
    path = tmp_path / "tree.json"
    path.write_text(json.dumps({"switches": [{"name": "s", "nodes": "n[0-999999999]"}]}))
    refused(lambda: Topology.from_file(path), "switches[0]", f"{MAX_NODES:,}")
    window_path = tmp_path / "w.json"
    window_path.write_text(window({"json": "tree.json"}, idle=["n1"], sizes=[1]))
    refused(lambda: load_windows(window_path), f"{MAX_NODES:,}")


def test_tree_nodes_summed_over_lines_are_limited():
    half = MAX_NODES // 2 + 1
    text = (
        f"SwitchName=s1 Nodes=a[1-{half}]\nSwitchName=s2 Nodes=b[1-{half}]\n"
        "SwitchName=top Switches=s[1-2]\n"
    )
    with pytest.raises(InvalidInputError, match=f"line 2: .*{half:,} nodes listed before it"):
        Topology.from_slurm(text)


def test_topology_constructor_is_limited():
    too_many = ["n"] * (MAX_NODES + 1)  # refused by their count, before their names
    refused(lambda: Topology(["s"], [-1], too_many, [0] * len(too_many)), f"{MAX_NODES:,}")


# -- traces and the batch simulator ----------------------------------------------------------------
def test_trace_job_of_a_trillion_nodes_is_refused_by_the_replay(tmp_path):
    path = tmp_path / "big.swf"
    path.write_text(
        "; MaxNodes: 1000000000000\n"
        "1 0 0 100 1000000000000 -1 -1 1000000000000 200 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 5 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    refused(lambda: replay_trace(path), "1,000,000", seconds=10)  # the loader's kernels load
    refused(lambda: replay_trace(path), "--nodes", f"{MAX_NODES:,}")
    refused(lambda: replay_trace(path, nodes=64), "remove the larger jobs", f"{MAX_NODES:,}")


def jobs_of(sizes) -> Jobs:
    n = len(sizes)
    return Jobs.build(
        submit_s=np.arange(n), nodes=sizes, limit_s=np.full(n, 10), runtime_s=np.full(n, 5)
    )


def test_simulator_sizes_are_limited():
    refused(lambda: Simulator(jobs_of([1, 2]), nodes=10**12), "--nodes", f"{MAX_NODES:,}")
    many = MAX_ALLOCATIONS // MAX_NODES + 1
    refused(lambda: Simulator(jobs_of([MAX_NODES] * many), nodes=MAX_NODES), f"{MAX_ALLOCATIONS:,}")


# -- text that is not UTF-8 ------------------------------------------------------------------------
LATIN1_CONF = "# r\xe9seau du b\xe2timent A\nSwitchName=s1 Nodes=n[1-4]\n".encode("latin-1")


def test_topology_conf_not_utf8_names_the_byte(tmp_path):
    path = tmp_path / "topology.conf"
    path.write_bytes(LATIN1_CONF)
    for read in (Topology.from_slurm, Topology.from_file, lambda p: Topology.from_slurm(str(p))):
        refused(
            lambda: read(path),
            "topology.conf",
            "not UTF-8 text (byte 0xe9 at offset 3)",
            "save it as UTF-8",
        )


def test_a_byte_order_mark_is_read_past(tmp_path):
    path = tmp_path / "topology.conf"
    path.write_bytes(b"\xef\xbb\xbf" + CONF.encode())
    assert Topology.from_slurm(path) == Topology.from_slurm(CONF)


def test_non_utf8_files_on_the_command_line_are_one_line(tmp_path, capsys):
    conf = tmp_path / "topology.conf"
    conf.write_bytes(LATIN1_CONF)
    (tmp_path / "w.json").write_text(window({"slurm": "topology.conf"}, idle=["n1", "n2"]))
    (tmp_path / "utf16.json").write_bytes(window({"k": 4}).encode("utf-16"))
    for argv in (
        ["topology", "show", str(conf)],
        [
            "generate",
            "windows",
            "--topology",
            str(conf),
            "--num-windows",
            "1",
            "--out",
            str(tmp_path / "out.jsonl"),
        ],
        ["solve", str(tmp_path / "w.json"), "--method", "seq"],
        ["solve", str(tmp_path / "utf16.json"), "--method", "seq"],
    ):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and len(err.splitlines()) == 1, (argv, err)
        assert "is not UTF-8 text (byte 0x" in err and "save it as UTF-8" in err, err


# -- JSON the parser refuses -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "text", ["[" * 100_000 + "]" * 100_000, '{"topology": {"k": 1' + "0" * 5000 + "}}"]
)
def test_json_too_deep_or_too_long_a_number_is_one_line(tmp_path, text):
    refused(lambda: Window.from_json(text), "not valid JSON")
    for name in ("w.json", "w.jsonl"):
        (tmp_path / name).write_text(text)
        refused(lambda: load_windows(tmp_path / name), "not valid JSON")
    (tmp_path / "tree.json").write_text(text)
    refused(lambda: Topology.from_file(tmp_path / "tree.json"), "not valid JSON")


# -- weights metadata ------------------------------------------------------------------------------
def test_model_sizes_edited_into_metadata_are_refused_before_building(tmp_path):
    pytest.importorskip("torch")
    from tjap.learned.interference.policy import load_model
    from tjap.learned.policy_io import MAX_MODEL_SIZE

    meta = json.loads((SHIPPED / "interference_single.json").read_text())
    shutil.copyfile(SHIPPED / meta["weights_file"], tmp_path / meta["weights_file"])
    path = tmp_path / "interference_single.json"
    for model, fragment in (
        ({"hidden": 10**9, "layers": 2}, "model.hidden"),
        ({"hidden": 32, "layers": 2**64}, "model.layers"),
        ({"hidden": 32, "layers": float("nan")}, "model.layers"),
    ):
        path.write_text(json.dumps(meta | {"model": model}))
        # a bound far above a refusal's milliseconds, far below building such a model (the
        # machine may be loaded: 13.8 s was seen for the second loop with a CI run beside it)
        refused(lambda: load_model(path), fragment, str(MAX_MODEL_SIZE), seconds=30)
    for model in (
        {"hidden": 2000, "layers": 2},
        {"hidden": 32, "layers": 1000},
        {"hidden": -1, "layers": 2},
    ):  # within the limit: built without memory
        path.write_text(json.dumps(meta | {"model": model}))
        refused(lambda: load_model(path), path.stem, seconds=60)


# -- keys a reader does not use --------------------------------------------------------------------
def test_a_fat_tree_by_its_radix():
    data = json.loads(window({"k": 4}))
    assert (
        Window.from_dict(data).topology
        == FatTree(k=4)
        == FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)
    )
    data["topology"] = {"k": 20, "num_nodes": 1000}
    assert Window.from_dict(data).topology == FatTree.from_layout("paper")


@pytest.mark.parametrize(
    "topology, fragment",
    [
        ({"k": 4, "num_nodes": 16, "nodes_per_switch": 2, "switches_per_pod": 2}, "either k or"),
        (
            {"num_nodes": 16, "nodes_per_switch": 2, "switches_per_pod": 2, "radix": 4},
            "unknown key(s) 'radix'",
        ),
        ({"num_nodes": 16, "nodes_per_switch": 2}, "missing field(s) switches_per_pod"),
    ],
)
def test_contradictory_or_unknown_topology_keys_are_refused(topology, fragment):
    message = refused(lambda: Window.from_json(window(topology)), fragment)
    if "unknown" in message:
        assert "num_nodes, nodes_per_switch and switches_per_pod, or k" in message


def test_unknown_window_keys_are_refused_with_the_accepted_ones(tmp_path):
    good = json.loads(window({"k": 4}))
    typo = dict(good)
    typo["job_size"] = typo.pop("job_sizes")
    refused(
        lambda: Window.from_dict(typo),
        "unknown key(s) 'job_size'",
        "topology, idle_nodes, job_sizes, jobs, levels, fragmentation, busy_s, meta",
    )
    refused(lambda: Window.from_dict(good | {"epoch": 3}), "'epoch'", "meta")
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(good | {"extra": 1}) + "\n")
    refused(lambda: load_windows(path), "w.jsonl:2:", "'extra'")


def test_windows_the_project_writes_are_read(tmp_path, capsys):
    assert len(load_windows(ROOT / "examples" / "window.json")) == 1
    conf = tmp_path / "topology.conf"
    shutil.copyfile(ROOT / "examples" / "topology.conf", conf)
    for extra in ([], ["--topology", str(conf)]):
        out = tmp_path / "windows.jsonl"
        assert (
            main(
                ["generate", "windows", "--num-windows", "3", "--out", str(out), "--quiet", *extra]
            )
            == 0
        )
        windows = load_windows(out)
        assert len(windows) == 3 and all(w.meta for w in windows)
        assert [Window.from_json(w.to_json()) for w in windows] == windows
    capsys.readouterr()
