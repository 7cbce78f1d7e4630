"""Builds the new kernel module from the winning candidate: its code with the search's markers stripped and
its imports all at the top, one line per module (hoist_imports), its size routing flattened
(crossover.routes: one table, one copy of each code), a warps scale left at 1.0 folded
(writers.fusion.unit_scale), kernels that are one code under two names made one (merge_twin_kernels),
hosts that differ only in the kernel they launch made one (merge_twin_hosts), an Inductor-seeded winner's
kernels, pointers, buffers and loads named for the op and the reference's arguments and returned values
(inductor_names), its bookkeeping assignments nothing reads dropped (drop_unread_assignments) and its
numbered temporaries read once inlined (inline_temporaries), the entry renamed to a public name, a
docstring saying what it computes, where it came from and what it was checked on, and the guard
(guard_source) appended. A comment a dropped copy left behind, repeating one above it, goes
(drop_repeated_comments). The entry keeps the parameters its body names (drop_unread_params), after each
route's host has dropped the ones its body does not name and its calls stopped passing them
(drop_unread_host_params); the guard takes the whole signature. Formatting is left to the repository's
formatter."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

from evaluators.candidate import find_evolve_block, replace_evolve_block
from evaluators.errors import CandidateError
from evaluators.task import Case
from evolution.mutators.crossover.routes import flat_routes
from evolution.mutators.crossover.source import ParsedCode
from evolution.writers.fusion.blocks import BLOCK_PREFIX
from evolution.writers.fusion.code_text import fit_docstrings
from evolution.writers.fusion.generate import is_trace_account, traced_docstring_start
from evolution.writers.fusion.unit_scale import unit_scales_folded
from extractors.signature import entry_signature
from kernelbot.integrate.constants_first import constants_first
from kernelbot.integrate.drop_noop_casts import dropped_noop_casts
from kernelbot.integrate.drop_repeated_comments import DropRepeatedCommentsTransformer
from kernelbot.integrate.drop_unread_assignments import dropped_unread_assignments
from kernelbot.integrate.drop_unread_host_params import dropped_unread_host_params
from kernelbot.integrate.drop_unread_params import DropUnreadParamsTransformer
from kernelbot.integrate.envelope import Envelope
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.guard_source import render_guard
from kernelbot.integrate.hoist_imports import hoisted_imports
from kernelbot.integrate.inductor_names import inductor_names
from kernelbot.integrate.inline_temporaries import inlined_temporaries
from kernelbot.integrate.merge_twin_hosts import merged_twin_hosts
from kernelbot.integrate.merge_twin_kernels import merged_twin_kernels
from kernelbot.integrate.rename_function import RenameFunctionTransformer
from kernelbot.integrate.set_function_docstring import (
    DropDocstringsTransformer,
    SetFunctionDocstringTransformer,
)
from kernelbot.integrate.set_module_docstring import SetModuleDocstringTransformer
from kernelbot.integrate.shared_launch_args import shared_launch_args
from kernelbot.integrate.strip_evolve_markers import StripEvolveMarkersTransformer
from kernelbot.integrate.task_view import TaskView
from kernelbot.integrate.templates_env import fit_comments

_GUARD_HELPERS = ("ENABLED", "_is_checked_tensor")
_SEARCH_NOTES = re.compile(r"^[ \t]*# fusion-knobs: .*\n", re.MULTILINE)
_SUFFIXED_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*_[a-z][a-z0-9]*")  # ROWS_large, WARPS_SCALE_small2


@dataclass(frozen=True)
class KernelNames:
    entry: str  # public name of the kernel's entry
    guard: str


def build_kernel_module(
    candidate_source: str,
    view: TaskView,
    envelope: Envelope,
    names: KernelNames,
    *,
    summary: str,
    line_length: int,
    header: str = "",
) -> str:
    try:
        module = cst.parse_module(candidate_source)
    except cst.ParserSyntaxError as exc:
        raise IntegrationError(
            f"the candidate is not valid Python: {exc.message} (line {exc.raw_line})"
        ) from exc
    # The fusion generator's knob lines are the search's bookkeeping, not the module's: the flattening reads
    # them (what sets a crossover's kernels apart, crossover/kernel_notes.py), then they go.
    flat = _flat_routes(candidate_source, view.task.entry, [t.name for t in envelope.tensors])
    flat, candidate_source = _SEARCH_NOTES.sub("", flat), _SEARCH_NOTES.sub("", candidate_source)
    # A flattened winner may have lost the code its file's docstring describes (a crossover parent's, no
    # input reached): that account is left out rather than risk a false one.
    how = _existing_docstring(module) if flat == candidate_source else ""
    # A warps scale the search left at 1.0 is a knob that does nothing in the module that ships.
    module = cst.parse_module(unit_scales_folded(flat))
    entry = _entry(module, view.task.entry)
    _check_signature(flat, view)
    taken = _module_names(module) - {view.task.entry}
    clash = sorted(taken & {names.entry, names.guard, *_GUARD_HELPERS})
    if clash:
        raise IntegrationError(
            f"the candidate already defines {', '.join(clash)}, names the integration needs"
        )
    docstring = _docstring(view, envelope, names, summary, how, line_length)
    # A crossover's second parent imports inside the EVOLVE block, below the first parent's code.
    module = hoisted_imports(module.visit(StripEvolveMarkersTransformer()))
    module = merged_twin_kernels(module)
    module = inductor_names(module, names.entry.removesuffix("_triton"), view.returned)
    module = dropped_noop_casts(module)
    # Before the inlining, which inlines a temporary only where one line reads it: a dead line that reads
    # one would keep it on its own line.
    module = dropped_unread_assignments(module)
    module = inlined_temporaries(module, line_length)
    module = _named_for_the_op(module, view.task.entry, names, taken)
    module = module.visit(RenameFunctionTransformer(view.task.entry, names.entry))
    module = dropped_unread_host_params(module, names.entry)
    module = module.visit(DropUnreadParamsTransformer(names.entry))
    module = module.visit(
        SetFunctionDocstringTransformer(
            names.entry, f"Runs `{view.qualname}` for the calls `{names.guard}` admits."
        )
    )
    # The code each size runs (a crossover's routes) said how it was traced: the size test says when it runs.
    module = module.visit(DropDocstringsTransformer(traced_docstring_start(view.task.entry)))
    module = merged_twin_hosts(module)
    module = constants_first(shared_launch_args(module))
    # Last of the code's passes: each copy the ones above drop may leave its comments behind.
    module = module.visit(DropRepeatedCommentsTransformer())
    module = module.visit(SetModuleDocstringTransformer(docstring, header))
    guard = _statements(render_guard(envelope, entry, names.guard, line_length))
    module = module.with_changes(body=[*module.body, *guard])
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, "torch")
    # The formatters wrap code, never comments: the kernel's own (an Inductor-seeded winner's) are kept
    # within the engine's limit here.
    module = AddImportsVisitor(context).transform_module(module)
    if flat != candidate_source:  # what only the dropped code used (its annotations' typing names)
        module = _without_unused_imports(module)
    code = module.code
    return fit_docstrings(fit_comments(code, line_length), line_length)


def _named_for_the_op(module: cst.Module, entry: str, names: KernelNames, taken: set[str]) -> cst.Module:
    """The module's functions named after the task's entry (`_default_rms_norm_impl_forward_kernel`, the
    routes `_<entry>_small`) named after the op instead (`_rms_norm_kernel`, `_rms_norm_small`): the entry
    is a name the extraction made up, the op's is the engine's own. The fusion writer's building blocks
    lose the prefix that kept them apart from the reference's names in a candidate (`_kb_pack` ->
    `_pack`): the module holds no reference code. A module constant a crossover suffixed for when it runs
    is written in capitals whole (`ROWS_large` -> `ROWS_LARGE`). A name already taken stays."""
    stem = names.entry.removesuffix("_triton")
    words = re.compile(rf"(?<![^_]){re.escape(entry)}(?![^_])")  # the entry's words, whole
    renames: dict[str, str] = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value != entry:
            name = statement.name.value
            new = "_" + name.removeprefix(BLOCK_PREFIX) if name.startswith(BLOCK_PREFIX) else name
            new = words.sub(stem, new, count=1)
        elif isinstance(statement, cst.SimpleStatementLine) and (name := _constant(statement)):
            new = name.upper() if _SUFFIXED_CONSTANT.fullmatch(name) else name
        else:
            continue
        if new != name and new not in taken and new not in renames.values():
            renames[name] = new
    if not renames:
        return module
    return cst.parse_module(ParsedCode.parse(module.code, "the kernel module").renamed(renames))


def _constant(statement: cst.SimpleStatementLine) -> str:
    """The name `statement` binds when it is one `NAME = value`, else ""."""
    assign = statement.body[0]
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
        target = assign.targets[0].target
        return target.value if isinstance(target, cst.Name) else ""
    return ""


def _without_unused_imports(module: cst.Module) -> cst.Module:
    context = CodemodContext()
    for statement in module.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                origin = cst.Module([]).code_for_node(small.module)
                if origin != "__future__" and not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        asname = alias.evaluated_alias
                        RemoveImportsVisitor.remove_unused_import(
                            context, origin, alias.evaluated_name, asname
                        )
            elif isinstance(small, cst.Import):
                for alias in small.names:
                    RemoveImportsVisitor.remove_unused_import(
                        context, alias.evaluated_name, asname=alias.evaluated_alias
                    )
    return RemoveImportsVisitor(context).transform_module(module)


def _flat_routes(source: str, entry: str, tensors: list[str]) -> str:
    """`source` with the size routing of its EVOLVE-BLOCK flattened, or as it is when that is flat already;
    the size counted over `tensors`, the arguments the guard lets through as tensors (all when none)."""
    try:
        block = find_evolve_block(source)
    except CandidateError:
        return source
    flat = flat_routes(block.text, entry, tensors or None) if block is not None else None
    return source if flat is None else replace_evolve_block(source, flat)


def _statements(source: str) -> list[cst.SimpleStatementLine | cst.BaseCompoundStatement]:
    """The statements of `source`, its leading comments kept on the first one (parse_module files them
    under the module's header)."""
    parsed = cst.parse_module(source)
    body = list(parsed.body)
    body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine(), *parsed.header, *body[0].leading_lines])
    return body


