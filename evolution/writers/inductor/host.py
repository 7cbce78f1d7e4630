"""Translate Inductor's host wrapper (`call(args)`) into a candidate's host code.

The wrapper is straight-line Python: unpack graph inputs, allocate buffers, launch kernels, return outputs.
Each statement is kept, dropped or rewritten: graph inputs become the reference's own arguments (or
`x.shape[0]`-style expressions), `empty_strided_<device>` becomes `torch.empty(..., device=...)`
(`torch.empty_strided` where the strides are not a contiguous tensor's), `reinterpret_tensor` becomes
`torch.as_strided`, and `<kernel>.run(...)` becomes an explicit `kernel[grid](..., XBLOCK=...,
num_warps=...)` launch whose block sizes are named module constants (the launch tuner's knobs). A call into
ATen (a fallback Inductor could not lower to Triton) or anything else a candidate may not do raises
InductorConversionError.
"""

from __future__ import annotations

import ast
import copy
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import overload

from evolution.writers.inductor.kernels import (
    MAX_Y_GRID,
    NUMEL_PARAMS,
    NUMEL_PARAMS_OLD,
    InductorConversionError,
    InductorUnsupported,
    Kernel,
)
from evolution.writers.inductor.model import Capture
from evolution.writers.inductor.wrapper import find_call, launch_defaults, origin_before

# A launch knob's name: what precedes the launch parameter (`K<i>_` for the i-th kernel, under the dtype's
# tag when the seed holds one host function per dtype: `BF16_K0_`), then the parameter (`XBLOCK`,
# `MIN_XBLOCK`, `NUM_WARPS`...). Written by _Translator; the launch tuner reads the names back.
LAUNCH_KNOB = re.compile(r"^((?:[A-Z0-9]+_)?K\d+_)([A-Z0-9_]+)$")

_DROPPED_CALLS = ("assert_size_stride", "assert_alignment", "get_raw_stream", "start_graph", "end_graph")
_ALLOWED_FUNCTIONS = frozenset(
    {"max", "min", "abs", "int", "float", "bool", "len", "tuple", "range", "RuntimeError"}
)
_ALLOWED_METHODS = frozenset({"size", "stride", "item", "storage_offset", "numel", "dim"})
_ALLOWED_QUALIFIED = frozenset(
    {"torch.empty", "torch.empty_strided", "torch.as_strided", "triton.cdiv", "triton.next_power_of_2"}
)
_SIZE_FUNCTIONS = frozenset({"min", "max", "int", "triton.cdiv", "triton.next_power_of_2"})
# Inductor's size parameters: its symbols (`ks0`) and its axes' extents (`xnumel`, `r0_numel`, `rnumel`).
_SIZE_PARAM = re.compile(r"ks\d+|[xyz]numel|r\d*_?numel")
_ATEN_ROOTS = ("torch.ops.", "aten.", "extern_kernels.", "torch._ops.", "inductor_ops.", "torch.")
_FALLBACK_ROOTS = ("torch.ops.", "aten.", "extern_kernels.")
_SIZE_SOURCE = re.compile(r"^(\w+)\.shape\[(\d+)\]$")
# Names the host code binds itself, which no size takes.
HOST_NAMES = frozenset({"device", "device_"})


@dataclass(frozen=True)
class Tunable:
    name: str
    value: int
    comment: str


@dataclass
class HostCode:
    kernels: list[Kernel] = field(default_factory=list)  # launched, in order, each once
    body: list[str] = field(default_factory=list)  # lines of the host function body (4-space indented)
    tunables: list[Tunable] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)  # kernel name -> "aten.slice, aten.silu, ..."
    # kernel name -> its size parameters (`ks0`, `r0_numel`) every launch passes a value fixed for the
    # served model (a head size, a hidden size), which the kernel may take as tl.constexpr
    fixed_sizes: dict[str, set[str]] = field(default_factory=dict)
    uses_math: bool = False


