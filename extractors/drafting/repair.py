"""Repairs from a failed trial: read the error, find the arguments of the line that raised it, and propose
assignments that change them. Sizes are drawn distinct from one another, so the numbers in a shape error
say which dimensions they are: "size of tensor a (128) must match the size of tensor b (64)" re-ties the
less certain of the two to the other (also through a factor of two, as `chunk(2)` and `x[..., ::2]` halve).
A type error moves an argument to its next candidate kind; None where a value is needed gives it one; an
index out of range narrows the index's range; NaN outputs draw the inputs positive."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator

from extractors.drafting.assignment import ArgDraft, Assignment
from extractors.drafting.facts import UseFacts
from extractors.drafting.trials import TrialOutcome

_PAIRS = [
    re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"),
    re.compile(r"expanded size of the tensor \((\d+)\) must match the existing size \((\d+)\)"),
    re.compile(r"Expected size (\d+) but got size (\d+)"),
    re.compile(
        r"Sizes of tensors must match except in dimension \d+\. Expected size (\d+) but got size (\d+)"
    ),
]
_MATMUL = re.compile(r"shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")
_MASK = re.compile(
    r"shape of the mask \[([\d, ]+)\] at index (\d+) does not match "
    r"the shape of the indexed tensor \[([\d, ]+)\]"
)
_BROADCAST = re.compile(r"output with shape \[([\d, ]*)\] doesn't match the broadcast shape \[([\d, ]*)\]")
_VIEW = re.compile(r"shape '\[([-\d, ]+)\]' is invalid for input of size (\d+)")
_OUT_OF_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for dimension \d+ with size (\d+)")
_NEEDS_NUMBER = (
    "Boolean value of Tensor",
    "only integer tensors of a single element",
    "slice indices must be integers",
    "cannot be interpreted as an integer",
    "must be int, not Tensor",
    "must be tuple of ints, but found element of type Tensor",
)
_INT_DTYPES = {"int64", "int32", "int16", "int8", "uint8"}


def culprits(outcome: TrialOutcome, facts: UseFacts, assignment: Assignment) -> list[str]:
    """The drafted arguments the failing lines depend on, innermost frame first."""
    names: list[str] = []
    for line, _ in reversed(outcome.frames):
        for name in sorted(facts.line_params.get(line, set())):
            if name in assignment.args and name not in names:
                names.append(name)
    return names or list(assignment.args)


def repairs(
    assignment: Assignment, outcome: TrialOutcome, facts: UseFacts, sizes: dict[str, int]
) -> Iterator[tuple[Assignment, str]]:
    """Candidate assignments for the failure, most likely first, each with what it changed."""
    blamed = culprits(outcome, facts, assignment)
    error = outcome.error
    values = {**assignment.sizes, **sizes}
    if outcome.nan:
        yield from _positive(assignment)
        return
    if outcome.ok:  # it runs, but is degenerate or draws its own random numbers: try the code's switches
        yield from _other_literal(assignment, list(assignment.args), raised=False)
        return
    if "NoneType" in error or "None" in error.split(":")[-1]:
        yield from _give_values(assignment, blamed)
    if any(text in error for text in _NEEDS_NUMBER):
        yield from _next_kind(assignment, blamed, prefer=("int", "bool"))
    for pattern in _PAIRS:
        match = pattern.search(error)
        if match:
            yield from _retie(assignment, blamed, int(match.group(1)), int(match.group(2)), values)
    match = _MATMUL.search(error)
    if match:
        yield from _retie(assignment, blamed, int(match.group(2)), int(match.group(3)), values)
    match = _MASK.search(error)
    if match:
        index = int(match.group(2))
        mask = [int(v) for v in match.group(1).split(",")]
        target = [int(v) for v in match.group(3).split(",")]
        if index < len(mask) and index < len(target):
            yield from _retie(assignment, blamed, mask[index], target[index], values)
    match = _BROADCAST.search(error)
    if match:
        out = [int(v) for v in match.group(1).split(",") if v.strip()]
        wide = [int(v) for v in match.group(2).split(",") if v.strip()]
        for a, b in zip(reversed(out), reversed(wide), strict=False):
            if a != b:
                yield from _retie(assignment, blamed, a, b, values)
        if len(wide) > len(out):
            yield from _lower_rank(assignment, blamed)
    match = _VIEW.search(error)
    if match:
        yield from _fit_view(
            assignment, blamed, [int(v) for v in match.group(1).split(",")], int(match.group(2)), values
        )
    if "out of range" in error or _OUT_OF_BOUNDS.search(error):
        bound = _OUT_OF_BOUNDS.search(error)
        yield from _narrow_indices(assignment, blamed, int(bound.group(2)) if bound else None, values)
    if "dtype" in error or "scalar type" in error or "Half" in error or "BFloat16" in error:
        yield from _same_dtype(assignment, blamed)
    raised = error.split(":")[0] in ("ValueError", "AssertionError", "NotImplementedError", "KeyError")
    if raised:  # the code refused these values: another literal, truth value or a smaller number
        yield from _other_literal(assignment, blamed, raised)
    yield from _give_values(assignment, blamed)
    yield from _next_kind(assignment, blamed, prefer=())
    yield from _other_literal(assignment, blamed, raised)


# -- kinds ---------------------------------------------------------------------------------------------------
def _give_values(assignment: Assignment, blamed: list[str]) -> Iterator[tuple[Assignment, str]]:
    for name in blamed:
        arg = assignment.args[name]
        if arg.kind == "none" and any(k != "none" for k in arg.kinds):
            kind = next(k for k in arg.kinds if k != "none")
            yield (
                _with(assignment, name, functools.partial(ArgDraft.set_kind, kind=kind)),
                f"{name}: None -> {kind} (None fails here)",
            )


def _next_kind(
    assignment: Assignment, blamed: list[str], prefer: tuple[str, ...]
) -> Iterator[tuple[Assignment, str]]:
    for name in blamed:
        arg = assignment.args[name]
        options = [k for k in arg.kinds if k != arg.kind and k != "none"]
        options.sort(key=lambda k: (k not in prefer, arg.kinds.index(k)))
        for kind in options:
            yield (
                _with(assignment, name, functools.partial(_switch, kind=kind)),
                f"{name}: {arg.kind} -> {kind}",
            )


def _switch(arg: ArgDraft, kind: str) -> None:
    arg.set_kind(kind)
    if kind == "int" and not isinstance(arg.value, (int, str)):
        arg.value = 4
    elif kind == "bool":
        arg.value = bool(arg.value) if isinstance(arg.value, bool) else False
    elif kind == "float" and not isinstance(arg.value, float):
        arg.value = 1.0


def _other_literal(
    assignment: Assignment, blamed: list[str], raised: bool
) -> Iterator[tuple[Assignment, str]]:
    for name in blamed:
        arg = assignment.args[name]
        if arg.kind == "str":
            for literal in arg.literals:
                if literal != arg.value:
                    yield (
                        _with(assignment, name, _set_value(literal)),
                        f"{name}: -> {literal!r}",
                    )
        elif arg.kind == "bool":
            yield (
                _with(assignment, name, lambda a: setattr(a, "value", not a.value)),
                f"{name}: -> {not arg.value}",
            )
        elif arg.kind == "int" and raised and arg.value not in (0, 1):
            smaller = f"max(1, ({arg.value}) // 2)"
            yield (
                _with(assignment, name, _set_value(smaller)),
                f"{name}: -> {smaller}",
            )


# -- shapes --------------------------------------------------------------------------------------------------
Slot = tuple[str, int, float]  # (argument, axis or -1 for an int's value, factor the error shows it with)


def _slots(assignment: Assignment, blamed: list[str], number: int, values: dict[str, int]) -> list[Slot]:
    found: list[Slot] = []
    for name in blamed:
        arg = assignment.args[name]
        exprs = list(enumerate(arg.dims)) if arg.kind == "tensor" else []
        if arg.kind == "int" and arg.value is not None:
            exprs = [(-1, str(arg.value))]
        for axis, expr in exprs:
            value = _evaluate(expr, values)
            for factor in (1.0, 0.5, 2.0):
                if value is not None and value * factor == number:
                    found.append((name, axis, factor))
    return found


def _retie(
    assignment: Assignment, blamed: list[str], a: int, b: int, values: dict[str, int]
) -> Iterator[tuple[Assignment, str]]:
    if a == b or 1 in (a, b):
        return
    options: list[tuple[tuple[int, int, int], Assignment, str]] = []
    for sa in _slots(assignment, blamed, a, values):
        for sb in _slots(assignment, blamed, b, values):
            if sa[:2] == sb[:2]:
                continue
            for keep, change in ((sa, sb), (sb, sa)):
                level = _confidence(assignment, change)
                expression = _scaled(_expr(assignment, keep), keep[2] / change[2])
                if expression is None:
                    continue
                changed = _with(
                    assignment, change[0], functools.partial(_put, axis=change[1], expression=expression)
                )
                scaled = (keep[2] != 1) + (change[2] != 1)
                simple = 0 if expression.isidentifier() else 1
                options.append(
                    (
                        (level, scaled, simple),
                        changed,
                        f"{_where(change)} := {expression} (to match {_where(keep)})",
                    )
                )
    options.sort(key=lambda o: o[0])
    for _, changed, what in options:
        yield changed, what


def _lower_rank(assignment: Assignment, blamed: list[str]) -> Iterator[tuple[Assignment, str]]:
    for name in blamed:
        arg = assignment.args[name]
        if arg.kind == "tensor" and len(arg.dims) > 1 and max(arg.confidence) < 3:
            yield _with(assignment, name, lambda a: _drop_last(a)), f"{name}: one dimension fewer"


def _drop_last(arg: ArgDraft) -> None:
    arg.dims, arg.confidence = arg.dims[:-1], arg.confidence[:-1]


def _fit_view(
    assignment: Assignment, blamed: list[str], shape: list[int], numel: int, values: dict[str, int]
) -> Iterator[tuple[Assignment, str]]:
    known = math.prod(v for v in shape if v > 0)
    for name in blamed:
        arg = assignment.args[name]
        if arg.kind != "tensor":
            continue
        dims = [_evaluate(d, values) for d in arg.dims]
        if None in dims or math.prod(dims) != numel:  # type: ignore[arg-type]
            continue
        for axis in sorted(range(len(dims)), key=lambda i: arg.confidence[i]):
            rest = numel // dims[axis]  # type: ignore[operator]
            needed = known // math.gcd(rest, known)
            expression = _express(needed, assignment, blamed, values)
            yield (
                _with(assignment, name, functools.partial(_put, axis=axis, expression=expression)),
                f"{name}.shape[{axis}] := {expression} (a view needs it)",
            )


def _narrow_indices(
    assignment: Assignment, blamed: list[str], size: int | None, values: dict[str, int]
) -> Iterator[tuple[Assignment, str]]:
    """Every integer tensor on the failing line drawn below the size (or half its range: indices are often
    summed, `positions + offsets`)."""
    changed, names = assignment.copy(), []
    for name in blamed:
        arg = changed.args[name]
        if arg.kind != "tensor" or arg.dtype not in _INT_DTYPES:
            continue
        high = str(arg.fill.get("high", 16))
        new = _express(size, assignment, blamed, values) if size else f"max(1, ({high}) // 2)"
        if new != high:
            arg.fill.update(init="randint", low=0, high=new)
            names.append(name)
    if names:
        yield changed, f"{', '.join(names)}: values in a smaller range"


def _same_dtype(assignment: Assignment, blamed: list[str]) -> Iterator[tuple[Assignment, str]]:
    floats = [
        n
        for n in blamed
        if assignment.args[n].kind == "tensor" and assignment.args[n].dtype not in _INT_DTYPES | {"bool"}
    ]
    for leader in floats:
        dtype = assignment.args[leader].dtype
        others = [n for n in floats if assignment.args[n].dtype != dtype]
        if others:
            changed = assignment.copy()
            for name in others:
                changed.args[name].dtype = dtype
            yield changed, f"{', '.join(others)}: dtype {dtype} like {leader}"


def _positive(assignment: Assignment) -> Iterator[tuple[Assignment, str]]:
    for name, arg in assignment.args.items():
        if (
            arg.kind == "tensor"
            and arg.dtype not in _INT_DTYPES | {"bool"}
            and arg.fill.get("init", "randn") == "randn"
        ):
            yield (
                _with(assignment, name, lambda a: a.fill.update(init="rand", low=0.05, high=1.0)),
                f"{name}: drawn in (0.05, 1) (NaN outputs)",
            )


# -- helpers -------------------------------------------------------------------------------------------------
def _set_value(value: object) -> Callable[[ArgDraft], None]:
    return lambda arg: setattr(arg, "value", value)


def _with(assignment: Assignment, name: str, change: Callable[[ArgDraft], object]) -> Assignment:
    out = assignment.copy()
    change(out.args[name])
    return out


def _put(arg: ArgDraft, axis: int, expression: str) -> None:
    if axis < 0:
        arg.value = expression
    else:
        arg.dims[axis] = expression
        arg.confidence[axis] = max(arg.confidence[axis], 1)


def _expr(assignment: Assignment, slot: Slot) -> str:
    arg = assignment.args[slot[0]]
    return str(arg.value) if slot[1] < 0 else arg.dims[slot[1]]


def _confidence(assignment: Assignment, slot: Slot) -> int:
    arg = assignment.args[slot[0]]
    return 1 if slot[1] < 0 else arg.confidence[slot[1]]


def _where(slot: Slot) -> str:
    return slot[0] if slot[1] < 0 else f"{slot[0]}.shape[{slot[1]}]"


def _scaled(expression: str, ratio: float) -> str | None:
    if ratio == 1:
        return expression
    if ratio == 2:
        return f"2 * ({expression})" if not expression.isidentifier() else f"2 * {expression}"
    if ratio == 0.5:
        return f"({expression}) // 2" if not expression.isidentifier() else f"{expression} // 2"
    if ratio == 4:
        return f"4 * ({expression})"
    if ratio == 0.25:
        return f"({expression}) // 4"
    return None


def _express(number: int, assignment: Assignment, blamed: list[str], values: dict[str, int]) -> str:
    """An expression over the sizes with this value (a size's name when one has it), else the number."""
    for name, value in values.items():
        if value == number and name not in ("tokens", "batch"):
            return name
    for name in blamed:
        arg = assignment.args[name]
        for expr in arg.dims if arg.kind == "tensor" else [str(arg.value)]:
            if _evaluate(expr, values) == number:
                return expr
    return str(number)


def _evaluate(expression: str, values: dict[str, int]) -> int | None:
    try:
        value = eval(expression, {"__builtins__": {"min": min, "max": max, "int": int}}, dict(values))
    except Exception:  # an expression over sizes that are not known here
        return None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
