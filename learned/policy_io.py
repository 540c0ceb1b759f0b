"""The one weights format of every learned operator: a weights file beside JSON metadata.

``STEM.pt`` (a torch state dict, or a dict of named state dicts for a model in parts) or
``STEM.npz`` (plain numpy arrays, e.g. a tree ensemble) sits beside ``STEM.json``, which holds
``format`` (:data:`FORMAT`), ``family`` (one of :data:`FAMILIES`: what kind of operator the file
is for), the family's own fields (architecture, feature spec and its :func:`spec_hash`, training
run, thresholds...), ``versions`` (:func:`versions` of the libraries that trained it),
``weights_file`` and ``weights_sha256`` (the weights file's checksum).

:func:`save_weights` writes both files; :func:`load_weights` reads them back, checking the format,
the family, the checksum and that the file holds the weights of the model the metadata describes.
Torch weights may also have an *inference file*: ``STEM.npz``, plain arrays of the part of the
model that runs at solve time (e.g. an NSA policy's actor), named with its checksum in
``inference_file`` and ``inference_sha256`` by :func:`save_inference` and read without torch by
:func:`load_inference`; the ``.pt`` stays the training state. Every problem (missing, truncated
or edited file, another model's weights) is one line of :class:`tjap.core.errors.InvalidInputError`
that names the file and how to get a good one.

Weights written by an older tjap (``format`` "tjap.policy/1", "tjap.network-gnn/1",
"tjap.interference-gnn/1", "tjap.provision/1": no checksum) are converted, tensors unchanged, by

    python -m tjap.learned.policy_io upgrade OLD.json [...]
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np

from tjap.core.errors import InvalidInputError

FORMAT = "tjap.weights/2"
#: family -> (what it is, in messages; the command that makes a new one)
FAMILIES = {
    "nsa": ("NSA policy", "`tjap train nsa --arch ARCH --out STEM`"),
    "network-gnn": ("network GNN", "`tjap train network --out STEM`"),
    "interference-gnn": ("interference GNN", "`tjap train interference --out STEM`"),
    "provision": ("provisioner", "`tjap train provision --trace TRACE --out DIR`"),
}
OLD_FORMATS = {
    "tjap.policy/1": "nsa",
    "tjap.network-gnn/1": "network-gnn",
    "tjap.interference-gnn/1": "interference-gnn",
    "tjap.provision/1": "provision",
}
#: The metadata fields of an inference file (see the module doc).
INFERENCE = ("inference_file", "inference_sha256")
RESERVED = ("format", "family", "weights_file", "weights_sha256") + INFERENCE
#: family -> the command that writes the inference file of existing weights
EXPORTS = {"nsa": "`python -m tjap.learned.tree.policy export META.json` (needs torch)"}
DISTRIBUTIONS = {
    "tjap": "tjap",
    "torch": "torch",
    "numpy": "numpy",
    "stable_baselines3": "stable-baselines3",
    "sb3_contrib": "sb3-contrib",
    "gymnasium": "gymnasium",
}


#: The largest number a model's metadata may give as a size (a width, a depth, a count of heads,
#: experts or outputs): larger ones are refused before a model is built from them.
MAX_MODEL_SIZE = 4096


def check_architecture(meta_path, config, family: str, field: str):
    """``config``, the metadata's ``field`` (a model constructor's keyword arguments), with every
    number in it (nested objects and lists included) checked to lie within -MAX_MODEL_SIZE ..
    MAX_MODEL_SIZE: a size edited into metadata is one line, never a model that takes all memory
    or hours to build. Anything but an object or list is returned as is (the builder words
    that error)."""
    values = (
        config.items()
        if isinstance(config, dict)
        else enumerate(config)
        if isinstance(config, list)
        else ()
    )
    for key, value in values:
        name = (
            f"{field}[{key}]"
            if isinstance(config, list)
            else f"{field}.{key}"
            if field
            else str(key)
        )
        if isinstance(value, (dict, list)):
            check_architecture(meta_path, value, family, name)
        elif (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and not abs(value) <= MAX_MODEL_SIZE
        ):
            raise InvalidInputError(
                f"{meta_path}: {name} = {value!r:.30} is not a size of a model tjap builds (at "
                f"most {MAX_MODEL_SIZE}); {_fix(family)}"
            )
    return config


def spec_hash(spec: dict) -> str:
    """A short hash of a feature spec (sorted JSON), stored beside it in the metadata."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def versions() -> dict:
    """Versions of python and of the installed libraries a trained model depends on (read from
    the installed distributions, so nothing is imported)."""
    out = {"python": platform.python_version()}
    for key, dist in DISTRIBUTIONS.items():
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def file_sha256(path) -> str:
    """The sha256 (hex) of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _fix(family: str) -> str:
    return (
        f"restore it (shipped weights: `git checkout learned/weights`) or retrain with "
        f"{FAMILIES[family][1]}"
    )


# -- writing -------------------------------------------------------------------------------------
def save_weights(path, family: str, state, meta: dict) -> tuple[Path, Path]:
    """Write the weights ``state`` and their metadata; returns (weights path, metadata path).

    Parameters
    ----------
    path : str or Path
        The stem: ``STEM.pt`` or ``STEM.npz`` and ``STEM.json`` are written (any suffix is
        replaced).
    family : str
        One of :data:`FAMILIES`.
    state : torch.nn.Module, dict
        A module, a state dict, or a dict of named modules / state dicts (a model in parts), all
        saved to ``.pt``; or a dict of numpy arrays, saved to ``.npz``.
    meta : dict
        The family's metadata fields. ``versions`` defaults to :func:`versions`; the fields
        ``format``, ``family``, ``weights_file`` and ``weights_sha256`` are set here.
    """
    if family not in FAMILIES:
        raise InvalidInputError(f"unknown weights family {family!r}; one of {', '.join(FAMILIES)}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(state, dict) and state and all(isinstance(v, np.ndarray) for v in state.values()):
        weights = path.with_suffix(".npz")
        np.savez_compressed(weights, **state)
    else:
        import torch

        weights = path.with_suffix(".pt")
        torch.save(_detached(state), weights)
    record = {"format": FORMAT, "family": family} | {
        k: v for k, v in meta.items() if k not in RESERVED
    }
    record.setdefault("versions", versions())
    record |= {"weights_file": weights.name, "weights_sha256": file_sha256(weights)}
    meta_path = path.with_suffix(".json")
    meta_path.write_text(json.dumps(record, indent=2))
    return weights, meta_path


def _detached(state) -> dict:
    if hasattr(state, "state_dict"):
        state = state.state_dict()
    return {
        k: _detached(v) if isinstance(v, dict) or hasattr(v, "state_dict") else v.detach().cpu()
        for k, v in state.items()
    }


def update_metadata(path, family: str, meta: dict) -> Path:
    """Rewrite the metadata of saved weights (e.g. thresholds calibrated later): the format,
    family, weights file and checksum are kept as they are on disk."""
    meta_path, old = read_metadata(path, family)
    meta_path.write_text(
        json.dumps(
            {k: v for k, v in meta.items() if k not in RESERVED}
            | {k: old[k] for k in RESERVED if k in old},
            indent=2,
        )
    )
    return meta_path


def save_inference(path, family: str, arrays: dict) -> Path:
    """Write the inference file of saved weights (``path``: their .json, weights file or stem):
    ``STEM.npz`` of ``arrays`` (name -> numpy array), its name and checksum added to the
    metadata. Returns its path."""
    meta_path, meta = read_metadata(path, family)
    target = meta_path.with_suffix(".npz")
    if target.name == meta["weights_file"]:
        raise InvalidInputError(
            f"{meta_path}: the weights are already the arrays {target.name}; "
            "they need no inference file"
        )
    np.savez(target, **{name: np.ascontiguousarray(a) for name, a in arrays.items()})
    meta |= {"inference_file": target.name, "inference_sha256": file_sha256(target)}
    meta_path.write_text(json.dumps(meta, indent=2))
    return target


# -- reading -------------------------------------------------------------------------------------
def read_metadata(path, family: str) -> tuple[Path, dict]:
    """The metadata beside weights (``path``: the .json, the weights file or their stem), checked
    to be of :data:`FORMAT` and ``family``: returns (metadata path, metadata)."""
    what, train = FAMILIES[family]
    path = Path(path)
    meta_path = path if path.suffix == ".json" else path.with_suffix(".json")
    try:
        raw = meta_path.read_bytes()
    except OSError:
        raise InvalidInputError(
            f"no {what} metadata at {meta_path}; give the .json written "
            f"beside the weights, or train one with {train}"
        ) from None
    meta = _parse_metadata(meta_path, raw, family)
    found = meta.get("format") if isinstance(meta, dict) else None
    if isinstance(found, str) and found in OLD_FORMATS:
        raise InvalidInputError(
            f"{meta_path} is in the old weights format {found} (no checksum); convert it with "
            f"`python -m tjap.learned.policy_io upgrade {meta_path}` or retrain with {train}"
        )
    if found != FORMAT:
        raise InvalidInputError(
            f"{meta_path} is not tjap weights metadata (format {found!r:.60}, "
            f"expected {FORMAT!r}); {_fix(family)}"
        )
    if meta.get("family") != family:
        raise InvalidInputError(
            f"{meta_path} holds {meta.get('family')!r:.60} weights, not "
            f"{what} ones ({family!r}); give a {what}'s .json"
        )
    if not all(isinstance(meta.get(k), str) for k in ("weights_file", "weights_sha256")):
        raise InvalidInputError(
            f"{meta_path} names no weights_file and weights_sha256; {_fix(family)}"
        )
    return meta_path, meta


def _parse_metadata(meta_path: Path, raw: bytes, family: str):
    """The JSON in the bytes of a metadata file; bytes that are not UTF-8 or not JSON are one
    line naming the file."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{meta_path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}), "
            f"so not weights metadata; {_fix(family)}"
        ) from None
    try:
        return json.loads(text)
    except RecursionError:
        reason = "it nests too deeply"
    except ValueError as exc:  # JSONDecodeError, or an integer of too many digits
        reason = " ".join(str(exc).split())[:120]
    raise InvalidInputError(f"{meta_path} is not valid JSON ({reason}); {_fix(family)}")


