"""The one weights format (tjap.learned.policy_io): a round trip per family with tiny models, the checks
at load (checksum, truncated or corrupt files, another model's weights, missing files: each one
line of InvalidInputError naming the file and the fix) and the shipped weights verifying."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tjap.core.errors import InvalidInputError  # noqa: E402
from tjap.learned.policy_io import (  # noqa: E402
    FORMAT,
    file_sha256,
    load_weights,
    read_metadata,
    save_weights,
    upgrade,
)

WEIGHTS = Path(__file__).resolve().parents[2] / "learned" / "weights"


def one_line_error(call, path, *fragments) -> str:
    """The InvalidInputError ``call`` raises: one line, naming the file ``path`` and a fix, raised
    without a chained traceback."""
    with pytest.raises(InvalidInputError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and Path(path).name in message, message
    assert info.value.__cause__ is None
    assert info.value.__context__ is None or info.value.__suppress_context__
    for fragment in fragments:
        assert fragment in message, message
    return message


def same_tensors(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(
        a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a
    )


def set_sha(meta_path: Path) -> None:
    """Make the metadata's checksum that of its weights file again (as if it were rewritten)."""
    meta = json.loads(meta_path.read_text())
    meta["weights_sha256"] = file_sha256(meta_path.with_name(meta["weights_file"]))
    meta_path.write_text(json.dumps(meta))


# -- tiny models of each family ------------------------------------------------------------------
def tiny_nsa(tmp_path, name="nsa", arch="fcn1"):
    pytest.importorskip("sb3_contrib")
    from tjap.learned.tree.features import feature_spec
    from tjap.learned.tree.policy import build_policy
    from tjap.learned.tree.train import save_policy

    torch.manual_seed(0)
    policy = build_policy(arch, feature_spec())
    weights, meta = save_policy(
        policy, tmp_path / name, arch=arch, spec=feature_spec(), training={"seed": 0}
    )
    return policy, weights, meta


def tiny_gnn(tmp_path, name="gnn", hidden=4):
    from tjap.learned.network.nets import GraphSAGEAllocator, save

    torch.manual_seed(0)
    arch = {"hidden": hidden, "layers": 1, "request_dim": 2, "head_hidden": 4, "value_hidden": 4}
    net = GraphSAGEAllocator(**arch)
    weights, meta = save(
        net, tmp_path / name, arch=arch, routing="shortest", training={"algorithm": "none (test)"}
    )
    return net, weights, meta


def tiny_interference(tmp_path, name="marl", level="device"):
    from tjap.learned.interference.nets import InterferenceGNN
    from tjap.learned.interference.policy import save_model

    torch.manual_seed(0)
    model = InterferenceGNN(hidden=8, layers=1)
    weights, meta = save_model(model, tmp_path / name, {"what": "test"}, level=level)
    return model, weights, meta


def tiny_provision(tmp_path, name="provision_transformer"):
    from tjap.learned.batch.nets import DecisionHead, HistoryTransformer
    from tjap.learned.batch.weights import save

    torch.manual_seed(0)
    foundation = HistoryTransformer(d_model=8, heads=2, layers=1, feedforward=16)
    dqn = DecisionHead(foundation.embedding_dim, outputs=2)
    pg = DecisionHead(foundation.embedding_dim, outputs=1)
    weights, meta = save(
        tmp_path / name,
        {"foundation": foundation, "dqn": dqn, "pg": pg},
        {
            "kind": "transformer",
            "foundation": foundation.config,
            "experts": 0,
            "heads": {"dqn": dqn.config, "pg": pg.config},
        },
    )
    return (foundation, dqn, pg), weights, meta


def tiny_trees(tmp_path, name="provision_rf"):
    from tjap.learned.batch.trees import TreeEnsemble
    from tjap.learned.batch.weights import save

    ensemble = TreeEnsemble(
        "rf",
        np.array([0, -1, -1, 1, -1, -1], np.int32),
        np.array([0.5, 0, 0, -0.25, 0, 0]),
        np.array([1, -1, -1, 4, -1, -1]),
        np.array([2, -1, -1, 5, -1, -1]),
        np.array([0, 1.5, 2.5, 0, -1, 3]),
        np.array([0, 3], np.int32),
    )
    weights, meta = save(tmp_path / name, ensemble.arrays(), {"kind": "rf", "nodes": 6})
    return ensemble, weights, meta


# -- round trips -------------------------------------------------------------------------------
def test_nsa_round_trip(tmp_path):
    from tjap.learned.tree.policy import load_policy

    policy, weights, meta_path = tiny_nsa(tmp_path)
    loaded, meta = load_policy(meta_path)
    assert weights.suffix == ".pt" and meta["format"] == FORMAT and meta["family"] == "nsa"
    assert meta["weights_sha256"] == file_sha256(weights) and "torch" in meta["versions"]
    assert meta["architecture"] == "fcn1" and not loaded.training
    assert same_tensors(policy.state_dict(), loaded.state_dict())


