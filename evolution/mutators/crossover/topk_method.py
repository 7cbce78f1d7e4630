"""Kernels of a flat module that differ only in their top-k method become one kernel.

A crossover of two fusion candidates whose top-k knob differs (`mask`, `threshold`, `twopass`, `bitonic`:
which building block keeps the candidates, writers.fusion.lower.select.TOPK_BLOCKS) leaves two kernels whose
bodies are the same but for the block they call; a reviewer reads the same kernel twice. Here they become
one kernel with a `TOPK_METHOD: tl.constexpr` parameter, and the blocks one function that takes the method
too: `_kb_topk_rows_by_method(x, valid, K, KP, METHOD)`, each block's body under `if METHOD == "...":` with
its docstring as the branch's comment (or, where another kernel calls a block too, each block called there
by name: one copy of each body), so each call of a block stays one call. Triton compiles only the
branch a launch's value selects, so each size runs the code it ran before; the launches pass the method by
name. Where the entry's size test then only picks the method (and other launch values),
crossover/launch_choice.py writes it as that choice: `topk_method = "bitonic" if nbytes <= ... else
"twopass"` and one launch. Source text only, never run.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import libcst as cst

from evolution.mutators.crossover.alike import (
    ROUTE_SUFFIX,
    Renamed,
    RenamedReads,
    Statement,
    called,
    code,
    is_docstring,
    jit_functions,
    names,
    one_kernel,
)
from evolution.mutators.crossover.source import ParsedCode
from evolution.writers.fusion.lower.select import TOPK_BLOCKS

PARAM = "TOPK_METHOD"
CHOOSER = "_kb_topk_rows_by_method"  # the one function for the blocks of merged kernels
CHOOSER_PARAM = "METHOD"
CHOOSER_DOC = "Top-k of each row of x by the method the launch names (one compiled per method)."
# Comments are left as written by the formatters: inside the chooser's branch (8 columns), at most the
# narrowest engine line length (SGLang's 88).
COMMENT_WIDTH = 88 - 8 - 2
_METHOD_OF_BLOCK = {block: method for method, block in TOPK_BLOCKS.items()}


def topk_methods_merged(source: str) -> str:
    """`source` (a flat module's text) with each set of kernels alike but for their top-k method merged
    into one; `source` itself when there is none. One set at a time, each found in the module the merges
    before it left (a merge renames the blocks it calls, which other sets may call too)."""
    module = cst.parse_module(source)
    while (group := _alike(module)) is not None:
        module = _merged(module, group)
    module = _inlined(module)
    return module.code if module.code != source else source


def _alike(module: cst.Module) -> list[tuple[str, str]] | None:
    """The first set of kernels (with parameters) alike but for the top-k method each calls, one kernel
    per method: (kernel, method) each; None when there is none."""
    jit = jit_functions(module)
    blocks = _blocks(jit)
    alike: dict[str, list[tuple[str, str]]] = {}
    for name, kernel in jit.items():
        calls = [c for c in called(kernel) if c in blocks]
        if name in blocks or not kernel.params.params or len({blocks[c] for c in calls}) != 1:
            continue
        # The blocks' parameter count joins the key: one chooser takes them all (_chooser).
        key = f"{len(jit[calls[0]].params.params)}:{_without_blocks(kernel, blocks)}"
        alike.setdefault(key, []).append((name, blocks[calls[0]]))
    return next(
        (g for g in alike.values() if len(g) > 1 and len({method for _, method in g}) == len(g)), None
    )


def _blocks(jit: dict[str, cst.FunctionDef]) -> dict[str, str]:
    """The top-k blocks among the module's jit functions: name -> method."""
    return {name: method for name in jit if (method := _block_method(name))}


def _block_method(name: str) -> str | None:
    return _METHOD_OF_BLOCK.get(ROUTE_SUFFIX.sub("", name))


def _without_blocks(kernel: cst.FunctionDef, blocks: dict[str, str]) -> str:
    """The kernel's parameters and body, every top-k block it calls written as one placeholder."""
    stripped = kernel.with_changes(name=cst.Name("_kernel"), decorators=[], leading_lines=[])
    renamed = stripped.visit(Renamed(dict.fromkeys(blocks, "__TOPK_BLOCK__")))
    return code(cst.ensure_type(renamed, cst.FunctionDef))


def _merged(module: cst.Module, group: list[tuple[str, str]]) -> cst.Module:
    jit = jit_functions(module)
    blocks = _blocks(jit)
    block_of = {method: next(c for c in called(jit[k]) if c in blocks) for k, method in group}
    chooser = _chooser(block_of, list(jit[next(iter(block_of.values()))].params.params))
    chooser_name = _chooser_name(module, chooser)
    merged, name = one_kernel(
        module,
        {k: f'"{method}"' for k, method in group},
        PARAM,
        lambda kernel: cst.ensure_type(
            kernel.body.visit(_ChooserCalls(set(blocks), chooser_name)), cst.IndentedBlock
        ),
    )
    merged = _with_chooser(merged, chooser.with_changes(name=cst.Name(chooser_name)), name)
    # Renamed as a crossover renames a module's definitions: by scope, the definition and its readers only.
    renames = _unsuffixed(merged, name)
    return cst.parse_module(ParsedCode.parse(merged.code, "the merged module").renamed(renames))


def _chooser(block_of: dict[str, str], params: list[cst.Param]) -> cst.FunctionDef:
    """One jit function for the blocks of `block_of` (method -> block name): the blocks' parameters
    (`params`, the first's) and `METHOD`, each block called under `if METHOD == "<method>":`, the last
    under `else:`. `_inlined` later writes each block's body there instead where nothing else calls it."""
    args = ", ".join(p.name.value for p in params)
    branches = list(block_of.items())
    orelse: cst.If | cst.Else = cst.Else(_returning(f"{branches[-1][1]}({args})"))
    for method, block in reversed(branches[:-1]):
        test = cst.parse_expression(f'{CHOOSER_PARAM} == "{method}"')
        orelse = cst.If(test, _returning(f"{block}({args})"), orelse=orelse)
    *head, last = params
    added = cst.Param(
        cst.Name(CHOOSER_PARAM), annotation=cst.Annotation(cst.parse_expression("tl.constexpr"))
    )
    docstring = cst.SimpleStatementLine([cst.Expr(cst.SimpleString(f'"""{CHOOSER_DOC}"""'))])
    signature = cst.Parameters([*head, last.with_changes(comma=cst.MaybeSentinel.DEFAULT), added])
    return cst.FunctionDef(
        name=cst.Name(CHOOSER),
        params=signature,
        body=cst.IndentedBlock([docstring, cst.ensure_type(orelse, cst.If)]),  # two methods or more
        decorators=[cst.Decorator(cst.parse_expression("triton.jit"))],
    )


def _returning(call: str) -> cst.IndentedBlock:
    return cst.IndentedBlock([cst.SimpleStatementLine([cst.Return(cst.parse_expression(call))])])


def _inlined(module: cst.Module) -> cst.Module:
    """Each chooser whose blocks nothing else calls with the blocks' bodies in its branches (each block's
    docstring the branch's comment, its parameters read under the chooser's names) and without the blocks;
    a chooser whose blocks other kernels call too keeps calling them (one copy of each body either way)."""
    jit = jit_functions(module)
    for chooser in [name for name in jit if name.startswith(CHOOSER)]:
        blocks = set(called(jit[chooser]))
        callers = {name for name, fn in jit.items() if blocks & set(called(fn))}
        if callers != {chooser} or not blocks <= set(jit):
            continue
        module = module.visit(_BodiesInlined(chooser, {b: jit[b] for b in blocks}))
        module = module.with_changes(
            body=[s for s in module.body if not (isinstance(s, cst.FunctionDef) and s.name.value in blocks)]
        )
        jit = jit_functions(module)
    return module


class _BodiesInlined(cst.CSTTransformer):
    """In the chooser, `return block(x, valid, K, KP)` -> the block's body, its docstring a comment."""

    def __init__(self, chooser: str, blocks: dict[str, cst.FunctionDef]) -> None:
        self.chooser = chooser
        self.blocks = blocks
        self.inside = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.inside = node.name.value == self.chooser
        return self.inside

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        if not self.inside or len(updated_node.body) != 1:
            return updated_node
        line = updated_node.body[0]
        if not (isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Return)):
            return updated_node
        call = line.body[0].value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)):
            return updated_node
        block = self.blocks.get(call.func.value)
        if block is None:
            return updated_node
        passed = [cst.ensure_type(a.value, cst.Name).value for a in call.args]
        own = {
            p.name.value: new
            for p, new in zip(block.params.params, passed, strict=True)
            if p.name.value != new
        }
        body = cst.ensure_type(block.body.visit(RenamedReads(own)), cst.IndentedBlock).body
        doc = _docstring(body)
        statements = list(body[1:] if doc is not None else body)
        method = _block_method(call.func.value) or ""
        comment = [cst.EmptyLine(comment=cst.Comment(f"# {text}")) for text in _comment_lines(method, doc)]
        statements[0] = statements[0].with_changes(leading_lines=comment)
        return updated_node.with_changes(body=statements)


