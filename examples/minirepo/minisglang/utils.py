"""Helpers shared across the package."""

from __future__ import annotations

import os


def get_bool_env_var(name: str, default: str = "false") -> bool:
    return os.environ.get(name, default).strip().lower() in ("1", "true", "yes", "on")


def get_compiler_backend() -> str:
    return "inductor"


def ceil_div(a: int, b: int) -> int:
    return -(a // -b)


# torch.compile is opt-in: the CPU test suite should not wait for Inductor.
ENABLE_TORCH_COMPILE = get_bool_env_var("MINISGLANG_ENABLE_TORCH_COMPILE")
