"""Alerts that do not cry wolf: the live pass rate against a baseline run's, by an anytime-valid test.

Every scored trace's verdict (pass 1, fail 0; unscored ones left out) goes into a betting
confidence sequence for the live pass rate (``assay.stats.SequentialMean``, null = the baseline's
pass rate). The sequence holds at every n at once, so checking after every batch, for as long as
the server runs, keeps the chance of a false alarm at ``alpha`` or less; the alert fires once, when
the whole sequence lies below the baseline. It is printed, kept in the journal (a restart neither
repeats it nor forgets it), shown by ``GET /health`` and, with a webhook, POSTed there as JSON.
The test assumes the traces are exchangeable: a pass rate that falls for good is what it detects.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from datetime import UTC, datetime
from typing import Any

from ..stats import SequentialMean
from ._journal import Journal

_EDGE = 0.001
"""A baseline pass rate of 0 or 1 is taken as 0.001 / 0.999 (the test's null lies inside (0, 1))."""


class PassRateAlert:
    def __init__(self, journal: Journal, run_id: str, baseline_id: str, baseline_rate: float, *,
                 alpha: float = 0.05, webhook: str | None = None, log: Any = None) -> None:
        self.journal, self.run_id, self.baseline_id, self.baseline_rate = journal, run_id, baseline_id, baseline_rate
        self.alpha, self.webhook, self.log = alpha, webhook, log or (lambda line: None)
        null = min(max(baseline_rate, _EDGE), 1 - _EDGE)
        self.seq = SequentialMean(alpha=alpha, lower=0.0, upper=1.0, null=null)
        saved = journal.get("alert")
        self.fired: dict[str, Any] | None = json.loads(saved) if saved else None
        self.sent: list[threading.Thread] = []

    def add(self, verdicts: list[bool | None]) -> dict[str, Any] | None:
        """Add verdicts in the order scored; the alert when it fires now, else None."""
        self.seq.update(1.0 if v else 0.0 for v in verdicts if v is not None)
        if self.fired is not None or self.seq.decision != "below":
            return None
        self.fired = alert = {
            "alert": "pass_rate_below_baseline", "run_id": self.run_id, "baseline_run_id": self.baseline_id,
            "baseline_pass_rate": self.baseline_rate, "n_traces": self.seq.n, "pass_rate": self.seq.mean,
            "interval": [self.seq.low, self.seq.high], "alpha": self.alpha,
            "at": datetime.now(UTC).isoformat(timespec="seconds")}
        self.journal.put("alert", json.dumps(alert))
        self.log(f"assay serve: ALERT: the pass rate of run {self.run_id} is below baseline {self.baseline_id}'s "
                 f"{self.baseline_rate:.1%}: {self.seq.mean:.1%} over {self.seq.n} traces, anytime-valid "
                 f"{1 - self.alpha:.0%} interval [{self.seq.low:.3f}, {self.seq.high:.3f}]")
        if self.webhook:
            t = threading.Thread(target=self._post, args=(alert,), name="assay-serve-webhook", daemon=True)
            t.start()
            self.sent.append(t)
        return alert

    def _post(self, alert: dict[str, Any]) -> None:
        assert self.webhook is not None
        req = urllib.request.Request(self.webhook, data=json.dumps(alert).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                r.read()
        except Exception as exc:  # noqa: BLE001 - a webhook that fails is said, not fatal
            self.log(f"assay serve: the alert webhook {self.webhook} failed: {type(exc).__name__}: {exc}")

    def status(self) -> dict[str, Any]:
        return {"n": self.seq.n, "pass_rate": self.seq.mean, "interval": [self.seq.low, self.seq.high],
                "baseline_pass_rate": self.baseline_rate, "fired": self.fired}
