"""SGLang's kernel slot (from 0.5.23's sglang/kernels/fused_op.py): an op's kernel is its `forward_triton`
backend, the kernel module sits with the engine's Triton backends in sglang/kernels/ops/<group>/ (as
activation/gelu_and_mul_triton.py does), and `capabilities` declares it for CUDA only on evidence that it
beats what the op runs today. See kernelbot.engines.fused_op_slot."""

from __future__ import annotations

from kernelbot.engines.fused_op_slot import FusedOpConvention

CONVENTION = FusedOpConvention(
    name="sglang",
    package="sglang",
    contract="sglang/kernels/fused_op.py",
    spec_module="sglang.kernels.spec",
    ops_dir="sglang/kernels/ops",
)
