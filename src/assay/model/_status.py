"""A run's verdict, in one place, so the CLI's exit status, ``RunResult.status`` and the pytest
plugin can never disagree.

``passed`` means every trace that could be judged passed *and* the evaluation actually happened:
a run where nothing was scored, or where more results errored (or were not evaluated because the
budget ran out) than the run tolerates, ``could_not_evaluate`` — never a silent pass.
"""

from __future__ import annotations

from typing import Any


PASSED, FAILED, INVALID_INPUT, COULD_NOT_EVALUATE, INTERRUPTED = (
    "passed", "failed", "invalid_input", "could_not_evaluate", "interrupted")
STATUSES = (PASSED, FAILED, INVALID_INPUT, COULD_NOT_EVALUATE, INTERRUPTED)


def apart(score: float, threshold: float, score_digits: int = 2, threshold_digits: int = 2) -> tuple[str, str]:
    """A failed score and its threshold as text, with as many digits as it takes for the two to differ:
    0.6999 against 0.7 is "0.6999" and "0.7000", never "0.70" and "0.70" (a failure that reads as a tie)."""
    for extra in range(5):
        a, b = f"{score:.{score_digits + extra}f}", f"{threshold:.{threshold_digits + extra}f}"
        if float(a) != float(b):
            return a, b
    return repr(score), repr(threshold)


def parse_max_errors(value: str | float | int | None) -> float | int:
    """``--max-errors``: a count (``3``) or a share of the results (``0.05``, ``5%``); default 0.

    Raises ValueError with the accepted forms.
    """
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError(f"max_errors: expected a count or a fraction, got {value!r}")
    if isinstance(value, (int, float)):
        number: float | int = value
        fraction = isinstance(value, float)
    else:
        text = value.strip()
        try:
            if text.endswith("%"):
                number, fraction = float(text[:-1]) / 100, True
            elif any(c in text for c in ".eE"):
                number, fraction = float(text), True
            else:
                number, fraction = int(text), False
        except ValueError:
            raise ValueError(f"max_errors {value!r}: expected a count (3) or a fraction (0.05 or 5%)") from None
    if number != number or number < 0 or (fraction and number > 1):  # NaN, negative, share over 100%
        raise ValueError(f"max_errors {value!r}: expected a count >= 0 or a fraction in [0, 1]")
    return float(number) if fraction else int(number)


def unevaluated_counts(summary: dict[str, Any], run: Any = None) -> tuple[int, int, int]:
    """(scored, errored or not evaluated, all) metric results over the run's summaries.

    A trial excluded for a harness fault (``run.n_excluded``) is one unevaluated result per metric
    of the run: it counts against ``--max-errors`` like the errors it stands for.
    """
    scored = bad = total = 0
    for s in summary.values():
        scored += s.n
        total += s.n + s.n_null
        bad += s.n_errored + int((s.warnings or {}).get("not_evaluated", 0))
    excluded = (run.n_excluded or 0) if run is not None else 0
    if excluded:
        per_trial = max(1, len(run.metrics or ()) or len(summary))
        bad += excluded * per_trial
        total += excluded * per_trial
    return scored, bad, total


def run_status(result: Any, max_errors: str | float | int | None = None) -> tuple[str, str]:
    """(status, why) for a RunResult; ``max_errors`` (a count, a share, or ``"5%"``) defaults to the
    run's own (``result.run.max_errors``, parsed when the run was described), else 0."""
    run = result.run
    if run.interrupted:
        return INTERRUPTED, "the run was interrupted"
    skipped = [i for i in result.input_issues if not getattr(i, "is_warning", False)]  # ReadingWarning: read, not lost
    if skipped:
        n = len(skipped)
        return INVALID_INPUT, f"{n} input record{'s' if n != 1 else ''} skipped"
    limit = (run.max_errors or 0) if max_errors is None else parse_max_errors(max_errors)
    scored, bad, total = unevaluated_counts(result.summary, run)
    n_traces = len(result.traces) if run.n_traces is None else run.n_traces
    if not n_traces:
        return COULD_NOT_EVALUATE, "no traces in the input"
    failed_runs = run.n_failed_runs or 0
    if scored == 0 and not failed_runs:  # (a failed trial is a verdict even when no metric scored it)
        if bad:
            return COULD_NOT_EVALUATE, f"nothing was scored: {bad} of {total} metric results errored or were not evaluated"
        return COULD_NOT_EVALUATE, f"nothing was scored ({total} metric results, none with a score)"
    allowed = limit * total if isinstance(limit, float) else limit
    if bad > allowed:
        shown = f"{limit:.0%}" if isinstance(limit, float) else str(limit)
        excluded = f", {run.n_excluded} trials excluded for harness faults among them" if run.n_excluded else ""
        return COULD_NOT_EVALUATE, (f"{bad} of {total} metric results errored or were not evaluated{excluded} "
                                    f"(tolerated: {shown}; see --max-errors)")
    if failed_runs:
        return FAILED, f"{failed_runs} trial{'s' if failed_runs != 1 else ''} failed (the agent's run failed)"
    failed = any(t.passed is False for t in result.traces) or (run.n_failed or 0) > 0 or any(
        s.n_passed < s.n for s in result.summary.values())
    if failed:
        return FAILED, "a threshold failed"
    return PASSED, "every scored trace passed"
