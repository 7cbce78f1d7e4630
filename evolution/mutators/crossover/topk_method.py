"""Kernels of a flat module that differ only in their top-k method become one kernel.

A crossover of two fusion candidates whose top-k knob differs (`mask`, `threshold`, `twopass`, `bitonic`:
which building block keeps the candidates, writers.fusion.lower.select.TOPK_BLOCKS) leaves two kernels whose
bodies are the same but for the block they call; a reviewer reads the same kernel twice. Here they become
one kernel with a `TOPK_METHOD: tl.constexpr` parameter, each call of a block under
`if TOPK_METHOD == "...":` (Triton compiles only the branch a launch's value selects, so each size runs the
code it ran before), the launches passing the method by name. Where the entry's size test then only picks
the method (and other launch values), crossover/launch_choice.py writes it as that choice:
`topk_method = "bitonic" if nbytes <= ... else "twopass"` and one launch. Source text only, never run.
"""

from __future__ import annotations

import libcst as cst

from evolution.mutators.crossover.alike import (
    ROUTE_SUFFIX,
    Renamed,
    called,
    code,
    jit_functions,
    names,
    one_kernel,
)
from evolution.mutators.crossover.source import ParsedCode
from evolution.writers.fusion.lower.select import TOPK_BLOCKS

PARAM = "TOPK_METHOD"
_METHOD_OF_BLOCK = {block: method for method, block in TOPK_BLOCKS.items()}


def topk_methods_merged(source: str) -> str:
    """`source` (a flat module's text) with each set of kernels alike but for their top-k method merged
    into one; `source` itself when there is none. One set at a time, each found in the module the merges
    before it left (a merge renames the blocks it calls, which other sets may call too)."""
    module = cst.parse_module(source)
    while (group := _alike(module)) is not None:
        module = _merged(module, group)
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
        alike.setdefault(_without_blocks(kernel, blocks), []).append((name, blocks[calls[0]]))
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
    merged, name = one_kernel(
        module,
        {k: f'"{method}"' for k, method in group},
        PARAM,
        lambda kernel: cst.ensure_type(
            kernel.body.visit(_EachBlockCall(block_of, set(blocks))), cst.IndentedBlock
        ),
    )
    # Renamed as a crossover renames a module's definitions: by scope, the definition and its readers only.
    renames = _unsuffixed(merged, name)
    return cst.parse_module(ParsedCode.parse(merged.code, "the merged module").renamed(renames))


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


class _EachBlockCall(cst.CSTTransformer):
    """Each statement that calls a top-k block becomes one branch per method, on `TOPK_METHOD`."""

    def __init__(self, block_of: dict[str, str], blocks: set[str]) -> None:
        self.block_of = block_of
        self.blocks = blocks

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement:
        if not any(c in self.blocks for c in called(updated_node)):
            return updated_node
        methods = list(self.block_of.items())
        branch: cst.If | cst.Else = cst.Else(self._body(updated_node, methods[-1][1]))
        for method, block in reversed(methods[:-1]):
            test = cst.parse_expression(f'{PARAM} == "{method}"')
            branch = cst.If(test, self._body(updated_node, block), orelse=branch)
        return cst.ensure_type(branch, cst.If).with_changes(leading_lines=updated_node.leading_lines)

    def _body(self, statement: cst.SimpleStatementLine, block: str) -> cst.IndentedBlock:
        renamed = statement.visit(Renamed(dict.fromkeys(self.blocks, block)))
        return cst.IndentedBlock(
            [cst.ensure_type(renamed, cst.SimpleStatementLine).with_changes(leading_lines=[])]
        )
