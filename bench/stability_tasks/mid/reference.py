"""Row-wise root-mean-square in PyTorch (the reference). Synthetic kernel of bench/stability.py."""

import torch


def row_rms(x):
    return torch.linalg.vector_norm(x, dim=-1) / (x.shape[-1] ** 0.5)
