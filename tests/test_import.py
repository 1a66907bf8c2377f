"""``import assay`` is light and has no side effects."""

import json
import subprocess
import sys


def test_import_loads_no_heavy_modules_and_changes_no_global_state():
    code = (
        "import sys, logging; rl = sys.getrecursionlimit(); h = list(logging.getLogger().handlers);"
        "import threading; n = threading.active_count();"
        "import assay;"
        "import json; print(json.dumps({'mods': sorted(m for m in ('numpy','openai','anthropic','jinja2','httpx',"
        "'langchain_core','scipy','sqlite3','rich','assay.judge','assay.engine','asyncio','dask','distributed') if m in sys.modules),"
        "'rl': sys.getrecursionlimit() == rl, 'handlers': list(logging.getLogger().handlers) == h,"
        "'threads': threading.active_count() == n}))"
    )
    out = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
    assert out == {"mods": [], "rl": True, "handlers": True, "threads": True}


def test_an_in_process_run_does_not_load_dask():
    code = ("import sys, assay; r = assay.evaluate([{'id': 'a', 'turns': [{'input': 'q', 'output': 'a'}]}], "
            "['contains:values=[\"a\"]']); print(r.run['n_traces'], 'dask' in sys.modules, 'distributed' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert out == ["1", "False", "False"]