def _entry(module: cst.Module, name: str) -> cst.FunctionDef:
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    raise IntegrationError(f"the candidate defines no module-level function {name}(), the task's entry")


def _check_signature(candidate_source: str, view: TaskView) -> None:
    ours = [(p.name, p.kind) for p in entry_signature(candidate_source, view.task.entry)]
    theirs = [(p.name, p.kind) for p in view.signature]
    if ours != theirs:
        raise IntegrationError(
            f"the candidate's {view.task.entry}() takes ({', '.join(n for n, _ in ours)}), the reference "
            f"({', '.join(n for n, _ in theirs)}): they must match"
        )


def _module_names(module: cst.Module) -> set[str]:
    names: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets = small.targets if isinstance(small, cst.Assign) else []
                for target in targets:
                    if isinstance(target.target, cst.Name):
                        names.add(target.target.value)
    return names


def _existing_docstring(module: cst.Module) -> str:
    """The candidate's own account of its kernel (a hand-written or LLM-written candidate's), not the fusion
    writer's note of where it traced the reference: that one names the search's task, not the engine's op."""
    text = module.get_docstring() or ""
    return "" if is_trace_account(text) else text


def _docstring(
    view: TaskView, envelope: Envelope, names: KernelNames, summary: str, how: str, width: int
) -> str:
    source = view.task.source
    where = f"{source.path}:{view.qualname}" + (f" ({source.commit})" if source.commit else "")
    # The first line follows the opening quotes.
    first = textwrap.fill(
        f"Triton kernel for `{view.qualname}` ({source.path}).", width, initial_indent='"""'
    )
    paragraphs = [first.removeprefix('"""')]
    if summary:
        paragraphs.append(textwrap.fill(summary, width))
    if how:
        paragraphs += [textwrap.fill(" ".join(p.split()), width) for p in how.strip().split("\n\n")]
    dynamic = f" and on other values of {', '.join(view.task.dynamic)}" if view.task.dynamic else ""
    paragraphs.append(
        textwrap.fill(
            f"Generated by kernelbot from {where}, and checked against it by kernelbot's evaluator on "
            f"{_cases(view.task.cases)}{dynamic}. `{names.guard}` lets a call through only when all of "
            "these hold (the generated test checks the kernel at the served models' sizes and dtypes); any "
            "other call runs the original code:",
            width,
        )
    )
    bullets = [
        textwrap.fill(line, width, initial_indent="- ", subsequent_indent="  ") for line in _grouped(envelope)
    ]
    return "\n\n".join(paragraphs) + "\n" + "\n".join(bullets)


