"""Names of an op's implementations (kernel backends) and of the devices a backend declares it runs on."""

from __future__ import annotations

from enum import Enum


class KernelBackend(str, Enum):
    """Where an implementation comes from; each backend is a `forward_<value>` method of the op."""

    TORCH = "torch"  # forward_native: the pure-PyTorch reference, every op has it
    TRITON = "triton"  # forward_triton


class CapabilityRequirement(str, Enum):
    """A device type a backend runs on (compared with `tensor.device.type`)."""

    CUDA = "cuda"
    CPU = "cpu"
