"""Try, then keep what runs: settle the first assignment by running it and repairing from each error within a
bounded number of attempts, keep it once the reference runs on every serving case, gives the same outputs
for the same seed and passes the judge's degenerate check; then try each switch the code implies (another
string literal, None vs a value, the other truth value) as a case of its own, kept when it runs and takes a
path (a set of executed reference lines) that no kept case takes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from extractors.drafting.assignment import ArgDraft, Assignment
from extractors.drafting.cpu_budget import Shrink, projected_shrink, scaled_widths, shrink_widths
from extractors.drafting.facts import UseFacts
from extractors.drafting.repair import repairs
from extractors.drafting.serving_shapes import MODEL_SIZES, ServingProfile
from extractors.drafting.solver import PROBE_SIZES, symbols
from extractors.drafting.trials import TrialOutcome, TrialRunner

MAX_ATTEMPTS = 24  # trials to settle the first assignment
MAX_VARIANT_ATTEMPTS = 3  # trials to settle one switch
MAX_CASE_GROUPS = 4  # the first assignment and at most three switches


@dataclass
class Variant:
    assignment: Assignment
    flips: dict[str, str]  # argument -> what it is in this variant ("'softmax'", "tensor", "True")
    lines: frozenset[int] = frozenset()

    @property
    def suffix(self) -> str:
        parts = []
        for name, what in self.flips.items():
            word = what.strip("'").replace(" ", "_").lower()
            parts.append(name if word in ("tensor", "int", "float", "value") else f"{name}_{word}")
        return "_".join(parts)


@dataclass
class SearchResult:
    variants: list[Variant]  # the first is the base
    cases: list[dict[str, Any]]  # token cases of the base (sizes per case)
    attempts: int
    log: list[str] = field(default_factory=list)  # what each repair changed
    dropped: list[str] = field(default_factory=list)  # switches not kept, and why
    degenerate: str = ""  # the base runs, but no assignment passed the degenerate check
    error: str = ""  # nothing ran: the last error
    error_case: str = ""
    last: Assignment | None = None


def token_cases(assignment: Assignment, profile: ServingProfile) -> list[dict[str, Any]]:
    """Serving cases: decode batches and, when the inputs have a token dimension, a prefill chunk."""
    used = {s for a in assignment.args.values() if a.kind != "none" for s in symbols(a)}
    cases: list[dict[str, Any]] = []
    if not ({"tokens", "batch"} & used):
        return [{"name": "default"}]
    for tokens in profile.decode_tokens:
        case: dict[str, Any] = {"name": f"decode{tokens}"}
        if "tokens" in used:
            case["tokens"] = tokens
        if "batch" in used:
            case["batch"] = tokens
        cases.append(case)
    if "tokens" in used:
        for tokens in profile.prefill_tokens:
            case = {"name": f"prefill{tokens}", "tokens": tokens}
            if "batch" in used:
                case["batch"] = 1
            cases.append(case)
    return cases


class DraftSearch:
    def __init__(
        self,
        runner: TrialRunner,
        facts: UseFacts,
        profile: ServingProfile,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.runner = runner
        self.facts = facts
        self.profile = profile
        self.progress = progress or (lambda _: None)
        self.attempts = 0
        self.log: list[str] = []

    # -- the first assignment ------------------------------------------------------------------------------
    def run(self, start: Assignment) -> SearchResult:
        base, outcome, cases = self._settle(start, MAX_ATTEMPTS, frozen=None)
        result = SearchResult([], cases, self.attempts, self.log)
        if base is None:
            result.error, result.error_case, result.last = outcome.reason(), outcome.case, self._last
            if (
                outcome.ok
            ):  # it runs, but every assignment tried is degenerate or draws its own random numbers
                result.error = ""
                result.degenerate = outcome.reason()
                result.variants = [Variant(self._last, {})]
            return result
        result.variants = [Variant(base, {}, outcome.lines)]
        self._switches(result)
        result.attempts = self.attempts
        return result

    def _settle(
        self, start: Assignment, budget: int, frozen: set[str] | None
    ) -> tuple[Assignment | None, TrialOutcome, list[dict[str, Any]]]:
        """Repair until the probe case and the serving cases run and pass; None when the budget runs out.
        `frozen`: when given, the only arguments a repair may change (a switch must not reshape the base),
        and only the largest serving case is run (the switch's case: the first assignment covers the rest)."""
        current, tried = start, {start.key()}
        self._last = start
        outcome = TrialOutcome("probe", False, "not run")
        for _ in range(budget):
            self.attempts += 1
            cases = [{"name": "probe", **current.sizes, **PROBE_SIZES}]
            serving = [{**current.sizes, **c} for c in token_cases(current, self.profile)]
            if frozen is not None:
                serving = serving[-1:]
            outcomes = self.runner.run(current.spec_args(), current.sizes, cases)
            # a case too slow for the CPU (run or failed: the time was spent) halves the model's widths of
            # whatever is tried next, before the serving cases are run at the old sizes; a switch keeps the
            # base's sizes
            used = {s for a in current.args.values() if a.kind != "none" for s in symbols(a)}
            shrink = projected_shrink(outcomes, cases, self.profile, used) if frozen is None else None
            if outcomes[0].ok and shrink is None:
                # every case gets the judge's degenerate check (the extraction's probe refuses a degenerate
                # serving case, so one found here is repaired instead: `indices` in [0, batch) at batch 1);
                # the probe case is also run twice for a reference that draws its own random numbers
                outcomes = self.runner.run(
                    current.spec_args(),
                    current.sizes,
                    [*cases, *serving],
                    full=tuple(c["name"] for c in [*cases, *serving]),
                    repeat=("probe",),
                )
                if frozen is None:
                    shrink = projected_shrink(outcomes, [*cases, *serving], self.profile, used)
            # a reference that draws its own random numbers stays so whatever the inputs: another failure
            # (an error, a degenerate case) is the one a repair can act on
            rejected = [o for o in outcomes if not o.accepted]
            fixable = [o for o in rejected if not (o.ok and not o.deterministic and not o.degenerate)]
            failed = (fixable or rejected)[0] if (fixable or rejected) else None
            self._last = current
            if shrink is not None and (failed is None or outcomes[0].ok):
                smaller = self._shrunk(current, shrink)
                if smaller is not None:  # runs (so far): try it again at the smaller sizes
                    current = smaller
                    continue
            if failed is None:
                return current, outcomes[0], serving
            outcome = failed
            if failed.ok and frozen is not None:
                return None, outcome, serving  # a switch that runs but is degenerate or random: not a case
            sizes = next(c for c in [*cases, *serving] if c["name"] == failed.case)
            found = (
                [] if failed.timed_out and shrink is not None else repairs(current, failed, self.facts, sizes)
            )
            for candidate, what in found:
                if candidate.key() in tried or not _allowed(start, candidate, frozen):
                    continue
                tried.add(candidate.key())
                self.log.append(f"{failed.case}: {failed.reason()} -> {what}")
                self.progress(f"draft: {what}")
                current = candidate
                if shrink is not None:  # the repair is tried at the smaller sizes
                    current = self._shrunk(current, shrink) or current
                break
            else:
                # no repair: only smaller sizes are left to try (a trial that ran past its time has no error)
                smaller = self._shrunk(current, shrink) if shrink is not None else None
                if smaller is None:
                    return None, outcome, serving
                current = smaller
        return None, outcome, []

    def _shrunk(self, assignment: Assignment, shrink: Shrink) -> Assignment | None:
        smaller = shrink_widths(assignment, shrink)
        if smaller is None:
            return None
        self.log.append(smaller[1])
        self.progress(f"draft: {smaller[1]}")
        return smaller[0]

    # -- switches ------------------------------------------------------------------------------------------
    def _switches(self, result: SearchResult) -> None:
        frontier = list(result.variants)
        for depth in range(2):
            grown: list[Variant] = []
            for parent in frontier:
                for name, flip, what in self._flips(parent):
                    if len(result.variants) >= MAX_CASE_GROUPS:
                        return
                    candidate = parent.assignment.copy()
                    flip(candidate.args[name])
                    flips = {**parent.flips, name: what}
                    label = ", ".join(f"{k}={v}" for k, v in flips.items())
                    if any(v.flips == flips for v in result.variants):
                        continue
                    allowed = {
                        n for n, a in result.variants[0].assignment.args.items() if a.kind == "none"
                    } | {name}
                    settled, outcome, _ = self._settle(candidate, MAX_VARIANT_ATTEMPTS, allowed)
                    if settled is None:
                        if depth == 0:
                            result.dropped.append(f"{label}: {outcome.reason()}")
                        continue
                    if any(outcome.lines == v.lines for v in result.variants):
                        if depth == 0:
                            result.dropped.append(f"{label}: takes the same path as a kept case")
                        continue
                    variant = Variant(settled, flips, outcome.lines)
                    result.variants.append(variant)
                    grown.append(variant)
            frontier = grown

    def _flips(self, parent: Variant) -> list[tuple[str, Callable[[ArgDraft], None], str]]:
        out: list[tuple[str, Callable[[ArgDraft], None], str]] = []
        for name, arg in parent.assignment.args.items():
            if name in parent.flips:
                continue
            fact = self.facts.params.get(name)
            if arg.kind == "str":
                for literal in arg.literals:
                    if literal != arg.value:
                        out.append((name, _set_value(literal), repr(literal)))
            elif arg.optional and arg.kind == "none":
                kind = next((k for k in arg.kinds if k != "none"), None)
                if kind is not None:
                    out.append((name, _set_kind(kind), kind))
            elif arg.optional and arg.kind != "none":
                out.append((name, _set_kind("none"), "None"))
            elif arg.kind == "bool" and fact is not None and fact.truth_tests:
                out.append((name, lambda a: setattr(a, "value", not a.value), str(not arg.value)))
        return out


def _set_value(value: object) -> Callable[[ArgDraft], None]:
    return lambda arg: setattr(arg, "value", value)


def _set_kind(kind: str) -> Callable[[ArgDraft], None]:
    return lambda arg: arg.set_kind(kind)


def _allowed(start: Assignment, candidate: Assignment, frozen: set[str] | None) -> bool:
    if frozen is None:
        return True
    return all(candidate.args[n].spec() == start.args[n].spec() for n in start.args if n not in frozen)


# Other families whose sizes a draft adds cases for: each adds evaluator time to every candidate, so two.
MAX_OTHER_FAMILIES = 2


def served_model_cases(assignment: Assignment, profile: ServingProfile) -> list[dict[str, Any]]:
    """One decode case per other model family the profile serves that uses the same model sizes (a dense
    activation's `intermediate`, a router's `num_experts` and `topk`), at the largest decode token count: the
    draft then checks the function at the sizes of the models that run it, not of one model only."""
    used = {s for a in assignment.args.values() if a.kind != "none" for s in symbols(a)}
    needed = used & set(MODEL_SIZES)
    if not needed:
        return []
    own = next((m for m in profile.served or profile.models if m.name == assignment.model), None)
    seen = {own.family} if own is not None else set()
    cases: list[dict[str, Any]] = []
    for model in profile.models_using(needed):
        if model.family in seen or len(cases) == MAX_OTHER_FAMILIES:
            continue
        seen.add(model.family)
        case: dict[str, Any] = {"name": f"decode{profile.decode_tokens[-1]}_{model.name}"}
        case.update({k: profile.decode_tokens[-1] for k in ("tokens", "batch") if k in used})
        # a CPU-sized draft (cpu_budget) gets the other families' widths divided as its own were
        widths = scaled_widths(model.sizes, assignment.scale)
        case.update({k: widths[k] for k in sorted(needed)})
        cases.append(case)
    return cases
