"""The task's files, checked around every evaluation by the parent: a candidate must not change what it is
compared against.

A worker reads the task's reference, inputs and captured tensors from disk, and a write through a mapping
(`torch.from_file(path, shared=True)`) raises no audit event; a later evaluation, in a fresh worker, would
then judge against the changed files. `TaskFilesRegistry.begin` keeps the task's files (contents, and their
SHA-256) as they are when an evaluation starts with no other evaluation of that task in flight (so a task
the user edits between evaluations is taken as it now is), and `end` compares the files on disk with them
after the evaluation: any change is a `task_tamper` finding naming the files, and the files are written
back, so the next evaluation judges against the task as it was.

With several evaluations of one task in flight, a change is found by every evaluation that ends after it
and before the files are written back: all of them are flagged (their verdicts are void either way).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from evaluators.task import CAPTURED_DIR, INPUTS_FILE, REFERENCE_FILE, TASK_FILE

# Contents kept to restore a changed file; a task bigger than this (large captured/ tensors) is hashed only.
RESTORE_LIMIT_BYTES = 256 << 20


@dataclass(frozen=True)
class _Kept:
    digest: str
    data: bytes | None  # None: over RESTORE_LIMIT_BYTES, compared but not restorable


def _task_files(root: Path) -> list[Path]:
    files = [root / TASK_FILE, root / REFERENCE_FILE, root / INPUTS_FILE]
    captured = root / CAPTURED_DIR
    if captured.is_dir():
        files.extend(sorted(p for p in captured.rglob("*") if p.is_file()))
    return [p for p in files if p.is_file()]


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


class TaskFiles:
    """The pristine state of one task's files, shared by every evaluation of that task in a pool."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._kept: dict[Path, _Kept] = {}
        total = 0
        for path in _task_files(self.root):
            data = _read(path)
            if data is None:
                continue
            total += len(data)
            keep = data if total <= RESTORE_LIMIT_BYTES else None
            self._kept[path] = _Kept(hashlib.sha256(data).hexdigest(), keep)

    def check(self) -> str | None:
        """Evidence of what changed since the task was first seen (None: nothing), with the files restored."""
        with self._lock:
            changed: list[str] = []
            for path, kept in self._kept.items():
                data = _read(path)
                if data is not None and hashlib.sha256(data).hexdigest() == kept.digest:
                    continue
                what = "removed" if data is None else "rewritten"
                restored = self._restore(path, kept)
                changed.append(f"{path.relative_to(self.root)} {what}{'' if restored else ' (not restored)'}")
            present = set(_task_files(self.root))
            for path in sorted(present - set(self._kept)):
                if path.parent == self.root / CAPTURED_DIR or CAPTURED_DIR in path.parts:
                    path.unlink(missing_ok=True)  # a planted "captured" case would be judged next time
                    changed.append(f"{path.relative_to(self.root)} added (removed again)")
        if not changed:
            return None
        return (
            "the task's files changed during the evaluation: "
            + ", ".join(changed)
            + "; the verdict is void and the files were written back from the copy taken before"
        )

    @staticmethod
    def _restore(path: Path, kept: _Kept) -> bool:
        if kept.data is None:
            return False
        tmp = path.with_name(f".{path.name}.kb-restore-{os.getpid()}")
        try:
            tmp.write_bytes(kept.data)
            os.replace(tmp, path)  # a new inode: a mapping the candidate still holds no longer reaches it
        except OSError:
            tmp.unlink(missing_ok=True)
            return False
        return True


class TaskFilesRegistry:
    """The kept state of each task a pool is evaluating, shared by that task's evaluations in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_root: dict[Path, tuple[TaskFiles, int]] = {}

    def begin(self, root: Path) -> TaskFiles:
        """Before an evaluation of the task in `root`; pair with `end`."""
        key = Path(root).resolve()
        with self._lock:
            files, in_flight = self._by_root.get(key, (None, 0))
            if files is None or in_flight == 0:
                files = TaskFiles(key)
            self._by_root[key] = (files, in_flight + 1)
            return files

    def end(self, files: TaskFiles) -> str | None:
        """After the evaluation: TaskFiles.check's evidence (None: the files are unchanged)."""
        evidence = files.check()
        with self._lock:
            kept, in_flight = self._by_root[files.root]
            if in_flight <= 1:
                del self._by_root[files.root]
            else:
                self._by_root[files.root] = (kept, in_flight - 1)
        return evidence
