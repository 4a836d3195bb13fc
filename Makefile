# The two set-up commands: `make test` and `make demo`. Both create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LINT_DIRS := $(wildcard src tests scripts examples benchmarks peers)

.PHONY: demo test lint typecheck unit docs browser postgres haproxy tmux schema bench bench-optimised clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## demo: the demo conversation: `acpio prompt` driving the `acpio testy` agent, then `acpio agent --offline`
demo: $(STAMP)
	$(PY) scripts/demo.py

## test: lints, strict type check, the whole test suite and the documentation site
test: lint typecheck unit docs

# ruff; then the architecture: import-linter's contracts (pyproject.toml: no import cycle, the engine's
# layers) and no private name used across modules.
lint: $(STAMP)
	$(PY) -m ruff check $(LINT_DIRS)
	$(PY) -m ruff format --check $(LINT_DIRS)
	$(VENV)/bin/lint-imports --no-cache
	$(PY) scripts/check_private_access.py

# mypy on the package; then user code (examples/, README blocks) under pyright and mypy with and without
# the pydantic plugin, as users' editors and CI check it.
typecheck: $(STAMP)
	$(PY) -m mypy
	$(PY) scripts/typecheck_user_code.py

# The suite runs on every core (pytest-xdist); PYTEST_WORKERS=0 runs it in one process, for a debugger.
PYTEST_WORKERS ?= auto
unit: $(STAMP) browser postgres haproxy tmux
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

## docs: the documentation site (docs/ and the API reference from the docstrings) into site/, about 20 s
# --strict: a broken link or cross-reference fails the build (scripts/griffe_sphinx_roles.py says which
# docstring references may stay unlinked). Not --quiet: it drops the warnings before --strict counts them.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# Debian's chromium and chromedriver for the trace viewer's browser test (skipped without them).
browser:
	sh scripts/install_browser.sh

# Debian's PostgreSQL server for the PostgreSQL session store's tests (skipped without it).
postgres:
	sh scripts/install_postgres.sh

# Debian's HAProxy for the tests of acpio serve behind a load balancer (skipped without it).
haproxy:
	sh scripts/install_haproxy.sh

# Debian's tmux for the tests of acpio prompt in a real terminal (skipped without it).
tmux:
	sh scripts/install_tmux.sh

## schema: regenerate src/acpio/schema (v1) and src/acpio/schema/v2 (v2) from ../shared/spec
schema: $(STAMP)
	$(PY) scripts/generate_schema.py

## bench: acpio against the official SDKs and a bare loop, medians, ratios and issue 34's targets (not a
## test), then the same on an optimised CPython when there is one (bench-optimised); how acpio's
## cost grows (message size, sessions, proxy chain, a slow reader) with PNG charts beside the JSON;
## then MCP tool calls through acpio's MCP-over-ACP binding against a direct mcp client; WebSocket and
## HTTP against stdio, acpio and the TypeScript SDK side by side; the session stores
bench: $(STAMP)
	$(PY) benchmarks/run.py $(BENCH_ARGS)
	$(MAKE) --no-print-directory bench-optimised
	$(PY) benchmarks/scale.py --plot $(SCALE_ARGS)
	$(PY) benchmarks/mcp_over_acp.py
	$(PY) benchmarks/remote.py
	$(PY) benchmarks/store.py

# An optimised CPython (PGO+LTO; Debian's python3 is one, pyenv's default build is not) runs the same code
# about 30% faster: benchmarks/run.py again on it, from a virtualenv of its own with acpio installed.
# Skipped, saying why, when OPT_PYTHON is missing or not optimised (benchmarks/interpreter.py decides).
OPT_PYTHON ?= /usr/bin/python3
OPT_VENV := .venv-opt
OPT_STAMP := $(OPT_VENV)/.installed

## bench-optimised: benchmarks/run.py on an optimised CPython (OPT_PYTHON, default Debian's /usr/bin/python3)
bench-optimised:
	@if $(OPT_PYTHON) benchmarks/interpreter.py; then \
	    $(MAKE) --no-print-directory $(OPT_STAMP) && $(OPT_VENV)/bin/python benchmarks/run.py $(BENCH_ARGS); \
	else \
	    echo "make bench-optimised: skipped: $(OPT_PYTHON) is not an optimised CPython (set OPT_PYTHON=...)"; \
	fi

$(OPT_STAMP): pyproject.toml
	sh scripts/install_python_venv.sh $(OPT_PYTHON)
	test -x $(OPT_VENV)/bin/python || $(OPT_PYTHON) -m venv $(OPT_VENV)
	$(OPT_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(OPT_VENV)/bin/python -m pip install --quiet -e '.[fast]'
	touch $(OPT_STAMP)

clean:
	rm -rf $(VENV) $(OPT_VENV) build dist site .pytest_cache .mypy_cache .ruff_cache
