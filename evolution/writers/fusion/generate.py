"""The fusion generator's entry point: a traced reference and a set of knobs in, a candidate source out.

    imports
    # EVOLVE-BLOCK-START
    # fusion-knobs: {...}                 what fusion:variant changes
    ROWS / BLOCK / PROGRAMS / WARPS_SCALE  the knobs the code reads, only those (launch tuning may move them)
    building blocks                        the _kb_* helpers the kernels call (writers.fusion.blocks)
    kernels                                one per specialisation
    host functions and the entry           (with a dispatch when the cases trace to several graphs)
    # EVOLVE-BLOCK-END

Raises GenerationError naming the op or construct when the reference is not something it writes.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from evaluators.candidate import EVOLVE_END, EVOLVE_START, parse_candidate
from evaluators.errors import CandidateError
from evolution.writers.fusion import blocks, symbols
from evolution.writers.fusion.code_text import fit_docstrings, without_redundant_parentheses, wrap_long_lines
from evolution.writers.fusion.dispatch import predicates
from evolution.writers.fusion.dtype_shared import generic_allocations, generic_kernels, joined_suffix
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.host import host_body, returned
from evolution.writers.fusion.kernel import KernelCode, build_kernel
from evolution.writers.fusion.knobs import Knobs
from evolution.writers.fusion.model import Graph, TensorMeta, TraceReport
from evolution.writers.fusion.naming import apply, identifier
from evolution.writers.fusion.symbols import SizeError

_NUM_WARPS = '''def _num_warps(elements):
    """Warps for a largest register tile of `elements` (about 512 a warp, 1 to 16)."""
    warps = min(max(triton.next_power_of_2(elements) // 512, 1), 16)
    return min(max(int(warps * WARPS_SCALE), 1), 32)'''


class GenerationError(Exception):
    """The reference is not something the fusion generator writes; the message names the op or construct."""


@dataclass(frozen=True)
class Generated:
    source: str
    knobs: Knobs
    uses_topk: bool
    kernels: int


LINE_LENGTH = 110  # the longest code line written (statements are broken at their brackets beyond it)


def traced_docstring_start(entry: str) -> str:
    """How the docstring of each entry function the writer writes starts (the cases follow): the search's
    account, which the kernel module that ships replaces (kernelbot.integrate.kernel_module)."""
    return f"{entry} as traced on the cases "


def is_trace_account(docstring: str) -> bool:
    """Whether a module docstring is the one the writer gives a candidate (`One kernel fused from TASK's ATen
    graph (torch ...)`): where it was traced, for the search's records; the kernel module that ships says
    what the kernel is for instead (kernelbot.integrate.kernel_module)."""
    return _TRACE_ACCOUNT.fullmatch(" ".join(docstring.split())) is not None


def generate(
    report: TraceReport, knobs: Knobs, *, entry: str, task_name: str, line_length: int = LINE_LENGTH
) -> Generated:
    if report.error:
        raise GenerationError(report.error)
    if not report.graphs:
        raise GenerationError("the trace holds no graph")
    graphs = [_sizes_from_fewer_tensors(_read_back(_settled(graph))) for graph in report.graphs]
    kernels: list[KernelCode] = []
    try:
        suffixes = specialisation_names(graphs)
        for graph, suffix in zip(graphs, suffixes, strict=True):
            name = f"_{entry}{suffix}_kernel"
            kernels.append(build_kernel(graph, knobs, name, line_length, shared_stores=len(graphs) > 1))
        kernels = _shared(generic_kernels(kernels, graphs, line_length), entry, suffixes)
        tests = predicates(graphs) if len(graphs) > 1 else [([], [])]
        hosts, callees = _hosts(report, graphs, kernels, entry, suffixes, line_length, knobs)
    except (LoweringError, SizeError) as exc:
        raise GenerationError(str(exc)) from exc
    # Every specialisation running one host (one kernel, allocating in its arguments' dtypes): that host is
    # the entry, as for one graph; a dtype test would choose between the same code.
    one_host = len(graphs) > 1 and len(hosts) == 1 and len(set(callees)) == 1
    if one_host:
        returns = f" -> {report.returns}" if report.returns else ""
        hosts = [[f"def {entry}({report.signature}){returns}:", *hosts[0][1:]]]
    lines = _header(task_name, report, len({k.name for k in kernels}), line_length)
    helpers = [] if knobs.num_warps else [_NUM_WARPS]
    used = "\n".join([*(k.text for k in kernels), *(line for host in hosts for line in host), *helpers])
    # The reference's constants go inside the block: a crossover child carries each parent's whole code.
    lines += [EVOLVE_START, *_constants_of_reference(report.constants)]
    lines += [knobs.header(), *_constants(knobs, used)]
    kernel_text = "\n".join({k.name: k.text for k in kernels}.values())
    for source in blocks.source_of(blocks.used_by(kernel_text)):
        lines += ["", "", source]
    for kernel in {k.name: k for k in kernels}.values():
        lines += ["", "", kernel.text]
    for helper in helpers:
        lines += ["", "", helper]
    for host in hosts:
        lines += ["", "", *host]
    if len(graphs) > 1 and not one_host:
        lines += ["", "", *_dispatcher(report, entry, tests, graphs, callees)]
    lines.append(EVOLVE_END)
    source = wrap_long_lines(fit_docstrings("\n".join(lines), line_length), line_length) + "\n"
    _validate(source, entry)
    uses_topk = any("_kb_topk" in k.text for k in kernels)
    return Generated(source, knobs, uses_topk, len(kernels))


def _settled(graph: Graph) -> Graph:
    """`graph` with each size that a guard equates to a symbol or number written as it (`s1*floor(s91/s1)`,
    the elements of a view over s91, is s91): one parameter instead of two for one size, and a simpler
    expression where the host computes it."""
    equalities = symbols.guard_equalities(graph.guards)
    if not equalities:
        return graph

    def value(item: Any) -> Any:
        if isinstance(item, dict):
            if set(item) == {"sym"}:
                return {"sym": symbols.settle(str(item["sym"]), equalities)}
            return {k: value(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return type(item)(value(v) for v in item)
        return item

    def meta(m: TensorMeta) -> TensorMeta:
        return dataclasses.replace(m, shape=tuple(symbols.settle(s, equalities) for s in m.shape))

    nodes = tuple(
        dataclasses.replace(
            n, args=value(n.args), kwargs=value(n.kwargs), outputs=tuple(meta(m) for m in n.outputs)
        )
        for n in graph.nodes
    )
    placeholders = tuple(
        dataclasses.replace(p, meta=meta(p.meta)) if p.meta else p for p in graph.placeholders
    )
    names: dict[str, str] = {}
    for size, name in graph.size_names.items():
        names.setdefault(symbols.settle(size, equalities), name)
    return dataclasses.replace(
        graph, nodes=nodes, placeholders=placeholders, outputs=value(graph.outputs), size_names=names
    )


_SYMBOL_PAIR = re.compile(r"Eq\((s\d+), (s\d+)\)")
_DIM_OF = re.compile(r"(\w+)\.shape\[\d+\]")


def _sizes_from_fewer_tensors(graph: Graph) -> Graph:
    """`graph` with a size read from another tensor where a guard says the two are equal and that tensor
    already gives the host another size: `x_size0, hidden_size = x.shape`, not `residual.shape[0]` beside
    `x.shape[1]` (Dynamo kept residual's symbol for both). A tensor the host reads no other size of is not
    taken up for one (a router's hidden_states stays unread)."""
    pairs = [m.groups() for m in map(_SYMBOL_PAIR.fullmatch, graph.guards) if m]
    if not pairs:
        return graph
    shapes = " ".join(str(d) for p in graph.placeholders if p.meta for d in p.meta.shape)
    used = set(re.findall(r"\bs\d+\b", shapes))
    sources = dict(graph.symbols)

    def tensor(symbol: str) -> str:
        match = _DIM_OF.fullmatch(sources.get(symbol, ""))
        return match[1] if match else ""

    def sizes_given(name: str, besides: str) -> int:
        return sum(1 for u in used if u != besides and tensor(u) == name)

    for symbol in sorted(used):
        if not tensor(symbol):
            continue
        others = [b if a == symbol else a for a, b in pairs if symbol in (a, b)]
        others = [o for o in others if o not in used and tensor(o)]
        best = max(others, key=lambda o: sizes_given(tensor(o), symbol), default="")
        if best and sizes_given(tensor(best), symbol) > sizes_given(tensor(symbol), symbol):
            sources[symbol] = sources[best]
    return dataclasses.replace(graph, symbols=sources) if sources != graph.symbols else graph


def _slice_bounds(args: tuple[Any, ...] | list[Any], at: int) -> tuple[Any, ...]:
    """(dim, start, end, step) of a slice's or slice_scatter's arguments from `at`, defaults filled."""
    defaults = (0, 0, None, 1)
    given = list(args[at : at + 4])
    return tuple(given[k] if k < len(given) else defaults[k] for k in range(4))


def _read_back(graph: Graph) -> Graph:
    """`graph` with each slice that reads back exactly the region a slice_scatter wrote
    (`cache_seqlens = buf[:bs]; cache_seqlens.copy_(x); torch.cumsum(cache_seqlens)`) read as the value
    written: the kernel then computes it once instead of reading the input it writes in place."""
    nodes = {n.name: n for n in graph.nodes}
    forward: dict[str, Any] = {}
    for node in graph.nodes:
        source = node.args[0] if node.target == "aten.slice.Tensor" and node.args else None
        scatter = nodes.get(str(source.get("node"))) if isinstance(source, dict) else None
        if scatter is None or scatter.target != "aten.slice_scatter.default" or len(scatter.args) < 2:
            continue
        written = scatter.args[1]
        written_node = nodes.get(str(written.get("node"))) if isinstance(written, dict) else None
        same = _slice_bounds(node.args, 1) == _slice_bounds(scatter.args, 2)
        if same and written_node is not None and written_node.meta.shape == node.meta.shape:
            forward[node.name] = written
    if not forward:
        return graph

    def value(item: Any) -> Any:
        if isinstance(item, dict):
            if set(item) == {"node"} and item["node"] in forward:
                return forward[item["node"]]
            return {k: value(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return type(item)(value(v) for v in item)
        return item

    kept = tuple(
        dataclasses.replace(n, args=value(n.args), kwargs=value(n.kwargs))
        for n in graph.nodes
        if n.name not in forward
    )
    return dataclasses.replace(
        graph, nodes=kept, outputs=value(graph.outputs), mutations=value(graph.mutations)
    )


_SHORT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}


def specialisation_names(graphs: list[Graph]) -> list[str]:
    """Per graph, the suffix that says when its kernel runs: the argument dtypes (or None-ness) that set it
    apart (`_bf16`, `_fp32`, `_no_bias`); `_<k>` where the kinds do not tell the graphs apart; "" for one."""
    if len(graphs) < 2:
        return [""]
    names = []
    for graph in graphs:
        parts: list[str] = []
        for arg, kind in graph.arg_kinds.items():
            if all(other.arg_kinds.get(arg) == kind for other in graphs):
                continue
            dtype = kind.split(":", 1)[1] if kind.startswith("tensor:") else ""
            part = _SHORT_DTYPES.get(dtype, dtype) if dtype else ("no_" + arg if kind == "none" else arg)
            if part not in parts:
                parts.append(part)
        names.append("_" + "_".join(parts) if parts else "")
    if len(set(names)) < len(names) or any(not n[1:].isidentifier() for n in names):
        return [f"_{k}" for k in range(len(graphs))]
    return names


def _shared(kernels: list[KernelCode], entry: str, suffixes: list[str]) -> list[KernelCode]:
    """Kernels whose text is equal but for their name are one kernel, which every specialisation launches
    (their hosts differ only in what they allocate), named for all of them (`_silu_and_mul_bf16_fp16_kernel`;
    `_silu_and_mul_kernel` when it is the only one)."""
    groups: dict[str, list[int]] = {}
    for k, kernel in enumerate(kernels):
        groups.setdefault(kernel.text.replace(kernel.name, "KERNEL"), []).append(k)
    result = list(kernels)
    for members in groups.values():
        if len(members) == 1:
            continue
        first = kernels[members[0]]
        suffix = "" if len(groups) == 1 else joined_suffix([suffixes[k] for k in members])
        name = f"_{entry}{suffix}_kernel"
        for k in members:
            result[k] = dataclasses.replace(kernels[k], name=name, text=first.text.replace(first.name, name))
    return result


_ONE_KERNEL, _PER_SPECIALISATION = "One kernel", "A kernel per specialisation whose code differs"
_TRACE_ACCOUNT = re.compile(
    rf"(?:{_ONE_KERNEL}|{_PER_SPECIALISATION}) fused from \S+'s ATen graph \(torch \S+\)\."
)


def _header(task_name: str, report: TraceReport, kernel_count: int, width: int) -> list[str]:
    kernels = _ONE_KERNEL if kernel_count == 1 else _PER_SPECIALISATION
    text = f"{kernels} fused from {task_name}'s ATen graph (torch {report.torch_version})."
    return [
        *('"""' + textwrap.fill(text, width - 3)).splitlines(),
        '"""',
        "",
        # No `from __future__ import annotations`: the only annotations are tl.constexpr, which tl names.
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
        ("SMALL_GRID", f"SMALL_GRID = {knobs.small_grid}  # a launch of fewer programs splits its blocks"),
        ("SMALL_BLOCK", "SMALL_BLOCK = 512  # to this many elements, as many warps each: more SMs load"),
        ("NUM_WARPS", f"NUM_WARPS = {knobs.num_warps}  # warps per program"),
    ]
    return [line for name, line in constants if re.search(rf"\b{name}\b", used)]


def _hosts(
    report: TraceReport,
    graphs: list[Graph],
    kernels: list[KernelCode],
    entry: str,
    suffixes: list[str],
    width: int,
    knobs: Knobs,
) -> tuple[list[list[str]], list[str]]:
    """The host functions, and per graph the one its dispatch calls: specialisations that launch one
    kernel share one host where, allocating in their arguments' dtypes, their code is the same
    (dtype_shared), named for all of them; each has its own otherwise."""
    count = len(graphs)
    callees = [f"_{entry}{suffix}" for suffix in suffixes]
    hosts: dict[int, list[str]] = {}
    for name in dict.fromkeys(k.name for k in kernels):
        members = [k for k in range(count) if kernels[k].name == name]
        if len(members) > 1:
            callee = f"_{entry}{joined_suffix([suffixes[k] for k in members])}"
            cases = tuple(case for k in members for case in graphs[k].cases)
            shared = [
                _host_function(
                    report,
                    graphs[k],
                    kernels[k],
                    entry,
                    callee,
                    count,
                    width,
                    knobs,
                    cases=cases,
                )
                for k in members
            ]
            if all(host == shared[0] for host in shared):
                hosts[members[0]] = shared[0]
                callees = [callee if k in members else c for k, c in enumerate(callees)]
                continue
        for k in members:
            hosts[k] = _host_function(report, graphs[k], kernels[k], entry, callees[k], count, width, knobs)
    return [hosts[k] for k in sorted(hosts)], callees


def _host_function(
    report: TraceReport,
    graph: Graph,
    kernel: KernelCode,
    entry: str,
    name: str,
    count: int,
    width: int,
    knobs: Knobs,
    *,
    cases: tuple[str, ...] = (),
) -> list[str]:
    """The host function `name` (the entry itself where there is one graph); `cases`: the cases its
    docstring names (the graph's by default). One of several allocates in its arguments' dtypes: hosts
    that then differ only in their kernel ship as one (kernelbot/integrate/merge_twin_hosts.py)."""
    tensors = [arg for arg, kind in graph.arg_kinds.items() if kind.startswith("tensor:")]
    if not tensors:
        raise LoweringError("the reference takes no tensor argument to place its outputs next to")
    body = host_body(graph, kernel, tensors[0], fixed_warps=bool(knobs.num_warps))
    if count > 1:
        body = generic_allocations(body, graph)
    result = returned(graph.result, kernel.holders)
    if result != "None":
        body.append(f"return {result}")
    body = _unpacked_shapes(_inline_read_once(_named_sizes(body, graph.symbols, graph.size_names)), graph)
    body = [_without_grouping(line) for line in body]
    body = _shared_shape(body, width - 4, set(graph.arg_kinds))
    if count == 1:
        returns = f" -> {report.returns}" if report.returns else ""
        head = f"def {entry}({report.signature}){returns}:"
    else:
        head = f"def {name}({', '.join(report.params)}):"
    doc = textwrap.fill(
        f'"""{traced_docstring_start(entry)}{", ".join(cases or graph.cases)}."""',
        width,
        initial_indent="    ",
        subsequent_indent="    ",
    )
    return [head, *doc.splitlines(), *(f"    {line}" for line in body)]


def _without_grouping(line: str) -> str:
    """A host line without the parentheses an inlined size brought that nothing needs
    (`triton.next_power_of_2((x_size1 // 2))`), a launch's `NAME=value,` line included."""
    keyword = re.fullmatch(r"(\s*)(\w+)=(.+),", line)
    if keyword is None:
        return without_redundant_parentheses(line)
    value = without_redundant_parentheses(f"_ = {keyword[3]}").removeprefix("_ = ")
    return f"{keyword[1]}{keyword[2]}={value},"


def _dispatcher(
    report: TraceReport,
    entry: str,
    tests: list[tuple[list[str], list[str]]],
    graphs: list[Graph],
    callees: list[str],
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
        joined = k > 0 and callees[k] == callees[k - 1] and _either_dtype(lines[-2], conditions)
        if joined:  # the same host as the test above, for another dtype: one test for both
            lines[-2] = joined
            continue
        test = " and ".join(f"({c})" for c in conditions) or "True"
        lines.append(f"    if {test}:")
        lines.append(f"        return {callees[k]}({call})")
    lines.append('    raise TypeError("no kernel was written for these argument dtypes")')
    symbols = {k: v for graph in graphs for k, v in graph.symbols.items()}
    size_names = {k: v for graph in graphs for k, v in graph.size_names.items()}
    return _named_sizes(lines, symbols, size_names)


_DTYPE_TEST = re.compile(r"\b(\w+)\.dtype (?:== (torch\.\w+)|in \(((?:torch\.\w+, )*torch\.\w+)\))")


def _either_dtype(line: str, conditions: list[str]) -> str:
    """The dispatch line `line` (`    if (...) and (x.dtype == torch.bfloat16):`) admitting also the dtype
    `conditions` test for where they are its tests but for that one (`x.dtype in (torch.bfloat16,
    torch.float16)`); "" where they differ otherwise."""
    test = " and ".join(f"({c})" for c in conditions)
    ours, theirs = _DTYPE_TEST.search(line), _DTYPE_TEST.search(test)
    if ours is None or theirs is None or theirs[3] is not None or ours[1] != theirs[1]:
        return ""
    if line.replace(ours[0], "DTYPE") != f"    if {test.replace(theirs[0], 'DTYPE')}:":
        return ""
    dtypes = [*(ours[3].split(", ") if ours[3] else [ours[2]]), theirs[2]]
    return line.replace(ours[0], f"{ours[1]}.dtype in ({', '.join(dtypes)})")


def _named_sizes(lines: list[str], symbols: dict[str, str], size_names: dict[str, str]) -> list[str]:
    """Host lines with each size symbol named after the reference's variable for it (`s91` ->
    `num_experts`), else after where it comes from (`s45` -> `gating_output_size0`, `s53` -> `topk`, the
    argument itself); the bindings that become `topk = topk` are dropped."""
    text = "\n".join(lines)
    names: dict[str, str] = {}
    for symbol, source in symbols.items():
        if not re.search(rf"\b{symbol}\b", text):  # a size the lines never read takes no name from one
            continue
        own = size_names.get(symbol, "")
        # a name the lines use otherwise than as the launch's keyword for this size is taken
        taken = own and re.search(rf"(?<![.\w]){own}\b(?!={symbol}\b)", text)
        if source.isidentifier():
            names[symbol] = source
        elif own and not taken and own not in names.values() and own not in symbols.values():
            names[symbol] = own
        else:
            names[symbol] = identifier(source).replace("_shape_", "_size")
    renamed = [apply(line, names) for line in lines]
    return [line for line in renamed if not re.fullmatch(r"\s*(\w+) = \1", line)]


def _inline_read_once(lines: list[str]) -> list[str]:
    """Host lines with a size binding (`x_size1 = x.shape[1]`) that one later line reads once put in that
    line (`X_SIZE1=x.shape[1],`): a name bound for one read is a line the reader skips."""
    lines = list(lines)
    k = 0
    while k < len(lines):
        match = re.fullmatch(r"(\w+) = (\w+\.shape\[\d+\])", lines[k].strip())
        name = re.compile(rf"\b{match[1]}\b") if match else None
        reads = [j for j, line in enumerate(lines) if j != k and name and name.search(line)]
        if match and name and len(reads) == 1 and len(name.findall(lines[reads[0]])) == 1:
            lines[reads[0]] = name.sub(match[2], lines[reads[0]])
            del lines[k]
        else:
            k += 1
    return lines


def _unpacked_shapes(lines: list[str], graph: Graph) -> list[str]:
    """Host lines with the bindings of every dim of one tensor (`x_size0 = x.shape[0]`, `x_size1 =
    x.shape[1]`) made one unpacking of its shape (`x_size0, x_size1 = x.shape`), where the first was."""
    ranks = {p.source: len(p.meta.shape) for p in graph.placeholders if p.kind == "tensor" and p.meta}
    bound: dict[str, dict[int, int]] = {}  # tensor -> dim -> line
    for k, line in enumerate(lines):
        match = re.fullmatch(r"(\w+) = (\w+)\.shape\[(\d+)\]", line)
        if match and match[2] in ranks:
            bound.setdefault(match[2], {}).setdefault(int(match[3]), k)
    replaced: dict[int, str] = {}
    for tensor, dims in bound.items():
        if ranks[tensor] > 1 and sorted(dims) == list(range(ranks[tensor])):
            names = [lines[dims[d]].split(" = ")[0] for d in range(ranks[tensor])]
            replaced |= {k: "" for k in dims.values()}
            replaced[min(dims.values())] = f"{', '.join(names)} = {tensor}.shape"
    return [replaced.get(k, line) for k, line in enumerate(lines) if replaced.get(k, line)]


_ALLOCATION = re.compile(r"\w+ = torch\.empty\((\(.*?\)), dtype=")


def _shared_shape(lines: list[str], width: int, taken: set[str]) -> list[str]:
    """Host lines with the outputs of one shape allocated from one `shape = (n, topk)` binding where a
    line of theirs is longer than `width` (which the formatter would break over three lines)."""
    shapes = [m[1] if (m := _ALLOCATION.match(line)) else None for line in lines]
    for shape in dict.fromkeys(s for s in shapes if s is not None):
        at = [k for k, s in enumerate(shapes) if s == shape]
        if len(at) < 2 or "shape" in taken or all(len(lines[k]) <= width for k in at):
            continue
        lines = [
            line.replace(f"torch.empty({shape},", "torch.empty(shape,", 1) if k in at else line
            for k, line in enumerate(lines)
        ]
        lines.insert(at[0], f"shape = {shape}")
        break  # one binding named `shape`
    return lines


def _validate(source: str, entry: str) -> None:
    try:
        parse_candidate(source, entry)
        compile(source, "<fusion candidate>", "exec")
    except (CandidateError, SyntaxError) as exc:
        raise GenerationError(f"internal: the generated candidate is invalid: {exc}") from exc
    ast.parse(source)
