"""Shared fixtures: tiny fat-trees and random tiny windows for the exact-solver oracles."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from hypothesis import settings

from tjap import FatTree, Window
from tjap.core.cache import CACHE_ROOT_ENV
from tjap.placement.k8s.harness import K8S_ENV
from tjap.placement.slurm.harness import NEWER_SLURM_ENV

# Property tests draw new examples on every run (and keep failures in .hypothesis/), so a
# developer's `make test` keeps exploring; CI (.ci/run sets HYPOTHESIS_PROFILE=ci) runs the same
# derandomized examples every time, so a submission is judged on a fixed suite. A failure found
# while exploring becomes an explicit @example.
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


#: Markers of the tests that may use what the project builds and caches outside a clone (a Slurm
#: 24.11, a Kubernetes control plane): their targets (make test-slurm, make docs) build it first.
CACHE_MARKERS = ("slurm", "docs", "k8s", "referee")


#: The default suite's costliest tests (3-21 s each once the Numba cache is warm, measured with
#: ``pytest --durations`` on 2 cores, 2026-12-02), marked ``slow`` here instead of one by one:
#: ``make test-slow`` runs them (and ``make test-all``). Each is a prefix of pytest's test id.
MOVED_TO_SLOW = (
    "tests/docs/test_readme_examples.py::test_cheap_example_runs[tjap simulate --trace",
    "tests/docs/test_readme_examples.py::test_cheap_example_runs[tjap audit examples/audit/sacct.txt",
    "tests/placement/network/test_network.py::test_exact_matches_brute_force",
    "tests/placement/network/test_network.py::test_exact_tie_cost_breaks_ties_only",
    "tests/placement/network/test_network.py::test_channels_and_resources_are_conserved",
    "tests/placement/network/test_network.py::test_every_policy_is_deterministic_by_seed[exact]",
    "tests/placement/network/test_network.py::test_episode_steps_one_decision_at_a_time[exact]",
    "tests/face/test_cli.py::test_bench_exact",
    "tests/face/test_bench_cli.py::test_bench_table4",
    "tests/face/test_bench_cli.py::test_sa_speed_benchmark",
    "tests/benchmarks/test_slurm_topology.py::test_block_floors_match_brute_force",
    "tests/core/test_executor.py::test_serial_equals_ray",
    "tests/core/test_executor.py::test_a_pool_terminated_while_a_worker_starts_never_hangs",
    "tests/placement/tree/test_constraints.py::test_exact_methods_equal_brute_force[labels]",
    "tests/learned/batch/test_provision_learned.py::"
    "test_shipped_provisioners_never_act_before_the_predecessor_is_submitted[moe_pg]",
    "tests/learned/batch/test_provision_learned.py::"
    "test_shipped_provisioners_never_act_before_the_predecessor_is_submitted[moe_dqn]",
    "tests/learned/batch/test_provision_learned.py::test_recorded_episodes_equal_the_plain_recording",
    "tests/heuristics/tree/test_nsa_numba.py::test_lookahead_trajectory_follows_the_twin_with_a_torch_oracle[5-",
    "tests/learned/network/test_network_imitation.py::test_completion_with_fixed_servers_matches_brute_force",
    "tests/learned/network/test_network_imitation.py::test_labeller_cache_agrees_with_fresh_solves",
    "tests/placement/tree/test_table3_accounting.py::test_epoch_figures_are_the_sum_over_periods",
    "tests/learned/batch/test_provision_calibrate.py::test_choose_finds_the_grids_best_rule_by_brute_force",
    "tests/placement/tree/test_stream.py::test_no_cap[paper-scip]",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(MOVED_TO_SLOW):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def empty_cache_root(tmp_path_factory) -> Path:
    """An empty folder standing in for the cache root of a machine where nothing has run."""
    return tmp_path_factory.mktemp("empty-cache-root")


@pytest.fixture(autouse=True)
def nothing_cached(request, monkeypatch, empty_cache_root):
    """The guard of a newcomer's first ``make test``: every test not marked ``slurm`` or ``docs``
    runs with the cache root (:func:`tjap.core.cache.cache_root`) pointed at an empty folder and no
    ``$TJAP_SLURM_NEWER`` or ``$TJAP_K8S``, so a default-suite test that passes only where an earlier run built
    something into ``/var/cache/tjap`` fails here, on every machine, instead of on a newcomer's.
    It must skip with a one-line reason when what it needs is missing, or carry its marker."""
    if any(request.node.get_closest_marker(m) for m in CACHE_MARKERS):
        return
    assert not any(empty_cache_root.iterdir()), (
        f"a test wrote into the empty cache root {empty_cache_root}: "
        f"{sorted(p.name for p in empty_cache_root.iterdir())}"
    )
    monkeypatch.setenv(CACHE_ROOT_ENV, str(empty_cache_root))
    monkeypatch.delenv(NEWER_SLURM_ENV, raising=False)
    monkeypatch.delenv(K8S_ENV, raising=False)


def tiny_tree() -> FatTree:
    """16 nodes, 2 per edge switch, 2 switches per pod: 8 switches, 4 pods of 4 nodes."""
    return FatTree(num_nodes=16, nodes_per_switch=2, switches_per_pod=2)


#: Tiny layouts the random windows are drawn on (the last one has a pruned last pod and switch).
TINY_TREES = (
    (16, 2, 2),
    (16, 3, 2),
    (18, 2, 3),
)


def make_window(
    seed: int,
    *,
    min_idle: int = 6,
    max_idle: int = 14,
    max_jobs: int = 3,
    topology: FatTree | None = None,
    max_size: int | None = None,
) -> Window:
    """A random tiny window drawn from ``seed``: ``min_idle..max_idle`` idle nodes, 1..max_jobs jobs.

    Without ``topology`` the layout itself is drawn from :data:`TINY_TREES`. Job sizes are drawn
    so that they always fit the idle count.
    """
    rng = random.Random(seed)
    if topology is None:
        num_nodes, per_switch, per_pod = TINY_TREES[rng.randrange(len(TINY_TREES))]
        topology = FatTree(
            num_nodes=num_nodes, nodes_per_switch=per_switch, switches_per_pod=per_pod
        )
    max_idle = min(max_idle, topology.num_nodes)
    m = rng.randint(min_idle, max_idle)
    idle = rng.sample(range(topology.num_nodes), m)
    num_jobs = rng.randint(1, min(max_jobs, m))
    sizes = []
    left = m
    for j in range(num_jobs):
        # leave at least one node for each job still to come
        hi = left - (num_jobs - j - 1)
        if max_size is not None:
            hi = min(hi, max_size)
        hi = min(hi, max(1, m // 2 + 1))
        n = rng.randint(1, max(1, hi))
        sizes.append(n)
        left -= n
    return Window(topology, idle, sizes, meta={"seed": seed})


@pytest.fixture
def tree() -> FatTree:
    return tiny_tree()


@pytest.fixture
def window_factory():
    """``window_factory(seed, **kwargs)`` -> a random tiny Window (see :func:`make_window`)."""
    return make_window


@pytest.fixture
def wrap_window(tree) -> Window:
    """A window whose only optimum wraps: the 4-node job takes pod 1 (positions 1..4) and the
    2-node job gets positions 5 and 0, i.e. D(5, 2) = [15, 0]."""
    return Window(tree, [0, 4, 5, 6, 7, 15], [4, 2])


@pytest.fixture
def checked_commits(monkeypatch):
    """Check the interference simulator's resources after every commit (never oversubscribed);
    the fixture's value lists the committed jobs."""
    from tjap.placement.interference.simulator import Simulator

    jobs = []
    original = Simulator.commit

    def commit_and_check(self, job, groups):
        original(self, job, groups)
        self.check()
        jobs.append(job)

    monkeypatch.setattr(Simulator, "commit", commit_and_check)
    return jobs
