"""Builds the reference source for a located target: closure + (for methods) method-to-function."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from extractors.closure import ClosureBuilder, ClosureReport, Unit
from extractors.emit_reference import Provenance, render_reference
from extractors.method_to_function import MethodToFunction, entry_name_for
from extractors.replace_nodes import Replacement
from extractors.repo_index import RepoIndex
from extractors.target import Located


@dataclass
class BuiltReference:
    source: str
    entry: str
    report: ClosureReport
    outputs: list[str] = field(default_factory=list)  # "return", "self.<attr>" in return order
    attribute_params: dict[str, str] = field(default_factory=dict)  # self attribute -> parameter name
    init_hints: dict[str, list[str]] = field(default_factory=dict)  # parameter -> __init__ expressions
    bound_callables: dict[str, str] = field(default_factory=dict)  # self attribute -> function it holds


def build_reference(
    index: RepoIndex, located: Located, provenance: Provenance, entry: str | None = None
) -> BuiltReference:
    builder = ClosureBuilder(index)
    qualname = located.definition.qualname
    entry = entry or entry_name_for(qualname)
    parsed = located.parsed
    node = located.function
    if located.is_method:
        builder.names.claim(("entry",), entry)
        converter = MethodToFunction(builder, parsed, located.owner, node, entry, qualname)  # type: ignore[arg-type]
        converter.analyse()
        converter.emit()
        builder.report.notes.extend(converter.notes)
        outputs = converter.outputs()
        bound = dict(converter.bound_callables)
        params = dict(converter.param_names)
        hints = {
            params[a]: converter.hierarchy.init_attrs[a].expressions
            for a in params
            if a in converter.hierarchy.init_attrs
        }
    else:
        builder.names.claim(("repo", str(parsed.path), node.name.value), entry)
        extra: dict[int, Replacement] = {}
        if node.name.value != entry:
            extra[id(node)] = lambda u: u.with_changes(name=cst.Name(entry))
        builder.report.closed_over.insert(0, f"{parsed.name}:{qualname} (entry)")
        builder.process(Unit(parsed, node, f"{parsed.name}:{qualname}"), extra=extra)
        outputs, params, hints, bound = ["return"], {}, {}, {}
    source = render_reference(builder, provenance, [])
    return BuiltReference(source, entry, builder.report, outputs, params, hints, bound)
