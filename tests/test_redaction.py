"""acpio.redaction: lookahead streams that redact across chunk boundaries."""

from __future__ import annotations

import re

import pytest

from acpio.redaction import LookaheadStream, Redactor

KEY = r"sk-[A-Za-z0-9]{8,}"


def run(redactor: Redactor, chunks: list[str]) -> list[str]:
    stream = redactor.stream()
    return [stream.feed(chunk) for chunk in chunks] + [stream.flush()]


def test_a_key_split_over_three_chunks_is_redacted() -> None:
    out = run(Redactor([KEY]), ["Your key is sk-", "abc123", "456789", " keep it safe."])
    assert out == ["Your key is ", "", "", "[REDACTED] keep it safe.", ""]


def test_a_key_at_the_end_is_redacted_by_the_flush() -> None:
    assert run(Redactor([KEY]), ["key: sk-", "abc123", "456789"]) == ["key: ", "", "", "[REDACTED]"]


def test_every_cut_of_the_text_gives_the_same_redaction() -> None:
    text = "a sk-abc123456789, then sk-short and ghp_0123456789abcdefghijXYZ end"
    redactor = Redactor([KEY, r"ghp_[A-Za-z0-9]{20,}"])
    whole = redactor.redact(text)
    assert whole == "a [REDACTED], then sk-short and [REDACTED] end"
    for size in (1, 2, 3, 5, 7):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert "".join(run(redactor, chunks)) == whole, size


def test_text_that_cannot_start_a_key_goes_out_at_once() -> None:
    stream = Redactor([KEY]).stream()
    assert stream.feed("hello world. ") == "hello world. "
    assert stream.feed("ok s") == "ok "  # "s" may start "sk-": held
    assert stream.held == "s"
    assert stream.feed("ure") == "sure"


def test_a_prefix_that_goes_nowhere_is_held_at_most_the_window() -> None:
    stream = Redactor([KEY], window=16).stream()
    assert stream.feed("sk- is") == ""  # it may still become a key
    assert stream.feed(" how keys start") == "sk- is how keys start"  # 16 characters on: it cannot


def test_a_pattern_without_a_fixed_start_holds_the_window() -> None:
    stream = Redactor([r"[0-9]{4}-[0-9]{4}"], window=9).stream()
    assert stream.feed("card 1234-") == "ca"
    assert stream.feed("5678 ok") == "rd "  # the last 8 characters wait, and the match they cut
    assert stream.flush() == "[REDACTED] ok"


def test_ignorecase_patterns() -> None:
    redactor = Redactor([re.compile(r"secret-[0-9]+", re.IGNORECASE)])
    assert "".join(run(redactor, ["a SEC", "RET-", "42 b"])) == "a [REDACTED] b"


def test_a_translation_as_a_lookahead_stream() -> None:
    """Any transform: replace whole words, holding back a word that may go on."""

    def last_word_start(text: str) -> int:
        return max(text.rfind(" ") + 1, 0)

    stream = LookaheadStream(lambda text: text.replace("colour", "color"), last_word_start)
    out = [stream.feed(piece) for piece in ["the col", "our of ", "colours"]] + [stream.flush()]
    assert "".join(out) == "the color of colors"
    assert out[0] == "the "


def test_mistakes() -> None:
    with pytest.raises(ValueError, match="at least one pattern"):
        Redactor([])
    with pytest.raises(ValueError, match="window=0"):
        Redactor([KEY], window=0)


def test_case_insensitive_pattern_after_text_whose_case_folding_is_longer() -> None:
    # "ß" folds to "ss": the held tail must be found in the text, not at the folded text's index
    redactor = Redactor([re.compile(r"secret-[0-9]{4}", re.IGNORECASE)])
    assert "".join(run(redactor, ["Straße ßß: SECRET-12", "34 done"])) == "Straße ßß: [REDACTED] done"
