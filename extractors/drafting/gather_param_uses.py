"""Gatherer over the emitted reference: what its entry's parameters are, read from how the entry and every
helper it calls (the closure, already copied into the reference) use them.

A helper's facts reach the entry through its call sites: `_compute_scores(logits, scoring_func=scoring_func)`
makes the literals `_compute_scores` compares `scoring_func` with literals of the entry's `scoring_func`.
Only exact aliases carry facts across a call (a tensor computed from a parameter is not that parameter), but
every line of every helper is mapped to the entry parameters it may depend on, so that an error raised deep
inside a helper still names the arguments that caused it. Shapes written in docstrings (`x: [num_tokens,
num_heads, head_size]`) are read too."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from extractors.drafting.facts import DimRef, IntRef, ParamFacts, Ref, Tie, UseFacts
from extractors.drafting.function_uses import FunctionUses
from extractors.drafting.gather_function_uses import GatherFunctionUses

_LIST_FIELDS = (
    "int_uses",
    "number_uses",
    "tensor_uses",
    "object_uses",
    "called",
    "truth_tests",
    "none_tests",
    "asserted_none",
    "literals",
    "casts",
    "dtype_compared",
    "index_uses",
    "mask_uses",
    "row_vector",
    "col_vector",
    "probability_uses",
    "shape_of",
)
_REF_FIELDS = ("index_into", "value_range", "upper_bounds")


def gather_param_uses(source: str, entry: str) -> UseFacts:
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    functions = {s.name.value: s for s in wrapper.module.body if isinstance(s, cst.FunctionDef)}
    if entry not in functions:
        return UseFacts(params={})
    gathered: dict[str, FunctionUses] = {}
    for name, function in functions.items():
        gatherer = GatherFunctionUses(function, set(functions), positions)
        function.body.visit(gatherer)
        _record_lines(function, gatherer.uses, positions)
        gathered[name] = gatherer.uses
    exact, derived = _bindings(gathered, entry)
    facts = UseFacts(params={p: ParamFacts(p) for p in gathered[entry].params})
    for name, uses in gathered.items():
        for param, fact in uses.facts.items():
            for target in exact.get((name, param), set()):
                _merge(facts.params[target], fact, functools.partial(_translate, function=name, exact=exact))
        for tie in uses.ties:
            for a in _translate_all(tie.a, name, exact):
                for b in _translate_all(tie.b, name, exact):
                    facts.add_tie(Tie(a, b, tie.why, tie.firm))
        for pa, pb, why in uses.broadcasts:
            for x in exact.get((name, pa), set()):
                for y in exact.get((name, pb), set()):
                    if x != y:
                        facts.add_tie(Tie(DimRef(x, -1), DimRef(y, -1), why, firm=False))
                        facts.dtype_ties.append((x, y, why))
        for pa, pb, why in uses.dtype_ties:
            for x in exact.get((name, pa), set()):
                for y in exact.get((name, pb), set()):
                    facts.dtype_ties.append((x, y, why))
        for line, roots in uses.line_roots.items():
            mapped = set().union(*(derived.get((name, r), set()) for r in roots)) if roots else set()
            if mapped:
                facts.line_params.setdefault(line, set()).update(mapped)
    facts.doc_shapes = docstring_shapes(functions[entry], gathered[entry].params)
    return facts


def _bindings(
    gathered: dict[str, FunctionUses], entry: str
) -> tuple[dict[tuple[str, str], set[str]], dict[tuple[str, str], set[str]]]:
    """(function, parameter) -> entry parameters it is exactly / may be computed from."""
    exact = {(entry, p): {p} for p in gathered[entry].params}
    derived = {(entry, p): {p} for p in gathered[entry].params}
    for _ in range(8):  # helpers of helpers: a few rounds reach a fixpoint
        changed = False
        for name, uses in gathered.items():
            values = uses.values
            if values is None:
                continue
            for call in uses.calls:
                callee = gathered.get(call.callee)
                if callee is None:
                    continue
                bound = dict(zip(callee.params, call.positional, strict=False))
                bound.update({k: v for k, v in call.keywords.items() if k in callee.params})
                for param, expr in bound.items():
                    direct = values.param_of(expr)
                    exact_targets = exact.get((name, direct), set()) if direct else set()
                    roots = values.roots_of(expr)
                    derived_targets = (
                        set().union(*(derived.get((name, r), set()) for r in roots)) if roots else set()
                    )
                    key = (call.callee, param)
                    if not exact_targets <= exact.get(key, set()) or not derived_targets <= derived.get(
                        key, set()
                    ):
                        exact.setdefault(key, set()).update(exact_targets)
                        derived.setdefault(key, set()).update(derived_targets)
                        changed = True
        if not changed:
            break
    return exact, derived


def _translate(ref: DimRef, function: str, exact: Mapping[tuple[str, str], set[str]]) -> list[DimRef]:
    return [DimRef(p, ref.axis) for p in sorted(exact.get((function, ref.param), set()))]


def _translate_all(ref: Ref, function: str, exact: Mapping[tuple[str, str], set[str]]) -> list[Ref]:
    targets = sorted(exact.get((function, ref.param), set()))
    if isinstance(ref, DimRef):
        return [DimRef(p, ref.axis) for p in targets]
    return [IntRef(p) for p in targets]


def _merge(into: ParamFacts, fact: ParamFacts, translate: Callable[[DimRef], list[DimRef]]) -> None:
    for name in _LIST_FIELDS:
        for item in getattr(fact, name):
            into.note(name, item)
    for name in _REF_FIELDS:
        target: list[DimRef] = getattr(into, name)
        for ref in getattr(fact, name):
            for mapped in translate(ref):
                if mapped not in target:
                    target.append(mapped)
    into.min_rank = max(into.min_rank, fact.min_rank)
    into.index_parts = max(into.index_parts, fact.index_parts)
    if into.exact_rank is None:
        into.exact_rank = fact.exact_rank


def _record_lines(
    function: cst.FunctionDef, uses: FunctionUses, positions: Mapping[cst.CSTNode, CodeRange]
) -> None:
    """Every line of the function -> the parameters the statement on it may depend on."""
    if uses.values is None:
        return
    values = uses.values  # (bound after the check: the visitor below reads it)

    class Lines(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            self._add(node, node)
            return False

        def visit_If(self, node: cst.If) -> None:
            self._add(node, node.test)

        def visit_While(self, node: cst.While) -> None:
            self._add(node, node.test)

        def visit_For(self, node: cst.For) -> None:
            self._add(node, node.iter)

        def visit_Return(self, node: cst.Return) -> None:
            self._add(node, node)

        def _add(self, node: cst.CSTNode, expr: cst.CSTNode) -> None:
            position = positions.get(node)
            if position is None:
                return
            roots = values.roots_of(expr)
            end = position.end.line if isinstance(node, cst.SimpleStatementLine) else position.start.line
            if not isinstance(node, cst.SimpleStatementLine):
                test = positions.get(expr)
                end = test.end.line if test is not None else end
            for line in range(position.start.line, end + 1):
                uses.line_roots.setdefault(line, set()).update(roots)

    function.body.visit(Lines())


_DOC_LINE = re.compile(
    r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(?:\w+\s+)?(?:of\s+)?(?:shape\s+)?[\[(]([^\])]*)[\])]"
)


def docstring_shapes(function: cst.FunctionDef, params: list[str]) -> dict[str, list[str]]:
    """`x: [num_tokens, num_heads, head_size]` in the function's docstring -> {"x": ["num_tokens", ...]}."""
    doc = function.get_docstring() or ""
    shapes: dict[str, list[str]] = {}
    for line in doc.splitlines():
        match = _DOC_LINE.match(line)
        if not match or match.group(1) not in params:
            continue
        dims = [d.strip() for d in match.group(2).split(",") if d.strip()]
        if dims and all(re.fullmatch(r"[\w\s*/+\-]+", d) for d in dims):
            shapes[match.group(1)] = dims
    return shapes
