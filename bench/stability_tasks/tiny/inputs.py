"""A random fp32 vector of case['n'] elements. Synthetic kernel of bench/stability.py."""

import torch


def make_inputs(case, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(case["n"], device=device, generator=g),), {}
