"""The next move of the search (an operator, an island, a parent and its inspirations), never one known to
have nothing new, and why the search stops when no move is left.

An outcome with `exhausted` set says that its operator can only repeat the answer for that parent. Most
operators answer from the parent *and* the inspirations shown beside it (bucket crossover needs a partner
that gains): their mark holds for the same inspirations only, and a changed archive (a new best, a new
neighbour) makes the pair worth asking again. An operator whose answer depends on the parent alone says so
with `exhaustion_ignores_inspirations = True` (launch tuning: a parent's neighbourhood is fixed), and its
mark holds for good. Operators with `needs_correct_parent` are only handed correct parents, those with
`needs_compiled_parent` correct parents first and else ones that ran but computed wrong results (a fusion
variant may pick other tied experts or another rounding, never mend a kernel that does not build), and an
operator with an `accepts(source)` (or `accepts_program(program)`) method only the parents it accepts
(fusion variants: what the fusion generator wrote), so a move the operator would refuse on sight never
spends an iteration. An operator with `asked_first = True` is tried before the weighted draw whenever it
has a parent left (torch.compile's launches for the Inductor seed: a few children, each a known launch);
one with an `asked_first_for(parent, inspirations)` method only for the parents it names so (fusion:inductor
while a faster Inductor launch's own structure is unwritten for that parent), and drawn as any other for
the rest. Such a predicate must turn False once the move has run on the pair, or the search asks it first
for ever.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evaluators.result import Stage
from evolution.islands import Archive, Island
from evolution.operators import OperatorSet
from evolution.sampling import Choice, ParentSampler
from evolution.types import Mutator, Program

_Key = tuple[str, str, frozenset[str] | None]
AskedFirstFor = Callable[[Program, Sequence[Program]], bool]


@dataclass(frozen=True)
class Move:
    operator: Mutator
    island: int
    choice: Choice


class MoveChooser:
    def __init__(self, operators: OperatorSet, sampler: ParentSampler, rng: random.Random) -> None:
        self.operators = operators
        self.sampler = sampler
        self.rng = rng
        self._spent: set[_Key] = set()
        self._why: dict[str, str] = {}  # operator -> its latest "nothing new" answer

    def mark_spent(
        self, operator: Mutator, parent: Program, inspirations: Sequence[Program], why: str
    ) -> None:
        self._spent.add(_key(operator, parent, inspirations))
        self._why[operator.name] = why

    def next(self, archive: Archive, start: int) -> Move | None:
        """A move on island `start` (else the next island that has one), its operator drawn by the
        configured weights among those with a parent left; None when no operator has one."""
        islands = archive.islands
        order = [(start + step) % len(islands) for step in range(len(islands))]
        order = [i for i in order if len(islands[i])]  # an island may be empty early on: borrow the next
        for first in self.operators.evolvers:
            when = asked_first_when(first)
            if not asked_first(first) and when is None:
                continue
            move = self._move_for(first, islands, order, when)
            if move is not None:
                return move
        operator = self.operators.pick(self.rng)
        left = list(zip(self.operators.evolvers, self.operators.weights, strict=True))
        while True:
            move = self._move_for(operator, islands, order)
            if move is not None:
                return move
            left = [(m, w) for m, w in left if m is not operator]
            if not left:
                return None
            operator = self.rng.choices([m for m, _ in left], weights=[w for _, w in left])[0]

    def _move_for(
        self,
        operator: Mutator,
        islands: Sequence[Island],
        order: list[int],
        when: AskedFirstFor | None = None,
    ) -> Move | None:
        """`operator` on the first island of `order` that holds a parent for it (one `when` names, if
        given), or None."""
        # Operators that start from a wrong parent only for want of a right one prefer the right one.
        correct_only = needs_correct_parent(operator) or needs_compiled_parent(operator)
        for index in order:
            eligible = self._eligible(operator, islands[index], when)
            try:
                choice = self.sampler.choose(islands[index], correct_only=correct_only, eligible=eligible)
            except ValueError:  # nothing eligible on this island for this operator
                continue
            return Move(operator, index, choice)
        return None

    def reason(self, archive: Archive) -> str:
        """Why no move is left (the run's stop reason)."""
        elites = list(archive.all_elites())
        has_correct = any(p.correct for p in elites)
        parts = []
        for op in self.operators.evolvers:
            if needs_correct_parent(op) and not has_correct:
                parts.append(f"{op.name}: no correct program to start from")
            elif not any(parent_fits(op, p) for p in elites):
                parts.append(f"{op.name}: no program it can start from")
            else:
                parts.append(f"{op.name}: {self._why.get(op.name, 'nothing new for any parent')}")
        return "move space exhausted: no operator has anything new to propose for any parent (" + (
            "; ".join(parts) + ")"
        )

    def _eligible(
        self, operator: Mutator, island: Island, when: AskedFirstFor | None = None
    ) -> Callable[[Program], bool]:
        def eligible(program: Program) -> bool:
            if not parent_fits(operator, program):
                return False
            inspirations = self.sampler.inspirations(island, program)
            if _key(operator, program, inspirations) in self._spent:
                return False
            return when is None or when(program, inspirations)

        return eligible


def needs_correct_parent(operator: Mutator) -> bool:
    """Launch tuning and crossover keep what a kernel computes: a wrong parent only yields wrong children."""
    return bool(getattr(operator, "needs_correct_parent", False))


def needs_compiled_parent(operator: Mutator) -> bool:
    """Fusion variants regenerate a kernel with other knobs: that may change its results (tie order,
    rounding), but a parent that never ran tells nothing about which knobs build."""
    return bool(getattr(operator, "needs_compiled_parent", False))


def ran_with_wrong_results(program: Program) -> bool:
    """The parent compiled and ran, and only its results were wrong (not flagged by a hack check)."""
    result = program.result
    if result is None or result.hacks:
        return False
    return result.stage is Stage.CORRECTNESS and not result.correct


def parent_fits(operator: Mutator, program: Program) -> bool:
    """Whether `operator` may be handed `program` as its parent at all."""
    if not accepts_parent(operator, program):
        return False
    if needs_compiled_parent(operator):
        return program.correct or ran_with_wrong_results(program)
    return program.correct or not needs_correct_parent(operator)


def accepts_parent(operator: Mutator, program: Program) -> bool:
    """Whether the operator can work on this parent at all (operators without `accepts` take any;
    `accepts_program` is asked the whole program, where its origin matters)."""
    accepts_program = getattr(operator, "accepts_program", None)
    if accepts_program is not None:
        return bool(accepts_program(program))
    accepts = getattr(operator, "accepts", None)
    return True if accepts is None else bool(accepts(program.source))


def asked_first(operator: Mutator) -> bool:
    """An operator asked before the weighted draw while it has a parent (`asked_first = True`): a handful
    of children each worth more than a random move, such as torch.compile's own launches."""
    return bool(getattr(operator, "asked_first", False))


def asked_first_when(operator: Mutator) -> AskedFirstFor | None:
    """The operator's `asked_first_for(parent, inspirations)`: the pairs it is asked first for."""
    return getattr(operator, "asked_first_for", None)


def _key(operator: Mutator, parent: Program, inspirations: Sequence[Program]) -> _Key:
    if getattr(operator, "exhaustion_ignores_inspirations", False):
        return (operator.name, parent.id, None)
    return (operator.name, parent.id, frozenset(p.id for p in inspirations))
