"""What the local names of one function stand for, in terms of its parameters: the parameter itself (`a = p`),
a tensor with a parameter's shape (`s = torch.softmax(p, -1)`), a size (`n = p.shape[0]`), an `arange` over
a size, or just something computed from some parameters. Flow-insensitive and deliberately shallow: enough
to see that `scores.view(num_token, num_expert_group, -1)` sizes a view by the parameter `num_expert_group`
and by dimension 0 of `gating_output`."""

from __future__ import annotations

import libcst as cst

from extractors.drafting.facts import DimRef, IntRef, Ref

# Tensor methods and torch functions whose result has the shape of their (first) tensor argument.
SHAPE_KEEPING = {
    "abs",
    "bfloat16",
    "clamp",
    "clamp_min",
    "clone",
    "contiguous",
    "cos",
    "cumsum",
    "detach",
    "double",
    "erf",
    "exp",
    "float",
    "gelu",
    "half",
    "log",
    "log_softmax",
    "masked_fill",
    "neg",
    "pow",
    "reciprocal",
    "relu",
    "rsqrt",
    "sigmoid",
    "silu",
    "sin",
    "softmax",
    "sqrt",
    "square",
    "tanh",
    "to",
    "type_as",
}
# Views whose result still aliases (for the value, not the shape) the tensor they are taken of.
VIEWING = {
    "view",
    "reshape",
    "flatten",
    "unsqueeze",
    "squeeze",
    "contiguous",
    "to",
    "long",
    "int",
    "t",
    "clone",
}


def dotted(expr: cst.BaseExpression) -> str:
    """`torch.nn.functional.silu` -> that text; "" when `expr` is not a plain dotted name."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        head = dotted(expr.value)
        return f"{head}.{expr.attr.value}" if head else ""
    return ""


def int_literal(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = int_literal(expr.expression)
        return -inner if inner is not None else None
    return None


def arg_value(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """The argument passed at `position` (counting positionals) or as `keyword=`."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if position < len(positional) else None


class _NameCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # the attribute's own name is not a variable
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # nor is a keyword
        return False


def names_in(expr: cst.CSTNode) -> set[str]:
    collector = _NameCollector()
    expr.visit(collector)
    return collector.names


