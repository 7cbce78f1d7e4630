"""Codemod: makes a function (or method) call the new kernel where the guard allows it. Its signature,
decorators, docstring and body stay as they were; one `if <guard>(...): <call the kernel>` block goes right
after the docstring, so everything the guard refuses runs the original code below it. The imports of the
kernel and its guard are scheduled on the codemod context (AddImportsVisitor), not written here.

With a lazy import (KernelCall.device_check, for modules every backend imports, such as LMDeploy's
backends/default/) the module gains no import at all: the block first checks that a tensor argument is on
the kernel's device, and only then imports the kernel module (and with it Triton) inside the function, the
way the repository's own backends import their kernels:

    if x.device.type == "cuda":
        from pkg.kernels.rms_norm_triton import can_use_rms_norm_triton, rms_norm_triton

        if can_use_rms_norm_triton(x):
            return rms_norm_triton(x)
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor

from kernelbot.integrate.envelope import Envelope
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.set_module_docstring import is_docstring


@dataclass(frozen=True)
class KernelCall:
    """How the function calls the kernel: `arguments` forwards its own parameters (and `self.<attr>` for
    the attributes the entry takes); `assign_to` holds `self.<attr>` targets the entry returns after its
    result; `returns_value` is False for functions that only work in place (the kernel is called for its
    effect) or return nothing but attributes."""

    module: str  # dotted module of the kernel
    kernel: str
    guard: str
    arguments: tuple[str, ...]
    returns_value: bool
    assign_to: tuple[str, ...] = ()
    # Non-empty: import the kernel inside the function, behind this check of a tensor's device (see the
    # module docstring); empty: import it at the top of the module.
    device_check: str = ""
    line_length: int = 88  # for laying out the function-level import
    # The function's own arguments as it would forward them to another implementation of itself (no
    # `param=self.<attr>`): what a fallback such as `super().forward(...)` passes.
    own_arguments: tuple[str, ...] = ()
    # What the kernel's entry takes, where it takes fewer parameters than the guard (those its body never
    # names are not in its signature: drop_unread_params); empty: `arguments`.
    kernel_arguments: tuple[str, ...] = ()

    @property
    def lazy(self) -> bool:
        return bool(self.device_check)

    @property
    def invocation(self) -> str:
        """The kernel's call: `rms_norm_triton(x, residual, weight=self.weight)`."""
        return f"{self.kernel}({', '.join(self.kernel_arguments or self.arguments)})"

    def statement(self, indent: int = 4) -> cst.If:
        """The block; `indent` is the column the function's body starts at (it places the lazy import)."""
        args = ", ".join(self.arguments)
        call = self.invocation
        if self.assign_to:
            targets = ", ".join((["result"] if self.returns_value else []) + list(self.assign_to))
            lines = [f"{targets} = {call}", "return result" if self.returns_value else "return"]
        elif self.returns_value:
            lines = [f"return {call}"]
        else:
            lines = [call, "return"]
        source = f"if {self.guard}({args}):\n" + "".join(f"    {line}\n" for line in lines)
        if self.lazy:
            lines = [*self._import_lines(indent + 4), "", *source.splitlines()]
            nested = "".join(f"    {line}\n" if line else "\n" for line in lines)
            source = f"if {self.device_check}:\n{nested}"
        statement = cst.parse_statement(source)
        assert isinstance(statement, cst.If)
        return statement

    def _import_lines(self, indent: int) -> list[str]:
        names = sorted((self.guard, self.kernel))
        line = f"from {self.module} import {', '.join(names)}"
        if indent + len(line) <= self.line_length:
            return [line]
        return [f"from {self.module} import (", *(f"    {name}," for name in names), ")"]


class RouteToKernelCommand(VisitorBasedCodemodCommand):
    DESCRIPTION = "Call a Triton kernel from a function, inside the envelope its guard checks."

    def __init__(self, context: CodemodContext, qualname: str, call: KernelCall) -> None:
        super().__init__(context)
        self.qualname = qualname
        self.call = call
        self.rewritten = 0
        self._classes: list[str] = []
        self._functions = 0
        self._indent = 4

    def visit_Module(self, node: cst.Module) -> None:
        self._indent = len(node.default_indent)
        if self.call.lazy:
            return
        AddImportsVisitor.add_needed_import(self.context, self.call.module, self.call.guard)
        AddImportsVisitor.add_needed_import(self.context, self.call.module, self.call.kernel)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self._classes.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions += 1

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._functions -= 1
        path = ".".join([*self._classes, original_node.name.value])
        if self._functions or path != self.qualname:
            return updated_node
        self.rewritten += 1
        statement = self.call.statement(indent=self._indent * (len(self._classes) + 1))
        return updated_node.with_changes(body=_insert_after_docstring(updated_node.body, statement))


def _insert_after_docstring(body: cst.BaseSuite, statement: cst.If) -> cst.IndentedBlock:
    if isinstance(body, cst.SimpleStatementSuite):  # `def f(x): return x` on one line
        body = cst.IndentedBlock([cst.SimpleStatementLine([s]) for s in body.body])
    assert isinstance(body, cst.IndentedBlock)
    statements = list(body.body)
    at = 1 if statements and is_docstring(statements[0]) else 0
    return body.with_changes(body=[*statements[:at], statement, *statements[at:]])


def device_check(envelope: Envelope, call: KernelCall) -> str:
    """The condition a lazy import waits for: a tensor argument on the envelope's device (the guard
    checks the rest). A required tensor when there is one; else an optional one that is not None."""
    # What the call passes for each of the kernel's parameters: `x`, `k=k`, `weight=self.weight`.
    passed = {
        name: (value if eq else name)
        for name, eq, value in (arg.partition("=") for arg in call.arguments if "*" not in arg)
    }
    # The required ones first; never one the engine keeps on the CPU, whatever the kernel's device.
    for rule in sorted(envelope.tensors, key=lambda r: r.optional):
        if rule.name in passed and not rule.host:
            on_device = f'{passed[rule.name]}.device.type == "{envelope.device_type}"'
            return f"{passed[rule.name]} is not None and {on_device}" if rule.optional else on_device
    raise IntegrationError(
        "the profile imports kernels lazily, behind a check of a tensor argument's device, but the "
        "kernel takes no tensor argument the function passes on"
    )
