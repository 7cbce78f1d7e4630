"""Triton backends of the activation ops."""
