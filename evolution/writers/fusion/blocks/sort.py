"""A full descending sort of every row of an [R, L] tile (L a power of two) of integer keys: Triton's own
bitonic sort (`tl.sort`, Triton 3.4 and later). With packed keys (keys.py) every key is distinct, so the
indices travel with the values and equal values keep torch's stable order."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kb_sort_rows(keys):
    """Every row of keys [R, L] sorted descending."""
    # A row of one key is sorted already: tl.sort before Triton 3.9 cannot sort a single key.
    return keys if keys.shape[1] == 1 else tl.sort(keys, dim=1, descending=True)
