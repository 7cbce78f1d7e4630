"""Derives the Envelope from a task: builds every case's inputs with the task's own make_inputs on the CPU,
binds them to the reference's signature (so defaults count as the values the evaluator ran with), then
builds each case again with each `dynamic` size, and each other size the case names (hidden, topk,
page_size, ...), moved to nearby unlisted values, to see which dims and scalars follow them: a scalar that
follows a size is a size, which the kernel takes at run time. The cases with a dynamic size moved that
build are returned too: the generated test runs them. A tensor's dtypes are the ones the task's cases built
it in, as the evaluator checked the kernel in those only: a dtype the engine serves that no case has (a spec
in float32 for an engine serving bfloat16) is not admitted by the guard (served_shapes.unchecked_dtypes)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from evaluators.static.facts import host_arguments
from evaluators.task import Case
from kernelbot.integrate.envelope import Envelope, SameSize, TensorRule, ValueRule
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.served_shapes import unchecked_dtypes
from kernelbot.integrate.task_view import TaskView

_SCALARS = (bool, int, float, str, type(None), torch.dtype)


@dataclass(frozen=True)
class DerivedEnvelope:
    envelope: Envelope
    other_cases: tuple[Mapping[str, Any], ...]  # case params, dynamic sizes moved to values not listed


def derive_envelope(view: TaskView, ignore: set[str] | frozenset[str] = frozenset()) -> DerivedEnvelope:
    """The envelope of `view`'s cases; parameters in `ignore` (whose incoming value the reference never
    reads) get no rule."""
    task = view.task
    runnable = [c for c in task.cases if not c.is_captured]
    if not task.cases:
        raise IntegrationError(f"{task.root}/task.toml lists no cases: nothing was proved")
    signature = inspect.signature(task.load_reference())
    bound = [_bind(view, signature, case) for case in task.cases]
    variants: list[tuple[str, dict[str, Any], dict[str, Any]]] = []  # (key, base, moved)
    other_cases: list[Mapping[str, Any]] = []
    sized = next((c for c in runnable if _size_keys(c.params)), None)
    for case, base in zip(task.cases, bound, strict=True):
        if case.is_captured:
            continue
        # Other sizes are moved in one case only: which dims and scalars follow them is the same in all.
        sizes = sorted(_size_keys(case.params) - set(task.dynamic)) if case is sized else []
        keys = [*task.dynamic, *sizes]
        for key in keys:
            value = case.params.get(key)
            if not isinstance(value, int) or isinstance(value, bool):
                continue
            listed = {c.params.get(key) for c in task.cases}
            built = 0
            for nearby in _nearby(value, listed):
                params = {**case.params, key: nearby}
                try:
                    variants.append((key, base, _bind(view, signature, Case(f"{case.name}-{key}", params))))
                except IntegrationError:
                    continue
                built += 1
                dynamic = key in task.dynamic
                if dynamic and params not in other_cases and case in _extremes(runnable, key):
                    other_cases.append(params)
                if built == (2 if dynamic else 1):  # enough unlisted sizes to see what follows the key
                    break
    rules_t: list[TensorRule] = []
    rules_v: list[ValueRule] = []
    on_host = host_arguments(task)
    for name in signature.parameters:
        if name in ignore:
            continue
        seen = [b[name] for b in bound]
        moved = [(key, base[name], var[name]) for key, base, var in variants]
        tensors = [v for v in seen if isinstance(v, torch.Tensor)]
        if tensors:
            if len(tensors) + sum(v is None for v in seen) != len(seen):
                raise IntegrationError(f"{task.root}: parameter {name!r} is a tensor in some cases only")
            rules_t.append(_tensor_rule(name, seen, moved, host=name in on_host))
        else:
            rules_v.append(_value_rule(view, name, seen, moved))
    unchecked = unchecked_dtypes(view) if rules_t else ()
    shared = _same_sizes(rules_t, [*bound, *(var for _, _, var in variants)])
    envelope = Envelope("cuda", tuple(rules_t), tuple(rules_v), tuple(task.dynamic), unchecked, shared)
    return DerivedEnvelope(envelope, tuple(other_cases))


def _same_sizes(rules: list[TensorRule], built: list[dict[str, Any]]) -> tuple[SameSize, ...]:
    """The sizes tensors share: dims that the same size keys move and that were equal in every case and
    every case built with a size moved. Each is tied to the first such dim in the signature's order, of a
    tensor every case passed; a tensor that shares all its dims, in order, with one other shares its shape.
    Dims no key moves are left out: two sizes the spec fixed can be equal by chance."""
    dims = [(rule, dim, keys) for rule in rules for dim, keys in rule.dynamic_dims if len(rule.ranks) == 1]

    def equal(a: tuple[TensorRule, int], b: tuple[TensorRule, int]) -> bool:
        pairs = [(case[a[0].name], case[b[0].name]) for case in built]
        return all(
            x.shape[a[1]] == y.shape[b[1]]
            for x, y in pairs
            if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)
        )

    anchors: list[tuple[TensorRule, int, tuple[str, ...]]] = []
    ties: dict[str, dict[int, tuple[str, int]]] = {}  # tensor -> its dim -> (anchor tensor, anchor dim)
    for rule, dim, keys in dims:
        anchor = next(
            (a for a in anchors if a[2] == keys and a[0] is not rule and equal((a[0], a[1]), (rule, dim))),
            None,
        )
        if anchor is None:
            if not rule.optional:
                anchors.append((rule, dim, keys))
            continue
        ties.setdefault(rule.name, {})[dim] = (anchor[0].name, anchor[1])
    links: list[SameSize] = []
    for rule in rules:
        tied = ties.get(rule.name, {})
        others = {other for other, _ in tied.values()}
        whole = (  # tied dims are of single-rank tensors only (`dims`)
            len(others) == 1
            and sorted(tied) == list(range(rule.ranks[0]))
            and all(dim == other_dim for dim, (_, other_dim) in tied.items())
            and next(r for r in rules if r.name in others).ranks == rule.ranks
        )
        if whole:
            links.append(SameSize(rule.name, others.pop(), optional=rule.optional))
            continue
        for dim, (other, other_dim) in sorted(tied.items()):
            links.append(SameSize(rule.name, other, dim, other_dim, optional=rule.optional))
    return tuple(links)


def _size_keys(params: Mapping[str, Any]) -> set[str]:
    """The case's sizes: its integer keys (booleans are switches such as `with_residual`)."""
    return {k for k, v in params.items() if type(v) is int}


