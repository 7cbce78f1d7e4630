"""What a generated candidate must be to ship in a pull request (docs/fusion.md, "Readable output"), at the
sizes these tests hold it to: the rules are kernelbot.integrate.readability's, `problems(source)` lists
every one it breaks at the example engine's line limit and a bounded length. The module integrate writes
for a fresh task, its line budget and its compiled launches come from bench/shipped_module.py."""

from __future__ import annotations

from kernelbot.integrate.readability import (
    duplicate_kernels,
    jit_functions,
    numbered_names,
    readability_problems,
    search_accounts,
)

__all__ = ["duplicate_kernels", "jit_functions", "numbered_names", "search_accounts"]

LINE_LIMIT = 110  # the example engine's ruff line length (examples/minirepo/pyproject.toml)
# The engines' own kernels for these ops are 100-200 lines; the generated MoE router (its top-k building
# blocks included) and the two-dtype activations are still above 200, hence the bound of 250.
MAX_LINES = 250


def problems(source: str, *, limit: int = LINE_LIMIT, max_lines: int = MAX_LINES) -> list[str]:
    return readability_problems(source, limit=limit, max_lines=max_lines)
