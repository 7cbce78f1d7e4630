"""Inductor seed internals: `capture` (runs torch.compile in the tracing subprocess, see
evolution.writers.tracing, and keeps Inductor's output code), `kernels` (one Inductor kernel -> a plain
@triton.jit kernel), `helpers` (Triton stand-ins for Inductor's runtime helpers), `host` (Inductor's
wrapper -> launch code), `render` (the candidate file)."""
