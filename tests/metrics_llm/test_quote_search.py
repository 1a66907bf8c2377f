"""A quote's 3-grams are found in the text by str.find, as the whole-text 3-gram index found them.

The index (a Python pass over every character of the evaluated text, cached per text) was the
largest cost of checking a judge's quotes against a long conversation; the search per 3-gram of
the quote gives the same alignments, counts and so the same verdict on every quote.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics._sections import _GRAM, _indexed, _needed, _similar, _starts, quote_found


def index_of(hay: str) -> dict[str, list[int]]:
    """The 3-gram index as it was built: every start of every 3-gram of *hay*."""
    index: dict[str, list[int]] = {}
    for i in range(len(hay) - _GRAM + 1):
        index.setdefault(hay[i:i + _GRAM], []).append(i)
    return index


texts = st.text(alphabet="ab c.", min_size=0, max_size=400)


@settings(max_examples=400, deadline=None)
@given(hay=texts, gram=st.text(alphabet="ab c.", min_size=_GRAM, max_size=_GRAM))
def test_the_starts_of_a_gram_are_the_index_entry(hay, gram):
    assert _starts(hay, gram) == index_of(hay).get(gram, [])


def indexed_by_the_index(quote: str, hay: str, need: float, band: int) -> list[int]:
    """``_indexed`` over the whole-text index (the code before the per-gram search)."""
    index = index_of(hay)
    hits: dict[int, int] = {}
    for j in range(len(quote) - _GRAM + 1):
        for p in index.get(quote[j:j + _GRAM], ()):
            hits[p - j] = hits.get(p - j, 0) + 1
    # every alignment inside some band [d, d + band] that holds enough hits, counted band by band
    # (not the code's sliding window, so a mistake in that window is not shared)
    good = sorted({a for d in hits if sum(n for x, n in hits.items() if d <= x <= d + band) >= need
                   for a in hits if d <= a <= d + band})
    return sorted(good, key=lambda d: -hits[d])[:16]


@settings(max_examples=400, deadline=None)
@given(hay=texts, quote=st.text(alphabet="ab c.", min_size=4, max_size=60))
def test_alignments_are_those_of_the_index(hay, quote):
    need, band = _needed(len(quote), 0.9)
    assert _indexed(quote, hay, need, band) == indexed_by_the_index(quote, hay, need, band)


def test_a_misspelt_quote_is_found_in_a_long_conversation_and_a_foreign_one_is_not():
    hay = " ".join(f"turn {i}: the italian place near the station has a table for {i % 7 + 2} at 7 pm."
                   for i in range(300))
    assert len(hay) > 2000
    assert _similar("the italian place near the staton", hay) >= 0.9
    assert quote_found("The Italian place near the staton", hay)
    assert not quote_found("a quote that is nowhere in the text at all", hay)
