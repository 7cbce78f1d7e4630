"""The tracer's refusal, raised from every stage of a trace and reported as the report's error, and how an
exception torch wrapped (Dynamo, AOTAutograd, Inductor) is read back: its first refusal of ours, or its root
cause in one line."""

from __future__ import annotations

from typing import TypeVar

E = TypeVar("E", bound=BaseException)


class TraceError(Exception):
    """The reference cannot be traced into one ATen graph per specialisation; the message says why."""


def first_of(exc: BaseException, kind: type[E]) -> E | None:
    """The `kind` exception our backend raised, wherever torch wrapped it (its own causes are not the
    story)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = getattr(seen, "inner_exception", None) or seen.__cause__
    return None


def root_cause(exc: BaseException) -> BaseException:
    """The innermost cause of an exception torch raised around another (`inner_exception`, `__cause__`)."""
    while exc.__cause__ is not None or getattr(exc, "inner_exception", None) is not None:
        exc = getattr(exc, "inner_exception", None) or exc.__cause__  # type: ignore[assignment]
    return exc


def one_line(exc: BaseException, limit: int = 300) -> str:
    """`Type: first line of the message`, at most `limit` characters."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0] if text else ''}"
    if len(line) <= limit:
        return line
    return line[:limit].rsplit(" ", 1)[0] + " …"  # never cut a word: a cut name or number misleads
