"""Drafted sizes a CPU can run: drafts are tried, and tasks probed, on the CPU, where some references are far
slower than on the GPU they serve on (a half-precision matmul has no fast CPU kernel: LMDeploy's AWQ linear
dequantizes its 4-bit weight to float16 and multiplies 37 tokens by a 4096 x 12288 weight in about a minute,
so its 1024-token prefill case would take half an hour, and the extraction runs each case several times).

Each trial reports how long each case took; the slowest, projected to the largest serving case (work taken as
proportional to the token count), sets how many times the model's widths are halved so that the largest case
fits CASE_SECONDS. Only widths are halved (hidden, intermediate, ...), never counts whose ratios the code may
rely on (heads, experts, top-k), nor below MIN_WIDTH, so a width that a group size divides stays divisible."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from extractors.drafting.assignment import Assignment
from extractors.drafting.serving_shapes import ServingProfile
from extractors.drafting.trials import TrialOutcome

# What the largest drafted case may take on the CPU: a trial runs a case up to five times (twice for
# determinism, three seeds for the degenerate check) and the extraction's probe three more.
CASE_SECONDS = 20.0
WIDTHS = ("hidden", "intermediate", "moe_intermediate", "kv_lora_rank", "q_lora_rank", "vocab")
MIN_WIDTH = 128  # a group size of 128 still divides a halved width


@dataclass(frozen=True)
class Shrink:
    halvings: int
    seconds: float  # the slowest case's measured time
    case: str
    projected: float  # that time projected to the largest serving case


def projected_shrink(
    outcomes: Sequence[TrialOutcome],
    cases: Sequence[dict[str, Any]],
    profile: ServingProfile,
    used: set[str],
) -> Shrink | None:
    """How many halvings of the widths bring the largest serving case under CASE_SECONDS (None: it fits).
    `used`: the sizes the arguments' shapes name (the token count scales only a case that uses it)."""
    largest = {
        "tokens": max((*profile.decode_tokens, *profile.prefill_tokens)),
        "batch": max(profile.decode_tokens),
    }
    largest = {k: v for k, v in largest.items() if k in used}
    by_name = {c["name"]: c for c in cases}
    measured = []
    for outcome in outcomes:
        sizes = by_name.get(outcome.case, {})
        ratio = max([1.0] + [largest[k] / sizes[k] for k in largest if int(sizes.get(k) or 0) > 0])
        measured.append((ratio, -outcome.seconds, outcome))
    if not measured:
        return None
    # projected from the case nearest the largest (the largest itself once it has run): a small case's time
    # is mostly fixed costs that do not grow with the tokens
    ratio, _, nearest = min(measured, key=lambda m: m[:2])
    worst = Shrink(0, nearest.seconds, nearest.case, nearest.seconds * ratio)
    if worst.projected <= CASE_SECONDS:
        return None
    # a width halved halves work linear in it and quarters a product of two widths (a matmul's): assume the
    # product, and halve again on the next trial if that was not enough
    halvings = math.ceil(math.log(worst.projected / CASE_SECONDS, 4))
    return Shrink(max(1, halvings), worst.seconds, worst.case, worst.projected)


def shrink_widths(assignment: Assignment, shrink: Shrink) -> tuple[Assignment, str] | None:
    """The assignment with its widths halved `shrink.halvings` times (each stops at MIN_WIDTH or an odd
    value), and a line saying what changed and why; None when no width can be halved."""
    sizes = dict(assignment.sizes)
    changed = []
    for name in WIDTHS:
        value = sizes.get(name)
        if not isinstance(value, int):
            continue
        new = value
        for _ in range(shrink.halvings):
            if new % 2 or new // 2 < MIN_WIDTH:
                break
            new //= 2
        if new != value:
            sizes[name] = new
            changed.append(f"{name} {value} -> {new}")
    if not changed:
        return None
    out = assignment.copy()
    out.sizes = sizes
    out.scale = assignment.scale * max(assignment.sizes[n] // sizes[n] for n in WIDTHS if n in sizes)
    why = (
        f"{shrink.case} took {shrink.seconds:.0f} s on this CPU (about {shrink.projected:.0f} s projected "
        f"for the largest serving case) -> CPU-sized: {', '.join(changed)}"
    )
    return out, why


def scaled_widths(sizes: dict[str, int], scale: int) -> dict[str, int]:
    """Another model's sizes with its widths halved as often as the draft's own were (`Assignment.scale`),
    each stopping where shrink_widths would."""
    out = dict(sizes)
    for name in WIDTHS:
        value = out.get(name)
        if not isinstance(value, int):
            continue
        left = scale
        while left > 1 and value % 2 == 0 and value // 2 >= MIN_WIDTH:
            value, left = value // 2, left // 2
        out[name] = value
    return out