def test_network_gnn_round_trip(tmp_path):
    from tjap.learned.network.nets import load
    from tjap.placement.network import paper_topology

    net, _, meta_path = tiny_gnn(tmp_path)
    topology = paper_topology("8:1-4", 64)
    loaded, meta = load(meta_path, topology=topology)
    assert meta["family"] == "network-gnn" and meta["architecture"]["hidden"] == 4
    assert same_tensors(net.state_dict(), loaded.state_dict()) and not loaded.training
    net.set_topology(topology)
    obs = torch.rand(2, topology.graph.number_of_nodes() + 1, 16)
    assert all(torch.equal(a, b) for a, b in zip(net(obs), loaded(obs)))


@pytest.mark.parametrize("level", ["device", "server"])
def test_interference_round_trip(tmp_path, level):
    from tjap.learned.interference.policy import load_model

    model, _, meta_path = tiny_interference(tmp_path, level=level)
    loaded, meta = load_model(meta_path, level=level)
    assert meta["family"] == "interference-gnn" and meta["model"] == {"hidden": 8, "layers": 1}
    assert ("level" in meta) == (level == "server")
    assert same_tensors(model.state_dict(), loaded.state_dict()) and not loaded.training


def test_provision_network_round_trip(tmp_path):
    from tjap.learned.batch.weights import load_network

    (foundation, dqn, pg), _, meta_path = tiny_provision(tmp_path)
    loaded, heads, meta = load_network(meta_path)
    assert meta["family"] == "provision" and sorted(heads) == ["dqn", "pg"]
    assert same_tensors(foundation.state_dict(), loaded.state_dict())
    assert same_tensors(dqn.state_dict(), heads["dqn"].state_dict())
    assert same_tensors(pg.state_dict(), heads["pg"].state_dict())


def test_provision_trees_round_trip(tmp_path):
    from tjap.learned.batch.weights import load_trees

    ensemble, weights, meta_path = tiny_trees(tmp_path)
    loaded, meta = load_trees(meta_path)
    assert weights.suffix == ".npz" and meta["family"] == "provision" and meta["nodes"] == 6
    x = np.array([[0.0, 0.0], [1.0, -1.0], [0.4, 0.7]], np.float32)
    assert np.array_equal(loaded.predict(x), ensemble.predict(x))
    for name, array in ensemble.arrays().items():
        assert array.dtype == loaded.arrays()[name].dtype
        assert np.array_equal(array, loaded.arrays()[name])


def test_metadata_rewrites_keep_the_checksum(tmp_path):
    from tjap.learned.policy_io import update_metadata

    _, weights, meta_path = tiny_interference(tmp_path)
    _, meta = read_metadata(meta_path, "interference-gnn")
    meta["training"]["note"] = "added later"
    meta["weights_sha256"] = "0" * 64  # reserved fields are kept as they are on disk
    update_metadata(meta_path, "interference-gnn", meta)
    state, again = load_weights(meta_path, "interference-gnn")
    assert again["training"]["note"] == "added later"
    assert again["weights_sha256"] == file_sha256(weights)


# -- refusals: one line, the right class, the file and the fix named ------------------------------
def test_sha256_mismatch(tmp_path):
    from tjap.learned.interference.policy import load_model

    _, weights, meta_path = tiny_interference(tmp_path)
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte flipped
    weights.write_bytes(bytes(data))
    one_line_error(lambda: load_model(meta_path), weights, "sha256", "retrain with")


def test_truncated_pt(tmp_path):
    from tjap.learned.network.nets import load

    _, weights, meta_path = tiny_gnn(tmp_path)
    weights.write_bytes(weights.read_bytes()[:200])
    one_line_error(lambda: load(meta_path), weights, "sha256", "tjap train network")
    set_sha(meta_path)  # even with a checksum that matches: unreadable
    one_line_error(lambda: load(meta_path), weights, "cannot be read")


def test_truncated_npz(tmp_path):
    from tjap.learned.batch.weights import load_trees

    _, weights, meta_path = tiny_trees(tmp_path)
    weights.write_bytes(weights.read_bytes()[:-40])
    one_line_error(lambda: load_trees(meta_path), weights, "sha256", "tjap train provision")
    set_sha(meta_path)
    one_line_error(lambda: load_trees(meta_path), weights, "cannot be read")


