"""DeclareCapabilityTransformer: a backend declared in an op class's `capabilities`: a new class attribute
after the docstring and leading attributes, or one entry added to the class's own dict literal; other
classes untouched; a second declaration of the same backend refused."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from kernelbot.integrate.declare_capability import DeclareCapabilityTransformer
from kernelbot.integrate.errors import IntegrationError

KEY, VALUE = "KernelBackend.TRITON", "{CapabilityRequirement.CUDA}"


def declare(source: str, qualname: str) -> str:
    transformer = DeclareCapabilityTransformer(qualname, KEY, VALUE)
    out = cst.parse_module(textwrap.dedent(source)).visit(transformer).code
    assert transformer.declared == 1
    return out


def test_a_class_without_capabilities_gets_them_after_its_opening_attributes() -> None:
    out = declare(
        '''
        class Other(BaseFusedOp):
            op = "x"

        class GeluAndMul(BaseFusedOp):
            """Doc."""

            op = "activation.gelu_and_mul"

            def forward_native(self, x):
                return x
        ''',
        "GeluAndMul",
    )
    assert out == textwrap.dedent(
        '''
        class Other(BaseFusedOp):
            op = "x"

        class GeluAndMul(BaseFusedOp):
            """Doc."""

            op = "activation.gelu_and_mul"
            capabilities = {KernelBackend.TRITON: {CapabilityRequirement.CUDA}}

            def forward_native(self, x):
                return x
        '''
    )


def test_an_existing_dict_gets_one_more_entry_and_a_duplicate_is_refused() -> None:
    source = """
        class Op(BaseFusedOp):
            capabilities = {KernelBackend.HELION: {CapabilityRequirement.CUDA}}
        """
    out = declare(source, "Op")
    assert (
        "    capabilities = {KernelBackend.HELION: {CapabilityRequirement.CUDA}, "
        "KernelBackend.TRITON: {CapabilityRequirement.CUDA}}\n" in out
    )
    with pytest.raises(IntegrationError, match=r"already declares KernelBackend\.TRITON"):
        declare(out, "Op")
