"""The PR body's markdown as the report shows it: a forge's look, nothing that runs or loads."""

from __future__ import annotations

from kernelbot.report.markdown import render_markdown, split_marker

BODY = """\
## Motivation

| case | speedup |
| --- | --- |
| t1 | **1.39x** |

<details>
<summary>How this kernel was found</summary>

kernelbot searched *12* iterations.
</details>

<script>alert("x")</script>

<img src="https://example.com/x.png">

![plot](https://example.com/plot.png)

<details open onclick="evil()">

<!-- a comment -->
<!-- kernelbot:{"op": "silu", "schema": 1} -->
"""


def test_the_body_renders_like_a_forge_but_runs_and_loads_nothing() -> None:
    text, marker = split_marker(BODY)
    assert marker == '{"op": "silu", "schema": 1}' and "kernelbot:" not in text
    html = render_markdown(text)
    assert "<h2>Motivation</h2>" in html and "<td><strong>1.39x</strong></td>" in html
    assert "<details>\n<summary>How this kernel was found</summary>" in html and "</details>" in html
    assert "<em>12</em>" in html
    assert "<script" not in html and "&lt;script&gt;" in html  # shown, not run
    assert "<img" not in html and "&lt;img src=" in html  # nothing is fetched
    assert '<a href="https://example.com/plot.png">plot</a>' in html  # an image becomes a link
    assert "onclick" not in html.replace("&lt;details open onclick", "")  # a tag with attributes: text
    assert "&lt;!-- a comment --&gt;" in html


def test_a_body_without_a_marker() -> None:
    assert split_marker("## Why\n") == ("## Why\n", "")
