# make run   set up a virtualenv and run the service on the embedded default (no external services)
# make test  set up and run the test suite against PostgreSQL, Redis and RabbitMQ on 127.0.0.1
# make torch add the optional torch build of the embedding model (requirements-torch.txt) and its tests
# make docs  regenerate the configuration reference and build the documentation site into site/ (strict)
# make bench the service side by side with LangChain's chat histories and the Redis and PostgreSQL floors (benchmarks/compare/)
# make lock  regenerate the hash-pinned locks requirements*.txt from their sources requirements*.in (pip-tools)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test lint worker migrate bench torch docs lock

# Every file pip downloads is checked against the locks' hashes (--require-hashes), and only wheels are taken
# (--only-binary): the build dependencies of a source distribution would escape the check. First pip itself
# and hatchling, the build backend of wire/ and client/ (requirements-build.txt); then the third-party
# distributions (requirements-dev.txt, which holds the runtime's requirements.txt); then wire/ and client/,
# editable, with neither dependency resolution (their dependencies are in the lock) nor build isolation
# (hatchling is installed: nothing is fetched unchecked). pip's hash-checking mode refuses local directories.
$(VENV)/.installed: requirements-build.txt requirements-dev.txt client/pyproject.toml wire/pyproject.toml
	@echo "Creating the virtualenv $(VENV) ..."
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --progress-bar on --require-hashes --only-binary :all: -r requirements-build.txt
	@echo "Installing the service, its embedding model and its test tools (requirements-dev.txt: about 800 MB once installed, a minute or two) ..."
	$(PY) -m pip install --progress-bar on --require-hashes --only-binary :all: -r requirements-dev.txt
	$(PY) -m pip install --progress-bar on --no-deps --no-build-isolation -e ./wire -e ./client
	touch $@

# The optional torch build of the embedding model (all-MiniLM-L6-v2-torch) and the tests that compare the
# default with it. torch's CPU build comes from PyTorch's own index: the registry's torch==2.13.0 is the
# CUDA build (several GB). TORCH_INDEX= (empty) where pip finds the CPU build already (a mirror, a wheel on disk).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
torch: $(VENV)/.installed
	@echo "Installing the torch extra (requirements-torch.txt: torch's CPU build and sentence-transformers, about 270 MB of wheels, 1.2 GB installed) ..."
	$(PY) -m pip install --progress-bar on --require-hashes --only-binary :all: $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) -r requirements-torch.txt

# The locks, from their sources: requirements-dev.txt first, then each other lock against it (-c), so that a
# package two locks share is pinned alike in both. pip-compile keeps each pin (and its hashes) that still
# fits: after an edit of a .in file only what it touches moves; LOCK_ARGS=--upgrade (or
# "--upgrade-package NAME") takes newer releases. torch's hashes are those of PyTorch's CPU index: after
# raising torch, run it where the index answers (requirements-torch.in); TORCH_INDEX= (empty) where it does
# not and pip finds the CPU build on disk, which keeps the lock's torch hashes. pip-tools has a virtualenv of its own.
LOCK_VENV ?= $(VENV)/pip-tools
pip_compile = CUSTOM_COMPILE_COMMAND="make lock  (from $(1).in: edit that file, not this one)" \
	$(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	--no-emit-find-links --annotation-style=line $(LOCK_ARGS) $(2) -o $(1).txt $(1).in
lock:
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet pip==26.3 pip-tools==7.6.2
	$(call pip_compile,requirements-dev)
	$(call pip_compile,requirements,-c requirements-dev.txt)
	$(call pip_compile,requirements-bench,-c requirements-dev.txt)
	$(call pip_compile,requirements-docs,-c requirements-dev.txt)
	$(call pip_compile,requirements-build,-c requirements-dev.txt)
	$(call pip_compile,requirements-torch,-c requirements-dev.txt $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)))

run: $(VENV)/.installed
	$(PY) -m memoryproject.embedded

# The TypeScript client's dependencies (client-ts/, its tests run in the suite), exactly as its lock pins them.
client-ts/node_modules/.installed: client-ts/package-lock.json
	npm ci --prefix client-ts --no-audit --no-fund
	touch $@

test: $(VENV)/.installed client-ts/node_modules/.installed
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
