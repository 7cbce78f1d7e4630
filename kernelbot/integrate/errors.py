"""The one error kernelbot.integrate raises: bad input it cannot integrate, said in one line."""

from __future__ import annotations

from kernelbot.errors import KernelbotError


class IntegrationError(KernelbotError):
    """The function is not in the tree, uses a construct the codemod cannot rewrite, the candidate lacks the
    task's entry, or the task lacks what the generated test needs."""