def _docstring(body: Sequence[cst.BaseStatement]) -> str | None:
    """The text of the body's docstring; None without one (or for one written as concatenated strings)."""
    if not body or not is_docstring(body[0]):
        return None
    value = cst.ensure_type(cst.ensure_type(body[0], cst.SimpleStatementLine).body[0], cst.Expr).value
    text = value.evaluated_value if isinstance(value, cst.SimpleString) else None
    return text if isinstance(text, str) else None


def _comment_lines(method: str, doc: str | None) -> list[str]:
    """`<method>: <the block's docstring>` on lines that fit the narrowest engine's line length inside the
    branch (formatters leave comments as they are)."""
    text = f"{method}: {' '.join(doc.split())}" if doc else method
    count = len(textwrap.wrap(text, COMMENT_WIDTH, break_on_hyphens=False))
    # As many lines as the width needs, filled evenly: never a last line of one word ("# out.").
    width = COMMENT_WIDTH
    while width > COMMENT_WIDTH // 2 and len(textwrap.wrap(text, width - 1, break_on_hyphens=False)) == count:
        width -= 1
    return textwrap.wrap(text, width, break_on_hyphens=False)


def _chooser_name(module: cst.Module, chooser: cst.FunctionDef) -> str:
    """The name of a jit function of `module` that is `chooser` already (a crossover of another
    specialisation on the same methods wrote it), else the first free one of CHOOSER, CHOOSER_2, ..."""
    text = code(chooser)
    for name, fn in jit_functions(module).items():
        if (
            name.startswith(CHOOSER)
            and code(fn.with_changes(name=cst.Name(CHOOSER), leading_lines=[])) == text
        ):
            return name
    taken = names(module)
    return next(n for n in (CHOOSER, *(f"{CHOOSER}_{k}" for k in range(2, 100))) if n not in taken)


