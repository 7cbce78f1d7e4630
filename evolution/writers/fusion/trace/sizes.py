"""The reference's own names for sizes: the variable its entry function binds a size to (`num_experts =
scores.shape[1]`, `n, e = x.shape`, `d = x.shape[-1] // 2`), keyed by the size's sympy text.

Dynamo records no node for size arithmetic, so the statement is read from source: its right side is
evaluated over the shapes the traced graph gives the tensors it names (an argument of the entry, or the
variable a graph node's label says holds a tensor at that line) and the int arguments the graph takes as
symbols. A size named twice takes its first name; a name bound to two different values names nothing, nor
does a name the generated code binds itself (its launch, its constants) or an argument's.
"""

from __future__ import annotations

import ast
import inspect
import keyword
from pathlib import Path
from typing import Any

from evolution.writers.fusion.trace.labels import statement_of

# Names the host function or module of a generated candidate binds itself, in either case.
_GENERATED = frozenset(
    {"rows", "block", "programs", "warps_scale", "num_warps", "num_stages", "enabled", "shape", "grid"}
)


def size_names(nodes: list[Any], inputs: dict[str, tuple[str, Any]], reference: Any) -> dict[str, str]:
    """Size sympy text -> the entry function's variable bound to it. `nodes`: the graph's call_function
    nodes in order; `inputs`: each placeholder's host source (`x`, `topk`) -> (kind, its value)."""
    function = _entry_function(reference)
    if function is None:
        return {}
    path, tree = function
    params = {a.arg for a in [*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs]}
    scope = _Scope(path, tree, nodes, inputs)
    scope.helpers = getattr(inspect.unwrap(reference), "__globals__", {})
    bound: list[tuple[str, str]] = []  # (size text, name) in the order of the statements
    names: dict[str, str | None] = {}  # name -> its size text (None: bound to two, or to what is no size)
    for statement in _straight_statements(tree.body):
        for name, expr in scope.bindings(statement):
            text = str(expr) if expr is not None else None
            names[name] = None if name in names and names[name] != text else text
            if text is not None and expr.free_symbols:
                bound.append((text, name))
    arguments = {str(_sympy(v)) for k, (kind, v) in inputs.items() if kind == "symint" and k.isidentifier()}
    reserved = reserved_names(params)
    found: dict[str, str] = {}
    for text, name in bound:
        # a host value the reference binds to a parameter's name (`max_seq_len_k = int(lens.max())`) keeps it
        free = reserved - params if _reads_host(text) else reserved
        usable = names.get(name) == text and name.lower() not in free and not name.startswith("_")
        if usable and text not in arguments:  # an int argument keeps its own name
            found.setdefault(text, name)
    return found


def reserved_names(params: set[str]) -> set[str]:
    """Names a size never takes: the entry's parameters, the generated code's own, keywords, builtins
    and the modules a candidate imports."""
    import builtins

    return params | _GENERATED | set(keyword.kwlist) | set(dir(builtins)) | {"tl", "torch", "triton"}