def translate_host(
    capture: Capture,
    kernels: dict[str, Kernel],
    *,
    device_var: str,
    tunable_prefix: str,
    outputs_expr: Callable[[list[ast.expr]], ast.expr],
) -> HostCode:
    """Host code for one capture. `kernels` maps Inductor's kernel names to converted kernels;
    `outputs_expr` builds the return value from the graph's output expressions."""
    module = ast.parse(capture.wrapper)
    call = find_call(module)
    fallbacks = aten_fallbacks(call)
    if fallbacks:
        raise InductorUnsupported(_fallback_text(fallbacks))
    lines = capture.wrapper.splitlines()
    host = HostCode()
    translator = _Translator(capture, kernels, host, device_var, tunable_prefix, lines)
    for stmt in call.body:
        translator.statement(stmt, outputs_expr)
    if not translator.returned:
        raise InductorConversionError("Inductor's wrapper has no return statement (unknown output format)")
    return host


def aten_fallbacks(call: ast.FunctionDef) -> list[str]:
    """The ATen ops Inductor's host code calls (`torch.ops.aten.topk.default`, `extern_kernels.mm`), each
    once, in order: the ops it did not lower to Triton."""
    found: dict[str, None] = {}
    for node in ast.walk(call):
        if isinstance(node, ast.Call):
            func = _unparse(node.func)
            if func.startswith(_FALLBACK_ROOTS):
                found[func.removeprefix("torch.ops.").removeprefix("extern_kernels.")] = None
    return list(found)


def _fallback_text(ops: list[str]) -> str:
    return (
        f"Inductor falls back to ATen for {', '.join(ops)} (it writes no Triton kernel for "
        f"{'it' if len(ops) == 1 else 'them'}), and a candidate may not compute with PyTorch: the Inductor "
        "seed writes no candidate for this task"
    )


