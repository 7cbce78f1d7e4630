"""Benchmarks run on the GPU machine (see docs/benchmarks.md); importable so they can share helpers."""
