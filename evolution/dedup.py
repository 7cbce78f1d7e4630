"""Duplicate rejection before evaluation: two sources with the same normalised code (Candidate.sha:
comments, quotes and spacing ignored) are one candidate, evaluated at most once per run."""

from __future__ import annotations

from collections.abc import Iterable

from evaluators.candidate import Candidate


def candidate_sha(source: str, entry: str) -> str:
    return Candidate(source=source, entry=entry).sha


class SeenShas:
    """The shas a run has already recorded (evaluated or pending)."""

    def __init__(self, shas: Iterable[str] = ()) -> None:
        self._shas = set(shas)

    def is_duplicate(self, sha: str) -> bool:
        return sha in self._shas

    def add(self, sha: str) -> None:
        self._shas.add(sha)

    def __len__(self) -> int:
        return len(self._shas)

    def __contains__(self, sha: object) -> bool:
        return sha in self._shas
