"""The pool's copy of a task's files around each evaluation (evaluators.task_files)."""

from __future__ import annotations

from pathlib import Path

from evaluators.task_files import TaskFilesRegistry


def _task(root: Path) -> Path:
    (root / "captured").mkdir(parents=True)
    (root / "task.toml").write_text('name = "t"\n')
    (root / "reference.py").write_text("def f(x):\n    return x + 1\n")
    (root / "inputs.py").write_text("def make_inputs(case, seed, device):\n    return (), {}\n")
    (root / "captured" / "c0.pt").write_bytes(b"\x00\x01\x02")
    return root


def test_a_change_during_an_evaluation_is_reported_and_written_back(tmp_path: Path) -> None:
    root = _task(tmp_path / "t")
    registry = TaskFilesRegistry()
    files = registry.begin(root)
    (root / "reference.py").write_text("def f(x):\n    return x - 1\n")
    (root / "captured" / "c0.pt").unlink()
    (root / "captured" / "planted.pt").write_bytes(b"\x09")
    evidence = registry.end(files)
    assert evidence is not None
    assert "reference.py rewritten" in evidence and "captured/c0.pt removed" in evidence
    assert "captured/planted.pt added (removed again)" in evidence
    assert (root / "reference.py").read_text().endswith("x + 1\n")
    assert (root / "captured" / "c0.pt").read_bytes() == b"\x00\x01\x02"
    assert not (root / "captured" / "planted.pt").exists()
    assert registry.end(registry.begin(root)) is None  # nothing changed this time


def test_an_edit_between_evaluations_is_the_task_as_it_now_is(tmp_path: Path) -> None:
    root = _task(tmp_path / "t")
    registry = TaskFilesRegistry()
    assert registry.end(registry.begin(root)) is None
    (root / "inputs.py").write_text("def make_inputs(case, seed, device):\n    return (1,), {}\n")
    assert registry.end(registry.begin(root)) is None
    assert "(1,)" in (root / "inputs.py").read_text()


def test_evaluations_in_flight_share_the_copy_taken_when_the_first_began(tmp_path: Path) -> None:
    root = _task(tmp_path / "t")
    registry = TaskFilesRegistry()
    first = registry.begin(root)
    (root / "task.toml").write_text('name = "changed"\n')  # by the first evaluation's candidate
    second = registry.begin(root)  # a second evaluation starts meanwhile: it gets the same copy
    assert second is first
    assert "task.toml rewritten" in (registry.end(second) or "")
    assert registry.end(first) is None  # already written back
    assert (root / "task.toml").read_text() == 'name = "t"\n'
