"""The op-backend convention of SGLang's `BaseFusedOp` contract (sglang/kernels/fused_op.py), which the
example engine follows too: `forward_native` is the pure-PyTorch reference and is never edited; a kernel is a
`forward_triton` method of the op, calling a kernel module laid out as the engine's own Triton backends
(`<ops dir>/<group>/<op>_triton.py`, imported inside the method as the engine imports its backends), and
joins automatic selection only when declared in the op's `capabilities` for CUDA.

kernelbot declares it only when the evidence says the kernel beat the path the op dispatches to today on the
measuring GPU (SlotEvidence.beats_current_path); then a `backend_eligible` override sends the calls the
guard refuses to the next path (forward_cuda, or forward_native). Otherwise `forward_triton` is registered
opt-in: reachable through an explicit backend (`forward(..., backend=KernelBackend.TRITON)`) or the forced
backend switch, and a call outside the guard raises NotImplementedError, on which the forced switch falls
back to the usual dispatch.

Functions that are not ops' forward_native get the call-site convention (kernelbot.engines.call_site).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from kernelbot.engines.call_site import wire_call_site
from kernelbot.engines.convention import KernelRequest, TestHook, WireRequest, Wiring
from kernelbot.integrate.add_class_members import AddClassMembersTransformer, defines
from kernelbot.integrate.declare_capability import DeclareCapabilityTransformer
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.gather_target import Target
from kernelbot.integrate.route_to_kernel import KernelCall

REFERENCE = "forward_native"
BACKEND_METHOD = "forward_triton"


@dataclass(frozen=True)
class FusedOpConvention:
    name: str
    package: str  # "sglang"
    contract: str  # the contract's module, source-root relative path: "sglang/kernels/fused_op.py"
    spec_module: str  # where KernelBackend and CapabilityRequirement live: "sglang.kernels.spec"
    ops_dir: str  # the engine's backends, one package per group: "sglang/kernels/ops"

    def kernel_file(self, request: KernelRequest) -> PurePosixPath | None:
        """`<ops dir>/<group>/<op>_triton.py`: the group is the innermost package or module of the function's
        path that names a group the engine has (activation.py -> activation, penaltylib/... under sampling
        -> sampling); without one, the profile's rule."""
        root = PurePosixPath(request.profile.source_root) if request.profile.source_root else PurePosixPath()
        ops = request.repo / root / self.ops_dir
        source = request.placement.source_file.with_suffix("")
        for part in reversed(source.parts):
            if (ops / part / "__init__.py").is_file():
                return root / self.ops_dir / part / _free_name(ops / part, request.placement.kernel_file.name)
        return None

    def wire(self, request: WireRequest) -> Wiring:
        if not self._is_op(request):
            return wire_call_site(request)
        root = PurePosixPath(request.profile.source_root) if request.profile.source_root else PurePosixPath()
        if not (request.repo / root / self.contract).is_file():
            raise IntegrationError(
                f"{request.view.qualname} is an op's reference, but this tree has no {self.contract} (the op "
                "contract with forward_<backend> methods): kernelbot adds kernels as op backends and never "
                f"edits {REFERENCE}"
            )
        return self._wire_op(request)

    def _is_op(self, request: WireRequest) -> bool:
        target = request.target
        return target.is_method and target.node.name.value == REFERENCE and target.owner is not None

    def _wire_op(self, request: WireRequest) -> Wiring:
        target, call = request.target, request.call
        owner = target.owner
        assert owner is not None
        class_qualname = ".".join(c.name.value for c in target.classes)
        if defines(owner, BACKEND_METHOD):
            raise IntegrationError(
                f"{class_qualname} already has a {BACKEND_METHOD}: kernelbot adds one only"
            )
        beats = request.evidence.beats_current_path
        auto, selection = False, _opt_in_reason(beats)
        if beats and defines(owner, "backend_eligible"):
            selection = (
                f"not declared in {class_qualname}.capabilities: the op already gates backends per call in "
                "its own backend_eligible, which kernelbot does not merge its guard into; opt-in only"
            )
        elif beats and _priority_leaves_out_triton(owner):
            selection = (
                f"not declared in {class_qualname}.capabilities: the op's own priority does not list "
                "KernelBackend.TRITON, so a declaration would not select it; opt-in only"
            )
        elif beats:
            auto = True
            selection = (
                f"declared in {class_qualname}.capabilities for CUDA: the kernel beat the path the op "
                "dispatches to today on the measuring GPU; calls its guard refuses take that path"
            )
        members = []
        if auto:
            members.append(_backend_eligible(target, call))
        members.append(_forward_triton(target, call, class_qualname))
        module = request.module
        adder = AddClassMembersTransformer(class_qualname, REFERENCE, members)
        module = module.visit(adder)
        if auto:
            declare = DeclareCapabilityTransformer(
                class_qualname, "KernelBackend.TRITON", "{CapabilityRequirement.CUDA}"
            )
            module = module.visit(declare)
            context = CodemodContext()
            for name in ("CapabilityRequirement", "KernelBackend"):
                AddImportsVisitor.add_needed_import(context, self.spec_module, name)
            module = AddImportsVisitor(context).transform_module(module)
        if adder.added != 1:
            raise IntegrationError(f"{class_qualname} was found but not extended (kernelbot bug?)")
        source = request.placement.source_file
        return Wiring(
            edits={source: (request.original, module.code)},
            slot=(
                f"{class_qualname}.{BACKEND_METHOD} ({source}), calling "
                f"{request.placement.kernel_file}; {class_qualname}.{REFERENCE} is unchanged"
            ),
            auto_selected=auto,
            selection=selection,
            test_hook=TestHook(method=BACKEND_METHOD),
            reference=source,
        )