def test_weights_of_another_model(tmp_path):
    from tjap.learned.batch.weights import load_network, load_trees
    from tjap.learned.interference.policy import load_model
    from tjap.learned.network.nets import load

    # another family's tensors under interference metadata (checksum rewritten to match)
    _, _, meta_path = tiny_interference(tmp_path)
    _, gnn_weights, _ = tiny_gnn(tmp_path)
    shutil.copy(gnn_weights, tmp_path / "marl.pt")
    set_sha(meta_path)
    one_line_error(
        lambda: load_model(meta_path), "marl.pt", "another model", "missing", "unexpected"
    )
    # same keys, other shapes: weights of a wider network
    _, wide, _ = tiny_gnn(tmp_path, "wide", hidden=8)
    _, _, narrow_meta = tiny_gnn(tmp_path, "narrow", hidden=4)
    shutil.copy(wide, tmp_path / "narrow.pt")
    set_sha(narrow_meta)
    one_line_error(lambda: load(narrow_meta), "narrow.pt", "another model", "shape")
    # a model in parts whose parts differ from the metadata's heads
    _, _, prov_meta = tiny_provision(tmp_path)
    meta = json.loads(prov_meta.read_text())
    meta["heads"] = {"dqn": meta["heads"]["dqn"]}
    prov_meta.write_text(json.dumps(meta))
    one_line_error(
        lambda: load_network(prov_meta), "provision_transformer.pt", "parts", "unexpected pg"
    )
    # tree arrays under network metadata, and network weights under tree metadata
    _, _, tree_meta = tiny_trees(tmp_path)
    one_line_error(lambda: load_network(tree_meta), tree_meta, "not a transformer or moe")
    shutil.copy(tmp_path / "provision_transformer.pt", tmp_path / "provision_rf.npz")
    set_sha(tree_meta)
    one_line_error(
        lambda: load_trees(tree_meta), "provision_rf.npz", "another model", "missing base"
    )


def test_metadata_of_another_family_or_format(tmp_path):
    from tjap.learned.tree.policy import load_policy

    _, _, meta_path = tiny_interference(tmp_path)
    one_line_error(
        lambda: load_policy(meta_path), meta_path, "'interference-gnn' weights", "not NSA policy"
    )
    (tmp_path / "other.json").write_text(json.dumps({"format": "other"}))
    one_line_error(lambda: load_policy(tmp_path / "other.json"), "other.json", "format 'other'")
    (tmp_path / "broken.json").write_text("{")
    one_line_error(lambda: load_policy(tmp_path / "broken.json"), "broken.json", "not valid JSON")


def test_missing_files(tmp_path):
    from tjap.learned.batch.weights import load_trees
    from tjap.learned.interference.policy import load_model

    one_line_error(
        lambda: load_model(tmp_path / "nothing.json"),
        "nothing.json",
        "no interference GNN metadata",
        "tjap train interference",
    )
    _, weights, meta_path = tiny_interference(tmp_path)
    weights.unlink()
    one_line_error(lambda: load_model(meta_path), weights, "is missing", "retrain with")
    _, weights, meta_path = tiny_trees(tmp_path)
    weights.unlink()
    one_line_error(lambda: load_trees(meta_path), weights, "is missing")


def test_old_format_is_refused_and_upgraded(tmp_path):
    from tjap.learned.interference.nets import InterferenceGNN
    from tjap.learned.interference.policy import load_model

    torch.manual_seed(3)
    model = InterferenceGNN(hidden=8, layers=1)
    torch.save(model.state_dict(), tmp_path / "old.pt")
    (tmp_path / "old.json").write_text(
        json.dumps(
            {
                "format": "tjap.interference-gnn/1",
                "model": model.config,
                "training": {"seed": 3},
                "weights_file": "old.pt",
                "versions": {"torch": "0"},
            }
        )
    )
    one_line_error(
        lambda: load_model(tmp_path / "old.json"),
        "old.json",
        "old weights format",
        "python -m tjap.learned.policy_io upgrade",
    )
    upgrade(tmp_path / "old.json")
    loaded, meta = load_model(tmp_path / "old.json")
    assert meta["training"] == {"seed": 3} and meta["versions"] == {"torch": "0"}
    assert same_tensors(model.state_dict(), loaded.state_dict())


def test_unknown_family_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="unknown weights family"):
        save_weights(tmp_path / "x", "chess", {"a": np.zeros(2)}, {})


# -- the shipped weights ---------------------------------------------------------------------------
SHIPPED = sorted(WEIGHTS.glob("*.json"))


def test_every_weights_file_has_metadata():
    metas = [json.loads(p.read_text()) for p in SHIPPED]
    named = [m["weights_file"] for m in metas] + [
        m["inference_file"] for m in metas if "inference_file" in m
    ]
    on_disk = {p.name for p in WEIGHTS.iterdir() if p.suffix in (".pt", ".npz")}
    assert set(named) == on_disk and len(named) == len(on_disk)


@pytest.mark.parametrize("meta_path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_metadata_verifies_against_its_weights(meta_path):
    meta = json.loads(meta_path.read_text())
    assert meta["format"] == FORMAT
    assert meta["weights_sha256"] == file_sha256(meta_path.with_name(meta["weights_file"]))
    state, again = load_weights(meta_path, meta["family"])  # checksum checked, file parsed
    assert again == meta and state
    if "inference_file" in meta:  # the arrays read without torch
        assert meta["inference_sha256"] == file_sha256(meta_path.with_name(meta["inference_file"]))
