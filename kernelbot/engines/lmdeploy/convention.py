"""LMDeploy's kernel slot (as 0.18.0's PyTorch engine lays it out): references in
lmdeploy/pytorch/backends/default/ (`Default<Op>Impl`), CUDA paths in lmdeploy/pytorch/backends/cuda/ chosen
by `CudaOpsBackend.build_op` from the op's build spec, kernels in lmdeploy/pytorch/kernels/cuda/.

For `Default<Op>Impl.forward`, kernelbot adds `Triton<Op>Impl(Default<Op>Impl)` to backends/cuda/<same
module> (its `forward` calls the kernel behind its guard and falls back to the default's code), imports the
kernel from kernels/cuda at the top of that module as the CUDA backends do, and maps the op's build spec to
it in backends/cuda/op_backend.py only when the kernel beat the path CUDA builds for the op today on the
measuring GPU; otherwise the Impl is added unmapped and the integration says why. The default module is
never edited. Functions that are not a default Impl's forward get the call-site convention.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from kernelbot.engines.call_site import wire_call_site
from kernelbot.engines.convention import KernelRequest, TestHook, WireRequest, Wiring
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.map_build_spec import MapBuildSpecTransformer, find_mapping, mapped_impl

DEFAULT_DIR = PurePosixPath("lmdeploy/pytorch/backends/default")
CUDA_DIR = PurePosixPath("lmdeploy/pytorch/backends/cuda")


@dataclass(frozen=True)
class LMDeployConvention:
    name: str = "lmdeploy"

    def kernel_file(self, request: KernelRequest) -> PurePosixPath | None:
        return None  # the profile's rule: lmdeploy/pytorch/kernels/cuda/<op>_triton.py

    def wire(self, request: WireRequest) -> Wiring:
        target = request.target
        source = PurePosixPath(request.placement.source_file)
        owner = target.owner
        is_impl = (
            target.is_method
            and owner is not None
            and len(target.classes) == 1
            and target.node.name.value == "forward"
            and owner.name.value.startswith("Default")
            and owner.name.value.endswith("Impl")
            and _relative(request, source).parent == DEFAULT_DIR
        )
        return _wire_impl(request) if is_impl else wire_call_site(request)


def _relative(request: WireRequest, path: PurePosixPath) -> PurePosixPath:
    root = request.profile.source_root
    return path.relative_to(root) if root else path


def _wire_impl(request: WireRequest) -> Wiring:
    target = request.target
    assert target.owner is not None
    default_class = target.owner.name.value
    op = default_class.removeprefix("Default").removesuffix("Impl")
    root = PurePosixPath(request.profile.source_root) if request.profile.source_root else PurePosixPath()
    stem = request.placement.source_file.stem
    impl_path = Path(root / CUDA_DIR / f"{stem}.py")
    impl_module = ".".join((*CUDA_DIR.parts, stem))
    existing = (request.repo / impl_path).read_text() if (request.repo / impl_path).is_file() else None
    impl = f"Triton{op}Impl"
    if existing is not None and f"class {impl}(" in existing:
        impl = f"Triton{op}V2Impl"  # the engine's own Triton Impl of the op keeps its name
        if f"class {impl}(" in existing:
            raise IntegrationError(f"{impl_path} already defines {impl}")
    impl_text = _impl_module(existing, request, impl, default_class, stem)
    edits: dict[Path, tuple[str | None, str]] = {impl_path: (existing, impl_text)}

    op_backend = Path(root / CUDA_DIR / "op_backend.py")
    default_backend = Path(root / DEFAULT_DIR / "op_backend.py")
    mapping = find_mapping(_read(request, default_backend), default_class)
    cuda_text = _read(request, op_backend)
    today = mapped_impl(cuda_text, mapping.spec) if mapping else None
    current = f"{today}, which CUDA builds for it today" if today else f"{default_class}, CUDA's path today"
    beats = request.evidence.beats_current_path
    if beats and mapping is not None and cuda_text:
        transformer = MapBuildSpecTransformer(mapping, f".{stem}", impl)
        mapped = cst.parse_module(cuda_text).visit(transformer).code
        if transformer.mapped != 1:
            raise IntegrationError(f"{op_backend} has no build_op kernelbot can map {mapping.spec} in")
        edits[op_backend] = (cuda_text, mapped)
        auto = True
        selection = (
            f"{mapping.spec} is mapped to {impl} in {op_backend}: the kernel beat {current} on the "
            f"measuring GPU; calls its guard refuses run {default_class}.forward"
        )
    else:
        auto = False
        if mapping is None:
            why = f"{default_backend} builds {default_class} from no build spec kernelbot can find"
        elif beats is None:
            why = f"whether it beats {current} was not measured"
        else:
            why = f"it did not beat {current} on the measuring GPU"
        selection = f"{impl} is added but not mapped in {op_backend}'s build_op: {why}"
    return Wiring(
        edits=edits,
        slot=(
            f"{impl}({default_class}) in {impl_path}, calling the kernel in {request.placement.kernel_file}; "
            f"{request.placement.source_file} is unchanged"
        ),
        auto_selected=auto,
        selection=selection,
        test_hook=TestHook(method="forward", owner=(impl_module, impl)),
        reference=request.placement.source_file,
    )


def _read(request: WireRequest, path: Path) -> str:
    full = request.repo / path
    return full.read_text() if full.is_file() else ""


def _impl_module(existing: str | None, request: WireRequest, impl: str, default_class: str, stem: str) -> str:
    """The CUDA backend module with the new Impl appended (a new module when there is none)."""
    call = request.call
    fallback = f"return super().forward({', '.join(call.own_arguments)})"
    guarded = cst.Module([]).code_for_node(call.statement())
    body_source = "def _():\n" + "".join(f"    {ln}\n" for ln in (*guarded.splitlines(), fallback))
    body = cst.parse_statement(body_source).body
    forward = request.target.node.with_changes(body=body, decorators=(), leading_lines=())
    skeleton = cst.parse_statement(
        f"class {impl}({default_class}):\n"
        f'    """{_docstring(request, default_class)}"""\n'
        "\n"
        "    def forward(self):\n"
        "        pass\n"
    )
    assert isinstance(skeleton, cst.ClassDef)
    members = list(skeleton.body.body)
    members[-1] = forward.with_changes(leading_lines=(cst.EmptyLine(indent=False),))
    cls = skeleton.with_changes(
        body=skeleton.body.with_changes(body=members),
        leading_lines=(cst.EmptyLine(indent=False), cst.EmptyLine(indent=False)),
    )
    if existing is None:
        header = request.profile.formatter.new_file_header
        module = cst.parse_module((header + "\n") if header else "")
        cls = cls.with_changes(leading_lines=())
    else:
        module = cst.parse_module(existing)
    module = module.with_changes(body=[*module.body, cls])
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, call.module, call.guard)
    AddImportsVisitor.add_needed_import(context, call.module, call.kernel)
    AddImportsVisitor.add_needed_import(context, f"default.{stem}", default_class, relative=2)
    return AddImportsVisitor(context).transform_module(module).code


def _docstring(request: WireRequest, default_class: str) -> str:
    return f"{default_class} with a Triton kernel; calls outside its guard run the default code."


CONVENTION = LMDeployConvention()
