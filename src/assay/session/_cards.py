"""Judge cards for a run: found from --judge-card (a file or a stored id) or in the store, and applied
to the finished run (corrected pass rates)."""

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


def apply_cards(result: RunResult, cards: list[JudgeCard], explicit: bool, instances: Any, judge: Any) -> None:
    """Put the corrections into ``result.statistics['judge_correction']`` (nothing when no card fits),
    then the judge summary into ``statistics['judge']``."""
    from ..analysis._calibrate import correct_pass_rates, judge_overview

    got = correct_pass_rates(result, cards, instances, judge, explicit=explicit) if cards else {}
    if got:
        result.statistics["judge_correction"] = got
    overview = judge_overview(result)
    if overview is not None:
        result.statistics["judge"] = overview
