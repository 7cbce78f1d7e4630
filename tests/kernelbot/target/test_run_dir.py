"""kernelbot.target.run_dir: every file of RUN read back as it was written, atomically, and a file that
cannot be read is a RunStateError that says which and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelbot.confirm.report import ColumnReport, ConfirmReport
from kernelbot.errors import RunStateError
from kernelbot.target import run_dir
from kernelbot.verify.benchmark import E2EOutcome
from kernelbot.verify.repo_tests import TestRun
from kernelbot.verify.report import TestComparison, VerifyReport


def _confirm() -> ConfirmReport:
    column = ColumnReport("eager", "eager", "eager PyTorch", available=True, processes=3)
    rule = {"min_processes": 3, "max_processes": 8, "confidence": 0.975}
    return ConfirmReport(True, "", "triton-cuda", "H200", "abc", ("graph",), rule, (column,), wall_s=12.5)


def _verify() -> VerifyReport:
    before = TestRun(("pytest",), 0, 3, 0, 0, (), 1.0)
    after = TestRun(("pytest",), 1, 3, 1, 0, ("tests/test_x.py::test_y",), 1.5)
    tests = TestComparison.of(("pytest",), ("tests/test_x.py",), before, after)
    return VerifyReport(tests, E2EOutcome(False, "no GPU on this machine"))


def test_confirm_and_verify_round_trip(tmp_path: Path) -> None:
    assert run_dir.write_confirm(tmp_path, _confirm()) == run_dir.CONFIRM_FILE
    assert run_dir.read_confirm(tmp_path) == _confirm()
    assert run_dir.write_verify(tmp_path, _verify()) == run_dir.VERIFY_FILE
    back = run_dir.read_verify(tmp_path)
    assert back == _verify() and not back.ok and "tests/test_x.py::test_y" in back.refusal
    assert run_dir.read_verify_table(tmp_path)["ok"] is False
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_unreadable_files_say_which_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(RunStateError, match="holds no kernelbot target run"):
        run_dir.read_state_table(tmp_path)
    (tmp_path / run_dir.CONFIRM_FILE).write_text("{not json")
    with pytest.raises(RunStateError, match="run the confirm stage again"):
        run_dir.read_confirm(tmp_path)
    (tmp_path / run_dir.VERIFY_FILE).write_text("[1, 2]")
    with pytest.raises(RunStateError, match="holds no JSON object"):
        run_dir.read_verify(tmp_path)
    with pytest.raises(RunStateError, match="cannot read the bundle"):
        run_dir.read_bundle_files(tmp_path)


def test_bundle_files_and_the_search_config(tmp_path: Path) -> None:
    files = run_dir.BundleFiles(
        run_dir.bundle_dir(tmp_path), "diff\n", '{"schema": 1}\n', "body\n", "#!/bin/sh\n"
    )
    run_dir.write_bundle_files(tmp_path, files)
    back = run_dir.read_bundle_files(tmp_path)
    assert (back.patch, back.evidence, back.body) == ("diff\n", '{"schema": 1}\n', "body\n")
    assert run_dir.read_bundle_patch(tmp_path) == "diff\n"
    assert (files.dir / run_dir.REPRODUCE_FILE).stat().st_mode & 0o111  # reproduce.sh is executable
    assert run_dir.read_bundle_patch(tmp_path / "elsewhere") is None

    config = run_dir.write_search_config(tmp_path, "[stop]\n")
    config.write_text("# edited by the user\n")
    assert run_dir.write_search_config(tmp_path, "[stop]\n") == config
    assert config.read_text() == "# edited by the user\n"  # never overwritten
