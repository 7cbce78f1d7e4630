"""The cheap first stage of the cascade: read the candidate's source (libcst) and flag every hack class that
has a static signature, with the line and the code as evidence.

Names are resolved through the imports (`F.silu` is torch.nn.functional.silu, `from torch import compile as c`
is torch.compile), so renaming an import does not hide a call. A tensor method or torch function is judged
by the ATen op it runs (guards.host_ops): views, contiguous / clone copies and float casts are host
preparation, allowed and listed in the report (`preparation`); `torch.Tensor.add` under any alias computes.
What cannot be seen statically (getattr with a computed name, a cast whose meaning depends on the source
dtype) is left to the runtime guards, which record what the candidate really did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider, QualifiedNameSource

from evaluators.guards.host_ops import CallVerdict, HostOp, tensor_method, torch_function
from evaluators.result import HackFinding
from evaluators.static.calls import (
    BUILTIN_METHOD_NAMES,
    caches_device_facts,
    literal_args,
    preparation_text,
    string_arg,
)
from evaluators.static.facts import dynamic_sizes, host_arguments, reference_modules, task_float_dtypes
from evaluators.static.rules import (
    BUILTIN_RULES,
    CACHE_DECORATORS,
    L2_MARKERS,
    LOW_PRECISION_NAMES,
    MODULE_RULES,
)
from evaluators.static.syntax import (
    MUTATING_METHODS,
    allowed_torch,
    decorator_callee,
    is_dotted_name,
    is_import_fallback,
    is_mutable_container,
    match_name_rule,
    root_name,
)
from evaluators.task import Task

_KERNEL_DECORATORS = ("triton.jit", "triton.runtime.jit.jit", "triton.autotune", "triton.heuristics")
_MAX_FINDINGS = 40


@dataclass(frozen=True)
class StaticReport:
    findings: list[HackFinding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # contract violations that are not hacks
    preparation: list[str] = field(default_factory=list)  # host copies / casts seen: "x.contiguous()"


def check_static(source: str, task: Task) -> StaticReport:
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        return StaticReport(errors=[f"the candidate does not parse: line {exc.raw_line}: {exc.message}"])
    scanner = _Scanner(module, task)
    MetadataWrapper(module, unsafe_skip_copy=True).visit(scanner)
    scanner.finish()
    preparation = [text for _, text in sorted(scanner._preparation)]
    return StaticReport(findings=scanner.findings, errors=scanner.errors, preparation=preparation)


def host_preparation(source: str, task: Task) -> list[str]:
    """The host-side copies and casts a candidate makes ("x.contiguous()", "weight.float()"), in order."""
    return check_static(source, task).preparation


class _Scanner(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def __init__(self, module: cst.Module, task: Task) -> None:
        super().__init__()
        self.module = module
        self.task = task
        self.findings: list[HackFinding] = []
        self.errors: list[str] = []
        self.kernels: list[str] = []
        self._kernel_depth = 0
        self._function_depth = 0
        self._module_containers: dict[str, int] = {}  # module-level names bound to mutable containers
        self._global_names: set[str] = set()  # names some function declares `global`
        self._seen: set[tuple[str, int]] = set()
        self._device_fact_caches: set[int] = set()  # ids of lru_cache decorators over device queries
        self._preparation: list[tuple[tuple[int, int], str]] = []
        dtypes = task_float_dtypes(task)
        self.fp32_only = bool(dtypes) and dtypes <= {"float32", "float64"}
        self.any_fp32 = "float32" in dtypes
        self.dynamic_sizes = dynamic_sizes(task)
        self.reference_modules = reference_modules(task)
        self.host_arguments = host_arguments(task)

    # --- reporting ----------------------------------------------------------------------------------

    def flag(self, node: cst.CSTNode, kind: str, what: str) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        if (kind, line) in self._seen or len(self.findings) >= _MAX_FINDINGS:
            return
        self._seen.add((kind, line))
        snippet = " ".join(self.module.code_for_node(node).split())[:120]
        self.findings.append(HackFinding(kind, f"line {line}: {what}: {snippet}", detector="static"))

    def finish(self) -> None:
        if not self.kernels:
            self.errors.append(
                "no @triton.jit kernel: the candidate must do its work in Triton kernels (host code may only "
                "allocate, take views and launch)"
            )
        text = self.module.code
        for marker in L2_MARKERS:
            if marker in text:
                line = text[: text.index(marker)].count("\n") + 1
                self.findings.append(
                    HackFinding(
                        "persisting_l2",
                        f"line {line}: access-policy / persisting-L2 code: {marker}",
                        detector="static",
                    )
                )
                break

    def qualified(self, node: cst.CSTNode) -> set[str]:
        return {
            q.name
            for q in self.get_metadata(QualifiedNameProvider, node, set())
            if q.source in (QualifiedNameSource.IMPORT, QualifiedNameSource.BUILTIN)
        }

    @property
    def in_kernel(self) -> bool:
        return self._kernel_depth > 0

    # --- functions and kernels ----------------------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        names = set().union(*(self.qualified(decorator_callee(d.decorator)) for d in node.decorators))
        if any(n in _KERNEL_DECORATORS for n in names):
            self._kernel_depth += 1
            self.kernels.append(node.name.value)
        if names & CACHE_DECORATORS and caches_device_facts(node, self.qualified):
            self._device_fact_caches.update(id(decorator_callee(d.decorator)) for d in node.decorators)
        self._function_depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._function_depth -= 1
        names = set().union(
            *(self.qualified(decorator_callee(d.decorator)) for d in original_node.decorators)
        )
        if any(n in _KERNEL_DECORATORS for n in names):
            self._kernel_depth -= 1

    # --- names --------------------------------------------------------------------------------------

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return self._check_name(node)

    def visit_Name(self, node: cst.Name) -> bool:
        return self._check_name(node)

    def _check_name(self, node: cst.Attribute | cst.Name) -> bool:
        """Judge the outermost dotted name only (torch.cuda.current_stream, not also torch.cuda)."""
        names = self.qualified(node)
        if id(node) in self._device_fact_caches:
            return False  # a cache of device facts (SM count, capability), not of results
        for name in names:
            if name.startswith("torch.Tensor.") and not self.in_kernel:
                verdict = tensor_method(name.split(".")[2])
                if verdict is not None and verdict.kind == HostOp.COMPUTE:
                    self.flag(
                        node, "pytorch_fallback", f"PyTorch computes in host code ({name}{_why(verdict)})"
                    )
                return False
            if name.startswith("builtins."):
                rule = BUILTIN_RULES.get(name.removeprefix("builtins."))
                if rule:
                    self.flag(node, rule[0], rule[1])
                return False
            rule = match_name_rule(name)
            if rule is not None:
                self.flag(node, rule[0], f"{rule[1]} ({name})")
                return False
            if name.split(".", 1)[0] in self.reference_modules:
                self.flag(node, "pytorch_fallback", f"the reference / original implementation ({name})")
                return False
            if name.startswith("torch.") and not self.in_kernel and not allowed_torch(name):
                if name in LOW_PRECISION_NAMES:
                    continue  # a dtype: judged where it is used (casts), not here
                verdict = torch_function(name.split(".", 1)[1]) if name.count(".") == 1 else None
                if verdict is not None and verdict.allowed:
                    return False  # torch.reshape / torch.flatten / torch.clone: layout, not compute
                self.flag(node, "pytorch_fallback", f"PyTorch computes in host code ({name}{_why(verdict)})")
                return False
        return not (names and is_dotted_name(node))

    # --- calls --------------------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) else ""
        callee = self.qualified(func)
        if self.in_kernel:
            self._check_kernel_call(node, method, callee)
            return
        local_method = method and not callee
        if local_method and method not in BUILTIN_METHOD_NAMES:
            self._check_tensor_call(node, method)
        elif "builtins.getattr" in callee:
            attr = string_arg(node, 1)
            verdict = tensor_method(attr) if attr else None
            if verdict is not None and verdict.kind == HostOp.COMPUTE:
                self.flag(node, "pytorch_fallback", f"getattr reaches tensor method .{attr}(){_why(verdict)}")

    def _check_tensor_call(self, node: cst.Call, method: str) -> None:
        """`x.<method>(...)` judged by the ATen op it runs, with its literal arguments when it has only
        those (`.to(torch.bool)` computes, `.to(torch.float32)` casts)."""
        literal = literal_args(node, self.qualified)
        verdict = tensor_method(method, literal or ())
        if verdict is None:
            return
        if verdict.kind == HostOp.COMPUTE and _receiver_root(node.func) in self.host_arguments:
            return  # a tensor the task keeps on the CPU: the host computes with it as the reference does
        if verdict.kind == HostOp.COMPUTE:
            self.flag(
                node, "pytorch_fallback", f"tensor method .{method}() computes in host code{_why(verdict)}"
            )
        elif self.fp32_only and verdict.lowers_float32:
            self.flag(node, "precision_downgrade", f".{method}() casts below float32 in a float32 task")
        elif verdict.kind == HostOp.COPY or (literal is None and _casts_given_a_dtype(method)):
            self._note_preparation(node, method)

    def _note_preparation(self, node: cst.Call, method: str) -> None:
        position = self.get_metadata(PositionProvider, node).start
        self._preparation.append(
            ((position.line, position.column), preparation_text(self.module, node, method))
        )

    def _check_kernel_call(self, node: cst.Call, method: str, callee: set[str]) -> None:
        is_cast = method == "to" or "triton.language.cast" in callee
        if self.fp32_only and is_cast and self._has_low_precision_arg(node):
            self.flag(node, "precision_downgrade", "cast to a 16-bit type inside a kernel of a float32 task")
        if "triton.language.dot" in callee and self.any_fp32:
            keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
            precision = keywords.get("input_precision")
            tf32 = keywords.get("allow_tf32")
            if isinstance(precision, cst.SimpleString) and "tf32" in precision.value:
                self.flag(node, "precision_downgrade", "tl.dot with TF32 inputs in a float32 task")
            elif isinstance(tf32, cst.Name) and tf32.value == "True":
                self.flag(node, "precision_downgrade", "tl.dot with allow_tf32=True in a float32 task")
            elif precision is None and tf32 is None and self.fp32_only:
                self.flag(
                    node,
                    "precision_downgrade",
                    'tl.dot defaults to TF32 for float32 inputs: pass input_precision="ieee"',
                )

    def _has_low_precision_arg(self, node: cst.Call) -> bool:
        return any(self.qualified(a.value) & LOW_PRECISION_NAMES for a in node.args)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.MatrixMultiply) and not self.in_kernel:
            self.flag(node, "pytorch_fallback", "matrix product with @ in host code")

    # --- statements ---------------------------------------------------------------------------------

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self._check_module(node, cst.helpers.get_full_name_for_node(alias.name) or "")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative:
            self.flag(node, "sandbox_escape", "relative import (reaches the evaluator's package)")
        module = cst.helpers.get_full_name_for_node(node.module) if node.module else ""
        self._check_module(node, module or "")

    def _check_module(self, node: cst.CSTNode, module: str) -> None:
        top = module.split(".", 1)[0]
        rule = MODULE_RULES.get(top)
        if rule is not None:
            self.flag(node, rule[0], f"imports {module} ({rule[1]})")
        elif top in self.reference_modules:
            self.flag(node, "pytorch_fallback", f"imports the reference / original implementation ({module})")

    def visit_Global(self, node: cst.Global) -> None:
        self._global_names.update(n.name.value for n in node.names)
        self.flag(node, "output_caching", "`global` rebinds module state from a call")

    def visit_Try(self, node: cst.Try) -> None:
        if is_import_fallback(node):
            return  # a version-compatibility import, not a compute fallback
        self.flag(node.body, "pytorch_fallback", "try/except: a fallback path when the kernel fails")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_target(target.target)
        if self._function_depth == 0 and is_mutable_container(node.value):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._module_containers[target.target.value] = 1

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        root = root_name(node.target)
        module_state = root in self._module_containers or root in self._global_names
        if self._function_depth and module_state and isinstance(node.value, cst.Integer):
            self.flag(
                node, "drift", f"counts its calls in module state ({root!r}): behaviour can change after N"
            )
            return
        self._check_target(node.target)
        if self._function_depth and isinstance(node.target, cst.Name) and module_state:
            self.flag(node, "output_caching", "updates module state from a call")

    def visit_Del(self, node: cst.Del) -> None:
        self._check_target(node.target)

    def _check_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._check_target(element.value)
            return
        if isinstance(target, cst.Attribute):
            base = self.qualified(target.value)
            if any(n.startswith("torch.backends") for n in base):
                self.flag(target, "precision_downgrade", "changes a global precision flag")
            elif base:
                self.flag(
                    target, "harness_patch", "assigns an attribute of an imported module (monkey-patching)"
                )
        if isinstance(target, cst.Subscript) and self._function_depth:
            root = root_name(target.value)
            if root in self._module_containers:
                self.flag(
                    target, "output_caching", f"stores into the module-level container {root!r} from a call"
                )

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if self._function_depth and isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            root = root_name(call.func.value)
            if root in self._module_containers and call.func.attr.value in MUTATING_METHODS:
                self.flag(node, "output_caching", f"mutates the module-level container {root!r} from a call")

    # --- literals: hard-coded dynamic sizes ---------------------------------------------------------

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # Equality with a listed size is a special case; thresholds (n <= 1024) are legitimate heuristics.
        equality = (cst.Equal, cst.NotEqual, cst.In, cst.NotIn, cst.Is, cst.IsNot)
        if any(isinstance(c.operator, equality) for c in node.comparisons):
            operands = [node.left, *(c.comparator for c in node.comparisons)]
            for operand in operands:
                items = (
                    [e.value for e in operand.elements]
                    if isinstance(operand, (cst.Tuple, cst.List, cst.Set))
                    else [operand]
                )
                self._check_literals(node, items, "compares against")

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """A launch `kernel[(1000,)]` with a grid literal equal to a listed size."""
        if self.in_kernel or not isinstance(node.value, (cst.Name, cst.Attribute)):
            return
        for element in node.slice:
            grid = element.slice.value if isinstance(element.slice, cst.Index) else None
            if isinstance(grid, (cst.Tuple, cst.List)):
                self._check_literals(node, [e.value for e in grid.elements], "launches a grid of")

    def visit_Dict(self, node: cst.Dict) -> None:
        """A lookup table keyed by the listed sizes ({1000: ..., 3000: ...})."""
        keys = [e.key for e in node.elements if isinstance(e, cst.DictElement)]
        self._check_literals(node, keys, "keys a table by")

    def _check_literals(self, node: cst.CSTNode, operands: list[cst.BaseExpression], verb: str) -> None:
        for operand in operands:
            if isinstance(operand, cst.Integer):
                value = int(operand.value.replace("_", ""), 0)
                key = self.dynamic_sizes.get(value)
                if key is not None:
                    self.flag(node, "hardcoded_shapes", f"{verb} {value}, the {key!r} of a listed case")


def _receiver_root(func: cst.BaseExpression) -> str:
    """The name a method's receiver starts from (`seq_lens_cpu[:bs].max` -> `seq_lens_cpu`), else ""."""
    value = func.value if isinstance(func, cst.Attribute) else func
    while True:
        if isinstance(value, cst.Name):
            return value.value
        if isinstance(value, cst.Subscript):
            value = value.value
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            value = value.func.value
        else:
            return ""


def _why(verdict: CallVerdict | None) -> str:
    return f": {verdict.detail}" if verdict is not None and verdict.detail else ""


def _casts_given_a_dtype(method: str) -> bool:
    """`.to(dtype)` / `.type(dtype)` with a dtype the static checks cannot read: a cast all the same."""
    import torch

    verdict = tensor_method(method, (torch.float64,))
    return verdict is not None and verdict.kind == HostOp.COPY