def load_weights(path, family: str, build=None):
    """Read weights of ``family`` from ``path`` (.json, weights file or stem): returns
    (target, metadata).

    Parameters
    ----------
    path : str or Path
        The metadata, the weights file or their stem.
    family : str
        One of :data:`FAMILIES`; the metadata must be of it.
    build : callable, optional
        ``build(meta_path, meta)`` checks the metadata (raising InvalidInputError) and returns the
        target to fill: a torch module (gets the state dict, then ``eval()``), or a dict whose
        values are modules (each gets the part of that name) or None (gets the array or state of
        that name); the file must hold exactly the target's names. Without ``build`` the raw
        state (state dict, dict of parts or dict of arrays) is returned.

    Raises
    ------
    tjap.core.errors.InvalidInputError
        Missing or malformed metadata or weights file, a checksum that does not match, or weights
        of another model than the metadata describes.
    """
    meta_path, meta = read_metadata(path, family)
    # the metadata is checked by building the model it describes without memory first (torch's
    # meta device), so that sizes edited into it are compared with the weights file's, not
    # allocated; a builder that cannot run there builds for real now, as it always did
    probe = _build(build, meta_path, meta, family, on_meta=True) if build is not None else None
    target = _build(build, meta_path, meta, family) if build is not None and probe is None else None
    weights, raw = _checked_bytes(meta_path, meta, "weights", family)
    state = _parse(weights, family, raw)  # the bytes checked, not the file read again
    if build is None:
        return state, meta
    if probe is not None:
        _fill(probe, state, weights, family, load=False)  # the weights' own names and shapes
        target = _build(build, meta_path, meta, family)
    return _fill(target, state, weights, family), meta


