"""A random fp32 matrix of case['rows'] x case['cols']. Synthetic kernel of bench/stability.py."""

import torch


def make_inputs(case, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(case["rows"], case["cols"], device=device, generator=g),), {}
