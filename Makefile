# The two set-up commands (see README): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# `make fuzz`: minutes of the randomised campaign and its seed (any integer; each
# seed replays the same cases). Failures are saved under tests/data/fuzz-regressions.
FUZZ_MINUTES ?= 10
FUZZ_SEED ?= 0

.PHONY: demo test fuzz system-deps bench lint lint-report coverage clean

system-deps:
	@scripts/install-system-deps.sh

$(VENV)/.installed: pyproject.toml setup.py $(wildcard hipscope/parsers/*.c hipscope/parsers/*.h)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,dev,ranks]'
	@touch $@

demo: system-deps $(VENV)/.installed
	$(VENV)/bin/hipscope --demo

# The style tools (docs in pyproject.toml beside each one's settings): ruff, and its baseline
# only shrinking; mypy through its ratchet; the size limits; the import contracts.
lint: $(VENV)/.installed
	$(PY) -m ruff check --quiet .
	$(PY) -m scripts.lint_report --check
	$(PY) -m scripts.mypy_ratchet --check
	$(PY) -m scripts.check_sizes
	$(VENV)/bin/lint-imports

# `make lint-report`: the ruff findings the baseline hides, per file (to fix after a merge).
lint-report: $(VENV)/.installed
	$(PY) -m scripts.lint_report

# `make coverage`: the tests with a coverage report (terminal and ./htmlcov); no threshold.
# PYTEST_ARGS picks tests, e.g. PYTEST_ARGS=tests/unit/test_model.py.
coverage: $(VENV)/.installed
	HYPOTHESIS_PROFILE=ci QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q --cov \
		--cov-report=term --cov-report=html $(PYTEST_ARGS)

test: system-deps $(VENV)/.installed lint
	HYPOTHESIS_PROFILE=ci QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

fuzz: $(VENV)/.installed
	HYPOTHESIS_PROFILE=fuzz QT_QPA_PLATFORM=offscreen $(PY) -m tests.fuzz.campaign \
		--minutes $(FUZZ_MINUTES) --seed $(FUZZ_SEED)

bench: $(VENV)/.installed
	QT_QPA_PLATFORM=offscreen $(PY) -m benchmarks.load --json
	QT_QPA_PLATFORM=offscreen $(PY) -m benchmarks.timeline --kernels 5000000 --json
	QT_QPA_PLATFORM=offscreen $(PY) -m benchmarks.gui_stall --json
	QT_QPA_PLATFORM=offscreen $(PY) -m benchmarks.gui_memory --json
	QT_QPA_PLATFORM=offscreen $(PY) -m benchmarks.table

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache .coverage htmlcov
