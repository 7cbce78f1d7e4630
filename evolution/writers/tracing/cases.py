"""Which of a task's cases a writer traces, and in what order.

in_trace_order  the fusion writer traces every case, the generated ones first: a captured call's inputs
                (recorded from a real run) come after the cases whose sizes the task chose
choose_cases    the Inductor writer traces one case per dtype group, chosen so that torch.compile
                specialises nothing the other cases need (sizes or ints of 0 or 1, ints equal to a
                tensor size); a group whose every case has such a dynamic size (a float16 case at one
                token) is traced with its dynamic keys set to a proxy size
proxied         a case with its dynamic keys set to a proxy size (PROXIES), for both writers
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

_MAX_PROBED_CASES = 4  # cases per dtype group whose inputs are built to find one without 0/1 sizes
_PROBED_SEEDS = 4  # input seeds tried per probed case (random lengths may or may not coincide with a size)
PROXIES = (13, 11, 17, 7, 19, 5, 23, 3)  # dynamic-key values to trace with: primes, unlikely to coincide


def proxied(task: Any, case: Any, value: int) -> Any:
    """`case` with every dynamic key it sets moved to `value` (its name kept)."""
    params = dict(case.params)
    for key in task.dynamic:
        if key in params:
            params[key] = value
    return dataclasses.replace(case, params=params)


def in_trace_order(task: Any) -> list[Any]:
    """Every case of the task, the generated ones before the captured ones (each group in task order)."""
    return [c for c in task.cases if not c.is_captured] + [c for c in task.cases if c.is_captured]


def choose_cases(
    task: Any, device: str, case_name: str | None
) -> tuple[list[tuple[Any, tuple, dict]], list[str]]:
    """One case per dtype group; within a group, the smallest whose inputs hold no size or int of 0 or 1
    (torch.compile specialises those to constants, which would bake them into the kernels) and no int equal
    to a tensor size (see _coincidences)."""
    if case_name is not None:
        case = task.case(case_name)
        return [(case, *task.make_inputs(case, 0, device))], []
    groups: dict[tuple, list[Any]] = {}
    for case in task.cases:
        if case.is_captured:
            continue
        key = tuple(sorted((k, v) for k, v in case.params.items() if isinstance(v, (str, bool))))
        groups.setdefault(key, []).append(case)
    chosen, notes = [], []
    for cases in groups.values():
        ranked = sorted(cases, key=_case_size)[:_MAX_PROBED_CASES]
        # Last resort: the same cases at proxy sizes, as the fusion writer traces (a kernel specialised to
        # one token would pass this group's only case and fail every other token count).
        proxies = [
            dataclasses.replace(proxied(task, c, p), name=f"{c.name} at {_keys(task, c)} = {p}")
            for c in ranked
            if any(k in c.params for k in task.dynamic)
            for p in PROXIES[:2]
        ]
        best = None
        for case in ranked + proxies:
            for seed in range(_PROBED_SEEDS):
                try:
                    args, kwargs = task.make_inputs(case, seed, device)
                except Exception:  # a proxy size the inputs do not take (a batch larger than a pool)
                    if case not in proxies:
                        raise
                    break
                specials = _special_values(args, kwargs) + _coincidences(args, kwargs)
                if best is None or specials < best[0]:
                    best = (specials, case, args, kwargs)
                if specials == 0:
                    break
            if best is not None and best[0] == 0:
                break
        assert best is not None
        specials, case, args, kwargs = best
        if specials:
            notes.append(
                f"case {case.name} has {specials} sizes/ints of 0 or 1 or ints equal to a tensor size, "
                "which torch.compile specialises or guards on"
            )
        chosen.append((case, args, kwargs))
    return chosen, notes  # empty when every case is captured: the caller says so


def _keys(task: Any, case: Any) -> str:
    return ", ".join(k for k in task.dynamic if k in case.params)


def _case_size(case: Any) -> float:
    ints = [v for v in case.params.values() if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return math.prod(ints) if ints else 0


def _special_values(args: tuple, kwargs: dict) -> int:
    import torch

    count = 0
    for value in leaves([*args, *kwargs.values()]):
        if torch.is_tensor(value):
            count += sum(1 for d in value.shape if d in (0, 1))
        elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
            count += 1
    return count


def _coincidences(args: tuple, kwargs: dict) -> int:
    """Int arguments equal to a size of some tensor argument. Tracing `t[:, :n]` with n == t.shape[1]
    makes Dynamo guard on that equality and Inductor size the kernel by the tensor, not by n: the seed
    would then write the whole row for every n (seen on the H200 with decode_metadata's max_seq_pages)."""
    import torch

    values = list(leaves([*args, *kwargs.values()]))
    sizes = {d for v in values if torch.is_tensor(v) for d in v.shape if d > 1}
    return sum(1 for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 1 and v in sizes)


def leaves(values: list[Any]) -> Iterator[Any]:
    """The values inside nested lists, tuples and dicts of arguments."""
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from leaves(list(value))
        elif isinstance(value, dict):
            yield from leaves(list(value.values()))
        else:
            yield value
