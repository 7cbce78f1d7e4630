"""Moved to evaluators.guards.monitor. This name stays only until evaluators.correctness, which is being
reorganised separately, imports `CallMonitor` from evaluators.guards; then it goes."""

from evaluators.guards.monitor import CallMonitor

__all__ = ["CallMonitor"]
