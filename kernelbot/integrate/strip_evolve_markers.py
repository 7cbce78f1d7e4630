"""Transformer: removes the `# EVOLVE-BLOCK-START` / `# EVOLVE-BLOCK-END` comments the search keeps in a
candidate; they mean nothing in the target repository."""

from __future__ import annotations

import re

import libcst as cst

MARKER = re.compile(r"^#\s*EVOLVE-BLOCK-(START|END)\b")


class StripEvolveMarkersTransformer(cst.CSTTransformer):
    def leave_EmptyLine(
        self, original_node: cst.EmptyLine, updated_node: cst.EmptyLine
    ) -> cst.EmptyLine | cst.RemovalSentinel:
        if updated_node.comment is not None and MARKER.match(updated_node.comment.value):
            return cst.RemoveFromParent()
        return updated_node

    def leave_TrailingWhitespace(
        self, original_node: cst.TrailingWhitespace, updated_node: cst.TrailingWhitespace
    ) -> cst.TrailingWhitespace:
        if updated_node.comment is not None and MARKER.match(updated_node.comment.value):
            return updated_node.with_changes(comment=None, whitespace=cst.SimpleWhitespace(""))
        return updated_node
