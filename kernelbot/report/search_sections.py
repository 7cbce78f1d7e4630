"""The sections about the search as a whole: the overview, best-score growth, evaluations per minute, and
failures by stage and reason over time. One function per section; each returns a Section that says what is
missing, and why, when the store has nothing for it."""

from __future__ import annotations

import time

from evaluators.result import Hardware
from kernelbot.report.blocks import Facts, Figure, Note, Section, Table
from kernelbot.report.search_data import NoSearch, SearchData
from kernelbot.report.search_plots import failures_svg, growth_svg, rate_svg
from kernelbot.report.series import (
    FAILURE_KINDS,
    buckets,
    failure_reasons,
    growth,
    operator_misses,
    outcome_counts,
    programs_by_operator,
)

NO_EVALUATIONS = "no candidate has been evaluated yet"


def when(t: float | None) -> str:
    if not t:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.2g} s" if seconds < 1 else f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _latest_hardware(data: SearchData) -> Hardware | None:
    for p in reversed(data.programs):
        if p.result is not None and p.result.hardware.backend:
            return p.result.hardware
    return None


def empty_reason(data: SearchData) -> str:
    why = NO_EVALUATIONS
    if data.pending:
        why += f" ({data.pending} candidate(s) recorded and waiting to be judged)"
    return why + ("" if data.status.finished else f" (the search is {data.status.kind}: see the overview)")


