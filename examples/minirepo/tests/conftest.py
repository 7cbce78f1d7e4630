from __future__ import annotations

import torch

# The model is tiny: one thread is fastest and keeps CPU runs deterministic and unaffected by a busy machine.
torch.set_num_threads(1)