class _Translator:
    def __init__(
        self,
        capture: Capture,
        kernels: dict[str, Kernel],
        host: HostCode,
        device_var: str,
        tunable_prefix: str,
        lines: list[str],
    ) -> None:
        self.capture = capture
        self.kernels = kernels
        self.host = host
        self.device_var = device_var
        self.prefix = tunable_prefix
        self.lines = lines
        self.names: dict[str, ast.expr] = {}  # wrapper name -> replacement expression
        self.scalars: set[str] = set()  # graph inputs that are Python scalars wrapped as 0-d tensors
        self.size_tuples: dict[str, str] = {}  # `arg2_1_size` -> the argument whose .size() it holds
        self.readable: set[str] = set()  # `x_size0`-style names already assigned
        # The int graph inputs the capture found fixed, and what each host local was assigned (once).
        self.fixed = {i.expr for i in capture.inputs if i.kind == "symint" and not i.dynamic}
        self.sources: dict[str, ast.expr | None] = {}
        self.returned = False

    # --- statements -------------------------------------------------------------------------------------

    def statement(self, stmt: ast.stmt, outputs_expr: Callable[[list[ast.expr]], ast.expr]) -> None:
        if isinstance(stmt, ast.Assign) and _unparse(stmt.value) == "args":
            self._bind_inputs(stmt)
        elif isinstance(stmt, (ast.Delete, ast.Pass)):
            return
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self._expression_call(stmt)
        elif isinstance(stmt, ast.With):
            for item in stmt.items:  # torch.cuda._DeviceGuard(0): the evaluator already selected the device
                if "DeviceGuard" not in _unparse(item.context_expr):
                    raise InductorUnsupported(f"unsupported context in Inductor's wrapper: {_unparse(item)}")
            for inner in stmt.body:
                self.statement(inner, outputs_expr)
        elif isinstance(stmt, ast.Return):
            self._return(stmt, outputs_expr)
        elif isinstance(stmt, ast.Assign):
            self._assign(stmt)
        elif isinstance(stmt, ast.If):
            self._emit(self._rewrite(stmt))
        else:
            raise InductorUnsupported(f"unsupported statement in Inductor's wrapper: {_unparse(stmt)[:120]}")

    def _bind_inputs(self, stmt: ast.Assign) -> None:
        target = stmt.targets[0]
        names = [_name(e) for e in target.elts] if isinstance(target, ast.Tuple) else [_name(target)]
        if len(names) != len(self.capture.inputs):
            raise InductorConversionError(
                f"Inductor's graph takes {len(names)} inputs but {len(self.capture.inputs)} were traced"
            )
        for name, graph_input in zip(names, self.capture.inputs, strict=True):
            self.names[name] = ast.parse(graph_input.expr, mode="eval").body
            if graph_input.kind == "scalar":
                self.scalars.add(name)

    def _expression_call(self, stmt: ast.Expr) -> None:
        call = stmt.value
        assert isinstance(call, ast.Call)
        func = _unparse(call.func)
        if func in _DROPPED_CALLS or func == "args.clear" or func.startswith("torch.cuda.set_device"):
            return
        if isinstance(call.func, ast.Attribute) and call.func.attr == "run":
            self._launch(call, stmt.lineno)
            return
        raise InductorUnsupported(self._fallback_message(func))

    def _assign(self, stmt: ast.Assign) -> None:
        value = stmt.value
        if isinstance(value, ast.Call) and _unparse(value.func) in _DROPPED_CALLS:
            return
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
            if isinstance(value, ast.Call) and _unparse(value.func).startswith("empty_strided"):
                self._emit(ast.Assign([ast.Name(self._local(target), ast.Store())], self._allocation(value)))
                return
            replacement = self._rewrite(copy.deepcopy(value))
            # `s27 = arg1_1` where arg1_1 is an int argument: use the argument's own name from here on.
            if isinstance(value, ast.Name) and value.id in self.names and isinstance(replacement, ast.Name):
                self.names[target] = replacement
                return
            # `arg2_1_size = arg2_1.size()`: remembered, not emitted; its items become x_size0, x_size1...
            if _unparse(replacement).endswith(".size()") and isinstance(replacement, ast.Call):
                receiver = replacement.func.value if isinstance(replacement.func, ast.Attribute) else None
                if isinstance(receiver, ast.Name) and not replacement.args:
                    self.size_tuples[target] = receiver.id
                    return
            if (
                isinstance(value, ast.Subscript)
                and isinstance(value.value, ast.Name)
                and value.value.id in self.size_tuples
                and isinstance(value.slice, ast.Constant)
                and isinstance(value.slice.value, int)
            ):
                replacement = ast.parse(
                    f"{self.size_tuples[value.value.id]}.shape[{value.slice.value}]", mode="eval"
                ).body
            match = _SIZE_SOURCE.match(_unparse(replacement))
            if match and isinstance(value, (ast.Name, ast.Subscript)):
                readable = f"{match.group(1)}_size{match.group(2)}"
                self.names[target] = ast.Name(readable, ast.Load())
                if readable not in self.readable:
                    self.readable.add(readable)
                    self._remember(readable, replacement)
                    self._emit(ast.Assign([ast.Name(readable, ast.Store())], replacement))
                return
        rewritten = self._rewrite(stmt)
        if isinstance(rewritten, ast.Assign) and isinstance(rewritten.targets[0], ast.Name):
            self._remember(rewritten.targets[0].id, rewritten.value)
        self._emit(rewritten)

    def _remember(self, local: str, value: ast.expr) -> None:
        # A local assigned twice stands for no one expression.
        self.sources[local] = None if local in self.sources else value

    def _is_fixed(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """Whether `node` (host code) has one value for the served model: built from fixed int inputs and
        literals by arithmetic, min/max and Triton's size helpers."""
        if _unparse(node) in self.fixed:
            return True
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int) and not isinstance(node.value, bool)
        if isinstance(node, ast.Name):
            source = self.sources.get(node.id)
            return node.id not in seen and source is not None and self._is_fixed(source, seen | {node.id})
        if isinstance(node, ast.BinOp):
            return self._is_fixed(node.left, seen) and self._is_fixed(node.right, seen)
        if isinstance(node, ast.UnaryOp):
            return self._is_fixed(node.operand, seen)
        if isinstance(node, ast.Call) and _unparse(node.func) in _SIZE_FUNCTIONS and not node.keywords:
            return all(self._is_fixed(a, seen) for a in node.args)
        return False

    def _allocation(self, call: ast.Call) -> ast.expr:
        """`torch.empty(size, ...)` where Inductor's strides are a contiguous tensor's (most buffers: what an
        engine's host writes), else `torch.empty_strided(size, stride, ...)`."""
        size, stride, dtype = (self._rewrite(copy.deepcopy(a)) for a in call.args[:3])
        keywords = [ast.keyword("dtype", dtype), ast.keyword("device", ast.Name(self.device_var, ast.Load()))]
        if _contiguous_strides(size, stride):
            return ast.Call(_dotted("torch.empty"), [size], keywords)
        return ast.Call(_dotted("torch.empty_strided"), [size, stride], keywords)

    def _return(self, stmt: ast.Return, outputs_expr: Callable[[list[ast.expr]], ast.expr]) -> None:
        value = stmt.value
        items = list(value.elts) if isinstance(value, (ast.Tuple, ast.List)) else ([value] if value else [])
        rewritten = [self._rewrite(copy.deepcopy(e)) for e in items]
        self._emit(ast.Return(outputs_expr(rewritten)))
        self.returned = True

    # --- launches ---------------------------------------------------------------------------------------

    def _launch(self, call: ast.Call, lineno: int) -> None:
        assert isinstance(call.func, ast.Attribute)
        original = _unparse(call.func.value)
        kernel = self.kernels.get(original)
        if kernel is None:
            raise InductorConversionError(f"Inductor's wrapper launches {original}, whose source is missing")
        runtime_params = [p for p in kernel.params if p not in kernel.block_params]
        if len(call.args) != len(runtime_params):
            raise InductorConversionError(
                f"{original} is launched with {len(call.args)} arguments for {len(runtime_params)} parameters"
            )
        args = [self._rewrite(copy.deepcopy(a)) for a in call.args]
        bound = dict(zip(runtime_params, args, strict=True))
        fixed = {p for p, a in bound.items() if _SIZE_PARAM.fullmatch(p) and self._is_fixed(a)}
        self.host.fixed_sizes[kernel.name] = self.host.fixed_sizes.get(kernel.name, fixed) & fixed
        index = self._kernel_index(kernel)
        tag = f"{self.prefix}K{index}"
        keywords: list[ast.keyword] = []
        grid: dict[str, ast.expr] = {}  # axis block parameter -> program count along that axis
        defaults = launch_defaults(kernel)
        for param in kernel.block_params:
            numel = bound.get(NUMEL_PARAMS.get(param) or NUMEL_PARAMS_OLD.get(param, ""))
            if param in ("R0_BLOCK", "RBLOCK") and kernel.kind == "persistent_reduction":
                if numel is None:
                    raise InductorConversionError(f"{original}: no reduction size to size {param} by")
                keywords.append(ast.keyword(param, ast.Call(_dotted("triton.next_power_of_2"), [numel], [])))
                continue
            name = f"{tag}_{param}"
            self._tunable(name, defaults[param], f"{kernel.name}: {param}")
            if param in ("XBLOCK", "YBLOCK", "ZBLOCK"):
                if numel is None:
                    raise InductorConversionError(f"{original}: no size for the {param} grid axis")
                if kernel.kind == "pointwise" and kernel.block_params == ("XBLOCK",):
                    name = self._pointwise_block(numel, tag, index, kernel.name)
                grid[param] = ast.Call(_dotted("triton.cdiv"), [numel, ast.Name(name, ast.Load())], [])
            keywords.append(ast.keyword(param, ast.Name(name, ast.Load())))
        if "XBLOCK" not in kernel.block_params:  # XBLOCK fixed to 1 inside the kernel: one program per row
            numel = bound.get("xnumel")
            if numel is None:
                raise InductorConversionError(f"{original}: cannot tell its grid (no xnumel, no XBLOCK)")
            grid["XBLOCK"] = numel
        if kernel.grid_type == "Grid2DWithYZOverflow" and "YBLOCK" in grid:
            self._split_y_grid(grid, index)
        # Inductor's grids put x on axis 0, y on axis 1, z on axis 2 (the signature lists YBLOCK first).
        axes = [grid[a] for a in ("XBLOCK", "YBLOCK", "ZBLOCK") if a in grid]
        self._tunable(f"{tag}_NUM_WARPS", defaults["num_warps"], f"{kernel.name}: warps per program")
        keywords.append(ast.keyword("num_warps", ast.Name(f"{tag}_NUM_WARPS", ast.Load())))
        if kernel.kind == "reduction":
            self._tunable(f"{tag}_NUM_STAGES", 1, f"{kernel.name}: software-pipelining stages of its loop")
            keywords.append(ast.keyword("num_stages", ast.Name(f"{tag}_NUM_STAGES", ast.Load())))
        origin = origin_before(self.lines, lineno, across_code=True)
        if origin:
            self.host.body.append(f"    # {kernel.name}: {origin}")
        grid_name = f"k{index}_grid"
        self._emit(ast.Assign([ast.Name(grid_name, ast.Store())], ast.Tuple(axes, ast.Load())))
        launch = ast.Call(
            ast.Subscript(ast.Name(kernel.name, ast.Load()), ast.Name(grid_name, ast.Load()), ast.Load()),
            args,
            keywords,
        )
        self._emit(ast.Expr(launch))

    def _pointwise_block(self, numel: ast.expr, tag: str, index: int, kernel: str) -> str:
        """The block of a 1-D pointwise launch, chosen per call as Inductor chooses it for the shape it
        compiles: about 1/128 of the elements, at least 256, at most the tuned block. A small launch then
        spreads over more programs (2048 elements: 8 programs, not 2 of 1024); a large one keeps the tuned
        block. Both bounds are the launch tuner's (`K0_MIN_XBLOCK` as large as `K0_XBLOCK` is one block
        everywhere). Returns the local that holds it."""
        block, least, largest = f"k{index}_xblock", f"{tag}_MIN_XBLOCK", f"{tag}_XBLOCK"
        self._tunable(least, 256, f"{kernel}: a small launch's XBLOCK, at least")
        rule_comment = "    # As Inductor does: 1/128 of the elements a program, within the tuned bounds"
        if rule_comment not in self.host.body:  # said once, at the first launch that picks its block
            self.host.body.append(rule_comment)
        elements = f"triton.next_power_of_2({ast.unparse(numel)})"
        rule = ast.parse(f"min({largest}, max({least}, {elements} // 128))", mode="eval").body
        self._emit(ast.Assign([ast.Name(block, ast.Store())], rule))
        return block

    def _split_y_grid(self, grid: dict[str, ast.expr], index: int) -> None:
        """More y blocks than grid.y allows are spread over z, as the kernel expects (program_id(1) +
        program_id(2) * num_programs(1))."""
        blocks, split = f"k{index}_y_blocks", f"k{index}_y_split"
        self._emit(ast.Assign([ast.Name(blocks, ast.Store())], grid["YBLOCK"]))
        cdiv = _dotted("triton.cdiv")
        self._emit(
            ast.Assign(
                [ast.Name(split, ast.Store())],
                ast.Call(cdiv, [ast.Name(blocks, ast.Load()), ast.Constant(MAX_Y_GRID)], []),
            )
        )
        at_least_one = ast.Call(
            ast.Name("max", ast.Load()), [ast.Name(split, ast.Load()), ast.Constant(1)], []
        )
        grid["YBLOCK"] = ast.Call(cdiv, [ast.Name(blocks, ast.Load()), at_least_one], [])
        grid["ZBLOCK"] = ast.Name(split, ast.Load())

    def _kernel_index(self, kernel: Kernel) -> int:
        if kernel not in self.host.kernels:
            self.host.kernels.append(kernel)
        return self.host.kernels.index(kernel)

    def _tunable(self, name: str, value: int, comment: str) -> None:
        if all(t.name != name for t in self.host.tunables):
            self.host.tunables.append(Tunable(name, value, comment))

    # --- expressions ------------------------------------------------------------------------------------

    @overload
    def _rewrite(self, node: ast.expr) -> ast.expr: ...
    @overload
    def _rewrite(self, node: ast.stmt) -> ast.stmt: ...
    def _rewrite(self, node: ast.AST) -> ast.AST:
        return _Rewriter(self).visit(node)  # an expression rewrites to an expression, a statement to one

    def _local(self, name: str) -> str:
        """Readable names for wrapper locals: `<kernel>_xnumel` -> `k0_xnumel`, `arg2_1_size` -> `x_size`."""
        for original, kernel in self.kernels.items():
            if name.startswith(original + "_"):
                return f"k{self._kernel_index(kernel)}_{name[len(original) + 1 :]}"
        for graph_name, expr in self.names.items():
            if (
                name.startswith(graph_name + "_")
                and isinstance(expr, ast.Name)
                and graph_name.startswith("arg")
            ):
                return expr.id + name[len(graph_name) :]
        return name

    def _emit(self, node: ast.AST) -> None:
        text = ast.unparse(ast.fix_missing_locations(node))
        self.host.body.extend("    " + line for line in text.splitlines())
        if "math." in text:
            self.host.uses_math = True

    def _fallback_message(self, func: str) -> str:
        op = func
        for prefix in ("torch.ops.", "extern_kernels."):
            op = op.removeprefix(prefix)
        if func.startswith(("torch.ops.aten.", "aten.", "extern_kernels.")):
            return _fallback_text([op])
        return f"Inductor's host code calls {func}, which a standalone candidate cannot do"


