"""evolution.search as a library call, without a command in between: a run started and resumed from a task
directory and SearchOverrides, its SearchSummary returned (the record summary.json is written from), a
finished run summed up again from its store, and the overrides checked as they are applied. The controller
and store run for real against the fake executor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from search_fakes import BumpMutator, FakeExecutor, make_tiny_task, program_source

from evaluators.errors import ConfigError, RunStateError
from evolution.config import SearchConfig
from evolution.operators import OperatorSet
from evolution.search import SearchOverrides, finished_summary, has_run, parse_duration, run_search
from evolution.summary import SUMMARY_JSON, SearchSummary


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evolution.search.make_executor", lambda config, eval_config: FakeExecutor())
    monkeypatch.setattr(
        "evolution.search.build_operators",
        lambda config, device: OperatorSet.of([BumpMutator()], config.mutation.weights),
    )


@pytest.fixture
def task(tmp_path: Path) -> Path:
    return make_tiny_task(tmp_path / "task", [program_source(1.0)])


LOCAL = SearchOverrides(backend="triton-interpret", workers="local")


def test_a_run_returns_its_summary_and_resumes(tmp_path: Path, task: Path, fakes: None) -> None:
    run = tmp_path / "run"
    first = run_search(task, run, SearchOverrides(iterations=2, backend="triton-interpret"))
    assert isinstance(first, SearchSummary) and has_run(run)
    assert first.iterations == 2 and (first.stop_reason or "").startswith("iterations")
    assert first.best is not None and first.best.score > 1.0 and Path(first.best.candidate_file).is_file()
    assert first.to_dict() == json.loads((run / SUMMARY_JSON).read_text())  # the same record, as written

    with pytest.raises(RunStateError, match="already"):
        run_search(task, run, SearchOverrides(iterations=3))  # a fresh run never overwrites one
    again = run_search(task, run, SearchOverrides(iterations=4), resume=True)
    assert again.iterations == 4 and again.evaluations > first.evaluations  # the limit counts the whole run
    assert again.best is not None and again.best.score >= first.best.score


def test_resume_needs_a_run_of_the_same_task(tmp_path: Path, task: Path, fakes: None) -> None:
    with pytest.raises(RunStateError, match="holds no run to resume"):
        run_search(task, tmp_path / "none", LOCAL, resume=True)
    run_search(task, tmp_path / "run", SearchOverrides(iterations=1, backend="triton-interpret"))
    other = make_tiny_task(tmp_path / "other", [program_source(1.0)])
    toml = other / "task.toml"
    toml.write_text(toml.read_text().replace('name = "tiny_scale"', 'name = "other"'))
    with pytest.raises(RunStateError, match="is a run of task"):
        run_search(other, tmp_path / "run", LOCAL, resume=True)


def test_a_finished_run_is_summed_up_from_its_store(tmp_path: Path, task: Path, fakes: None) -> None:
    run = tmp_path / "run"
    ended = run_search(task, run, SearchOverrides(iterations=2, backend="triton-interpret"))
    (run / SUMMARY_JSON).unlink()  # the store is the record; the file is written again from it
    read = finished_summary(run)
    assert read is not None and read.best is not None and ended.best is not None
    assert read.best.program_id == ended.best.program_id and read.stop_reason == ended.stop_reason
    assert read.elapsed_s is None and "elapsed_s" not in read.to_dict()  # not measured when read back
    assert json.loads((run / SUMMARY_JSON).read_text()) == read.to_dict()


def test_overrides_change_only_what_they_name() -> None:
    base = SearchConfig()
    assert SearchOverrides().apply(base) == base
    changed = SearchOverrides(
        iterations=7, time_limit="30m", devices="0,2", fusion_seed=False, seed=5, seed_files=(Path("a.py"),)
    ).apply(base)
    assert changed.stop.iterations == 7 and changed.stop.time_limit_s == 1800.0
    assert changed.executor.devices == (0, 2) and changed.mutation.fusion_seed is False
    assert changed.seed == 5 and changed.mutation.seed_files == ("a.py",)
    assert changed.archive == base.archive and changed.sampling == base.sampling
    llm = SearchOverrides(llm=("m@http://127.0.0.1:9/v1#2",), api_key_env="MY_KEY").apply(base)
    (endpoint,) = llm.mutation.llm
    assert (endpoint.model, endpoint.weight, endpoint.api_key_env) == ("m", 2.0, "MY_KEY")


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        (SearchOverrides(time_limit="soon"), "--time-limit 'soon'"),
        (SearchOverrides(devices="0,x"), "--devices '0,x'"),
        (SearchOverrides(devices="-1"), "--devices '-1'"),
        (SearchOverrides(llm=("no-url",)), "--llm 'no-url'"),
    ],
)
def test_a_bad_override_is_one_config_error(overrides: SearchOverrides, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        overrides.apply(SearchConfig())
    assert parse_duration("90s") == 90.0 and parse_duration("2h") == 7200.0