def _entry_function(reference: Any) -> tuple[str, ast.FunctionDef] | None:
    target = inspect.unwrap(reference)
    code = getattr(target, "__code__", None)
    if code is None:
        return None
    try:
        tree = ast.parse(Path(code.co_filename).read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name:
            lines = {node.lineno, *(d.lineno for d in node.decorator_list)}
            if code.co_firstlineno in lines:
                return code.co_filename, node
    return None


def _straight_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a body and of the branches of its `if`s and `with`s (not loops, whose
    statements bind a name once per iteration, nor nested functions)."""
    found: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, ast.If):
            found += _straight_statements(statement.body) + _straight_statements(statement.orelse)
        elif isinstance(statement, ast.With):
            found += _straight_statements(statement.body)
        else:
            found.append(statement)
    return found


class _Scope:
    """Values of the entry's names at a line: tensors' shapes and ints, as sympy."""

    def __init__(
        self, path: str, function: ast.FunctionDef, nodes: list[Any], inputs: dict[str, tuple[str, Any]]
    ) -> None:
        self.inputs = inputs
        self.sizes: dict[str, Any] = {}  # size locals bound so far
        self.helpers: dict[str, Any] = {}  # the module's names (the functions a size calls)
        self.reads: dict[int, list[Any]] = {}  # statement line -> host values read there (`int(t.max())`)
        last = (function.end_lineno or function.lineno) + 1
        ends: dict[int, tuple[str, Any]] = {}  # statement line -> (the name it assigns, its last node)
        for node in nodes:
            statement = statement_of(node.meta.get("stack_trace") or "")
            if statement is not None and statement[0] == path and function.lineno <= statement[1] < last:
                ends[statement[1]] = (statement[2], node)
                read = _read_symbol(node)
                if read is not None:
                    self.reads.setdefault(statement[1], []).append(read)
        # (statement line, name, node) in graph order
        self.labelled = [(line, name, node) for line, (name, node) in ends.items() if name]
        order = {id(node): k for k, node in enumerate(nodes)}
        self.labelled.sort(key=lambda entry: order[id(entry[2])])

    def bindings(self, statement: ast.stmt) -> list[tuple[str, Any]]:
        if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
            return []
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if len(targets) != 1:
            return []
        target, value = targets[0], statement.value
        if isinstance(target, ast.Name):
            expr = self._int(value, statement.lineno)
            if expr is not None:
                self.sizes[target.id] = expr
            else:
                self.sizes.pop(target.id, None)
            return [(target.id, expr)]
        if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            shape = self._shape_of_call(value, statement.lineno)
            elements = [e.id for e in target.elts if isinstance(e, ast.Name)]
            found = list(shape) if shape is not None and len(shape) == len(elements) else []
            found = found or [None] * len(elements)
            for name, expr in zip(elements, found, strict=True):
                if expr is not None:
                    self.sizes[name] = expr
                else:
                    self.sizes.pop(name, None)
            return list(zip(elements, found, strict=True))
        return []

    def _int(self, value: ast.expr, line: int) -> Any:
        """The sympy value of an int expression of sizes, or None."""
        import sympy

        if isinstance(value, ast.Constant) and type(value.value) is int:
            return sympy.Integer(value.value)
        if isinstance(value, ast.Name):
            if value.id in self.sizes:
                return self.sizes[value.id]
            kind, held = self.inputs.get(value.id, ("", None))
            return _sympy(held) if kind == "symint" else None
        if isinstance(value, ast.BinOp):
            left, right = self._int(value.left, line), self._int(value.right, line)
            if left is None or right is None:
                return None
            if isinstance(value.op, ast.Add):
                return left + right
            if isinstance(value.op, ast.Sub):
                return left - right
            if isinstance(value.op, ast.Mult):
                return left * right
            if isinstance(value.op, ast.FloorDiv) and right != 0:
                return sympy.floor(left / right)
            if isinstance(value.op, ast.Mod) and right != 0:
                return sympy.Mod(left, right)
            return None
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
            operand = self._int(value.operand, line)
            return -operand if operand is not None else None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and not value.keywords:
            return self._call(value.func.id, value.args, line)
        if isinstance(value, ast.Subscript) and isinstance(value.slice, (ast.Constant, ast.UnaryOp)):
            shape = self._shape_of_call(value.value, line)
            return _pick(shape, value.slice)
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "size"
            and len(value.args) == 1
            and not value.keywords
        ):
            return _pick(self._shape(value.func.value, line), value.args[0])
        return None

    def _call(self, name: str, args: list[ast.expr], line: int) -> Any:
        """`int(...)` of the one value the graph reads to the host at the line, or a call of a module
        function that returns one expression of its arguments (`ceil_div(a, b)`)."""
        if name == "int" and len(args) == 1:
            reads = self.reads.get(line, [])
            return reads[0] if len(reads) == 1 else None
        body = _returned_expression(self.helpers.get(name))
        if body is None:
            return None
        params, expr = body
        values = [self._int(a, line) for a in args]
        if len(params) != len(values) or any(v is None for v in values):
            return None
        saved = self.sizes
        self.sizes = dict(zip(params, values, strict=True))
        try:
            return self._int(expr, line)
        finally:
            self.sizes = saved

    def _shape_of_call(self, value: ast.expr, line: int) -> tuple[Any, ...] | None:
        """`x.shape` or `x.size()`: the shape of `x`."""
        if isinstance(value, ast.Attribute) and value.attr == "shape":
            return self._shape(value.value, line)
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "size"
            and not value.args
            and not value.keywords
        ):
            return self._shape(value.func.value, line)
        return None

    def _shape(self, value: ast.expr, line: int) -> tuple[Any, ...] | None:
        """The shape of the tensor a name holds at `line`: the last graph node labelled with it before the
        line, else the entry's argument of that name."""
        if not isinstance(value, ast.Name):
            return None
        held = None
        for first, name, node in self.labelled:
            if name == value.id and first < line:
                held = node.meta.get("val")
        if held is None:
            kind, held = self.inputs.get(value.id, ("", None))
            if kind != "tensor":
                return None
        shape = getattr(held, "shape", None)
        if shape is None:
            return None
        return tuple(_sympy(d) for d in shape)


def _reads_host(text: str) -> bool:
    """A size over a value the host reads (an unbacked symbol)."""
    import re

    return re.search(r"\bu\d+\b", text) is not None


def _read_symbol(node: Any) -> Any:
    """The unbacked symbol a node reads to the host (`aten._local_scalar_dense`), as sympy, else None."""
    from evolution.writers.fusion.trace.host_values import unbacked_symbol

    if unbacked_symbol(node.meta.get("val")) is None or "_local_scalar_dense" not in str(node.target):
        return None
    return _sympy(node.meta.get("val"))


def _returned_expression(function: Any) -> tuple[list[str], ast.expr] | None:
    """(parameters, the returned expression) of a function whose body is one `return` of an expression."""
    import textwrap

    if not inspect.isfunction(function):
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return None
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef):
        return None
    body = definition.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    arguments = definition.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
        return None
    return [a.arg for a in [*arguments.posonlyargs, *arguments.args]], body[0].value


def _pick(shape: tuple[Any, ...] | None, index: ast.expr) -> Any:
    if shape is None:
        return None
    k: object = None
    if isinstance(index, ast.Constant):
        k = index.value
    elif isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        operand = index.operand
        k = -operand.value if isinstance(operand, ast.Constant) and type(operand.value) is int else None
    if type(k) is not int or not -len(shape) <= k < len(shape):
        return None
    return shape[k]


def _sympy(value: Any) -> Any:
    """A size (an int or a SymInt) as the sympy expression the graph's metas spell."""
    import sympy

    from evolution.writers.fusion import symbols
    from evolution.writers.fusion.trace.sym_text import sym_text

    if isinstance(value, int):
        return sympy.Integer(value)
    node = getattr(value, "node", None)
    if node is None:
        return None
    try:
        return symbols.parse(sym_text(node.expr))
    except Exception:  # a size the generator does not read: no name for it
        return None
