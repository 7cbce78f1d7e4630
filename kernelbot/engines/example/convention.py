"""The example engine's kernel slot: minisglang follows SGLang's op contract (minisglang/kernels/fused_op.py),
so an op's kernel is its `forward_triton` backend with the kernel module in minisglang/kernels/ops/<group>/.
See kernelbot.engines.fused_op_slot."""

from __future__ import annotations

from kernelbot.engines.fused_op_slot import FusedOpConvention

CONVENTION = FusedOpConvention(
    name="example",
    package="minisglang",
    contract="minisglang/kernels/fused_op.py",
    spec_module="minisglang.kernels.spec",
    ops_dir="minisglang/kernels/ops",
)
