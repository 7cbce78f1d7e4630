"""The hidden PR marker: rendered into a body and parsed back into the same value."""

from __future__ import annotations

from kernelbot.forge.marker import MARKER_SCHEMA, Marker, parse_marker, with_marker

MARKER = Marker(
    op="silu-and-mul-forward-native", kernel_hash="ab" * 32, base_sha="c0ffee" * 6 + "abcd", tool="0.1.0"
)


def test_round_trip_through_a_body() -> None:
    body = with_marker("## Motivation\n\nFaster.\n", MARKER)
    assert body.endswith(MARKER.render() + "\n")
    assert MARKER.render().startswith("<!-- kernelbot:{") and MARKER.render().endswith("} -->")
    assert parse_marker(body) == MARKER
    assert parse_marker(body).schema == MARKER_SCHEMA


def test_a_body_without_a_marker_or_with_a_broken_one_has_none() -> None:
    assert parse_marker(None) is None
    assert parse_marker("") is None
    assert parse_marker("A PR a person wrote.\n<!-- a comment -->") is None
    assert parse_marker('<!-- kernelbot:{"op": "x", "kernel_hash": 3} -->') is None  # fields missing / wrong
    assert parse_marker("<!-- kernelbot:{not json} -->") is None


def test_rewriting_a_body_keeps_one_marker_the_newest() -> None:
    newer = Marker(op=MARKER.op, kernel_hash="cd" * 32, base_sha=MARKER.base_sha, tool="0.2.0")
    body = with_marker(with_marker("text", MARKER), newer)
    assert body.count("<!-- kernelbot:") == 1
    assert parse_marker(body) == newer
    assert parse_marker(with_marker("text", MARKER) + "\n" + newer.render()) == newer  # the last one counts


def test_values_cannot_close_the_comment_early() -> None:
    odd = Marker(op="a-->b<!--c", kernel_hash="h", base_sha="s", tool="t")
    rendered = odd.render()
    assert rendered.count("-->") == 1 and rendered.count("<!--") == 1
    assert parse_marker(f"before {rendered} after") == odd


def test_the_pushed_commit_rides_along() -> None:
    pushed = Marker(MARKER.op, MARKER.kernel_hash, MARKER.base_sha, MARKER.tool, commit="f" * 40)
    assert parse_marker(with_marker("b", pushed)) == pushed
    assert parse_marker(with_marker("b", MARKER)).commit == ""
    old = '<!-- kernelbot:{"op": "o", "kernel_hash": "k", "base_sha": "b", "tool": "0.0.1"} -->'
    assert parse_marker(old) == Marker("o", "k", "b", "0.0.1")  # a body written before commits were recorded
