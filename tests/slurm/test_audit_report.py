"""The audit's report page (tjap.slurm.audit_report): written from a result dict in the audit's JSON
shape, self-contained (nothing loaded from another host, no script), the headline numbers in it,
the records' text escaped, the worst jobs drawn with the right nodes marked, a 10,000-node tree
drawn small, a million-job audit kept small; and in headless Chromium (``-m docs``; ``make docs``
runs it) the page screenshots as a page. ``TJAP_DOCS_SCREENSHOTS=DIR`` writes the screenshot as
DIR/audit-report.png (the README's is ``docs/images/``).
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from browser import chromium, find_chromium, png_size

from tjap.core.errors import InvalidInputError
from tjap.placement.tree.hostlist import compress_hostlist
from tjap.placement.tree.topology import Topology
from tjap.slurm.audit_report import MAX_DIFFERING, report_html, switch_tree_svg, write_report

SMALL = Topology.from_slurm("""
SwitchName=leaf1 Nodes=n[01-04]
SwitchName=leaf2 Nodes=n[05-08]
SwitchName=leaf3 Nodes=n[09-12]
SwitchName=top Switches=leaf[1-3]
""")
HOSTILE = '<script>alert("x")</script>&'
GROUP_KEYS = ("cost", "optimum", "bound", "floor", "slurm_tree")


def group(name, jobs, cost, optimum, bound, floor, slurm_tree, fidelity=1.0) -> dict:
    excess = cost - floor
    return {
        "group": name,
        "jobs": jobs,
        "cost": cost,
        "optimum": optimum,
        "bound": bound,
        "floor": floor,
        "slurm_tree": slurm_tree,
        "excess": excess,
        "excess_ratio": cost / floor,
        "removable_share": (cost - optimum) / excess if excess else None,
        "bound_share": (cost - bound) / excess if excess else None,
        "fidelity": fidelity,
        "fidelity_jobs": jobs,
    }


def job(
    job_id,
    partition,
    start_s,
    nodes,
    cost,
    optimum,
    optimum_nodes,
    *,
    floor,
    tree_nodes,
    tree_cost,
    idle=8,
):
    return {
        "job_id": job_id,
        "partition": partition,
        "start_s": start_s,
        "start": datetime.fromtimestamp(start_s, ZoneInfo("Europe/Berlin")).isoformat(),
        "size": 4,
        "nodes": nodes,
        "idle": idle,
        "cost": cost,
        "optimum": optimum,
        "optimum_nodes": optimum_nodes,
        "bound": optimum,
        "bound_nodes": optimum_nodes,
        "floor": floor,
        "slurm_tree": tree_cost,
        "slurm_tree_nodes": tree_nodes,
        "slurm_tree_same": tree_nodes == nodes,
        "overlap": False,
    }


def summed(name, members) -> dict:
    """The summary entry of a group of job entries (the audit's by_* rows)."""
    totals = {key: float(sum(j[key] for j in members)) for key in GROUP_KEYS}
    out = group(name, len(members), *(totals[key] for key in GROUP_KEYS))
    out["fidelity"] = sum(j["slurm_tree_same"] for j in members) / len(members)
    return out


def small_result() -> dict:
    """Three 4-node jobs on SMALL; the worst (job 101) took two half leaves while leaf3 was
    idle; job 103 of the hostile partition differs from slurm-tree's choice. Sums: cost 6000,
    optimum 3000, floor 2400 (150 % above it; the optimum removes 3000 of 3600, 83.3 %)."""
    t0 = 1_795_000_000  # 2026-11-18
    jobs = [
        job(
            "101",
            "batch",
            t0,
            "n[03-04,07-08]",
            2500.0,
            1000.0,
            "n[09-12]",
            floor=800.0,
            tree_nodes="n[03-04,07-08]",
            tree_cost=2500.0,
        ),
        job(
            "102",
            "batch",
            t0 + 3600,
            "n[09-12]",
            1000.0,
            1000.0,
            "n[09-12]",
            floor=800.0,
            tree_nodes="n[09-12]",
            tree_cost=1000.0,
        ),
        job(
            "103",
            HOSTILE,
            t0 + 8 * 86400,
            "n[01-02,05-06]",
            2500.0,
            1000.0,
            "n[05-08]",
            floor=800.0,
            tree_nodes="n[05-08]",
            tree_cost=1000.0,
        ),
    ]
    worst = [dict(jobs[0], busy="n[01-02,05-06]"), dict(jobs[2], busy="n[03-04,09-12]")]
    summary = {k: v for k, v in summed("all", jobs).items() if k != "group"}
    summary.update(
        differing_jobs=["103"],
        by_size=[summed("3-4", jobs)],
        by_partition=[summed("batch", jobs[:2]), summed(HOSTILE, jobs[2:])],
        by_week=[summed("2026-W47", jobs[:2]), summed("2026-W48", jobs[2:])],
        worst=worst,
    )
    return {
        "tjap_audit": 1,
        "records": {
            "source": "sacct-<site>.txt",
            "format": "sacct",
            "timezone": "Europe/Berlin",
            "allocations": 9,
        },
        "topology": {"source": "topology.conf", "nodes": 12, "switches": 4, "levels": 2},
        "options": {
            "from": None,
            "to": None,
            "partition": None,
            "min_nodes": 2,
            "convention": "paper",
            "slurm": "22.05",
        },
        "summary": summary,
        "skipped": {"step": 5, "pending": 1, "no_such_reason": 2},
        "jobs": jobs,
    }


def node_classes(svg: str) -> dict[str, str]:
    """Node name -> the class its square has in a switch_tree_svg drawing."""
    return dict(
        (name, cls)
        for cls, name in re.findall(r'<rect class="(\w+)"[^>]*><title>([^<]+)</title>', svg)
    )


# ---------------------------------------------------------------------------- the page


def test_the_page_is_written_self_contained_with_the_headline_numbers(tmp_path):
    path = write_report(small_result(), SMALL, tmp_path / "report" / "deeper")
    assert path == tmp_path / "report" / "deeper" / "index.html"
    page = path.read_text()
    loaded = re.findall(r"""\b(?:src|href)\s*=\s*["']?([^"' >]+)""", page)
    assert loaded and all(url.startswith("data:image/png;base64,") for url in loaded), loaded
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert page.count("data:image/png;base64,") == 2  # cost over time, by job size
    text = re.sub(r"<[^>]+>", " ", page)
    for figure in (
        "3 multi-node jobs",
        "150.0 %",  # cost 6000 over the floor's 2400
        "83.3 %",  # the optimum removes 3000 of the 3600 above the floor
        "66.7 %",  # fidelity 2 of 3
        "1 job differs",
        "Europe/Berlin",
        "sacct-&lt;site&gt;.txt",
        "12 nodes",
    ):
        assert figure in text, figure
    # the skipped reasons with counts, an unknown reason shown bare
    assert re.search(r"step</td><td>5<", page) and "no_such_reason" in page


def test_the_headline_says_how_much_the_optimum_and_bound_remove():
    data = small_result()
    data["summary"].update(removable_share=0.6, bound_share=0.75)
    page = report_html(data, SMALL)
    assert "would have removed 60.0 % of that" in page and "the bound) 75.0 %" in page


def test_strings_from_the_records_are_escaped():
    page = report_html(small_result(), SMALL)
    assert HOSTILE not in page and "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in page


def test_the_worst_jobs_are_drawn_with_their_nodes_marked():
    page = report_html(small_result(), SMALL)
    svgs = re.findall(r"<svg\b.*?</svg>", page, flags=re.DOTALL)
    assert len(svgs) == 2
    first = node_classes(svgs[0])  # job 101: recorded n03-04,07-08, optimum leaf3
    assert len(first) == 12
    assert {n for n, c in first.items() if c == "job"} == {"n03", "n04", "n07", "n08"}
    assert {n for n, c in first.items() if c == "opt"} == {"n09", "n10", "n11", "n12"}
    assert {n for n, c in first.items() if c == "busy"} == {"n01", "n02", "n05", "n06"}
    second = node_classes(svgs[1])  # job 103: recorded n01-02,05-06, optimum n05-08
    assert {n for n, c in second.items() if c == "both"} == {"n05", "n06"}
    assert {n for n, c in second.items() if c == "opt"} == {"n07", "n08"}
    assert {n for n, c in second.items() if c == "job"} == {"n01", "n02"}
    assert {n for n, c in second.items() if c == "busy"} == {
        "n03",
        "n04",
        "n09",
        "n10",
        "n11",
        "n12",
    }
    for name in ("leaf1", "leaf2", "leaf3", "top"):
        assert f">{name}</text>" in svgs[0]


def test_a_10000_node_tree_is_drawn_only_where_the_job_is():
    leaves = [f"SwitchName=leaf{i:03d} Nodes=c{i:03d}n[01-40]" for i in range(250)]
    spines = [
        f"SwitchName=spine{j:02d} Switches=leaf[{10 * j:03d}-{10 * j + 9:03d}]" for j in range(25)
    ]
    root = "SwitchName=core Switches=spine[00-24]"
    tree = Topology.from_slurm("\n".join(leaves + spines + [root]))
    assert tree.num_nodes == 10_000
    svg = switch_tree_svg(
        tree, "c000n[01-04],c017n[05-08]", "c200n[01-08]", compress_hostlist(tree.node_names[:5000])
    )
    marked = node_classes(svg)
    assert len(marked) == 3 * 40  # three leaves drawn, not 250
    assert sum(c == "job" for c in marked.values()) == 8
    assert sum(c == "opt" for c in marked.values()) == 8
    assert marked["c000n10"] == "busy" and marked["c200n20"] == "idle"
    assert "core +22" in svg and "spine00 +9" in svg  # what is left out is said
    assert len(svg) < 30_000
    width = float(re.search(r'width="([\d.]+)"', svg).group(1))
    assert width < 1000


def test_the_list_of_differing_jobs_is_capped():
    data = small_result()
    extra = [dict(data["jobs"][2], job_id=f"9{i:03d}") for i in range(MAX_DIFFERING + 7)]
    data["jobs"] += extra
    data["summary"]["differing_jobs"] = ["103"] + [j["job_id"] for j in extra]
    page = report_html(data, SMALL)
    listed = page[page.index("Where slurm-tree differs") :]
    assert listed.count("<tr><td") == MAX_DIFFERING and "and 8 more" in listed
    assert '<td class="text">103</td>' in listed and "9049" not in listed  # the first 50 only


def test_a_million_job_audit_gives_a_small_page():
    data = small_result()
    template = data["jobs"][0]
    rng = np.random.default_rng(0)
    starts = np.sort(rng.integers(1_795_000_000, 1_795_000_000 + 30 * 86400, 1_000_000))
    costs = 1000.0 + rng.exponential(500, starts.size)
    data["jobs"] = [dict(template, start_s=int(s), cost=float(c)) for s, c in zip(starts, costs)]
    page = report_html(data, SMALL)
    assert "50,000 of 1,000,000 jobs drawn, sampled evenly" in page
    assert len(page) < 2_000_000


def test_no_job_audited_still_gives_a_page():
    data = small_result()
    data["summary"] = {
        "jobs": 0,
        "cost": 0.0,
        "optimum": 0.0,
        "bound": 0.0,
        "floor": 0.0,
        "slurm_tree": 0.0,
        "excess": 0.0,
        "excess_ratio": None,
        "removable_share": None,
        "bound_share": None,
        "fidelity": None,
        "fidelity_jobs": 0,
        "differing_jobs": [],
        "by_size": [],
        "by_partition": [],
        "by_week": [],
        "worst": [],
    }
    data["jobs"] = []
    page = report_html(data, SMALL)
    assert "No job was audited" in page and "data:image/png" not in page


def test_bad_arguments_get_one_line_errors(tmp_path):
    (tmp_path / "taken").write_text("a file")
    with pytest.raises(InvalidInputError, match="is a file; give a folder"):
        write_report(small_result(), SMALL, tmp_path / "taken")
    with pytest.raises(InvalidInputError, match="audit"):
        write_report({"jobs": []}, SMALL, tmp_path / "out")


def test_an_object_with_to_dict_is_accepted(tmp_path):
    class Result:
        def to_dict(self):
            return small_result()

    assert "Placement audit" in write_report(Result(), SMALL, tmp_path).read_text()


# ---------------------------------------------------------------------------- a realistic audit


def realistic_result(seed: int = 0, num_jobs: int = 400):
    """An audit's result over four weeks on a 384-node, three-level tree, built from the
    project's own pieces: recorded nodes are Slurm's topology/tree choice on random busy sets
    (with a few jobs placed elsewhere, as a site's other rules do), the optimum the cheapest run
    of consecutive idle nodes, the bound and the floor exact. Returns (result dict, topology)."""
    from tjap.heuristics.slurm.tree import slurm_tree_nodes
    from tjap.placement.tree.freeform import best_single_job_nodes

    leaves = [
        f"SwitchName=leaf{i:02d} Nodes=cn[{16 * i + 1:03d}-{16 * i + 16:03d}]" for i in range(24)
    ]
    spines = [f"SwitchName=spine{j} Switches=leaf[{6 * j:02d}-{6 * j + 5:02d}]" for j in range(4)]
    tree = Topology.from_slurm("\n".join(leaves + spines + ["SwitchName=core Switches=spine[0-3]"]))
    n, zone, rng = tree.num_nodes, ZoneInfo("Europe/Berlin"), np.random.default_rng(seed)

    def cost(ids):
        return float(tree.count_form.cost(np.asarray(ids, np.int64), "paper"))

    def names(ids):
        return compress_hostlist([tree.node_names[i] for i in sorted(ids)])

    floors, jobs, worst_pool = {}, [], []
    starts = np.sort(rng.integers(1_793_487_600, 1_793_487_600 + 28 * 86400, num_jobs))
    for k, start in enumerate(starts):
        size = int(
            rng.choice(
                [2, 3, 4, 6, 8, 12, 16, 24, 32, 48],
                p=[0.3, 0.12, 0.16, 0.1, 0.12, 0.06, 0.07, 0.03, 0.03, 0.01],
            )
        )
        busy = np.zeros(n, bool)  # busy jobs in runs of 2-24 nodes
        while busy.mean() < rng.uniform(0.5, 0.85):
            first = int(rng.integers(n))
            busy[first : first + int(rng.integers(2, 25))] = True
        idle = np.flatnonzero(~busy)
        if idle.size < size:
            continue
        chosen = slurm_tree_nodes(tree, ~busy, size)
        same = rng.random() > 0.06
        recorded = chosen if same else np.sort(rng.choice(idle, size, replace=False))
        runs = [idle[(i + np.arange(size)) % idle.size] for i in range(idle.size)]
        run_costs = [cost(r) for r in runs]
        best = runs[int(np.argmin(run_costs))]
        bound = best_single_job_nodes(tree, idle, size)
        if size not in floors:
            floors[size] = cost(best_single_job_nodes(tree, np.arange(n), size))
        entry = {
            "job_id": str(4_810_000 + 7 * k),
            "partition": str(rng.choice(["batch", "long", "gpu"], p=[0.6, 0.3, 0.1])),
            "start_s": int(start),
            "start": datetime.fromtimestamp(int(start), zone).isoformat(),
            "size": size,
            "nodes": names(recorded),
            "idle": int(idle.size),
            "cost": cost(recorded),
            "optimum": min(run_costs),
            "optimum_nodes": names(best),
            "bound": cost(bound),
            "bound_nodes": names(bound),
            "floor": floors[size],
            "slurm_tree": cost(chosen),
            "slurm_tree_nodes": names(chosen),
            "slurm_tree_same": bool(same),
            "overlap": False,
        }
        jobs.append(entry)
        worst_pool.append(dict(entry, busy=names(np.flatnonzero(busy))))

    def by(key_of, order=None):
        keys = sorted({key_of(j) for j in jobs}, key=order)
        return [summed(key, [j for j in jobs if key_of(j) == key]) for key in keys]

    def size_class(j):
        upper = 1 << (j["size"] - 1).bit_length()
        return "2" if upper == 2 else f"{upper // 2 + 1}-{upper}"

    def week(j):
        year, number, _ = datetime.fromisoformat(j["start"]).isocalendar()
        return f"{year}-W{number:02d}"

    summary = {k: v for k, v in summed("all", jobs).items() if k != "group"}
    summary.update(
        differing_jobs=[j["job_id"] for j in jobs if not j["slurm_tree_same"]],
        by_size=by(size_class, order=lambda g: int(g.split("-")[0])),
        by_partition=by(lambda j: j["partition"]),
        by_week=by(week),
        worst=sorted(worst_pool, key=lambda j: j["optimum"] - j["cost"])[:5],
    )
    result = {
        "tjap_audit": 1,
        "records": {
            "source": "/var/log/slurm/sacct-2026-11.txt",
            "format": "sacct",
            "timezone": "Europe/Berlin",
            "allocations": 9_214,
        },
        "topology": {
            "source": "/etc/slurm/topology.conf",
            "nodes": n,
            "switches": tree.num_switches,
            "levels": tree.num_levels,
        },
        "options": {
            "from": None,
            "to": None,
            "partition": None,
            "min_nodes": 2,
            "convention": "paper",
            "slurm": "22.05",
        },
        "summary": summary,
        "skipped": {
            "step": 6_930,
            "pending": 412,
            "not_started": 318,
            "below_min_nodes": 1_120,
            "malformed": 3,
        },
        "jobs": jobs,
    }
    return result, tree


def test_a_realistic_audit_reads_well(tmp_path):
    result, tree = realistic_result(num_jobs=120)
    page = write_report(result, tree, tmp_path).read_text()
    assert page.count("<svg") == 5 and len(page) < 600_000


@pytest.mark.docs
def test_the_page_screenshots_in_chromium(tmp_path, monkeypatch):
    if find_chromium() is None:
        pytest.skip("chromium is not installed: run `bash .ci/install-chromium` (root, apt-get)")
    from PIL import Image

    import tjap

    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the page names the paths given
    result = tjap.audit("examples/audit/sacct.txt", "examples/audit/topology.conf", timezone="UTC")
    page = write_report(result, result.topology, tmp_path / "report")
    shot, screen = tmp_path / "audit-report.png", (1280, 1440)
    chromium(
        f"--screenshot={shot}",
        page.as_uri(),
        width=screen[0],
        height=screen[1],
        profile=tmp_path / "profile",
    )
    assert shot.is_file(), "no screenshot of the report"
    assert png_size(shot) == screen
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 50, "the screenshot of the report is blank"
    keep = os.environ.get("TJAP_DOCS_SCREENSHOTS")
    if keep:
        with Image.open(shot) as image:  # a palette PNG: a few tens of KB for the README
            image.convert("RGB").quantize(colors=128).save(
                Path(keep) / "audit-report.png", optimize=True
            )


def test_an_audit_result_gives_the_page_of_its_json(monkeypatch):
    """The page of an AuditResult (read without writing out every job) is the page of its
    whole JSON."""
    import tjap

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    result = tjap.audit("examples/audit/sacct.txt", "examples/audit/topology.conf", timezone="UTC")
    stamp = re.compile(r"Written by tjap [^<]*")
    light = stamp.sub("", report_html(result, result.topology))
    whole = stamp.sub("", report_html(result.to_dict(), result.topology))
    assert light == whole and "r003n" in light


def test_the_audit_is_a_frozen_record_with_the_common_fields():
    import dataclasses

    import tjap
    from tjap.core.result import COMMON_FIELDS

    examples = Path(__file__).resolve().parents[2] / "examples" / "audit"
    result = tjap.audit(examples / "sacct.txt", examples / "topology.conf", timezone="Etc/UTC")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.interrupted = True
    common = result.common()
    assert set(common) == set(COMMON_FIELDS)
    assert common["method"] == "audit" and common["status"] == "FEASIBLE"
    assert (
        common["objective"] == pytest.approx(result.summary()["cost"]) and common["runtime_s"] > 0
    )
    assert result.summary() is result.summary()  # computed once