def _build(build, meta_path: Path, meta: dict, family: str, on_meta: bool = False):
    """``build(meta_path, meta)``; with ``on_meta``, on torch's meta device (no memory), or None
    where torch is not loaded or the builder cannot run there. A model the metadata describes
    that does not build (negative, huge or non-integer sizes...) is one line."""
    torch = sys.modules.get("torch") if on_meta else None
    if on_meta and (torch is None or not hasattr(torch.device("meta"), "__enter__")):
        return None
    try:
        if not on_meta:
            return build(meta_path, meta)
        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a dry run: its warnings come again later
            return build(meta_path, meta)
    except InvalidInputError:
        raise
    except NotImplementedError:
        if on_meta:
            return None
        raise
    except (
        TypeError,
        ValueError,
        KeyError,
        AttributeError,
        RuntimeError,
        OverflowError,
        MemoryError,
    ) as exc:
        reason = " ".join(str(exc).split())[:100]
        raise InvalidInputError(
            f"{meta_path}: the model it describes does not build "
            f"({type(exc).__name__}: {reason}); {_fix(family)}"
        ) from None


def load_inference(path, family: str) -> tuple[dict, dict]:
    """The inference file's arrays of weights of ``family`` (``path``: .json, weights file or
    stem) and the metadata, without torch: (name -> numpy array, metadata). The checksum is
    checked as in :func:`load_weights`; the caller checks the arrays' names and shapes
    (:func:`check_shapes`).

    Raises
    ------
    tjap.core.errors.InvalidInputError
        Missing or malformed metadata, no inference file named in it (old weights: export one),
        or an inference file that is missing, does not match its checksum or is no .npz.
    """
    meta_path, meta = read_metadata(path, family)
    if not all(isinstance(meta.get(k), str) for k in INFERENCE):
        how = f"export it with {EXPORTS[family]} or " if family in EXPORTS else ""
        raise InvalidInputError(
            f"{meta_path} names no inference_file (the arrays read at solve time without "
            f"torch); {how}retrain with {FAMILIES[family][1]}"
        )
    inference, raw = _checked_bytes(meta_path, meta, "inference", family)
    if inference.suffix != ".npz":
        raise InvalidInputError(
            f"{meta_path}: inference_file {inference.name!r} is not a .npz; {_fix(family)}"
        )
    return _parse(inference, family, raw), meta


