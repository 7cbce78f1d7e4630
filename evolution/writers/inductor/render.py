"""Assemble a standalone candidate from Inductor captures: imports, then inside the EVOLVE-BLOCK the launch
parameters, helper functions, kernels, one host function per dtype specialisation and the entry point.

With several specialisations (a task whose cases use bf16 and fp32, say) the entry dispatches on the dtypes
that differ between them; Inductor's kernels are dtype-specific, so each specialisation keeps its own.
"""

from __future__ import annotations

import ast
import builtins
import re

from evaluators.candidate import EVOLVE_END, EVOLVE_START, parse_candidate
from evaluators.errors import CandidateError
from evolution.writers.inductor.constexpr_sizes import with_constexpr_sizes
from evolution.writers.inductor.helpers import helper_sources
from evolution.writers.inductor.host import HostCode, translate_host
from evolution.writers.inductor.kernels import (
    InductorConversionError,
    InductorUnsupported,
    Kernel,
    convert_kernel,
)
from evolution.writers.inductor.model import Capture, CaptureReport, OutputNode
from evolution.writers.inductor.signature import entry_signature
from evolution.writers.inductor.wrapper import kernel_sources

ORIGIN_COMMENT = "# Fused by Inductor from"  # above each kernel whose ATen ops Inductor names

_MODULE_NAMES = frozenset({"torch", "triton", "tl", "math", "libdevice"})
_METADATA_READ = re.compile(r"^    (\w+) = \w+\.(?:shape\[\d+\]|device)$")
_SHORT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}


def render_candidate(report: CaptureReport, task_name: str, entry: str) -> str:
    """The candidate source for `report`'s captures; raises InductorConversionError when it cannot be made."""
    if not report.captures:
        raise InductorUnsupported(report.error or "Inductor produced no capture to convert")
    signature = entry_signature(report.signature, entry)
    params = signature.params
    multi = len(report.captures) > 1
    parts: list[tuple[Capture, HostCode, str]] = []
    for capture in report.captures:
        tag = variant_tag(capture.variant) if multi else ""
        host = _convert_capture(capture, params, tag, report.size_names)
        function = f"_{entry}_{tag}" if multi else entry
        parts.append((capture, host, function))

    helpers = sorted({h for _, host, _ in parts for k in host.kernels for h in k.helpers})
    uses_libdevice = any(k.uses_libdevice for _, host, _ in parts for k in host.kernels)
    uses_math = any(host.uses_math for _, host, _ in parts)
    lines = _header(report, task_name, uses_libdevice, uses_math, signature.typing_import())
    lines += [EVOLVE_START, *_tunable_lines(parts)]
    for source in helper_sources(helpers):
        lines += ["", "", source]
    for capture, host, _ in parts:
        for kernel in host.kernels:
            origin = host.origins.get(kernel.name, "")
            lines += ["", ""]
            if origin:
                lines.append(f"{ORIGIN_COMMENT} {origin}" + (f" ({capture.variant})" if multi else ""))
            lines.append(
                with_constexpr_sizes(kernel.source, kernel.name, host.fixed_sizes.get(kernel.name, set()))
            )
    for capture, host, function in parts:
        lines += ["", ""]
        if multi:
            lines.append(f"def {function}({', '.join(params)}):")
            # Two short lines: the module may ship at an engine's 88 columns, and formatters leave strings be.
            lines.append(f'    """The launches for {capture.variant} inputs')
            lines.append(f'    (as Inductor traced them on case {capture.case})."""')
        else:
            lines.append(signature.def_line(entry))
        lines += host.body
    if multi:
        lines += ["", "", signature.def_line(entry), *_dispatch(parts, params)]
    lines.append(EVOLVE_END)
    source = "\n".join(lines) + "\n"
    _validate(source, entry)
    return source


def variant_tag(variant: str) -> str:
    """A dtype group's short tag (`bfloat16-float32` -> `bf16_fp32`): its kernels' name suffix and, upper
    case, its knobs' prefix."""
    return "_".join(_SHORT_DTYPES.get(part, part) for part in variant.split("-")) or "default"


def _convert_capture(capture: Capture, params: list[str], tag: str, size_names: dict[str, str]) -> HostCode:
    suffix = f"_{tag}" if tag else ""
    kernels: dict[str, Kernel] = {}
    origins: dict[str, str] = {}
    for original, (source, origin) in kernel_sources(capture.wrapper).items():
        new_name = "_" + original.removeprefix("triton_") + suffix
        kernels[original] = convert_kernel(original, source, new_name)
        origins[new_name] = origin
    tensors = [p for p in params if p in capture.dtypes]
    if not tensors:
        raise InductorUnsupported("the reference takes no tensor argument to place outputs next to")
    device_var = "device" if "device" not in params else "device_"
    host = translate_host(
        capture,
        kernels,
        device_var=device_var,
        tunable_prefix=f"{tag.upper()}_" if tag else "",
        outputs_expr=lambda outs: _output_expr(capture.outputs, outs),
    )
    host.origins = origins
    host.body.insert(0, f"    {device_var} = {tensors[0]}.device")
    host.body = _spec_named_sizes(_without_unused_reads(host.body), size_names)
    return host


_SIZE_READ = re.compile(r"^    ((\w+)_size(\d+)) = \2\.shape\[\3\]$")


