from __future__ import annotations

import libcst as cst

from kernelbot.integrate.rename_function import RenameFunctionTransformer
from tests.kernelbot.integrate.integrate_testing import assert_transform, release_file


def test_renames_the_definition_and_its_references_only() -> None:
    assert_transform(
        RenameFunctionTransformer("silu_and_mul", "silu_and_mul_triton"),
        """
        def silu_and_mul(x, depth=0):
            if depth:
                return silu_and_mul(x, depth=depth - 1)
            return ops.silu_and_mul(x, silu_and_mul=1)
        """,
        """
        def silu_and_mul_triton(x, depth=0):
            if depth:
                return silu_and_mul_triton(x, depth=depth - 1)
            return ops.silu_and_mul(x, silu_and_mul=1)
        """,
    )


def test_leaves_a_module_without_the_name_untouched() -> None:
    source = """
    def other(x):
        return x.silu_and_mul
    """
    assert_transform(RenameFunctionTransformer("silu_and_mul", "silu_and_mul_triton"), source, source)


def test_real_lmdeploy_kernel_module() -> None:
    original = release_file("lmdeploy==0.18.0", "lmdeploy/pytorch/kernels/cuda/rms_norm.py")
    renamed = cst.parse_module(original).visit(RenameFunctionTransformer("rms_norm", "rms_norm_triton")).code
    assert "\ndef rms_norm_triton(" in renamed and "\ndef rms_norm(" not in renamed
    # Only whole names change: the kernels (`rms_norm_kernel`...) and other helpers keep theirs.
    assert renamed.replace("rms_norm_triton", "rms_norm") == original
