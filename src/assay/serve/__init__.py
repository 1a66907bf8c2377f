"""``assay serve``: score agents' spans as they arrive (OTLP/HTTP), into a live run of the run store.

```python
from assay.engine._spec import RunSpec
from assay.serve import Server, Settings
server = Server(RunSpec(metrics=["latency_score", "mcp_compliance"]), "runs.sqlite3", "serve.journal",
                Settings(port=4318))
server.start()            # POST /v1/traces (OTLP JSON or protobuf) to server.url
...; server.stop()        # the run is left `interrupted`; a restart with the journal resumes it
```
See ``_receiver`` (the HTTP side, its limits), ``_journal`` (durability, duplicates) and ``_app``
(grouping, scoring, recovery).
"""

from ._app import Server, Settings, rebuild, sampled
from ._journal import Journal
from ._protobuf import decode_export
from ._receiver import Limits, Receiver

__all__ = ["Journal", "Limits", "Receiver", "Server", "Settings", "decode_export", "rebuild", "sampled"]