def _priority_leaves_out_triton(owner: cst.ClassDef) -> bool:
    """The class sets its own `priority` and TRITON is not in it (auto-selection only tries those)."""
    for statement in owner.body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
                if isinstance(small, cst.AnnAssign):
                    targets = [small.target]
                if any(isinstance(t, cst.Name) and t.value == "priority" for t in targets):
                    return "KernelBackend.TRITON" not in cst.Module([]).code_for_node(statement)
    return False


def _free_name(directory: Path, name: str) -> str:
    """`name`, or `<stem>_v2.py`, `_v3`, ... when the engine already has a module of that name (its own
    backend: SGLang ships activation/gelu_and_mul_triton.py). A module kernelbot wrote keeps the name, so a
    second integration into the same tree is refused as such."""
    stem, n = name.removesuffix(".py"), 1
    while (directory / name).is_file() and "Generated by kernelbot" not in (directory / name).read_text():
        n += 1
        name = f"{stem}_v{n}.py"
    return name


def _opt_in_reason(beats: bool | None) -> str:
    if beats is None:
        why = "whether it beats the path the op dispatches to today was not measured"
    else:
        why = "it did not beat the path the op dispatches to today on the measuring GPU"
    return (
        f"registered opt-in, not declared in capabilities: {why}; it runs when asked for "
        "(backend=KernelBackend.TRITON, or the forced-backend switch)"
    )


def _parameters(target: Target, *, drop_self: bool) -> str:
    params = target.node.params
    if drop_self:
        positional = [*params.posonly_params, *params.params]
        if positional and positional[0] in params.posonly_params:
            params = params.with_changes(posonly_params=params.posonly_params[1:])
        else:
            params = params.with_changes(params=params.params[1:])
    text = cst.Module([]).code_for_node(params).strip()
    return text.rstrip(",").strip()


def _self_name(target: Target) -> str:
    params = target.node.params
    return [*params.posonly_params, *params.params][0].name.value


def _lazy_import(call: KernelCall, names: tuple[str, ...]) -> str:
    return f"from {call.module} import {', '.join(sorted(names))}"


def _call_lines(call: KernelCall) -> list[str]:
    invocation = call.invocation
    if call.assign_to:
        targets = ", ".join((["result"] if call.returns_value else []) + list(call.assign_to))
        return [f"{targets} = {invocation}", *(["return result"] if call.returns_value else [])]
    return [f"return {invocation}"] if call.returns_value else [invocation]


def _forward_triton(target: Target, call: KernelCall, class_qualname: str) -> cst.FunctionDef:
    """forward_native's signature (annotations and defaults as written), its body the kernel behind the
    guard; a call the guard refuses raises NotImplementedError, as an unimplemented backend does."""
    args = ", ".join(call.arguments)
    message = f"{class_qualname}: operands the Triton kernel was not checked on"
    body = [
        f'"""Triton backend; {REFERENCE} is its reference."""',
        _lazy_import(call, (call.guard, call.kernel)),
        "",
        f"if not {call.guard}({args}):",
        f"    raise NotImplementedError({message!r})",
        *_call_lines(call),
    ]
    source = "def _():\n" + "".join(f"    {line}\n" if line else "\n" for line in body)
    parsed = cst.parse_statement(source)
    assert isinstance(parsed, cst.FunctionDef)
    return target.node.with_changes(
        name=cst.Name(BACKEND_METHOD),
        decorators=(),
        body=parsed.body,
        leading_lines=(cst.EmptyLine(indent=False),),
    )


def _backend_eligible(target: Target, call: KernelCall) -> cst.FunctionDef:
    """The per-call gate SGLang's contract offers: Triton only where the guard admits the call."""
    params = _parameters(target, drop_self=True)
    self_name = _self_name(target)
    own = ", ".join(call.own_arguments)
    lines = [
        f"def backend_eligible({self_name}, backend, {params}) -> bool:",
        f"    if not super().backend_eligible(backend{', ' + own if own else ''}):",
        "        return False",
        "    if backend is not KernelBackend.TRITON:",
        "        return True",
        f"    {_lazy_import(call, (call.guard,))}",
        "",
        f"    return {call.guard}({', '.join(call.arguments)})",
    ]
    parsed = cst.parse_statement("\n".join(lines) + "\n")
    assert isinstance(parsed, cst.FunctionDef)
    return parsed.with_changes(leading_lines=(cst.EmptyLine(indent=False),))
