"""The one registry: every system's methods, option checks, register() rules, availability."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tjap
from tjap.core.errors import InvalidInputError, MissingDependencyError, UnknownMethodError
from tjap.registry import SYSTEMS, Method, entries, get, make, methods, register


def small_window():
    return tjap.Window(
        tjap.FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2),
        idle_nodes=range(12),
        job_sizes=[3, 2],
    )


def test_every_system_has_methods_and_every_target_loads():
    for system in SYSTEMS:
        assert methods(system), system
        for method in entries(system):
            assert method.system == system and method.description and method.builtin
            if method.is_available():
                assert callable(method.load()), (system, method.name)


def test_misspelled_options_are_refused_with_the_valid_ones():
    with pytest.raises(InvalidInputError) as info:
        tjap.solve(small_window(), "sa", iteratons=5, seeed=3)
    message = str(info.value)
    assert "'iteratons'" in message and "'seeed'" in message and "iterations" in message
    assert "\n" not in message


@pytest.mark.parametrize("method", ["dp", "seq", "scip", "cpsat", "freeform", "sa", "lns"])
def test_every_tree_method_refuses_an_unknown_option(method):
    with pytest.raises(InvalidInputError, match="unknown option 'bogus'"):
        tjap.solve(small_window(), method, bogus=1)


def test_a_valid_option_passes_through():
    result = tjap.solve(small_window(), "sa", iterations=5, seed=3)
    assert result.is_feasible() and result.seed == 3


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(UnknownMethodError, match="choose one of auto, dp"):
        tjap.solve(small_window(), "simplex")
    with pytest.raises(UnknownMethodError, match="unknown network policy 'best'"):
        make("network", "best")
    with pytest.raises(InvalidInputError, match="unknown system"):
        methods("kubernetes")


def test_policy_options_are_checked_by_the_factory_signature():
    assert make("network", "tetris", penalty=0.5).penalty == 0.5
    with pytest.raises(InvalidInputError, match="unknown option 'penalti'.*valid options: penalty"):
        make("network", "tetris", penalti=0.5)


def test_register_refuses_to_replace_a_builtin_and_checks_its_argument():
    with pytest.raises(InvalidInputError, match="built in; pass replace=True"):
        register("dp", lambda window, **kw: None)
    with pytest.raises(InvalidInputError, match="callable or a 'module:attr' string"):
        register("mine", 42)
    with pytest.raises(InvalidInputError, match="unknown system"):
        register("mine", print, system="slurm")
    assert get("tree", "dp").target == "tjap.placement.tree.csp:solve_dp"  # untouched


def test_a_registered_method_is_solvable_and_replace_true_works():
    def first_fit(window, *, convention="paper", time_limit_s=None, seed=0):
        return tjap.solve(window, "seq", convention=convention, seed=seed)

    try:
        register("first-fit-test", first_fit, "a test method")
        assert "first-fit-test" in tjap.methods()
        assert tjap.solve(small_window(), "first-fit-test").is_feasible()
        register("first-fit-test", first_fit, "replaced", replace=False)  # not a built-in
        assert get("tree", "first-fit-test").description == "replaced"
    finally:
        from tjap import registry

        registry._REGISTRY.pop(("tree", "first-fit-test"), None)


def test_missing_dependency_names_the_extra():
    method = Method(
        "ghost",
        "tree",
        "nowhere:fn",
        "needs a package that is not there",
        requires=("a_package_that_does_not_exist",),
        extra="tjap[ghost]",
    )
    assert not method.is_available() and method.missing() == ["a_package_that_does_not_exist"]
    with pytest.raises(MissingDependencyError, match=r"pip install tjap\[ghost\]"):
        method.load()


def test_provisioner_weight_suffix_only_where_the_factory_takes_names():
    assert get("provision", "moe@4").name == "moe"
    with pytest.raises(UnknownMethodError):
        get("provision", "reactive@4")


def test_import_tjap_and_listing_methods_stay_light():
    code = (
        "import sys, tjap, tjap.registry; tjap.registry.entries(); "
        "heavy = [m for m in ('torch', 'pyscipopt', 'ortools', 'numba', 'tjap.placement.tree.csp') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert tjap.__version__ and tjap.FatTree is not None and "solve" in dir(tjap)


def test_other_systems_entry_points_refuse_unknown_options():
    import numpy as np

    from tjap.placement.batch.jobs import Jobs
    from tjap.placement.batch.simulator import simulate as simulate_batch
    from tjap.placement.interference import Workload, make_cluster
    from tjap.placement.interference import simulate as simulate_interference

    jobs = Jobs.build(
        submit_s=np.arange(4) * 10,
        nodes=np.ones(4, np.int64),
        limit_s=np.full(4, 60),
        runtime_s=np.full(4, 30),
    )
    assert simulate_batch(jobs, 2, backfill="easy").summary()["jobs"] == 4
    with pytest.raises(
        InvalidInputError, match="unknown option 'backfil'.*valid options: .*backfill"
    ):
        simulate_batch(jobs, 2, backfil="easy")
    cluster = make_cluster("fattree", 4)
    workload = Workload.generate(cluster.num_partitions, 1, "uniform", 0)
    with pytest.raises(InvalidInputError, match="unknown option 'seeed' for simulate"):
        simulate_interference(cluster, workload, make("interference", "tetris"), seeed=1)


def test_every_floor_asks_for_a_method_through_the_core_registry():
    from tjap.core import registry as core

    assert core.get is get  # one mechanism: tjap.registry re-exports the core's
    for name in methods("tree"):
        assert core.solver(name) is get("tree", name).load(), name
    fn = lambda window, **options: None  # noqa: E731
    assert core.solver(fn) is fn
    with pytest.raises(UnknownMethodError, match="unknown method 'nope'; choose one of auto"):
        core.solver("nope")


@pytest.mark.parametrize(
    "returns, message",
    [
        (lambda window: None, "returned NoneType, not a tjap.Result"),
        (lambda window: [[0, 1, 2], [3, 4]], "returned list, not a tjap.Result"),
        (
            lambda window: tjap.solve(tjap.Window(window.topology, range(16), [1]), "seq"),
            "a Result of another window",
        ),
        (
            lambda window: tjap.Result.from_assignment(
                window,
                [[0, 1, 2], [2, 3]],
                status="FEASIBLE",
                method="bad",
                convention="paper",
                runtime_s=0.0,
            ),
            "infeasible assignment",
        ),
    ],
)
def test_what_a_registered_method_returns_is_checked(returns, message):
    """``tjap.solve`` used to hand back whatever a registered function returned."""

    def method(window, *, convention="paper", time_limit_s=None, seed=0):
        return returns(window)

    try:
        register("returns-test", method)
        with pytest.raises(InvalidInputError, match=message) as info:
            tjap.solve(small_window(), "returns-test")
        assert "\n" not in str(info.value) and "'returns-test'" in str(info.value)
    finally:
        from tjap import registry

        registry._REGISTRY.pop(("tree", "returns-test"), None)


def test_register_checks_the_model_flag():
    with pytest.raises(InvalidInputError, match="model"):
        register("model-test", print, model="contiguous")
    assert {get("tree", m).model for m in methods("tree")} <= {"scas", "dcas", "free"}