def _cases(cases: tuple[Case, ...]) -> str:
    """The task's cases as the values each parameter takes (`8 cases (tokens 1, 64, 256, 4096; hidden 4096,
    7168)`): what a reader wants of `tokens1_hidden4096, tokens1_hidden7168, ...`. By name where a case has
    no parameters of its own (captured inputs)."""
    if any(not case.params for case in cases):
        return "the cases " + ", ".join(case.name for case in cases)
    values: dict[str, list[object]] = {}
    for case in cases:
        for key, value in case.params.items():
            if value not in values.setdefault(key, []):
                values[key].append(value)
    parts = [f"{key} {', '.join(_in_order(taken))}" for key, taken in values.items()]
    count = "1 case" if len(cases) == 1 else f"{len(cases)} cases"
    return f"{count} ({'; '.join(parts)})"


def _in_order(values: list[object]) -> list[str]:
    """Numbers smallest first, other values (dtypes, modes) in the order the cases give them."""
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return [str(v) for v in (sorted(numbers) if len(numbers) == len(values) else values)]


def _grouped(envelope: Envelope) -> list[str]:
    """The envelope's lines, the parameters of one rule in one line (`a, b: int32, 1-D, ...`, as the guard
    checks a property once for all of them), and the switches fixed at one value in one line, those of one
    value together (`a, b = None; renormalize = True`), in the order each rule first appears."""
    groups: dict[str, list[str]] = {}
    fixed: dict[str, list[str]] = {}  # " = value" -> the switches fixed at it
    for line in envelope.describe():
        match = re.match(r"(\w+)(: | = | in )", line)
        if match is None or envelope.rule(match[1]) is None:
            groups[line] = []
        elif match[2] == " = ":
            groups.setdefault(" = ", [])  # the fixed switches' line, where the first of them appears
            fixed.setdefault(line[len(match[1]) :], []).append(match[1])
        else:
            groups.setdefault(line[len(match[1]) :], []).append(match[1])
    switches = "; ".join(", ".join(names) + value for value, names in fixed.items())
    return [
        switches if rest == " = " else ", ".join(names) + rest if names else rest
        for rest, names in groups.items()
    ]
