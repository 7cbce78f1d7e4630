"""The engines kernelbot proposes kernels to, one directory each (`kernelbot/engines/<name>/`): the engine's
profile (what kernelbot knows about its repository: paths, tests, formatter, benchmark, PR conventions, as
TOML data in `profile.toml`), its integration convention (`convention.py`: where a kernel goes in the engine,
see kernelbot.engines.convention) and the input specs shipped for its functions (`specs/`). See
docs/target.md, "Profiles" and "Engine conventions".

    profile = load_profile("sglang").for_tree(worktree)
"""

from kernelbot.engines.loader import SHIPPED, known_profiles, load_profile
from kernelbot.engines.model import (
    BenchmarkSpec,
    Formatter,
    FormatterTool,
    KernelPlacement,
    MetricSpec,
    Profile,
    TestPlacement,
)

__all__ = [
    "SHIPPED",
    "BenchmarkSpec",
    "Formatter",
    "FormatterTool",
    "KernelPlacement",
    "MetricSpec",
    "Profile",
    "TestPlacement",
    "known_profiles",
    "load_profile",
]
