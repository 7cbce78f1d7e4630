"""Moved to evaluators.guards.snapshots. This name stays only until evaluators.correctness, which is being
reorganised separately, imports `ModuleFingerprint` from evaluators.guards; then it goes."""

from evaluators.guards.snapshots import ModuleFingerprint

__all__ = ["ModuleFingerprint"]
