"""The lines ``assay run`` prints about judge cards, test-retest and juries."""

from __future__ import annotations

from ..model import RunResult


def correction_lines(result: RunResult) -> list[str]:
    """One line per corrected (or refused) metric, and one per metric measured by test-retest."""
    out = []
    repeats = result.run.repeats
    for name, t in (result.statistics.get("test_retest") or {}).items():
        alpha = t.get("self_alpha")
        parts = [f"{t['unstable']} of {t['n']} traces unstable ({t['unstable_share']:.0%}: their pass/fail verdict "
                 f"flips; {t['flips']} flips in all, the majority decides)",
                 "self-agreement alpha " + ("undefined" if alpha is None else f"{alpha:.3f}")]
        if t.get("position_agreement") is not None:
            parts.append(f"position agreement {t['position_agreement']:.1%} over {t['position_pairs']} reordered pairs")
        out.append(f"{name}: test-retest over {repeats} repeats: " + ", ".join(parts))
    for name, j in (result.statistics.get("jury") or {}).items():
        alpha = j.get("alpha")
        failures = "; ".join(f"{model} failed on {n} (dropped there, its weight shared out)"
                             for model, n in j.get("juror_failures", {}).items())
        out.append(f"{name}: jury of {len(j['jurors'])}: agreement across jurors alpha "
                   + ("undefined" if alpha is None else f"{alpha:.3f}") + f" ({j['alpha_level']}), jurors disagreed on "
                   f"{j['disagreements']} of {j['n']} traces" + (f"; {failures}" if failures else ""))
    for name, c in (result.statistics.get("judge_correction") or {}).items():
        if c.get("corrected") is None:
            out.append(f"{name}: pass rate not corrected with judge card {c.get('card')}: {c.get('refused')}")
            continue
        lo, hi = c["ci"]
        out.append(f"{name}: pass rate {c['raw']:.1%} as judged, {c['corrected']:.1%} corrected for the judge's "
                   f"error rates [{c['level']:.0%}: {lo:.1%}, {hi:.1%}] (judge card {c['card']}: TPR {c['tpr']:.3f}, "
                   f"TNR {c['tnr']:.3f} on {c['n_labelled']} labels)")
    return out
