"""Triton backends of the layernorm ops."""
