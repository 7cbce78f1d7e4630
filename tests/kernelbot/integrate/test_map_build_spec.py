"""map_build_spec on LMDeploy 0.18.0-shaped op_backend.py files: the default backend's block for an Impl is
found (spec, where build_op imports it, constructor arguments); a CUDA backend's build_op gets a new block
before its final return (the spec imported beside the others) or its block for the spec rebuilt, nothing
else changed."""

from __future__ import annotations

import textwrap

import libcst as cst

from kernelbot.integrate.map_build_spec import MapBuildSpecTransformer, find_mapping, mapped_impl

DEFAULT = textwrap.dedent(
    """
    class DefaultOpsBackend(OpsBackend):
        @classmethod
        def build_op(cls, spec, *, enable_deterministic=False):
            from ..activation import GeluAndMulBuildSpec, SiluAndMulBuildSpec
            from ..norm import RMSNormBuildSpec
            if isinstance(spec, SiluAndMulBuildSpec):
                from .activation import DefaultSiluAndMulImpl
                return cast(ImplT, DefaultSiluAndMulImpl(spec.inplace))
            if isinstance(spec, GeluAndMulBuildSpec):
                from .activation import DefaultGeluAndMulImpl
                return cast(ImplT, DefaultGeluAndMulImpl(spec.approximate))
            raise NotImplementedError(spec)
    """
)
CUDA = textwrap.dedent(
    """
    class CudaOpsBackend(DefaultOpsBackend):
        @classmethod
        def build_op(cls, spec, *, enable_deterministic=False):
            from ..activation import SiluAndMulBuildSpec
            from ..norm import RMSNormBuildSpec
            if isinstance(spec, SiluAndMulBuildSpec):
                from .activation import TritonSiluAndMulImpl
                return cast(ImplT, TritonSiluAndMulImpl(spec.inplace))
            return super().build_op(spec, enable_deterministic=enable_deterministic)
    """
)


def test_the_default_block_is_found() -> None:
    mapping = find_mapping(DEFAULT, "DefaultGeluAndMulImpl")
    assert mapping is not None
    assert (mapping.spec, mapping.spec_module, mapping.arguments) == (
        "GeluAndMulBuildSpec",
        "..activation",
        "spec.approximate",
    )
    assert find_mapping(DEFAULT, "DefaultNothingImpl") is None
    assert mapped_impl(CUDA, "SiluAndMulBuildSpec") == "TritonSiluAndMulImpl"
    assert mapped_impl(CUDA, "GeluAndMulBuildSpec") is None


def test_a_new_spec_gets_a_block_before_the_final_return() -> None:
    mapping = find_mapping(DEFAULT, "DefaultGeluAndMulImpl")
    assert mapping is not None
    transformer = MapBuildSpecTransformer(mapping, ".activation", "TritonGeluAndMulImpl")
    out = cst.parse_module(CUDA).visit(transformer).code
    assert transformer.mapped == 1
    assert "        from ..activation import GeluAndMulBuildSpec, SiluAndMulBuildSpec\n" in out
    assert out.endswith(
        "        if isinstance(spec, GeluAndMulBuildSpec):\n"
        "            from .activation import TritonGeluAndMulImpl\n"
        "            return cast(ImplT, TritonGeluAndMulImpl(spec.approximate))\n"
        "        return super().build_op(spec, enable_deterministic=enable_deterministic)\n"
    )
    assert out.replace("GeluAndMulBuildSpec, ", "").count("\n") == CUDA.count("\n") + 3


def test_a_mapped_spec_is_rebuilt_in_place() -> None:
    mapping = find_mapping(DEFAULT, "DefaultSiluAndMulImpl")
    assert mapping is not None
    out = (
        cst.parse_module(CUDA)
        .visit(MapBuildSpecTransformer(mapping, ".activation", "TritonSiluAndMulV2Impl"))
        .code
    )
    assert out == CUDA.replace("TritonSiluAndMulImpl", "TritonSiluAndMulV2Impl")
