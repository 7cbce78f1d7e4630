"""Which tensor the reference's own top-k or sort ran over, so that a tie can be checked where it happens.

For a task with `[[compare.ties]]` rules the reference runs under a torch-function mode that records every
`topk` / `sort` / `argsort` along the last dimension: a copy of the scores it ran over and of the indices it
returned. After the run, a tie-rule key whose returned ids equal one recorded call's indices (same shape, same
values) gets that call's scores as its source: the evaluator then knows the score of *any* id a candidate
returns, not only of the ids the reference chose, and can accept a different id at the top-k boundary when
its score is exactly the k-th one. Ids that were transformed on their way out (group offsets added, cast to
another layout) match no call and are judged from the returned values alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

# The selections whose order among equal scores is open; the argument position of `dim` in each.
_DIM_POSITION: dict[Any, int] = {
    torch.topk: 2,
    torch.Tensor.topk: 2,
    torch.sort: 1,
    torch.Tensor.sort: 1,
    torch.argsort: 1,
    torch.Tensor.argsort: 1,
}


@dataclass(frozen=True)
class Selection:
    scores: torch.Tensor  # what the call ran over, selection dimension last
    indices: torch.Tensor  # what it returned (int64)


class SelectionRecorder(TorchFunctionMode):
    """Records the reference's top-k / sort calls along the last dimension (copies: the reference may write
    into either tensor afterwards)."""

    def __init__(self) -> None:
        super().__init__()
        self.selections: list[Selection] = []

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        position = _DIM_POSITION.get(func)
        if position is not None:
            self._record(args, kwargs, position, out)
        return out

    def _record(self, args: tuple, kwargs: dict, position: int, out: Any) -> None:
        scores = args[0] if args else kwargs.get("input", kwargs.get("self"))
        dim = args[position] if len(args) > position else kwargs.get("dim", -1)
        indices = out if isinstance(out, torch.Tensor) else getattr(out, "indices", None)
        if not (
            isinstance(scores, torch.Tensor) and isinstance(indices, torch.Tensor) and isinstance(dim, int)
        ):
            return
        if scores.dim() == 0 or dim % scores.dim() != scores.dim() - 1 or indices.dim() != scores.dim():
            return
        self.selections.append(Selection(scores.detach().clone(), indices.detach().to(torch.int64).clone()))


def selection_sources(selections: list[Selection], leaves: Mapping[str, object], keys: list[str]) -> dict:
    """For each output name in `keys`, the scores of the last recorded selection that returned exactly its
    ids; names with no such selection are left out."""
    sources: dict[str, torch.Tensor] = {}
    for key in keys:
        ids = leaves.get(key)
        if not isinstance(ids, torch.Tensor) or ids.dtype.is_floating_point or ids.dim() == 0:
            continue
        for selection in reversed(selections):
            if (
                selection.indices.shape == ids.shape
                and selection.scores.shape[:-1] == ids.shape[:-1]
                and torch.equal(selection.indices, ids.detach().to(torch.int64))
            ):
                sources[key] = selection.scores
                break
    return sources
