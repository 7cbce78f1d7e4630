"""Turn one kernel module Inductor generated into a plain `@triton.jit` kernel.

Inductor wraps each kernel in a `@triton_heuristics.<kind>(...)` decorator (autotuning, grid, launcher) and
calls `triton_helpers.*` / `libdevice.*`. Here the decorator is read for what the host needs (kind, launch
block parameters, reduction hint, grid type) and dropped; helper calls are pointed at the candidate's own
helpers (evolution.writers.inductor.helpers); Inductor's imports go. What cannot be made standalone
raises InductorConversionError naming the construct.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from evolution.writers.inductor.helpers import helper_name, known_helpers
from evolution.writers.inductor.libdevice_helpers import TL_EQUIVALENTS

# Heuristic kinds whose launch we know how to write: grid = cdiv over the non-reduction numels.
SUPPORTED_KINDS = ("pointwise", "reduction", "persistent_reduction")
SUPPORTED_GRIDS = ("Grid1D", "Grid2D", "Grid3D", "Grid2DWithYZOverflow", "")
MAX_Y_GRID = 65535  # CUDA's limit on grid.y; Inductor's overflow grid spreads y blocks over z
BLOCK_PARAMS = ("XBLOCK", "YBLOCK", "ZBLOCK", "R0_BLOCK", "R1_BLOCK", "RBLOCK")
NUMEL_PARAMS = {"XBLOCK": "xnumel", "YBLOCK": "ynumel", "ZBLOCK": "znumel", "R0_BLOCK": "r0_numel"}
NUMEL_PARAMS_OLD = {"RBLOCK": "rnumel"}
_INDUCTOR_MODULES = ("triton_helpers", "triton_heuristics", "libdevice", "tl_math")


class InductorConversionError(Exception):
    """Inductor's output could not be made into a candidate. Raised as such, it is kernelbot's own failure
    (output it misread, a converted candidate that does not hold together): the seed reports it as internal.
    InductorUnsupported is the other kind."""


class InductorUnsupported(InductorConversionError):
    """Inductor's output uses something a standalone Triton candidate cannot express (an op left to ATen, a
    kernel kind or helper the seed does not re-implement). The message names the construct; it is no bug."""


@dataclass(frozen=True)
class Kernel:
    original: str  # Inductor's kernel name (also the variable the wrapper launches)
    name: str  # the kernel's name in the candidate
    kind: str  # pointwise | reduction | persistent_reduction
    params: tuple[str, ...]  # signature, in order
    block_params: tuple[str, ...]  # tl.constexpr launch parameters in the signature (XBLOCK, R0_BLOCK...)
    grid_type: str
    reduction_hint: str  # INNER | OUTER | OUTER_TINY | DEFAULT | ""
    source: str  # the @triton.jit function(s), helpers renamed
    helpers: frozenset[str]  # names of evolution.writers.inductor.helpers entries it calls
    uses_libdevice: bool  # kept libdevice calls (GPU-only functions with no portable stand-in)

    @property
    def is_reduction(self) -> bool:
        return self.kind != "pointwise"


def convert_kernel(original: str, module_source: str, new_name: str) -> Kernel:
    """Parse the source Inductor passed to `async_compile.triton(original, ...)` into a plain kernel."""
    try:
        module = ast.parse(module_source)
    except SyntaxError as exc:
        raise InductorConversionError(f"Inductor kernel {original} does not parse: {exc}") from exc
    functions = [node for node in module.body if isinstance(node, ast.FunctionDef)]
    main = next((f for f in functions if f.name == original), None)
    if main is None:
        raise InductorConversionError(f"Inductor's module for {original} defines no function of that name")
    kind, meta = _read_heuristics(main, original)
    helper_fns = [f for f in functions if f is not main]
    renames = {f.name: f"{new_name}_{f.name.removeprefix('_triton_helper_fn_')}" for f in helper_fns}
    renames[original] = new_name
    rewriter = _HelperRewriter(renames)
    out_functions = []
    for fn in [*helper_fns, main]:
        fn.decorator_list = [d for d in fn.decorator_list if _is_triton_jit(d)]
        if not fn.decorator_list:
            fn.decorator_list = [_triton_jit()]
        out_functions.append(rewriter.visit(fn))
    if rewriter.unsupported:
        names = ", ".join(sorted(rewriter.unsupported))
        raise InductorUnsupported(
            f"kernel {original} calls Inductor helpers with no standalone version: {names}"
        )
    params = tuple(a.arg for a in main.args.args)
    constexprs = {
        a.arg for a in main.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)
    }
    unknown = sorted(c for c in constexprs if c not in BLOCK_PARAMS)
    if unknown:
        raise InductorUnsupported(
            f"kernel {original} has launch parameters kernelbot cannot choose: {unknown}"
        )
    block_params = tuple(p for p in params if p in constexprs)
    grid_type = str(meta.get("grid_type", ""))
    if grid_type not in SUPPORTED_GRIDS:
        raise InductorUnsupported(f"kernel {original} needs Inductor's {grid_type} launch grid (unsupported)")
    if any(p in block_params for p in ("R1_BLOCK",)):
        raise InductorUnsupported(f"kernel {original} is a 2-D reduction (unsupported)")
    source = "\n\n\n".join(ast.unparse(ast.fix_missing_locations(f)) for f in out_functions)
    return Kernel(
        original=original,
        name=new_name,
        kind=kind,
        params=params,
        block_params=block_params,
        grid_type=grid_type,
        reduction_hint=str(meta.get("reduction_hint", "")),
        source=source,
        helpers=frozenset(rewriter.helpers),
        uses_libdevice=rewriter.libdevice,
    )


def _read_heuristics(fn: ast.FunctionDef, original: str) -> tuple[str, dict[str, object]]:
    """The heuristics decorator's kind and the metadata we need from it."""
    for deco in fn.decorator_list:
        if not (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute)):
            continue
        if not (isinstance(deco.func.value, ast.Name) and deco.func.value.id == "triton_heuristics"):
            continue
        kind = deco.func.attr
        if kind not in SUPPORTED_KINDS:
            raise InductorUnsupported(
                f"kernel {original} is an Inductor {kind!r} kernel (supported: {', '.join(SUPPORTED_KINDS)})"
            )
        meta: dict[str, object] = {}
        for kw in deco.keywords:
            if kw.arg == "reduction_hint" and isinstance(kw.value, ast.Attribute):
                meta["reduction_hint"] = kw.value.attr
            elif kw.arg == "inductor_meta" and isinstance(kw.value, ast.Dict):
                meta.update(_literal_items(kw.value, ("grid_type", "no_x_dim", "mutated_arg_names")))
        return kind, meta
    raise InductorConversionError(
        f"kernel {original} has no triton_heuristics decorator (unknown Inductor output)"
    )


