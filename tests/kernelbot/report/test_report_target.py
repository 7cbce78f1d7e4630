"""The report of a finished `kernelbot target` run: the stage timeline, tests before/after, the end-to-end
benchmark with the delta's interval, and the PR body as kernelbot.propose wrote it, rendered."""

from __future__ import annotations

import json

import pytest
from html_check import EVOLVE_SECTIONS, TARGET_SECTIONS, figures, missing, parse_strict, sections, text
from report_runs import make_report


def test_a_target_run_has_every_section(target_run) -> None:
    html = make_report(target_run)
    doc = parse_strict(html)
    found = sections(doc)
    assert set(found) == {*EVOLVE_SECTIONS, *TARGET_SECTIONS}
    assert [name for name, s in found.items() if missing(s)] == []
    assert "kernelbot target example" in text(doc.find(".//h1"))

    timeline = text(found["timeline"])
    assert all(f"{s} done" in timeline for s in ("extract", "evolve", "integrate", "verify", "propose"))
    assert len(figures(found["timeline"])) == 1

    tests = found["tests"]
    rows = [[" ".join("".join(td.itertext()).split()) for td in tr.iter("td")] for tr in tests.iter("tr")]
    assert ["base", "11", "1", "0", "1", "3.2 s", ""] in rows and [
        "change",
        "17",
        "1",
        "2",
        "1",
        "4.1 s",
        "",
    ] in rows
    assert "pre-existing failures (fail on both trees): tests/test_layers.py::test_rope_cache" in text(tests)
    assert "no test that passed before the change fails after it" in text(tests)

    e2e = text(found["e2e"])
    assert "+3.97 % (95 % CI +3.61 % .. +4.42 %)" in e2e
    assert "The whole interval lies on the better side of zero." in e2e
    assert "tokens_per_s in tok/s, higher is better" in e2e and len(figures(found["e2e"])) == 1

    body = found["body"]
    rendered = body.find(".//div[@class='markdown']")
    assert rendered is not None and rendered.find(".//table") is not None  # markdown tables became tables
    assert rendered.find(".//h2") is not None or rendered.find(".//h3") is not None
    assert "kernelbot:" not in text(rendered) and "<!--" not in html.split('class="markdown"')[1]
    assert "kernel_hash" in text(body)  # the hidden marker, listed apart
    assert "patch.diff" in text(body) and "silu_and_mul_triton" in text(body)


@pytest.mark.slow
def test_a_real_target_run_of_the_bundled_example(real_target_run) -> None:
    verify = json.loads((real_target_run / "verify.json").read_text())
    found = sections(parse_strict(make_report(real_target_run)))
    assert set(found) == {*EVOLVE_SECTIONS, *TARGET_SECTIONS}
    assert [name for name, s in found.items() if missing(s)] == ["e2e"]  # no GPU here: said, not faked
    assert "the benchmark was not measured: no GPU on this machine" in text(found["e2e"])

    timeline = text(found["timeline"])
    assert all(f"{s} done" in timeline for s in ("extract", "evolve", "integrate", "verify", "propose"))
    tests = found["tests"]
    rows = [[" ".join("".join(td.itertext()).split()) for td in tr.iter("td")] for tr in tests.iter("tr")]
    sides = {row[0]: row[1:4] for row in rows if row and row[0] in ("base", "change")}
    for side, key in (("base", "before"), ("change", "after")):
        run = verify["tests"][key]
        assert sides[side] == [str(run["passed"]), str(run["failed"]), str(run["skipped"])]

    body = found["body"].find(".//div[@class='markdown']")
    assert body is not None and "No speed was measured" in text(body)
    assert body.find(".//details/summary") is not None  # the body's own collapsible parts
    assert "untimed" in text(found["overview"]) and "triton-interpret" in text(found["speedups"])
