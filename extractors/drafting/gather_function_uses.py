"""Gatherer: how one function uses its parameters (sizes in `view`/`reshape`/`range`/`arange`/`topk(k=)` and
slices, string literals it compares them with, `is None` tests, truth tests, tensor methods, casts, indexing,
masks, matmul and broadcast partners, `p.shape[i] == q` comparisons). It only collects facts; the module-level
gatherer (gather_param_uses) maps the facts of helper functions onto the entry's parameters."""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange

from extractors.drafting.facts import DimRef, IntRef, ParamFacts, Tie
from extractors.drafting.function_uses import CallSite, FunctionUses
from extractors.drafting.local_values import LocalValues, arg_value, dotted, int_literal
from extractors.drafting.torch_vocabulary import (
    ARITHMETIC,
    CASTS,
    INDEX_METHODS,
    K_METHODS,
    MASK_METHODS,
    MODULES,
    SIZE_FUNCTIONS,
    SIZE_METHODS,
    dtype_argument,
    is_none_index,
    string_literals,
    tensor_attributes,
)


class GatherFunctionUses(cst.CSTVisitor):
    def __init__(
        self, function: cst.FunctionDef, functions: set[str], positions: Mapping[cst.CSTNode, CodeRange]
    ) -> None:
        super().__init__()
        p = function.params
        params = [x.name.value for x in [*p.posonly_params, *p.params, *p.kwonly_params]]
        self.lv = LocalValues(params)
        self.functions = functions
        self.positions = positions
        self.uses = FunctionUses(
            function.name.value, params, {n: ParamFacts(n) for n in params}, values=self.lv
        )

    # -- helpers -----------------------------------------------------------------------------------------
    def _line(self, node: cst.CSTNode) -> int:
        position = self.positions.get(node)
        return position.start.line if position is not None else 0

    def _fact(self, expr: cst.BaseExpression | None) -> ParamFacts | None:
        param = self.lv.param_of(expr) if expr is not None else None
        return self.uses.facts.get(param) if param is not None else None

    def _note(self, expr: cst.BaseExpression | None, bucket: str, what: str, node: cst.CSTNode) -> None:
        fact = self._fact(expr)
        if fact is not None:
            fact.note(bucket, f"{what}, line {self._line(node)}")

    def _mark_ints(self, expr: cst.BaseExpression | None, what: str, node: cst.CSTNode) -> list[str]:
        """Parameters used as plain numbers inside a size expression (`n`, `n * 2`, `(a, b)`)."""
        found: list[str] = []
        if expr is None:
            return found
        if isinstance(expr, cst.Name):
            param = self.lv.param_of(expr)
            if param is not None:
                self.uses.facts[param].note("int_uses", f"{what}, line {self._line(node)}")
                found.append(param)
        elif isinstance(expr, cst.BinaryOperation):
            found += self._mark_ints(expr.left, what, node) + self._mark_ints(expr.right, what, node)
        elif isinstance(expr, cst.UnaryOperation):
            found += self._mark_ints(expr.expression, what, node)
        elif isinstance(expr, (cst.Tuple, cst.List)):
            for element in expr.elements:
                found += self._mark_ints(element.value, what, node)
        elif isinstance(expr, cst.Call) and dotted(expr.func) in ("int", "min", "max", "math.ceil"):
            for arg in expr.args:
                found += self._mark_ints(arg.value, what, node)
        return found

    def _index(
        self, index: cst.BaseExpression | None, target: DimRef | None, what: str, node: cst.CSTNode
    ) -> None:
        roots = self.lv.index_roots(index) if index is not None else []
        for param in roots:
            if param not in self.uses.facts or (target is not None and target.param == param):
                continue
            fact = self.uses.facts[param]
            fact.index_parts = max(fact.index_parts, len(roots))
            fact.note("index_uses", f"{what}, line {self._line(node)}")
            if target is not None and target not in fact.index_into:
                fact.index_into.append(target)

    # -- assignments -------------------------------------------------------------------------------------
    def leave_Assign(self, original_node: cst.Assign) -> None:
        for target in original_node.targets:
            self._bind(target.target, original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if original_node.value is not None:
            self._bind(original_node.target, original_node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        for param, rank in self.lv.bind(target, value):
            fact = self.uses.facts.get(param)
            if fact is not None and fact.exact_rank is None:
                fact.exact_rank = rank
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                size = self.lv.sizes.get(element.value.value) if isinstance(element.value, cst.Name) else None
                fact = self.uses.facts.get(size.param) if isinstance(size, DimRef) else None
                if fact is not None and isinstance(size, DimRef):
                    fact.dim_names.setdefault(size.axis, element.value.value)  # type: ignore[attr-defined]

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._note(node.value, "number_uses", "augmented assignment", node)
        a, b = self.lv.shape_param(node.target), self.lv.shape_param(node.value)
        if a and b and a != b:
            self.uses.broadcasts.append((a, b, f"augmented assignment, line {self._line(node)}"))

    # -- calls -------------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func)
        head = name.split(".")[0] if name else ""
        if (
            isinstance(node.func, cst.Attribute)
            and head in MODULES
            and self.lv.param_of(cst.Name(head)) is None
        ):
            self._module_call(node, name.rsplit(".", 1)[-1])
        elif isinstance(node.func, cst.Attribute):
            self._method_call(node, node.func.attr.value, node.func.value)
        elif isinstance(node.func, cst.Name):
            self._name_call(node, node.func.value)

    def _module_call(self, node: cst.Call, fn: str) -> None:
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if fn in SIZE_FUNCTIONS:
            for value in positional[:1] if fn == "full" else positional:
                self._mark_ints(value, f"torch.{fn}() size", node)
            size = arg_value(node, 99, "size")
            self._mark_ints(size, f"torch.{fn}() size", node)
            return
        first = positional[0] if positional else None
        if fn in K_METHODS:
            self._mark_ints(arg_value(node, 1, "k"), f"torch.{fn}(k=)", node)
        elif fn in ("gather", "index_select"):
            target = self._dim_of(first, arg_value(node, 1, "dim"))
            self._index(arg_value(node, 2, "index"), target, f"torch.{fn}() index", node)
            if fn == "gather":
                self._gather_rank(first, arg_value(node, 1, "dim"), arg_value(node, 2, "index"), node)
        elif fn == "where" and first is not None:
            self._note(first, "mask_uses", "torch.where() condition", node)
        elif fn == "masked_fill":
            self._note(arg_value(node, 1, "mask"), "mask_uses", "masked_fill() mask", node)
        elif fn == "linear" and len(positional) >= 2:
            self._matmul(positional[0], positional[1], node, "F.linear", weight_rows=True)
        elif fn in ("matmul", "mm", "bmm") and len(positional) >= 2:
            self._matmul(positional[0], positional[1], node, f"torch.{fn}")
        elif fn in ("conv1d", "conv2d", "conv3d") and len(positional) >= 2:
            self._conv(positional[0], positional[1], arg_value(node, 2, "bias"), int(fn[4]), node)
        elif fn == "embedding" and len(positional) >= 2:
            self._index(
                positional[0], self._dim_of(positional[1], cst.Integer("0")), "F.embedding() ids", node
            )
            self._note(positional[1], "tensor_uses", "F.embedding() weight", node)
            weight = self.lv.shape_param(positional[1])
            if weight is not None and self.uses.facts[weight].exact_rank is None:
                self.uses.facts[weight].exact_rank = 2  # a table: [vocab, hidden]
            ids = self.lv.shape_param(positional[0])
            if ids is not None and self.uses.facts[ids].exact_rank is None:
                self.uses.facts[ids].exact_rank = 1  # token ids: one per token (the output adds a dim)
        elif fn == "layer_norm" and first is not None:
            shape = arg_value(node, 1, "normalized_shape")
            fact = self._fact(shape)
            source = self.lv.shape_param(first)
            if fact is not None and source is not None:
                fact.note("int_uses", f"F.layer_norm() normalized_shape, line {self._line(node)}")
                fact.note("shape_of", source)
            # the affine weight and bias: tensors of the normalized (trailing) shape, drafted so that a
            # kernel that leaves them out fails
            for position, keyword in ((2, "weight"), (3, "bias")):
                affine = self._fact(arg_value(node, position, keyword))
                if affine is not None and source is not None:
                    affine.note("tensor_uses", f"F.layer_norm() {keyword}, line {self._line(node)}")
                    affine.note("shape_of", source)
        elif fn == "multinomial" and first is not None:
            self._note(first, "probability_uses", "torch.multinomial() probabilities", node)
        elif fn in ("chunk", "split"):
            self._mark_ints(
                arg_value(node, 1, "chunks" if fn == "chunk" else "split_size_or_sections"), fn, node
            )
        for value in positional[:1]:
            self._note(value, "tensor_uses", f"torch.{fn}() argument", node)

    def _method_call(self, node: cst.Call, method: str, owner: cst.BaseExpression) -> None:
        fact = self._fact(owner)
        if fact is not None:
            bucket = "tensor_uses" if method in tensor_attributes() else "object_uses"
            fact.note(bucket, f".{method}(), line {self._line(node)}")
        if method in SIZE_METHODS:
            args = [a.value for a in node.args if a.keyword is None or a.keyword.value in ("size", "sizes")]
            if method in ("narrow", "unflatten", "chunk", "split"):
                args = args[1:] if method in ("narrow", "unflatten") else args[:1]
            for value in args:
                self._mark_ints(value, f".{method}() size", node)
        elif method in K_METHODS:
            self._mark_ints(arg_value(node, 0, "k"), f".{method}(k=)", node)
        elif method in INDEX_METHODS:
            dim_at, index_at = INDEX_METHODS[method]
            target = self._dim_of(owner, arg_value(node, dim_at, "dim"))
            self._index(arg_value(node, index_at, "index"), target, f".{method}() index", node)
            if method in ("gather", "scatter", "scatter_", "scatter_add", "scatter_add_"):
                self._gather_rank(
                    owner, arg_value(node, dim_at, "dim"), arg_value(node, index_at, "index"), node
                )
        elif method in MASK_METHODS:
            self._note(arg_value(node, 0, "mask"), "mask_uses", f".{method}() mask", node)
        if fact is not None and method in ("view", "reshape", "unsqueeze"):
            shape = [int_literal(a.value) for a in node.args]
            if shape == [-1, 1] or (method == "unsqueeze" and shape in ([1], [-1])):
                fact.note("row_vector", f".{method}({', '.join(map(str, shape))}), line {self._line(node)}")
            elif method == "unsqueeze" and shape == [0]:
                fact.note("col_vector", f".unsqueeze(0), line {self._line(node)}")
        if fact is not None and (method in CASTS or method == "to"):
            dtype = CASTS.get(method) or dtype_argument(node)
            if dtype:
                fact.note("casts", dtype)

    def _name_call(self, node: cst.Call, name: str) -> None:
        if name == "range":
            for arg in node.args:
                self._mark_ints(arg.value, "range()", node)
        elif name in self.functions:
            positional = [a.value for a in node.args if a.keyword is None and not a.star]
            keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
            self.uses.calls.append(CallSite(name, self._line(node), positional, keywords))
        elif self.lv.param_of(node.func) is not None:
            self._note(node.func, "called", "called", node)

    def _gather_rank(
        self,
        owner: cst.BaseExpression | None,
        dim: cst.BaseExpression | None,
        index: cst.BaseExpression | None,
        node: cst.CSTNode,
    ) -> None:
        """`gather`/`scatter` take an index of the owner's rank, as long as the owner in every other dim:
        `torch.gather(scores, 1, input_ids)` makes `input_ids` [batch, n], not a 1-D list of ids."""
        ids = self.lv.shape_param(index) if index is not None else None
        axis = int_literal(dim) if dim is not None else None
        if axis is None:
            return
        source = self.lv.shape_param(owner) if owner is not None else None
        if source is not None and source in self.uses.facts and axis >= 0:  # the owner has that dim too
            self.uses.facts[source].min_rank = max(self.uses.facts[source].min_rank, axis + 1)
        if ids is None or ids not in self.uses.facts:
            return
        fact = self.uses.facts[ids]
        fact.min_rank = max(fact.min_rank, axis + 1 if axis >= 0 else 0)
        if source is not None and source != ids and axis != 0:
            why = f"gather/scatter index rows, line {self._line(node)}"
            self.uses.ties.append(Tie(DimRef(ids, 0), DimRef(source, 0), why))

    def _dim_of(self, tensor: cst.BaseExpression | None, dim: cst.BaseExpression | None) -> DimRef | None:
        param = self.lv.shape_param(tensor) if tensor is not None else None
        axis = int_literal(dim) if dim is not None else None
        return DimRef(param, axis) if param is not None and axis is not None else None

    def _matmul(
        self,
        a: cst.BaseExpression,
        b: cst.BaseExpression,
        node: cst.CSTNode,
        what: str,
        weight_rows: bool = False,
    ) -> None:
        pa, pb = self.lv.shape_param(a), self.lv.shape_param(b)
        self._note(a, "tensor_uses", what, node)
        self._note(b, "tensor_uses", what, node)
        if pa is None or pb is None:
            return
        why = f"{what}, line {self._line(node)}"
        self.uses.ties.append(Tie(DimRef(pa, -1), DimRef(pb, -1 if weight_rows else -2), why))
        self.uses.dtype_ties.append((pa, pb, why))
        if weight_rows and self.uses.facts.get(pb) is not None and self.uses.facts[pb].exact_rank is None:
            self.uses.facts[pb].exact_rank = 2

    def _conv(
        self,
        x: cst.BaseExpression,
        weight: cst.BaseExpression,
        bias: cst.BaseExpression | None,
        spatial: int,
        node: cst.CSTNode,
    ) -> None:
        """`F.convNd(x, weight, bias, ...)`: a batched input [batch, channels, *spatial] and a weight [out,
        channels, *kernel] of the same rank, the bias one value per output channel. The channel tie holds
        for groups=1, the default of every conv layer."""
        why = f"F.conv{spatial}d, line {self._line(node)}"
        px, pw = self.lv.shape_param(x), self.lv.shape_param(weight)
        self._note(x, "tensor_uses", why, node)
        self._note(weight, "tensor_uses", why, node)
        axes = ["depth", "height", "width"][3 - spatial :]
        kernel = [f"kernel_{axis[0]}" for axis in axes]
        for param, names in ((px, ["batch", "channels", *axes]), (pw, ["out_channels", "channels", *kernel])):
            if param is None:
                continue
            fact = self.uses.facts[param]
            if fact.exact_rank is None:
                fact.exact_rank = spatial + 2
            for axis, name in enumerate(names):
                if name:
                    fact.dim_names.setdefault(axis, name)  # small sizes: a kernel fits the input
        if px is not None and pw is not None:
            self.uses.ties.append(Tie(DimRef(px, 1), DimRef(pw, 1), why))
            self.uses.dtype_ties.append((px, pw, why))
        pb = self.lv.shape_param(bias) if bias is not None else None
        if pb is not None and pw is not None:
            if self.uses.facts[pb].exact_rank is None:
                self.uses.facts[pb].exact_rank = 1
            self.uses.ties.append(Tie(DimRef(pb, 0), DimRef(pw, 0), why))
            self.uses.dtype_ties.append((pb, pw, why))

    # -- subscripts, attributes --------------------------------------------------------------------------
    def visit_Subscript(self, node: cst.Subscript) -> None:
        base = node.value
        if isinstance(base, cst.Attribute) and base.attr.value == "shape":
            param = self.lv.shape_param(base.value)
            axis = (
                int_literal(node.slice[0].slice.value) if isinstance(node.slice[0].slice, cst.Index) else None
            )
            if param is not None and axis is not None:
                fact = self.uses.facts[param]
                fact.min_rank = max(fact.min_rank, axis + 1 if axis >= 0 else -axis)
            return
        owner = self.lv.shape_param(base)
        self._note(base, "tensor_uses", "indexed", node)
        elements = [e.slice for e in node.slice]
        consumed = [e for e in elements if not is_none_index(e)]
        after_ellipsis = None
        for position, element in enumerate(consumed):
            if isinstance(element, cst.Index) and isinstance(element.value, cst.Ellipsis):
                after_ellipsis = len(consumed) - position - 1
                break
        axis = 0
        for element in elements:
            if is_none_index(element):
                continue
            if isinstance(element, cst.Index) and isinstance(element.value, cst.Ellipsis):
                axis = -(after_ellipsis or 0)
                continue
            target = DimRef(owner, axis) if owner is not None else None
            if isinstance(element, cst.Slice):
                for bound in (element.lower, element.upper):
                    for param in self._mark_ints(bound, "slice bound", node):
                        if target is not None and target not in self.uses.facts[param].upper_bounds:
                            self.uses.facts[param].upper_bounds.append(target)
            elif isinstance(element, cst.Index):
                self._index(element.value, target, "index", node)
            axis += 1
        self._vectors(node, elements)

    def _vectors(self, node: cst.Subscript, elements: list[cst.BaseSlice]) -> None:
        # by shape: `penalty = penalty.to(dtype)` keeps the parameter's shape, so `penalty[:, None]` still
        # says one value per row
        shaped = self.lv.shape_param(node.value)
        fact = self.uses.facts.get(shaped) if shaped is not None else self._fact(node.value)
        if fact is not None and len(elements) == 1 and is_none_index(elements[0]):
            fact.note("col_vector", f"[None], line {self._line(node)}")
        if fact is None or len(elements) != 2:
            return
        first, second = elements
        if isinstance(first, cst.Slice) and is_none_index(second):
            fact.note("row_vector", f"[:, None], line {self._line(node)}")
        elif is_none_index(first) and isinstance(second, cst.Slice):
            fact.note("col_vector", f"[None, :], line {self._line(node)}")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        fact = self._fact(node.value)
        if fact is not None:
            bucket = "tensor_uses" if node.attr.value in tensor_attributes() else "object_uses"
            fact.note(bucket, f".{node.attr.value}, line {self._line(node)}")

    # -- tests and comparisons ---------------------------------------------------------------------------
    def visit_If(self, node: cst.If) -> None:
        self._truth(node.test, node)

    def visit_While(self, node: cst.While) -> None:
        self._truth(node.test, node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._truth(node.test, node)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._truth(node.test, node)
        test = node.test
        if (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Is)
            and isinstance(test.comparisons[0].comparator, cst.Name)
            and test.comparisons[0].comparator.value == "None"
        ):
            self._note(test.left, "asserted_none", "assert ... is None", node)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._truth(node.left, node)
        self._truth(node.right, node)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._truth(node.expression, node)
        elif isinstance(node.operator, cst.BitInvert):
            self._note(node.expression, "mask_uses", "~", node)

    def _truth(self, test: cst.BaseExpression, node: cst.CSTNode) -> None:
        self._note(test, "truth_tests", "truth test", node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        for target in node.comparisons:
            self._compare(left, target.operator, target.comparator, node)
            left = target.comparator

    def _compare(
        self, a: cst.BaseExpression, op: cst.BaseCompOp, b: cst.BaseExpression, node: cst.CSTNode
    ) -> None:
        line = self._line(node)
        for x, y in ((a, b), (b, a)):
            if isinstance(y, cst.Name) and y.value == "None":
                self._note(x, "none_tests", "is None test", node)
                return
            literals = string_literals(y)
            fact = self._fact(x)
            if literals and fact is not None:
                for literal in literals:
                    if literal not in fact.literals:
                        fact.literals.append(literal)
                return
            if isinstance(x, cst.Attribute) and x.attr.value == "dtype" and dotted(y).startswith("torch."):
                owner = self._fact(x.value)
                if owner is not None:
                    owner.note("dtype_compared", dotted(y).removeprefix("torch."))
                return
        ra, rb = self.lv.ref_of(a), self.lv.ref_of(b)
        equality = isinstance(op, (cst.Equal, cst.NotEqual))
        if ra is not None and rb is not None:
            for ref in (ra, rb):
                if isinstance(ref, IntRef):
                    self.uses.facts[ref.param].note("int_uses", f"compared with a size, line {line}")
            if equality:
                self.uses.ties.append(Tie(ra, rb, f"compared, line {line}"))
            else:
                for one, other in ((ra, rb), (rb, ra)):
                    if isinstance(one, IntRef) and isinstance(other, DimRef):
                        bounds = self.uses.facts[one.param].upper_bounds
                        if other not in bounds:
                            bounds.append(other)
            return
        for x, y in ((a, b), (b, a)):
            base = x
            while isinstance(base, cst.Subscript):  # token_idx[None, :] >= topk[:, None]
                base = base.value
            if isinstance(base, cst.Name) and base.value in self.lv.aranges:
                for param in self.lv.index_roots(y):
                    fact = self.uses.facts[param]
                    fact.note("index_uses", f"compared with an arange, line {line}")
                    if self.lv.aranges[base.value] not in fact.value_range:
                        fact.value_range.append(self.lv.aranges[base.value])
                return
            if isinstance(y, (cst.Integer, cst.Float)) and self._fact(x) is not None:
                bucket = "int_uses" if isinstance(y, cst.Integer) and not equality else "number_uses"
                self._note(x, bucket, "compared with a number", node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.MatrixMultiply):
            self._matmul(node.left, node.right, node, "@")
            return
        if isinstance(node.operator, (cst.BitAnd, cst.BitOr)):
            for side in (node.left, node.right):
                fact = self._fact(side)
                if fact is not None and not fact.int_uses:
                    self._note(side, "mask_uses", "& / |", node)
            return
        if not isinstance(node.operator, ARITHMETIC):
            return
        for side in (node.left, node.right):
            self._note(side, "number_uses", "arithmetic", node)
        a, b = self.lv.shape_param(node.left), self.lv.shape_param(node.right)
        if a and b and a != b:
            self.uses.broadcasts.append((a, b, f"elementwise, line {self._line(node)}"))