def _checked_bytes(meta_path: Path, meta: dict, kind: str, family: str) -> tuple[Path, bytes]:
    """(path, bytes) of the file the metadata names in ``{kind}_file``, checked against
    ``{kind}_sha256`` (kind: "weights" or "inference")."""
    name, expected = meta[f"{kind}_file"], meta[f"{kind}_sha256"]
    if Path(name).name != name or name in ("", ".", ".."):
        raise InvalidInputError(
            f"{meta_path}: {kind}_file {name!r} is not a file name beside it; {_fix(family)}"
        )
    target = meta_path.with_name(name)
    try:
        raw = target.read_bytes()
    except OSError:
        raise InvalidInputError(f"{kind} file {str(target)!r} is missing; {_fix(family)}") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != expected:
        raise InvalidInputError(
            f"{target} does not match the sha256 in {meta_path.name} ({digest[:12]}... != "
            f"{ascii(str(expected)[:12])}...): the file is truncated, corrupt or another model's; "
            f"{_fix(family)}"
        )
    return target, raw


def _parse(weights: Path, family: str, raw: bytes | None = None) -> dict:
    """The state dict (or dict of parts / arrays) in a weights file (``raw``: its bytes, already
    read and checked)."""
    import io

    source = weights if raw is None else io.BytesIO(raw)
    npz = weights.suffix == ".npz"
    # any failure to parse (zip, pickle, zlib or numpy errors alike) is one line for the user
    try:
        if npz:
            with np.load(source, allow_pickle=False) as z:
                state = {k: z[k] for k in z.files}
        else:
            import torch

            state = torch.load(source, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001
        reason = " ".join(str(exc).split()).split(". ")[0][:100]
        raise InvalidInputError(
            f"{weights} cannot be read as {'a numpy .npz archive' if npz else 'torch weights'}: "
            f"it is truncated, corrupt or no weights file ({type(exc).__name__}: {reason}); "
            f"{_fix(family)}"
        ) from None
    if not isinstance(state, dict):
        raise InvalidInputError(
            f"{weights} holds a {type(state).__name__}, not a dict of weights; {_fix(family)}"
        )
    return state


def _fill(target, state: dict, weights: Path, family: str, load: bool = True):
    """``target`` with the weights ``state`` loaded, after checking their names and shapes
    (``load=False``: only checked)."""
    if not isinstance(target, dict):
        _load_module(target, state, str(weights), family, load)
        return target
    _same_names(target, state, str(weights), "parts", family)
    for name, part in target.items():
        if part is None:
            if load:
                target[name] = state[name]
        else:
            if not isinstance(state[name], dict):
                raise InvalidInputError(
                    f"{weights}: part {name!r} is not a state dict; {_fix(family)}"
                )
            _load_module(part, state[name], f"{weights} (part {name!r})", family, load)
    return target


def _load_module(module, state: dict, where: str, family: str, load: bool = True) -> None:
    if not hasattr(module, "state_dict"):
        raise InvalidInputError(
            f"{where}: the metadata describes no model ({type(module).__name__}); {_fix(family)}"
        )
    check_shapes(
        {key: tuple(value.shape) for key, value in module.state_dict().items()},
        state,
        where,
        family,
        "tensors",
    )
    if load:
        module.load_state_dict(state)
        module.eval()


def check_shapes(
    expected: dict, state: dict, where: str, family: str, what: str = "arrays"
) -> None:
    """Refuse (one line naming ``where``) a ``state`` (name -> tensor or array) whose names or
    shapes are not ``expected`` (name -> shape): the weights of another model."""
    _same_names(expected, state, where, what, family)
    for key, shape in expected.items():
        got = getattr(state[key], "shape", None)
        if got is None or tuple(got) != tuple(shape):
            raise InvalidInputError(
                f"{where} holds the weights of another model: {key} has shape "
                f"{None if got is None else tuple(got)}, the model described by the metadata "
                f"{tuple(shape)}; {_fix(family)}"
            )


def _same_names(expected, found, where: str, what: str, family: str) -> None:
    missing, unexpected = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
    if missing or unexpected:

        def few(keys):
            return ", ".join(map(str, keys[:3])) + (f" (+{len(keys) - 3})" if len(keys) > 3 else "")

        parts = ([f"missing {few(missing)}"] if missing else []) + (
            [f"unexpected {few(unexpected)}"] if unexpected else []
        )
        raise InvalidInputError(
            f"{where} holds the weights of another model ({what}: "
            f"{'; '.join(parts)}); {_fix(family)}"
        )


# -- converting old files --------------------------------------------------------------------------
def upgrade(path) -> tuple[Path, Path]:
    """Re-save weights of an old format (see the module docstring) in :data:`FORMAT`: the same
    tensors / arrays and metadata fields, plus ``family`` and ``weights_sha256``."""
    meta_path = Path(path).with_suffix(".json")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"cannot read {meta_path} ({type(exc).__name__})") from None
    found = meta.get("format") if isinstance(meta, dict) else None
    if found not in OLD_FORMATS:
        raise InvalidInputError(
            f"{meta_path} has format {found!r}, not an old one "
            f"({', '.join(OLD_FORMATS)}): nothing to upgrade"
        )
    family = OLD_FORMATS[found]
    weights = meta_path.with_name(meta.get("weights_file", meta_path.with_suffix(".pt").name))
    return save_weights(weights.with_suffix(""), family, _parse(weights, family), meta)


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m tjap.learned.policy_io", description="Tools for tjap's weights files."
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    up = sub.add_parser(
        "upgrade",
        help=f"re-save weights of an old format in {FORMAT}",
        description=f"Re-save weights of an older tjap format (no checksum) in "
        f"{FORMAT}: the same tensors and metadata fields, plus "
        "family and weights_sha256.",
    )
    up.add_argument("paths", nargs="+", metavar="OLD.json")
    args = p.parse_args(argv)
    try:
        for path in args.paths:
            weights, meta_path = upgrade(path)
            print(f"{meta_path}: {FORMAT}, {weights.name} sha256 {file_sha256(weights)[:12]}...")
    except InvalidInputError as exc:
        print(f"tjap.learned.policy_io: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
