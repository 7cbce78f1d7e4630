"""AddClassMembersTransformer: methods added to one class right after a named method, every other line (the
method itself, other classes of the same name elsewhere) untouched; `defines` tells a class's own members."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from kernelbot.integrate.add_class_members import AddClassMembersTransformer, defines
from kernelbot.integrate.errors import IntegrationError

SOURCE = textwrap.dedent(
    """
    class GeluAndMul(BaseFusedOp):
        op = "activation.gelu_and_mul"

        def forward_native(self, x):  # the reference
            return x

        def forward_cuda(self, x):
            return x


    class Outer:
        class GeluAndMul:
            def forward_native(self, x):
                return x
    """
)


def test_a_method_goes_right_after_the_named_one() -> None:
    member = cst.parse_statement("def forward_triton(self, x):\n    return x\n")
    member = member.with_changes(leading_lines=(cst.EmptyLine(indent=False),))
    transformer = AddClassMembersTransformer("GeluAndMul", "forward_native", [member])
    out = cst.parse_module(SOURCE).visit(transformer).code
    assert transformer.added == 1
    assert out == SOURCE.replace(
        "        return x\n\n    def forward_cuda",
        "        return x\n\n    def forward_triton(self, x):\n        return x\n\n    def forward_cuda",
        1,
    )


def test_a_class_without_the_method_is_refused_and_defines_reads_own_members() -> None:
    member = cst.parse_statement("def forward_triton(self, x):\n    return x\n")
    with pytest.raises(IntegrationError, match="defines no method forward_hip"):
        cst.parse_module(SOURCE).visit(AddClassMembersTransformer("GeluAndMul", "forward_hip", [member]))
    owner = cst.parse_module(SOURCE).body[0]
    assert isinstance(owner, cst.ClassDef)
    assert defines(owner, "forward_cuda") and defines(owner, "op") and not defines(owner, "forward_triton")
