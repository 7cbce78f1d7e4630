"""Each kernel of a flat module that holds several says, in its docstring, what sets it apart.

A bucket crossover keeps a second kernel body only where the structure differs (bucket_crossover's
STRUCTURE_GAIN), and crossover.routes names each for when it runs (`_small`, `_large`). The question a
reviewer asks next is what the difference is. The fusion knobs each body was written with answer it: the
knob line of the crossover section a kernel came from (`# fusion-knobs: {"reload": true}`). Here each
kernel gets a docstring that states, in words, the value of every structural knob it does not share with
another kernel of the module, for instance a gather shuffled in registers against one loaded again from
memory, or one pass over each row against two. A phrase is written only where both kernels' code shows
their values (a `tl.gather` against none, a chunk loop, cache hints): a knob that left the code as it was
says nothing. An Inductor seed's kernel (no knob line) says what it is in the comment above it and is left
out of the comparison; a module with any other kernel the fusion writer did not write (an LLM's) is left as
it is. Source text only, never run.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from evolution.mutators.crossover.alike import (
    ROUTE_SUFFIX,
    ROUTE_WORDS,
    body_key,
    code,
    is_docstring,
    jit_functions,
)
from evolution.mutators.crossover.source import SECTION
from evolution.writers.fusion.blocks import BLOCK_PREFIX
from evolution.writers.fusion.knobs import Knobs, parse
from evolution.writers.fusion.lower.select import TOPK_BLOCKS
from evolution.writers.inductor.render import ORIGIN_COMMENT

_KERNEL_DEF = re.compile(r"^@triton\.jit\s*\ndef (\w+)\(", re.MULTILINE)
_CHUNK_LOOP = re.compile(r"\bfor \w+ in range\(0, ")
# A docstring line fits the narrowest engine's line length (SGLang's 88) inside a kernel (4 columns).
DOC_WIDTH = 88 - 4


@dataclass(frozen=True)
class _Phrase:
    says: Callable[[object], str | None]  # the knob's value -> what it does ("" / None: nothing to say)
    shows: Callable[[object, str], bool]  # (value, the kernel's code) -> whether the code shows it


_TOPK_HOW = {
    "mask": "keys rewritten in registers each round",
    "threshold": "read-only keys, each round taking the best below the last winner",
    "twopass": "the value first, then its index: no 64-bit keys",
    "bitonic": "Triton's bitonic top-k (`tl.topk`) over value-and-index keys",
}

# In the order the docstring states them: the program's tile, what it reads again, how it walks a row.
_PHRASES: dict[str, _Phrase] = {
    "rows": _Phrase(
        lambda rows: "One row a program." if rows == 1 else "`ROWS` rows a program, as one 2-D tile.",
        lambda rows, text: (re.search(r"\bROWS\b", text) is None) == (rows == 1),
    ),
    "reload": _Phrase(
        lambda on: (
            "Loads the values it regroups again, in the grouped layout, rather than shuffling them "
            "in registers."
            if on
            else "Regroups values it already holds with `tl.gather` (a shuffle in registers): each "
            "input element is loaded once."
        ),
        lambda on, text: ("tl.gather(" in text) != on,
    ),
    "passes": _Phrase(
        lambda passes: (
            "Walks each row twice in chunks (its reductions, then the writes): a row need not fit "
            "in registers."
            if passes == "two"
            else "Holds each row whole in registers: one read of it."
        ),
        lambda passes, text: bool(_CHUNK_LOOP.search(text)) == (passes == "two"),
    ),
    "topk": _Phrase(
        lambda method: f"Top-k by the {method} method: {_TOPK_HOW[str(method)]}.",
        lambda method, text: _calls_block(TOPK_BLOCKS[str(method)], text),
    ),
    "persistent": _Phrase(
        lambda n: (
            f"At most {n} programs, each looping over rows: loads that every row shares happen once "
            "a program."
            if n
            else "One program a row block."
        ),
        lambda n, text: ("tl.num_programs(0)" in text) == bool(n),
    ),
    "eviction": _Phrase(
        lambda on: (
            "Its loads carry cache hints (streamed ones evict_first, reused ones evict_last)."
            if on
            else "Its loads carry no cache hints."
        ),
        lambda on, text: ("eviction_policy=" in text) == on,
    ),
}


def _calls_block(block: str, text: str) -> bool:
    """Whether `text` calls the building block `block` (under a size suffix a crossover gave it, or none)."""
    return re.search(rf"\b{block}(?:_(?:{ROUTE_WORDS}))?\(", text) is not None


def knobs_by_kernel(block: str) -> dict[str, Knobs | None]:
    """Each kernel a crossover child's block defines -> the knobs of the section it came from (None where
    that section has no knob line)."""
    starts = [0, *(m.start() for m in SECTION.finditer(block))]
    found: dict[str, Knobs | None] = {}
    for start, end in zip(starts, [*starts[1:], len(block)], strict=True):
        section = block[start:end]
        knobs = parse(section)
        for name in _KERNEL_DEF.findall(section):
            found[name] = knobs
    return found


def kernels_noted(flat: str, block: str, mapping: dict[str, str]) -> str:
    """`flat` (the module crossover.routes wrote from `block`, renaming its kept names by `mapping`) with a
    docstring on each kernel that differs from another in a structural knob; `flat` itself where there is
    one kernel body, a kernel without knobs or nothing to say."""
    module = cst.parse_module(flat)
    jit = jit_functions(module)
    kernels = [name for name in jit if not name.startswith(BLOCK_PREFIX)]
    if len(kernels) < 2 or len({body_key(jit[k]) for k in kernels}) < len(kernels):
        return flat
    sources = _sources(kernels, knobs_by_kernel(block), mapping)
    unknown = [k for k in kernels if not sources[k] or None in sources[k]]
    if any(not _says_it_is_inductors(jit[k]) for k in unknown):
        return flat
    # Inductor's kernels say what they are above their def; the fusion writer's are told apart here.
    kernels = [k for k in kernels if k not in unknown]
    if len(kernels) < 2:
        return flat
    shared = {k: _shared([one for one in sources[k] if one is not None]) for k in kernels}
    texts = {k: code(jit[k]) for k in kernels}
    notes: dict[str, str] = {}
    for kernel in kernels:
        said = []
        for knob, phrase in _PHRASES.items():
            value = shared[kernel].get(knob)
            # Said where the code tells this kernel apart from another written with another value.
            apart = [
                other
                for other in kernels
                if knob in shared[other]
                and shared[other][knob] != value
                and phrase.shows(shared[other][knob], texts[other])
            ]
            shown = knob in shared[kernel] and apart and phrase.shows(value, texts[kernel])
            if shown and (words := phrase.says(value)):
                said.append(words)
        if said:
            notes[kernel] = " ".join(said)
    if not notes:
        return flat
    return module.visit(_Docstrings(notes)).code


def _says_it_is_inductors(kernel: cst.FunctionDef) -> bool:
    """A kernel seeded from torch.compile's code, which says so in the comment above it."""
    comments = [line.comment.value for line in kernel.leading_lines if line.comment is not None]
    return any(c.startswith(ORIGIN_COMMENT) for c in comments)


