# make run   set up a virtualenv and run the service on the embedded default (no external services)
# make test  set up and run the test suite against PostgreSQL, Redis and RabbitMQ on 127.0.0.1
# make bench the service side by side with LangChain's chat histories and the Redis and PostgreSQL floors (benchmarks/compare/)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test lint worker migrate bench

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-bench.txt requirements-docs.txt client/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# The CPU build of torch first: resolved from requirements.txt alone it would be the CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

run: $(VENV)/.installed
	$(PY) -m memoryproject.embedded

test: $(VENV)/.installed
	$(PY) -m pytest

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

migrate: $(VENV)/.installed
	$(PY) manage.py migrate

bench: $(VENV)/.installed
	$(PY) -m benchmarks.compare
