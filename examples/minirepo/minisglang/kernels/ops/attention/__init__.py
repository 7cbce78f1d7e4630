"""Triton backends of the attention ops."""