def _bind(view: TaskView, signature: inspect.Signature, case: Case) -> dict[str, Any]:
    try:
        args, kwargs = view.task.make_inputs(case, 0, "cpu")
        arguments = signature.bind(*args, **kwargs)
    except Exception as exc:  # the task's own code: any failure means this case cannot be built
        raise IntegrationError(f"cannot build the inputs of case {case.name!r}: {exc}") from exc
    arguments.apply_defaults()
    return dict(arguments.arguments)


def _nearby(value: int, listed: set[object]) -> Iterable[int]:
    """Unlisted sizes near `value` (as the evaluator's hidden cases pick them), small first."""
    for moved in (value + value // 2 + 1, 2 * value + 1, value + 3, max(1, value - 1)):
        if moved not in listed and moved != value:
            yield moved


def _extremes(cases: list[Case], key: str) -> tuple[Case, ...]:
    """The cases with the smallest and the largest value of `key`: the test moves those two."""
    with_key = sorted(
        (c for c in cases if isinstance(c.params.get(key), int)), key=lambda c: int(c.params[key])
    )
    return (with_key[0], with_key[-1]) if with_key else ()


def _tensor_rule(name: str, seen: list[Any], moved: list[tuple[str, Any, Any]], host: bool) -> TensorRule:
    tensors = [v for v in seen if isinstance(v, torch.Tensor)]
    ranks = sorted({t.dim() for t in tensors})
    dynamic: dict[int, set[str]] = {}
    for key, base, var in moved:
        if isinstance(base, torch.Tensor) and isinstance(var, torch.Tensor):
            if base.dim() != var.dim():
                dynamic.update({d: dynamic.get(d, set()) | {key} for d in range(base.dim())})
                continue
            for dim, (a, b) in enumerate(zip(base.shape, var.shape, strict=True)):
                if a != b:
                    dynamic.setdefault(dim, set()).add(key)
    fixed: list[tuple[int, tuple[int, ...]]] = []
    if len(ranks) == 1:
        for dim in range(ranks[0]):
            if dim not in dynamic:
                fixed.append((dim, tuple(sorted({int(t.shape[dim]) for t in tensors}))))
    return TensorRule(
        name=name,
        dtypes=tuple(sorted({str(t.dtype).removeprefix("torch.") for t in tensors})),
        ranks=tuple(ranks),
        fixed_dims=tuple(fixed),
        dynamic_dims=tuple((d, tuple(sorted(k))) for d, k in sorted(dynamic.items())),
        contiguous=all(t.is_contiguous() for t in tensors),
        optional=any(v is None for v in seen),
        host=host,
    )


def _value_rule(view: TaskView, name: str, seen: list[Any], moved: list[tuple[str, Any, Any]]) -> ValueRule:
    """A float parameter is passed on as it is: only its type is checked. An int that follows a size is a
    size: the kernel takes it at run time, so only its type is checked. Anything else (a switch: a bool, a
    string, None, a dtype, an int no size moves) is compared with the values the cases had, as each value
    chooses a code path the kernel was checked on."""
    for value in seen:
        if not _renderable(value):
            raise IntegrationError(
                f"cannot guard parameter {name!r} of {view.qualname}: its value in the task's cases is a "
                f"{type(value).__name__}, which a guard cannot compare (only tensors, None, numbers "
                "(infinities and NaN included), strings, dtypes and tuples of them)"
            )
    if seen and all(isinstance(v, float) for v in seen):
        return ValueRule(name, (), free=True, kind="float")
    if any(not _same(base, var) for _, base, var in moved):
        is_int = all(isinstance(v, int) and not isinstance(v, bool) for v in seen)
        return ValueRule(name, (), free=True, kind="int" if is_int else "")
    values: list[object] = []
    for value in seen:
        if not any(_same(value, v) for v in values):
            values.append(value)
    return ValueRule(name, tuple(values))


def _renderable(value: object) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_renderable(v) for v in value)
    return isinstance(value, _SCALARS)


def _same(a: object, b: object) -> bool:
    nan = isinstance(a, float) and math.isnan(a) and isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and (a == b or nan)
