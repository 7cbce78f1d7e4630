"""SEARCH/REPLACE edits and rewrites of a parent's EVOLVE-BLOCK (evolution.mutators.diff)."""

from __future__ import annotations

import pytest

from evaluators.candidate import check_evolve_block
from evolution.mutators.diff import (
    Edit,
    MalformedAnswer,
    apply_edits,
    apply_rewrite,
    extract_rewrite,
    parse_edits,
)

PARENT = """import torch
import triton
import triton.language as tl

SCALE = 2.0
# EVOLVE-BLOCK-START
BLOCK = 1024


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, num_warps=4)
    return out
# EVOLVE-BLOCK-END
"""


def answer(*edits: tuple[str, str], note: str = "Use more warps.") -> str:
    parts = [note, ""]
    for search, replace in edits:
        parts += [
            "<<<<<<< SEARCH",
            search.rstrip("\n"),
            "=======",
            replace.rstrip("\n"),
            ">>>>>>> REPLACE",
            "",
        ]
    return "\n".join(parts)


def test_parse_edits_reads_every_block_in_order_even_inside_fences():
    text = (
        "Idea.\n```\n"
        + answer(("BLOCK = 1024\n", "BLOCK = 2048\n"), ("num_warps=4", "num_warps=8"))
        + "```\n"
    )
    edits = parse_edits(text)
    assert edits == [Edit("BLOCK = 1024\n", "BLOCK = 2048\n"), Edit("num_warps=4\n", "num_warps=8\n")]


def test_apply_edits_changes_only_the_block_and_passes_the_block_check():
    child = apply_edits(PARENT, parse_edits(answer(("BLOCK = 1024\n", "BLOCK = 4096\n"))))
    assert "BLOCK = 4096\n" in child and "BLOCK = 1024" not in child
    check_evolve_block(PARENT, child)  # raises if anything outside the block moved
    assert child.replace("BLOCK = 4096", "BLOCK = 1024") == PARENT


def test_multi_line_edit_and_deletion():
    search = (
        "    mask = offs < n\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)\n"
    )
    replace = (
        "    mask = offs < n\n"
        "    x = tl.load(x_ptr + offs, mask=mask)\n"
        "    tl.store(out_ptr + offs, x + x, mask=mask)\n"
    )
    child = apply_edits(PARENT, [Edit(search, replace), Edit("BLOCK = 1024\n", "")])
    assert "x + x" in child and "BLOCK = 1024" not in child
    check_evolve_block(PARENT, child)


def test_search_ignoring_trailing_whitespace_still_matches():
    child = apply_edits(
        PARENT, [Edit("BLOCK = 1024   \n\n\n@triton.jit  \n", "BLOCK = 512\n\n\n@triton.jit\n")]
    )
    assert "BLOCK = 512\n" in child


def test_edit_of_code_outside_the_block_is_rejected():
    with pytest.raises(MalformedAnswer, match="outside the EVOLVE-BLOCK"):
        apply_edits(PARENT, [Edit("SCALE = 2.0\n", "SCALE = 3.0\n")])
    with pytest.raises(MalformedAnswer, match="outside the EVOLVE-BLOCK"):
        apply_edits(PARENT, [Edit("import triton\n", "import triton, os\n")])


def test_unknown_or_ambiguous_search_text_is_rejected_with_a_reason():
    with pytest.raises(MalformedAnswer, match="not in the EVOLVE-BLOCK"):
        apply_edits(PARENT, [Edit("BLOCK = 999\n", "BLOCK = 1\n")])
    with pytest.raises(MalformedAnswer, match="occurs 5 times"):
        apply_edits(PARENT, [Edit("mask", "m")])
    with pytest.raises(MalformedAnswer, match="no <<<<<<< SEARCH"):
        apply_edits(PARENT, parse_edits("I would rather not."))
    with pytest.raises(MalformedAnswer, match="empty SEARCH"):
        parse_edits(answer(("", "BLOCK = 1\n")))


def test_edits_apply_in_sequence():
    child = apply_edits(
        PARENT, [Edit("BLOCK = 1024\n", "BLOCK = 256\n"), Edit("BLOCK = 256\n", "BLOCK = 128\n")]
    )
    assert "BLOCK = 128\n" in child


def test_rewrite_of_the_block_body():
    body = "BLOCK = 2048\n\n\ndef scale(x):\n    return x\n"
    code = extract_rewrite(f"New idea.\n```python\n{body}```\nDone.")
    child = apply_rewrite(PARENT, code)
    check_evolve_block(PARENT, child)
    assert "def scale(x):\n    return x\n# EVOLVE-BLOCK-END" in child


def test_rewrite_as_a_whole_file_must_keep_the_outside_identical():
    whole = PARENT.replace("BLOCK = 1024", "BLOCK = 64")
    assert apply_rewrite(PARENT, extract_rewrite(f"```python\n{whole}```")) == whole
    drifted = whole.replace("SCALE = 2.0", "SCALE = 5.0")
    with pytest.raises(MalformedAnswer, match="outside the EVOLVE-BLOCK"):
        apply_rewrite(PARENT, drifted)
    one_marker = whole.replace("# EVOLVE-BLOCK-END\n", "")
    with pytest.raises(MalformedAnswer, match="marker"):
        apply_rewrite(PARENT, one_marker)


def test_extract_rewrite_prefers_the_last_python_fence_and_refuses_prose():
    text = "```python\nA = 1\n```\nbetter:\n```python\nA = 2\n```\n```text\nnot code\n```\n"
    assert extract_rewrite(text) == "A = 2\n"
    with pytest.raises(MalformedAnswer, match="no ```python"):
        extract_rewrite("Sorry, I cannot help with that.")
    with pytest.raises(MalformedAnswer, match="not Python"):
        extract_rewrite("```cuda\n__global__ void k() {}\n```")
