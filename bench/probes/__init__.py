"""Device probes: one-off kernels and generators behind docs/benchmarks.md comparisons (not candidates)."""
