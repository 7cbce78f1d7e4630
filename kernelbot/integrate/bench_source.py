"""Renders the benchmark script a change adds (templates/bench.py.j2), where the engine keeps its kernel
benchmarks: it times the function eagerly, under torch.compile, as the engine runs it today (its current path,
where that is not the function itself) and through the kernel's slot, over the generated test's cases and
dtypes on a CUDA GPU, with triton.testing.do_bench as the engines' own kernel benchmarks do, and prints one
markdown table row per case.

Where it goes is the profile's `[kernel] benchmark` (kernelbot/engines/<name>/profile.toml): SGLang's
benchmark/kernels/bench_<op>_triton.py, LMDeploy's benchmark/ (no kernel folder: next to its profile_*.py
scripts), the example's benchmarks/ (the upstream layouts at SGLang 0.5.23 / LMDeploy 0.18.0)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelbot.engines.model import Profile
from kernelbot.integrate.templates_env import environment, fit_comments

if TYPE_CHECKING:  # current_path reads integrate's build-spec mapping
    from kernelbot.engines.current_path import CurrentPath


def bench_path(profile: Profile, op: str) -> Path:
    return Path(profile.kernel.benchmark.format(op=op))


def render_bench(
    context: dict[str, Any], profile: Profile, qualname: str, current: CurrentPath | None = None
) -> str:
    """The script, from the generated test's context (test_source.render_context), with a column for the
    engine's `current` path where it is not the original code itself."""
    package, _, name = context["kernel_module"].rpartition(".")
    module, _, member = current.name.partition(":") if current and not current.is_reference else ("", "", "")
    owner, _, method = member.partition(".")
    if current is None:
        note = "The engine's current path is not known: the current-path column times the original code."
    elif current.is_reference:
        note = f"The current path is the original code ({current.reason}): no column of its own."
    else:
        note = ""
    width = profile.formatter.line_length
    docstring = textwrap.fill(
        f"Times `{qualname}` eagerly, under torch.compile, as the engine runs it today and with its Triton "
        "kernel on a CUDA GPU, "
        "over the generated test's cases and dtypes (triton.testing.do_bench medians).",
        width=width,
        initial_indent='"""',
    ).removeprefix('"""')
    source = (
        environment(width)
        .get_template("bench.py.j2")
        .render(
            {
                **context,
                "docstring": docstring,
                "kernel_package": package,
                "kernel_name": name,
                "current_module": module,
                "current_owner": owner,
                "current_method": method,
                "current_version": current.version if current else "",
                "current_note": note,
            }
        )
    )
    return fit_comments(source, width)
