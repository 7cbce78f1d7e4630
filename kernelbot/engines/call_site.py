"""The convention for functions that are not ops (and for engines without a shipped convention): a guarded
call of the kernel at the top of the function itself, in the module that defines it (route_to_kernel). A
function the engine compiles (decorated with torch.compile) takes the call only when the kernel was measured
compiled; otherwise the integration refuses it, since Dynamo would trace the guard and launch the kernel in a
region nobody timed."""

from __future__ import annotations

import dataclasses
from pathlib import PurePosixPath

from libcst.codemod import CodemodContext

from kernelbot.engines.convention import KernelRequest, TestHook, WireRequest, Wiring
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.route_to_kernel import RouteToKernelCommand, device_check


@dataclasses.dataclass(frozen=True)
class CallSiteConvention:
    name: str = "call-site"

    def kernel_file(self, request: KernelRequest) -> PurePosixPath | None:
        return None

    def wire(self, request: WireRequest) -> Wiring:
        return wire_call_site(request)


def wire_call_site(request: WireRequest) -> Wiring:
    target, view = request.target, request.view
    if target.compiled and not request.evidence.measured_compiled:
        raise IntegrationError(
            f"{view.qualname} runs under torch.compile (@{', @'.join(target.decorators)}) and the kernel was "
            "not measured compiled: kernelbot does not put an untimed kernel call into a compiled region"
        )
    call = request.call
    if request.profile.kernel.lazy_import:
        check = device_check(request.envelope, call)
        call = dataclasses.replace(
            call, device_check=check, line_length=request.profile.formatter.line_length
        )
    source = request.placement.source_file
    command = RouteToKernelCommand(CodemodContext(filename=str(source)), view.qualname, call)
    rewritten = command.transform_module(request.module).code
    if command.rewritten != 1:
        raise IntegrationError(f"{view.qualname} was found but not rewritten (kernelbot bug?)")
    where = "inside a torch.compile region" if target.compiled else "at its production call site"
    return Wiring(
        edits={source: (request.original, rewritten)},
        slot=f"a guarded call at the top of {view.qualname} ({source}), {where}",
        auto_selected=True,
        selection=f"{view.qualname} is not an op with backends: every call inside the guard takes the kernel",
        test_hook=TestHook(method=view.qualname.split(".")[-1]),
        reference=source,
        in_compile_region=target.compiled,
        edits_reference=True,
    )


CONVENTION = CallSiteConvention()
