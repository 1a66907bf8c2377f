# `make demo` and `make test` each do all set-up on a fresh machine.
PYTHON ?= python3
STAMP := .make-installed

.PHONY: install demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@mkdir -p out
	# exit status 1 means some traces failed a threshold: expected on the example data
	assay run examples/traces.jsonl --output out/demo.json || [ $$? -eq 1 ]
	assay run examples/traces.jsonl || [ $$? -eq 1 ]

test: $(STAMP)
	lint-imports
	$(PYTHON) -m pytest -n 2

bench: $(STAMP)
	$(PYTHON) benchmarks/deterministic.py
	$(PYTHON) benchmarks/judge_throughput.py
	$(PYTHON) benchmarks/stats.py

clean:
	rm -rf out $(STAMP) .pytest_cache .hypothesis