def _with_chooser(module: cst.Module, chooser: cst.FunctionDef, kernel: str) -> cst.Module:
    """`module` with `chooser` before `kernel`, unless the module has it."""
    jit = jit_functions(module)
    out: list[Statement] = []
    for statement in module.body:
        if (
            isinstance(statement, cst.FunctionDef)
            and statement.name.value == kernel
            and chooser.name.value not in jit
        ):
            out.append(chooser.with_changes(leading_lines=statement.leading_lines))
        out.append(statement)
    return module.with_changes(body=out)


def _unsuffixed(module: cst.Module, kernel: str) -> dict[str, str]:
    """The helpers the merged kernel calls, directly or not, without the suffix that said which size ran
    them (each one's branch says it now), where the plain name is free."""
    bodies = jit_functions(module)
    reached: set[str] = set()
    todo = [kernel]
    while todo:
        for callee in called(bodies[todo.pop()]):
            if callee in bodies and callee not in reached:
                reached.add(callee)
                todo.append(callee)
    taken = names(module)
    renames: dict[str, str] = {}
    for helper in sorted(reached - {kernel}):
        plain = ROUTE_SUFFIX.sub("", helper)
        if plain != helper and plain not in taken and plain not in renames.values():
            renames[helper] = plain
    return renames


class _ChooserCalls(cst.CSTTransformer):
    """`block(x, valid, K, KP)` -> `chooser(x, valid, K, KP, TOPK_METHOD)` for each top-k block."""

    def __init__(self, blocks: set[str], chooser: str) -> None:
        self.blocks = blocks
        self.chooser = chooser

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = updated_node.func
        if not (isinstance(func, cst.Name) and func.value in self.blocks):
            return updated_node
        *head, last = updated_node.args
        args = [*head, last.with_changes(comma=cst.MaybeSentinel.DEFAULT), cst.Arg(cst.Name(PARAM))]
        return updated_node.with_changes(func=cst.Name(self.chooser), args=args)
