"""Bad weights files through every door a user has: ``--weights`` on each command that runs a
learned policy, and ``weights=`` in Python. A truncated, foreign or mismatched file, an edited
checksum or missing metadata is one line (exit 2 on the command line, InvalidInputError in
Python) that names the file and what is wrong, before torch or numpy reads a byte of it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tjap import FatTree, Window
from tjap.cli import main
from tjap.core.errors import InvalidInputError

SHIPPED = Path(__file__).resolve().parents[2] / "learned" / "weights"


# -- making bad files ------------------------------------------------------------------------------
def copy(stem: str, into: Path, as_stem: str | None = None) -> Path:
    """Copy shipped weights (metadata, weights file and inference file) into ``into``,
    optionally renamed; returns the metadata path."""
    meta = json.loads((SHIPPED / f"{stem}.json").read_text())
    new = as_stem or stem
    for kind in ("weights", "inference"):
        if f"{kind}_file" in meta:
            source = SHIPPED / meta[f"{kind}_file"]
            target = into / f"{new}{source.suffix}"
            shutil.copyfile(source, target)
            meta[f"{kind}_file"] = target.name
    path = into / f"{new}.json"
    path.write_text(json.dumps(meta))
    return path


def set_meta(path: Path, **fields) -> None:
    path.write_text(json.dumps(json.loads(path.read_text()) | fields))


def read_kind(meta: dict) -> str:
    """Which file a solve reads: the inference file where there is one (NSA: the actor's
    arrays, no torch), else the weights file."""
    return "inference" if "inference_file" in meta else "weights"


def weights_of(path: Path) -> Path:
    meta = json.loads(path.read_text())
    return path.with_name(meta[f"{read_kind(meta)}_file"])


def rehash(path: Path, digest: str | None = None) -> None:
    """Make the metadata's checksum of the file a solve reads that of the file as it is now (a
    file that passes the checksum, so what comes after it is tested), or ``digest``."""
    kind = read_kind(json.loads(path.read_text()))
    set_meta(
        path,
        **{f"{kind}_sha256": digest or hashlib.sha256(weights_of(path).read_bytes()).hexdigest()},
    )


def truncate(path: Path, keep: float = 0.5) -> None:
    data = weights_of(path).read_bytes()
    weights_of(path).write_bytes(data[: int(len(data) * keep)])


def make_bad(case: str, stem: str, foreign: str, tmp: Path) -> tuple[Path, tuple[str, ...]]:
    """A bad weights file of kind ``case`` standing in for ``stem``: (the path to give, the
    fragments its one-line error must hold)."""
    if case == "truncated":  # the checksum catches it
        path = copy(stem, tmp)
        truncate(path)
        return path, (weights_of(path).name, "sha256", "truncated")
    if case == "truncated-rehashed":  # the checksum passes: the reader must not traceback
        path = copy(stem, tmp)
        truncate(path)
        rehash(path)
        return path, (weights_of(path).name, "cannot be read")
    if case == "edited-hash":
        path = copy(stem, tmp)
        rehash(path, "0" * 64)
        return path, (weights_of(path).name, "sha256", path.name)
    if case == "foreign":  # another model's weights, the metadata's checksum theirs
        path = copy(stem, tmp)
        other = json.loads((SHIPPED / f"{foreign}.json").read_text())
        kind = read_kind(json.loads(path.read_text()))
        shutil.copyfile(
            SHIPPED / other.get(f"{kind}_file", other["weights_file"]), weights_of(path)
        )
        rehash(path)
        return path, (weights_of(path).name, "another model")
    if case == "missing-metadata":
        path = copy(stem, tmp)
        path.unlink()
        return path, (path.name, "metadata")
    raise AssertionError(case)


CASES = ("truncated", "truncated-rehashed", "edited-hash", "foreign", "missing-metadata")


# -- the doors -------------------------------------------------------------------------------------
def tiny_window() -> Window:
    return Window(FatTree(k=4), idle_nodes=range(16), job_sizes=[3, 2])


def trace() -> str:
    from tjap.placement.batch.traces import bundled_trace

    return str(bundled_trace("ls6-a100"))


def cli_nsa(path: Path, tmp: Path) -> list:
    window = tmp / "w.json"
    window.write_text(tiny_window().to_json())
    return ["solve", window, "--method", "nsa", "--iterations", "5", "--weights", path]


def cli_network(path: Path, tmp: Path) -> list:
    return [
        "network",
        "evaluate",
        "--policy",
        "gnn",
        "--weights",
        path,
        "--seeds",
        "1",
        "--requests",
        "2",
        "--quiet",
    ]


def cli_interference(path: Path, tmp: Path) -> list:
    return [
        "interference",
        "evaluate",
        "--policy",
        "marl",
        "--weights",
        path,
        "--k",
        "4",
        "--intervals",
        "1",
        "--seeds",
        "1",
        "--quiet",
    ]


def cli_provision(path: Path, tmp: Path, policy: str) -> list:
    return [
        "provision",
        "evaluate",
        "--trace",
        trace(),
        "--from",
        "2023-03-01",
        "--to",
        "2023-03-08",
        "--nodes",
        "8",
        "--policy",
        policy,
        "--weights",
        path,
        "--pairs",
        "1",
    ]


def py_nsa(path):
    import tjap

    tjap.solve(tiny_window(), "nsa", iterations=5, weights=path)


def py_make(system, name):
    from tjap.registry import make

    return lambda path: make(system, name, weights=path)


#: family -> (shipped stem, a foreign stem (another model of the family, or another family's
#: file), command line, Python call)
DOORS = {
    "nsa": ("nsa_cnn3", "nsa_cnn1", cli_nsa, py_nsa),  # the same tensors, other shapes
    "network": ("network_gnn", "nsa_cnn3", cli_network, py_make("network", "gnn")),
    "interference": (
        "interference_marl",
        "network_gnn",
        cli_interference,
        py_make("interference", "marl"),
    ),
    "provision-pt": (
        "provision_moe",
        "provision_transformer",
        lambda p, t: cli_provision(p, t, "moe"),
        py_make("provision", "moe"),
    ),
    "provision-npz": (
        "provision_xgb",
        "provision_moe",
        lambda p, t: cli_provision(p, t, "xgb"),
        py_make("provision", "xgb"),
    ),
}


def run(capsys, argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("door", DOORS)
def test_bad_weights_are_one_line_on_the_command_line(door, case, tmp_path, capsys):
    stem, foreign, cli, _ = DOORS[door]
    path, fragments = make_bad(case, stem, foreign, tmp_path)
    code, out, err = run(capsys, cli(path, tmp_path))
    assert code == 2, (out, err)
    assert "Traceback" not in err + out
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tjap: error:"), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert (
        "git checkout learned/weights" in lines[0] or "train" in lines[0] or "give" in lines[0]
    ), lines[0]  # and how to get a good file


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("door", DOORS)
def test_bad_weights_are_one_line_in_python(door, case, tmp_path):
    stem, foreign, _, call = DOORS[door]
    path, fragments = make_bad(case, stem, foreign, tmp_path)
    with pytest.raises(InvalidInputError) as info:
        call(path)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_a_good_copy_loads_through_every_door(tmp_path, capsys):
    """The same doors with an intact copy: the checks refuse only bad files."""
    for door, (stem, _, cli, call) in DOORS.items():
        folder = tmp_path / door
        folder.mkdir()
        path = copy(stem, folder, as_stem=f"my_{stem}")
        call(path)
        if door in ("nsa", "network", "provision-npz"):  # the cheap runs
            code, out, err = run(capsys, cli(path, folder))
            assert code == 0, err


def test_another_kind_of_provisioner_is_refused(tmp_path, capsys):
    """A transformer's file given to moe (the right family, the wrong model) is one line."""
    path = copy("provision_transformer", tmp_path)
    code, out, err = run(capsys, cli_provision(path, tmp_path, "moe_dqn"))
    assert code == 2 and len(err.splitlines()) == 1
    assert "'transformer'" in err and "--policy transformer" in err


def test_weights_need_one_learned_provisioner(tmp_path, capsys):
    path = copy("provision_xgb", tmp_path)
    code, _, err = run(capsys, cli_provision(path, tmp_path, "reactive"))
    assert code == 2 and len(err.splitlines()) == 1 and "learned --policy" in err
    code, _, err = run(capsys, cli_provision(path, tmp_path, "xgb,rf"))
    assert code == 2 and len(err.splitlines()) == 1 and "one --policy" in err


def test_foreign_shapes_name_the_tensor(tmp_path):
    """CNN-1's weights under CNN-3's metadata: the same tensor names, other shapes."""
    path, _ = make_bad("foreign", "nsa_cnn3", "nsa_cnn1", tmp_path)
    with pytest.raises(InvalidInputError, match=r"another model: \S+ has shape \("):
        py_nsa(path)


def test_weights_file_must_lie_beside_its_metadata(tmp_path, capsys):
    path = copy("nsa_cnn3", tmp_path)
    set_meta(path, inference_file="../nsa_cnn3.npz")  # the file a solve reads
    code, out, err = run(capsys, cli_nsa(path, tmp_path))
    assert code == 2 and len(err.splitlines()) == 1 and "not a file name beside it" in err
