"""A module-level comment block that repeats an earlier one goes, with the blank lines that set it apart:
what a crossover's second copy of the Inductor seed leaves where the child keeps one copy of the code. A
definition's own comment stays, and so does every comment said once."""

from __future__ import annotations

from kernelbot.integrate.drop_repeated_comments import DropRepeatedCommentsTransformer
from tests.kernelbot.integrate.integrate_testing import assert_transform

# build_child's child of the Inductor seed and a copy launched with other constants (shrunk): the kernel
# and constants both define are kept once, the copy's comments above them stay behind.
CHILD = """
    import triton


    # Launch parameters, one set per kernel. The kernels mask partial blocks, so any power of two is
    # correct for a BLOCK; the launch tuner varies these.
    K0_XBLOCK = 1  # _red_fused_add_0: XBLOCK


    # Fused by Inductor from aten.add
    @triton.jit
    def _red_fused_add_0(in_ptr0, out_ptr0, XBLOCK):
        pass


    def _entry_large(x):
        return x


    # Launch parameters, one set per kernel. The kernels mask partial blocks, so any power of two is
    # correct for a BLOCK; the launch tuner varies these.


    # Fused by Inductor from aten.add


    def _entry_small(x):
        return x
    """


def test_a_copys_comments_with_no_code_under_them_go() -> None:
    kept = CHILD.index("    # Launch parameters", CHILD.index("def _entry_large"))
    assert_transform(
        DropRepeatedCommentsTransformer(), CHILD, CHILD[:kept] + CHILD[CHILD.index("    def _entry_small") :]
    )


def test_a_second_introduction_of_the_constants_goes_and_they_are_one_group() -> None:
    assert_transform(
        DropRepeatedCommentsTransformer(),
        """
        import triton

        # Launch parameters, one set per kernel. The kernels mask partial blocks, so any power of two is
        # correct for a BLOCK; the launch tuner varies these.
        K0_XBLOCK = 1
        K0_NUM_WARPS = 8


        # Launch parameters, one set per kernel. The kernels mask partial blocks, so any power of two is
        # correct for a BLOCK; the launch tuner varies these.
        K0_R0_BLOCK = 4096
        """,
        """
        import triton

        # Launch parameters, one set per kernel. The kernels mask partial blocks, so any power of two is
        # correct for a BLOCK; the launch tuner varies these.
        K0_XBLOCK = 1
        K0_NUM_WARPS = 8
        K0_R0_BLOCK = 4096
        """,
    )


def test_a_definitions_own_comment_and_comments_said_once_stay() -> None:
    """Two kernels Inductor fused from the same ops both say so; comments in a body are the body's."""
    source = """
        import triton


        # Fused by Inductor from aten.mul
        @triton.jit
        def _poi_fused_mul_0(in_ptr0):
            # the query
            pass


        # Fused by Inductor from aten.mul
        @triton.jit
        def _poi_fused_mul_2(in_ptr0):
            # the query
            pass


        # Kernels above, the host below.


        def entry(x):
            return x
        """
    assert_transform(DropRepeatedCommentsTransformer(), source, source)
