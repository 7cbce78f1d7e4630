"""kernelbot: evolves fused Triton kernels for hot PyTorch regions of inference engines."""

__version__ = "0.1.0"
