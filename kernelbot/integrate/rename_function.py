"""Transformers: renames a module-level function and every reference to it in the module (the candidate's
entry becomes a public name that says what it is), and the words of comments that name renamed functions."""

from __future__ import annotations

import re
from collections import Counter

import libcst as cst

from evolution.mutators.crossover.alike import ROUTE_SUFFIX


class RenameFunctionTransformer(cst.CSTTransformer):
    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old = old
        self.new = new
        self._skip: set[int] = set()  # Names that are attribute members or keywords, not references

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._skip.add(id(node.keyword))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if updated_node.value == self.old and id(original_node) not in self._skip:
            return updated_node.with_changes(value=self.new)
        return updated_node


class CommentWordsRenamer(cst.CSTTransformer):
    """Each whole word of a comment that `names` maps (old -> new), renamed: a comment speaks of the
    function by its new name too."""

    def __init__(self, names: dict[str, str]) -> None:
        super().__init__()
        self.names = names
        self._words = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b") if names else None

    def leave_Comment(self, original_node: cst.Comment, updated_node: cst.Comment) -> cst.Comment:
        if self._words is None:
            return updated_node
        renamed = self._words.sub(lambda w: self.names[w[1]], updated_node.value)
        return updated_node.with_changes(value=renamed)


def with_seeded_names(renames: dict[str, str], functions: set[str]) -> dict[str, str]:
    """What comments call each function `renames` renames (old -> new): its name, and the name its seed
    gave it where a crossover suffixed the definition for the sizes it runs
    (`_poi_fused_mul_silu_slice_0_large`, its launch parameters' comments still saying
    `_poi_fused_mul_silu_slice_0`), unless that name is one of `functions` or two of them have it."""
    seeded = {name: ROUTE_SUFFIX.sub("", name) for name in functions | set(renames)}
    count = Counter(seeded.values())
    names = dict(renames)
    for old, new in renames.items():
        if seeded[old] != old and seeded[old] not in functions and count[seeded[old]] == 1:
            names[seeded[old]] = new
    return names
