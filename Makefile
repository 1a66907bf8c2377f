# `make demo` and `make test` each do all set-up on a fresh machine.
PYTHON ?= python3
STAMP := .make-installed

.PHONY: install demo test bench screenshot clean

$(STAMP): pyproject.toml
	$(PYTHON) -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@mkdir -p out
	# exit status 1 means some traces failed a threshold: expected on the example data
	assay run examples/traces.jsonl --no-store --output out/demo.json --html out/report.html || [ $$? -eq 1 ]
	assay run examples/traces.jsonl || [ $$? -eq 1 ]
	@echo "results: out/demo.json   report: out/report.html (open it in a browser)"

test: $(STAMP)
	lint-imports
	$(PYTHON) -m pytest -n 2

screenshot: $(STAMP)
	@mkdir -p out
	assay run examples/traces.jsonl --no-store --output out/demo.json || [ $$? -eq 1 ]
	assay report out/demo.json -o out/report.html --screenshot out/report.png
	@echo "screenshot: out/report.png"

bench: $(STAMP)
	$(PYTHON) benchmarks/deterministic.py
	$(PYTHON) benchmarks/judge_throughput.py
	$(PYTHON) benchmarks/stats.py

clean:
	rm -rf out $(STAMP) .pytest_cache .hypothesis
