"""The sections about candidates: the winner's per-case speedups (both regimes, with intervals, and against
torch.compile's kernels where the run measured them), its line of descent with each step's diff, its code,
and the structured feedback of the latest failures."""

from __future__ import annotations

import json
from dataclasses import dataclass

from evaluators.result import CaseResult, EvalResult, RegimeTiming
from evolution.types import Program
from kernelbot.report.blocks import Code, Details, Facts, Figure, Note, Section, Table
from kernelbot.report.highlight import diff_html, diff_text, plain_html, python_html
from kernelbot.report.search_data import NoSearch, SearchData
from kernelbot.report.search_plots import CaseSpeedups, speedups_svg
from kernelbot.report.search_sections import NO_EVALUATIONS, duration, empty_reason
from kernelbot.report.series import latest_failures, lineage

INDUCTOR = "seed:inductor"
NOT_MEASURED = "torch.compile was not measured"
REGIMES = ("graph", "wall")
_FAILURES_SHOWN = 6
_LOG_TAIL = 4000


def _no_winner(search: SearchData) -> str:
    if not search.evaluations:
        return empty_reason(search)
    return f"no candidate has passed the evaluator yet (of {len(search.evaluations)} evaluated)"


def _interval(t: RegimeTiming) -> tuple[float, float, float]:
    return (t.speedup, t.ci_low, t.ci_high)


def _timed(result: EvalResult) -> bool:
    return any(c.timings for c in result.cases)


def _params(case: CaseResult) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.params.items())


def _status(case: CaseResult) -> str:
    if case.skipped:
        return f"skipped ({case.skipped})"
    return "ok" if case.passed else "FAILED"


def _x(t: RegimeTiming) -> str:
    return f"{t.speedup:.3f}x [{t.ci_low:.3f}, {t.ci_high:.3f}]"


def _error(value: float | None) -> str:
    return "-" if value is None else f"{value:.2e}"


@dataclass(frozen=True)
class CompileBaseline:
    """What the store says about torch.compile: the judged Inductor seed to compare with, or why none."""

    program: Program | None
    note: str

    def timing(self, case: str, regime: str) -> RegimeTiming | None:
        result = self.program.result if self.program is not None else None
        found = next((c for c in result.cases if c.name == case), None) if result else None
        return found.timings.get(regime) if found else None


def compile_baseline(search: SearchData, winner: Program) -> CompileBaseline:
    seeds = [p for p in search.programs if p.operator == INDUCTOR]
    usable = [p for p in seeds if p.result and p.correct and _timed(p.result)]
    if any(p.id == winner.id for p in seeds):
        return CompileBaseline(None, "The winner is the Inductor seed itself (torch.compile's code).")
    if usable:
        return CompileBaseline(
            max(usable, key=lambda p: p.score),
            "torch.compile: the Triton code Inductor generated for the reference, made standalone and"
            " judged in this run like any candidate (same evaluator, cases and device). 'vs compile' is"
            " the winner's speedup over the Inductor seed's, each measured against the reference in its"
            " own evaluation (a ratio of two estimates: no interval is claimed for it).",
        )
    judged = [p for p in seeds if p.result is not None]
    failed = next((p.result for p in judged if p.result is not None and not p.correct), None)
    if failed is not None:
        why = f"the Inductor seed failed at {failed.stage.value} ({_first_line(failed.reason)})"
    elif judged:
        why = "the Inductor seed passed, but this backend does not time"
    elif seeds:
        why = "the Inductor seed was never judged (the run stopped first)"
    else:
        why = _no_inductor_reason(search)
    return CompileBaseline(None, f"{NOT_MEASURED}: {why}.")


def _no_inductor_reason(search: SearchData) -> str:
    calls = [m for m in search.mutations if m.get("operator") == INDUCTOR]
    if calls:
        error = _first_line(str(calls[-1].get("error") or calls[-1].get("outcome")))
        return f"the Inductor seed produced no candidate ({error})"
    if (search.config.get("mutation") or {}).get("inductor_seed") is False:
        return "the run was started without the Inductor seed (--no-inductor-seed)"
    return "this run's store holds no Inductor seed"


