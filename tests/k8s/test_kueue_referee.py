"""tjap's Kueue methods against Kueue's own code: the referee (``go/kueue-referee``, Kueue v0.17.0,
built by ``.ci/build-kueue-referee``; :mod:`tjap.k8s.referee`).

The conversion of a window into the referee's JSON case needs no binary. The comparisons need the
built referee (marked ``referee``): in the default suite they run where it is built in the cache
and skip, naming the build command, where it is not; ``make test-k8s`` builds it and runs them."""

from __future__ import annotations

import json

import pytest

import tjap
from tjap.core.errors import InvalidInputError, MissingDependencyError
from tjap.k8s import referee
from tjap.k8s.referee import (
    BUILD,
    HOSTNAME_LABEL,
    PROFILES,
    RefereeError,
    compare,
    compare_many,
    kueue_case,
    missing,
    random_windows,
    run_referee,
)

#: 7 nodes: block b1 racks r1 (2) and r2 (1); block b2 racks r1 (2) and r3 (2), one busy.
TREE = tjap.Topology.from_node_labels(
    [
        ("n1", {"block": "b1", "rack": "r1"}),
        ("n2", {"block": "b1", "rack": "r1"}),
        ("n3", {"block": "b1", "rack": "r2"}),
        ("n4", {"block": "b2", "rack": "r1"}),
        ("n5", {"block": "b2", "rack": "r1"}),
        ("n6", {"block": "b2", "rack": "r3"}),
        ("n7", {"block": "b2", "rack": "r3"}),
    ],
    ["block", "rack"],
)
IDLE = ["n1", "n2", "n3", "n4", "n5", "n6"]
JOBS = [
    {"nodes": 3, "within": "block"},
    {"nodes": 2, "prefer": "rack"},
    1,
    {"nodes": 2, "segment": 1, "segment_level": "rack"},
]
WINDOW = tjap.Window(TREE, IDLE, JOBS[:3], levels=["rack", "block"])


# -- the JSON case, no binary --------------------------------------------------------------------
def test_a_window_becomes_a_kueue_case():
    case = kueue_case(WINDOW, "kueue-bestfit", name="w")
    assert json.loads(json.dumps(case)) == case
    assert case["name"] == "w" and case["levels"] == ["block", "rack", HOSTNAME_LABEL]
    assert case["feature_gates"] == {"TASProfileMixed": False}
    assert kueue_case(WINDOW, "kueue-leastfree")["feature_gates"] == {"TASProfileMixed": True}
    nodes = {n["name"]: n for n in case["nodes"]}
    assert sorted(nodes) == list(TREE.node_names)
    assert nodes["n4"]["labels"] == {"block": "b2", "rack": "r1", HOSTNAME_LABEL: "n4"}
    assert nodes["n1"]["allocatable"] == {"nvidia.com/gpu": "8", "pods": "110"}
    assert [n for n, node in nodes.items() if "usage" in node] == ["n7"]  # busy: 8 GPUs taken
    assert nodes["n7"]["usage"] == {"nvidia.com/gpu": "8"}
    assert case["pod_sets"] == [
        {"name": "job0", "count": 3, "requests": {"nvidia.com/gpu": "8"}, "required": "block"},
        {"name": "job1", "count": 2, "requests": {"nvidia.com/gpu": "8"}, "preferred": "rack"},
        {"name": "job2", "count": 1, "requests": {"nvidia.com/gpu": "8"}, "unconstrained": True},
    ]


def test_slices_and_unnamed_levels():
    """Slices only are Kueue's slice-only request (no unconstrained flag); a tree without level
    names gets level-L keys, and a Slurm tree's leaf above the lowest level repeats below."""
    window = tjap.Window(
        TREE, IDLE, [{"nodes": 2, "segment": 1}, {"nodes": 2, "segment": 2, "within": 2}]
    )
    pod_sets = kueue_case(window, "kueue-leastfree")["pod_sets"]
    assert pod_sets[0] == {
        "name": "job0",
        "count": 2,
        "requests": {"nvidia.com/gpu": "8"},
        "slice_size": 1,
        "slice_required": "level-1",
    }
    assert pod_sets[1]["required"] == "level-2" and pod_sets[1]["slice_required"] == "level-1"
    slurm = tjap.Topology.from_slurm(
        "SwitchName=s1 Nodes=a[1-2]\nSwitchName=s2 Nodes=a3\nSwitchName=m Switches=s1\n"
        "SwitchName=top Switches=m,s2\n"
    )
    case = kueue_case(tjap.Window(slurm, range(3), [1]), "kueue-bestfit")
    assert case["levels"] == ["level-3", "level-2", "level-1", HOSTNAME_LABEL]
    assert [list(n["labels"].values()) for n in case["nodes"]] == [
        ["top", "m", "s1", "a1"],
        ["top", "m", "s1", "a2"],
        ["top", "s2", "s2", "a3"],
    ]


