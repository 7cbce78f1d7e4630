"""Bit-level facts about tensors, for the correctness and timing stages: which elements changed, which still
hold the allocator's poison bytes, how many elements of a mask are set. Every helper keeps its temporaries
near the size of its inputs (a bool per element, no int64 copies), since 16 workers share a GPU's memory.
"""

from __future__ import annotations

import torch

# Elements counted at a time: counting a whole bool tensor at once first makes an int64 copy of it.
COUNT_SLICE = 1 << 22


def poison_mask(tensor: torch.Tensor) -> torch.Tensor:
    """Elements whose bytes are all 0xFF: the pattern `Backend.poison_allocator` leaves in freed memory
    (NaN in every float dtype, -1 in every integer dtype)."""
    t = tensor.detach()
    if t.dtype == torch.bool or t.element_size() == 0 or t.numel() == 0:
        return torch.zeros(t.shape, dtype=torch.bool, device=t.device)
    flat = t.contiguous().reshape(-1).view(torch.uint8).reshape(-1, t.element_size())
    return (flat == 255).all(dim=-1).reshape(t.shape)


_WORD_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def same_bits(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Element-wise "bit-identical" (NaN equals NaN, -0.0 differs from 0.0) for same-dtype tensors."""
    if a.dtype != b.dtype or a.shape != b.shape:
        raise ValueError("same_bits needs tensors of one dtype and shape")
    if a.numel() == 0:
        return torch.ones(a.shape, dtype=torch.bool, device=a.device)
    if a.dtype == torch.bool:
        return a == b
    size = a.element_size()
    ra = a.detach().contiguous().reshape(-1).view(torch.uint8)
    rb = b.detach().contiguous().reshape(-1).view(torch.uint8)
    word = _WORD_OF_SIZE.get(size)
    if word is not None:  # one integer compare per element: no byte-wise temporaries
        return (ra.view(word) == rb.view(word)).reshape(a.shape)
    return (ra.reshape(-1, size) == rb.reshape(-1, size)).all(dim=-1).reshape(a.shape)


def changed_elements(before: torch.Tensor, after: torch.Tensor) -> int:
    """How many elements of `after` differ (bitwise) from `before`; shape/dtype changes count as all."""
    if before.dtype != after.dtype or before.shape != after.shape:
        return max(before.numel(), after.numel(), 1)
    return count_true(~same_bits(before, after.to(before.device)))


def count_true(mask: torch.Tensor) -> int:
    """How many elements of a bool tensor are set, slice by slice: counting the whole tensor at once first
    makes an int64 copy of it (896 MB for a 4096 x 28672 argument; 16 workers' memory shares ran out)."""
    flat = mask.reshape(-1)
    if flat.numel() == 0 or not bool(flat.any()):
        return 0
    return sum(int(torch.count_nonzero(part)) for part in flat.split(COUNT_SLICE))
