"""From the kept assignments to one input spec: arguments that are the same in every kept assignment are
written once; one that is None in some cases and a value in others gets `when = "with_<name>"`; one that
takes several literals or numbers reads the case's own key (`value = "scoring_func"`). Cases are the
serving cases of the first assignment plus the largest one for each switch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from extractors.drafting.search import SearchResult, Variant, token_cases
from extractors.drafting.serving_shapes import ServingProfile
from extractors.input_spec import InputSpec

_NONE = {"none": True}


@dataclass
class ComposedDraft:
    spec: InputSpec
    inferred: list[str]  # one line per argument: what it is and why
    cases: list[str]  # one line per case group: what differs
    dropped: list[str] = field(default_factory=list)


def compose(
    result: SearchResult, profile: ServingProfile, served: list[dict[str, Any]] | None = None
) -> ComposedDraft:
    """`served`: cases at other model families' sizes (search.served_model_cases), added after the rest."""
    variants = list(result.variants)
    dropped = list(result.dropped)
    while True:
        conflict = _conflicting(variants)
        if conflict is None:
            break
        dropped.append(f"{_label(conflict)}: needs other shapes than the first case")
        variants.remove(conflict)
    base = variants[0].assignment
    names = list(base.args)
    for variant in variants[1:]:
        names += [n for n in variant.assignment.args if n not in names]
    args: dict[str, dict[str, Any]] = {}
    keys: list[dict[str, Any]] = [{} for _ in variants]
    for name in names:
        specs = [v.assignment.args[name].spec() if name in v.assignment.args else _NONE for v in variants]
        if all(s == specs[0] for s in specs):
            args[name] = specs[0]
            continue
        values = _distinct([s for s in specs if s != _NONE])
        if len(values) == 1:
            args[name] = {**values[0], "when": f"with_{name}"}
        else:
            args[name] = {"value": name}
            if _NONE in specs:
                args[name]["when"] = f"with_{name}"
        for i, spec in enumerate(specs):
            if "when" in args[name]:
                keys[i][f"with_{name}"] = spec != _NONE
            if len(values) > 1 and spec != _NONE:
                keys[i][name] = spec.get("value", spec.get("text"))
    sizes: dict[str, list[Any]] = {}
    for variant in variants:
        for key, value in variant.assignment.sizes.items():
            sizes.setdefault(key, [value])
    cases: list[dict[str, Any]] = []
    described: list[str] = []
    for i, variant in enumerate(variants):
        serving = token_cases(variant.assignment, profile)
        if i:
            serving = serving[-1:]
        for case in serving:
            name = case["name"] + (f"_{variant.suffix}" if variant.suffix else "")
            cases.append({**case, "name": name, **keys[i]})
        what = ", ".join(f"{k}={v}" for k, v in variant.flips.items()) or "the first assignment"
        names = [c["name"] + (f"_{variant.suffix}" if variant.suffix else "") for c in serving]
        described.append(f"{', '.join(names)}: {what}")
    for case in served or []:
        cases.append({**case, **keys[0]})
        sized = ", ".join(f"{k}={v}" for k, v in case.items() if k not in ("name", "tokens", "batch"))
        described.append(f"{case['name']}: the first assignment at {sized}")
    for key in ("tokens", "batch"):
        first = next((c[key] for c in cases if key in c), None)
        if first is not None:
            sizes[key] = [first]
    draft_spec = InputSpec(sizes=sizes, cases=cases, args=args, source="draft")
    return ComposedDraft(draft_spec, _inferred(variants), described, dropped)


def _conflicting(variants: list[Variant]) -> Variant | None:
    """A switch whose arguments differ from the other cases in a way one spec cannot say: only None vs one
    value, or several plain values (literals, numbers, truth values), can vary between cases."""
    names = {n for v in variants for n in v.assignment.args}
    for name in sorted(names):
        seen: list[dict[str, Any]] = []
        for variant in variants:
            arg = variant.assignment.args.get(name)
            spec = arg.spec() if arg is not None else _NONE
            if spec == _NONE or spec in seen:
                continue
            seen.append(spec)
            if len(seen) > 1 and not all(set(s) <= {"value", "text"} for s in seen):
                return variant if variant is not variants[0] else variants[-1]
    return None


def _inferred(variants: list[Variant]) -> list[str]:
    base = variants[0].assignment
    lines = []
    for name, arg in base.args.items():
        others = [
            v.assignment.args[name].describe(v.assignment.sizes) for v in variants[1:] if name in v.flips
        ]
        shown = " | ".join(dict.fromkeys([arg.describe(base.sizes), *others]))
        why = "; ".join(dict.fromkeys(arg.why))
        lines.append(f"{name}: {shown}" + (f" ({why})" if why else ""))
    return lines


def _distinct(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for spec in specs:
        if spec not in out:
            out.append(spec)
    return out


def _label(variant: Variant) -> str:
    return ", ".join(f"{k}={v}" for k, v in variant.flips.items())
