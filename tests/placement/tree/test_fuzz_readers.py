"""Every file reader fuzzed: random bytes, mutations of a valid file (byte flips, deletions,
insertions, duplicated lines, truncation, numbers replaced by huge or odd values), wrong encodings
and huge numbers. The only allowed outcomes are a valid object or an InvalidInputError whose
message is one line: never another exception, a traceback from deep inside or a MemoryError.

Each reader runs :data:`FUZZ_CASES` generated cases (the explicit ``@settings`` below wins over
the profile loaded in conftest.py, ``ci`` included); the module prints how many each one ran.
"""

from __future__ import annotations

import collections
import gzip
import json
import random
import re
import shutil
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tjap.core.errors import InvalidInputError
from tjap.placement.batch.jobs import Jobs
from tjap.placement.batch.traces import TraceReport, load_trace
from tjap.placement.tree.fat_tree import FatTree
from tjap.placement.tree.topology import MAX_NODES, Topology
from tjap.placement.tree.window import Window, load_windows
from tjap.placement.tree.workload import Workload

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "learned" / "weights"
#: Generated cases per reader.
FUZZ_CASES = 2000
FUZZ = settings(
    max_examples=FUZZ_CASES, deadline=None, print_blob=True, suppress_health_check=list(HealthCheck)
)
#: Cases each reader ran (printed at the end of the module).
COUNTS: collections.Counter = collections.Counter()

#: Values that replace numbers of a valid file: huge, negative, not finite, not integers.
ODD_NUMBERS = (
    b"1e9",
    b"1e300",
    b"-1",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"18446744073709551616",
    b"nan",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e999",
    b"1000000000",
    b"1000000000000",
    b"4294967297",
    b"99999999999999999999999999",
    b"0",
    b"-0",
    b"1.5",
    b"2e5",
    b"0x10",
    b"1_000",
    b"1" + b"0" * 4400,
)
#: Bytes that are no UTF-8 (a lone continuation byte, an overlong form, a surrogate, ...).
INVALID_UTF8 = (
    b"\xff",
    b"\xfe\xff",
    b"\x80",
    b"\xc3\x28",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xe2\x82",
)
#: Text that strains the readers' idea of a line or a name.
ODD_TEXT = (
    "\u00e9",
    "\u65e5\u672c",
    "\u2028",
    "\x85",
    "\x0b",
    "\x0c",
    "\x00",
    "\ufeff",
    "\r",
    "\t",
    "\U0001f600",
    "\u0663",
)
ENCODINGS = ("latin-1", "utf-16", "utf-16-le", "utf-8-sig", "cp1252", "utf-32")
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


# -- strategies ------------------------------------------------------------------------------------
# Each family draws a valid file and one integer that seeds the changes made to it (a few draws
# per case keep 2,000 cases a reader within seconds); a failure prints the file's bytes.
def _mutate(data: bytes, seed: int) -> bytes:
    """One to four mutations of ``data``: a flipped bit, a deleted or inserted run, a duplicated
    or swapped line, a truncation, or a number replaced by an odd value."""
    rng = random.Random(seed)
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.choice(
            ("flip", "delete", "insert", "duplicate", "swap", "truncate", "number", "number")
        )
        at = rng.randrange(len(data) + 1)
        if op == "flip" and at < len(data):
            data[at] ^= 1 << rng.randrange(8)
        elif op == "delete":
            del data[at : at + rng.randint(1, 16)]
        elif op == "insert":
            data[at:at] = (
                rng.randbytes(rng.randint(1, 8))
                if rng.random() < 0.5
                else bytes([rng.choice(b',[]{}":=#;|\t\n\\-. 09')])
            )
        elif op in ("duplicate", "swap"):
            lines = bytes(data).splitlines(keepends=True)
            if len(lines) > 1:
                k = rng.randrange(len(lines) - 1)
                if op == "duplicate":
                    lines.insert(k, lines[k])
                else:
                    lines[k], lines[k + 1] = lines[k + 1], lines[k]
                data = bytearray(b"".join(lines))
        elif op == "truncate":
            del data[at:]
        else:
            spans = [m.span() for m in _NUMBER.finditer(bytes(data))]
            if spans:
                a, b = rng.choice(spans)
                data[a:b] = rng.choice(ODD_NUMBERS)
    return bytes(data)