def speedups_section(search: SearchData | NoSearch) -> Section:
    title = "Winner's speedups per case"
    if isinstance(search, NoSearch):
        return Section.absent("speedups", title, search.reason)
    winner = search.best
    if winner is None or winner.result is None:
        return Section.absent("speedups", title, _no_winner(search))
    result = winner.result
    inductor = compile_baseline(search, winner)
    header: tuple[str, ...] = (
        "case",
        "params",
        "result",
        "max abs err",
        "graph speedup [95% CI]",
        "wall speedup [95% CI]",
    )
    header += ("vs compile (graph)", "vs compile (wall)")
    rows, plotted = [], []
    for case in result.cases:
        row = [case.name + (" (hidden)" if case.hidden else ""), _params(case), _status(case)]
        row.append(_error(case.max_abs_error))
        row += [_x(case.timings[r]) if r in case.timings else "-" for r in REGIMES]
        for regime in REGIMES:
            mine, theirs = case.timings.get(regime), inductor.timing(case.name, regime)
            ratio = mine.speedup / theirs.speedup if mine and theirs and theirs.speedup > 0 else None
            row.append(f"{ratio:.3f}x" if ratio else "-")
        rows.append(tuple(row))
        if case.timings:
            plotted.append(
                CaseSpeedups(
                    case.name,
                    {r: _interval(t) for r, t in case.timings.items() if r in REGIMES},
                    {r: _interval(t) for r in REGIMES if (t := inductor.timing(case.name, r)) is not None},
                )
            )
    facts = Facts(
        (
            ("winner", f"{winner.id} ({winner.operator})"),
            ("score", f"{result.score:.4f} (the {result.regime} regime's aggregate speedup)"),
            (
                "aggregate speedup",
                f"{result.speedup:.3f}x"
                + (f" [{result.speedup_ci[0]:.3f}, {result.speedup_ci[1]:.3f}]" if result.speedup_ci else "")
                if result.speedup is not None
                else "not measured",
            ),
            ("evaluator", f"{result.backend} on {result.hardware.device or '?'}"),
        )
    )
    blocks: list = [facts]
    if plotted:
        blocks.append(
            Figure(speedups_svg(plotted), "Per case and regime: speedup over the reference, 95 % CI.")
        )
    else:
        blocks.append(
            Note(
                f"No speed was measured: the {result.backend} backend"
                + (
                    " checks correctness and never times"
                    if result.backend == "triton-interpret"
                    else " recorded no timings for the winner"
                )
                + "; the cases below show correctness only.",
                "warn",
            )
        )
    blocks.append(Note(inductor.note, "warn" if inductor.note.startswith(NOT_MEASURED) else "info"))
    blocks.append(Table(header, tuple(rows), numeric=(3, 4, 5, 6, 7)))
    return Section("speedups", title, tuple(blocks))


def _model(operator: str) -> str:
    family, _, rest = operator.partition(":")
    return rest if family == "llm" else ""


def _changed(before: str, after: str) -> tuple[int, int]:
    text = diff_text(before, after, "a", "b")
    lines = [ln for ln in text.splitlines() if not ln.startswith(("+++", "---"))]
    return sum(ln.startswith("+") for ln in lines), sum(ln.startswith("-") for ln in lines)


def lineage_section(search: SearchData | NoSearch) -> Section:
    title = "Winner's lineage"
    if isinstance(search, NoSearch):
        return Section.absent("lineage", title, search.reason)
    if search.best is None:
        return Section.absent("lineage", title, _no_winner(search))
    chain = lineage(search, search.best)
    rows, steps = [], []
    for i, program in enumerate(chain):
        parent = search.by_id.get(program.parent_id or "")
        r = program.result
        outcome = (
            "-" if r is None else ("passed" if r.passed and not r.hacks else f"failed at {r.stage.value}")
        )
        added, removed = _changed(parent.source, program.source) if parent else (0, 0)
        rows.append(
            (
                str(i),
                program.id,
                program.operator,
                _model(program.operator) or "-",
                f"{program.score:.4f}",
                outcome,
                f"+{added} -{removed}" if parent else "first candidate",
            )
        )
        steps.append(_step_details(search, i, program, parent, last=i == len(chain) - 1))
    table = Table(
        ("step", "program", "operator", "model", "score", "verdict", "diff to parent"),
        tuple(rows),
        numeric=(0, 4),
    )
    return Section("lineage", title, (table, *steps))


