# The two commands of the README: `make demo` and `make test`. Both create .venv when needed.
# `make docs` builds the documentation site (mkdocs.yml, docs/) into site/, strict: any warning
# fails, then checks it in headless Chromium (installed with apt when missing; tests marked docs).
PYTHON ?= python3
VENV := .venv
# The one place torch is pinned: the CPU build, installed before anything else so that no
# multi-GB CUDA build is pulled in by a dependency.
TORCH_PIN := torch==2.13.0

.PHONY: demo test test-signals test-slurm test-all bench docs lint clean

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q $(TORCH_PIN)
	$(VENV)/bin/python -m pip install -q -e '.[test,ray,docs,lint]'
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/tjap demo

test: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q

# Real SIGINT / SIGTERM sent to running commands and solvers (slow-marked; about 30 s).
test-signals: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q -m slow tests/face/test_interrupts.py

# Tests against a real local Slurm (installs slurm-wlm + munge with apt when missing, builds Slurm
# 24.11 once into /var/cache/tjap/slurm-24.11 for the topology/block tests; needs root), then the
# topology/tree tests again on Slurm 24.11 (TJAP_SLURM picks the Slurm of every local cluster).
test-slurm: $(VENV)/.installed
	bash .ci/install-slurm || echo "warning: could not install Slurm; the slurm tests will skip"
	bash .ci/build-slurm-newer || echo "warning: could not build Slurm 24.11; its tests will skip"
	$(VENV)/bin/python -m pytest -q -m slurm -rs
	TJAP_SLURM=24.11 $(VENV)/bin/python -m pytest -q -m slurm -rs tests/placement/slurm/test_slurm_tree_live.py tests/slurm/test_slurm_service_live.py

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
