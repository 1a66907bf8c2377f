"""What a trace's run says about the trial, before any metric: the agent failed, the harness failed, or neither.

A trial is the agent's attempt at a task. Two things can go wrong that no metric sees:

* **The agent failed** (``status: "failed"``: it crashed, timed out, returned an error; an
  importer's failed or errored record). The trial is a *failed trial*: it fails its verdict, the
  pass rates and pass@k / pass^k whatever its metrics say (a crash records 0 ms, so
  ``latency_score`` would pass it); its metric results are still computed and shown.
* **The harness failed** (``metadata.harness_fault``: the simulated user broke its role, the tool
  harness itself crashed, the agent was unreachable before any reply). Nothing is known about the
  agent: the trial is *excluded* from every statistic, counted with its reason, and counts against
  ``--max-errors`` (an excluded trial can never make a run pass). Its metrics are not scored.

The fields (docs/trace-format.md "Failed and excluded trials"): ``metadata.harness_fault`` names the
fault's kind (``"simulator"``, ``"tools"``, ``"unreachable"`` or another short word);
``metadata.harness_error`` says what happened. A trace with ``metadata.simulator_error`` (what
``assay collect`` wrote for a simulator fault before ``harness_fault`` existed) is a ``"simulator"``
harness fault.
"""

from __future__ import annotations

from typing import Any

FAILED = "failed"
"""The agent failed: a failed trial."""
EXCLUDED = "excluded"
"""The harness failed: the trial is excluded from the statistics."""

HARNESS_FAULT = "harness_fault"
HARNESS_ERROR = "harness_error"


def trial_outcome(trace: Any) -> tuple[str | None, str]:
    """(``"failed"`` | ``"excluded"`` | None, why) for a Trace; None: the run itself went normally."""
    meta = trace.metadata
    if meta:
        kind = meta.get(HARNESS_FAULT)
        if kind is None and meta.get("simulator_error"):
            kind = "simulator"
        if kind:
            why = meta.get(HARNESS_ERROR) or meta.get("simulator_error") or meta.get("error") or ""
            return EXCLUDED, f"{kind}: {why}" if why else str(kind)
    if trace.status == "failed":
        why = meta.get("error") if meta else None
        return FAILED, f"the agent's run failed: {why}" if why else "the agent's run failed (status 'failed')"
    return None, ""


def fault_kind(reason: str) -> str:
    """The kind of an excluded trial's reason (``"simulator: ..."`` -> ``"simulator"``)."""
    return reason.split(":", 1)[0].strip() or "harness"
