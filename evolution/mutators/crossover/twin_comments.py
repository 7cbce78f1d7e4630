"""Comments that name a copy the flattening dropped name the copy that ships in its place.

Two parents' codes that are one code up to their names (an Inductor seed crossed with a copy Inductor
numbered otherwise: `_red_fused_..._0` against `_red_fused_..._1`) ship once, as the copy of the leaf that
runs the smallest inputs (crossover.tree's groups). What the parents shared, the crossover kept once, from
the first parent: its launch constants and their comments (`K0_XBLOCK = 1  # _red_fused_..._0: XBLOCK`),
which then name a kernel the module no longer defines. Each whole word of a comment that names a dropped
copy's definition, by its name or by the name its seed gave it before the crossover suffixed it
(`_small`), names the shipped copy's instead; a word the shipped code uses for one of its own stays.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import libcst as cst

from evolution.mutators.crossover.size_tests import SIDE_SUFFIX
from evolution.mutators.crossover.tree import Group


def twin_names(groups: Sequence[Group], kept: Collection[str], mapping: dict[str, str]) -> dict[str, str]:
    """What comments may call a dropped copy's definition -> the name its shipped twin has in the flat
    block (`mapping`: kept name -> its new name). `kept`: the names some group ships."""
    # What the shipped code's own comments may call its definitions, before and after the renaming.
    spoken = {*kept, *mapping.values(), *(SIDE_SUFFIX.sub("", name) for name in kept)}
    targets: dict[str, set[str]] = {}
    for group in groups:
        for dropped, shipped in group.twins.items():
            if dropped in kept:  # another group ships it under this name
                continue
            for said in {dropped, SIDE_SUFFIX.sub("", dropped)}:
                targets.setdefault(said, set()).add(mapping.get(shipped, shipped))
    # A word two dropped definitions go by names neither for sure.
    return {
        said: next(iter(new))
        for said, new in targets.items()
        if said not in spoken and len(new) == 1 and said not in new
    }


def comments_renamed(code: str, names: dict[str, str]) -> str:
    """`code` with each whole word of its comments that `names` maps (old -> new) renamed."""
    if not names:
        return code
    return cst.parse_module(code).visit(_CommentWordsRenamer(names)).code


class _CommentWordsRenamer(cst.CSTTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        super().__init__()
        self.names = names
        self.words = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")

    def leave_Comment(self, original_node: cst.Comment, updated_node: cst.Comment) -> cst.Comment:
        return updated_node.with_changes(value=self.words.sub(lambda w: self.names[w[1]], updated_node.value))
