"""The generator's refusal of a graph, raised from any stage (stores, rows, lowering, host code, dispatch).

It lives apart from the code builder so that the stages which only refuse, and never write code, do not
depend on it; generate turns it into a GenerationError.
"""

from __future__ import annotations


class LoweringError(Exception):
    """The graph holds an op or construct the generator does not write (the message names it)."""