def _encode(data: bytes, seed: int) -> bytes:
    """``data`` with odd characters, written in another encoding or with bytes that are no
    UTF-8."""
    rng = random.Random(seed)
    text = data.decode("utf-8")
    for _ in range(rng.randint(0, 3)):
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(ODD_TEXT) + text[at:]
    how = rng.choice(("encoding", "invalid", "utf-8"))
    if how == "encoding":
        return text.encode(rng.choice(ENCODINGS), errors="replace")
    data = text.encode("utf-8", errors="surrogatepass")
    if how == "invalid":
        at = rng.randrange(len(data) + 1)
        data = data[:at] + rng.choice(INVALID_UTF8) + data[at:]
    return data


def _huge(data: bytes, seed: int) -> bytes:
    """``data`` with all, or some, of its numbers replaced by huge or odd values."""
    rng = random.Random(seed)
    values = [rng.choice(ODD_NUMBERS) for _ in range(rng.randint(1, 3))]
    every = rng.random() < 0.5
    return _NUMBER.sub(
        lambda m: rng.choice(values) if every or rng.random() < 0.3 else m.group(0), data
    )


SEEDS = st.integers(0, 2**64 - 1)


def files(seeds) -> st.SearchStrategy:
    """(a) random bytes or text, (b) mutations of a valid file, (c) wrong encodings, (d) huge
    numbers."""
    seeds = [s if isinstance(s, bytes) else s.encode() for s in seeds]
    text = [s for s in seeds if not s.startswith(b"\x1f\x8b")]  # gzip is no text to re-encode
    return st.one_of(
        st.binary(max_size=200),
        st.text(max_size=120).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.builds(_mutate, st.sampled_from(seeds), SEEDS),
        st.builds(_encode, st.sampled_from(text), SEEDS),
        st.builds(_huge, st.sampled_from(seeds), SEEDS),
    )


# -- running a reader ------------------------------------------------------------------------------
def outcome(name: str, read, check=None):
    """Call ``read()``: an InvalidInputError must be one line; anything returned must pass
    ``check``. Counts the case under ``name``."""
    COUNTS[name] += 1
    try:
        value = read()
    except InvalidInputError as exc:
        message = str(exc)
        assert message.strip(), f"{name}: empty error message"
        assert len(message.splitlines()) == 1, f"{name}: error of several lines: {message!r}"
        return None
    if check is not None:
        check(value)
    return value


def fuzz(name: str, strategy, write, read, check=None) -> None:
    """Run ``read(data)`` on FUZZ_CASES files ``data`` of ``strategy`` (``write(data)``, if
    given, first puts each where the reader reads it) and check that it ran them all."""
    before = COUNTS[name]

    @FUZZ
    @given(strategy)
    def case(data):
        if write is not None:
            write(data)
        outcome(name, lambda: read(data), check)

    case()
    assert COUNTS[name] - before >= FUZZ_CASES, (name, COUNTS[name] - before)


@pytest.fixture(scope="module", autouse=True)
def report_counts(request):
    """Print the cases each reader ran once the module's tests are done (past the output
    capture, so that ``pytest -q`` shows them)."""
    yield
    lines = [
        f"fuzzed {name}: {count} cases"
        for name, count in sorted(COUNTS.items())
        if not name.startswith("(")
    ]
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        print("\n".join(lines))
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        for line in lines:
            reporter.write_line(line)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def writer(path: Path):
    """Write a case's bytes to ``path`` as a new file (truncating one in place costs
    milliseconds on some file systems)."""

    def write(data: bytes) -> None:
        path.unlink(missing_ok=True)
        path.write_bytes(data)

    return write


