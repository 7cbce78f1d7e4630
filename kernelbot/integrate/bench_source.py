"""Renders the benchmark script a change adds (templates/bench.py.j2), where the engine keeps its kernel
benchmarks: it times the function eagerly, under torch.compile and with the Triton kernel on, over the
generated test's cases and dtypes on a CUDA GPU, with triton.testing.do_bench as the engines' own kernel
benchmarks do, and prints one markdown table row per case.

Where it goes is the profile's `[kernel] benchmark` (kernelbot/engines/<name>/profile.toml): SGLang's
benchmark/kernels/bench_<op>_triton.py, LMDeploy's benchmark/ (no kernel folder: next to its profile_*.py
scripts), the example's benchmarks/ (the upstream layouts at SGLang 0.5.23 / LMDeploy 0.18.0)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from kernelbot.engines.model import Profile
from kernelbot.integrate.templates_env import environment, fit_comments


def bench_path(profile: Profile, op: str) -> Path:
    return Path(profile.kernel.benchmark.format(op=op))


def render_bench(context: dict[str, Any], profile: Profile, qualname: str) -> str:
    """The script, from the generated test's context (test_source.render_context)."""
    package, _, name = context["kernel_module"].rpartition(".")
    width = profile.formatter.line_length
    docstring = textwrap.fill(
        f"Times `{qualname}` eagerly, under torch.compile and with its Triton kernel on a CUDA GPU, "
        "over the generated test's cases and dtypes (triton.testing.do_bench medians).",
        width=width,
        initial_indent='"""',
    ).removeprefix('"""')
    source = (
        environment(width)
        .get_template("bench.py.j2")
        .render(**{**context, "docstring": docstring, "kernel_package": package, "kernel_name": name})
    )
    return fit_comments(source, width)
