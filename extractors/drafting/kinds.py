"""A parameter's kind, from its annotation, its default and how the code uses it: a size in `view`/`topk(k=)`
or a slice -> an int; compared with string literals -> one of them; tested against None -> optional; tensor
methods, indexing, masks, casts -> a tensor. Each kind carries the reason that is printed with the draft."""

from __future__ import annotations

import ast
import re
from typing import Any

from extractors.drafting.assignment import ArgDraft
from extractors.drafting.facts import ParamFacts
from extractors.drafting.guesses import base_name, float_rule, int_rule, tensor_rule
from extractors.signature import Param

_BOOL_NAMES = re.compile(r"^(is_|use_|has_|enable|apply_|do_|with_|fp32_|cast_)")


def decide(param: Param, fact: ParamFacts, hints: list[str], doc: list[str] | None) -> ArgDraft | None:
    annotation = _core_annotation(param.annotation)
    default = param.default
    used = any(
        getattr(fact, bucket)
        for bucket in (
            "int_uses",
            "tensor_uses",
            "number_uses",
            "index_uses",
            "mask_uses",
            "literals",
            "casts",
        )
    )
    switch = bool(fact.literals or fact.truth_tests or fact.none_tests)
    if default is not None and default != "None" and not switch:
        return None  # its default is kept
    if default == "None" and not fact.none_tests and not used:
        return None
    kinds = _kinds(param.name, annotation, fact)
    arg = ArgDraft(param.name, kinds, kinds[0], optional=bool(fact.none_tests), default=default)
    arg.annotation = annotation
    arg.literals = list(fact.literals)
    arg.why.append(_kind_reason(arg.kind, fact, annotation))
    literal = _literal(default)
    if default is not None and default != "None" and literal is not None:
        arg.value = literal  # a switch starts at its default
        if isinstance(literal, str) and literal in arg.literals:
            arg.literals.remove(literal)
            arg.literals.insert(0, literal)
    if doc:
        arg.why.append(f"docstring shape [{', '.join(doc)}]")
    if fact.called:
        arg.why.append("called as a function: passed as None (a callable cannot be drafted)")
    if arg.optional and default in (None, "None") and arg.kind != "none":
        arg.kind = "none"  # the plain path first; the value is tried as a case of its own
        arg.why.append("tested against None: None and a value are separate paths")
    return arg


def _kinds(name: str, annotation: str, fact: ParamFacts) -> list[str]:
    base, _ = base_name(name)
    order: list[str] = []

    def add(*kinds: str) -> None:
        order.extend(k for k in kinds if k not in order)

    if fact.called or fact.asserted_none:
        return ["none"]
    tensor_evidence = bool(
        "Tensor" in annotation
        or fact.tensor_uses
        or fact.index_uses
        or fact.mask_uses
        or fact.casts
        or fact.dtype_compared
        or fact.row_vector
        or fact.col_vector
        or fact.min_rank
    )
    if fact.literals or annotation == "str":
        add("str")
    if fact.int_uses or annotation == "int":
        add("int")
    if annotation == "float":
        add("float")
    if annotation == "bool":
        add("bool")
    if tensor_evidence:
        add("tensor")
    if (fact.object_uses or _is_class_annotation(annotation)) and not tensor_evidence and not order:
        return ["none"]  # an object of the repository's own: it cannot be drafted
    if not order and fact.truth_tests and not fact.number_uses:
        add("bool")
    if not order:
        if int_rule(base) is not None:
            add("int")
        elif float_rule(base) is not None or (fact.number_uses and not tensor_rule(base)):
            add("float")
        elif _BOOL_NAMES.match(base) and not fact.number_uses:
            add("bool")
        else:
            add("tensor")
    add(
        {"str": "none", "int": "tensor", "float": "tensor", "bool": "int", "tensor": "int", "none": "tensor"}[
            order[0]
        ]
    )
    return order


def _kind_reason(kind: str, fact: ParamFacts, annotation: str) -> str:
    evidence = {
        "int": fact.int_uses,
        "str": [f"compared with {', '.join(map(repr, fact.literals))}"] if fact.literals else [],
        "tensor": fact.tensor_uses + fact.index_uses + fact.mask_uses,
        "bool": fact.truth_tests,
        "float": fact.number_uses,
        "none": fact.called + fact.object_uses,
    }[kind]
    if evidence:
        return f"{kind}: {evidence[0]}" + (f" (+{len(evidence) - 1} more)" if len(evidence) > 1 else "")
    return f"{kind}: annotation {annotation!r}" if annotation else f"{kind}: from the name"


def _is_class_annotation(annotation: str) -> bool:
    """A class of the repository (`FusedSetKVBufferArg`), not a tensor, number, string or container."""
    known = (
        "Tensor",
        "int",
        "float",
        "bool",
        "str",
        "List",
        "list",
        "Tuple",
        "tuple",
        "Sequence",
        "dtype",
        "Dict",
    )
    return bool(re.fullmatch(r"[A-Z]\w*", annotation)) and not any(k in annotation for k in known)


def _core_annotation(text: str) -> str:
    text = text.replace(" ", "").replace("torch.", "")
    match = re.fullmatch(r"Optional\[(.*)\]", text)
    if match:
        return match.group(1)
    return re.sub(r"\|None$|^None\|", "", text)


def _literal(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
