"""evolution's errors refine the one family of evaluators.errors (evolution may import the floor package,
never kernelbot): each is caught wherever its base is, and only the CLI edge turns them into exit codes (bad
input: 1 and one line; anything else is a kernelbot bug: 3 and a crash report)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluators import errors as floor
from evolution.errors import RunStoreError, SearchConfigError, SearchError
from kernelbot import errors as orchestration
from kernelbot import exit_codes
from kernelbot.cli import main


def test_the_search_errors_refine_the_floor_packages_bases() -> None:
    assert issubclass(SearchConfigError, floor.ConfigError)
    assert issubclass(RunStoreError, floor.RunStateError)
    assert issubclass(SearchError, floor.KernelbotError)


def test_kernelbot_reexports_the_floor_family_instead_of_repeating_it() -> None:
    for name in ("KernelbotError", "ConfigError", "RunStateError", "TaskError", "CandidateError"):
        assert getattr(orchestration, name) is getattr(floor, name)


@pytest.mark.parametrize(
    ("raised", "code"),
    [
        (SearchConfigError("--llm 'x': expected URL[,key=value...]"), exit_codes.USER_ERROR),
        (RunStoreError("runs/a is locked by process 1"), exit_codes.USER_ERROR),
        (SearchError("no program to mutate for task 'a'"), exit_codes.USER_ERROR),
        (RuntimeError("a bug"), exit_codes.CRASH),
    ],
)
def test_the_cli_edge_turns_them_into_exit_codes(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    raised: Exception,
    code: int,
) -> None:
    def run(*args: object, **kwargs: object) -> int:
        raise raised

    monkeypatch.setattr("kernelbot.cli.evolve.run", run)
    assert main(["evolve", str(tmp_path)]) == code
    err = capsys.readouterr().err.strip()
    if code == exit_codes.USER_ERROR:
        assert str(raised) in err and len(err.splitlines()) == 1
    else:
        assert "a kernelbot bug" in err and "crash" in err
