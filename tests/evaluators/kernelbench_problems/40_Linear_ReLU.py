import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer followed by ReLU and a scaled residual buffer."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.register_buffer("shift", torch.randn(out_features) * 0.1)

    def forward(self, x):
        return torch.relu(self.linear(x)) + self.shift


batch_size = 8
in_features = 16
out_features = 24


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
