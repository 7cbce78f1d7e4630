from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext

from kernelbot.integrate.export_from_init import ExportFromInitCommand
from tests.kernelbot.integrate.integrate_testing import assert_transform, release_file


def command() -> ExportFromInitCommand:
    return ExportFromInitCommand(CodemodContext(), "rms_norm_triton", "rms_norm_triton")


def test_imports_the_function_and_lists_it_in_all() -> None:
    assert_transform(
        command(),
        """
        from .fill_kv_cache import fill_kv_cache

        __all__ = [
            'fill_kv_cache',
        ]
        """,
        """
        from .fill_kv_cache import fill_kv_cache
        from .rms_norm_triton import rms_norm_triton

        __all__ = [
            'fill_kv_cache',
            'rms_norm_triton',
        ]
        """,
    )


def test_one_line_tuple_and_no_all() -> None:
    assert_transform(
        command(),
        """
        from .a import a
        __all__ = ("a",)
        """,
        """
        from .a import a
        from .rms_norm_triton import rms_norm_triton

        __all__ = ("a", "rms_norm_triton")
        """,
    )
    assert_transform(
        command(), "from .a import a\n", "from .a import a\nfrom .rms_norm_triton import rms_norm_triton\n"
    )


def test_leaves_an_init_that_exports_it_already_untouched() -> None:
    source = """
    from .rms_norm_triton import rms_norm_triton

    __all__ = ['rms_norm_triton']
    """
    assert_transform(command(), source, source)


def test_real_lmdeploy_kernels_init() -> None:
    original = release_file("lmdeploy==0.18.0", "lmdeploy/pytorch/kernels/cuda/__init__.py")
    result = command().transform_module(cst.parse_module(original)).code
    added = [line for line in result.splitlines() if line not in original.splitlines()]
    assert added == ["from .rms_norm_triton import rms_norm_triton", "    'rms_norm_triton',"]
