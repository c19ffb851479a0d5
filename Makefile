# Operator interface of the model gateway (see README.md).
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
HOST ?= 127.0.0.1
# Seconds in-flight requests (streams) may take to finish after SIGTERM (docs/performance.md).
GRACEFUL_TIMEOUT ?= 30

.PHONY: run test lint fuzz serve worker migrate bootstrap clean bench-report

$(VENV)/bin/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.runtime-installed: requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install -q -r requirements.txt
	@touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PY) -m pip install -q -r requirements-dev.txt
	@touch $@ $(VENV)/.runtime-installed

# A local secret key and BYOK encryption key for development, written once; production sets both itself.
FERNET_KEY_CMD := $(PYTHON) -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())'

.env:
	@echo "DJANGO_SECRET_KEY=$$($(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(48))')" > .env
	@echo "GATEWAY_BYOK_ENCRYPTION_KEYS=$$($(FERNET_KEY_CMD))" >> .env
	@echo "Wrote .env with a generated DJANGO_SECRET_KEY and GATEWAY_BYOK_ENCRYPTION_KEYS"

# An .env written before BYOK existed gets an encryption key added (once; the environment still wins).
.PHONY: env-encryption-key
env-encryption-key: .env
	@grep -qs '^GATEWAY_BYOK_ENCRYPTION_KEYS=' .env || [ -n "$$GATEWAY_BYOK_ENCRYPTION_KEYS" ] || \
		{ echo "GATEWAY_BYOK_ENCRYPTION_KEYS=$$($(FERNET_KEY_CMD))" >> .env; echo "Added GATEWAY_BYOK_ENCRYPTION_KEYS to .env"; }

run: $(VENV)/.runtime-installed .env env-encryption-key
	$(PY) manage.py ensure_database
	$(PY) manage.py migrate --noinput
	$(PY) manage.py bootstrap
	$(PY) manage.py aggregate_rankings --no-progress
	$(PY) manage.py collectstatic --noinput -v0
	@echo "Admin: http://$(HOST):$(PORT)/admin/  (sign in as the admin user named above)"
	@echo "API docs: http://$(HOST):$(PORT)/api/v1/docs  ReDoc: http://$(HOST):$(PORT)/api/v1/redoc  Health: http://$(HOST):$(PORT)/health/ready"
	@# The observability delivery worker runs beside the server and is stopped (SIGTERM) when the server exits.
	$(PY) manage.py run_observability_worker & worker=$$!; \
	trap 'kill -TERM $$worker 2>/dev/null; wait $$worker' EXIT INT TERM; \
	$(PY) -m gateway_project.serve gateway_project.asgi:application --host $(HOST) --port $(PORT) --no-server-header --lifespan on --timeout-graceful-shutdown $(GRACEFUL_TIMEOUT)

worker: $(VENV)/.runtime-installed .env env-encryption-key
	$(PY) manage.py run_observability_worker

test: $(VENV)/.dev-installed .env
	$(PY) -m pytest $(PYTEST_ARGS)

# Schemathesis against the gateway's own OpenAPI schema, served by a throwaway gateway (fresh SQLite database).
# FUZZ_MAX_EXAMPLES (default 50) and FUZZ_PHASES (default examples,coverage,fuzzing) tune the run; see docs/security.md.
fuzz: $(VENV)/.dev-installed
	$(PY) -m scripts.fuzz $(FUZZ_ARGS)

# The README benchmark table and bench/benchmark.png (gateway vs LiteLLM vs bare upstream, 1..64 connections):
# SQLite, plus PostgreSQL + Redis when BENCH_PG_DATABASE_URL (a scratch database) and BENCH_PG_REDIS_URL are
# set. Needs wrk; installs LiteLLM into /tmp/bench-litellm-venv on first use. BENCH_ARGS: see bench/report.py.
bench-report: $(VENV)/.dev-installed
	@command -v wrk >/dev/null || { echo "wrk not found (apt-get install wrk)"; exit 1; }
	$(PY) bench/report.py $(BENCH_ARGS)

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache staticfiles