class _Rewriter(ast.NodeTransformer):
    def __init__(self, translator: _Translator) -> None:
        self.t = translator

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.t.names:
            return copy.deepcopy(self.t.names[node.id])
        local = self.t._local(node.id)
        return ast.Name(local, node.ctx) if local != node.id else node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = _unparse(node.func)
        # A Python float/int the graph received as a 0-d tensor: `arg.item()` is the argument itself.
        if isinstance(node.func, ast.Attribute) and node.func.attr == "item":
            inner = node.func.value
            if isinstance(inner, ast.Name) and inner.id in self.t.scalars:
                return copy.deepcopy(self.t.names[inner.id])
        if func == "reinterpret_tensor":
            node.func = _dotted("torch.as_strided")
        elif isinstance(node.func, ast.Name):
            if node.func.id not in _ALLOWED_FUNCTIONS:
                raise InductorUnsupported(self.t._fallback_message(func))
        elif isinstance(node.func, ast.Attribute):
            allowed = func in _ALLOWED_QUALIFIED or func.startswith("math.")
            if not allowed and node.func.attr in _ALLOWED_METHODS and not func.startswith(_ATEN_ROOTS):
                allowed = True
            if not allowed:
                raise InductorUnsupported(self.t._fallback_message(func))
        self.generic_visit(node)
        return node


