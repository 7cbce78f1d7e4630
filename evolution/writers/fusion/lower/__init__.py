"""ATen ops lowered to tile code, one module per family: pointwise math, reductions, selections (top-k, sort,
scatters into a fresh tensor), views, gathers, and tensors assembled from pieces (args: the argument
conventions they share).

Each module fills its own LoweringTable; LOWERINGS merges them into the table an Evaluator dispatches on
(kernel.py and rows.py hand it over). The Evaluator imports no lowering, so that every lowering can import
the Evaluator without the two depending on each other.
"""

from __future__ import annotations

from evolution.writers.fusion.evaluate import LoweringTable
from evolution.writers.fusion.lower import assemble, gather, pointwise, reduce, select, views

LOWERINGS = LoweringTable(
    pointwise.LOWERINGS,
    reduce.LOWERINGS,
    select.LOWERINGS,
    views.LOWERINGS,
    gather.LOWERINGS,
    assemble.LOWERINGS,
)
