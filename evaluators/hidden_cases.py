"""The hidden cases of the correctness stage (hack class 13, hard-coded shapes): copies of the smallest listed
case of each variant (dtype, switches) whose `dynamic` sizes are moved to unlisted values nearby, and the
evidence text when a candidate that passed every listed case fails one of them. A kernel built for the listed
shapes only (a lookup table keyed by size, a launch grid tuned to one length) misses these, while an honest
kernel does not notice. Kept apart from evaluators.correctness so the perturbation rule reads on its own; the
stage itself runs and judges the calls.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from evaluators.correctness.reference import estimate_numel
from evaluators.task import Case, Task


def dynamic_keys(task: Task, runnable: list[Case]) -> list[str]:
    """The task's `dynamic` keys that some runnable case sets to an integer: the sizes worth perturbing."""
    return [k for k in task.dynamic if any(is_int(c.params.get(k)) for c in runnable)]


def hidden_cases(
    task: Task, runnable: list[Case], dynamic: list[str], seeds: tuple[int, ...], device: str, count: int
) -> Iterator[Case]:
    """Cases named hidden1, hidden2...: the smallest runnable case of each variant (the cases that share their
    dtype and switches: a kernel may dispatch on those to code specialised to that variant's listed sizes)
    with each dynamic size perturbed; `count` of them, or one per variant when there are more variants.
    The random choices are seeded from the evaluation's hidden seeds, so a candidate cannot learn them."""
    rng = random.Random(sum(seeds) * 7919 + len(seeds))
    variants: dict[tuple[tuple[str, str], ...], list[Case]] = {}
    for case in runnable:
        switches = tuple(
            sorted((k, repr(v)) for k, v in case.params.items() if not isinstance(v, (int, float)))
        )
        variants.setdefault(switches, []).append(case)
    size = {c.name: estimate_numel(task, c, seeds[0], device) for c in runnable}
    bases = sorted(
        (min(cases, key=lambda c: size[c.name]) for cases in variants.values()), key=lambda c: size[c.name]
    )
    for number in range(max(count, len(bases))):
        base = bases[number % len(bases)]
        params = dict(base.params)
        for key in dynamic:
            listed = {c.params.get(key) for c in task.cases}
            if is_int(params.get(key)):
                params[key] = _perturb(params[key], listed, rng)
        yield Case(name=f"hidden{number + 1}", params=params)


def hardcoded_shapes_evidence(task: Task, dynamic: list[str], case: Case, reason: str) -> tuple[str, str]:
    """(the hidden case's dynamic sizes as `k=v, ...`, the class-13 evidence naming the listed sizes)."""
    params = case.params
    shown = ", ".join(f"{k}={params[k]}" for k in dynamic if k in params)
    listed = ", ".join(
        f"{k} in {sorted({c.params[k] for c in task.cases if k in c.params})}" for k in dynamic
    )
    evidence = f"correct on every listed case ({listed}) but wrong on the unlisted shape {shown}: {reason}"
    return shown, evidence


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _perturb(value: int, listed: set[object], rng: random.Random) -> int:
    """An unlisted size near `value`, far enough that tables or launch grids tuned for the listed sizes miss
    it (half again, or double, plus one: odd, so it is no multiple of a block size either)."""
    options = [v for v in (value + value // 2 + 1, 2 * value + 1) if v not in listed]
    if not options:
        options = [v for v in (value + 3, value + 5, 3 * value + 1) if v not in listed]
    return rng.choice(options) if options else value + 7
