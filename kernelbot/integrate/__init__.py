"""Puts a winning kernel back into the target repository: a libcst codemod that writes the kernel module,
routes the original function to it behind a guard (the envelope the evaluator proved), adds a unit test in
the repository's style and formats it all with the repository's pinned formatters. See docs/target.md,
"Integration".

    profile = load_profile("sglang")
    integration = integrate(worktree, profile, task_dir, best_source, op_slug=op_slug(task_dir))
"""

from kernelbot.integrate.envelope import Envelope, TensorRule, ValueRule
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.integrate import Integration, integrate
from kernelbot.integrate.naming import op_slug, qualname_slug

__all__ = [
    "Envelope",
    "Integration",
    "IntegrationError",
    "TensorRule",
    "ValueRule",
    "integrate",
    "op_slug",
    "qualname_slug",
]