# -- valid files -----------------------------------------------------------------------------------
TOPOLOGY_CONF = (ROOT / "examples" / "topology.conf").read_text()
SMALL_CONF = """\
SwitchName=leaf1 Nodes=n[01-04]
SwitchName=leaf2 Nodes=n[05-06] LinkSpeed=100
SwitchName=spine Switches=leaf[1-2]
"""
CONTINUED_CONF = (
    "switchname=top1 \\\n  switches=leafA,leafB  # the top\n"
    "SwitchName=leafA Nodes=a[1-3]\nSwitchName=leafB Nodes=b1\n"
)
TREE = Topology.from_slurm(SMALL_CONF)
TREE_JSON = json.dumps(TREE.to_dict())
FAT = FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)


def window_seeds() -> list[str]:
    fat = Window(FAT, [0, 1, 4, 5, 6, 15], [2, 3], meta={"epoch": 0, "index": 1, "time_s": 60})
    tree = Window(TREE, ["n01", "n02", "n05"], [2, 1])
    return [
        (ROOT / "examples" / "window.json").read_text(),
        fat.to_json(),
        tree.to_json(),
        json.dumps([fat.to_dict(), tree.to_dict()]),
        json.dumps(
            {"topology": {"json": "tree.json"}, "idle_nodes": "n[01-03]", "job_sizes": [1, 2]}
        ),
        json.dumps({"topology": {"k": 4}, "idle_nodes": [0, 1, 2, 3], "job_sizes": [4]}),
    ]


def jsonl_seeds() -> list[str]:
    one = [json.loads(s) for s in window_seeds() if not s.startswith("[")]
    return ["".join(json.dumps(w) + "\n" for w in one[:3]), "\n".join(json.dumps(w) for w in one)]


CONF_SEEDS = [TOPOLOGY_CONF, SMALL_CONF, CONTINUED_CONF]
TREE_SEEDS = [
    TREE_JSON,
    json.dumps(Topology.from_slurm(TOPOLOGY_CONF).to_dict(), indent=1),
    json.dumps(
        {
            "switches": [
                {"name": "top", "switches": ["a", "b"]},
                {"name": "a", "nodes": ["x1", "x2"]},
                {"name": "b", "nodes": "y[1-3]"},
            ]
        }
    ),
]
SWF = (ROOT / "placement" / "batch" / "data" / "lublin_256.swf").read_bytes()
SWF_SEEDS = [
    b"\n".join(SWF.splitlines()[:14]) + b"\n",
    b"; MaxNodes: 64\n; UnixStartTime: 1000\n"
    b"1 0 5 100 4 -1 -1 4 200 -1 1 7 1 -1 1 -1 -1 -1\n"
    b"2 10 0 50 2 -1 -1 2 60 -1 1 8 1 -1 1 -1 1 -1 3 4\n"
    b"3 20 -1 70 1.5 -1 -1 -1 -1 -1 1 7 1 -1 1 -1 2 -1\n",
]
SWF_SEEDS.append(gzip.compress(SWF_SEEDS[0], mtime=0))
SACCT = (ROOT / "placement" / "batch" / "data" / "ls6-a100.tsv").read_bytes()
SACCT_SEEDS = [
    b"\n".join(SACCT.splitlines()[:12]) + b"\n",
    b"JobID|User|Submit|Start|End|Timelimit|NNodes|\n"
    b"7|alice|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T01:00:00|01:00:00|2|\n"
    b"7.batch|alice|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T01:00:00|"
    b"|1|\n"
    b"8_1|bob|2024-01-01T00:02:00|2024-01-01T00:03:00|Unknown|UNLIMITED|4|\n"
    b"9|bob|2024-01-01T00:02:00+02:00|2024-01-01T00:03:00|2024-01-01T00:09:00|"
    b"1-00:00:00|1|\n",
]
AUTHORS_SEEDS = [
    b"1  0  100  4\n2  7  50  2\n3  20  1800  40\n",
    b"# job submit runtime nodes\n1 0 100 4\n\n2 5 10 1  # short\n3 3 20 2.0\n",
]


