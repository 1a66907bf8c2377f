"""The run store: every ``assay run`` in one SQLite file, listable, loadable and comparable.

```python
from assay.store import load_run, load_traces
result = load_run("latest")            # or a run id / prefix, "latest~1", or a results file path
traces = load_traces(result)           # the input traces behind it, for reports
```
The file is ``$ASSAY_STORE`` (``off`` disables storing), else ``runs.sqlite3`` in the user data
dir. Stored per run: id, times, status, inputs with sha256, metrics with parameters, weights and
thresholds, judge, per-trace results and input traces (JSON per row), summary, tokens and cost.
"""

from ._browse import (RunRow, RunsPage, find_runs, load_summary, previous_run, run_info, run_series, stored_results,
                      trace_at)
from ._browse import resolve as resolve_run
from ._cards import list_cards, load_card, save_card
from ._codec import new_run_id, read_results_file, result_from_dict
from ._db import RunInfo, RunStore
from ._inputs import InputTap, hash_inputs, trace_key, traces_from_inputs
from ._load import load_run, load_traces
from ._paths import ENV, default_store_path
from ._prune import in_scope, prune_plan
from ._record import RunRecorder
from ._recording import record_evaluation
from ._sequences import delete_sequence, load_sequence, save_sequence

__all__ = ["ENV", "InputTap", "RunInfo", "RunRecorder", "RunRow", "RunStore", "RunsPage", "default_store_path",
           "delete_sequence", "find_runs", "hash_inputs", "in_scope",
           "list_cards", "load_card", "load_run", "load_sequence", "load_summary", "load_traces", "new_run_id",
           "prune_plan", "read_results_file", "previous_run", "record_evaluation", "resolve_run", "run_info",
           "run_series", "stored_results", "trace_at", "result_from_dict", "save_card", "save_sequence", "trace_key",
           "traces_from_inputs"]
