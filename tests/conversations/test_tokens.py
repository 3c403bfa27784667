"""Token counts (cl100k_base): what is kept of them between requests never changes an answer."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from conversations import tokens


def encoded_length(text: str) -> int:
    return len(tokens._encoding().encode(text, disallowed_special=()))


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=700))
def test_a_count_kept_or_not_is_the_encodings_length(text):
    assert tokens.count(text) == encoded_length(text)
    assert tokens.count(text) == encoded_length(text)  # the second time from what was kept


def test_counts_of_every_length_are_the_encodings_length():
    rng = random.Random(7)
    words = ["memory", "agent", "ñandú", "日本語", "🙂", "<|endoftext|>", "x" * 40, "\n"]
    for length in (0, 1, tokens.SHORT_TEXT, tokens.SHORT_TEXT + 1, 16_384, 40_000, 200_000):
        text = "".join(rng.choice(words) + " " for _ in range(length))[:length]
        assert len(text) == length
        assert tokens.count(text) == encoded_length(text) == tokens.count(text)


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=600), st.integers(min_value=-1, max_value=200))
def test_truncate_is_the_longest_prefix_within_the_budget(text, budget):
    cut = tokens.truncate(text, budget)
    assert text.startswith(cut)
    assert encoded_length(cut) <= max(budget, 0)
    if encoded_length(text) <= budget:
        assert cut == text


def test_a_long_text_is_kept_by_its_digest_counted_once_and_the_kept_counts_stay_bounded(monkeypatch):
    monkeypatch.setattr(tokens, "_long_counts", {})
    encodings = []
    real_count = tokens._count
    monkeypatch.setattr(tokens, "_count", lambda text: encodings.append(len(text)) or real_count(text))
    long = "Caroline: " + "The puppy I adopted from the shelter is called Biscuit. " * 40

    assert tokens.count(long) == tokens.count(long) == encoded_length(long)
    assert encodings == [len(long)]  # the second count came from what was kept
    assert list(tokens._long_counts.values()) == [encoded_length(long)]
    assert all(len(key) == 16 for key in tokens._long_counts)  # a digest, not the text

    monkeypatch.setattr(tokens, "LONG_COUNTS", 1)
    other = long + " Again."
    assert tokens.count(other) == encoded_length(other)
    assert len(tokens._long_counts) == 1  # full: the kept counts are dropped, never grown past the bound
