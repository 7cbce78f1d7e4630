"""MetaX GPUs (MACA). Their torch build reports `torch.version.maca` and exposes the GPU as "cuda";
Triton runs through the same path as on NVIDIA, so this backend is triton-cuda under another name.

Not testable here: no MetaX hardware or MACA torch build is available to this project, so only the
detection and the selection logic are covered by tests (with a faked torch.version.maca); driver
version queries use mx-smi, whose output format is unverified.
"""

from __future__ import annotations

from dataclasses import replace

from evaluators.backends.triton_cuda import TritonCudaBackend
from evaluators.result import Hardware
from evaluators.subprocesses import run


def torch_reports_maca() -> bool:
    import torch

    version = getattr(torch.version, "maca", None)
    return isinstance(version, str) and bool(version)


class MacaBackend(TritonCudaBackend):
    name = "maca"

    def unavailable_reason(self) -> str | None:
        if not torch_reports_maca():
            return "this torch build is not a MACA build (torch.version.maca is not set)"
        return super().unavailable_reason()

    def hardware(self) -> Hardware:
        import torch

        hw = super().hardware()
        driver = ""
        try:
            out = run(["mx-smi", "--show-version"], timeout_s=10)
            driver = out.stdout.strip().splitlines()[0] if out.ok and out.stdout.strip() else ""
        except OSError:
            pass
        return replace(hw, driver=driver, runtime=f"MACA {getattr(torch.version, 'maca', '')}")
