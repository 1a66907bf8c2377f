"""Run results as files people and CI read: a self-contained HTML report, JUnit XML and CSV.

```python
from assay.report import write_report
write_report("report.html", result, traces=traces, comparison=None)
```
The HTML works offline from file:// (CSS, script and SVG charts inline; a Content-Security-Policy
forbids any network access) and escapes everything that comes from the evaluated data.
"""

from ._ci import csv_header, csv_rows, to_csv, to_junit
from ._digest import ReportDigest
from ._page import MAX_TRACES, MAX_VIEWS, render_report, write_report

__all__ = ["MAX_TRACES", "MAX_VIEWS", "ReportDigest", "csv_header", "csv_rows", "render_report", "to_csv", "to_junit",
           "write_report"]
