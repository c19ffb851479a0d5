# Operator interface of the model gateway (see README.md).
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
HOST ?= 127.0.0.1

.PHONY: run test lint serve worker migrate bootstrap clean

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

# A local secret key for development, written once; production sets DJANGO_SECRET_KEY itself.
.env:
	@echo "DJANGO_SECRET_KEY=$$($(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(48))')" > .env
	@echo "Wrote .env with a generated DJANGO_SECRET_KEY"

run: $(VENV)/.runtime-installed .env
	$(PY) manage.py migrate --noinput
	$(PY) manage.py bootstrap
	$(PY) manage.py aggregate_rankings --no-progress
	$(PY) manage.py collectstatic --noinput -v0
	$(VENV)/bin/uvicorn gateway_project.asgi:application --host $(HOST) --port $(PORT) --no-server-header --lifespan off

test: $(VENV)/.dev-installed .env
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache staticfiles
