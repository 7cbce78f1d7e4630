"""Launch-parameter tuning: a cheap mutation that needs no LLM.

Each mutation moves one or a few launch parameters of the parent (see evolution.mutators.tuning_sites): a
block size doubles or halves (sometimes x4), warps double or halve, pipelining stages step by one. Block
sizes of one kernel keep their product bounded. With some probability a knob instead takes the value an
inspiration (a better relative with the same knob) uses: recombination of what already worked. Moves are
deterministic given the mutator's seed and the request (parent, iteration, island), and only ever touch
integer literals inside the EVOLVE-BLOCK, so the child parses and computes the same function.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

from evaluators.candidate import check_evolve_block
from evaluators.errors import CandidateError
from evolution.mutators.base import failed
from evolution.mutators.tuning_sites import (
    MAX_BLOCK,
    MAX_TILE,
    STAGES,
    WARPS,
    ParsedCandidate,
    Site,
    find_sites,
)
from evolution.types import MutationOutcome, MutationRequest

OPERATOR = "tune:launch"


@dataclass(frozen=True)
class Move:
    site: Site
    new_value: int

    def describe(self) -> str:
        return f"{self.site.name}: {self.site.value} -> {self.new_value}"


class LaunchTuningMutator:
    name = OPERATOR

    def __init__(self, *, seed: int = 0, max_moves: int = 2, recombine: float = 0.25) -> None:
        self.seed = seed
        self.max_moves = max(1, max_moves)
        self.recombine = recombine

    def can_seed(self) -> bool:
        return False

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        if request.parent is None:
            return failed(OPERATOR, "launch tuning needs a parent candidate (it cannot write a first one)")
        return await asyncio.to_thread(self.mutate_source, request)

    def mutate_source(self, request: MutationRequest) -> MutationOutcome:
        assert request.parent is not None
        parent = request.parent.source
        rng = random.Random(f"{self.seed}:{request.parent.id}:{request.iteration}:{request.island}")
        try:
            parsed = ParsedCandidate(parent)
            sites = parsed.sites()
        except Exception as exc:  # libcst cannot parse it: nothing this operator can do
            return failed(OPERATOR, f"cannot parse the parent for tuning: {type(exc).__name__}: {exc}")
        if not sites:
            return failed(
                OPERATOR,
                "no launch parameter to tune inside the EVOLVE-BLOCK (block sizes assigned as NAME = <int> "
                "and passed to a launch, or num_warps=/num_stages= literals)",
            )
        moves = self.choose_moves(sites, rng, _inspiration_values(request))
        if not moves:
            return failed(OPERATOR, "every launch parameter is already at its bounds")
        child = parsed.with_changes({m.site.key: m.new_value for m in moves})
        try:
            check_evolve_block(parent, child)
        except CandidateError as exc:  # cannot happen for in-block literals; keep the guarantee explicit
            return failed(OPERATOR, f"tuning produced an invalid child: {exc}")
        return MutationOutcome(operator=OPERATOR, child_source=child)

    def choose_moves(self, sites: list[Site], rng: random.Random, inspired: dict[str, int]) -> list[Move]:
        """One to `max_moves` moves on distinct sites, each keeping its kernel's tile within bounds."""
        count = rng.randint(1, min(self.max_moves, len(sites)))
        order = rng.sample(sites, len(sites))
        values = {s.key: s.value for s in sites}
        moves: list[Move] = []
        for site in order:
            if len(moves) == count:
                break
            proposal = inspired.get(site.key) if rng.random() < self.recombine else None
            if proposal is None or proposal == site.value:
                proposal = _step(site, rng)
            if proposal is None or not _tile_ok(site, proposal, sites, values):
                continue
            values[site.key] = proposal
            moves.append(Move(site, proposal))
        return moves


def _step(site: Site, rng: random.Random) -> int | None:
    """A neighbouring value of the site's kind, or None when no neighbour is valid."""
    if site.kind == "stages":
        options = [v for v in (site.value - 1, site.value + 1) if v in STAGES]
    elif site.kind == "warps":
        options = [v for v in (site.value // 2, site.value * 2) if v in WARPS and v != site.value]
    else:
        low = min(16, site.value)  # a block of 16+ may feed tl.dot, which needs 16: never go below
        factors = [2, 2, 2, 4]
        factor = rng.choice(factors)
        options = [v for v in (site.value // factor, site.value * factor) if low <= v <= MAX_BLOCK and v >= 1]
        if not options:
            options = [v for v in (site.value // 2, site.value * 2) if low <= v <= MAX_BLOCK and v >= 1]
    return rng.choice(options) if options else None


def _tile_ok(site: Site, value: int, sites: list[Site], values: dict[str, int]) -> bool:
    if site.kind != "block":
        return True
    product = value
    for other in sites:
        if other.kind == "block" and other.group == site.group and other.key != site.key:
            product *= values[other.key]
    return product <= MAX_TILE


def _inspiration_values(request: MutationRequest) -> dict[str, int]:
    """Knob values of the best inspiration that shares knobs with the parent (same lineage)."""
    ranked = sorted((p for p in request.inspirations if p.correct), key=lambda p: p.score, reverse=True)
    for program in ranked:
        try:
            sites = find_sites(program.source)
        except Exception:
            continue
        if sites:
            return {s.key: s.value for s in sites if s.key.startswith("name:")}
    return {}
