"""The fusion generator's entry point: a traced reference and a set of knobs in, a candidate source out.

    imports
    # EVOLVE-BLOCK-START
    # fusion-knobs: {...}                 what fusion:variant changes
    ROWS / BLOCK / PROGRAMS / WARPS_SCALE  the knobs the code reads, only those (launch tuning may move them)
    building blocks                        the _kb_* helpers the kernels call (from evolution.fusion.blocks)
    kernels                                one per specialisation
    host functions and the entry           (with a dispatch when the cases trace to several graphs)
    # EVOLVE-BLOCK-END

Raises GenerationError naming the op or construct when the reference is not something it writes.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from evaluators.candidate import EVOLVE_END, EVOLVE_START, parse_candidate
from evaluators.errors import CandidateError
from evolution.fusion import blocks
from evolution.fusion.dispatch import predicates
from evolution.fusion.errors import LoweringError
from evolution.fusion.host import host_body, returned
from evolution.fusion.kernel import KernelCode, build_kernel
from evolution.fusion.knobs import Knobs
from evolution.fusion.model import Graph, TraceReport
from evolution.fusion.symbols import SizeError

_INTERPRETED = '''def _interpreted():
    """Whether the kernels run under Triton's CPU interpreter (it casts to bfloat16 by truncation)."""
    return not torch.cuda.is_available()'''
_NUM_WARPS = '''def _num_warps(elements):
    """Warps for a program whose largest register tile holds `elements` (about 512 per warp)."""
    warps = 1
    while warps < 16 and warps * 512 < elements:
        warps *= 2
    return min(max(int(warps * WARPS_SCALE), 1), 32)'''


class GenerationError(Exception):
    """The reference is not something the fusion generator writes; the message names the op or construct."""


@dataclass(frozen=True)
class Generated:
    source: str
    knobs: Knobs
    uses_topk: bool
    kernels: int


def generate(report: TraceReport, knobs: Knobs, *, entry: str, task_name: str) -> Generated:
    if report.error:
        raise GenerationError(report.error)
    if not report.graphs:
        raise GenerationError("the trace holds no graph")
    graphs = list(report.graphs)
    kernels: list[KernelCode] = []
    try:
        for k, graph in enumerate(graphs):
            suffix = f"_{k}" if len(graphs) > 1 else ""
            kernels.append(build_kernel(graph, knobs, f"_{entry}_kernel{suffix}"))
        tests = predicates(graphs) if len(graphs) > 1 else [([], [])]
        hosts = [
            _host_function(report, graphs[k], kernels[k], entry, k, len(graphs)) for k in range(len(graphs))
        ]
    except (LoweringError, SizeError) as exc:
        raise GenerationError(str(exc)) from exc
    lines = _header(task_name, report, graphs)
    lines += _constants_of_reference(report.constants)
    used = "\n".join([*(k.text for k in kernels), *(line for host in hosts for line in host), _NUM_WARPS])
    lines += [EVOLVE_START, knobs.header(), *_constants(knobs, used)]
    kernel_text = "\n".join(k.text for k in kernels)
    for source in blocks.source_of(blocks.used_by(kernel_text)):
        lines += ["", "", source]
    for kernel in kernels:
        lines += ["", "", kernel.text]
    lines += ["", "", _NUM_WARPS]
    if "_interpreted()" in used:
        lines += ["", "", _INTERPRETED]
    for host in hosts:
        lines += ["", "", *host]
    if len(graphs) > 1:
        lines += ["", "", *_dispatcher(report, entry, tests, graphs)]
    lines.append(EVOLVE_END)
    source = "\n".join(lines) + "\n"
    _validate(source, entry)
    uses_topk = any("_kb_topk" in k.text for k in kernels)
    return Generated(source, knobs, uses_topk, len(kernels))


def _header(task_name: str, report: TraceReport, graphs: list[Graph]) -> list[str]:
    served = "; ".join(", ".join(g.cases) for g in graphs)
    return [
        f'"""{task_name}: fused Triton kernels written by kernelbot\'s fusion generator from the',
        f"reference's ATen graph (traced with torch {report.torch_version}); one kernel per specialisation",
        f"({served}).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import torch",
        "import triton",
        "import triton.language as tl",
        "",
    ]


def _constants_of_reference(statements: tuple[str, ...]) -> list[str]:
    """What the entry's defaults read (`TOP_K = 8`, an enum class), under the reference's names."""
    lines: list[str] = []
    for statement in statements:
        if "\n" in statement:  # a class: two blank lines around it
            lines += ["", statement, "", ""]
        else:
            lines.append(statement)
    return [*lines, ""] if lines else []


def _constants(knobs: Knobs, used: str) -> list[str]:
    """The knob constants the code reads (a knob without effect on this reference leaves no trace in the
    code, so its variant is recognised as a duplicate)."""
    constants = [
        ("ROWS", f"ROWS = {knobs.rows}  # rows per program"),
        ("BLOCK", f"BLOCK = {knobs.block}  # elements per program (or per chunk) along a blocked axis"),
        ("PROGRAMS", f"PROGRAMS = {knobs.persistent}  # a persistent grid of at most this many programs"),
        ("WARPS_SCALE", f"WARPS_SCALE = {knobs.warps}"),
    ]
    return [line for name, line in constants if re.search(rf"\b{name}\b", used)]


def _host_function(
    report: TraceReport, graph: Graph, kernel: KernelCode, entry: str, k: int, count: int
) -> list[str]:
    tensors = [name for name, kind in graph.arg_kinds.items() if kind.startswith("tensor:")]
    if not tensors:
        raise LoweringError("the reference takes no tensor argument to place its outputs next to")
    body = host_body(graph, kernel, tensors[0])
    body.append(f"return {returned(graph.result, kernel.holders)}")
    if count == 1:
        returns = f" -> {report.returns}" if report.returns else ""
        head = f"def {entry}({report.signature}){returns}:"
    else:
        head = f"def _{entry}_{k}({', '.join(report.params)}):"
    doc = f'    """{entry} for the cases {", ".join(graph.cases)}."""'
    return [head, doc, *(f"    {line}" for line in body)]


def _dispatcher(
    report: TraceReport, entry: str, tests: list[tuple[list[str], list[str]]], graphs: list[Graph]
) -> list[str]:
    returns = f" -> {report.returns}" if report.returns else ""
    lines = [f"def {entry}({report.signature}){returns}:"]
    call = ", ".join(f"{p}={p}" for p in report.params)
    bound: set[str] = set()
    for k, (bindings, conditions) in enumerate(tests):
        for binding in bindings:
            if binding not in bound:
                lines.append(f"    {binding}")
                bound.add(binding)
        test = " and ".join(f"({c})" for c in conditions) or "True"
        lines.append(f"    if {test}:")
        lines.append(f"        return _{entry}_{k}({call})")
    traced = "; ".join(", ".join(g.cases) for g in graphs)
    lines.append(f'    raise TypeError("no kernel for these arguments (kernels were written for: {traced})")')
    return lines


def _validate(source: str, entry: str) -> None:
    try:
        parse_candidate(source, entry)
        compile(source, "<fusion candidate>", "exec")
    except (CandidateError, SyntaxError) as exc:
        raise GenerationError(f"internal: the generated candidate is invalid: {exc}") from exc
    ast.parse(source)
