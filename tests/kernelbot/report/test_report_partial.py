"""Runs with parts missing render with what exists: an empty run, a run SIGKILLed mid-search, a target run
stopped during its search. Bad input is one line and exit 1."""

from __future__ import annotations

import sqlite3

import pytest
from html_check import EVOLVE_SECTIONS, TARGET_SECTIONS, figures, missing, parse_strict, sections, text
from report_runs import make_report

from kernelbot import exit_codes
from kernelbot.cli import main


def test_an_empty_run_renders_and_says_what_is_missing(empty_run) -> None:
    found = sections(parse_strict(make_report(empty_run)))
    assert tuple(found) == EVOLVE_SECTIONS
    assert not missing(found["overview"]) and "evaluations 0: none" in text(found["overview"])
    assert "stopped" in text(found["overview"])
    for name in EVOLVE_SECTIONS[1:]:
        assert missing(found[name]), name
        assert "no candidate has been evaluated yet" in text(found[name]), name


@pytest.mark.slow
def test_a_killed_run_renders_what_it_judged(interpreter_runs) -> None:
    found = sections(parse_strict(make_report(interpreter_runs.killed)))
    overview = text(found["overview"])
    assert "stopped: the search stopped without finishing" in overview and "--resume" in overview
    assert "waiting to be judged" in overview
    assert not missing(found["growth"]) and len(figures(found["growth"])) == 1
    assert not missing(found["speedups"]) and not missing(found["code"])


@pytest.mark.slow
def test_a_target_run_stopped_in_its_search(stopped_target_run) -> None:
    found = sections(parse_strict(make_report(stopped_target_run)))
    assert set(found) == {*EVOLVE_SECTIONS, *TARGET_SECTIONS}
    timeline = text(found["timeline"])
    assert "evolve running" in timeline and "integrate not started" in timeline
    assert len(figures(found["timeline"])) == 1
    assert "same `kernelbot target` command" in text(found["overview"])
    assert not missing(found["growth"])
    for name, why in (
        ("tests", "verify.json is not there: the verify stage has not run yet"),
        ("e2e", "verify.json is not there: the verify stage has not run yet"),
        ("body", "pr/body.md is not there: the propose stage has not run yet"),
    ):
        assert missing(found[name]) and why in text(found[name]), name


def test_a_target_run_before_its_search(tmp_path) -> None:
    from report_runs import stage, write_target_state

    run = tmp_path / "run"
    run.mkdir()
    write_target_state(run, {"extract": stage("failed", 1.0e9, 1.0e9 + 2)}, 1.0e9)
    found = sections(parse_strict(make_report(run)))
    assert "the search has not started" in text(found["overview"])
    assert missing(found["growth"]) and "run.sqlite" in text(found["growth"])
    assert "extract failed" in text(found["timeline"])


@pytest.mark.parametrize("problem", ["nothing", "no-run", "bad-store", "unwritable"])
def test_bad_input_is_one_line_and_exit_1(tmp_path, empty_run, capsys, problem) -> None:
    run, out = tmp_path / "run", None
    if problem == "no-run":
        run.mkdir()
    elif problem == "bad-store":
        run.mkdir()
        with sqlite3.connect(run / "run.sqlite") as conn:
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute("INSERT INTO meta VALUES ('schema_version', '999')")
    elif problem == "unwritable":
        run = empty_run
        (tmp_path / "a-file").write_text("")
        out = tmp_path / "a-file" / "report.html"
    args = ["report", str(run)] + (["--out", str(out)] if out else [])
    assert main(args) == exit_codes.USER_ERROR
    err = " ".join(capsys.readouterr().err.split())
    expected = {
        "nothing": "is not a directory holding a kernelbot run",
        "no-run": "holds no kernelbot run",
        "bad-store": "schema 999",
        "unwritable": "cannot write the report",
    }[problem]
    assert expected in err and "Traceback" not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("inductor", ["failed", "winner", "pending"])
def test_what_the_report_says_about_torch_compile(tmp_path, inductor) -> None:
    from search_fakes import fake_result, make_tiny_task, program_source

    from evaluators.task import load_task
    from evolution.config import SearchConfig
    from evolution.dedup import candidate_sha
    from evolution.redact import Redactor
    from evolution.store import RunStore
    from evolution.types import Program

    task = load_task(make_tiny_task(tmp_path / "task"))
    run = tmp_path / "run"
    sources = {
        "seed:file": program_source(1.0 if inductor == "winner" else 1.5),
        "seed:inductor": program_source(0, fail="compile") if inductor == "failed" else program_source(1.2),
    }
    with RunStore.create(run, task, SearchConfig(), Redactor()) as store:
        for i, (operator, source) in enumerate(sources.items()):
            program = Program(f"p{i}", source, candidate_sha(source, task.entry), None, operator, 0, -1)
            store.add_pending(program)
            if not (inductor == "pending" and operator == "seed:inductor"):
                store.record_evaluation(program.id, fake_result(task.name, task.entry, source))
    speedups = text(sections(parse_strict(make_report(run)))["speedups"])
    expected = {
        "failed": "not measured: the Inductor seed failed at compile (fake failure at compile)",
        "winner": "The winner is the Inductor seed itself",
        "pending": "torch.compile was not measured: the Inductor seed was never judged",
    }[inductor]
    assert expected in speedups


def test_a_search_being_driven_is_reported_as_running(tmp_path, empty_run) -> None:
    import os
    import shutil

    run = shutil.copytree(empty_run, tmp_path / "run")
    (run / "run.lock").write_text(str(os.getpid()))  # the lock's holder is alive: this process
    overview = text(sections(parse_strict(make_report(run)))["overview"])
    assert f"running: a kernelbot process (pid {os.getpid()}) is driving this search now" in overview


@pytest.mark.parametrize("opened", [True, False])
def test_open_shows_the_page_in_a_browser(tmp_path, empty_run, monkeypatch, capsys, opened) -> None:
    asked: list[str] = []
    monkeypatch.setattr("kernelbot.cli.report.webbrowser.open", lambda url: asked.append(url) or opened)
    out = tmp_path / "page.html"
    assert main(["report", str(empty_run), "--out", str(out), "--open"]) == exit_codes.OK
    assert asked == [out.resolve().as_uri()]
    err = " ".join(capsys.readouterr().err.split())
    assert ("no web browser could be started here" in err) is not opened
