"""The sections of a `kernelbot target` run: the stage timeline, the related tests before and after the
change, the end-to-end benchmark before and after with the delta's interval, and the PR bundle's body.

Numbers are shown as verify.json and the bundle hold them (nothing is recomputed); each section says which
file or stage is missing when there is nothing to show."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kernelbot.report.blocks import Code, Details, Facts, Figure, Html, Note, Section, Table
from kernelbot.report.highlight import diff_html
from kernelbot.report.markdown import render_markdown, split_marker
from kernelbot.report.search_sections import duration, when
from kernelbot.report.target_data import TargetData
from kernelbot.report.target_plots import e2e_svg, timeline_svg
from kernelbot.target import run_dir as layout

_OUTCOME_CHARS = 160


def target_facts(t: TargetData) -> list[tuple[str, str]]:
    if t.state.missing:
        return [("target run", t.state.missing)]
    repo = t.repo
    facts = [
        ("target run", f"profile {t.profile}, function {t.function}"),
        ("repository", f"{repo.get('source', '?')} at {repo.get('path', '?')}"),
        (
            "base commit",
            str(repo.get("base_commit", "?")) + (f" ({repo['branch']})" if repo.get("branch") else ""),
        ),
        ("stages", ", ".join(f"{s.name} {s.status}" for s in t.stages)),
    ]
    pr = t.stage("propose").outcome.get("pr")
    if isinstance(pr, dict):
        facts.append(("pull request", f"{pr.get('action', '?')}: {pr.get('url') or pr.get('reason') or '-'}"))
    return facts


def _outcome_text(outcome: Mapping[str, object]) -> str:
    text = ", ".join(f"{k}={v}" for k, v in outcome.items() if not isinstance(v, (dict, list)))
    return text if len(text) <= _OUTCOME_CHARS else text[: _OUTCOME_CHARS - 1] + "…"


def timeline_section(t: TargetData, last_seen: float | None = None) -> Section:
    """`last_seen`: the latest sign of life of the run (its search's last evaluation), where an unfinished
    stage's bar ends."""
    title = "Stage timeline"
    if t.state.missing:
        return Section.absent("timeline", title, t.state.missing)
    started = [s for s in t.stages if s.started_at is not None]
    if not started:
        return Section.absent("timeline", title, "target.toml records no stage that has started")
    starts = [s.started_at for s in started if s.started_at is not None]
    created = (t.state.value or {}).get("created_at")
    origin = float(created) if isinstance(created, (int, float)) else min(starts)
    ends = [s.finished_at or s.started_at for s in started]
    now = max([e for e in ends if e is not None] + ([last_seen] if last_seen else []))
    rows = tuple(
        (
            s.name,
            s.status,
            when(s.started_at),
            duration(s.finished_at - s.started_at) if s.finished_at and s.started_at else "-",
            s.error or _outcome_text(s.outcome),
        )
        for s in t.stages
    )
    blocks: list = [
        Figure(
            timeline_svg(list(t.stages), origin, now), "Each stage from its start to its end (target.toml)."
        ),
        Table(("stage", "status", "started", "took", "outcome or error"), rows),
    ]
    running = [s.name for s in t.stages if s.status == "running"]
    if running:
        blocks.append(
            Note(
                f"target.toml last recorded {', '.join(running)} as running: the run is still going, or it"
                " was stopped there (a re-run continues at that stage).",
                "warn",
            )
        )
    return Section("timeline", title, tuple(blocks))


def _side(name: str, run: Mapping[str, Any]) -> tuple[str, ...]:
    return (
        name,
        str(run.get("passed", "-")),
        str(run.get("failed", "-")),
        str(run.get("skipped", "-")),
        str(run.get("exit_code", "-")),
        f"{float(run.get('duration_s') or 0):.1f} s",
        str(run.get("note") or ""),
    )


def tests_section(t: TargetData) -> Section:
    title = "Tests before and after"
    if t.verify.missing:
        return Section.absent("tests", title, t.verify.missing)
    tests = (t.verify.value or {}).get("tests")
    if not isinstance(tests, dict):
        return Section.absent("tests", title, "verify.json holds no test results")
    verdict = (t.verify.value or {}).get("refusal") or "no test that passed before the change fails after it"
    blocks: list = [
        Facts(
            (
                ("command", " ".join(str(a) for a in tests.get("command", []))),
                ("test files", ", ".join(tests.get("files", [])) or "-"),
                ("verdict", verdict),
            )
        ),
        Table(
            ("tree", "passed", "failed", "skipped", "exit code", "took", "note"),
            (_side("base", tests.get("before") or {}), _side("change", tests.get("after") or {})),
            numeric=(1, 2, 3, 4, 5),
        ),
    ]
    for key, label, tone in (
        ("new_failures", "new failures (fail only with the change)", "warn"),
        ("preexisting_failures", "pre-existing failures (fail on both trees)", "info"),
        ("fixed", "fixed by the change (failed only before)", "info"),
    ):
        ids = tests.get(key) or []
        if ids:
            blocks.append(Note(f"{label}: {', '.join(ids)}", tone))
    return Section("tests", title, tuple(blocks))


def e2e_section(t: TargetData) -> Section:
    title = "End-to-end benchmark before and after"
    if t.verify.missing:
        return Section.absent("e2e", title, t.verify.missing)
    e2e = (t.verify.value or {}).get("e2e")
    if not isinstance(e2e, dict):
        return Section.absent("e2e", title, "verify.json holds no end-to-end benchmark")
    if not e2e.get("measured"):
        return Section.absent("e2e", title, f"the benchmark was not measured: {e2e.get('reason') or '?'}")
    unit = str(e2e.get("unit") or "")
    metric = str(e2e.get("metric") or "metric")
    means, stdev, cv = (e2e.get(k) or {} for k in ("means", "stdev", "cv"))
    rows = tuple(
        (
            side,
            str(len(e2e.get(key) or [])),
            _num(means.get(key)),
            _num(stdev.get(key)),
            f"{float(cv[key]) * 100:.2f} %" if isinstance(cv.get(key), (int, float)) else "-",
        )
        for side, key in (("base", "before"), ("change", "after"))
    )
    ci = e2e.get("ci_pct")
    delta = e2e.get("delta_pct")
    confidence = e2e.get("confidence")
    better = "higher" if e2e.get("higher_is_better", True) else "lower"
    delta_text = f"{delta:+.2f} %" if isinstance(delta, (int, float)) else "-"
    if ci:
        level = f"{float(confidence) * 100:.0f} % CI" if isinstance(confidence, (int, float)) else "CI"
        delta_text += f" ({level} {ci[0]:+.2f} % .. {ci[1]:+.2f} %)"
    facts = Facts(
        (
            ("command", " ".join(str(a) for a in e2e.get("command", []))),
            ("metric", f"{metric}" + (f" in {unit}" if unit else "") + f", {better} is better"),
            ("change of the mean", delta_text),
            ("method", str(e2e.get("method") or "-")),
            ("run order", " ".join(e2e.get("order") or []) or "-"),
        )
    )
    figure = Figure(
        e2e_svg(list(e2e.get("before") or []), list(e2e.get("after") or []), means, metric, unit),
        "Every run of the benchmark on each tree; the bar is that side's mean.",
    )
    table = Table(("tree", "runs", "mean", "stdev", "CV"), rows, numeric=(1, 2, 3, 4))
    return Section(
        "e2e", title, (facts, figure, table, Note(_verdict(ci, e2e.get("higher_is_better", True))))
    )


def _verdict(ci: Any, higher_is_better: bool) -> str:
    if not ci:
        return "No interval: too few runs to tell the change from noise."
    low, high = float(ci[0]), float(ci[1])
    if low <= 0 <= high:
        return "The interval includes zero: this benchmark cannot tell the change from noise."
    improved = low > 0 if higher_is_better else high < 0
    return (
        "The whole interval lies on the better side of zero."
        if improved
        else ("The whole interval lies on the worse side of zero: the change made this benchmark slower.")
    )


def _num(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, (int, float)) else "-"


def body_section(t: TargetData) -> Section:
    title = "Pull request body"
    if t.body.missing:
        return Section.absent("body", title, t.body.missing)
    text, marker = split_marker(str(t.body.value))
    blocks: list = [Facts((("file", str(layout.bundle_body_path(t.run_dir))),))]
    if marker:
        try:
            fields = json.loads(marker)
            items = (
                tuple((str(k), str(v)) for k, v in sorted(fields.items())) if isinstance(fields, dict) else ()
            )
        except json.JSONDecodeError:
            items = (("marker", marker),)
        blocks.append(Details("the hidden kernelbot marker", (Facts(items),)))
    else:
        blocks.append(Note("body.md has no kernelbot marker: the forge could not recognise this PR.", "warn"))
    blocks.append(Html(render_markdown(text)))
    patch = layout.read_bundle_patch(t.run_dir)
    if patch is not None:
        name = layout.bundle_patch_path(t.run_dir).name
        blocks.append(Details(f"{name} ({len(patch.encode())} bytes)", (Code(diff_html(patch)),)))
    return Section("body", title, tuple(blocks))


def target_sections(t: TargetData) -> list[Section]:
    return [timeline_section(t), tests_section(t), e2e_section(t), body_section(t)]
