"""The tracer's refusal, raised from every stage of a trace and reported as the TraceReport's error."""

from __future__ import annotations


class TraceError(Exception):
    """The reference cannot be traced into one ATen graph per specialisation; the message says why."""
