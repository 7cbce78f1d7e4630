"""float32 -> bfloat16 in Triton's interpreter rounded as a GPU rounds it (to nearest, ties to even).

The interpreter converts float32 to bfloat16 by dropping the low 16 bits (truncation), while
`x.to(tl.bfloat16)` compiled for a GPU rounds to nearest even, as PyTorch does. A kernel that rounds its
16-bit intermediates the way eager PyTorch does would then differ from the reference by one bfloat16 ulp on
the CPU only. Rather than have every kernel carry an interpreter branch, the worker of the interpreter
backend (and the test harness) installs this conversion in the interpreter once; the kernels then hold only
what the GPU runs.
"""

from __future__ import annotations

from typing import Any

_INSTALLED = "_kernelbot_bf16_round_to_nearest_even"


def round_float32_to_bfloat16_bits(bits: Any) -> Any:
    """uint32 bit patterns of float32 values -> uint16 bit patterns of the nearest bfloat16 (ties to even);
    NaN stays a (quiet) NaN, infinities stay infinite."""
    import numpy as np

    bits = bits.astype(np.uint32)
    is_nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16
    return np.where(is_nan, (bits >> 16) | 0x40, rounded).astype(np.uint16)


def install() -> bool:
    """Make the interpreter's float32 -> bfloat16 casts round to nearest even (idempotent); False when this
    Triton has no interpreter builder to patch (then nothing changes)."""
    try:
        import numpy as np
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder = getattr(interpreter, "InterpreterBuilder", None)
    handle = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle is None or not hasattr(builder, "cast_impl"):
        return False
    if getattr(builder, _INSTALLED, False):
        return True
    truncating = builder.cast_impl

    def cast_impl(self: Any, src: Any, dst_type: Any) -> Any:
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            data = np.asarray(src.data, dtype=np.float32)
            out = round_float32_to_bfloat16_bits(data.view(np.uint32)).reshape(data.shape)
            return handle(out, dst_type.scalar)
        return truncating(self, src, dst_type)

    builder.cast_impl = cast_impl
    setattr(builder, _INSTALLED, True)
    return True
