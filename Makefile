# Two entry points for a fresh machine with Python 3.11, git and make:
#   make demo   set up .venv, build the bundled demo graph, print its summary
#   make test   set up .venv with the test extras, run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test test-fast lint format install clean bench bench-retrieve-speed virtuoso

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/kg build --odata data/demo/odata --bpmn data/demo/bpmn \
	    --mapping data/demo/mapping.yaml --codes data/demo/codes \
	    --store build/demo --out build/demo.ttl --check
	$(BIN)/kg stats --store build/demo
	@echo "--- validating the recorded agent calls in data/demo/calls.jsonl (some are invalid on purpose)"
	$(BIN)/kg validate --store build/demo data/demo/calls.jsonl; test $$? -le 1

# Two workers (the CI machine's cores); each module runs on one worker, session builds are shared
# between them (tests/conftest.py, once); modules go out slowest first (conftest.SLOWEST_FIRST, kept
# by --no-loadscope-reorder). WORKERS=0 runs the suite in this process. One BLAS/OpenMP thread per
# worker: with a thread per core each, numpy's and torch's threads spin against the other worker.
WORKERS ?= 2
SINGLE_THREADED := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
test: $(VENV)/.installed virtuoso
	$(SINGLE_THREADED) $(BIN)/python -m pytest -q -n $(WORKERS) --dist loadscope --no-loadscope-reorder

# tests/test_remote_store.py runs the remote store on OpenLink Virtuoso too (tests/conftest.py starts
# it on loopback); a fresh Debian machine gets it from Debian's packages, as root or through sudo.
virtuoso:
	@command -v virtuoso-t >/dev/null || { \
	    sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	    $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq virtuoso-opensource; }

# The suite without the end-to-end tests marked slow (wheel install, notebook, whole-corpus builds).
test-fast: $(VENV)/.installed virtuoso
	$(SINGLE_THREADED) $(BIN)/python -m pytest -q -n $(WORKERS) --dist loadscope --no-loadscope-reorder -m "not slow"

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(VENV)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/bench_build.py

# Retrieval speed side by side (docs/retrieval.md, Speed): batch mode on the SAP store, then a
# resident retriever's single queries on the plain A2X and the SAP store; builds the stores if missing.
SAP_STORE ?= build/sap
A2X_STORE ?= build/a2x
A2X_ODATA := ../shared/data/odata/s4-a2x
bench-retrieve-speed: $(VENV)/.installed
	test -d $(SAP_STORE) || $(BIN)/kg build --odata $(A2X_ODATA) --bpmn data/sap/processes \
	    --mapping data/sap/mapping.yaml --store $(SAP_STORE)
	test -d $(A2X_STORE) || $(BIN)/kg build --odata $(A2X_ODATA) --store $(A2X_STORE)
	$(BIN)/python benchmarks/bench_retrieve.py --latency-only --latency-store $(SAP_STORE) \
	    --latency-queries data/sap/benchmark/queries.jsonl
	$(BIN)/python benchmarks/bench_retrieve_resident.py --store $(A2X_STORE) \
	    --in-process a2x=$(A2X_STORE) --in-process sap=$(SAP_STORE)

clean:
	rm -rf build .pytest_cache
