"""The Candidate contract: parsing, the entry point, and EVOLVE-BLOCK enforcement."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluators.candidate import (
    Candidate,
    check_evolve_block,
    find_evolve_block,
    load_candidate,
    normalize_source,
    parse_candidate,
    replace_evolve_block,
)
from evaluators.errors import CandidateError, EvolveBlockViolation

PARENT = """import triton

HEADER = 1

# EVOLVE-BLOCK-START
def kernel_body(x):
    return x + 1
# EVOLVE-BLOCK-END

def entry(x):
    return kernel_body(x)
"""


def test_parse_finds_the_entry_and_rejects_what_cannot_run() -> None:
    assert parse_candidate(PARENT, "entry").entry == "entry"
    with pytest.raises(CandidateError, match="no top-level function 'missing'"):
        parse_candidate(PARENT, "missing")
    with pytest.raises(CandidateError, match="does not parse: line 1"):
        parse_candidate("def entry(:\n", "entry")
    assert parse_candidate("entry = lambda x: x\n", "entry").entry == "entry"


def test_load_candidate_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "cand.py"
    path.write_text(PARENT)
    candidate = load_candidate(path, "entry")
    assert candidate.path == path.resolve() and candidate.source == PARENT
    with pytest.raises(CandidateError, match="does not exist"):
        load_candidate(tmp_path / "missing.py", "entry")


def test_sha_ignores_comments_and_spacing() -> None:
    noisy = PARENT.replace("HEADER = 1", "HEADER   =   1  # a comment")
    assert Candidate(PARENT, "entry").sha == Candidate(noisy, "entry").sha
    assert Candidate(PARENT, "entry").sha != Candidate(PARENT.replace("x + 1", "x + 2"), "entry").sha
    assert normalize_source("def (") == "def ("


def test_the_block_is_found_and_replaced() -> None:
    block = find_evolve_block(PARENT)
    assert block is not None and block.text.startswith("def kernel_body") and block.start_line == 5
    child = replace_evolve_block(PARENT, "def kernel_body(x):\n    return x * 3")
    assert "x * 3" in child and child.count("EVOLVE-BLOCK-START") == 1
    check_evolve_block(PARENT, child)  # edits inside the block are fine
    with pytest.raises(CandidateError, match="no # EVOLVE-BLOCK-START"):
        replace_evolve_block("x = 1\n", "y = 2\n")


@pytest.mark.parametrize(
    ("child", "fragment"),
    [
        (PARENT.replace("HEADER = 1", "HEADER = 2"), "outside the EVOLVE-BLOCK"),
        (PARENT.replace("return kernel_body(x)", "return x"), "outside the EVOLVE-BLOCK"),
        (PARENT.replace("# EVOLVE-BLOCK-START\n", "").replace("# EVOLVE-BLOCK-END\n", ""), "dropped the"),
        ("import os\n" + PARENT, "outside the EVOLVE-BLOCK"),
    ],
)
def test_edits_outside_the_block_are_rejected(child: str, fragment: str) -> None:
    with pytest.raises(EvolveBlockViolation, match=fragment):
        check_evolve_block(PARENT, child)


def test_trailing_whitespace_and_unmarked_parents() -> None:
    check_evolve_block(PARENT, PARENT.replace("HEADER = 1", "HEADER = 1   "))
    check_evolve_block("def entry(x):\n    return x\n", "anything = 1\n")  # no markers: fully evolvable


def test_malformed_markers_are_refused() -> None:
    doubled = PARENT.replace("# EVOLVE-BLOCK-END", "# EVOLVE-BLOCK-START")
    with pytest.raises(CandidateError, match="exactly one"):
        find_evolve_block(doubled)
    with pytest.raises(CandidateError):
        parse_candidate(doubled, "entry")
