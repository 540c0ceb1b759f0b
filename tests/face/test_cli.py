"""The ``tjap`` command line, run in-process through ``tjap.cli.main`` (plus one real process to see
that the console script is installed): subcommands, output formats, exit codes and one-line errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_calls import assert_one_line_error, run

import tjap
from tjap import FatTree, Window, assignment_cost, load_windows, methods
from tjap.cli import main
from tjap.placement.tree.stream import generate_windows

TINY = {"num_nodes": 16, "nodes_per_switch": 2, "switches_per_pod": 2}


# -- helpers ---------------------------------------------------------------------------------------
def assert_feasible(window: Window, assignment) -> None:
    idle = set(window.idle_nodes.tolist())
    used = set()
    assert len(assignment) == window.num_jobs
    for nodes, size in zip(assignment, window.job_sizes):
        assert len(nodes) == size == len(set(nodes))
        assert set(nodes) <= idle
        assert not used & set(nodes)
        used |= set(nodes)


def write_window(path: Path, idle, sizes, topology=TINY) -> Path:
    path.write_text(json.dumps({"topology": topology, "idle_nodes": idle, "job_sizes": sizes}))
    return path


@pytest.fixture
def tiny_file(tmp_path) -> Path:
    """The wrap window of conftest: its only optimum wraps around the end of Q."""
    return write_window(tmp_path / "tiny.json", [0, 4, 5, 6, 7, 15], [4, 2])


@pytest.fixture
def tiny_list_file(tmp_path) -> Path:
    windows = [
        {"topology": TINY, "idle_nodes": [0, 4, 5, 6, 7, 15], "job_sizes": [4, 2]},
        {"topology": TINY, "idle_nodes": list(range(1, 14)), "job_sizes": [3, 5, 2]},
    ]
    path = tmp_path / "tiny_list.json"
    path.write_text(json.dumps(windows))
    return path


# -- console script --------------------------------------------------------------------------------
def test_console_script_help():
    script = Path(sys.executable).parent / "tjap"
    assert script.exists(), f"console script {script} is not installed"
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    for command in ("solve", "generate", "bench", "demo", "methods"):
        assert command in proc.stdout
    assert proc.stderr == ""


def test_module_help(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert "usage: tjap" in capsys.readouterr().out


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


# -- methods ---------------------------------------------------------------------------------------
def test_methods_text(capsys):
    code, out, err = run(capsys, "methods", "--system", "tree")
    assert code == 0 and err == ""
    lines = out.splitlines()[1:]
    assert [line.split()[0] for line in lines] == methods()
    for name in ("auto", "dp", "scip", "cpsat", "freeform", "seq", "scip-paper"):
        assert name in methods()
    assert all(len(line.split()) > 2 for line in lines)  # every method has flags and a description


def test_methods_lists_every_system(capsys):
    from tjap.registry import SYSTEMS
    from tjap.registry import methods as system_methods

    code, out, err = run(capsys, "methods")
    assert code == 0 and err == ""
    for system in SYSTEMS:
        assert any(line.startswith(f"{system}:") for line in out.splitlines())
        for name in system_methods(system):
            assert f"  {name} " in out


def test_methods_json(capsys):
    code, out, err = run(capsys, "methods", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert list(data["tree"]) == methods()
    assert set(data) == {"tree", "network", "interference", "provision"}
    for entries in data.values():
        for entry in entries.values():
            assert entry["description"] and isinstance(entry["available"], bool)
    assert data["network"]["gnn"]["learned"] and data["tree"]["dp"]["exact"]


# -- generate + solve ------------------------------------------------------------------------------
@pytest.fixture
def stream_file(tmp_path, capsys) -> Path:
    path = tmp_path / "tmp.jsonl"
    code, out, err = run(capsys, "generate", "windows", "--num-windows", 3, "--out", path)
    assert code == 0 and err == ""
    assert str(path) in out and "3 windows" in out
    return path


def test_generate_windows(stream_file):
    lines = stream_file.read_text().splitlines()
    assert len(lines) == 3
    windows = load_windows(stream_file)
    assert len(windows) == 3
    for w in windows:
        assert w.topology == FatTree.from_layout("paper")
        assert {"epoch", "index", "time_s", "jobs"} <= set(w.meta)
        assert all(n >= 2 for n in w.job_sizes) and w.num_jobs <= 5
    # the file is the library's stream for the same arguments
    expected = generate_windows("paper", 3, 0)
    assert [json.loads(line) for line in lines] == [w.to_dict() for w in expected]


def test_generate_windows_json_and_options(tmp_path, capsys):
    path = tmp_path / "sub" / "dir" / "w.jsonl"  # parent folders are created
    code, out, err = run(
        capsys,
        "generate",
        "windows",
        "--num-windows",
        2,
        "--layout",
        "published",
        "--cap",
        "none",
        "--tau",
        150,
        "--seed",
        3,
        "--epoch-windows",
        1,
        "--out",
        path,
        "--json",
    )
    assert code == 0 and err == ""
    summary = json.loads(out)
    assert summary == {
        "out": str(path),
        "windows": 2,
        "layout": "published",
        "seed": 3,
        "cap": None,
        "tau_s": 150,
    }
    windows = load_windows(path)
    assert len(windows) == 2
    assert [w.meta["epoch"] for w in windows] == [0, 1]
    assert all(w.topology == FatTree.from_layout("published") for w in windows)
    assert max(w.num_jobs for w in windows) > 5  # no cap


def test_solve_dp_text(stream_file, capsys):
    code, out, err = run(capsys, "solve", stream_file, "--method", "dp")
    assert code == 0 and err == ""
    windows = load_windows(stream_file)
    heads = [line for line in out.splitlines() if line.startswith("window ")]
    assert [h.split(":")[0] for h in heads] == ["window 0", "window 1", "window 2"]
    assert all("method=dp status=OPTIMAL" in h for h in heads)
    # the node ranges printed per job are a feasible assignment
    blocks, current = [], None
    for line in out.splitlines():
        if line.startswith("window "):
            current = []
            blocks.append(current)
        elif line.startswith("  job "):
            nodes = []
            for part in line.split(": ", 1)[1].split(","):
                lo, _, hi = part.partition("-")
                nodes.extend(range(int(lo), int(hi or lo) + 1))
            current.append(nodes)
    assert len(blocks) == 3
    for w, assignment in zip(windows, blocks):
        assert_feasible(w, assignment)


def test_solve_dp_json(stream_file, capsys):
    code, out, err = run(capsys, "solve", stream_file, "--method", "dp", "--json")
    assert code == 0 and err == ""
    results = json.loads(out)
    windows = load_windows(stream_file)
    assert isinstance(results, list) and len(results) == 3
    for w, r in zip(windows, results):
        assert r["method"] == "dp" and r["status"] == "OPTIMAL" and r["convention"] == "paper"
        assert_feasible(w, r["assignment"])
        assert r["objective"] == pytest.approx(assignment_cost(w.topology, r["assignment"]))


def test_solve_text_matches_json(stream_file, capsys):
    _, text, _ = run(capsys, "solve", stream_file, "--method", "dp")
    _, js, _ = run(capsys, "solve", stream_file, "--method", "dp", "--json")
    costs = [
        float(h.split("cost=")[1].split()[0]) for h in text.splitlines() if h.startswith("window ")
    ]
    assert costs == pytest.approx([r["objective"] for r in json.loads(js)], abs=0.01)


@pytest.mark.parametrize("method", ["dp", "seq", "scip", "cpsat", "auto"])
def test_solve_methods_on_tiny_window(tiny_file, capsys, method):
    code, out, err = run(
        capsys, "solve", tiny_file, "--method", method, "--json", "--time-limit", 10
    )
    assert code == 0 and err == ""
    r = json.loads(out)
    assert isinstance(r, dict)  # a single window prints one object
    window = load_windows(tiny_file)[0]
    assert_feasible(window, r["assignment"])
    assert r["objective"] == pytest.approx(assignment_cost(window.topology, r["assignment"]))
    if method == "seq":
        # the paper's sequential assignment: next idle nodes in window order
        assert r["assignment"] == [[0, 4, 5, 6], [7, 15]]
        assert r["status"] == "FEASIBLE"
    else:
        # the exact optimum wraps: the 4-node job takes pod 1, the 2-node job 15 and 0
        assert r["status"] == "OPTIMAL"
        assert [sorted(a) for a in r["assignment"]] == [[4, 5, 6, 7], [0, 15]]


def test_exact_methods_agree_and_beat_seq(tiny_list_file, capsys):
    objectives = {}
    for method in ("dp", "scip", "cpsat", "seq"):
        code, out, _ = run(capsys, "solve", tiny_list_file, "--method", method, "--json")
        assert code == 0
        objectives[method] = [r["objective"] for r in json.loads(out)]
    assert objectives["scip"] == pytest.approx(objectives["dp"])
    assert objectives["cpsat"] == pytest.approx(objectives["dp"])
    assert all(s >= d - 1e-9 for s, d in zip(objectives["seq"], objectives["dp"]))


def test_convention_published(tiny_list_file, capsys):
    _, out_paper, _ = run(capsys, "solve", tiny_list_file, "--method", "dp", "--json")
    code, out, err = run(
        capsys, "solve", tiny_list_file, "--method", "dp", "--json", "--convention", "published"
    )
    assert code == 0 and err == ""
    paper, published = json.loads(out_paper), json.loads(out)
    windows = load_windows(tiny_list_file)
    for w, rp, rq in zip(windows, paper, published):
        assert rq["convention"] == "published"
        assert_feasible(w, rq["assignment"])
        assert rq["objective"] == assignment_cost(w.topology, rq["assignment"], "published")
        assert rq["objective"] == int(rq["objective"])  # integer division in the published code
        assert rq["objective"] != rp["objective"]
    code, text, _ = run(
        capsys, "solve", tiny_list_file, "--method", "seq", "--convention", "published"
    )
    assert code == 0 and "method=seq" in text


def test_solve_jsonl_with_blank_lines(tmp_path, capsys):
    line = json.dumps({"topology": TINY, "idle_nodes": [1, 2, 3], "job_sizes": [2]})
    path = tmp_path / "w.jsonl"
    path.write_text(f"\n{line}\n\n{line}\n")
    code, out, _ = run(capsys, "solve", path, "--method", "dp", "--json")
    assert code == 0 and len(json.loads(out)) == 2


# -- bad input: exit 2 and one line, never a traceback ------------------------------------------------
def test_missing_file(tmp_path, capsys):
    missing = tmp_path / "nope.json"
    assert_one_line_error(*run(capsys, "solve", missing), str(missing))


def test_directory_instead_of_file(tmp_path, capsys):
    assert_one_line_error(*run(capsys, "solve", tmp_path), "cannot read")


@pytest.mark.parametrize(
    "name,text",
    [
        ("bad.json", "{not json"),
        ("bad.json", ""),
        ("bad.jsonl", '{"topology": {"num_nodes": 16}\n'),
        ("bad.json", "42"),
        ("bad.json", '[{"topology": 1}]'),
    ],
)
def test_malformed_json(tmp_path, capsys, name, text):
    path = tmp_path / name
    path.write_text(text)
    assert_one_line_error(*run(capsys, "solve", path, "--method", "dp"), str(path))


def test_malformed_jsonl_names_the_line(tmp_path, capsys):
    good = json.dumps({"topology": TINY, "idle_nodes": [1, 2, 3], "job_sizes": [2]})
    path = tmp_path / "w.jsonl"
    path.write_text(f"{good}\n{{oops\n")
    assert_one_line_error(*run(capsys, "solve", path), f"{path}:2:")


def test_empty_window_file(tmp_path, capsys):
    for name, text in (("empty.jsonl", "\n"), ("empty.json", "[]")):
        path = tmp_path / name
        path.write_text(text)
        assert_one_line_error(*run(capsys, "solve", path), "holds no window")


@pytest.mark.parametrize(
    "idle,sizes,fragment",
    [
        ([0, 1, 16], [1], "outside 0..15"),  # out-of-range id
        ([-1, 1, 2], [1], "-1"),
        ([3, 1, 3, 4], [1], "repeats node 3"),  # repeated id
        ([0, 1, 2, 3], [3, 2], "request 5 nodes but only 4 are idle"),  # sizes exceed idle count
        ([0, 1, 2, 3], [0], "job_sizes[0] = 0"),
        ([0, 1, 2], [], "job_sizes is empty"),
        ([0, 1.5], [1], "idle_nodes[1]"),
    ],
)
def test_invalid_window(tmp_path, capsys, idle, sizes, fragment):
    path = write_window(tmp_path / "w.json", idle, sizes)
    assert_one_line_error(*run(capsys, "solve", path, "--method", "dp"), fragment)


def test_invalid_topology(tmp_path, capsys):
    path = write_window(
        tmp_path / "w.json",
        [0, 1],
        [1],
        topology={"num_nodes": 0, "nodes_per_switch": 2, "switches_per_pod": 2},
    )
    assert_one_line_error(*run(capsys, "solve", path), "num_nodes")


def test_unknown_method(tiny_file, capsys):
    assert_one_line_error(
        *run(capsys, "solve", tiny_file, "--method", "simplex"), "unknown method 'simplex'", "dp"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", "{file}", "--time-limit", "0"],
        ["solve", "{file}", "--time-limit", "-1"],
        ["solve", "{file}", "--time-limit", "abc"],
        ["solve", "{file}", "--time-limit", "nan"],
        ["solve", "{file}", "--convention", "metric"],
        ["solve", "{file}", "--method", "sa", "--iterations", "0"],
        ["solve", "{file}", "--method", "sa", "--iterations", "many"],
        ["solve", "{file}", "--method", "nsa", "--lookahead", "-1"],
        ["solve", "{file}", "--method", "nsa", "--lookahead", "two"],
        ["generate", "windows", "--out", "{out}", "--cap", "bad"],
        ["generate", "windows", "--out", "{out}", "--cap", "0"],
        ["generate", "windows", "--out", "{out}", "--cap", "-3"],
        ["generate", "windows", "--out", "{out}", "--num-windows", "0"],
        ["generate", "windows", "--out", "{out}", "--layout", "torus"],
        ["generate", "windows"],
        ["demo", "--time-limit", "0"],
        ["bench", "exact", "--freeform-time-limit", "0"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(tiny_file, tmp_path, capsys, argv):
    argv = [a.format(file=tiny_file, out=tmp_path / "o.jsonl") for a in argv]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert "error:" in err.splitlines()[-1]
    assert not (tmp_path / "o.jsonl").exists()


def test_cap_error_message(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["generate", "windows", "--out", str(tmp_path / "o.jsonl"), "--cap", "bad"])
    assert "cap must be a positive integer or 'none'" in capsys.readouterr().err


def test_generate_cannot_write(tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("")
    assert_one_line_error(
        *run(capsys, "generate", "windows", "--num-windows", 1, "--out", blocker / "w.jsonl"),
        "cannot write",
    )


# -- user errors that once escaped as tracebacks ---------------------------------------------------
def _exit_code(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_non_utf8_file(tmp_path, capsys):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe{}")
    assert_one_line_error(*run(capsys, "solve", path, "--method", "dp"), str(path))


@pytest.mark.parametrize("limit", ["inf", "1e21"])
def test_huge_time_limit(tiny_file, capsys, limit):
    code, out, err = _exit_code(
        capsys, "solve", tiny_file, "--method", "scip", "--time-limit", limit
    )
    assert code in (0, 2)  # either solved (as no limit) or a clean usage error
    assert "Traceback" not in err
    if code == 2:
        assert "error:" in err.splitlines()[-1]


def test_bench_out_is_a_file(tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("")
    assert_one_line_error(
        *run(
            capsys,
            "bench",
            "exact",
            "--num-windows",
            1,
            "--paper-windows",
            0,
            "--freeform-time-limit",
            0.5,
            "--out",
            blocker,
            "--quiet",
            "--json",
        )
    )


# -- bench and demo --------------------------------------------------------------------------------
def test_bench_exact(tmp_path, capsys):
    out_dir = tmp_path / "bench"
    code, out, err = run(
        capsys,
        "bench",
        "exact",
        "--num-windows",
        2,
        "--paper-windows",
        1,
        "--freeform-time-limit",
        1,
        "--paper-time-limit",
        2,
        "--out",
        out_dir,
        "--quiet",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["num_windows"] == 2 and data["layout"] == "paper"
    assert data["convention"] == "paper" and data["cap"] == 5 and data["seed"] == 0
    assert "table" not in data
    rows = {r["method"]: r for r in data["summary"]}
    assert set(rows) == {"scip", "cpsat", "dp", "freeform", "scip-paper"}
    assert rows["dp"]["same_as_scip_pct"] == 100
    assert rows["cpsat"]["same_as_scip_pct"] == 100
    assert rows["dp"]["optimal_pct"] == 100 and rows["scip"]["optimal_pct"] == 100
    assert rows["scip-paper"]["windows"] == 1
    assert all(rows[m]["windows"] == 2 for m in ("scip", "cpsat", "dp", "freeform"))
    # the free-form optimum (warm-started from dp) never costs more than the SCAS optimum
    assert rows["freeform"]["below_scas_pct"] >= -1e-9
    files = data["files"]
    assert set(files) == {"rows_csv", "summary_csv", "plot_png"}
    for path in map(Path, files.values()):
        assert path.is_file() and path.stat().st_size > 0
        assert path.parent == out_dir
    assert Path(files["plot_png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(files["rows_csv"]) as f:
        per_window = list(csv.DictReader(f))
    assert len(per_window) == 2 * 4 + 1
    with open(files["summary_csv"]) as f:
        summary = list(csv.DictReader(f))
    assert [r["method"] for r in summary] == [r["method"] for r in data["summary"]]


def test_demo_json(capsys):
    code, out, err = run(capsys, "demo", "--json", "--time-limit", 2)
    assert code == 0, err
    data = json.loads(out)
    window = Window.from_dict(data["window"])
    assert window.num_idle == 1000
    rows = {r["method"]: r for r in data["results"]}
    assert list(rows) == ["dp", "scip", "cpsat", "freeform", "seq"]
    assert all(r["feasible"] for r in rows.values())
    assert rows["dp"]["status"] == "OPTIMAL"
    for m in ("scip", "cpsat"):  # 2 s may not suffice on a loaded machine: then only no better
        if rows[m]["status"] == "OPTIMAL":
            assert rows[m]["cost"] == pytest.approx(rows["dp"]["cost"])
        else:
            assert rows[m]["cost"] >= rows["dp"]["cost"] - 1e-6
    assert rows["seq"]["cost"] >= rows["dp"]["cost"] - 1e-6
    # free-form has no contiguity rule: its proven bound cannot exceed the SCAS optimum
    if rows["freeform"]["bound"] is not None:
        assert rows["freeform"]["bound"] <= rows["dp"]["cost"] * (1 + 1e-9)


def test_version(capsys):
    import tjap

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"tjap {tjap.__version__}"


# -- tjap solve: the method's own options ----------------------------------------------------------
SHIPPED_WEIGHTS = Path(__file__).resolve().parents[2] / "learned" / "weights"


@pytest.mark.parametrize(
    "method, flags, options",
    [
        (
            "sa",
            ["--iterations", 40, "--repair", "greedy", "--preset", "paper"],
            {"iterations": 40, "repair": "greedy", "preset": "paper"},
        ),
        ("lns", ["--iterations", 30, "--repair", "greedy"], {"iterations": 30, "repair": "greedy"}),
        (
            "nsa",
            [
                "--iterations",
                20,
                "--preset",
                "published",
                "--weights",
                SHIPPED_WEIGHTS / "nsa_cnn1.json",
            ],
            {"iterations": 20, "preset": "published", "weights": SHIPPED_WEIGHTS / "nsa_cnn1.json"},
        ),
    ],
)
def test_solve_passes_method_options(tiny_list_file, capsys, method, flags, options):
    """--iterations, --repair, --preset, --weights and --seed reach the method: the command line
    gives what tjap.solve gives with the same options."""
    import tjap

    code, out, err = run(
        capsys, "solve", tiny_list_file, "--method", method, *flags, "--seed", 3, "--json"
    )
    assert code == 0, err
    for window, r in zip(load_windows(tiny_list_file), json.loads(out)):
        expected = tjap.solve(window, method, seed=3, **options)
        assert_feasible(window, r["assignment"])
        assert r["assignment"] == [sorted(a) for a in expected.assignment] or r["assignment"] == [
            list(a) for a in expected.assignment
        ]
        assert r["objective"] == pytest.approx(expected.objective)


def test_solve_lookahead_options(tiny_list_file, capsys):
    """--repair lookahead (sa) and --lookahead K (nsa) reach the methods: the same results as
    tjap.solve with those options, every one feasible."""
    windows = load_windows(tiny_list_file)
    for method, flags, options in (
        ("sa", ["--repair", "lookahead"], {"repair": "lookahead"}),
        ("nsa", ["--lookahead", "4"], {"lookahead": 4}),
    ):
        code, out, _ = run(
            capsys,
            "solve",
            tiny_list_file,
            "--method",
            method,
            *flags,
            "--iterations",
            "50",
            "--json",
        )
        assert code == 0
        for window, r in zip(windows, json.loads(out)):
            expected = tjap.solve(window, method, iterations=50, **options)
            assert_feasible(window, r["assignment"])
            assert r["objective"] == pytest.approx(expected.objective)


def test_solve_iterations_change_the_search(tiny_list_file, capsys):
    """One move accepts at most one: the default 1000 accept hundreds on this window."""
    accepted = {}
    for iterations in ([], ["--iterations", 1]):
        code, out, _ = run(capsys, "solve", tiny_list_file, "--method", "sa", *iterations, "--json")
        assert code == 0
        accepted[len(iterations)] = json.loads(out)[1]["info"]["accepted"]
    assert accepted[2] <= 1 < accepted[0]


@pytest.mark.parametrize(
    "method, flags, takes",
    [
        (
            "dp",
            ["--iterations", 5],
            "it takes none of --iterations, --repair, --preset, --weights, --lookahead",
        ),
        ("auto", ["--weights", "x.json"], "it takes none of"),
        ("lns", ["--preset", "paper"], "it takes --iterations, --repair"),
        ("nsa", ["--repair", "greedy"], "it takes --iterations, --preset, --weights, --lookahead"),
        (
            "sa",
            ["--weights", "x.json", "--iterations", 3],
            "it takes --iterations, --repair, --preset",
        ),
        ("sa", ["--lookahead", 4], "it takes --iterations, --repair, --preset"),
    ],
)
def test_solve_refuses_options_the_method_does_not_take(tiny_file, capsys, method, flags, takes):
    code, out, err = run(capsys, "solve", tiny_file, "--method", method, *flags)
    refused = [f for f in flags if str(f).startswith("--") and f not in takes.split("takes")[1]]
    assert_one_line_error(code, out, err, f"--method {method} does not take", takes, *refused)


@pytest.mark.parametrize(
    "flags, fragment",
    [
        (["--method", "sa", "--preset", "nope"], "preset"),
        (["--method", "sa", "--repair", "nope"], "repair"),
        (["--method", "nsa", "--weights", "no/such.json"], "no/such.json"),
    ],
)
def test_solve_bad_option_values(tiny_file, capsys, flags, fragment):
    assert_one_line_error(*run(capsys, "solve", tiny_file, *flags), fragment)


def test_online_refuses_options_before_replaying(capsys):
    assert_one_line_error(
        *run(capsys, "online", "--method", "dp", "--iterations", 5, "--num-jobs", 5),
        "--method dp does not take --iterations",
    )
