"""Triton backends of the ops, one package per group of layers (activation, layernorm, moe, attention)."""
