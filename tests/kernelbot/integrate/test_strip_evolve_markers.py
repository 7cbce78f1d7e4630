from __future__ import annotations

import libcst as cst

from kernelbot.integrate.strip_evolve_markers import StripEvolveMarkersTransformer
from tests.kernelbot.integrate.integrate_testing import assert_transform, release_file


def test_removes_marker_lines_and_trailing_markers() -> None:
    assert_transform(
        StripEvolveMarkersTransformer(),
        """
        import triton

        # EVOLVE-BLOCK-START
        BLOCK = 128  # EVOLVE-BLOCK-END


        def f(x):
            # keep this comment
            return x
        # EVOLVE-BLOCK-END
        """,
        """
        import triton

        BLOCK = 128


        def f(x):
            # keep this comment
            return x
        """,
    )


def test_leaves_code_without_markers_untouched() -> None:
    source = """
    # EVOLVE-BLOCK is mentioned here, but this is no marker
    x = 1  # evolve later
    """
    assert_transform(StripEvolveMarkersTransformer(), source, source)


def test_real_lmdeploy_kernel_with_markers_loses_only_them() -> None:
    # A real Triton module of LMDeploy, wrapped the way the search wraps a candidate.
    original = release_file("lmdeploy==0.18.0", "lmdeploy/pytorch/kernels/cuda/activation.py")
    marked = (
        original.replace("\n@triton.jit", "\n# EVOLVE-BLOCK-START\n@triton.jit", 1) + "# EVOLVE-BLOCK-END\n"
    )
    stripped = cst.parse_module(marked).visit(StripEvolveMarkersTransformer()).code
    assert "EVOLVE-BLOCK" not in stripped
    assert stripped == original
