"""Two fusion candidates that differ in their rows per program, written as one kernel text.

At one row a program the fusion writer indexes a row with a scalar (`row = tl.program_id(0)`); at more
it takes a 2-D tile of ROWS rows. A crossover of the two would ship two kernel bodies that compute the
same thing, which a reviewer reads twice. The one-row parent is written again with the writer's
`row_tile` knob (the 2-D tile at ROWS = 1): the two then differ only in the constant ROWS, and the
crossover ships one kernel with a launch table (crossover.source). The rewritten code is the child's, so
the evaluator times it as it times any child; at one row the 2-D tile compiles to the scalar-indexed
kernel's instructions (its row test, `| EVEN_ROWS`, folds away).

Only plain fusion candidates (one knobs line each) are rewritten, and only where this process holds the
task's trace (the writer traced it for the seed or a variant): a crossover child of several codes, or a
trace not made here, crosses as it is.
"""

from __future__ import annotations

from dataclasses import replace

from evaluators.candidate import find_evolve_block
from evaluators.errors import CandidateError
from evaluators.task import Task
from evolution.mutators.fusion_variant import in_parent
from evolution.writers.fusion.generate import GenerationError, generate
from evolution.writers.fusion.knobs import HEADER, Knobs, parse
from evolution.writers.fusion.writer import FusionWriter


def same_row_tile(source: str, partner: str, task: Task, writer: FusionWriter | None) -> tuple[str, str]:
    """`source` and `partner`, the one-row one written with the 2-D row tile where the other takes more
    rows a program; both as they are otherwise."""
    mine, theirs = _plain_knobs(source), _plain_knobs(partner)
    if writer is None or mine is None or theirs is None:
        return source, partner
    if _one_row(mine) and theirs.rows > 1:
        return _tiled(source, mine, task, writer), partner
    if _one_row(theirs) and mine.rows > 1:
        return source, _tiled(partner, theirs, task, writer)
    return source, partner


def _one_row(knobs: Knobs) -> bool:
    return knobs.rows == 1 and not knobs.row_tile


def _plain_knobs(source: str) -> Knobs | None:
    """The knobs of a candidate the fusion writer wrote as it is (one knobs line in its EVOLVE-BLOCK)."""
    try:
        block = find_evolve_block(source)
    except CandidateError:
        return None
    if block is None or block.text.count(HEADER) != 1:
        return None
    return parse(block.text)


def _tiled(source: str, knobs: Knobs, task: Task, writer: FusionWriter) -> str:
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
