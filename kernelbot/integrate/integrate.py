"""integrate(): puts a winning kernel into a work tree of the target repository.

1. reads the task (task_view) and derives the envelope the evaluator proved (derive_envelope);
2. writes the kernel module where the engine's convention places it (kernel_module, with its guard);
3. makes the engine call the kernel the way its convention says (kernelbot.engines.convention: a
   forward_triton backend of an SGLang-style op, a Triton<Op>Impl in LMDeploy's CUDA backend, or a guarded
   call in the function itself) and, when the profile asks, exports the kernel from its package
   (export_from_init);
4. writes the unit test in the repository's style (test_source) and a benchmark script where the engine
   keeps its kernel benchmarks (bench_source);
5. formats what it touched with the repository's pinned formatters (kernelbot.formatting; the tools and
   versions its .pre-commit-config.yaml pins, kernelbot.formatting.tree), keeping lines it did not touch as
   upstream wrote them (line_merge).
Every refusal is an IntegrationError raised before any file is written.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodContext

from extractors.signature import entry_signature
from kernelbot.engines.convention import KernelRequest, SlotEvidence, WireRequest, Wiring, convention_for
from kernelbot.engines.model import Profile
from kernelbot.formatting import format_files
from kernelbot.formatting.tree import formatter_for_tree
from kernelbot.integrate.bench_source import bench_path, render_bench
from kernelbot.integrate.derive_envelope import derive_envelope
from kernelbot.integrate.envelope import Envelope
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.export_from_init import ExportFromInitCommand
from kernelbot.integrate.gather_param_reads import GatherParamReadsVisitor
from kernelbot.integrate.gather_target import GatherTargetVisitor, Target
from kernelbot.integrate.kernel_module import KernelNames, build_kernel_module
from kernelbot.integrate.line_merge import merge_formatted
from kernelbot.integrate.naming import guard_name, kernel_entry_name, op_name
from kernelbot.integrate.placement import Placement, place
from kernelbot.integrate.route_to_kernel import KernelCall
from kernelbot.integrate.task_view import TaskView, load_view
from kernelbot.integrate.test_source import TestSubject, render_context, render_test


@dataclass(frozen=True)
class Integration:
    """What integrate() did, for the change named `op_slug`. Paths are relative to the repo root.
    `test_command` runs only the generated test (the profile's test command plus its path). `cpu_test_env` is
    the environment to add when running tests on a machine without a GPU: without it the generated test
    checks its cases in a new process that has Triton's interpreter on, which this environment spares.
    `notes` are things a reviewer should know (a file formatted whole because its untouched lines could not
    be kept apart, a checker's leftover findings)."""

    op_slug: str
    kernel_module: Path
    test_file: Path
    touched: tuple[Path, ...]
    envelope: Envelope
    test_command: list[str]
    kernel_entry: str = ""
    guard: str = ""
    notes: tuple[str, ...] = ()
    formatter: str = ""  # the tools the files were formatted with, and where their pins came from
    cpu_test_env: dict[str, str] = field(default_factory=lambda: {"TRITON_INTERPRET": "1"})
    slot: str = ""
    auto_selected: bool = False
    selection: str = ""
    in_compile_region: bool = False
    reference_file: Path | None = None  # the file holding the reference code; no line of it is changed
    # The benchmark script the change adds (bench_source): eager, torch.compile and the kernel on a GPU.
    bench_file: Path | None = None


def integrate(
    repo: Path,
    profile: Profile,
    task_dir: Path,
    candidate_source: str,
    *,
    op_slug: str,
    evidence: SlotEvidence | None = None,
) -> Integration:
    """Edit `repo` (a work tree) in place so that the task's function calls the candidate's kernel inside the
    envelope the evaluator proved, add the generated test, and format the touched files.

    `op_slug` (see naming.op_slug) names the change for the branch and PR and comes back in the Integration;
    the files are named after the op (e.g. rms_norm_triton.py). Raises IntegrationError (a KernelbotError) for
    bad input: the function is not in the tree, a construct the codemod cannot rewrite, a candidate without
    the entry, a task whose inputs the test cannot rebuild, a file that already exists; FormatterError when a
    formatter cannot be installed or fails. Whatever it raises, the tree is left as it was.

    `evidence` (default: nothing measured) decides whether the engine selects the kernel by itself (see
    SlotEvidence)."""
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", op_slug):
        raise IntegrationError(f"op slug {op_slug!r} must be lowercase words joined by '-' (see op_slug())")
    repo = Path(repo).resolve()
    profile = profile.for_tree(repo)
    # The tools and versions the tree's pre-commit config pins (the profile's where it has none).
    chosen = formatter_for_tree(profile.formatter, repo, profile.source_root)
    profile = dataclasses.replace(profile, formatter=chosen.formatter)
    view = load_view(Path(task_dir))
    op = op_name(view.qualname)
    names = KernelNames(kernel_entry_name(op), guard_name(op))
    convention = convention_for(profile.convention)
    placement = place(profile, view.task.source.path, op)
    original, module, target = _locate(repo, placement, view)
    chosen_file = convention.kernel_file(KernelRequest(repo, profile, placement, target, view.qualname))
    if chosen_file is not None:
        placement = place(profile, view.task.source.path, op, kernel_file=chosen_file)
    bench_file = bench_path(profile, op)
    for path in (placement.kernel_file, placement.test_file, bench_file):
        if (repo / path).exists():
            raise IntegrationError(f"{path} already exists in {repo}: integrate into a fresh work tree")
    reads = GatherParamReadsVisitor.of(
        view.task.reference_path.read_text(), view.task.entry, {p.name for p in view.signature}
    )
    derived = derive_envelope(view, ignore={p.name for p in view.signature} - reads)
    kernel_source = build_kernel_module(
        candidate_source,
        view,
        derived.envelope,
        names,
        summary=_summary(target),
        line_length=profile.formatter.line_length,
        header=profile.formatter.new_file_header,
    )
    # The entry takes the parameters its code reads (drop_unread_params); the guard takes them all.
    taken = tuple(p.name for p in entry_signature(kernel_source, names.entry))
    call, passed = _kernel_call(target, view, placement, names, reads, set(taken))
    request = WireRequest(
        repo,
        profile,
        placement,
        view,
        target,
        module,
        original,
        call,
        derived.envelope,
        evidence or SlotEvidence(),
    )
    wiring = convention.wire(request)
    _check_reference_kept(wiring, view)
    edits = {path: (before, after) for path, (before, after) in wiring.edits.items() if before is not None}
    created = {path: after for path, (before, after) in wiring.edits.items() if before is None}
    if placement.init_file is not None:
        edits[placement.init_file] = _exported(repo, placement, names.entry)
    subject = TestSubject(
        placement.source_module,
        placement.kernel_module,
        names.entry,
        names.guard,
        passed,
        kernel_method=wiring.test_hook.method,
        kernel_owner=wiring.test_hook.owner,
        kernel_parameters=taken if len(taken) < len(view.signature) else (),
    )
    test_source = render_test(view, subject, profile, repo, derived.other_cases)
    context = render_context(view, subject, profile, repo, derived.other_cases)
    from kernelbot.engines.current_path import current_path  # it reads integrate's build-spec mapping

    today = current_path(repo, profile, f"{placement.source_module}:{view.qualname}")
    bench_source = render_bench(context, profile, view.qualname, today)

    created = {
        placement.kernel_file: kernel_source,
        **created,
        placement.test_file: test_source,
        bench_file: bench_source,
    }
    for path in created:
        if (repo / path).exists():
            raise IntegrationError(f"{path} already exists in {repo}: integrate into a fresh work tree")
    touched = (placement.kernel_file, *edits, *list(created)[1:])
    try:
        for path, text in created.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        for path, (_, text) in edits.items():
            (repo / path).write_text(text)
        notes = _format(repo, profile, list(created), {p: before for p, (before, _) in edits.items()})
        for path in touched:
            _check_parses(repo / path)
    except BaseException:  # a formatter that cannot be installed, say: leave the tree as it was
        for path in created:
            (repo / path).unlink(missing_ok=True)
        for path, (before, _) in edits.items():
            (repo / path).write_text(before)
        raise
    return Integration(
        op_slug=op_slug,
        kernel_module=placement.kernel_file,
        test_file=placement.test_file,
        touched=touched,
        envelope=derived.envelope,
        test_command=[*profile.test_command, str(placement.test_file)],
        kernel_entry=names.entry,
        guard=names.guard,
        bench_file=bench_file,
        notes=(*wiring.notes, *notes),
        formatter=chosen.describe(),
        slot=wiring.slot,
        auto_selected=wiring.auto_selected,
        selection=wiring.selection,
        in_compile_region=wiring.in_compile_region,
        reference_file=wiring.reference,
    )


def _locate(repo: Path, placement: Placement, view: TaskView) -> tuple[str, cst.Module, Target]:
    path = repo / placement.source_file
    if not path.is_file():
        raise IntegrationError(f"{placement.source_file} (the task's [source] path) is not in {repo}")
    original = path.read_text()
    try:
        module = cst.parse_module(original)
    except cst.ParserSyntaxError as exc:
        raise IntegrationError(f"{placement.source_file} does not parse: {exc.message}") from exc
    gatherer = GatherTargetVisitor(view.qualname)
    module.visit(gatherer)
    if not gatherer.found:
        raise IntegrationError(f"{view.qualname} is not defined in {placement.source_file} of {repo}")
    if len(gatherer.found) > 1:
        raise IntegrationError(f"{placement.source_file} defines {view.qualname} more than once")
    target = gatherer.found[0]
    if target.refusals:
        raise IntegrationError(f"cannot rewrite {view.qualname}: {'; '.join(target.refusals)}")
    return original, module, target


def _kernel_call(
    target: Target, view: TaskView, placement: Placement, names: KernelNames, reads: set[str], taken: set[str]
) -> tuple[KernelCall, dict[str, str]]:
    """The call of the guard from the function: its own parameters forwarded as they are declared, and
    `param=self.<attr>` for each attribute the entry reads; the kernel's call passes those of them its
    entry takes (`taken`), by keyword after the first it leaves out. Returns the call and {param: attr} of
    the attributes."""
    params = target.node.params
    positional = [*params.posonly_params, *params.params]
    self_name = ""
    if target.is_method:
        if not positional:
            raise IntegrationError(f"{view.qualname} is a method without a self parameter")
        self_name = positional[0].name.value
        positional = positional[1:]
    own = [p.name.value for p in positional]
    arguments = list(own)
    if isinstance(params.star_arg, cst.Param):
        own.append(params.star_arg.name.value)
        arguments.append(f"*{params.star_arg.name.value}")
    own += [p.name.value for p in params.kwonly_params]
    arguments += [f"{p.name.value}={p.name.value}" for p in params.kwonly_params]
    own_arguments = [*arguments]
    if isinstance(params.star_kwarg, cst.Param):
        own_arguments.append(f"**{params.star_kwarg.name.value}")
    attribute_params = set(view.attribute_params.values())
    if own + ([params.star_kwarg.name.value] if isinstance(params.star_kwarg, cst.Param) else []) != [
        p.name for p in view.signature if p.name not in attribute_params
    ]:
        raise IntegrationError(
            f"{view.qualname} in {placement.source_file} takes other parameters than the task's reference "
            "entry: the tree changed since the extraction; extract the task again"
        )
    written = set(view.written_attributes)
    passed = {
        param: attr for attr, param in view.attribute_params.items() if attr not in written or param in reads
    }
    arguments += [f"{param}={self_name}.{attr}" for param, attr in passed.items()]
    if isinstance(params.star_kwarg, cst.Param):
        arguments.append(f"**{params.star_kwarg.name.value}")
    returns_value = "return" in view.outputs and target.returns_value
    kernel_arguments: list[str] = []
    by_keyword = False  # after a positional parameter the entry leaves out, the rest go by name
    for name in arguments[: len(positional)]:
        by_keyword = by_keyword or name not in taken
        if name in taken:
            kernel_arguments.append(f"{name}={name}" if by_keyword else name)
    rest = arguments[len(positional) :]
    kernel_arguments += [a for a in rest if a.startswith("*") or _argument_name(a) in taken]
    call = KernelCall(
        module=placement.kernel_module,
        kernel=names.entry,
        guard=names.guard,
        arguments=tuple(arguments),
        returns_value=returns_value,
        assign_to=tuple(f"{self_name}.{attr}" for attr in view.written_attributes),
        own_arguments=tuple(own_arguments),
        kernel_arguments=tuple(kernel_arguments) if kernel_arguments != arguments else (),
    )
    return call, passed


def _argument_name(argument: str) -> str:
    """The parameter an argument of the call fills: `x`, `weight=self.weight` -> weight."""
    return argument.partition("=")[0]


def _check_reference_kept(wiring: Wiring, view: TaskView) -> None:
    """A convention that keeps the reference intact (an op backend, an Impl subclass) must not have changed
    a line of the function it stands beside; checked on the function's own text."""
    if wiring.edits_reference or wiring.reference not in wiring.edits:
        return
    before, after = wiring.edits[wiring.reference]
    if before is None:
        return
    gatherer = GatherTargetVisitor(view.qualname)
    cst.parse_module(after).visit(gatherer)
    old = GatherTargetVisitor(view.qualname)
    cst.parse_module(before).visit(old)
    empty = cst.Module([])
    kept = [empty.code_for_node(t.node) for t in old.found]
    if [empty.code_for_node(t.node) for t in gatherer.found] != kept:
        raise IntegrationError(f"the {wiring.slot} edit changed {view.qualname} itself (kernelbot bug?)")


def _summary(target: Target) -> str:
    """What the function computes, in its authors' words: the first paragraph of its docstring, else of
    its class's."""
    for node in (target.node, target.owner):
        text = node.get_docstring() if node is not None else None
        if text:
            return " ".join(text.strip().split("\n\n")[0].split())
    return ""


def _exported(repo: Path, placement: Placement, entry: str) -> tuple[str, str]:
    assert placement.init_file is not None
    path = repo / placement.init_file
    if not path.is_file():
        raise IntegrationError(f"{placement.init_file} does not exist: the profile exports kernels from it")
    before = path.read_text()
    command = ExportFromInitCommand(CodemodContext(), placement.kernel_file.stem, entry)
    return before, command.transform_module(cst.parse_module(before)).code


def _format(repo: Path, profile: Profile, created: list[Path], edited: dict[Path, str]) -> list[str]:
    """Format the new files whole, the edited ones keeping their untouched lines (see line_merge)."""
    untouched = {path: path.with_name(f"_kernelbot_untouched_{path.name}") for path in edited}
    for path, copy in untouched.items():
        (repo / copy).write_text(edited[path])
    try:
        outcome = format_files(repo, [*edited, *untouched.values()], profile.formatter, new_files=created)
        formatted_original = {path: (repo / copy).read_text() for path, copy in untouched.items()}
    finally:
        for copy in untouched.values():
            (repo / copy).unlink(missing_ok=True)
    notes = []
    for path, before in edited.items():
        merged = merge_formatted(before, formatted_original[path], (repo / path).read_text())
        if merged is None:
            notes.append(f"{path}: formatted whole (the formatter also changes lines next to the edit)")
        else:
            (repo / path).write_text(merged)
    copies = {str(c) for c in untouched.values()}
    notes += [f"formatter: {line}" for line in outcome.findings if not any(c in line for c in copies)]
    return notes


def _check_parses(path: Path) -> None:
    try:
        ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as exc:
        raise IntegrationError(
            f"{path} does not parse after the integration (kernelbot bug?): {exc}"
        ) from exc
