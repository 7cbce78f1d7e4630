"""The tracers' one-line error messages are shortened at a word boundary, never inside a word."""

from __future__ import annotations

from evolution.writers.tracing.errors import one_line


def test_a_long_message_is_cut_between_words() -> None:
    words = [f"word{i:03d}" for i in range(80)]
    line = one_line(RuntimeError(" ".join(words) + "\nsecond line"), limit=120)
    assert len(line) <= 122 and line.endswith(" …")
    kept = line.removeprefix("RuntimeError: ").removesuffix(" …").split(" ")
    assert kept == words[: len(kept)]  # every word whole
    assert one_line(ValueError("short")) == "ValueError: short"