def _step_details(
    search: SearchData, i: int, program: Program, parent: Program | None, *, last: bool
) -> Details:
    call = search.mutation_of(program.id)
    facts = [
        ("operator", program.operator),
        ("island", str(program.island)),
        ("iteration", str(program.iteration)),
    ]
    if call:
        if call.get("mode"):
            facts.append(("parent chosen by", str(call["mode"])))
        inspirations = json.loads(call.get("inspiration_ids") or "[]")
        if inspirations:
            facts.append(("inspirations", ", ".join(inspirations)))
        tokens = int(call.get("prompt_tokens") or 0) + int(call.get("completion_tokens") or 0)
        if tokens:
            facts.append(
                ("tokens", f"{call.get('prompt_tokens')} prompt + {call.get('completion_tokens')} completion")
            )
        if call.get("duration_s"):
            facts.append(("operator time", duration(float(call["duration_s"]))))
    blocks: list = [Facts(tuple(facts))]
    if parent is None:
        blocks.append(Note("The first candidate of this line: it has no parent to differ from."))
    else:
        text = diff_text(parent.source, program.source, f"{parent.id} ({parent.operator})", program.id)
        blocks.append(Code(diff_html(text or "(no textual change)\n"), f"diff to its parent {parent.id}"))
    response = (call or {}).get("response")
    if response and _model(program.operator):
        blocks.append(Details("what the model answered", (Code(plain_html(response)),)))
    summary = f"step {i}: {program.id} · {program.operator} · score {program.score:.4f}"
    return Details(summary, tuple(blocks), open=last)


def code_section(search: SearchData | NoSearch) -> Section:
    title = "Winner's code"
    if isinstance(search, NoSearch):
        return Section.absent("code", title, search.reason)
    if search.best is None:
        return Section.absent("code", title, _no_winner(search))
    best = search.best
    where = search.run_dir / "best.py"
    facts = [("program", f"{best.id} ({best.operator})"), ("sha", best.sha)]
    if where.is_file():
        facts.append(("file", str(where)))
    return Section("code", title, (Facts(tuple(facts)), Code(python_html(best.source))))


def feedback_section(search: SearchData | NoSearch) -> Section:
    title = "Latest failures"
    if isinstance(search, NoSearch):
        return Section.absent("feedback", title, search.reason)
    if not search.evaluations:
        return Section.absent("feedback", title, NO_EVALUATIONS)
    failures = latest_failures(search, _FAILURES_SHOWN)
    if not failures:
        return Section(
            "feedback", title, (Note(f"None of the {len(search.evaluations)} evaluations failed."),)
        )
    blocks = [_failure_details(n, p, first=k == 0) for k, (n, p) in enumerate(failures)]
    return Section("feedback", title, tuple(blocks))


def _failure_details(number: int, program: Program, *, first: bool) -> Details:
    r = program.result
    assert r is not None
    verdict = "flagged by a hack check" if r.hacks else f"stopped at {r.stage.value}"
    blocks: list = [
        Facts(
            (
                ("program", f"{program.id} ({program.operator}), parent {program.parent_id or '-'}"),
                ("verdict", verdict),
                ("evaluator", f"{r.backend} on {r.hardware.device or '?'}, {r.duration_s:.1f} s"),
            )
        )
    ]
    if r.reason:
        blocks.append(Code(plain_html(r.reason), "reason"))
    cases = [c for c in r.cases if not c.passed or c.mismatch is not None]
    if cases:
        blocks.append(
            Table(
                (
                    "case",
                    "result",
                    "max abs err",
                    "max rel err",
                    "output",
                    "index",
                    "expected",
                    "actual",
                    "detail",
                ),
                tuple(
                    (
                        c.name,
                        _status(c),
                        _error(c.max_abs_error),
                        _error(c.max_rel_error),
                        c.mismatch.output if c.mismatch else "-",
                        str(c.mismatch.index) if c.mismatch else "-",
                        f"{c.mismatch.expected:.6g}" if c.mismatch else "-",
                        f"{c.mismatch.actual:.6g}" if c.mismatch else "-",
                        c.mismatch.detail if c.mismatch else "",
                    )
                    for c in cases
                ),
                caption="cases that did not match",
            )
        )
    if r.hacks:
        blocks.append(
            Table(
                ("#", "hack class", "detector", "evidence"),
                tuple((str(h.number), h.kind, h.detector, h.evidence) for h in r.hacks),
                caption="hack findings",
            )
        )
    if r.logs.strip():
        tail = r.logs[-_LOG_TAIL:]
        blocks.append(Details("worker log (tail)", (Code(plain_html(tail)),)))
    summary = f"evaluation #{number} · {program.id} · {verdict}: {_first_line(r.reason) or '-'}"
    return Details(summary, tuple(blocks), open=first)


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:200]
