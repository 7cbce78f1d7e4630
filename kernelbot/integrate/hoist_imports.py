"""Transformers: every module-level import in the module's import block, one `from` line per module.

A crossover writes its second parent's code, that parent's imports first and one name a line, inside the
candidate's EVOLVE block below the first parent's kernels (evolution.mutators.crossover.source): the module
that ships would import `typing`'s names between two kernels, which a linter flags (E402) and a reviewer
rejects. So an import line of the module's body below its first other statement moves up, after the last
import of the block at the module's top (a `from __future__` import to the block's start), and the `from`
lines of one module in that block become one, each name once (`from typing import Optional, Tuple,
Union`); an `import x` repeated goes. The repository's formatter sorts the block afterwards.

What stays put: an import in a function or under an `if`/`try` (a lazy or guarded import is meant there);
a late import of a name the module also binds otherwise (a def, an assignment: moving it would change
which binding wins); `from x import *` (what it binds is unknown here). The comment lines above a late
import stay where they were, above the code that follows (the crossover's `# --- bucket crossover ...`
line heads its parent's code, not that parent's imports); a comment at the end of the import's own line
goes with it, and such a line (a `# noqa`) is not merged into another.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

_Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement  # what a module's body holds
_DOCSTRING = m.SimpleStatementLine([m.Expr(m.SimpleString() | m.ConcatenatedString())])
_BINDERS = m.AssignTarget() | m.AnnAssign() | m.AugAssign() | m.For() | m.NamedExpr() | m.AsName()


def hoisted_imports(module: cst.Module) -> cst.Module:
    """`module` with its late imports in its import block and that block's `from` lines merged."""
    return module.visit(HoistImportsTransformer()).visit(MergeImportsTransformer())


class HoistImportsTransformer(cst.CSTTransformer):
    """Moves the module's import lines below its first other statement up into its import block."""

    def visit_Module(self, node: cst.Module) -> bool:
        return False  # module-level statements only

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = list(updated_node.body)
        start, end = _import_block(body)
        bound = {name for s in body[end:] if not _is_import_line(s) for name in _bindings(s)}
        late = {k for k in range(end, len(body)) if _movable(body[k], bound)}
        if not late:
            return updated_node
        future: list[_Statement] = []
        moved: list[_Statement] = []
        rest: list[_Statement] = []
        left: list[cst.EmptyLine] = []  # the moved lines' comments, for the next statement that stays
        for k, statement in enumerate(body):
            if k in late:
                line = cst.ensure_type(statement, cst.SimpleStatementLine)
                if any(empty.comment is not None for empty in line.leading_lines):
                    left += line.leading_lines
                (future if _is_future(line) else moved).append(line.with_changes(leading_lines=()))
            elif left:
                rest.append(statement.with_changes(leading_lines=[*left, *statement.leading_lines]))
                left = []
            else:
                rest.append(statement)
        body = [*rest[:start], *future, *rest[start:end], *moved, *rest[end:]]
        return updated_node.with_changes(body=body, footer=[*left, *updated_node.footer])


class MergeImportsTransformer(cst.CSTTransformer):
    """Merges the `from` lines of one module in the module's import block into the first of them, each name
    once, and drops the names an `import` line of the block already imported."""

    def visit_Module(self, node: cst.Module) -> bool:
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = list(updated_node.body)
        start, end = _import_block(body)
        first: dict[tuple[int, str], int] = {}  # (dots, module) -> where its first `from` line is
        merged: dict[int, list[cst.ImportAlias]] = {}  # that line's names, the later lines' added
        imported: set[tuple[str, str | None]] = set()  # (module, alias) of the block's `import` lines
        dropped: set[int] = set()
        for k in range(start, end):
            line = cst.ensure_type(body[k], cst.SimpleStatementLine)
            small = line.body[0]
            if len(line.body) != 1 or _has_comment(line):
                continue
            if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                at = first.setdefault((len(small.relative), _dotted(small.module)), k)
                names = merged.setdefault(at, [])
                for alias in small.names:
                    if not any(_same(alias, other) for other in names):
                        names.append(alias)
                if at != k:
                    dropped.add(k)
            elif isinstance(small, cst.Import):
                new = [a for a in small.names if (a.evaluated_name, a.evaluated_alias) not in imported]
                imported |= {(a.evaluated_name, a.evaluated_alias) for a in small.names}
                if not new:
                    dropped.add(k)
                elif len(new) < len(small.names):
                    body[k] = line.with_changes(body=[small.with_changes(names=_commas(new))])
        for at, names in merged.items():
            line = cst.ensure_type(body[at], cst.SimpleStatementLine)
            small = cst.ensure_type(line.body[0], cst.ImportFrom)
            if not isinstance(small.names, cst.ImportStar) and len(names) != len(small.names):
                body[at] = line.with_changes(body=[small.with_changes(names=_commas(names))])
        if not dropped and all(a is b for a, b in zip(body, updated_node.body, strict=True)):
            return updated_node
        return updated_node.with_changes(body=[s for k, s in enumerate(body) if k not in dropped])


def _import_block(body: list[_Statement]) -> tuple[int, int]:
    """Where the module's import block starts (after its docstring) and ends (its first other statement)."""
    start = 1 if body and m.matches(body[0], _DOCSTRING) else 0
    end = start
    while end < len(body) and _is_import_line(body[end]):
        end += 1
    return start, end


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _movable(statement: cst.BaseStatement, bound: set[str]) -> bool:
    """Whether `statement` is an import line that may move up: it binds nothing the module binds otherwise,
    and says what it binds (no `*`)."""
    if not _is_import_line(statement):
        return False
    line = cst.ensure_type(statement, cst.SimpleStatementLine)
    if any(isinstance(s, cst.ImportFrom) and isinstance(s.names, cst.ImportStar) for s in line.body):
        return False
    return not set(_bindings(line)) & bound


def _bindings(statement: cst.BaseStatement) -> list[str]:
    """The names a module-level statement binds: a def's or class's own name; for any other statement, the
    names it assigns or imports anywhere inside it (more than it binds at module level where it holds a
    comprehension or a nested scope: what that costs is an import left where it was)."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return [statement.name.value]
    found = []
    for alias in m.findall(statement, m.ImportAlias()):
        alias = cst.ensure_type(alias, cst.ImportAlias)
        found.append(alias.evaluated_alias or alias.evaluated_name.split(".")[0])
    for binder in m.findall(statement, _BINDERS):
        target = binder.name if isinstance(binder, cst.AsName) else getattr(binder, "target", None)
        if target is not None:
            found += [cst.ensure_type(n, cst.Name).value for n in m.findall(target, m.Name())]
    return found


def _is_future(line: cst.SimpleStatementLine) -> bool:
    return any(isinstance(s, cst.ImportFrom) and _dotted(s.module) == "__future__" for s in line.body)


def _has_comment(line: cst.SimpleStatementLine) -> bool:
    return line.trailing_whitespace.comment is not None or any(e.comment for e in line.leading_lines)


def _dotted(module: cst.Attribute | cst.Name | None) -> str:
    return "" if module is None else cst.Module([]).code_for_node(module)


def _same(one: cst.ImportAlias, other: cst.ImportAlias) -> bool:
    return (one.evaluated_name, one.evaluated_alias) == (other.evaluated_name, other.evaluated_alias)


def _commas(aliases: list[cst.ImportAlias]) -> list[cst.ImportAlias]:
    """The names with the commas libcst places (none after the last), whatever their lines had."""
    return [alias.with_changes(comma=cst.MaybeSentinel.DEFAULT) for alias in aliases]