# -- the readers -----------------------------------------------------------------------------------
def check_windows(windows):
    assert isinstance(windows, list) and all(isinstance(w, Window) for w in windows)
    assert all(w.topology.num_nodes <= MAX_NODES for w in windows)


def check_windows_one(window):
    check_windows([window])


def check_tree(tree):
    assert isinstance(tree, Topology) and 1 <= tree.num_nodes <= MAX_NODES


def check_trace(loaded):
    """A table of jobs and a report that prints (jobs larger than tjap simulates are data here:
    the simulator refuses them, see test_reader_limits.py)."""
    jobs, report = loaded
    assert isinstance(jobs, Jobs) and isinstance(report, TraceReport)
    assert len(jobs) == report.jobs > 0 and jobs.nodes.min() >= 1
    json.dumps(report.to_dict())
    assert report.summary() and report.text()


def check_workload(loaded):
    workload, report = loaded
    assert isinstance(workload, Workload) and workload.num_jobs == report.jobs > 0
    json.dumps(report.to_dict())
    assert report.summary() and report.text()


@pytest.fixture(scope="module")
def window_dir(folder) -> Path:
    shutil.copyfile(ROOT / "examples" / "topology.conf", folder / "topology.conf")
    (folder / "tree.json").write_text(TREE_JSON)
    return folder


def test_the_valid_files_mutated_are_read(window_dir):
    """Every file the mutations start from is valid: the fuzzing starts next to a success."""
    for k, seed in enumerate(window_seeds() + jsonl_seeds()):
        path = window_dir / f"seed{k}.{'jsonl' if seed in jsonl_seeds() else 'json'}"
        path.write_text(seed)
        check_windows(load_windows(path))
    for seed in CONF_SEEDS:
        check_tree(Topology.from_slurm(seed))
    for k, seed in enumerate(TREE_SEEDS):
        (window_dir / f"seed{k}.json").write_text(seed)
        check_tree(Topology.from_file(window_dir / f"seed{k}.json"))
    for suffix, seeds, read, check in (
        (".swf", SWF_SEEDS, load_trace, check_trace),
        (".tsv", SACCT_SEEDS, load_trace, check_trace),
        (".txt", AUTHORS_SEEDS, Workload.from_file, check_workload),
    ):
        for k, seed in enumerate(seeds):
            (window_dir / f"seed{k}{suffix}").write_bytes(seed)
            check(read(window_dir / f"seed{k}{suffix}"))


def test_fuzz_window_json(window_dir):
    path = window_dir / "window.json"
    fuzz(
        "window JSON (load_windows)",
        files(window_seeds()),
        writer(path),
        lambda _: load_windows(path),
        check_windows,
    )


def test_fuzz_window_jsonl(window_dir):
    path = window_dir / "windows.jsonl"
    fuzz(
        "window JSONL (load_windows)",
        files(jsonl_seeds()),
        writer(path),
        lambda _: load_windows(path),
        check_windows,
    )


def test_fuzz_window_text():
    """Window.from_json on text (what a caller holding the JSON string uses)."""
    seeds = [s for s in window_seeds() if '"slurm"' not in s and '"json"' not in s]
    fuzz(
        "window text (Window.from_json)",
        files(seeds),
        None,
        lambda data: Window.from_json(data.decode("utf-8", "replace")),
        check_windows_one,
    )


def test_fuzz_topology_conf(folder):
    path = folder / "topology.conf"

    def read(_):
        tree = Topology.from_slurm(path)
        assert Topology.from_file(path) == tree
        return tree

    fuzz(
        "topology.conf (Topology.from_slurm, from_file)",
        files(CONF_SEEDS),
        writer(path),
        read,
        check_tree,
    )


