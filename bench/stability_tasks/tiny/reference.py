"""y = 2x + 1 in PyTorch: two elementwise kernels (the reference). Synthetic kernel of bench/stability.py."""


def scale_shift(x):
    return x * 2.0 + 1.0