def _unparse(node: ast.AST) -> str:
    return ast.unparse(node)


def _name(node: ast.expr) -> str:
    if not isinstance(node, ast.Name):
        raise InductorConversionError(f"unexpected target in Inductor's wrapper: {_unparse(node)}")
    return node.id


# Stand-ins for the sizes an allocation is written in: two sets of distinct odd values, so that strides
# which equal a contiguous tensor's at both are its strides (Inductor writes them as products of the later
# sizes, `head_dim * heads`, some under `max(1, ...)`), and a transposed layout is told apart.
_SIZE_STAND_INS = ((3, 5, 7, 11, 13, 17, 19, 23), (29, 31, 37, 41, 43, 47, 53, 59))
_INTEGER_OPS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _contiguous_strides(size: ast.expr, stride: ast.expr) -> bool:
    """Whether `stride` is the strides torch.empty gives a tensor of `size` (tuples of host expressions:
    names, integers, + - * // %, min and max): they agree at every set of stand-ins for the names."""
    if not (isinstance(size, ast.Tuple) and isinstance(stride, ast.Tuple)):
        return False
    if len(size.elts) != len(stride.elts):
        return False
    names = sorted({n.id for e in (size, stride) for n in ast.walk(e) if isinstance(n, ast.Name)})
    for stand_ins in _SIZE_STAND_INS:
        values = dict(zip(names, stand_ins, strict=False))
        try:
            extents = [_integer(e, values) for e in size.elts]
            strides = [_integer(e, values) for e in stride.elts]
        except (ValueError, ZeroDivisionError):
            return False
        expected: list[int] = []
        step = 1
        for extent in reversed(extents):
            expected.insert(0, step)
            step *= max(1, extent)
        if strides != expected:
            return False
    return True


def _integer(node: ast.expr, values: dict[str, int]) -> int:
    """The value of an integer host expression with `values` for its names; ValueError for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in values:
        return values[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _INTEGER_OPS:
        return _INTEGER_OPS[type(node.op)](_integer(node.left, values), _integer(node.right, values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_integer(node.operand, values)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("max", "min")
        and node.args
        and not node.keywords
    ):
        pick = max if node.func.id == "max" else min
        return pick(_integer(a, values) for a in node.args)
    raise ValueError(f"not an integer size: {ast.unparse(node)}")


def _dotted(path: str) -> ast.expr:
    parts = path.split(".")
    node: ast.expr = ast.Name(parts[0], ast.Load())
    for part in parts[1:]:
        node = ast.Attribute(node, part, ast.Load())
    return node