class LocalValues:
    """Bindings of one function's names, updated as its assignments are visited in order."""

    def __init__(self, params: list[str]) -> None:
        self.direct: dict[str, str] = {p: p for p in params}
        self.shape: dict[str, str] = {p: p for p in params}
        self.roots: dict[str, set[str]] = {p: {p} for p in params}
        self.sizes: dict[str, Ref] = {}
        self.aranges: dict[str, DimRef] = {}
        self.views: dict[str, list[str]] = {}  # name -> parameters it is a view or sum of (index values)

    # -- reading ---------------------------------------------------------------------------------------
    def param_of(self, expr: cst.BaseExpression) -> str | None:
        """The parameter `expr` is exactly (a name bound to it and never recomputed)."""
        return self.direct.get(expr.value) if isinstance(expr, cst.Name) else None

    def shape_param(self, expr: cst.BaseExpression) -> str | None:
        """The parameter whose shape `expr` has."""
        if isinstance(expr, cst.Name):
            return self.shape.get(expr.value)
        if isinstance(expr, cst.Call):
            name = dotted(expr.func)
            method = name.rsplit(".", 1)[-1] if name else ""
            if (
                isinstance(expr.func, cst.Attribute)
                and method in SHAPE_KEEPING
                and name.split(".")[0]
                not in (
                    "torch",
                    "F",
                )
            ):
                return self.shape_param(expr.func.value)
            if name.split(".")[0] in ("torch", "F") and method in SHAPE_KEEPING and expr.args:
                return self.shape_param(expr.args[0].value)
        if isinstance(expr, cst.BinaryOperation) and not isinstance(expr.operator, cst.MatrixMultiply):
            return self.shape_param(expr.left) or self.shape_param(expr.right)  # elementwise: a broadcast
        return None

    def ref_of(self, expr: cst.BaseExpression) -> Ref | None:
        """A size: `p.shape[i]`, `p.size(i)`, a name bound to one, or an integer parameter."""
        if isinstance(expr, cst.Name):
            if expr.value in self.sizes:
                return self.sizes[expr.value]
            param = self.direct.get(expr.value)
            return IntRef(param) if param is not None else None
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            index = expr.slice[0].slice
            base = expr.value
            if (
                isinstance(index, cst.Index)
                and isinstance(base, cst.Attribute)
                and base.attr.value == "shape"
            ):
                axis = int_literal(index.value)
                param = self.shape_param(base.value)
                if axis is not None and param is not None:
                    return DimRef(param, axis)
            if (
                isinstance(index, cst.Index)
                and isinstance(base, cst.Call)
                and dotted(base.func).endswith("size")
            ):
                axis = int_literal(index.value)  # p.size()[i]
                param = self.shape_param(base.func.value) if isinstance(base.func, cst.Attribute) else None
                if axis is not None and param is not None and not base.args:
                    return DimRef(param, axis)
        if (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "size"
        ):
            axis = int_literal(expr.args[0].value) if len(expr.args) == 1 else None
            param = self.shape_param(expr.func.value)
            if axis is not None and param is not None:
                return DimRef(param, axis)
        return None

    def roots_of(self, expr: cst.CSTNode) -> set[str]:
        out: set[str] = set()
        for name in names_in(expr):
            out |= self.roots.get(name, set())
        return out

    def index_roots(self, expr: cst.BaseExpression) -> list[str]:
        """The parameters an index expression reads (`idx[:, None]`, `idx[:n]`, `idx.long()`, `pos + off`)."""
        while True:
            if isinstance(expr, cst.Name):
                param = self.direct.get(expr.value) or self.shape.get(expr.value)
                found = [param] if param else []
                return found + [v for v in self.views.get(expr.value, []) if v not in found]
            if isinstance(expr, cst.Subscript):
                expr = expr.value
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
                if expr.func.attr.value not in VIEWING:
                    return []
                expr = expr.func.value
            elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
                return sorted(set(self.index_roots(expr.left)) | set(self.index_roots(expr.right)))
            else:
                return []

    # -- binding ---------------------------------------------------------------------------------------
    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[str, int]]:
        """Record `target = value`; returns (param, rank) pairs learnt from `a, b = p.shape`."""
        ranks: list[tuple[str, int]] = []
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            shape_of = self._shape_tuple(value)
            roots = self.roots_of(value)
            for i, element in enumerate(elements):
                self._forget(element)
                if isinstance(element, cst.Name):
                    self.roots[element.value] = set(roots)
                    if shape_of is not None:
                        self.sizes[element.value] = DimRef(shape_of, i)
            if shape_of is not None and not any(isinstance(e, cst.StarredElement) for e in target.elements):
                ranks.append((shape_of, len(elements)))
            return ranks
        if not isinstance(target, cst.Name):
            return ranks
        name = target.value
        roots = self.roots_of(value)
        direct = self.param_of(value)
        shape = self.shape_param(value)
        size = self.ref_of(value)
        arange = self._arange(value)
        views = self.index_roots(value)
        self._forget(target)
        self.roots[name] = roots
        if direct is not None:
            self.direct[name] = direct
        if shape is not None:
            self.shape[name] = shape
        if size is not None and not (isinstance(size, IntRef) and direct is None):
            self.sizes[name] = size
        if arange is not None:
            self.aranges[name] = arange
        if views:
            self.views[name] = views
        return ranks

    def _forget(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            for table in (self.direct, self.shape, self.sizes, self.aranges, self.views):
                table.pop(target.value, None)

    def _shape_tuple(self, value: cst.BaseExpression) -> str | None:
        if isinstance(value, cst.Attribute) and value.attr.value == "shape":
            return self.shape_param(value.value)
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "size"
            and not value.args
        ):
            return self.shape_param(value.func.value)
        return None

    def _arange(self, value: cst.BaseExpression) -> DimRef | None:
        if not (isinstance(value, cst.Call) and dotted(value.func) in ("torch.arange", "arange")):
            return None
        positional = [a.value for a in value.args if a.keyword is None]
        if len(positional) == 1 or (len(positional) == 2 and int_literal(positional[0]) == 0):
            ref = self.ref_of(positional[-1])
            return ref if isinstance(ref, DimRef) else None
        return None