def test_fuzz_topology_conf_text():
    """Topology.from_slurm on the file's text (a string holding a newline or '=')."""
    fuzz(
        "topology.conf text (Topology.from_slurm)",
        files(CONF_SEEDS),
        None,
        lambda data: Topology.from_slurm(data.decode("utf-8", "replace") + "\n"),
        check_tree,
    )


def test_fuzz_tree_json(folder):
    path = folder / "tree.json"
    fuzz(
        "switch tree JSON (Topology.from_file)",
        files(TREE_SEEDS),
        writer(path),
        lambda _: Topology.from_file(path),
        check_tree,
    )


SLURM_YAML_SEEDS = [
    "- topology: fabric\n  cluster_default: true\n  tree:\n    switches:\n"
    "    - switch: spine\n      children: leaf[1-2]\n    - switch: leaf1\n      nodes: n[01-04]\n"
    "    - switch: leaf2\n      nodes: [n05, n06]\n- topology: none\n  flat: true\n",
    "- topology: nvl\n  block:\n    block_sizes: [2, 4]\n    blocks:\n"
    "    - block: b1\n      nodes: g[1-2]\n    - block: b2\n      nodes: g[3-4]\n"
    "    - block: b3\n      nodes: g[5-6]\n",
]
KUBE_NODES_SEEDS = [
    json.dumps(
        {
            "kind": "List",
            "items": [
                {
                    "kind": "Node",
                    "metadata": {
                        "name": f"n{i}",
                        "labels": {"block": f"b{i // 3}", "rack": f"r{i // 2}"},
                    },
                }
                for i in range(6)
            ],
        },
        indent=1,
    )
]
HYPERNODE_SEEDS = [
    "kind: HyperNode\nmetadata: {name: s0}\nspec:\n  tier: 1\n  members:\n"
    "  - {type: Node, selector: {exactMatch: {name: n1}}}\n"
    "  - {type: Node, selector: {exactMatch: {name: n2}}}\n---\n"
    "kind: HyperNode\nmetadata: {name: s1}\nspec:\n  tier: 1\n  members:\n"
    "  - {type: Node, selector: {regexMatch: {pattern: '^n[34]$'}}}\n---\n"
    "kind: HyperNode\nmetadata: {name: s2}\nspec:\n  tier: 2\n  members:\n"
    "  - {type: HyperNode, selector: {exactMatch: {name: s0}}}\n"
    "  - {type: HyperNode, selector: {exactMatch: {name: s1}}}\n"
]


def test_the_level_readers_read_their_seeds():
    for seed in SLURM_YAML_SEEDS:
        check_tree(Topology.from_slurm_yaml(seed))
    check_tree(Topology.from_node_labels(KUBE_NODES_SEEDS[0] + "\n", ["block", "rack"]))
    check_tree(Topology.from_hypernodes(HYPERNODE_SEEDS[0], ["n1", "n2", "n3", "n4"]))


def test_fuzz_topology_yaml(folder):
    path = folder / "topology.yaml"
    fuzz(
        "topology.yaml (Topology.from_slurm_yaml, from_file)",
        files(SLURM_YAML_SEEDS),
        writer(path),
        lambda _: Topology.from_file(path),
        check_tree,
    )


def test_fuzz_kube_nodes(folder):
    path = folder / "nodes.json"

    def read(_):
        with warnings.catch_warnings():  # nodes left out are counted in a warning
            warnings.simplefilter("ignore")
            return Topology.from_node_labels(path, ["block", "rack"], missing="skip")

    fuzz(
        "kubectl nodes (Topology.from_node_labels)",
        files(KUBE_NODES_SEEDS),
        writer(path),
        read,
        check_tree,
    )


def test_fuzz_hypernodes(folder):
    path = folder / "hypernodes.yaml"
    fuzz(
        "HyperNodes (Topology.from_hypernodes)",
        files(HYPERNODE_SEEDS),
        writer(path),
        lambda _: Topology.from_hypernodes(path, ["n1", "n2", "n3", "n4"]),
        check_tree,
    )


