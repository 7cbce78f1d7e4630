"""CPU through TRITON_INTERPRET=1: checks correctness of Triton candidates, never claims a speedup."""

from __future__ import annotations

import platform

from evaluators.result import Hardware


class TritonInterpretBackend:
    name = "triton-interpret"
    can_time = False

    @property
    def device(self) -> str:
        return "cpu"

    def unavailable_reason(self) -> str | None:
        try:
            import numpy  # noqa: F401  (the interpreter executes kernels with numpy)
        except ImportError:
            return "the Triton interpreter needs numpy: pip install numpy"
        return None

    def worker_env(self) -> dict[str, str]:
        return {"TRITON_INTERPRET": "1"}

    def init_device(self) -> None:
        import torch

        from evaluators.backends import triton_interpret_rounding

        torch.empty(1).fill_(0)
        triton_interpret_rounding.install()  # bfloat16 casts round as on a GPU (see that module)

    def synchronize(self) -> None:
        return None

    def hardware(self) -> Hardware:
        import torch
        import triton

        return Hardware(
            backend=self.name,
            device="cpu",
            torch=torch.__version__,
            triton=triton.__version__,
            python=platform.python_version(),
            runtime="triton interpreter",
        )

    def poison_allocator(self, nbytes: int) -> None:
        import torch

        # The CPU allocator (glibc) reuses recently freed chunks of similar size: leave NaN in them.
        for size in (nbytes, nbytes // 2, nbytes // 4, 4096, 1024):
            if size > 0:
                torch.full((size,), 255, dtype=torch.uint8)

    def flush_l2(self) -> None:
        return None
