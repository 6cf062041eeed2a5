# Two commands from a fresh clone:
#   make demo   installs vaultmem into .venv and runs it on a demo vault (./demo-vault)
#   make test   installs vaultmem with its test dependencies and runs the whole suite
#   make test-thorough   the same, with every property test at its full count of examples
VENV ?= .venv
PYTHON ?= python3
# a venv keeps its programs in Scripts/ on Windows (Git Bash's make), bin/ elsewhere
BIN := $(if $(filter Windows_NT,$(OS)),Scripts,bin)
PY := $(VENV)/$(BIN)/python
VM := $(VENV)/$(BIN)/vaultmem
DEMO ?= demo-vault

.PHONY: install demo test test-thorough test-whoosh-reloaded bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,embeddings]'
	touch $@

install: $(VENV)/.installed

demo: install
	@test -d $(DEMO) || cp -r fixtures/sample-vault $(DEMO)
	@echo '$$ vaultmem init $(DEMO)'; $(VM) init $(DEMO)
	@echo; echo '$$ vaultmem save "Release freeze starts on December 18; only hotfixes ship after that" --tag ops --source chat'
	@$(VM) save "Release freeze starts on December 18; only hotfixes ship after that" --tag ops --source chat --vault $(DEMO)
	@echo; echo '$$ vaultmem search "release freeze" --top-k 5'; $(VM) search "release freeze" --top-k 5 --vault $(DEMO)
	@echo; echo '$$ vaultmem stats'; $(VM) stats --vault $(DEMO)
	@echo; echo "Open $(DEMO)/ in Obsidian to see the notes; try: $(VM) --help"

test: install
	$(VENV)/$(BIN)/ruff check
	$(VENV)/$(BIN)/mypy
	$(PY) -m pytest

# tests/conftest.py: HYPOTHESIS_PROFILE=thorough gives each property test its full count
test-thorough: install
	$(VENV)/$(BIN)/ruff check
	$(VENV)/$(BIN)/mypy
	HYPOTHESIS_PROFILE=thorough $(PY) -m pytest

# The suite on the other Whoosh 2.7-compatible release: whoosh-reloaded installs the same `whoosh`
# module in place of whoosh3 (pyproject's), in a venv of its own (storage/fulltext uses only
# what Whoosh 2.7 documents, so either serves). CI runs it (.github/workflows/test.yml).
RELOADED_VENV ?= .venv-whoosh-reloaded
RELOADED := whoosh-reloaded==2.7.5
RPY := $(RELOADED_VENV)/$(BIN)/python

$(RELOADED_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(RELOADED_VENV)
	$(RPY) -m pip install -q --upgrade pip
	$(RPY) -m pip install -q -e '.[test]'
	$(RPY) -m pip uninstall -q -y whoosh3
	$(RPY) -m pip install -q '$(RELOADED)'
	touch $@

test-whoosh-reloaded: $(RELOADED_VENV)/.installed
	$(RPY) -c "import importlib.metadata as m; print('whoosh-reloaded', m.version('whoosh-reloaded'))"
	$(RPY) -m pytest $(PYTEST_ARGS)

bench: install
	$(PY) bench/bench_core.py --sizes 1000,10000

clean:
	rm -rf $(VENV) $(RELOADED_VENV) $(DEMO) build dist *.egg-info
