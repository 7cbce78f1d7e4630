"""Transformer: rebuilds a piece of code with some of its nodes replaced.

The gatherers decide *what* changes, keyed by the identity of nodes of the original tree (LibCST metadata is
attached to those); this transformer only applies the decisions. A replacement is a function of the updated
node, so changes nested inside one another compose (a renamed global inside a rewritten `self.f(...)` call).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

Replacement = Callable[[cst.CSTNode], cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel]


class ReplaceNodesTransformer(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, Replacement]) -> None:
        super().__init__()
        self.replacements = replacements

    # libcst declares that a node leaves as its own type; a replacement here may be any node (a call for a
    # name), which libcst accepts at run time wherever the parent's field allows it.
    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel:
        replace = self.replacements.get(id(original_node))
        return replace(updated_node) if replace is not None else updated_node


class FillEmptyBlocksTransformer(cst.CSTTransformer):
    """Puts `pass` into blocks left empty after imports were removed from them."""

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.BaseSuite:
        if updated_node.body:
            return updated_node
        return updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])


def constant(node: cst.CSTNode | cst.FlattenSentinel) -> Replacement:
    return lambda _updated: node


def rename(name: str) -> Replacement:
    return lambda updated: (
        updated.with_changes(value=name) if isinstance(updated, cst.Name) else cst.Name(name)
    )
