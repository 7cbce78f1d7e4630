"""Triton backends of the moe ops."""
