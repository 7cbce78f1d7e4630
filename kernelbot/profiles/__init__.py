"""Target profiles: what kernelbot knows about a repository it proposes kernels to (paths, tests,
formatter, benchmark, PR conventions), as TOML data. See docs/target.md, "Profiles".

    profile = load_profile("sglang").for_tree(worktree)
"""

from kernelbot.profiles.loader import SHIPPED, known_profiles, load_profile
from kernelbot.profiles.model import (
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