def test_fuzz_swf(folder):
    path = folder / "trace.swf"
    fuzz(
        "SWF trace (load_trace)",
        files(SWF_SEEDS),
        writer(path),
        lambda _: load_trace(path),
        check_trace,
    )


def test_fuzz_sacct(folder):
    path = folder / "trace.tsv"
    fuzz(
        "sacct table (load_trace)",
        files(SACCT_SEEDS),
        writer(path),
        lambda _: load_trace(path),
        check_trace,
    )


def test_fuzz_authors_workload(folder):
    path = folder / "jobs.txt"
    fuzz(
        "authors' workload (Workload.from_file)",
        files(AUTHORS_SEEDS),
        writer(path),
        lambda _: Workload.from_file(path),
        check_workload,
    )


# -- weights metadata ------------------------------------------------------------------------------
def shipped_copy(stem: str, into: Path) -> Path:
    """A copy of shipped weights (metadata, weights and inference files) in ``into``; returns
    the metadata's path (the .json sidecar that is fuzzed)."""
    meta = json.loads((SHIPPED / f"{stem}.json").read_text())
    for kind in ("weights", "inference"):
        if f"{kind}_file" in meta:
            shutil.copyfile(SHIPPED / meta[f"{kind}_file"], into / meta[f"{kind}_file"])
    path = into / f"{stem}.json"
    path.write_text(json.dumps(meta, indent=1))
    return path


def test_fuzz_weights_metadata(folder):
    """The .json sidecar read by every family's read_metadata, provision thresholds, and NSA's
    load_actor (the solve-time reader: inference file, names, shapes, no torch)."""
    from tjap.learned import policy_io
    from tjap.learned.batch import weights as provision_weights
    from tjap.learned.tree.policy import load_actor

    path = shipped_copy("nsa_fcn1", folder)
    seeds = [path.read_bytes()] + [
        (SHIPPED / f"{stem}.json").read_bytes() for stem in ("interference_single", "network_gnn")
    ]
    seeds.append(
        json.dumps(
            {
                **json.loads((SHIPPED / "provision_rf.json").read_text()),
                "weights_file": "nsa_fcn1.npz",
            }
        ).encode()
    )
    load_actor(path)  # the copy is good

    def read(_):
        for family in policy_io.FAMILIES:
            outcome("(not counted)", lambda: policy_io.read_metadata(path, family))
        meta = outcome("(not counted)", lambda: provision_weights.read_metadata(path))
        if meta is not None:
            outcome("(not counted)", lambda: provision_weights.thresholds(meta, 1.0, "rf"))
        return load_actor(path)

    fuzz(
        "weights metadata (read_metadata, thresholds, load_actor)", files(seeds), writer(path), read
    )


def test_fuzz_torch_weights_metadata(folder):
    """The sidecar of torch weights, read by load_weights with the model it describes built
    (the interference GNN: a small model)."""
    pytest.importorskip("torch")
    from tjap.learned.interference.policy import load_model

    path = shipped_copy("interference_single", folder)
    seeds = [path.read_bytes(), (SHIPPED / "interference_marl_server.json").read_bytes()]
    load_model(path)  # the copy is good
    fuzz(
        "torch weights metadata (load_weights: interference GNN)",
        files(seeds),
        writer(path),
        lambda _: load_model(path),
    )


def test_fuzz_array_weights_metadata(folder):
    """The sidecar of array weights (.npz), read by load_weights without torch (a provisioner's
    tree ensemble)."""
    from tjap.learned.batch.weights import load_trees

    path = shipped_copy("provision_xgb", folder)
    load_trees(path)  # the copy is good
    fuzz(
        "array weights metadata (load_weights: provision trees)",
        files([path.read_bytes()]),
        writer(path),
        lambda _: load_trees(path),
    )