def _sources(
    kernels: list[str], raw: dict[str, Knobs | None], mapping: dict[str, str]
) -> dict[str, list[Knobs | None]]:
    """Per kernel of the flat module: the knobs of the block's kernels it was written from. A kept kernel
    renamed by `mapping` is its own source; kernels merged on one choice (a top-k method, an index width)
    take their shared name without the size suffix."""
    sources: dict[str, list[Knobs | None]] = {k: [] for k in kernels}
    for name, knobs in raw.items():
        if name not in mapping:
            continue  # not kept: no input reaches it
        flat_name = mapping[name]
        target = flat_name if flat_name in sources else ROUTE_SUFFIX.sub("", flat_name)
        if target in sources:
            sources[target].append(knobs)
    return sources


def _shared(knobs: list[Knobs]) -> dict[str, object]:
    """The structural knobs whose value every one of `knobs` has."""
    values = {name: {getattr(k, name) for k in knobs} for name in _PHRASES}
    return {name: next(iter(v)) for name, v in values.items() if len(v) == 1}


def _docstring_literal(text: str, width: int = DOC_WIDTH) -> str:
    """`text` as a docstring's literal, wrapped to `width` columns after a 4-column indent."""
    lines = textwrap.wrap(f'"""{text}"""', width, break_on_hyphens=False)
    return "\n    ".join(lines)


class _Docstrings(cst.CSTTransformer):
    def __init__(self, notes: dict[str, str]) -> None:
        self.notes = notes

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # only the module's own functions

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        note = self.notes.get(updated_node.name.value)
        body = updated_node.body
        if (
            note is None
            or not isinstance(body, cst.IndentedBlock)
            or (body.body and is_docstring(body.body[0]))
        ):
            return updated_node
        docstring = cst.SimpleStatementLine([cst.Expr(cst.SimpleString(_docstring_literal(note)))])
        return updated_node.with_changes(body=body.with_changes(body=[docstring, *body.body]))
