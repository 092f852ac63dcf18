# The two set-up commands (see README): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test system-deps bench lint clean

system-deps:
	@scripts/install-system-deps.sh

$(VENV)/.installed: pyproject.toml setup.py hipscope/parsers/_csvscan.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

demo: system-deps $(VENV)/.installed
	$(VENV)/bin/hipscope --demo

lint: $(VENV)/.installed
	$(VENV)/bin/lint-imports

test: system-deps $(VENV)/.installed lint
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

bench: $(VENV)/.installed
	QT_QPA_PLATFORM=offscreen $(PY) -m benchmarks.load --json
	QT_QPA_PLATFORM=offscreen $(PY) -m benchmarks.timeline --kernels 5000000 --json
	QT_QPA_PLATFORM=offscreen $(PY) -m benchmarks.gui_stall --json

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
