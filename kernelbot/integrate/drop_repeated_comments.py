"""Transformer: a module-level comment that repeats one above it goes.

A crossover copies each parent's code with the comments above it (`# Launch parameters, one set per
kernel. ...` above the Inductor seed's constants, `# Fused by Inductor from ...` above its kernel). Where
the child keeps one copy of what both parents define (the kernel and constants they share), where the
flattened routes keep one code, or where twin kernels are merged, the other copy's comments stay behind:
with no code under them (blank lines, then the next comment or definition), or a second time above a
constant the first copy's comment already introduces. The module that ships says each once: a comment
block (comment lines with no blank line between them) of a module-level statement's leading lines that
repeats an earlier one word for word goes, with the blank lines that set it apart. One directly above a
function or class stays, as that definition's own account (two kernels fused from the same ops both say
so); comments in function bodies and the module's header are left alone.
"""

from __future__ import annotations

import libcst as cst

_Lines = list[cst.EmptyLine]
_Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


class DropRepeatedCommentsTransformer(cst.CSTTransformer):
    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        seen: set[tuple[str, ...]] = set()
        body: list[_Statement] = []
        for statement in updated_node.body:
            previous = body[-1] if body else None
            lines = _kept_lines(statement, previous, seen)
            body.append(statement if lines is None else statement.with_changes(leading_lines=lines))
        return updated_node.with_changes(body=body)


def _kept_lines(
    statement: _Statement, previous: _Statement | None, seen: set[tuple[str, ...]]
) -> _Lines | None:
    """`statement`'s leading lines without its repeated comment blocks (adding the others to `seen`), or
    None where it has none."""
    runs = _runs(list(statement.leading_lines))
    kept: list[_Lines] = []
    dropped = False
    for index, run in enumerate(runs):
        if not run:  # the blank lines after a block that went
            continue
        if not run[0].comment:
            kept.append(run)
            continue
        text = tuple(line.comment.value for line in run if line.comment)
        attached = index == len(runs) - 1  # no blank line between it and the statement
        own = attached and isinstance(statement, (cst.FunctionDef, cst.ClassDef))
        if text not in seen or own:
            seen.add(text)
            kept.append(run)
            continue
        dropped = True
        if not attached:
            runs[index + 1] = []  # the blank lines that set it apart from what follows
        elif kept and not kept[-1][0].comment and _is_assignment(previous):
            kept.pop()  # the constants it split are one group again
    return [line for run in kept for line in run] if dropped else None


def _runs(lines: _Lines) -> list[_Lines]:
    """`lines` cut into runs of comment lines and runs of blank lines."""
    runs: list[_Lines] = []
    for line in lines:
        if runs and bool(runs[-1][0].comment) == bool(line.comment):
            runs[-1].append(line)
        else:
            runs.append([line])
    return runs


def _is_assignment(statement: _Statement | None) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Assign, cst.AnnAssign)) for small in statement.body
    )