def test_hostnames_can_be_given_and_what_tjap_refuses_is_refused():
    case = kueue_case(WINDOW, "kueue-bestfit", hostnames={"n1": "z"})
    assert case["nodes"][0]["labels"][HOSTNAME_LABEL] == "z"
    with pytest.raises(InvalidInputError, match="'exclusive'") as info:
        kueue_case(tjap.Window(TREE, IDLE, [{"nodes": 2, "exclusive": True}]), "kueue-bestfit")
    assert "\n" not in str(info.value)
    with pytest.raises(InvalidInputError, match="kueue-bestfit, kueue-leastfree"):
        kueue_case(WINDOW, "dp")


def test_random_windows_are_deterministic_and_varied():
    windows = random_windows(3, 60)
    again = random_windows(3, 60)
    assert [w.to_dict() for w in windows] == [w.to_dict() for w in again]
    assert [w.to_dict() for w in random_windows(4, 60)] != [w.to_dict() for w in windows]
    jobs = [job for w in windows for job in w.jobs]
    assert any(job.within is not None for job in jobs)
    assert any(job.prefer is not None for job in jobs)
    assert any(job.segment and job.within is None and job.prefer is None for job in jobs)
    assert any(not job.segment and job.within is None and job.prefer is None for job in jobs)
    assert any(w.num_idle < w.topology.num_nodes for w in windows)
    for w in windows:
        for profile in PROFILES:
            kueue_case(w, profile)  # every random window converts


def test_without_the_binary_it_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setenv(referee.REFEREE_ENV, str(tmp_path))
    why = missing()
    assert BUILD in why and str(tmp_path) in why and "\n" not in why
    with pytest.raises(MissingDependencyError, match="build-kueue-referee"):
        run_referee([kueue_case(WINDOW, "kueue-bestfit")])
    assert run_referee([]) == []


# -- against Kueue's code (the built referee) ----------------------------------------------------
@pytest.fixture(scope="module")
def built():
    why = missing()
    if why:
        pytest.skip(why)


@pytest.mark.referee
def test_random_windows_agree_with_kueue(built):
    """300 random windows, both profiles: tjap's nodes per job are Kueue's, and the jobs Kueue
    cannot place are those tjap leaves out."""
    windows = random_windows(2026, 300)
    results = compare_many(windows)
    differences = [
        f"window {i} ({c.profile}): {c.difference}"
        for i, per_profile in enumerate(results)
        for c in per_profile
        if not c.same
    ]
    assert not differences, "\n".join(differences[:10])
    kueue = [x for per_profile in results for c in per_profile for x in c.kueue]
    assert any(isinstance(x, str) for x in kueue) and any(isinstance(x, tuple) for x in kueue)
    assert any(a.kueue != b.kueue for a, b in results), "the two profiles differ somewhere"


@pytest.mark.referee
@pytest.mark.parametrize("profile", PROFILES)
def test_hand_made_cases_agree(built, profile):
    """Both blocks hold 3 idle nodes and b1 comes first by its label; the preferred pair takes
    the rack that holds it (b2/r1), the pod what is left. No rack holds 3 idle nodes: the
    required request fails and takes nothing, the next job gets the first idle nodes."""
    c = compare(WINDOW, profile)
    assert c.same, c.difference
    assert c.kueue == [("n1", "n2", "n3"), ("n4", "n5"), ("n6",)]
    failing = tjap.Window(TREE, IDLE, [{"nodes": 3, "within": "rack"}, 2], levels=["rack", "block"])
    c = compare(failing, profile)
    assert c.same, c.difference
    assert "allows to fit only 2 out of 3 pod(s)" in c.kueue[0] and c.kueue[1] == ("n1", "n2")


@pytest.mark.referee
def test_hostnames_that_sort_otherwise_are_a_modelling_limit(built):
    """Kueue orders a rack's nodes by their hostname label, tjap by name (the limit stated in
    heuristics/tree/kueue.py): n1, n2, n3 labelled c, b, a give one pod to n3 and n1."""
    tree = tjap.Topology.from_node_labels([(f"n{i}", {"rack": "r1"}) for i in (1, 2, 3)], ["rack"])
    window = tjap.Window(tree, ["n1", "n2", "n3"], [1])
    assert compare(window, "kueue-bestfit").same
    for profile in PROFILES:
        c = compare(window, profile, hostnames={"n1": "c", "n2": "b", "n3": "a"})
        assert not c.same and c.tjap == [("n1",)] and c.kueue == [("n3",)]


@pytest.mark.referee
def test_a_case_the_referee_refuses_is_one_line(built):
    case = kueue_case(WINDOW, "kueue-bestfit", name="bad")
    case["feature_gates"] = {"NoSuchGate": True}
    with pytest.raises(RefereeError, match="case bad: feature_gates: unknown gate") as info:
        run_referee([case])
    assert "\n" not in str(info.value)
