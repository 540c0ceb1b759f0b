# The two commands of the README: `make demo` and `make test`. Both create .venv when needed.
# `make docs` builds the documentation site (mkdocs.yml, docs/) into site/, strict: any warning
# fails, then checks it in headless Chromium (installed with apt when missing; tests marked docs).
PYTHON ?= python3
VENV := .venv
# The one place torch is pinned. It is installed before anything else: a CPU wheel in pip's
# find-links folder (PIP_FIND_LINKS) is taken when one is there; otherwise pip takes PyPI's build,
# which brings its CUDA libraries (527 MB for torch itself, about 5.6 GB installed).
TORCH_PIN := torch==2.13.0

.PHONY: demo test test-slow test-examples test-signals test-slurm test-k8s test-all bench docs lint clean

# Tests run on every core (pytest-xdist; a file's tests stay in one worker, so its module
# fixtures are built once): -n auto is one worker per core.
PARALLEL := -n auto --dist loadfile

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q $(TORCH_PIN)
	$(VENV)/bin/python -m pip install -q -e '.[test,ray,docs,lint,k8s]'
	$(VENV)/bin/python -m tjap.warmup   # compiles the Numba kernels once, on every core (about 3 min on 2 cores)
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/tjap demo

test: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q $(PARALLEL)

# The tests marked slow (the widest oracles, long examples and benchmarks; about 2.5 min on 2
# cores), but the signal tests, which test-signals runs alone, and the README's long examples,
# which test-examples runs (`make test-all` runs them all).
test-slow: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q $(PARALLEL) -m 'slow and not slurm and not docs and not k8s' --ignore tests/face/test_interrupts.py -k 'not test_slow_example_runs'

# The README's long examples: trainings and full benchmark runs (more than 40 min on 2 cores;
# not in CI, which never trains).
test-examples: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q $(PARALLEL) -m slow tests/docs/test_readme_examples.py -k test_slow_example_runs

# Real SIGINT / SIGTERM sent to running commands and solvers (slow-marked; about 30 s).
test-signals: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q -m slow tests/face/test_interrupts.py

# Tests against a real local Slurm (installs slurm-wlm + munge with apt when missing, builds Slurm
# 24.11 once into $TJAP_CACHE_ROOT/slurm-24.11 (default /var/cache/tjap) for the topology/block tests; needs root), then the
# topology/tree tests again on Slurm 24.11 (TJAP_SLURM picks the Slurm of every local cluster).
test-slurm: $(VENV)/.installed
	bash .ci/install-slurm || echo "warning: could not install Slurm; the slurm tests will skip"
	bash .ci/build-slurm-newer || echo "warning: could not build Slurm 24.11; its tests will skip"
	$(VENV)/bin/python -m pytest -q -m slurm -rs
	TJAP_SLURM=24.11 $(VENV)/bin/python -m pytest -q -m slurm -rs tests/placement/slurm/test_slurm_tree_live.py tests/slurm/test_slurm_service_live.py

# Tests against a real local Kubernetes: builds etcd, kube-apiserver, kube-scheduler and
# kube-controller-manager once from Go modules into $TJAP_CACHE_ROOT/k8s-v1.35.4 (.ci/build-k8s:
# about 11 min cold on 2 cores, nothing when built), then starts and stops its own control plane;
# and Kueue's own TAS algorithm, the referee of tjap's kueue-* methods, into
# $TJAP_CACHE_ROOT/kueue-referee-v0.17.0 (.ci/build-kueue-referee: about 3 min cold), and Kueue's
# own manager (its controllers, scheduler, TAS and webhooks, the batch/v1 Job integration) into
# $TJAP_CACHE_ROOT/kueue-manager-v0.17.0 (.ci/build-kueue-manager: about 4 min cold).
test-k8s: $(VENV)/.installed
	bash .ci/build-k8s
	bash .ci/build-kueue-referee
	bash .ci/build-kueue-manager
	$(VENV)/bin/python -m pytest -q -m 'k8s or referee' -rs

test-all: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q -m ''

bench: $(VENV)/.installed
	$(VENV)/bin/tjap bench exact --num-windows 200 --seed 0 --layout paper
	$(VENV)/bin/tjap bench exact --num-windows 200 --seed 0 --layout published

docs: $(VENV)/.installed
	bash .ci/install-chromium || echo "warning: could not install chromium; the browser checks will skip"
	$(VENV)/bin/mkdocs build --strict --site-dir site
	TJAP_DOCS_SITE=site $(VENV)/bin/python -m pytest -q -m docs -rs tests/docs/test_docs_site.py tests/slurm/test_audit_report.py

# Lint, format and types: ruff's rules and format, mypy on tjap/ (both configured in pyproject.toml).
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) build *.egg-info benchmarks/out site
	find tjap placement heuristics learned -name "*.nb[ic]" -delete   # numba caches
