from __future__ import annotations

import libcst as cst

from kernelbot.integrate.set_module_docstring import SetModuleDocstringTransformer
from tests.kernelbot.integrate.integrate_testing import assert_transform, release_file

HEADER = "# Copyright (c) OpenMMLab. All rights reserved."


def test_replaces_the_docstring_and_adds_the_header() -> None:
    assert_transform(
        SetModuleDocstringTransformer("What it computes.\n\nWhere it came from.", HEADER),
        '''
        """Old text."""

        import torch
        ''',
        '''
        # Copyright (c) OpenMMLab. All rights reserved.
        """What it computes.

        Where it came from.
        """

        import torch
        ''',
    )


def test_inserts_a_docstring_into_a_module_without_one() -> None:
    assert_transform(
        SetModuleDocstringTransformer("One line."),
        """
        import torch
        """,
        '''
        """One line."""

        import torch
        ''',
    )


def test_leaves_a_module_that_already_says_it_untouched() -> None:
    source = f'''
    {HEADER}
    """One line."""

    import torch
    '''
    assert_transform(SetModuleDocstringTransformer("One line.", HEADER), source, source)


def test_real_lmdeploy_module_keeps_its_single_copyright_line() -> None:
    original = release_file("lmdeploy==0.18.0", "lmdeploy/pytorch/kernels/cuda/activation.py")
    result = (
        cst.parse_module(original)
        .visit(SetModuleDocstringTransformer('Say "what"; a \\ stays.', HEADER))
        .code
    )
    assert result.count(HEADER) == 1
    assert cst.parse_module(result).get_docstring() == 'Say "what"; a \\ stays.'
