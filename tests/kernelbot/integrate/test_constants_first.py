"""Module constants first (kernelbot/integrate/constants_first.py): a flattened crossover's constants move
from between its kernels to the top of the module, with their comments; nothing else moves."""

from __future__ import annotations

import textwrap

import libcst as cst

from kernelbot.integrate.constants_first import constants_first

MODULE = textwrap.dedent(
    """\
    import triton

    BLOCK = 1024  # elements per program


    def _small(x):
        return x * WARPS_SCALE_SMALL


    WARPS_SCALE_SMALL = 2.0
    # rows each program of the large kernel takes
    ROWS_LARGE = 2  # rows per program
    TWICE = 1
    TWICE = 2
    lower_case = 3
    DERIVED = BLOCK * 2


    def _large(x):
        return x * ROWS_LARGE
    """
)


def test_constants_below_a_function_move_to_the_top_with_their_comments() -> None:
    moved = constants_first(cst.parse_module(MODULE)).code
    top, rest = moved.split("def _small", 1)
    assert top == textwrap.dedent(
        """\
        import triton

        BLOCK = 1024  # elements per program
        WARPS_SCALE_SMALL = 2.0
        # rows each program of the large kernel takes
        ROWS_LARGE = 2  # rows per program


        """
    )
    # bound twice, not upper case, not a literal: each stays where the module had it
    assert "TWICE = 1\nTWICE = 2\nlower_case = 3\nDERIVED = BLOCK * 2" in rest
    assert constants_first(cst.parse_module(moved)).code == moved


def test_a_module_whose_constants_are_on_top_is_left_as_it_is() -> None:
    source = "import triton\n\nBLOCK = 1\n\n\ndef k():\n    return BLOCK\n"
    assert constants_first(cst.parse_module(source)).code == source
    after_imports = constants_first(cst.parse_module("import triton\n\n\ndef k():\n    pass\n\n\nN = 4\n"))
    assert after_imports.code.startswith("import triton\n\nN = 4\n\n\ndef k():")
