"""NVIDIA (and ROCm builds of torch, which also answer to "cuda"): the backend that times."""

from __future__ import annotations

import platform
from functools import lru_cache
from typing import TYPE_CHECKING

from evaluators.result import Hardware
from evaluators.subprocesses import run

if TYPE_CHECKING:
    import torch  # imported when the backend is first used

# Datasheet HBM bandwidth (GB/s) by device-name fragment: the roofline's ceiling before a measurement exists.
DATASHEET_BANDWIDTH_GBPS = {
    "H200": 4800.0,
    "H100 SXM": 3350.0,
    "H100 PCIe": 2000.0,
    "H100": 3350.0,
    "H20": 4000.0,
    "A100": 2039.0,
    "L40S": 864.0,
    "MI300X": 5300.0,
    "C550": 1800.0,
}


def datasheet_bandwidth(device_name: str) -> float:
    for fragment, gbps in DATASHEET_BANDWIDTH_GBPS.items():
        if fragment in device_name:
            return gbps
    return 0.0


@lru_cache(maxsize=1)
def _driver_version() -> str:
    try:
        out = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], timeout_s=10)
    except OSError:
        return ""
    return out.stdout.strip().splitlines()[0] if out.ok and out.stdout.strip() else ""


class TritonCudaBackend:
    name = "triton-cuda"
    can_time = True

    def __init__(self, device_index: int = 0) -> None:
        self.device_index = device_index
        self._flush_buffer: torch.Tensor | None = None

    @property
    def device(self) -> str:
        return f"cuda:{self.device_index}"

    def unavailable_reason(self) -> str | None:
        import torch

        if not torch.cuda.is_available():
            return (
                "no CUDA GPU is visible to torch (torch.cuda.is_available() is False); "
                "use --backend triton-interpret"
            )
        if self.device_index >= torch.cuda.device_count():
            visible = torch.cuda.device_count()
            return f"device index {self.device_index} asked for, but only {visible} GPU(s) visible"
        return None

    def worker_env(self) -> dict[str, str]:
        return {}

    def init_device(self) -> None:
        import torch

        torch.cuda.set_device(self.device_index)
        torch.empty(1, device=self.device).fill_(0)
        l2 = int(getattr(torch.cuda.get_device_properties(self.device_index), "L2_cache_size", 0) or 50 << 20)
        # Twice the L2, so one write pass evicts every line a timed call left behind.
        self._flush_buffer = torch.empty(2 * l2, dtype=torch.uint8, device=self.device)
        torch.cuda.synchronize(self.device_index)

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self.device_index)

    def hardware(self) -> Hardware:
        import torch
        import triton

        props = torch.cuda.get_device_properties(self.device_index)
        runtime = torch.version.hip or torch.version.cuda or ""
        return Hardware(
            backend=self.name,
            device=props.name,
            driver=_driver_version(),
            torch=torch.__version__,
            triton=triton.__version__,
            python=platform.python_version(),
            runtime=f"{'HIP' if torch.version.hip else 'CUDA'} {runtime}",
            sm_count=props.multi_processor_count,
            memory_bandwidth_gbps=datasheet_bandwidth(props.name),
        )

    def poison_allocator(self, nbytes: int) -> None:
        import torch

        # All-ones bytes read as NaN in every float dtype and as -1 in every integer dtype. Blocks are freed
        # straight back to the caching allocator, which hands them to the candidate's next torch.empty*.
        chunk = 1 << 20
        small = [torch.full((chunk // 2,), 255, dtype=torch.uint8, device=self.device) for _ in range(16)]
        big = torch.full((max(nbytes, chunk),), 255, dtype=torch.uint8, device=self.device)
        del small, big

    def flush_l2(self) -> None:
        if self._flush_buffer is not None:
            self._flush_buffer.zero_()
