"""Names the integration gives things: the op ("rms_norm" for RMSNorm.forward_native), the public kernel
entry ("rms_norm_triton"), its guard ("can_use_rms_norm_triton") and the op slug used for branches
("rms-norm-forward-native")."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from kernelbot.integrate.errors import IntegrationError

# Methods whose name says nothing about the op: the class names it.
_GENERIC_METHODS = {"forward", "forward_native", "forward_cuda", "forward_torch", "__call__", "call", "apply"}
_NOISE_SUFFIXES = ("_native", "_torch", "_impl", "_ref", "_reference")


def snake(name: str) -> str:
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def op_name(qualname: str) -> str:
    """A short snake-case name for what `qualname` computes."""
    parts = qualname.split(".")
    function = parts[-1].strip("_")
    if len(parts) == 1:
        name = function
    else:
        owner = snake(parts[-2]).strip("_").removeprefix("default_")
        owner = _strip_suffixes(owner)
        name = owner if parts[-1] in _GENERIC_METHODS else f"{owner}_{function}"
    name = _strip_suffixes(re.sub(r"_+", "_", name))
    return name or "op"


def kernel_entry_name(op: str) -> str:
    return f"{op}_triton"


def guard_name(op: str) -> str:
    return f"can_use_{op}_triton"


def op_slug(task_dir: Path) -> str:
    """The op's slug from task.toml [source] qualname, e.g. "rms-norm-forward-native"."""
    path = Path(task_dir) / "task.toml"
    try:
        source = tomllib.loads(path.read_text()).get("source", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise IntegrationError(f"cannot read {path}: {exc}") from exc
    qualname = source.get("qualname") if isinstance(source, dict) else None
    if not isinstance(qualname, str) or not qualname:
        raise IntegrationError(f"{path} has no [source] qualname: was the task extracted from a repository?")
    return qualname_slug(qualname)


def qualname_slug(qualname: str) -> str:
    """The op slug of a function's qualname ("RMSNorm.forward_native" -> "rms-norm-forward-native"): what
    op_slug gives for a task extracted from it, so a scan knows a region's PR branch before extracting."""
    words = [snake(part).strip("_") for part in qualname.split(".")]
    return re.sub(r"[^a-z0-9]+", "-", "-".join(words)).strip("-")


def _strip_suffixes(name: str) -> str:
    for suffix in _NOISE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name
