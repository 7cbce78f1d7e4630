"""Transformer: the assignments of a @triton.jit function that nothing reads, and that do nothing else, go.

Inductor opens each reduction kernel with its bookkeeping, kept for kernels of older naming schemes
(`rnumel = r0_numel`, `RBLOCK: tl.constexpr = R0_BLOCK`, `rbase = r0_base`, and in each loop `roffset =
r0_offset`, `rindex = r0_index`), whether the kernel reads those names or not; a kernel seeded from
torch.compile's code keeps them, and a reviewer reads five lines for nothing. So in each @triton.jit
function a simple assignment (`x = value`, `x: T = value`) goes when
- no name in the function reads `x`: any mention of it other than as the target of such an assignment
  counts, in a loop (a value carried to the next iteration is read above its assignment), an augmented
  assignment, a `for` or a `del`; and
- its value can do nothing but compute: a name, an attribute, a constant, or arithmetic, a comparison or
  a subscript of those. A call never goes (`tl.load`, `tl.store`, `tl.atomic_add`, `tl.device_print` or
  another jit function may act beyond its result).
It is repeated until nothing changes: a value read only by an assignment that went is unread in turn. A
block whose every statement would go keeps them (a block cannot be empty), and an assignment that is read
stays even when it only renames another value (`r0_1 = r0_index`): that is a naming choice, not dead
code. The comment lines above one that goes stay, above the next statement.

Triton builds its IR by walking the function's AST: such an assignment builds ops (or, for a `tl.constexpr`
binding, only a compile-time value) whose results nothing uses, and the compiler's dead-code elimination
drops them, so the kernel compiles to what the search timed
(tests/kernelbot/integrate/test_drop_unread_assignments.py compares the PTX for sm_90).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import jit_functions

_ASSIGNMENT = m.SimpleStatementLine(
    body=[m.Assign(targets=[m.AssignTarget(m.Name())]) | m.AnnAssign(target=m.Name())]
)
_LEAF = (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)


def dropped_unread_assignments(module: cst.Module) -> cst.Module:
    """`module` with each @triton.jit function's unread assignments of computed values dropped (module
    docstring)."""
    kernels = set(jit_functions(module))
    if not kernels:
        return module
    return module.visit(DropUnreadAssignmentsTransformer(kernels))


class DropUnreadAssignmentsTransformer(cst.CSTTransformer):
    """Drops the unread assignments of computed values in the module-level functions `kernels`."""

    def __init__(self, kernels: set[str]) -> None:
        super().__init__()
        self.kernels = kernels

    def visit_Module(self, node: cst.Module) -> bool:
        return False  # module-level functions only, as jit_functions finds them

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = [
            _without_unread(s) if isinstance(s, cst.FunctionDef) and s.name.value in self.kernels else s
            for s in updated_node.body
        ]
        return updated_node.with_changes(body=body)


class _RemoveAssignmentsTransformer(cst.CSTTransformer):
    """Removes the droppable assignments to `names` from each block that keeps a statement without them."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        kept: list[cst.BaseStatement] = []
        left: list[cst.EmptyLine] = []  # the comments above the statements that went
        for statement in updated_node.body:
            if not isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                kept.append(statement)  # no other statement is parsed, but BaseStatement does not say so
                continue
            target = _assigned(statement)
            if target is not None and target.value in self.names:
                left += [line for line in statement.leading_lines if line.comment is not None]
                continue
            if left:
                statement = statement.with_changes(leading_lines=[*left, *statement.leading_lines])
                left = []
            kept.append(statement)
        if not kept or len(kept) == len(updated_node.body):
            return updated_node
        return updated_node.with_changes(body=kept, footer=[*left, *updated_node.footer])


def _without_unread(function: cst.FunctionDef) -> cst.FunctionDef:
    while unread := _unread(function):
        changed = cst.ensure_type(function.visit(_RemoveAssignmentsTransformer(unread)), cst.FunctionDef)
        if changed.deep_equals(function):
            break  # the ones left are all their blocks hold
        function = changed
    return function


def _unread(function: cst.FunctionDef) -> set[str]:
    """The names of `function`'s droppable assignments that no other mention of the name reads."""
    targets = [t for t in map(_assigned, m.findall(function.body, _ASSIGNMENT)) if t is not None]
    skipped = {id(t) for t in targets}
    skipped |= {id(cst.ensure_type(a, cst.Arg).keyword) for a in m.findall(function.body, m.Arg())}
    skipped |= {id(cst.ensure_type(a, cst.Attribute).attr) for a in m.findall(function.body, m.Attribute())}
    mentions = [cst.ensure_type(n, cst.Name) for n in m.findall(function.body, m.Name())]
    read = {n.value for n in mentions if id(n) not in skipped}
    return {t.value for t in targets} - read


def _assigned(statement: cst.CSTNode) -> cst.Name | None:
    """The target of `statement` where it is one `name = value` or `name: T = value` whose value only
    computes; None for any other statement."""
    if not m.matches(statement, _ASSIGNMENT):
        return None
    small = cst.ensure_type(statement, cst.SimpleStatementLine).body[0]
    assign = small if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
    if assign is None or assign.value is None or not _computes(assign.value):
        return None
    target = assign.targets[0].target if isinstance(assign, cst.Assign) else assign.target
    return cst.ensure_type(target, cst.Name)


def _computes(value: cst.BaseExpression) -> bool:
    """Whether `value` is a name, an attribute, a constant, or arithmetic, comparisons and subscripts of
    those: nothing in it but computing can happen (no call)."""
    if isinstance(value, _LEAF):
        return True
    if isinstance(value, cst.Attribute):
        return _computes(value.value)
    if isinstance(value, cst.UnaryOperation):
        return _computes(value.expression)
    if isinstance(value, (cst.BinaryOperation, cst.BooleanOperation)):
        return _computes(value.left) and _computes(value.right)
    if isinstance(value, cst.Comparison):
        return _computes(value.left) and all(_computes(c.comparator) for c in value.comparisons)
    if isinstance(value, cst.Subscript):
        return _computes(value.value) and all(_slice_computes(e.slice) for e in value.slice)
    return False


def _slice_computes(part: cst.BaseSlice) -> bool:
    if isinstance(part, cst.Index):
        return _computes(part.value)
    bounds = (part.lower, part.upper, part.step) if isinstance(part, cst.Slice) else ()
    return isinstance(part, cst.Slice) and all(b is None or _computes(b) for b in bounds)
