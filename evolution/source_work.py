"""Source work (writing, parsing and rewriting candidates) off the event loop, one call at a time.

The search runs mutators concurrently; their work on source text is pure Python and holds the GIL, so
threads give it no parallelism, only a way not to block the loop. Serialising it also keeps two threads
from parsing at once: CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state,
and concurrent `ast.parse` calls can fail with "SystemError: AST constructor recursion depth mismatch"
(python/cpython#106905). The fusion writer parses every statement it inlines, which made that race show.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")
_ONE_AT_A_TIME = threading.Lock()


async def in_source_thread(fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """`fn(*args, **kwargs)` in a worker thread, after every earlier call of this function has finished."""

    def locked() -> _T:
        with _ONE_AT_A_TIME:
            return fn(*args, **kwargs)

    return await asyncio.to_thread(locked)
