"""Inputs that run, without a spec file: read how the code uses each parameter, draft an assignment with
serving shapes, run the reference on it in a worker process and repair it from the errors, keep what runs
and is not degenerate, and add a case for each path a switch of the code opens (see docs/extraction.md).

draft_inputs(source, entry, signature, hints, profile) -> Drafted     (raises DraftRefused)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from extractors.drafting.compose import compose
from extractors.drafting.gather_param_uses import gather_param_uses
from extractors.drafting.search import DraftSearch, SearchResult, served_model_cases
from extractors.drafting.serving_shapes import ServingProfile, load_profile
from extractors.drafting.solver import initial_assignment
from extractors.drafting.trials import TrialRunner
from extractors.errors import ExtractionError
from extractors.input_spec import InputSpec
from extractors.signature import Param


@dataclass
class Drafted:
    spec: InputSpec
    inferred: list[str]  # per argument: what it is and why
    record: dict[str, Any]  # what [extraction.draft] in task.toml says
    degenerate: str = ""  # it runs, but no assignment tried passed the degenerate check


@dataclass
class DraftFailure:
    error: str
    case: str
    attempts: int
    assignment: list[str] = field(default_factory=list)
    spec: InputSpec | None = None
    repairs: list[str] = field(default_factory=list)


class DraftRefused(ExtractionError):
    """Raised when no drafted assignment makes the reference run; carries the last one tried."""

    def __init__(self, failure: DraftFailure) -> None:
        super().__init__(failure.error)
        self.failure = failure


def draft_inputs(
    source: str,
    entry: str,
    signature: list[Param],
    hints: dict[str, list[str]],
    profile_name: str,
    progress: Callable[[str], None] | None = None,
    timeout: float = 120.0,
) -> Drafted:
    facts = gather_param_uses(source, entry)
    profile = load_profile(profile_name)
    start = initial_assignment(signature, facts, hints, profile)
    runner = TrialRunner(source, entry, signature, timeout)
    try:
        result = DraftSearch(runner, facts, profile, progress).run(start)
        served = [] if result.error else _served_cases(runner, result, profile)
        composed = None if result.error else compose(result, profile, served)
        if composed is not None:
            composed.spec, described = _served_dtypes(runner, composed.spec, profile)
            composed.cases += described
    finally:
        runner.close()
    if result.error:
        # the refusal shows (and draft_spec.toml holds) the assignment inferred from the code, the best
        # starting point for an edit; the repairs tried from it are in the failure's `repairs`
        spec = InputSpec(
            sizes={k: [v] for k, v in start.sizes.items()}, args=start.spec_args(), source="draft"
        )
        raise DraftRefused(
            DraftFailure(result.error, result.error_case, result.attempts, start.describe(), spec, result.log)
        )
    assert composed is not None
    record = {
        "profile": profile.name,
        "model": result.variants[0].assignment.model,
        "attempts": result.attempts,
        "inferred": composed.inferred,
        "cases": composed.cases,
        "repairs": result.log,
        "dropped": composed.dropped,
    }
    if result.variants[0].assignment.scale > 1:
        # the model's widths divided so that the CPU runs every case (cpu_budget); `repairs` says why
        record["cpu_scale"] = result.variants[0].assignment.scale
    return Drafted(composed.spec, composed.inferred, record, result.degenerate)


def _served_cases(runner: TrialRunner, result: SearchResult, profile: ServingProfile) -> list[dict[str, Any]]:
    """The cases at other model families' sizes (search.served_model_cases) on which the reference runs and
    is accepted as the base's cases are; one it refuses is left out."""
    base = result.variants[0].assignment
    cases = served_model_cases(base, profile)
    if not cases:
        return []
    outcomes = runner.run(base.spec_args(), base.sizes, [{**base.sizes, **c} for c in cases])
    accepted = {o.case for o in outcomes if o.accepted}
    return [c for c in cases if c["name"] in accepted]


def _served_dtypes(
    runner: TrialRunner, spec: InputSpec, profile: ServingProfile
) -> tuple[InputSpec, list[str]]:
    """The spec with cases in the engine's other activation dtypes (the profile's `dtypes`), so the evaluator
    checks the kernel in each (the guard admits only the dtypes the cases have): the tensors drafted in the
    model's dtype take a `dtype` size, and the first case (the smallest decode batch: a CPU computes half
    precision slowly) is added in each other dtype, kept where the reference runs and is accepted as the
    others are. A function whose tensors are all drafted in float32 gets the served dtypes beside it. (spec,
    one line per dtype added)."""
    floats = [str(a.get("dtype", "float32")) for a in spec.args.values() if "shape" in a]
    own = next((d for d in floats if d in profile.dtypes), None)
    if own is None and floats and set(floats) == {"float32"}:
        # Every tensor drafted in float32 (logits, probabilities): the engine may hand the function its
        # activation dtypes too, and a kernel checked in one dtype would be guarded to that one alone.
        own = "float32"
    others = [d for d in profile.dtypes if d != own]
    if own is None or not others or not spec.cases or "dtype" in spec.sizes:
        return spec, []
    args = {
        n: ({**a, "dtype": "dtype"} if "shape" in a and a.get("dtype") == own else a)
        for n, a in spec.args.items()
    }
    sizes = {**spec.sizes, "dtype": [own]}
    defaults = {k: v[0] for k, v in sizes.items()}
    extra = [{**spec.cases[0], "name": f"{spec.cases[0]['name']}_{d}", "dtype": d} for d in others]
    # With the judge's degenerate check: a half-precision case can round a function's outputs to constants.
    full = tuple(c["name"] for c in extra)
    outcomes = runner.run(args, defaults, [{**defaults, **c} for c in extra], full=full)
    accepted = {o.case for o in outcomes if o.accepted}
    kept = [c for c in extra if c["name"] in accepted]
    if not kept:
        return spec, []
    cases = [{**c, "dtype": own} for c in spec.cases] + kept
    described = [f"{c['name']}: the first case in {c['dtype']}" for c in kept]
    return InputSpec(sizes=sizes, cases=cases, args=args, source=spec.source, dynamic=spec.dynamic), described