def _spec_named_sizes(body: list[str], size_names: dict[str, str]) -> list[str]:
    """Host lines with each size read from an argument's shape (`key_size2 = key.shape[2]`) named as the
    task's input spec names that axis (`head_dim`), where no other line binds or reads that name. Done on
    the lines that stay: Inductor reads every argument's sizes, and only some of those reads are used."""
    renamed: dict[str, str] = {}
    for line in body:
        read = _SIZE_READ.match(line)
        name = size_names.get(f"{read[2]}.shape[{read[3]}]", "") if read else ""
        if not read or not name or name in renamed.values():
            continue
        if not any(re.search(rf"\b{name}\b", other) for other in body):
            renamed[read[1]] = name
    if not renamed:
        return body
    pattern = re.compile(rf"\b({'|'.join(map(re.escape, renamed))})\b")
    return [pattern.sub(lambda m: renamed[m[1]], line) for line in body]


def _without_unused_reads(body: list[str]) -> list[str]:
    """Drop `x_size0 = x.shape[0]` / `device = x.device` lines nothing reads: in the wall regime every
    host statement is paid on every call."""
    kept = list(body)
    for line in body:
        match = _METADATA_READ.match(line)
        if match is None:
            continue
        name = re.compile(rf"\b{re.escape(match.group(1))}\b")
        if not any(name.search(other) for other in kept if other is not line):
            kept.remove(line)
    return kept


def _output_expr(node: OutputNode, outputs: list[ast.expr]) -> ast.expr:
    if "out" in node:
        index = int(node["out"])
        if index >= len(outputs):
            raise InductorConversionError(
                f"the reference's result uses graph output {index}, Inductor returns fewer"
            )
        return outputs[index]
    if "arg" in node:
        return ast.Name(str(node["arg"]), ast.Load())
    if "const" in node:
        return ast.parse(str(node["const"]), mode="eval").body
    if "tuple" in node:
        return ast.Tuple([_output_expr(n, outputs) for n in node["tuple"]], ast.Load())
    if "list" in node:
        return ast.List([_output_expr(n, outputs) for n in node["list"]], ast.Load())
    if "dict" in node:
        keys: list[ast.expr | None] = [ast.Constant(k) for k, _ in node["dict"]]
        return ast.Dict(keys, [_output_expr(n, outputs) for _, n in node["dict"]])
    raise InductorConversionError(f"unknown output structure {node}")


def _header(
    report: CaptureReport, task_name: str, libdevice: bool, math: bool, typing_import: str
) -> list[str]:
    cases = ", ".join(f"{c.case} ({c.variant})" if c.variant else c.case for c in report.captures)
    doc = [
        f'"""{task_name}: Triton kernels generated by TorchInductor (torch {report.torch_version}, '
        f"traced on {report.device}),",
        "made standalone by kernelbot's Inductor seed: plain @triton.jit kernels, explicit grids, launches",
        "",
        f"Traced with dynamic shapes on case(s): {cases}.",
        *(f"Note: {note}." for note in report.notes),
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    stdlib = [line for line in ("import math" if math else "", typing_import) if line]
    imports = ([*stdlib, ""] if stdlib else []) + [
        "import torch",
        "import triton",
        "import triton.language as tl",
    ]
    if libdevice:
        imports.append("from triton.language.extra import libdevice  # GPU only: no portable stand-in")
    return [*doc, *imports, "", ""]


def _tunable_lines(parts: list[tuple[Capture, HostCode, str]]) -> list[str]:
    lines = [
        "# Launch parameters, one set per kernel. The kernels mask partial blocks, so any power of two is",
        "# correct for a BLOCK; the launch tuner varies these.",
    ]
    for _, host, _ in parts:
        for t in host.tunables:
            lines.append(f"{t.name} = {t.value}  # {t.comment}")
    return lines


def _dispatch(parts: list[tuple[Capture, HostCode, str]], params: list[str]) -> list[str]:
    varying = [
        p
        for p in params
        if len({c.dtypes.get(p) for c, _, _ in parts}) > 1 and all(p in c.dtypes for c, _, _ in parts)
    ]
    if not varying:
        raise InductorUnsupported("dtype specialisations that no argument's dtype tells apart")
    lines = []
    for capture, _, function in parts:
        test = " and ".join(f"{p}.dtype == torch.{capture.dtypes[p]}" for p in varying)
        lines += [f"    if {test}:", f"        return {function}({', '.join(params)})"]
    seen = ", ".join(sorted({capture.variant for capture, _, _ in parts}))
    lines.append(f'    raise TypeError("no kernels for these dtypes (generated for: {seen})")')
    return lines


def _validate(source: str, entry: str) -> None:
    """The candidate parses, defines the entry, and every name its functions read is defined somewhere."""
    try:
        parse_candidate(source, entry)
    except CandidateError as exc:
        raise InductorConversionError(f"the converted candidate is invalid: {exc}") from exc
    tree = ast.parse(source)
    module_names = set(_MODULE_NAMES) | set(dir(builtins))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            module_names.add(node.name)
        elif isinstance(node, ast.Assign):
            module_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            module_names.update((a.asname or a.name).split(".")[0] for a in node.names)
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        local = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
        local |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local | module_names:
                raise InductorConversionError(
                    f"the converted {fn.name} reads {n.id!r}, which nothing defines"
                )
    leftovers = [
        m for m in ("torch._inductor", "triton_helpers", "triton_heuristics", "async_compile") if m in source
    ]
    if leftovers:
        raise InductorConversionError(f"the converted candidate still mentions {leftovers}")
