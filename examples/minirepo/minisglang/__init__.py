"""minisglang: a tiny SGLang-shaped decode engine (layers, paged attention metadata, a toy MoE model)."""

__version__ = "0.1.0"
