# `make demo` and `make test` each do all set-up on a fresh machine: they create a virtual
# environment in .venv with the system's python3 (Debian/Ubuntu's system Python refuses
# `pip install` outside one) and install assay into it. VENV=path picks another environment.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.assay-installed
DEMO_STAMP := $(VENV)/.assay-demo-installed

.PHONY: install demo check test bench screenshot clean

$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	  echo "error: '$(PYTHON) -m venv' failed; on Debian/Ubuntu: sudo apt-get install python3-venv" >&2; exit 1; }

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP) $(DEMO_STAMP)

# the demo needs assay alone (no test tools, browsers or model runtimes)
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	@mkdir -p out
	# exit status 1 means some traces failed a threshold: expected on the example data
	$(BIN)/assay run examples/traces.jsonl --no-store -q -o out/demo.json -o out/report.html || [ $$? -eq 1 ]
	$(BIN)/assay run examples/traces.jsonl || [ $$? -eq 1 ]
	@echo "results: out/demo.json   report: out/report.html (open it in a browser)"

check: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check src tests
	$(BIN)/mypy

test: check
	$(BIN)/python -m pytest -n 2

screenshot: $(STAMP)
	@mkdir -p out
	$(BIN)/assay run examples/traces.jsonl --no-store -q -o out/demo.json || [ $$? -eq 1 ]
	$(BIN)/assay report out/demo.json -o out/report.html --screenshot out/report.png
	@echo "screenshot: out/report.png"

bench: $(STAMP)
	$(BIN)/python benchmarks/deterministic.py
	$(BIN)/python benchmarks/judge_throughput.py
	$(BIN)/python benchmarks/stats.py

clean:
	rm -rf out $(STAMP) $(DEMO_STAMP) .make-installed .pytest_cache .hypothesis .mypy_cache .ruff_cache