def search_facts(data: SearchData) -> list[tuple[str, str]]:
    outcomes = outcome_counts(data)
    last = data.evaluations[-1]["finished_at"] if data.evaluations else None
    limit = (data.config.get("stop") or {}).get("iterations")
    iterations = sum(1 for m in data.mutations if m.get("phase") == "evolve")
    prompt = sum(int(m.get("prompt_tokens") or 0) for m in data.mutations)
    completion = sum(int(m.get("completion_tokens") or 0) for m in data.mutations)
    cost = sum(float(m.get("cost_usd") or 0.0) for m in data.mutations)
    facts = [
        ("task", f"{data.task} ({data.regime} regime)" if data.regime else data.task),
        ("status", f"{data.status.kind}: {data.status.detail}"),
        ("started", when(data.created_at)),
        (
            "last evaluation",
            f"{when(last)} ({duration(last - data.created_at)} after the start)" if last else "-",
        ),
        (
            "evaluations",
            f"{len(data.evaluations)}: "
            + (", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "none")
            + (f"; {data.pending} waiting to be judged" if data.pending else ""),
        ),
        ("iterations", f"{iterations}" + (f" of {limit}" if limit else "")),
        ("programs by operator", ", ".join(f"{k} {v}" for k, v in programs_by_operator(data).items()) or "-"),
        ("islands", str(data.islands)),
    ]
    hw = _latest_hardware(data)
    if hw is not None:
        device = ", ".join(x for x in (hw.device, hw.driver and f"driver {hw.driver}") if x)
        facts.append(("evaluator", f"{hw.backend}" + (f" on {device}" if device else "")))
        facts.append(
            ("software", f"torch {hw.torch or '?'}, triton {hw.triton or '?'}, python {hw.python or '?'}")
        )
    models = data.models()
    facts.append(("LLMs", ", ".join(models) if models else "none (LLM-free operators only)"))
    if prompt or completion:
        facts.append(
            ("tokens", f"{prompt} prompt + {completion} completion" + (f", ${cost:.4f}" if cost else ""))
        )
    best = data.best
    facts.append(
        (
            "best",
            f"{best.id} ({best.operator}), score {best.score:.4f}" if best else "no correct candidate yet",
        )
    )
    return facts


def overview_section(search: SearchData | NoSearch, extra: list[tuple[str, str]]) -> Section:
    facts = list(extra)
    if isinstance(search, NoSearch):
        return Section("overview", "Overview", (Facts(tuple(facts)), Note(search.reason, "missing")))
    facts += search_facts(search)
    blocks: list = [Facts(tuple(facts))]
    if not search.status.finished:
        blocks.append(Note(f"This search is {search.status.kind}: {search.status.detail}.", "warn"))
    return Section("overview", "Overview", tuple(blocks))


def growth_section(search: SearchData | NoSearch) -> Section:
    title = "Best score over time"
    if isinstance(search, NoSearch):
        return Section.absent("growth", title, search.reason)
    if not search.evaluations:
        return Section.absent("growth", title, empty_reason(search))
    g = growth(search)
    if not g.overall:
        return Section.absent(
            "growth",
            title,
            f"none of the {len(search.evaluations)} evaluated candidates is correct and unflagged, "
            "so there is no best score to plot yet",
        )
    blocks: list = [
        Figure(
            growth_svg(g),
            "Best score of correct, unflagged candidates (thick: overall; thin: each island, including "
            "migrants) and the number of evaluations done (dashed, right axis).",
        )
    ]
    hw = _latest_hardware(search)
    if hw is not None and hw.backend == "triton-interpret":
        blocks.append(
            Note(
                "The interpreter backend checks correctness and never times: every correct candidate"
                " scores 1."
            )
        )
    return Section("growth", title, tuple(blocks))


def rate_section(search: SearchData | NoSearch) -> Section:
    title = "Evaluations per minute"
    if isinstance(search, NoSearch):
        return Section.absent("rate", title, search.reason)
    if not search.evaluations:
        return Section.absent("rate", title, empty_reason(search))
    b = buckets(search)
    span = search.elapsed_s(search.evaluations[-1]["finished_at"])
    average = 60.0 * len(search.evaluations) / span if span > 0 else 0.0
    return Section(
        "rate",
        title,
        (
            Figure(
                rate_svg(b), "Evaluations finished per minute, in equal time buckets from the run's start."
            ),
            Note(
                f"{len(search.evaluations)} evaluations in {duration(span)}: {average:.1f} per minute on"
                " average (pauses between a kill and its resume count as time)."
            ),
        ),
    )


def failures_section(search: SearchData | NoSearch) -> Section:
    title = "Failures by stage and reason"
    if isinstance(search, NoSearch):
        return Section.absent("failures", title, search.reason)
    misses = operator_misses(search)
    if not search.evaluations and not misses:
        return Section.absent("failures", title, empty_reason(search))
    counts = outcome_counts(search)
    failed = sum(v for k, v in counts.items() if k != "passed")
    blocks: list = []
    if not failed:
        blocks.append(Note(f"None of the {len(search.evaluations)} evaluations failed."))
    else:
        reasons = failure_reasons(search)
        rows = tuple(
            (r.stage, r.example, str(r.count), f"#{r.first_evaluation}", f"#{r.last_evaluation}")
            for r in reasons
        )
        blocks += [
            Figure(
                failures_svg(buckets(search), reasons),
                "Top: failed evaluations per time bucket by the stage that stopped them ('flagged': a hack"
                " check). Bottom: how often each of the most common reasons had been seen, over time.",
            ),
            Table(
                FAILURE_KINDS,
                (tuple(str(counts.get(k, 0)) for k in FAILURE_KINDS),),
                caption="failed evaluations by stage",
                numeric=tuple(range(len(FAILURE_KINDS))),
            ),
            Table(
                ("stage", "reason (latest of its kind; numbers vary)", "count", "first", "last"),
                rows,
                caption="failed evaluations by reason (first and last: evaluation number)",
                numeric=(2, 3, 4),
            ),
        ]
    if misses:
        blocks.append(
            Table(
                ("operator", "outcome", "reason (latest of its kind)", "count"),
                tuple((m.operator, m.outcome, m.example, str(m.count)) for m in misses),
                caption="operator calls that gave nothing to judge",
                numeric=(3,),
            )
        )
    return Section("failures", title, tuple(blocks))