def _literal_items(node: ast.Dict, wanted: tuple[str, ...]) -> dict[str, object]:
    items: dict[str, object] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if isinstance(key, ast.Constant) and key.value in wanted:
            try:
                items[key.value] = ast.literal_eval(value)
            except ValueError:
                continue
    return items


def _is_triton_jit(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "jit" and ast.unparse(node.value) == "triton"


def _triton_jit() -> ast.expr:
    return ast.Attribute(value=ast.Name("triton", ast.Load()), attr="jit", ctx=ast.Load())


class _HelperRewriter(ast.NodeTransformer):
    """Points triton_helpers.* / libdevice.* / tl_math.* at tl or the candidate's helpers; renames."""

    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames
        self.helpers: set[str] = set()
        self.unsupported: set[str] = set()
        self.libdevice = False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name = self.renames.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.renames:
            return ast.copy_location(ast.Name(self.renames[node.id], node.ctx), node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if not (isinstance(node.value, ast.Name) and node.value.id in _INDUCTOR_MODULES):
            self.generic_visit(node)
            return node
        module, function = node.value.id, node.attr
        if module in ("libdevice", "tl_math") and function in TL_EQUIVALENTS:
            return ast.copy_location(ast.Attribute(ast.Name("tl", ast.Load()), function, ast.Load()), node)
        if function in known_helpers() and module != "triton_heuristics":
            self.helpers.add(function)
            return ast.copy_location(ast.Name(helper_name(function), ast.Load()), node)
        if module == "libdevice":
            self.libdevice = True  # GPU-only: kept as libdevice.<fn>, imported from triton.language.extra
            return node
        if module == "tl_math":
            return ast.copy_location(
                ast.Attribute(
                    ast.Attribute(ast.Name("tl", ast.Load()), "math", ast.Load()), function, ast.Load()
                ),
                node,
            )
        self.unsupported.add(f"{module}.{function}")
        return node
