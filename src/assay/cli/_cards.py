"""Judge cards for ``assay run``: found from --judge-card (a file or a stored id) or in the store, and the
lines that report the corrected pass rates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..model import JudgeCard, RunResult


def resolve_cards(refs: tuple[str, ...], store: Path | None, model: str | None) -> tuple[list[JudgeCard], bool]:
    """The cards to apply and whether the user named them (else: the store's cards for this judge model)."""
    from ..errors import ConfigError
    from ..store import RunStore, list_cards, load_card

    if refs:
        cards = []
        for ref in refs:
            path = Path(ref).expanduser()
            if path.is_file():
                try:
                    cards.append(JudgeCard.from_json(path.read_bytes(), source=str(path)))
                except OSError as exc:
                    raise ConfigError(f"--judge-card {ref!r}: cannot read it: {exc.strerror or exc}") from None
            elif store is not None and store.exists():
                cards.append(load_card(RunStore(store), ref))
            else:
                raise ConfigError(f"--judge-card {ref!r}: no such file" +
                                  ("" if store is None else f", and no run store at {str(store)!r} to look it up in"))
        return cards, True
    if store is None or model is None or not store.exists():
        return [], False
    return list_cards(RunStore(store), model=model), False


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


def apply(result: RunResult, cards: list[JudgeCard], explicit: bool, instances: Any, judge: Any) -> None:
    """Put the corrections into ``result.statistics['judge_correction']`` (nothing when no card fits),
    then the judge summary into ``statistics['judge']``."""
    from ..analysis._calibrate import correct_pass_rates, judge_overview

    got = correct_pass_rates(result, cards, instances, judge, explicit=explicit) if cards else {}
    if got:
        result.statistics["judge_correction"] = got
    overview = judge_overview(result)
    if overview is not None:
        result.statistics["judge"] = overview
