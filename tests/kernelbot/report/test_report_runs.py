"""`kernelbot report` on real runs: a `kernelbot evolve` on the Triton interpreter (killed, then resumed to
its end) and one driven by a scripted loopback LLM. Every section is there, the page is valid HTML5 and holds
everything it shows, and what each section says comes from the run's store."""

from __future__ import annotations

import re

import pytest
from html_check import EVOLVE_SECTIONS, figures, missing, parse_strict, sections, text
from report_runs import LLM_KEY, make_report

from kernelbot.report.figures import BEST_COLOUR


def assert_self_contained(html: str) -> None:
    """Nothing is fetched when the page is viewed: no scripts, style sheets, images or frames, and a content
    security policy that would block them anyway."""
    assert re.search(r"<(script|link|img|iframe|object|embed)\b", html) is None
    assert re.search(r"\bsrc\s*=", html) is None
    assert "default-src 'none'" in html
    assert "url(http" not in html and "@import" not in html


@pytest.mark.slow
def test_a_real_interpreter_run_has_every_section(interpreter_runs) -> None:
    html = make_report(interpreter_runs.finished)
    assert_self_contained(html)
    found = sections(parse_strict(html))
    assert tuple(found) == EVOLVE_SECTIONS
    assert [name for name, s in found.items() if missing(s)] == []

    overview = text(found["overview"])
    assert "silu_small (graph regime)" in overview and "finished: iterations" in overview
    assert "triton-interpret on cpu" in overview and "seed:file 3" in overview

    growth = found["growth"]
    assert len(figures(growth)) == 1 and BEST_COLOUR in html
    assert "every correct candidate scores 1" in text(growth)
    assert len(figures(found["rate"])) == 1 and "per minute on average" in text(found["rate"])

    failures = text(found["failures"])  # the wrong seed and the one computing with PyTorch on the host
    assert "correctness" in failures and "flagged" in failures
    assert len(figures(found["failures"])) == 1

    speedups = text(found["speedups"])
    assert (
        "No speed was measured: the triton-interpret backend checks correctness and never times" in speedups
    )
    assert "t2_d64_fp32" in speedups and "t1_d256_bf16" in speedups
    assert "--no-inductor-seed" in speedups  # why torch.compile was not measured

    lineage = found["lineage"]
    assert "seed:file" in text(lineage) and "first candidate" in text(lineage)

    code = found["code"]
    assert code.find(".//div[@class='hl']") is not None
    assert "_silu_and_mul_kernel" in text(code) and "EVOLVE-BLOCK-START" in text(code)

    feedback = text(found["feedback"])  # structured: the mismatch of the wrong seed, the hack finding
    assert "stopped at correctness" in feedback and "return" in feedback and "expected" in feedback
    assert "pytorch_fallback" in feedback and "flagged by a hack check" in feedback


def test_an_llm_run_shows_the_llm_steps_in_the_lineage(llm_run) -> None:
    html = make_report(llm_run)
    assert_self_contained(html)
    assert LLM_KEY not in html  # the store masked it where the fake model quoted it
    found = sections(parse_strict(html))
    assert tuple(found) == EVOLVE_SECTIONS
    assert not any(missing(s) for s in found.values())

    assert "fake-model" in text(found["overview"]) and "prompt +" in text(found["overview"])
    growth_svg = figures(found["growth"])[0]
    legend = text(growth_svg)
    assert "island 0" in legend and "island 1" in legend and "best overall" in legend

    lineage = found["lineage"]
    rows = [[" ".join("".join(td.itertext()).split()) for td in tr.iter("td")] for tr in lineage.iter("tr")]
    steps = [r for r in rows if len(r) == 7]
    assert steps[0][2] == "seed:inductor" and steps[0][6] == "first candidate"
    llm_steps = [r for r in steps if r[2] == "llm:fake-model"]
    assert len(llm_steps) >= 2 and all(r[3] == "fake-model" and r[6] == "+1 -1" for r in llm_steps)
    scores = [float(r[4]) for r in steps]
    assert scores == sorted(scores) and scores[-1] > scores[0]  # each step improved on its parent
    details = lineage.findall("./details")  # one per step, the winner's open
    assert len(details) == len(steps) and details[-1].get("open") is not None
    diff = text(details[-1])
    assert re.search(r"-SCORE = [0-9.]+ \+SCORE = [0-9.]+", diff)
    assert "300 prompt + 80 completion" in text(lineage) and "what the model answered" in text(lineage)

    speedups = found["speedups"]
    assert len(figures(speedups)) == 1
    table = text(speedups)
    assert re.search(r"\d\.\d{3}x \[\d\.\d{3}, \d\.\d{3}\]", table)  # speedups with their intervals
    assert "Triton code Inductor generated" in table
    cells = [[" ".join("".join(td.itertext()).split()) for td in tr.iter("td")] for tr in speedups.iter("tr")]
    n8 = next(row for row in cells if row and row[0] == "n8")
    winner_graph = float(n8[4].split("x")[0])  # the Inductor stand-in's speedup is its SCORE, 1.1
    assert n8[6] == f"{winner_graph / 1.1:.3f}x" and n8[7] == n8[6]
    assert "compile" in text(found["failures"]) and "correctness" in text(found["failures"])
    assert "stopped at correctness" in text(found["feedback"])


def test_the_report_lands_in_the_run_directory_by_default(llm_run, capsys) -> None:
    from kernelbot.cli import main

    assert main(["report", str(llm_run)]) == 0
    assert f"report written to {llm_run / 'report.html'}" in " ".join(capsys.readouterr().out.split())
    parse_strict((llm_run / "report.html").read_text())
    assert (llm_run / "report.html").stat().st_mode & 0o044  # readable by others: a page to share
