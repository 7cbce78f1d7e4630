from __future__ import annotations

import pytest
import torch

from minisglang.kernels import fused_op
from minisglang.kernels.fused_op import BaseFusedOp
from minisglang.kernels.spec import CapabilityRequirement, KernelBackend


class Double(BaseFusedOp):
    def forward_native(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def forward_triton(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 1:
            raise NotImplementedError("1-D only")
        return x * 2 + 100  # told apart from the reference by its result


class DeclaredDouble(Double):
    capabilities = {KernelBackend.TRITON: {CapabilityRequirement.CPU}}

    def backend_eligible(self, backend, x):
        return super().backend_eligible(backend, x) and x.dim() == 1


@pytest.fixture(autouse=True)
def _no_forced_backend():
    yield
    fused_op.set_fused_op_backend(None)


def test_an_undeclared_backend_runs_only_when_asked_for():
    x = torch.ones(3)
    assert torch.equal(Double()(x), x * 2)
    assert torch.equal(Double()(x, backend=KernelBackend.TRITON), x * 2 + 100)
    fused_op.set_fused_op_backend(KernelBackend.TRITON)
    assert torch.equal(Double()(x), x * 2 + 100)
    assert torch.equal(Double()(torch.ones(2, 2)), torch.ones(2, 2) * 2)  # it refuses: dispatch as usual


def test_a_declared_backend_is_selected_on_its_devices_and_where_eligible():
    assert torch.equal(DeclaredDouble()(torch.ones(3)), torch.ones(3) * 2 + 100)
    assert torch.equal(DeclaredDouble()(torch.ones(2, 2)), torch.ones(2, 2) * 2)
    cuda_only = type(
        "CudaOnly", (Double,), {"capabilities": {KernelBackend.TRITON: {CapabilityRequirement.CUDA}}}
    )
    assert torch.equal(cuda_only()(torch.ones(3)), torch.ones(3) * 2)
