"""Two fusion candidates that differ in their rows per program, written as one kernel text.

At one row a program the fusion writer indexes a row with a scalar (`row = tl.program_id(0)`); at more
it takes a 2-D tile of ROWS rows. A crossover of the two would ship two kernel bodies that compute the
same thing, which a reviewer reads twice. The one-row parent is written again with the writer's
`row_tile` knob (the 2-D tile at ROWS = 1): the two then differ only in the constant ROWS, and the
crossover ships one kernel with a launch table (crossover.source). The rewritten code is the child's, so
the evaluator times it as it times any child; at one row the 2-D tile compiles to the scalar-indexed
kernel's instructions (its row test, `| EVEN_ROWS`, folds away).

Only a plain fusion candidate (one knobs line) is rewritten, beside a code of more rows in the same
crossover (the run's last crossover routes its parent to several partners, one after another: any of
them, or a crossover child among them, may hold it), and only where this process holds the task's trace
(the writer traced it for the seed or a variant). A one-row code inside a crossover child stays as it is:
its names were suffixed when it was routed to, or (a launch table's child) its one code launches with
another's constants on one side of a size, which writing it again from its knobs would drop.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from evaluators.candidate import find_evolve_block
from evaluators.errors import CandidateError
from evaluators.task import Task
from evolution.mutators.crossover.source import SECTION
from evolution.mutators.crossover.tree import RoutingError, read_routing
from evolution.mutators.fusion_variant import in_parent
from evolution.writers.fusion.generate import GenerationError, generate
from evolution.writers.fusion.knobs import HEADER, Knobs, parse
from evolution.writers.fusion.writer import FusionWriter


def row_tiled(sources: list[str], task: Task, writer: FusionWriter | None) -> list[str]:
    """`sources` (a parent and the partners a crossover routes it to, in order), each plain one-row one
    written with the 2-D row tile where another of them holds a code of more rows a program and the same
    structure (itself, or one of the codes a crossover child routes to); all as they are otherwise."""
    codes = [_codes(source, task.entry) for source in sources]
    tiled = []
    for k, (source, own) in enumerate(zip(sources, codes, strict=True)):
        one_row = own.plain_one_row()
        others = codes[:k] + codes[k + 1 :]
        if writer is not None and one_row and any(other.more_rows_like(one_row) for other in others):
            source = _tiled(source, one_row, task, writer)
        tiled.append(source)
    return tiled


def _structure(knobs: Knobs) -> tuple[object, ...]:
    """What of a code's knobs shapes its kernel body, but its rows: two codes alike in it differ in launch
    constants only (rows, blocks, warps, a persistent grid's size) once both take the row tile."""
    return (
        knobs.inner,
        knobs.grid,
        bool(knobs.persistent),
        knobs.eviction,
        knobs.rounding,
        knobs.topk,
        knobs.passes,
        knobs.reload,
        knobs.index32,
    )


@dataclass(frozen=True)
class _Codes:
    """The knobs of each code the fusion writer wrote in a candidate's EVOLVE-BLOCK (one per knobs line; a
    crossover child keeps each parent's; none where a line does not parse), and whether the candidate is a
    crossover child (another candidate's code routed to in it)."""

    knobs: tuple[Knobs, ...]
    routed: bool

    def plain_one_row(self) -> Knobs | None:
        """The knobs of a candidate that is one fusion code at one row a program, indexed by a scalar."""
        if self.routed or len(self.knobs) != 1:
            return None
        only = self.knobs[0]
        return only if only.rows == 1 and not only.row_tile else None

    def more_rows_like(self, one_row: Knobs) -> bool:
        """Whether a code here takes more rows a program, in the structure of `one_row`."""
        return any(k.rows > 1 and _structure(k) == _structure(one_row) for k in self.knobs)


def _codes(source: str, entry: str) -> _Codes:
    """The candidate's codes; an EVOLVE-BLOCK that does not parse counts as a crossover child (left alone)."""
    try:
        block = find_evolve_block(source)
    except CandidateError:
        return _Codes((), routed=True)
    text = block.text if block is not None else ""
    knobs = [parse(line) for line in text.splitlines() if line.startswith(HEADER)]
    parsed = tuple(k for k in knobs if k is not None) if None not in knobs else ()
    return _Codes(parsed, routed=bool(SECTION.search(text)) or _dispatches(text, entry))


def _dispatches(block: str, entry: str) -> bool:
    """Whether the block's entry routes calls by size: a launch table's child keeps one code (and its one
    knobs line) but launches it with another's constants on one side, which writing the code again from
    its knobs would drop."""
    try:
        return read_routing(block, entry) is not None
    except (RoutingError, SyntaxError, ValueError):
        return True  # a routing crossover.source did not write: left as it is


def _tiled(source: str, knobs: Knobs, task: Task, writer: FusionWriter) -> str:
    """The candidate written again with the row tile, in its own frame; as it is where this process holds
    no trace of the task or the writer has no kernel for the knobs."""
    report = writer.traced(task)
    if report is None or report.error:
        return source
    try:
        generated = generate(
            report,
            replace(knobs, row_tile=True),
            entry=task.entry,
            task_name=task.name,
            line_length=writer.line_length,
        )
    except GenerationError:
        return source
    return in_parent(source, generated.source)
