# nexttick — targets a newcomer can guess. Everything runs inside .venv (created on demand).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1

.PHONY: help venv browser run test coverage test-unit test-integration test-infra test-e2e lint fmt synth deploy destroy diff bench bench-quick fuzz clean bootstrap

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

# Bytecode is written when a module is first imported (Python's default), so only what runs is
# compiled: pip's own compile step took about a minute of CPU for the 316 MB of Python installed (the
# CDK library alone is 183 MB, of which the stack imports 43 modules). An environment that sets
# PYTHONDONTWRITEBYTECODE would have every process compile every module it imports again instead.
unexport PYTHONDONTWRITEBYTECODE
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check --no-compile -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

venv: $(STAMP) ## create/update .venv with every dependency

# The console's browser tests drive Debian's Chromium through Playwright (never a browser Playwright
# downloads). Installed here where the machine allows it (root with apt-get); elsewhere, or when the
# install fails, one line says so and those tests skip.
CHROMIUM := /usr/bin/chromium
browser: ## install Chromium for the browser tests (root + apt-get), else say they will be skipped
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Chromium for the browser tests: apt-get install chromium"; \
	  ( apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends chromium >/dev/null ) \
	  || echo "apt-get could not install chromium: the browser tests will be skipped"; \
	else \
	  echo "no Chromium at $(CHROMIUM) (installing it needs root and apt-get): the browser tests will be skipped"; \
	fi

run: $(STAMP) ## start the local stack (moto + API + emulated EventBridge + worker)
	$(VENV)/bin/nexttick local

# Four workers on two cores: the end-to-end tests, which xdist hands out first (their groups are
# the largest units), spend most of their time waiting for tasks to fall due; with three workers
# all three waited at once for the suite's first eight minutes and one core stood idle (17 min in
# all, 14.5 with four). The local stack's lateness figures are the bench's (`make bench`, on a quiet
# machine); the tests here hold it to the second while the rest of the suite loads the machine.
test: $(STAMP) browser ## the whole offline suite: unit, integration, infrastructure, e2e
	$(VENV)/bin/pytest -n 4 --dist loadgroup --durations=25 tests

# The same suite measured by coverage.py, then the share of the production code each suite runs
# (tests/support/coverage_by_suite.py). Kept out of make test: tracing slows the suite by up to 80%.
coverage: $(STAMP) browser ## make test under coverage, then line coverage per suite (unit, integration, ...)
	rm -f .coverage .coverage.*
	$(VENV)/bin/pytest -n 4 --dist loadgroup --cov --cov-report= tests; status=$$?; \
	$(PY) -m tests.support.coverage_by_suite; exit $$status

test-unit: $(STAMP)
	$(VENV)/bin/pytest tests/unit

test-integration: $(STAMP)
	$(VENV)/bin/pytest tests/integration

test-infra: $(STAMP)
	$(VENV)/bin/pytest tests/infrastructure

test-e2e: $(STAMP)
	$(VENV)/bin/pytest tests/e2e

lint: $(STAMP) ## ruff (with its complexity gate, pyproject.toml) + mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

fmt: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(STAMP) ## benchmarks side by side with the baselines: bench/REPORT.md, results.json, plots/
	$(PY) -m bench.run

# The same code at small sizes, into bench/quick/ (the full run's files stay); make test runs it too.
bench-quick: $(STAMP) ## benchmarks at small sizes (a smoke run), written to bench/quick/
	$(PY) -m bench.run --quick

# Editors, workers and the keeper against moto under random crashes and faults, then every invariant
# at rest; figures to stdout and to the Soak section of docs/reliability.md. A 60 s run is in make test.
SOAK_SECONDS ?= 600
.PHONY: soak
soak: $(STAMP) ## soak test for SOAK_SECONDS (default 600) under crashes and faults; figures to docs/reliability.md
	$(PY) -m tests.soak --seconds $(SOAK_SECONDS) --write-docs

# The model checker with its long scenarios (tests/support/rule_models.py, NEXTTICK_MODEL_SOAK=1).
.PHONY: model-soak
model-soak: $(STAMP) ## the model checker with the scenarios too large for make test (about 5 minutes on two cores)
	NEXTTICK_MODEL_SOAK=1 $(VENV)/bin/pytest -n 2 tests/unit/test_rule_model_*.py tests/unit/test_rule_sync_exhaustive.py

clean:
	rm -rf $(VENV) cdk.out .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.*

.PHONY: openapi
openapi: $(STAMP) ## regenerate docs/openapi.json from the API code (a test fails when it drifts)
	$(PY) -m lambdas.api.openapi_file docs/openapi.json

# schemathesis against the API over HTTP (local API Gateway + moto): >= 1,000 generated requests.
FUZZ_EXAMPLES ?= 120
FUZZ_MIN_REQUESTS ?= 1000
FUZZ_SEED ?= random
fuzz: $(STAMP) ## property-based API fuzzing, every schemathesis check, no 5xx allowed
	NEXTTICK_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) NEXTTICK_FUZZ_MIN_REQUESTS=$(FUZZ_MIN_REQUESTS) \
	NEXTTICK_FUZZ_SEED=$(FUZZ_SEED) $(VENV)/bin/pytest -s tests/e2e/test_api_schemathesis.py

# --- CDK (infra/) -------------------------------------------------------------------------
# Synth runs the app with python (no CDK CLI). deploy/diff/destroy use the CDK CLI pinned in
# package.json (aws-cdk 2.x >= 2.1147), installed locally with npm. Pass extra CLI flags with
# CDK_ARGS, e.g. `make deploy CDK_ARGS="-c nexttick:precision=minute"`.
CDK := node_modules/.bin/cdk
CDK_ARGS ?=
NODE_STAMP := node_modules/.installed

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

synth: $(STAMP) ## synthesize the stack into cdk.out/ (python only; cdk-nag runs, findings fail it)
	CDK_OUTDIR=cdk.out $(PY) app.py

bootstrap: $(STAMP) $(NODE_STAMP) ## one-time per account/region: cdk bootstrap
	$(CDK) bootstrap $(CDK_ARGS)

deploy: $(STAMP) $(NODE_STAMP) ## cdk deploy to the current AWS account/region (outputs in cdk.out/outputs.json)
	$(CDK) deploy --require-approval broadening --outputs-file cdk.out/outputs.json $(CDK_ARGS)

diff: $(STAMP) $(NODE_STAMP) ## cdk diff against the deployed stack
	$(CDK) diff $(CDK_ARGS)

destroy: $(STAMP) $(NODE_STAMP) ## cdk destroy (the task table is retained; see README "Deploy")
	$(CDK) destroy $(CDK_ARGS)
