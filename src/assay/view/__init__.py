"""``assay view``: a local, read-only web viewer over the run store.

```python
from assay.store import RunStore
from assay.view import ViewServer
server = ViewServer(RunStore("runs.sqlite3"))      # 127.0.0.1, a free port
print(server.url); server.serve_forever()
```
Pages: runs (filters, a name's trend), a run (failures first, dimensions, metrics, pass@k, judge,
its traces), a trace (the report's trace drawing), two runs compared. Everything it serves ships
in the package; nothing is loaded from elsewhere. See ``_server`` for what keeps it safe.
"""

from ._layout import CSP
from ._server import ViewServer, is_loopback, loopback_hosts

__all__ = ["CSP", "ViewServer", "is_loopback", "loopback_hosts"]
