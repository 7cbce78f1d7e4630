"""The confirmation of a search's winner: re-timed apart from the search, in fresh processes, against
every baseline a PR shows, with a claim that holds over processes (kernelbot.confirm.run, .stoprule)."""

from kernelbot.confirm.report import (
    COLUMNS,
    CellReport,
    ColumnReport,
    ConfirmReport,
)
from kernelbot.confirm.run import NOT_MEASURED_INTERPRETER, ConfirmOptions, confirm, current_path_of
from kernelbot.confirm.stoprule import FASTER, NOT_FASTER, NOT_SHOWN, StopRule

__all__ = [
    "COLUMNS",
    "FASTER",
    "NOT_FASTER",
    "NOT_MEASURED_INTERPRETER",
    "NOT_SHOWN",
    "CellReport",
    "ColumnReport",
    "ConfirmOptions",
    "ConfirmReport",
    "StopRule",
    "confirm",
    "current_path_of",
]
