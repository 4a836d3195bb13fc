# The two set-up commands: `make test` and `make demo`. Both create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LINT_DIRS := $(wildcard src tests scripts examples benchmarks peers)

.PHONY: demo test lint typecheck unit docs browser postgres haproxy tmux schema bench clean

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

## bench: acpio against the official SDKs and a bare loop, medians and ratios (not a test); how acpio's
## cost grows (message size, sessions, proxy chain, a slow reader) with PNG charts beside the JSON;
## then MCP tool calls through acpio's MCP-over-ACP binding against a direct mcp client; WebSocket and
## HTTP against stdio, acpio and the TypeScript SDK side by side; the session stores
bench: $(STAMP)
	$(PY) benchmarks/run.py $(BENCH_ARGS)
	$(PY) benchmarks/scale.py --plot $(SCALE_ARGS)
	$(PY) benchmarks/mcp_over_acp.py
	$(PY) benchmarks/remote.py
	$(PY) benchmarks/store.py

clean:
	rm -rf $(VENV) build dist site .pytest_cache .mypy_cache .ruff_cache
