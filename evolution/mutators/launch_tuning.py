"""Launch-parameter tuning: a cheap mutation that needs no LLM.

Each mutation moves one or a few launch parameters of the parent (see evolution.mutators.tuning_sites): a
block size doubles or halves (sometimes x4), warps double or halve, pipelining stages step by one. Block
sizes of one kernel keep their product bounded.

Order of moves, per parent: first every single-site neighbour (the value a better relative uses for that
site, then each site one step down and up), so a few dozen evaluations see what each knob alone does; an
Inductor-seeded launch at torch.compile's first pointwise config is moved to its second one before the
neighbours (`inductor_second_configs`); then
random moves of several sites at once; when the random draws find nothing new, the rest of the parent's
neighbourhood (every change of up to `max_moves` sites, each to one of its step values) is walked in order,
so that "nothing left" is a fact rather than a bad draw: the outcome then says the parent is exhausted. A
source already proposed, or already known to the run (the parent, its inspirations, and `seen`, the run's
duplicate check when the controller hands it over), is never proposed again: duplicates would only be
rejected. Moves are deterministic given the mutator's seed and the
sequence of requests, and only ever touch integer literals inside the EVOLVE-BLOCK, so the child parses and
computes the same function.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from evaluators.candidate import check_evolve_block
from evaluators.errors import CandidateError
from evolution.dedup import candidate_sha
from evolution.mutators.base import ParentRewriter, failed
from evolution.mutators.tuning_sites import (
    MAX_BLOCK,
    MAX_TILE,
    STAGES,
    WARPS,
    ParsedCandidate,
    Site,
    find_sites,
    valid_value,
)
from evolution.types import MutationOutcome, MutationRequest
from evolution.writers.inductor.host import LAUNCH_KNOB

OPERATOR = "tune:launch"
RANDOM_ATTEMPTS = 48  # random multi-site draws tried per request before giving up on an unseen child
_POINTWISE_1D = {"XBLOCK", "MIN_XBLOCK", "NUM_WARPS"}


def _inductor_warps(block: int, elements_per_warp: int) -> int:
    """The warps Inductor gives a 1-D pointwise block (`triton_config` in torch._inductor.runtime.
    triton_heuristics: one per `elements_per_warp`, at least 4 for a block of 128 or more, at most 8). Its
    first config gives a warp 256 elements, its second half the block and 64 a warp."""
    return min(8, max(4 if block >= 128 else 1, block // elements_per_warp))


@dataclass(frozen=True)
class Move:
    site: Site
    new_value: int

    def describe(self) -> str:
        return f"{self.site.name}: {self.site.value} -> {self.new_value}"


class LaunchTuningMutator(ParentRewriter):
    name = OPERATOR
    description = "launch tuning"
    needs_correct_parent = True  # a launch change never fixes a wrong kernel: tune correct parents only
    exhaustion_ignores_inspirations = True  # a parent's neighbourhood is fixed: once spent, spent for good

    def __init__(
        self,
        *,
        seed: int = 0,
        max_moves: int = 2,
        recombine: float = 0.25,
        seen: Callable[[str], bool] | None = None,
    ) -> None:
        self.seed = seed
        self.max_moves = max(1, max_moves)
        self.recombine = recombine
        self.seen = seen  # the run's duplicate check on Candidate.sha, when the controller provides it
        self._known: set[str] = set()  # shas proposed by this mutator or shown to it
        self._neighbours: dict[str, Iterator[dict[str, int]]] = {}  # parent sha -> single-site moves left
        self._remaining: dict[str, Iterator[dict[str, int]]] = {}  # parent sha -> multi-site moves left
        self._lock = threading.Lock()  # mutate_source runs in worker threads, several at a time

    def mutate_source(self, request: MutationRequest) -> MutationOutcome:
        assert request.parent is not None
        parent = request.parent.source
        rng = random.Random(f"{self.seed}:{request.parent.id}:{request.iteration}:{request.island}")
        try:
            parsed = ParsedCandidate(parent)
            sites = parsed.sites()
        except Exception as exc:  # libcst cannot parse it: nothing this operator can do
            return failed(
                OPERATOR, f"cannot parse the parent for tuning: {type(exc).__name__}: {exc}", exhausted=True
            )
        if not sites:
            return failed(
                OPERATOR,
                "no launch parameter to tune inside the EVOLVE-BLOCK (block sizes assigned as NAME = <int> "
                "and passed to a launch, or num_warps=/num_stages= literals)",
                exhausted=True,
            )
        entry = request.task.entry
        with self._lock:
            parent_sha = candidate_sha(parent, entry)
            self._known.add(parent_sha)
            self._known.update(candidate_sha(p.source, entry) for p in request.inspirations)
            inspired = _inspiration_values(request)
            queue = self._neighbours.get(parent_sha)
            if queue is None:
                moves = self.single_site_moves(sites, inspired, parent_sha)
                queue = self._neighbours[parent_sha] = iter(moves)
            child = self._next_unseen(parsed, queue, entry)
            if child is None:
                draws = (self.choose_moves(sites, rng, inspired) for _ in range(RANDOM_ATTEMPTS))
                changes = [{m.site.key: m.new_value for m in moves} for moves in draws if moves]
                child = self._next_unseen(parsed, changes, entry)
            if child is None:
                rest = self._remaining.get(parent_sha)
                if rest is None:
                    rest = self._remaining[parent_sha] = self.multi_site_moves(sites, inspired, parent_sha)
                child = self._next_unseen(parsed, rest, entry)
        if child is None:
            at_bounds = not any(_neighbours(s) for s in sites)
            return failed(
                OPERATOR,
                "every launch parameter is already at its bounds"
                if at_bounds
                else "every nearby launch configuration of this parent was already proposed",
                exhausted=True,
            )
        try:
            check_evolve_block(parent, child)
        except CandidateError as exc:  # cannot happen for in-block literals; keep the guarantee explicit
            return failed(OPERATOR, f"tuning produced an invalid child: {exc}", internal=True)
        return MutationOutcome(operator=OPERATOR, child_source=child)

    def _next_unseen(
        self, parsed: ParsedCandidate, moves: Iterable[dict[str, int]], entry: str
    ) -> str | None:
        """Take changes from `moves` (an iterator keeps its place for the next call) until one gives a source
        nobody has seen; that source, or None when `moves` ran out."""
        for changes in moves:
            child = parsed.with_changes(changes)
            sha = candidate_sha(child, entry)
            if sha in self._known or (self.seen is not None and self.seen(sha)):
                continue
            self._known.add(sha)
            return child
        return None

    def single_site_moves(
        self, sites: list[Site], inspired: dict[str, int], key: str
    ) -> list[dict[str, int]]:
        """Every one-site change of the parent: a better relative's value first, then each site's neighbours
        one step down and up, the sites in an order fixed by the seed and the parent."""
        values = {s.key: s.value for s in sites}
        order = random.Random(f"{self.seed}:{key}").sample(sites, len(sites))
        moves: list[dict[str, int]] = []
        for site in order:
            value = inspired.get(site.key)
            if value is not None and value != site.value and _tile_ok(site, value, sites, values):
                moves.append({site.key: value})
        moves += [change for change in inductor_second_configs(sites) if change not in moves]
        for site in order:
            for value in _neighbours(site):
                if {site.key: value} not in moves and _tile_ok(site, value, sites, values):
                    moves.append({site.key: value})
        return moves

    def multi_site_moves(
        self, sites: list[Site], inspired: dict[str, int], key: str
    ) -> Iterator[dict[str, int]]:
        """Every change of 2 to `max_moves` sites at once, each to one of its step values (a better
        relative's value among them), every kernel's tile within bounds: what is left of the parent's
        neighbourhood after its single-site moves, fewer sites first, in an order fixed by the seed."""
        rng = random.Random(f"{self.seed}:{key}:multi")
        order = rng.sample(sites, len(sites))
        values = {s.key: s.value for s in sites}
        options = {s.key: _step_values(s, inspired.get(s.key)) for s in order}
        for count in range(2, min(self.max_moves, len(sites)) + 1):
            for group in itertools.combinations(order, count):
                for picked in itertools.product(*(options[s.key] for s in group)):
                    change = {s.key: v for s, v in zip(group, picked, strict=True)}
                    updated = {**values, **change}
                    if all(_tile_ok(s, change[s.key], sites, updated) for s in group):
                        yield change

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


def inductor_second_configs(sites: list[Site]) -> list[dict[str, int]]:
    """The changes that move the 1-D pointwise launches of an Inductor-seeded candidate from torch.compile's
    first pointwise config to its second: half the block (the per-call block's floor too), and the warps
    Inductor gives that (8 for 512 elements; the seed keeps them for every per-call block). torch.compile
    benchmarks both for every shape it compiles and launches the faster one, while the seed starts from
    the first: on an H100, SiLU-and-mul's seed at 1024 elements and 4 warps trailed compile by 3 % at 1 and
    64 tokens x 2048, at 512 and 8 warps it did not (results/2026-12-06-h100.md §13). Every such launch at
    once first, then each alone; none for a launch already moved, a reduction (its loop's block, its
    stages) or a 2-D tile, whose configs Inductor picks otherwise."""
    kernels: dict[str, dict[str, Site]] = {}
    for site in sites:
        match = LAUNCH_KNOB.match(site.name) if site.key.startswith("name:") else None
        if match:
            kernels.setdefault(match.group(1), {})[match.group(2)] = site
    changes = []
    for knobs in (kernels[prefix] for prefix in sorted(kernels)):
        if set(knobs) - _POINTWISE_1D or not {"XBLOCK", "NUM_WARPS"} <= set(knobs):
            continue
        block, warps = knobs["XBLOCK"], knobs["NUM_WARPS"]
        if block.value < 2 or warps.value != _inductor_warps(block.value, 256):
            continue
        change = {block.key: block.value // 2, warps.key: _inductor_warps(block.value // 2, 64)}
        if "MIN_XBLOCK" in knobs and knobs["MIN_XBLOCK"].value > 1:
            change[knobs["MIN_XBLOCK"].key] = knobs["MIN_XBLOCK"].value // 2
        changes.append(change)
    if len(changes) > 1:
        changes.insert(0, {key: value for change in changes for key, value in change.items()})
    return changes


def _neighbours(site: Site) -> list[int]:
    """The site's values one step away: half and double a block or a warp count, one stage less or more."""
    if site.kind == "stages":
        return [v for v in (site.value - 1, site.value + 1) if v in STAGES]
    if site.kind == "warps":
        return [v for v in (site.value // 2, site.value * 2) if v in WARPS and v != site.value]
    low = _lowest_block(site)
    return [
        v for v in (site.value // 2, site.value * 2) if low <= v <= MAX_BLOCK and v >= 1 and v != site.value
    ]


def _step_values(site: Site, inspired: int | None) -> list[int]:
    """Every value a single move may give the site (what _step draws from), a relative's value included."""
    if site.kind == "block":
        low = _lowest_block(site)
        candidates = [site.value // f for f in (2, 4)] + [site.value * f for f in (2, 4)]
        found = [v for v in candidates if low <= v <= MAX_BLOCK and v >= 1 and v != site.value]
    else:
        found = _neighbours(site)
    if inspired is not None and inspired != site.value and valid_value(site.kind, inspired):
        found.append(inspired)
    return sorted(set(found))


def _step(site: Site, rng: random.Random) -> int | None:
    """A neighbouring value of the site's kind, or None when no neighbour is valid."""
    if site.kind == "stages":
        options = [v for v in (site.value - 1, site.value + 1) if v in STAGES]
    elif site.kind == "warps":
        options = [v for v in (site.value // 2, site.value * 2) if v in WARPS and v != site.value]
    else:
        low = _lowest_block(site)
        factors = [2, 2, 2, 4]
        factor = rng.choice(factors)
        options = [v for v in (site.value // factor, site.value * factor) if low <= v <= MAX_BLOCK and v >= 1]
        if not options:
            options = [v for v in (site.value // 2, site.value * 2) if low <= v <= MAX_BLOCK and v >= 1]
    return rng.choice(options) if options else None


def _lowest_block(site: Site) -> int:
    """A block of 16 or more may feed tl.dot, which needs 16: it never goes below. A smaller one (rows per
    program, a vector width) may go down to 1."""
    return 16 if site.value >= 16 else 1


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
