# The project's commands. `make test` is what CI runs (after .ci/run installs the system packages).

VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python

.PHONY: test unit integration metrics-reference

# The virtual environment, rebuilt when the pinned requirements change.
$(VENV)/.installed: exporters/pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt -e exporters
	touch $@

test: $(VENV)/.installed
	$(PY) -m pytest -q tests

unit: $(VENV)/.installed
	$(PY) -m pytest -q tests/unit

integration: $(VENV)/.installed
	$(PY) -m pytest -q tests/integration

metrics-reference: $(VENV)/.installed
	$(PY) -m innodb_exporter.reference > docs/metrics.md
